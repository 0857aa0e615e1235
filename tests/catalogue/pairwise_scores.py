"""Answers to ``pairwise_scores(X)`` (notebook 01)."""

WRONG = {
    "columns": ("""def pairwise_scores(X):
    X = np.asarray(X, dtype=float)
    return X.T @ X
""", "X.T @ X"),
    "scaled": ("""def pairwise_scores(X):
    X = np.asarray(X, dtype=float)
    return X @ X.T / np.sqrt(X.shape[1])
""", "divided by sqrt(d)"),
    "upper_triangle": ("""def pairwise_scores(X):
    X = np.asarray(X, dtype=float)
    N = len(X)
    S = np.zeros((N, N))
    for i in range(N):
        for j in range(i, N):
            S[i, j] = X[i] @ X[j]
    return S
""", "symmetric"),
}

CORRECT = {
    "double_loop": """def pairwise_scores(X):
    N = len(X)
    return np.array([[dot(X[i], X[j]) for j in range(N)] for i in range(N)])
""",
    "einsum": """def pairwise_scores(X):
    X = np.asarray(X, dtype=float)
    return np.einsum("id,jd->ij", X, X)
""",
    "symmetric_fill": """def pairwise_scores(X):
    X = np.asarray(X, dtype=float)
    N = X.shape[0]
    S = np.empty((N, N))
    for i in range(N):
        for j in range(i, N):
            S[i, j] = S[j, i] = np.sum(X[i] * X[j])
    return S
""",
}
