"""Answers to ``ablate_heads(token_ids, params, n_heads, heads)`` (notebook 14)."""

_FORWARD = """def ablate_heads(token_ids, params, n_heads, heads):
    ids = np.asarray(token_ids)
    x = embed(ids, params["E"], params["P"])
    for b, p in enumerate(params["blocks"]):
        t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
        Q, K, V = project_qkv(t1, p["W_Q"], p["W_K"], p["W_V"])
        out, _ = scaled_dot_product_attention(*(split_heads(a, n_heads) for a in (Q, K, V)),
                                              causal_mask(len(x)))
        for (block, head) in heads:
            if {test}:
                out[head] = 0.0
        t3 = merge_heads(out) @ p["W_O"] + x
        t4 = layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])
        x = feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"]) + t3
    if "ln_f_gamma" in params:
        x = layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"])
    return cross_entropy(lm_head(x, params["E"])[:-1], ids[1:])
"""

WRONG = {
    "every_block": (_FORWARD.replace("{test}", "True"), "in every block"),
    "ignored": (_FORWARD.replace("{test}", "False"), "did not change"),
}

CORRECT = {
    "loop": _FORWARD.replace("{test}", "block == b"),
    # zeroing a head's output is zeroing its d_h rows of W_O
    "zeroed_W_O_rows": """def ablate_heads(token_ids, params, n_heads, heads):
    ids = np.asarray(token_ids)
    x = embed(ids, params["E"], params["P"])
    for b, p in enumerate(params["blocks"]):
        d_h = p["W_O"].shape[0] // n_heads
        W_O = p["W_O"].copy()
        for (block, head) in heads:
            if block == b:
                W_O[head * d_h:(head + 1) * d_h] = 0.0
        t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
        Q, K, V = project_qkv(t1, p["W_Q"], p["W_K"], p["W_V"])
        out, _ = scaled_dot_product_attention(*(split_heads(a, n_heads) for a in (Q, K, V)),
                                              causal_mask(len(x)))
        t3 = merge_heads(out) @ W_O + x
        t4 = layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])
        x = feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"]) + t3
    if "ln_f_gamma" in params:
        x = layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"])
    return cross_entropy(lm_head(x, params["E"])[:-1], ids[1:])
""",
}
