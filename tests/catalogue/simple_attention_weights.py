"""Answers to ``simple_attention_weights(X)`` (notebook 03)."""

WRONG = {
    "in_place_scale_on_integers": ("""def simple_attention_weights(X):
    X = np.asarray(X)
    scores = X @ X.T
    scores /= np.sqrt(X.shape[1])
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
""", "Likely mistake: in-place arithmetic (`scores /= np.sqrt(d)`)"),
    "no_scale": ("""def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    return helpers.softmax(X @ X.T, axis=-1)
""", "weights of 'The cat sat <end>'"),
    "divides_by_d": ("""def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    return helpers.softmax(X @ X.T / X.shape[1], axis=-1)
""", "weights of 'The cat sat <end>'"),
    "scale_sqrt_N": ("""def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    N = len(X)
    return helpers.softmax(X @ X.T / np.sqrt(N), axis=-1)
""", "N != d"),
    "columns_sum_to_one": ("""def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    scores = X @ X.T / np.sqrt(X.shape[1])
    return helpers.softmax(scores, axis=0)
""", "weights of 'The cat sat <end>'"),
    "gram_of_features": ("""def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    return helpers.softmax(X.T @ X / np.sqrt(X.shape[1]), axis=-1)
""", "weights of 'The cat sat <end>'"),   # CAT_X is 4 x 4: same shape
    "no_max_shift": ("""def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    e = np.exp(X @ X.T / np.sqrt(X.shape[1]))
    return e / e.sum(axis=1, keepdims=True)
""", "large vectors (stability)"),
}

CORRECT = {
    "einsum": """def simple_attention_weights(X):
    X = np.asarray(X, dtype=np.float64)
    s = np.einsum('id,jd->ij', X, X) / np.sqrt(X.shape[-1])
    s -= s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    return w / w.sum(axis=-1, keepdims=True)
""",
    "loops": """def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    N, d = X.shape
    W = np.zeros((N, N))
    for i in range(N):
        scores = [float(np.dot(X[i], X[j])) / d ** 0.5 for j in range(N)]
        top = max(scores)
        exps = [np.exp(s - top) for s in scores]
        W[i] = np.array(exps) / sum(exps)
    return W
""",
    "naive_then_shift_warns": """def simple_attention_weights(X):
    X = np.asarray(X, dtype=float)
    s = X @ X.T / np.sqrt(X.shape[1])
    e = np.exp(s)                        # overflows on large vectors (RuntimeWarning)...
    if not np.all(np.isfinite(e)):
        e = np.exp(s - s.max(axis=1, keepdims=True))   # ...so shift and retry
    return e / e.sum(axis=1, keepdims=True)
""",
}
