"""Answers to ``swiglu(x, W_gate, W_up, W_down)`` (notebook 10)."""

import numpy as np

WRONG = {
    "silu_on_up": ("""def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=float)
    up = x @ W_up
    return ((x @ W_gate) * (up / (1 + np.exp(-up)))) @ W_down
""", "SiLU was applied to x W_up instead of the gate"),
    "relu_gate": ("""def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=float)
    return (np.maximum(x @ W_gate, 0) * (x @ W_up)) @ W_down
""", "ReLU instead of SiLU on the gate"),
    "sigmoid_gate": ("""def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=float)
    return ((1 / (1 + np.exp(-(x @ W_gate)))) * (x @ W_up)) @ W_down
""", "sigmoid(x W_gate) instead of SiLU"),
    "tanh_gelu_gate": ("""def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=float)
    g = x @ W_gate
    gelu = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3)))
    return (gelu * (x @ W_up)) @ W_down
""", "first difference"),
    "down_before_product": ("""def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=float)
    g = x @ W_gate
    return (g / (1 + np.exp(-g))) @ W_down * ((x @ W_up) @ W_down)
""", "first difference"),
}

CORRECT = {
    "naive_exp_warns": """def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=float)
    g = x @ W_gate
    silu = g / (1 + np.exp(-g))        # exp overflows for g << 0 (RuntimeWarning): g/inf = 0, right
    return (silu * (x @ W_up)) @ W_down
""",
    "stable_sigmoid_where": """def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=np.float64)
    g = np.dot(x, W_gate)
    e = np.exp(-np.abs(g))
    sig = np.where(g >= 0, 1 / (1 + e), e / (1 + e))
    return np.dot(g * sig * np.dot(x, W_up), W_down)
""",
    "einsum_logaddexp": """def swiglu(x, W_gate, W_up, W_down):
    x = np.asarray(x, dtype=float)
    g = np.einsum("nd,df->nf", x, W_gate)
    u = np.einsum("nd,df->nf", x, W_up)
    silu = g * np.exp(-np.logaddexp(0.0, -g))          # sigmoid(g) = exp(-log(1 + e^-g))
    return np.einsum("nf,fd->nd", silu * u, W_down)
""",
}

_rng = np.random.default_rng(1002)


def _weights(d, d_ff, scale=1.0):
    return (scale * _rng.standard_normal((d, d_ff)) / np.sqrt(d),
            scale * _rng.standard_normal((d, d_ff)) / np.sqrt(d),
            _rng.standard_normal((d_ff, d)) / np.sqrt(d_ff))


#: (args, kwargs) on which each entry is compared with the solution's swiglu.
CASES = [
    (([[2.0]], [[1.0, -1.0]], [[3.0, 3.0]], [[1.0], [1.0]]), {}),          # the worked example
    ((_rng.standard_normal((4, 6)), *_weights(6, 10)), {}),
    ((300 * _rng.standard_normal((3, 5)), *_weights(5, 7, 2.0)), {}),       # |x W_gate| ~ 1000
    ((_rng.standard_normal((1, 8)), *_weights(8, 3)), {}),
    ((np.arange(6).reshape(2, 3), *_weights(3, 4)), {}),                    # integer x
]
