"""Answers to ``scaled_dot_product_attention(Q, K, V, mask=None)`` (notebook 04)."""

_RIGHT = """def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ K.T / {scale}
    if mask is not None:
        scores = {masking}
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V, weights
"""


def _variant(scale="np.sqrt(Q.shape[-1])", masking="np.where(mask, scores, -np.inf)"):
    return _RIGHT.format(scale=scale, masking=masking)


WRONG = {
    "no_scale": (_variant(scale="1.0"), "not divided by sqrt(d_k)"),
    "scale_sqrt_d_v": (_variant(scale="np.sqrt(V.shape[-1])"), "divided by sqrt(d_v)"),
    "scale_d_k": (_variant(scale="Q.shape[-1]"), "divided by d_k"),
    "wrong_axis": ("""def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = helpers.softmax(scores, axis=0)
    return weights @ V, weights
""", "wrong axis"),
    "no_max_shift": ("""def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores)
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights
""", "subtract the row maximum"),
    "mask_after_softmax": ("""def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    weights = helpers.softmax(Q @ K.T / np.sqrt(Q.shape[-1]), axis=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ V, weights
""", "mask applied after the softmax"),
    "mask_inverted": (_variant(masking="np.where(mask, -np.inf, scores)"), "mask inverted"),
    "mask_inverted_large_negative": (_variant(masking="np.where(~np.asarray(mask), scores, -1e9)"),
                                     "mask inverted"),
    "mask_ignored": (_variant(masking="scores"), "mask was ignored"),
    "mask_zero_scores": (_variant(masking="scores * mask"), "exp(0) = 1"),
    "tuple_swapped": ("""def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = helpers.softmax(scores, axis=-1)
    return weights, weights @ V
""", "(output, weights)"),
}

CORRECT = {
    "minus_inf_where": _variant(),
    "large_negative": _variant(masking="np.where(mask, scores, -1e9)"),
    "very_large_negative_fill": """def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q, float), np.asarray(K, float), np.asarray(V, float)
    scores = np.matmul(Q, K.T) / np.sqrt(K.shape[1])
    if mask is not None:
        scores[~np.asarray(mask, dtype=bool)] = -1e30
    weights = helpers.softmax(scores)
    return weights @ V, weights
""",
    "log_mask_warns": _variant(masking="scores + np.log(np.asarray(mask, dtype=float))"),
    "einsum_loops": """def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    d_k = Q.shape[-1]
    scores = np.einsum("qd,kd->qk", Q, K) / d_k ** 0.5
    weights = np.zeros_like(scores)
    for i in range(scores.shape[0]):
        allowed = np.ones(scores.shape[1], dtype=bool) if mask is None else np.asarray(mask)[i]
        s = scores[i][allowed]
        e = np.exp(s - s.max())
        weights[i, allowed] = e / e.sum()
    return np.einsum("qk,kv->qv", weights, V), weights
""",
    "masked_array": """def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    m = np.where(mask, scores, -np.inf).max(axis=-1, keepdims=True)
    e = np.where(mask, np.exp(np.where(mask, scores - m, 0.0)), 0.0)
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights
""",
}
