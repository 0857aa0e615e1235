"""Answers to ``loss_and_grads(params, token_ids, targets, n_heads)`` (notebook 12)."""

_FORWARD = """def loss_and_grads(params, token_ids, targets, n_heads):
    E, P = np.asarray(params["E"], dtype=float), np.asarray(params["P"], dtype=float)
    ids, tg = np.asarray(token_ids), np.asarray(targets)
    V, d = E.shape
    xs = [E[ids] + P[: ids.shape[-1]]]
    for block in params["blocks"]:
        xs.append(transformer_block_with_cache(xs[-1], block, n_heads)[0])
    h = xs[-1]
    final = "ln_f_gamma" in params
    if final:
        mu = h.mean(axis=-1, keepdims=True)
        hf = params["ln_f_gamma"] * (h - mu) / np.sqrt(h.var(axis=-1, keepdims=True) + 1e-5) + params["ln_f_beta"]
    else:
        hf = h
    logits = hf @ E.T
    flat, t = logits.reshape(-1, V), tg.reshape(-1)
    m = flat.max(axis=-1)
    loss = float(np.mean(m + np.log(np.exp(flat - m[:, None]).sum(-1)) - flat[np.arange(len(t)), t]))
    dlogits = cross_entropy_backward(logits, tg)
    grads = {}
    dE_head = dlogits.reshape(-1, V).T @ hf.reshape(-1, d)
    dh = dlogits @ E
    if final:
        dh, grads["ln_f_gamma"], grads["ln_f_beta"] = layer_norm_backward(h, params["ln_f_gamma"], dh)
    block_grads = []
    for x, block in reversed(list(zip(xs[:-1], params["blocks"]))):
        dh, g = transformer_block_backward(x, block, n_heads, dh)
        block_grads.insert(0, g)
    dE_embed, dP = embed_backward(ids, dh, V, P.shape[0])
"""

WRONG = {
    "tied_head_only": (_FORWARD + """    grads.update(E=dE_head, P=dP, blocks=block_grads)
    return loss, grads
""", "also the embedding"),
    "tied_embedding_only": (_FORWARD + """    grads.update(E=dE_embed, P=dP, blocks=block_grads)
    return loss, grads
""", "also the LM head"),
    "blocks_not_reversed": (_FORWARD.replace(
        "    block_grads = []\n    for x, block in reversed(list(zip(xs[:-1], params[\"blocks\"]))):\n"
        "        dh, g = transformer_block_backward(x, block, n_heads, dh)\n"
        "        block_grads.insert(0, g)\n",
        "    block_grads = []\n    for x, block in zip(xs[:-1], params[\"blocks\"]):\n"
        "        dh, g = transformer_block_backward(x, block, n_heads, dh)\n"
        "        block_grads.append(g)\n") + """    grads.update(E=dE_head + dE_embed, P=dP, blocks=block_grads)
    return loss, grads
""", "went through the blocks first to last"),
    "loss_summed": (_FORWARD + """    grads.update(E=dE_head + dE_embed, P=dP, blocks=block_grads)
    return loss * ids.size, grads
""", "it is the mean"),
}

CORRECT = {
    "list_of_inputs_then_reverse": _FORWARD.replace(
        "    block_grads = []\n    for x, block in reversed(list(zip(xs[:-1], params[\"blocks\"]))):\n"
        "        dh, g = transformer_block_backward(x, block, n_heads, dh)\n"
        "        block_grads.insert(0, g)\n",
        "    block_grads = [None] * len(params[\"blocks\"])\n"
        "    for i in range(len(params[\"blocks\"]) - 1, -1, -1):\n"
        "        dh, block_grads[i] = transformer_block_backward(xs[i], params[\"blocks\"][i], n_heads, dh)\n")
    + """    grads["E"] = dE_embed + dE_head
    grads["P"] = dP
    grads["blocks"] = block_grads
    return loss, grads
""",
    "log_softmax_loss": _FORWARD.replace(
        "    loss = float(np.mean(m + np.log(np.exp(flat - m[:, None]).sum(-1)) - flat[np.arange(len(t)), t]))\n",
        "    shifted = flat - m[:, None]\n"
        "    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))\n"
        "    loss = -float(np.sum(logp[np.arange(len(t)), t])) / len(t)\n")
    + """    out = dict(grads)
    out.update({"E": dE_head + dE_embed, "P": dP, "blocks": block_grads})
    return loss, out
""",
}

# The names the notebook imports in its first cell, so that each answer also runs alone.
_IMPORTS = "from helpers.training import flatten, transformer_block_with_cache, tree_map, unflatten\n"
WRONG = {k: (_IMPORTS + src, words) for k, (src, words) in WRONG.items()}
CORRECT = {k: _IMPORTS + src for k, src in CORRECT.items()}
