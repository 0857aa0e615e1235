"""Answers to ``language_model_forward(token_ids, params, n_heads)`` (notebook 08)."""

_LM = """def language_model_forward(token_ids, params, n_heads):
    ids = np.asarray(token_ids, dtype=int)
    E, P = np.asarray(params["E"], dtype=float), np.asarray(params["P"], dtype=float)
    h = {embedding}
    for block in {blocks}:
        h = transformer_block({block_input}, block, n_heads, causal={causal})
    if {final_norm}:
        h = layer_norm(h, params["ln_f_gamma"], params["ln_f_beta"])
    return h @ E.T
"""

_DEFAULTS = dict(embedding="E[ids] + P[:len(ids)]", blocks='params["blocks"]', block_input="h",
                 causal="True", final_norm='"ln_f_gamma" in params')


def _lm(**changes):
    return _LM.format(**{**_DEFAULTS, **changes})


WRONG = {
    "positions_by_token_id": (_lm(embedding="E[ids] + P[ids]"), "indexed by token id"),
    "no_final_layer_norm": (_lm(final_norm="False"), "final layer norm"),
    "not_causal": (_lm(causal="False"), "not causal"),
    "blocks_not_chained": (_lm(embedding="E[ids] + P[:len(ids)]\n    x = h",
                               block_input="x"), "every block read the embeddings"),
    "first_block_only": (_lm(blocks='params["blocks"][:1]'), "only the first block"),
}

CORRECT = {
    "unrolled_helpers": _lm(),
    "students_functions": """def language_model_forward(token_ids, params, n_heads):
    x = embed(token_ids, params["E"], params["P"])
    for p in params["blocks"]:
        x = transformer_block(x, p, n_heads)
    if params.get("ln_f_gamma") is not None:
        x = layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"])
    return lm_head(x, params["E"])
""",
    "functools_reduce": """from functools import reduce

def language_model_forward(token_ids, params, n_heads):
    x = embed(token_ids, params["E"], params["P"])
    x = reduce(lambda h, p: transformer_block(h, p, n_heads, True), params["blocks"], x)
    if "ln_f_gamma" in params and "ln_f_beta" in params:
        x = layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"])
    return np.einsum("nd,vd->nv", x, params["E"])
""",
}
