"""Answers to ``transformer_block_backward(x, params, n_heads, d_out, causal=True)``
(notebook 12)."""

_START = """def transformer_block_backward(x, params, n_heads, d_out, causal=True):
    p = params
    x = np.asarray(x, dtype=float)
    _, c = transformer_block_with_cache(x, p, n_heads, causal)
    dh = np.asarray(d_out, dtype=float)
    g = {}
    da, g["W2"], g["b2"] = linear_backward(c["a"], p["W2"], dh)
    dz = da * (c["z"] > 0)
    dt4, g["W1"], g["b1"] = linear_backward(c["t4"], p["W1"], dz)
    dt3, g["ln2_gamma"], g["ln2_beta"] = layer_norm_backward(c["t3"], p["ln2_gamma"], dt4)
"""
_ATTENTION = """    dheads, g["W_O"], _ = linear_backward(c["heads"], p["W_O"], dt3)
    split = np.swapaxes(dheads.reshape(*dheads.shape[:-1], n_heads, -1), -2, -3)
    dQ, dK, dV = attention_backward(c["Q"], c["K"], c["V"], c["mask"], split)
    dt1 = np.zeros_like(x)
    for name, dH in (("W_Q", dQ), ("W_K", dK), ("W_V", dV)):
        m = np.swapaxes(dH, -2, -3)
        part, g[name], _ = linear_backward(c["t1"], p[name], m.reshape(*m.shape[:-2], -1))
        dt1 = dt1 + part
    dx, g["ln1_gamma"], g["ln1_beta"] = layer_norm_backward(x, p["ln1_gamma"], dt1)
"""

WRONG = {
    "no_residual_ffn": (_START + _ATTENTION + """    return dx + dt3, g
""", "residual around the feed-forward is missing"),
    "no_residual_attention": (_START + """    dt3 = dt3 + dh
""" + _ATTENTION + """    return dx, g
""", "residual around the attention is missing"),
    "no_relu_mask": (_START.replace('dz = da * (c["z"] > 0)', 'dz = da') + """    dt3 = dt3 + dh
""" + _ATTENTION + """    return dx + dt3, g
""", "ReLU was not applied backwards"),
    "dt1_overwritten": (_START + """    dt3 = dt3 + dh
""" + _ATTENTION.replace("dt1 = dt1 + part", "dt1 = part") + """    return dx + dt3, g
""", "dt1 was overwritten"),
}

CORRECT = {
    "per_head_loop": _START + """    dt3 = dt3 + dh
    dheads, g["W_O"], _ = linear_backward(c["heads"], p["W_O"], dt3)
    d = x.shape[-1]
    d_h = d // n_heads
    dQm, dKm, dVm = (np.zeros(dheads.shape) for _ in range(3))
    for hd in range(n_heads):
        cols = slice(hd * d_h, (hd + 1) * d_h)
        q, k, v = (c[n][..., hd, :, :] for n in ("Q", "K", "V"))
        dq, dk, dv = attention_backward(q, k, v, c["mask"], dheads[..., cols])
        dQm[..., cols], dKm[..., cols], dVm[..., cols] = dq, dk, dv
    dt1 = 0
    for name, dm in (("W_Q", dQm), ("W_K", dKm), ("W_V", dVm)):
        part, g[name], _ = linear_backward(c["t1"], p[name], dm)
        dt1 = dt1 + part
    dx, g["ln1_gamma"], g["ln1_beta"] = layer_norm_backward(x, p["ln1_gamma"], dt1)
    return dx + dt3, g
""",
    "own_matmuls": """def transformer_block_backward(x, params, n_heads, d_out, causal=True):
    p = params
    x = np.asarray(x, dtype=float)
    _, c = transformer_block_with_cache(x, p, n_heads, causal)
    dh = np.asarray(d_out, dtype=float)
    d, d_ff = x.shape[-1], p["W1"].shape[1]
    rows = lambda a: a.reshape(-1, a.shape[-1])
    g = {"W2": rows(c["a"]).T @ rows(dh), "b2": rows(dh).sum(0)}
    dz = (dh @ p["W2"].T) * (c["z"] > 0)
    g["W1"], g["b1"] = rows(c["t4"]).T @ rows(dz), rows(dz).sum(0)
    dt3, g["ln2_gamma"], g["ln2_beta"] = layer_norm_backward(c["t3"], p["ln2_gamma"], dz @ p["W1"].T)
    dt3 += dh
    g["W_O"] = rows(c["heads"]).T @ rows(dt3)
    dheads = dt3 @ p["W_O"].T
    split = np.swapaxes(dheads.reshape(*dheads.shape[:-1], n_heads, -1), -2, -3)
    grads_h = attention_backward(c["Q"], c["K"], c["V"], c["mask"], split)
    dt1 = np.zeros_like(x)
    for name, dH in zip(("W_Q", "W_K", "W_V"), grads_h):
        m = np.swapaxes(dH, -2, -3)
        m = m.reshape(*m.shape[:-2], d)
        g[name] = rows(c["t1"]).T @ rows(m)
        dt1 += m @ p[name].T
    dx, g["ln1_gamma"], g["ln1_beta"] = layer_norm_backward(x, p["ln1_gamma"], dt1)
    return dx + dt3, g
""",
}

# The names the notebook imports in its first cell, so that each answer also runs alone.
_IMPORTS = "from helpers.training import flatten, transformer_block_with_cache, tree_map, unflatten\n"
WRONG = {k: (_IMPORTS + src, words) for k, (src, words) in WRONG.items()}
CORRECT = {k: _IMPORTS + src for k, src in CORRECT.items()}
