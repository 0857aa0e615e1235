"""Answers to ``stack_tokens(vectors)`` (notebook 00)."""

WRONG = {
    "integer_dtype": ("""def stack_tokens(vectors):
    return np.array(vectors)
""", "must have dtype float64"),
    "transposed": ("""def stack_tokens(vectors):
    return np.array(vectors, dtype=float).T
""", "expected shape (2, 3)"),
    "pads_ragged_vectors": ("""def stack_tokens(vectors):
    d = max(len(v) for v in vectors)
    X = np.zeros((len(vectors), d))
    for i, v in enumerate(vectors):
        X[i, :len(v)] = v
    return X
""", "must raise a ValueError"),
}

CORRECT = {
    "loop_with_check": """def stack_tokens(vectors):
    d = len(vectors[0])
    X = np.zeros((len(vectors), d))
    for i, v in enumerate(vectors):
        if len(v) != d:
            raise ValueError("vectors differ in length")
        X[i] = v
    return X
""",
    "vstack": """def stack_tokens(vectors):
    return np.vstack([np.asarray(v, dtype=float) for v in vectors])
""",
    "numpy_rejects_ragged": """def stack_tokens(vectors):
    return np.array(vectors, dtype=np.float64)    # NumPy raises ValueError on ragged input
""",
}
