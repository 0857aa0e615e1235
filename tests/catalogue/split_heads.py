"""Answers to ``split_heads(X, n_heads)`` (notebook 06)."""

WRONG = {
    "reshape_without_transpose": ("""def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    N, d = X.shape
    return X.reshape(n_heads, N, d // n_heads)
""", "reshaped [N, d] straight to [n_heads, N, d_h]"),
    "no_swap": ("""def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    return X.reshape(X.shape[0], n_heads, -1)
""", "swap the first two axes"),
    "interleaved": ("""def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    return np.stack([X[:, c::n_heads] for c in range(n_heads)])
""", "every n_heads-th column"),
}

CORRECT = {
    "slices": """def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    d_h = X.shape[1] // n_heads
    return np.stack([X[:, c * d_h:(c + 1) * d_h] for c in range(n_heads)])
""",
    "array_split": """def split_heads(X, n_heads):
    return np.array(np.split(np.asarray(X, dtype=float), n_heads, axis=1))
""",
    "swapaxes": """def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    return np.swapaxes(X.reshape(len(X), n_heads, -1), 0, 1)
""",
}
