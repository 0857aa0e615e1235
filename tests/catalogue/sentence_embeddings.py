"""Answers to ``sentence_embeddings(ids, key_mask, params)`` (notebook 09)."""

WRONG = {
    "not_normalised": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][:ids.shape[-1]] + params["T"][0]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    return mean_pool(h, key_mask)
""", "the embeddings are not unit vectors"),
    "cls_token": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][:ids.shape[-1]] + params["T"][0]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    s = h[:, 0]
    return s / np.linalg.norm(s, axis=-1, keepdims=True)
""", "this is the [CLS] token's vector"),
    "mean_includes_padding": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][:ids.shape[-1]] + params["T"][0]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    s = h.mean(axis=1)
    return s / np.linalg.norm(s, axis=-1, keepdims=True)
""", "the mean includes the padding positions"),
    "embedding_layer_norm_default_eps": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][:ids.shape[-1]] + params["T"][0]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"])
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    s = mean_pool(h, key_mask)
    return s / np.linalg.norm(s, axis=-1, keepdims=True)
""", "Likely mistake: the embeddings' layer norm used the default eps=1e-5"),
    "no_segment_embedding": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][:ids.shape[-1]]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    s = mean_pool(h, key_mask)
    return s / np.linalg.norm(s, axis=-1, keepdims=True)
""", "Likely mistake: the segment embedding T[0] is missing"),
    "mask_not_passed_to_layers": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][:ids.shape[-1]] + params["T"][0]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"])
    s = mean_pool(h, key_mask)
    return s / np.linalg.norm(s, axis=-1, keepdims=True)
""", "Likely mistake: the layers were run without key_mask"),
    "positions_by_token_id": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][ids] + params["T"][0]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    s = mean_pool(h, key_mask)
    return s / np.linalg.norm(s, axis=-1, keepdims=True)
""", "Likely mistake: the positions were looked up by token id"),
    "normalised_over_batch_axis": ("""def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    x = params["E"][ids] + params["P"][:ids.shape[-1]] + params["T"][0]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    s = mean_pool(h, key_mask)
    return s / np.linalg.norm(s, axis=0, keepdims=True)
""", "Likely mistake: each embedding was divided by a length taken over the batch"),
}

CORRECT = {
    "real_tokens_only_per_sentence": """def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    key_mask = np.asarray(key_mask, dtype=bool)
    n = ids.shape[1]
    out = []
    for row, real in zip(ids, key_mask):
        x = params["E"][row] + params["P"][:n] + params["T"][0]      # [N, d]
        x = x[real]                       # keep the real tokens (with their positions)
        h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
        for layer in params["layers"]:
            h = bert_layer(h, layer, params["n_heads"])                # nothing to mask
        s = h.mean(axis=0)
        out.append(s / np.sqrt(np.sum(s * s)))
    return np.array(out)
""",
    "one_hot_einsum": """def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids, dtype=np.int64)
    B, N = ids.shape
    one_hot = np.eye(params["E"].shape[0])[ids]                       # [B, N, V]
    x = np.einsum("bnv,vd->bnd", one_hot, params["E"]) + params["P"][np.arange(N)] \\
        + params["T"][np.zeros(N, dtype=int)]
    mu = x.mean(axis=-1, keepdims=True)
    sd = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-12)
    h = params["ln_e_gamma"] * (x - mu) / sd + params["ln_e_beta"]
    for layer in params["layers"]:
        h = bert_layer(h, layer, params["n_heads"], key_mask)
    m = np.asarray(key_mask, dtype=float)
    s = np.einsum("bnd,bn->bd", h, m) / m.sum(axis=1, keepdims=True)
    return s / np.sqrt(np.einsum("bd,bd->b", s, s))[:, None]
""",
    "take_and_helpers": """def sentence_embeddings(ids, key_mask, params):
    ids = np.asarray(ids)
    n_tokens = ids.shape[-1]
    x = np.take(params["E"], ids, axis=0)
    x = x + params["P"][None, :n_tokens, :] + params["T"][0][None, None, :]
    h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], 1e-12)
    layers = list(params["layers"])
    while layers:
        h = bert_layer(h, layers.pop(0), params["n_heads"], key_mask=key_mask)
    pooled = mean_pool(h, key_mask)
    lengths = np.linalg.norm(pooled, ord=2, axis=1)
    return pooled / lengths.reshape(-1, 1)
""",
}
