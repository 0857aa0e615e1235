"""Answers to ``causal_padding_mask(n, n_real)`` (notebook 05)."""

WRONG = {
    "float_zero_one_mask": ("""def causal_padding_mask(n, n_real):
    mask = np.tril(np.ones((n, n)))
    mask[:, n_real:] = 0
    return mask
""", "the mask must be boolean"),
    "padding_ignored": ("""def causal_padding_mask(n, n_real):
    return np.tril(np.ones((n, n), dtype=bool))
""", "causal_padding_mask(4, 2)"),
    "pads_query_rows": ("""def causal_padding_mask(n, n_real):
    i = np.arange(n)
    return (i[None, :] <= i[:, None]) & (i < n_real)[:, None]
""", "causal_padding_mask(4, 2)"),
    "pads_rows_and_columns": ("""def causal_padding_mask(n, n_real):
    i = np.arange(n)
    real = i < n_real
    return (i[None, :] <= i[:, None]) & real[None, :] & real[:, None]
""", "causal_padding_mask(4, 2)"),
    "strict_diagonal": ("""def causal_padding_mask(n, n_real):
    i = np.arange(n)
    return (i[None, :] < i[:, None]) & (i < n_real)[None, :]
""", "causal_padding_mask(4, 2)"),
    "transposed_triu": ("""def causal_padding_mask(n, n_real):
    mask = np.triu(np.ones((n, n), dtype=bool))
    mask[:, n_real:] = False
    return mask
""", "causal_padding_mask(4, 2)"),
    "n_real_off_by_one": ("""def causal_padding_mask(n, n_real):
    i = np.arange(n)
    return (i[None, :] <= i[:, None]) & (i <= n_real)[None, :]
""", "causal_padding_mask(4, 2)"),
}

CORRECT = {
    "tril_then_slice": """def causal_padding_mask(n, n_real):
    mask = np.tril(np.ones((n, n), dtype=bool))
    mask[:, n_real:] = False
    return mask
""",
    "double_loop": """def causal_padding_mask(n, n_real):
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(min(i + 1, n_real)):
            mask[i, j] = True
    return mask
""",
    "tri_and_outer": """def causal_padding_mask(n, n_real):
    real = np.arange(n) < n_real
    return np.logical_and(np.tri(n, dtype=bool), np.outer(np.ones(n, dtype=bool), real))
""",
}
