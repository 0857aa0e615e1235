"""Answers to ``layer_norm(x, gamma, beta, eps=1e-5)`` (notebook 07)."""

WRONG = {
    # issue 22, finding 2: right on every 2-D input, wrong on [B, N, d] and on one vector
    "all_trailing_axes": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    axes = tuple(range(1, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
""", "contract_rank"),
    "ddof_1": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, ddof=1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
""", "ddof=1"),
    "eps_outside_sqrt": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / (x.std(axis=-1, keepdims=True) + eps) + beta
""", "eps was added outside the square root"),
    "no_eps": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / x.std(axis=-1, keepdims=True) + beta
""", "eps is missing"),
    "wrong_axis": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=0, keepdims=True)
    var = x.var(axis=0, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
""", "wrong axis"),
    "no_gamma_beta": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
""", "gamma and beta were not applied"),
    "eps_fixed": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) + beta
""", "eps argument was ignored"),
    "in_place": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x -= x.mean(axis=-1, keepdims=True)
    return gamma * x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) + beta
""", "modified its input `x` in place"),
    "unknown_gamma_squared": ("""def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return np.square(gamma) * (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) + beta
""", "first difference"),
}

CORRECT = {
    "np_var": """def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    return gamma * (x - np.mean(x, -1, keepdims=True)) / np.sqrt(np.var(x, -1, keepdims=True) + eps) + beta
""",
    "loops_per_row": """import math

def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for r, row in enumerate(flat):
        mean = sum(row) / len(row)
        var = sum((v - mean) ** 2 for v in row) / len(row)
        for c in range(len(row)):
            out[r, c] = gamma[c] * (row[c] - mean) / math.sqrt(var + eps) + beta[c]
    return out.reshape(x.shape)
""",
    "second_moment": """def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    centred = x - x.mean(axis=-1, keepdims=True)
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return np.asarray(gamma) * centred * (var + eps) ** -0.5 + np.asarray(beta)
""",
}
