"""Answers to ``llama_block(x, block, config, start=0, cache=None, layer=0)`` (notebook 10)."""

WRONG = {
    "no_residuals": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    positions = np.arange(start, start + len(x))
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q = apply_rope(split_heads(t1 @ block["W_Q"], config.n_heads), positions, config.rope_theta)
    K = apply_rope(split_heads(t1 @ block["W_K"], config.n_kv_heads), positions, config.rope_theta)
    V = split_heads(t1 @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        K, V = cache.update(layer, K, V)
    t2 = merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"]
    t4 = rms_norm(t2, block["ffn_norm"], config.eps)
    return swiglu(t4, block["W_gate"], block["W_up"], block["W_down"])
""", "no residual connections"),
    "no_rope": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q = split_heads(t1 @ block["W_Q"], config.n_heads)
    K = split_heads(t1 @ block["W_K"], config.n_kv_heads)
    V = split_heads(t1 @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        K, V = cache.update(layer, K, V)
    t3 = merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"] + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    return swiglu(t4, block["W_gate"], block["W_up"], block["W_down"]) + t3
""", "queries and keys were not rotated"),
    "no_norms": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    positions = np.arange(start, start + len(x))
    Q = apply_rope(split_heads(x @ block["W_Q"], config.n_heads), positions, config.rope_theta)
    K = apply_rope(split_heads(x @ block["W_K"], config.n_kv_heads), positions, config.rope_theta)
    V = split_heads(x @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        K, V = cache.update(layer, K, V)
    t3 = merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"] + x
    return swiglu(t3, block["W_gate"], block["W_up"], block["W_down"]) + t3
""", "the RMS norms before attention and feed-forward are missing"),
    "positions_from_zero": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    positions = np.arange(len(x))
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q = apply_rope(split_heads(t1 @ block["W_Q"], config.n_heads), positions, config.rope_theta)
    K = apply_rope(split_heads(t1 @ block["W_K"], config.n_kv_heads), positions, config.rope_theta)
    V = split_heads(t1 @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        K, V = cache.update(layer, K, V)
    t3 = merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"] + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    return swiglu(t4, block["W_gate"], block["W_up"], block["W_down"]) + t3
""", "the rotations ignore start"),
    "cache_ignored": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    positions = np.arange(start, start + len(x))
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q = apply_rope(split_heads(t1 @ block["W_Q"], config.n_heads), positions, config.rope_theta)
    K = apply_rope(split_heads(t1 @ block["W_K"], config.n_kv_heads), positions, config.rope_theta)
    V = split_heads(t1 @ block["W_V"], config.n_kv_heads)
    t3 = merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"] + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    return swiglu(t4, block["W_gate"], block["W_up"], block["W_down"]) + t3
""", "call cache.update(layer, K, V) when a cache is given"),
    "cache_result_dropped": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    positions = np.arange(start, start + len(x))
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q = apply_rope(split_heads(t1 @ block["W_Q"], config.n_heads), positions, config.rope_theta)
    K = apply_rope(split_heads(t1 @ block["W_K"], config.n_kv_heads), positions, config.rope_theta)
    V = split_heads(t1 @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        cache.update(layer, K, V)
    t3 = merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"] + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    return swiglu(t4, block["W_gate"], block["W_up"], block["W_down"]) + t3
""", "the new row did not attend to the cached keys and values"),
    "post_norm": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    positions = np.arange(start, start + len(x))
    Q = apply_rope(split_heads(x @ block["W_Q"], config.n_heads), positions, config.rope_theta)
    K = apply_rope(split_heads(x @ block["W_K"], config.n_kv_heads), positions, config.rope_theta)
    V = split_heads(x @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        K, V = cache.update(layer, K, V)
    t3 = rms_norm(merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"] + x,
                  block["attn_norm"], config.eps)
    t5 = swiglu(t3, block["W_gate"], block["W_up"], block["W_down"])
    return rms_norm(t5 + t3, block["ffn_norm"], config.eps)
""", "Likely mistake: each RMS norm came after its residual sum"),
    "rope_on_values_too": ("""def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    positions = np.arange(start, start + len(x))
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q, K, V = (apply_rope(split_heads(t1 @ block[w], h), positions, config.rope_theta)
               for w, h in (("W_Q", config.n_heads), ("W_K", config.n_kv_heads),
                            ("W_V", config.n_kv_heads)))
    if cache is not None:
        K, V = cache.update(layer, K, V)
    t3 = merge_heads(grouped_query_attention(Q, K, V)) @ block["W_O"] + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    return swiglu(t4, block["W_gate"], block["W_up"], block["W_down"]) + t3
""", "Likely mistake: the values were rotated too"),
}

CORRECT = {
    "reshape_transpose_inline": """def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=np.float64)
    N, h, h_kv, d_h = len(x), config.n_heads, config.n_kv_heads, config.d_head
    pos = start + np.arange(N)
    t1 = rms_norm(x, block["attn_norm"], config.eps)
    Q = (t1 @ block["W_Q"]).reshape(N, h, d_h).transpose(1, 0, 2)
    K = (t1 @ block["W_K"]).reshape(N, h_kv, d_h).transpose(1, 0, 2)
    V = (t1 @ block["W_V"]).reshape(N, h_kv, d_h).transpose(1, 0, 2)
    Q, K = apply_rope(Q, pos, theta=config.rope_theta), apply_rope(K, pos, theta=config.rope_theta)
    if cache is not None:
        K, V = cache.update(layer, K, V)
    A = grouped_query_attention(Q, K, V)                         # [h, N, d_h]
    t3 = x + A.transpose(1, 0, 2).reshape(N, h * d_h) @ block["W_O"]
    ffn_in = rms_norm(t3, block["ffn_norm"], config.eps)
    return t3 + swiglu(ffn_in, block["W_gate"], block["W_up"], block["W_down"])
""",
    "attention_per_head_loop": """def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    positions = np.arange(n) + start
    a = rms_norm(x, block["attn_norm"], eps=config.eps)
    q = apply_rope(split_heads(a @ block["W_Q"], config.n_heads), positions, config.rope_theta)
    k = apply_rope(split_heads(a @ block["W_K"], config.n_kv_heads), positions, config.rope_theta)
    v = split_heads(a @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        k, v = cache.update(layer, k, v)
    n_k = k.shape[1]
    mask = np.tril(np.ones((n, n_k), dtype=bool), k=n_k - n)
    per_kv = config.n_heads // config.n_kv_heads
    heads = [scaled_dot_product_attention(q[c], k[c // per_kv], v[c // per_kv], mask)[0]
             for c in range(config.n_heads)]
    x = x + np.concatenate(heads, axis=-1) @ block["W_O"]
    f = rms_norm(x, block["ffn_norm"], eps=config.eps)
    return x + swiglu(f, block["W_gate"], block["W_up"], block["W_down"])
""",
    "einsum_all_in_one": """def llama_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    N, d_h = x.shape[0], config.d_head

    def norm(v, g):
        return v / np.sqrt(np.mean(v ** 2, axis=-1, keepdims=True) + config.eps) * g

    def rope(v):                                              # [heads, N, d_h]
        half = d_h // 2
        ang = np.arange(start, start + N)[:, None] * config.rope_theta ** (-np.arange(half) / half)
        c, s = np.cos(ang), np.sin(ang)
        return np.concatenate([v[..., :half] * c - v[..., half:] * s,
                               v[..., half:] * c + v[..., :half] * s], axis=-1)

    t1 = norm(x, block["attn_norm"])
    Q = rope(np.einsum("nd,dhk->hnk", t1, block["W_Q"].reshape(-1, config.n_heads, d_h)))
    K = rope(np.einsum("nd,dhk->hnk", t1, block["W_K"].reshape(-1, config.n_kv_heads, d_h)))
    V = np.einsum("nd,dhk->hnk", t1, block["W_V"].reshape(-1, config.n_kv_heads, d_h))
    if cache is not None:
        K, V = cache.update(layer, K, V)
    n_k = K.shape[1]
    group = config.n_heads // config.n_kv_heads
    scores = np.einsum("hnk,hmk->hnm", Q, np.repeat(K, group, axis=0)) / np.sqrt(d_h)
    future = np.arange(n_k)[None, :] > np.arange(n_k - N, n_k)[:, None]
    scores[:, future] = -np.inf
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    A = np.einsum("hnm,hmk->nhk", w, np.repeat(V, group, axis=0)).reshape(N, -1)
    t3 = x + A @ block["W_O"]
    t4 = norm(t3, block["ffn_norm"])
    g = t4 @ block["W_gate"]
    return t3 + (g / (1 + np.exp(-g)) * (t4 @ block["W_up"])) @ block["W_down"]
""",
}
