"""Answers to ``swiglu(x, W_gate, W_up, W_down)`` (notebook 10)."""

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
