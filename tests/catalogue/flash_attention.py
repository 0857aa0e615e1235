"""Answers to ``flash_attention(Q, K, V, block_size, causal=False)`` (notebook 13)."""

_FLASH = """def flash_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape
    m = np.full((n, 1), -np.inf)
    l = np.zeros((n, 1))
    O = np.zeros((n, V.shape[1]))
    rows = np.arange(n)[:, None]
    for start in range(0, n, block_size):
        s = Q @ K[start:start + block_size].T / {scale}
        if causal:
            s = np.where({cols} <= rows, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        safe = np.where(np.isfinite(m_new), m_new, 0.0)
        factor = np.exp(m - safe)
        e = np.exp(s - safe)
        l = l * factor + e.sum(axis=1, keepdims=True)
        O = {O} + e @ V[start:start + block_size]
        m = m_new
    return O / l
"""

_OK = dict(scale="np.sqrt(d_k)", cols="start + np.arange(s.shape[1])", O="O * factor")


def _flash(**changes):
    return _FLASH.format(**{**_OK, **changes})


WRONG = {
    "output_not_rescaled": (_flash(O="O"), "running output was not rescaled"),
    "mask_without_offset": (_flash(cols="np.arange(s.shape[1])"), "start + j"),
    "not_scaled": (_flash(scale="1.0"), "sqrt(d_k)"),
    # right numbers, the full [n, n] score matrix: what the exercise exists to avoid
    "full_matrix_attention": ("""def flash_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    mask = causal_mask(len(Q)) if causal else None
    return scaled_dot_product_attention(Q, K, V, mask)[0]
""", "it called"),
    "softmax_of_all_scores": ("""def flash_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    s = Q @ K.T / np.sqrt(Q.shape[1])
    if causal:
        s = np.where(causal_mask(len(Q)), s, -np.inf)
    return softmax(s, axis=-1) @ V
""", "it called"),
}

CORRECT = {
    "running_triple": _flash(),
    "per_row_loops": """def flash_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n = len(Q)
    out = np.zeros((n, V.shape[1]))
    for i in range(n):
        m, l, o = -np.inf, 0.0, np.zeros(V.shape[1])
        last = i + 1 if causal else n
        for start in range(0, last, block_size):
            stop = min(start + block_size, last)
            s = K[start:stop] @ Q[i] / np.sqrt(Q.shape[1])
            m_new = max(m, s.max())
            w = np.exp(s - m_new)
            c = np.exp(m - m_new)
            l = l * c + w.sum()
            o = o * c + w @ V[start:stop]
            m = m_new
        out[i] = o / l
    return out
""",
    "normalised_running": """def flash_attention(Q, K, V, block_size, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n = Q.shape[0]
    m = np.full((n, 1), -1e300)
    l = np.zeros((n, 1))
    out = np.zeros((n, V.shape[1]))
    for start in range(0, n, block_size):
        stop = min(start + block_size, n)
        s = Q @ K[start:stop].T / np.sqrt(Q.shape[1])
        if causal:
            s = np.where(np.arange(start, stop)[None, :] <= np.arange(n)[:, None], s, -1e300)
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        e = np.exp(s - m_new) * (s > -1e299)
        l_new = l * np.exp(m - m_new) + e.sum(axis=1, keepdims=True)
        safe = np.where(l_new > 0, l_new, 1.0)
        out = (out * l * np.exp(m - m_new) + e @ V[start:stop]) / safe
        m, l = m_new, l_new
    return out
""",
}
