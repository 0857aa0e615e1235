"""Answers to ``gelu(x)`` (notebook 09)."""

WRONG = {
    "tanh_approximation": ("""def gelu(x):
    x = np.asarray(x, dtype=float)
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
""", "tanh approximation of GELU"),
    "erf_without_sqrt2": ("""def gelu(x):
    x = np.asarray(x, dtype=float)
    erf = np.vectorize(math.erf, otypes=[float])
    return 0.5 * x * (1 + erf(x))
""", "erf(x) instead of erf(x / sqrt(2))"),
    "phi_without_x": ("""def gelu(x):
    x = np.asarray(x, dtype=float)
    erf = np.vectorize(math.erf, otypes=[float])
    return 0.5 * (1 + erf(x / np.sqrt(2)))
""", "Phi(x) without the factor x"),
    "sigmoid_approximation": ("""def gelu(x):
    x = np.asarray(x, dtype=float)
    return x / (1 + np.exp(-1.702 * x))
""", "sigmoid approximation"),
    "relu": ("""def gelu(x):
    return np.maximum(0, np.asarray(x, dtype=float))
""", "this is ReLU, not GELU"),
    "math_erf_on_array": ("""def gelu(x):
    x = np.asarray(x, dtype=float)
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))
""", "Likely mistake: math.erf takes one number"),
}

CORRECT = {
    "loop_with_erfc": """def gelu(x):
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        v = float(x[idx])
        out[idx] = v * 0.5 * math.erfc(-v / math.sqrt(2))     # Phi(v) = erfc(-v / sqrt 2) / 2
    return out
""",
    "frompyfunc_phi": """def gelu(x):
    x = np.array(x, dtype=np.float64)
    phi = np.frompyfunc(lambda v: 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))), 1, 1)
    return x * np.asarray(phi(x), dtype=np.float64)
""",
    "list_comprehension": """def gelu(x):
    x = np.asarray(x, dtype=float)
    flat = [v / 2 * (1 + math.erf(v / 2 ** 0.5)) for v in x.ravel().tolist()]
    return np.array(flat, dtype=float).reshape(x.shape)
""",
}
