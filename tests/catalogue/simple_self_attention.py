"""Answers to ``simple_self_attention(X)`` (notebook 03)."""

WRONG = {
    "no_scale": ("""def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    S = X @ X.T
    W = np.exp(S - S.max(axis=1, keepdims=True))
    W = W / W.sum(axis=1, keepdims=True)
    return W @ X
""", "not divided by sqrt(d)"),
    "scale_by_n": ("""def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    W = helpers.softmax(X @ X.T / np.sqrt(X.shape[0]), axis=-1)
    return W @ X
""", "sqrt(N)"),
    "wrong_axis": ("""def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    W = helpers.softmax(X @ X.T / np.sqrt(X.shape[1]), axis=0)
    return W @ X
""", "wrong axis"),
    "returns_weights": ("""def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    return helpers.softmax(X @ X.T / np.sqrt(X.shape[1]), axis=-1)
""", "returned the attention weights"),
}

CORRECT = {
    "row_by_row": """def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    N, d = X.shape
    out = np.zeros((N, d))
    for i in range(N):
        scores = np.array([X[i] @ X[j] for j in range(N)]) / d ** 0.5
        w = np.exp(scores - scores.max())
        w /= w.sum()
        for j in range(N):
            out[i] += w[j] * X[j]
    return out
""",
    "einsum": """def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    S = np.einsum("id,jd->ij", X, X) / np.sqrt(X.shape[-1])
    W = np.exp(S - S.max(-1, keepdims=True))
    W /= W.sum(-1, keepdims=True)
    return np.einsum("ij,jd->id", W, X)
""",
}
