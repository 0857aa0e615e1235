"""Answers to ``attention_with_cache(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache)`` (13)."""

_STEP = """def attention_with_cache(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    x = np.asarray(x, dtype=float)
    d = len(x)
    K = np.vstack([np.reshape(K_cache, (-1, d)), (x @ W_K)[None]])
    V = np.vstack([np.reshape(V_cache, (-1, d)), (x @ W_V)[None]])
    q = split_heads((x @ W_Q)[None], {heads})
    heads, _ = scaled_dot_product_attention(q, split_heads({keys}, {heads}), split_heads({values}, {heads}))
    y = (merge_heads(heads) @ W_O)[0]
    return {result}
"""

_OK = dict(heads="n_heads", keys="K", values="V", result="y, K, V")


def _step(**changes):
    return _STEP.format(**{**_OK, **changes})


WRONG = {
    "cache_not_returned_extended": (_step(result="y, np.reshape(K_cache, (-1, d)), "
                                          "np.reshape(V_cache, (-1, d))"),
                                    "without the new row"),
    "one_head": (_step(heads="1"), "heads were not split"),
    "new_row_first": ("""def attention_with_cache(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    x = np.asarray(x, dtype=float)
    d = len(x)
    K = np.vstack([(x @ W_K)[None], np.reshape(K_cache, (-1, d))])
    V = np.vstack([(x @ W_V)[None], np.reshape(V_cache, (-1, d))])
    q = split_heads((x @ W_Q)[None], n_heads)
    heads, _ = scaled_dot_product_attention(q, split_heads(K, n_heads), split_heads(V, n_heads))
    return (merge_heads(heads) @ W_O)[0], K, V
""", "LAST rows"),
    # on a cache of one row this is exactly the named mistake: the headline names it
    "first_row_only": (_step(keys="K[:1]", values="V[:1]"), "did not attend to its own key"),
}

CORRECT = {
    "split_merge": _step(),
    "einsum_heads": """def attention_with_cache(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    x = np.asarray(x, dtype=float)
    d = x.shape[0]
    d_h = d // n_heads
    K = np.concatenate([np.asarray(K_cache, dtype=float).reshape(-1, d), [x @ W_K]])
    V = np.concatenate([np.asarray(V_cache, dtype=float).reshape(-1, d), [x @ W_V]])
    q = (x @ W_Q).reshape(n_heads, d_h)
    Kh = K.reshape(len(K), n_heads, d_h)
    Vh = V.reshape(len(V), n_heads, d_h)
    s = np.einsum("hd,thd->ht", q, Kh) / np.sqrt(d_h)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    y = np.einsum("ht,thd->hd", w, Vh).reshape(d)
    return y @ W_O, K, V
""",
    "through_full_attention": """def attention_with_cache(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    x = np.asarray(x, dtype=float)
    d = len(x)
    K = np.vstack([np.reshape(K_cache, (-1, d)), x @ W_K])
    V = np.vstack([np.reshape(V_cache, (-1, d)), x @ W_V])
    outs = []
    d_h = d // n_heads
    for h in range(n_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        q = (x @ W_Q)[None, cols]
        out, _ = scaled_dot_product_attention(q, K[:, cols], V[:, cols])
        outs.append(out[0])
    return np.concatenate(outs) @ W_O, K, V
""",
}
