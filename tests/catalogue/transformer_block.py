"""Answers to ``transformer_block(x, params, n_heads, causal=True)`` (notebook 07)."""

_BLOCK = """def transformer_block(x, params, n_heads, causal=True):
    p = params
    x = np.asarray(x, dtype=float)
{body}
"""

_PRE = """    t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    t2 = multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=causal)
    t3 = t2 + x
    t4 = layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])
    t5 = feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"])
    return t5 + t3"""


def _block(body: str) -> str:
    return _BLOCK.format(body=body)


WRONG = {
    "post_norm": (_block("""    a = multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=causal)
    h = layer_norm(x + a, p["ln1_gamma"], p["ln1_beta"])
    f = feed_forward(h, p["W1"], p["b1"], p["W2"], p["b2"])
    return layer_norm(h + f, p["ln2_gamma"], p["ln2_beta"])"""), "post-norm"),
    "no_first_residual": (_block(_PRE.replace("t3 = t2 + x", "t3 = t2")), "no residual connection"),
    "no_second_residual": (_block(_PRE.replace("return t5 + t3", "return t5")),
                           "no residual connection"),
    "second_residual_from_x": (_block(_PRE.replace("return t5 + t3", "return t5 + x")),
                               "the second residual adds x"),
    "causal_not_passed": (_block(_PRE.replace("n_heads, causal=causal)", "n_heads)")),
                          "causal argument was not passed on"),
    "ln1_params_twice": (_block(_PRE.replace('p["ln2_gamma"], p["ln2_beta"]',
                                             'p["ln1_gamma"], p["ln1_beta"]')),
                         "ln1_gamma/ln1_beta"),
}

CORRECT = {
    "slide_names": _block(_PRE),
    "inline_residuals": _block("""    h = x + multi_head_attention(layer_norm(x, p["ln1_gamma"], p["ln1_beta"]),
                                 p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal)
    return h + feed_forward(layer_norm(h, p["ln2_gamma"], p["ln2_beta"]),
                            p["W1"], p["b1"], p["W2"], p["b2"])"""),
    "own_norm_and_ffn_inline": _block("""    def norm(v, g, b):
        mu = v.mean(-1, keepdims=True)
        return g * (v - mu) / np.sqrt(((v - mu) ** 2).mean(-1, keepdims=True) + 1e-5) + b
    t3 = x + multi_head_attention(norm(x, p["ln1_gamma"], p["ln1_beta"]), p["W_Q"], p["W_K"],
                                  p["W_V"], p["W_O"], n_heads, causal=causal)
    hidden = np.maximum(norm(t3, p["ln2_gamma"], p["ln2_beta"]) @ p["W1"] + p["b1"], 0)
    return t3 + hidden @ p["W2"] + p["b2"]"""),
}
