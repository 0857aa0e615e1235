"""Answers to ``mean_pool(h, key_mask)`` (notebook 09)."""


# The test cell checks the worked example first (assert_close, "the worked example"),
# so mistakes that get it wrong are reported there, before check_exercise's diagnosis.
WRONG = {
    "mean_includes_padding": ("""def mean_pool(h, key_mask):
    return np.asarray(h, dtype=float).mean(axis=-2)
""", "the mean includes the padding positions"),
    "sum_not_mean": ("""def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    m = np.asarray(key_mask, dtype=float)[..., None]
    return (h * m).sum(axis=-2)
""", "a sum, not a mean"),
    "divided_by_N": ("""def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    m = np.asarray(key_mask, dtype=float)[..., None]
    return (h * m).sum(axis=-2) / h.shape[-2]
""", "divided by N (all positions, padding included)"),
    "wrong_axis": ("""def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    m = np.asarray(key_mask, dtype=float)[..., None]
    return (h * m).sum(axis=-1) / m.sum(axis=-1)
""", "has the wrong shape"),
    "boolean_index_one_sentence_only": ("""def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    return h[np.asarray(key_mask, dtype=bool)].mean(axis=0)
""", "has the wrong shape"),
    "mask_used_as_index": ("""def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    key_mask = np.asarray(key_mask)
    if h.ndim == 2:
        return h[key_mask].mean(axis=0)
    return np.stack([h[b][key_mask[b]].mean(axis=0) for b in range(h.shape[0])])
""", "first difference"),
}

CORRECT = {
    "loop_over_sentences": """def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    m = np.asarray(key_mask).astype(bool)
    flat_h = h.reshape(-1, *h.shape[-2:])
    flat_m = m.reshape(-1, m.shape[-1])
    out = np.empty((flat_h.shape[0], h.shape[-1]))
    for b in range(flat_h.shape[0]):
        out[b] = flat_h[b][flat_m[b]].mean(axis=0)
    return out.reshape(*h.shape[:-2], h.shape[-1])
""",
    "einsum": """def mean_pool(h, key_mask):
    m = np.asarray(key_mask, dtype=np.float64)
    total = np.einsum("...nd,...n->...d", np.asarray(h, dtype=np.float64), m)
    return total / m.sum(axis=-1)[..., None]
""",
    "where_and_count": """def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    real = np.asarray(key_mask) != 0
    kept = np.where(real[..., None], h, 0.0)            # padding rows set to 0, not just weighted
    return kept.sum(axis=-2) / np.count_nonzero(real, axis=-1)[..., None]
""",
}
