"""Answers to ``grouped_query_attention(Q, K, V)`` (notebook 10)."""

WRONG = {
    "heads_tiled_not_grouped": ("""def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_rep = Q.shape[0] // K.shape[0]
    K, V = np.tile(K, (n_rep, 1, 1)), np.tile(V, (n_rep, 1, 1))
    n_q, n_k = Q.shape[-2], K.shape[-2]
    mask = np.arange(n_k)[None, :] <= (n_k - n_q) + np.arange(n_q)[:, None]
    out, _ = scaled_dot_product_attention(Q, K, V, mask)
    return out
""", "consecutive query heads share one"),
    "no_causal_mask": ("""def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_rep = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, n_rep, axis=0), np.repeat(V, n_rep, axis=0)
    out, _ = scaled_dot_product_attention(Q, K, V)
    return out
""", "no causal mask"),
    "scaled_by_d_h": ("""def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_rep = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, n_rep, axis=0), np.repeat(V, n_rep, axis=0)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    scores = Q @ K.transpose(0, 2, 1) / Q.shape[-1]
    mask = np.arange(n_k)[None, :] <= (n_k - n_q) + np.arange(n_q)[:, None]
    scores = np.where(mask, scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
""", "scores were divided by d_h instead of sqrt(d_h)"),
    "tril_mask_from_key_0": ("""def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_rep = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, n_rep, axis=0), np.repeat(V, n_rep, axis=0)
    mask = np.tril(np.ones((Q.shape[-2], K.shape[-2]), dtype=bool))
    out, _ = scaled_dot_product_attention(Q, K, V, mask)
    return out
""", "the causal mask starts at key 0"),
    "no_scale": ("""def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_rep = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, n_rep, axis=0), np.repeat(V, n_rep, axis=0)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2)
    mask = np.arange(n_k)[None, :] <= (n_k - n_q) + np.arange(n_q)[:, None]
    scores = np.where(mask, scores, -1e9)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
""", "first difference"),
}

CORRECT = {
    # issue 22, finding 1: the contract says V is [n_kv_heads, N_k, d_h], so the output
    # may be built in np.empty_like(Q)
    "empty_like_q": """def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_heads, n_q, d_h = Q.shape
    n_k = K.shape[1]
    group = n_heads // K.shape[0]
    allowed = np.arange(n_k)[None, :] <= (n_k - n_q) + np.arange(n_q)[:, None]
    out = np.empty_like(Q)
    for c in range(n_heads):
        scores = np.where(allowed, Q[c] @ K[c // group].T / np.sqrt(d_h), -np.inf)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out[c] = (w / w.sum(axis=-1, keepdims=True)) @ V[c // group]
    return out
""",
    "loop_over_heads": """def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_heads, n_q, d_h = Q.shape
    n_kv, n_k = K.shape[0], K.shape[1]
    group = n_heads // n_kv
    out = []
    for c in range(n_heads):
        k, v = K[c // group], V[c // group]
        scores = Q[c] @ k.T / np.sqrt(d_h)
        for i in range(n_q):
            scores[i, n_k - n_q + i + 1:] = -1e30         # a large negative number
        w = np.exp(scores - scores.max(axis=1, keepdims=True))
        out.append(w / w.sum(axis=1, keepdims=True) @ v)
    return np.stack(out)
""",
    "einsum_grouped_reshape": """def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_heads, n_q, d_h = Q.shape
    n_kv, n_k = K.shape[0], K.shape[1]
    Qg = Q.reshape(n_kv, n_heads // n_kv, n_q, d_h)       # consecutive heads form a group
    scores = np.einsum("grqd,gkd->grqk", Qg, K) / np.sqrt(d_h)
    mask = np.triu(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q + 1)   # True = the future
    scores = np.where(mask, -np.inf, scores)
    scores -= scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("grqk,gkv->grqv", w, V).reshape(n_heads, n_q, V.shape[-1])
""",
    "log_mask_warns": """def grouped_query_attention(Q, K, V):
    Q, K, V = np.asarray(Q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    n_rep = Q.shape[0] // K.shape[0]
    K = K[np.arange(Q.shape[0]) // n_rep]
    V = V[np.arange(Q.shape[0]) // n_rep]
    n_q, n_k = Q.shape[1], K.shape[1]
    allowed = np.tril(np.ones((n_q, n_k)), k=n_k - n_q)
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1]) + np.log(allowed)   # log 0: warns, -inf
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True) @ V
""",
}
