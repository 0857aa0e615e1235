"""Answers to ``gelu_backward(z, d_out)`` (notebook 12)."""

WRONG = {
    "Phi_only": ("""def gelu_backward(z, d_out):
    z = np.asarray(z, dtype=float)
    return np.asarray(d_out) * 0.5 * (1 + erf(z / np.sqrt(2)))
""", "z * phi(z) term is missing"),
    "tanh_approximation": ("""def gelu_backward(z, d_out):
    z = np.asarray(z, dtype=float)
    c = np.sqrt(2 / np.pi)
    t = np.tanh(c * (z + 0.044715 * z ** 3))
    return np.asarray(d_out) * (0.5 * (1 + t) + 0.5 * z * (1 - t ** 2) * c * (1 + 3 * 0.044715 * z ** 2))
""", "tanh approximation"),
    "no_chain_rule": ("""def gelu_backward(z, d_out):
    z = np.asarray(z, dtype=float)
    return 0.5 * (1 + erf(z / np.sqrt(2))) + z * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
""", "d_out was not multiplied in"),
}

CORRECT = {
    "math_erf": """import math

def gelu_backward(z, d_out):
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    for i, v in np.ndenumerate(z):
        out[i] = 0.5 * (1 + math.erf(v / math.sqrt(2))) + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi)
    return out * np.asarray(d_out)
""",
    "product_rule": """def gelu_backward(z, d_out):
    z = np.asarray(z, dtype=float)
    cdf = (1.0 + erf(z * 2 ** -0.5)) / 2.0
    pdf = np.exp(-(z ** 2) / 2.0) * (2 * np.pi) ** -0.5
    return d_out * cdf + d_out * z * pdf
""",
}

# The names the notebook imports in its first cell, so that each answer also runs alone.
_IMPORTS = "from helpers.bert import erf\n"
WRONG = {k: (_IMPORTS + src, words) for k, (src, words) in WRONG.items()}
CORRECT = {k: _IMPORTS + src for k, src in CORRECT.items()}

#: Central differences of the forward pass instead of its derivative (issue 36, finding 7),
#: written in the answer cell as a learner would (the course's step, 1e-5).
WRONG["numerical_gradient"] = ("""from helpers.bert import gelu

def _central(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[k] += h
        down.flat[k] -= h
        grad.flat[k] = (f(up) - f(down)) / (2 * h)
    return grad


def gelu_backward(z, d_out):
    d_out = np.asarray(d_out, dtype=float)
    return _central(lambda x: np.sum(d_out * gelu(x)), z)
""", "numerical, not analytic, gradient")
