"""Answers to ``causal_mask(n)`` (notebook 05)."""

WRONG = {
    # issue 22, finding 6: the contract says boolean, and the dtype of a mask is judged
    "int_zero_one": ("""def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=int))
""", "the mask must be boolean"),
    "inverted": ("""def causal_mask(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)
""", "mask inverted"),
    "strict": ("""def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)
""", "the diagonal is False"),
    "upper_triangle": ("""def causal_mask(n):
    i = np.arange(n)
    return i[:, None] <= i[None, :]
""", "upper triangle"),
    "additive": ("""def causal_mask(n):
    return np.where(np.tri(n, dtype=bool), 0.0, -np.inf)
""", "additive mask"),
}

CORRECT = {
    "loops": """def causal_mask(n):
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            mask[i, j] = j <= i
    return mask
""",
    "tril_ints": """def causal_mask(n):
    return np.tril(np.ones((n, n))) == 1
""",
    "nested_lists": """def causal_mask(n):
    return np.array([[j <= i for j in range(n)] for i in range(n)])
""",
}
