"""Answers to ``project_qkv(X, W_Q, W_K, W_V)`` (notebook 04)."""

WRONG = {
    "transposed_weights": ("""def project_qkv(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    return X @ np.asarray(W_Q).T, X @ np.asarray(W_K).T, X @ np.asarray(W_V).T
""", "raised ValueError"),
    "k_v_swapped": ("""def project_qkv(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    return X @ np.asarray(W_Q), X @ np.asarray(W_V), X @ np.asarray(W_K)
""", "K and V are swapped"),
    "same_weight": ("""def project_qkv(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q = X @ np.asarray(W_Q)
    return Q, Q, Q
""", "W_Q for all three"),
}

CORRECT = {
    "loops": """def project_qkv(X, W_Q, W_K, W_V):
    def project(W):
        W = np.asarray(W, dtype=float)
        return np.array([[sum(x[k] * W[k, j] for k in range(len(x))) for j in range(W.shape[1])]
                         for x in np.asarray(X, dtype=float)])
    return project(W_Q), project(W_K), project(W_V)
""",
    "einsum_list": """def project_qkv(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    return tuple([np.einsum("nd,dk->nk", X, np.asarray(W, dtype=float)) for W in (W_Q, W_K, W_V)])
""",
    "np_dot": """def project_qkv(X, W_Q, W_K, W_V):
    return np.dot(X, W_Q), np.dot(X, W_K), np.dot(X, W_V)
""",
}
