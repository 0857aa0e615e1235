"""Answers to ``most_similar(X, i)`` (notebook 01)."""

WRONG = {
    "dot_products_not_cosines": ("""def most_similar(X, i):
    X = np.asarray(X, dtype=float)
    scores = X @ X[i]
    scores[i] = -np.inf
    return int(np.argmax(scores))
""", "did you compare dot products instead of cosines?"),
    "returns_itself": ("""def most_similar(X, i):
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1)
    cosines = X @ X[i] / (norms * norms[i])
    return int(np.argmax(cosines))            # row i always has cosine 1 with itself
""", "most_similar must never return i itself"),
    "ties_to_largest_j": ("""def most_similar(X, i):
    X = np.asarray(X, dtype=float)
    best, best_j = -np.inf, None
    for j in range(len(X)):
        if j == i:
            continue
        c = X[i] @ X[j] / (np.linalg.norm(X[i]) * np.linalg.norm(X[j]))
        if c >= best:                         # >= : a later tie replaces the earlier one
            best, best_j = c, j
    return best_j
""", "Likely mistake: ties go to the smallest j"),
    "self_set_to_zero": ("""def most_similar(X, i):
    X = np.asarray(X, dtype=float)
    norms = np.linalg.norm(X, axis=1)
    cosines = X @ X[i] / (norms * norms[i])
    cosines[i] = 0                            # but every other cosine may be negative
    return int(np.argmax(cosines))
""", "Likely mistake: row i's own cosine was set to 0"),
    "nearest_by_distance": ("""def most_similar(X, i):
    X = np.asarray(X, dtype=float)
    dist = np.linalg.norm(X - X[i], axis=1)   # Euclidean distance, not the angle
    dist[i] = np.inf
    return int(np.argmin(dist))
""", "6 random vectors in 3-D"),
}

CORRECT = {
    "python_loop": """def most_similar(X, i):
    def cos(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)
    best_j, best = None, None
    for j in range(len(X)):
        if j != i:
            c = cos(X[i], X[j])
            if best is None or c > best:      # strict: the first of equal ones stays
                best_j, best = j, c
    return best_j
""",
    "normalized_rows_nanargmax": """def most_similar(X, i):
    X = np.asarray(X, dtype=np.float64)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    sims = np.einsum('jd,d->j', U, U[i])
    sims[i] = np.nan
    return int(np.nanargmax(sims))
""",
    "log_mask_warns": """def most_similar(X, i):
    X = np.asarray(X, dtype=float)
    N = X.shape[0]
    cosines = X @ X[i] / (np.linalg.norm(X, axis=1) * np.linalg.norm(X[i]))
    cosines = cosines + np.log(np.arange(N) != i)   # log(0) = -inf: RuntimeWarning
    return int(np.argmax(cosines))
""",
}
