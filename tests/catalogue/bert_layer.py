"""Answers to ``bert_layer(x, layer, n_heads, key_mask=None)`` (notebook 09)."""


_SOLUTION_LIKE = """def bert_layer(x, layer, n_heads, key_mask=None):
    x = np.asarray(x, dtype=float)
    mask = None if key_mask is None else np.asarray(key_mask, dtype=bool)[..., None, None, :]
    Qh = split_heads(x @ layer["W_Q"] + layer["b_Q"], n_heads)
    Kh = split_heads(x @ layer["W_K"] + layer["b_K"], n_heads)
    Vh = split_heads(x @ layer["W_V"] + layer["b_V"], n_heads)
    heads, _ = scaled_dot_product_attention(Qh, Kh, Vh, mask)
    attention = merge_heads(heads) @ layer["W_O"] + layer["b_O"]
    h = layer_norm(x + attention, layer["ln1_gamma"], layer["ln1_beta"], eps=1e-12)
    ffn = gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"]
    return layer_norm(h + ffn, layer["ln2_gamma"], layer["ln2_beta"], eps=1e-12)
"""


def _variant(*pairs):
    """The solution-like answer with each (old, new) replacement made (exactly once)."""
    src = _SOLUTION_LIKE
    for old, new in pairs:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return src


WRONG = {
    "pre_norm": ("""def bert_layer(x, layer, n_heads, key_mask=None):
    x = np.asarray(x, dtype=float)
    mask = None if key_mask is None else np.asarray(key_mask, dtype=bool)[..., None, None, :]
    a = layer_norm(x, layer["ln1_gamma"], layer["ln1_beta"], eps=1e-12)
    Qh = split_heads(a @ layer["W_Q"] + layer["b_Q"], n_heads)
    Kh = split_heads(a @ layer["W_K"] + layer["b_K"], n_heads)
    Vh = split_heads(a @ layer["W_V"] + layer["b_V"], n_heads)
    heads, _ = scaled_dot_product_attention(Qh, Kh, Vh, mask)
    t = x + merge_heads(heads) @ layer["W_O"] + layer["b_O"]
    f = layer_norm(t, layer["ln2_gamma"], layer["ln2_beta"], eps=1e-12)
    return t + gelu(f @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"]
""", "pre-norm order"),
    "causal_mask": (_variant(
        ("    heads, _ =",
         "    causal = np.tril(np.ones((x.shape[-2], x.shape[-2]), dtype=bool))\n"
         "    mask = causal if mask is None else mask & causal\n"
         "    heads, _ =")),
        "a causal mask: BERT's tokens also see the tokens after them"),
    "padding_mask_ignored": (_variant(
        ("scaled_dot_product_attention(Qh, Kh, Vh, mask)",
         "scaled_dot_product_attention(Qh, Kh, Vh)")),
        "the padding mask is ignored"),
    "layer_norm_default_eps": (_variant(
        ('layer["ln1_beta"], eps=1e-12)', 'layer["ln1_beta"])'),
        ('layer["ln2_beta"], eps=1e-12)', 'layer["ln2_beta"])')),
        "layer norm with eps=1e-5"),
    "second_layer_norm_default_eps": (_variant(
        ('layer["ln2_beta"], eps=1e-12)', 'layer["ln2_beta"])')),
        "Likely mistake: the second layer norm used the default eps=1e-5"),
    "tanh_gelu": (_variant(
        ('gelu(h @ layer["W1"] + layer["b1"])',
         'gelu_tanh(h @ layer["W1"] + layer["b1"])'),
        ("def bert_layer(", "def gelu_tanh(z):\n"
         "    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))\n"
         "\n\ndef bert_layer(")),
        "the tanh approximation of GELU; BERT uses the exact (erf) GELU"),
    "relu_ffn": (_variant(
        ('gelu(h @ layer["W1"] + layer["b1"])',
         'np.maximum(0, h @ layer["W1"] + layer["b1"])')),
        "ReLU in the feed-forward network"),
    "no_attention_biases": (_variant(
        ('x @ layer["W_Q"] + layer["b_Q"]', 'x @ layer["W_Q"]'),
        ('x @ layer["W_K"] + layer["b_K"]', 'x @ layer["W_K"]'),
        ('x @ layer["W_V"] + layer["b_V"]', 'x @ layer["W_V"]'),
        ('@ layer["W_O"] + layer["b_O"]', '@ layer["W_O"]')),
        "the attention biases b_Q, b_K, b_V, b_O are missing"),
    "no_residuals": (_variant(
        ("layer_norm(x + attention,", "layer_norm(attention,"),
        ("layer_norm(h + ffn,", "layer_norm(ffn,")),
        "no residual connections"),
    "mask_on_queries": (_variant(
        ("[..., None, None, :]", "[..., None, :, None]")),
        "Likely mistake: the padding mask was put on the queries"),
    "scale_sqrt_d_model": ("""def bert_layer(x, layer, n_heads, key_mask=None):
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    Qh = split_heads(x @ layer["W_Q"] + layer["b_Q"], n_heads)
    Kh = split_heads(x @ layer["W_K"] + layer["b_K"], n_heads)
    Vh = split_heads(x @ layer["W_V"] + layer["b_V"], n_heads)
    scores = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(d)
    if key_mask is not None:
        scores = np.where(np.asarray(key_mask, dtype=bool)[..., None, None, :], scores, -1e9)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    attention = merge_heads(w @ Vh) @ layer["W_O"] + layer["b_O"]
    h = layer_norm(x + attention, layer["ln1_gamma"], layer["ln1_beta"], eps=1e-12)
    ffn = gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"]
    return layer_norm(h + ffn, layer["ln2_gamma"], layer["ln2_beta"], eps=1e-12)
""", "Likely mistake: the scores were divided by sqrt(d_model)"),
}

CORRECT = {
    "per_head_loop_log_mask_warns": """def bert_layer(x, layer, n_heads, key_mask=None):
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    dh = d // n_heads
    Q = x @ layer["W_Q"] + layer["b_Q"]
    K = x @ layer["W_K"] + layer["b_K"]
    V = x @ layer["W_V"] + layer["b_V"]
    heads = []
    for c in range(n_heads):
        cols = slice(c * dh, (c + 1) * dh)
        s = np.einsum("...id,...jd->...ij", Q[..., cols], K[..., cols]) / math.sqrt(dh)
        if key_mask is not None:
            # log(1) = 0 for real keys, log(0) = -inf for padding (NumPy warns: divide by zero)
            s = s + np.log(np.asarray(key_mask, dtype=float))[..., None, :]
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        heads.append(w @ V[..., cols])
    attention = np.concatenate(heads, axis=-1) @ layer["W_O"] + layer["b_O"]

    def ln(v, gamma, beta):
        mu = v.mean(axis=-1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
        return gamma * (v - mu) / np.sqrt(var + 1e-12) + beta

    h = ln(x + attention, layer["ln1_gamma"], layer["ln1_beta"])
    ffn = gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"]
    return ln(h + ffn, layer["ln2_gamma"], layer["ln2_beta"])
""",
    "reshape_transpose_large_negative": """def bert_layer(x, layer, n_heads, key_mask=None):
    x = np.asarray(x, dtype=np.float64)
    *lead, n, d = x.shape
    dh = d // n_heads

    def heads(W, b):                                   # [..., N, d] -> [..., h, N, d_h]
        return np.swapaxes((x @ W + b).reshape(*lead, n, n_heads, dh), -3, -2)

    Qh, Kh, Vh = heads(layer["W_Q"], layer["b_Q"]), heads(layer["W_K"], layer["b_K"]), \\
        heads(layer["W_V"], layer["b_V"])
    scores = Qh @ np.swapaxes(Kh, -1, -2) / np.sqrt(dh)
    if key_mask is not None:
        real = np.asarray(key_mask, dtype=bool)[..., None, None, :]
        scores = np.where(real, scores, -1e30)
    scores = scores - scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    merged = np.swapaxes(w @ Vh, -3, -2).reshape(*lead, n, d)
    attention = merged @ layer["W_O"] + layer["b_O"]
    h = layer_norm(x + attention, layer["ln1_gamma"], layer["ln1_beta"], eps=1e-12)
    inner = h @ layer["W1"] + layer["b1"]
    ffn = gelu(inner) @ layer["W2"] + layer["b2"]
    return layer_norm(h + ffn, layer["ln2_gamma"], layer["ln2_beta"], eps=1e-12)
""",
    "one_sentence_at_a_time": """def bert_layer(x, layer, n_heads, key_mask=None):
    x = np.asarray(x, dtype=float)
    if x.ndim > 2:                                     # a batch: one sentence at a time
        masks = [None] * len(x) if key_mask is None else list(np.asarray(key_mask))
        return np.stack([bert_layer(xi, layer, n_heads, mi) for xi, mi in zip(x, masks)])
    real = np.ones(len(x), dtype=bool) if key_mask is None else np.asarray(key_mask, dtype=bool)
    out = []
    for c in np.split(np.arange(x.shape[-1]), n_heads):
        q = x @ layer["W_Q"][:, c] + layer["b_Q"][c]
        k = (x @ layer["W_K"][:, c] + layer["b_K"][c])[real]     # only the real keys
        v = (x @ layer["W_V"][:, c] + layer["b_V"][c])[real]
        s = q @ k.T / np.sqrt(len(c))
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out.append((p / p.sum(axis=1, keepdims=True)) @ v)
    attention = np.hstack(out) @ layer["W_O"] + layer["b_O"]
    h = layer_norm(x + attention, layer["ln1_gamma"], layer["ln1_beta"], 1e-12)
    return layer_norm(h + gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"],
                      layer["ln2_gamma"], layer["ln2_beta"], 1e-12)
""",
}
