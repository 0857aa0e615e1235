"""Answers to ``generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None)`` (08)."""

_GEN = """def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    ids = [int(t) for t in token_ids]
    n_ctx = len(params["P"])
    for _ in range(n_new):
        context = {context}
        logits = language_model_forward(context, params, n_heads){row}
        if temperature == 0:
            nxt = int(np.argmax(logits))
        else:
            p = softmax({scaled})
            nxt = int(rng.choice(len(p), p=p))
        ids.append(nxt)
    return np.array({result})
"""

_OK = dict(context="ids[-n_ctx:]", row="[-1]", scaled="logits / temperature", result="ids")


def _gen(**changes):
    return _GEN.format(**{**_OK, **changes})


WRONG = {
    "context_never_extended": (_gen(context="list(token_ids)[-n_ctx:]"), "fed the prompt again"),
    "not_cropped": (_gen(context="ids"), "raised ValueError"),
    "first_position_logits": (_gen(row="[0]"), "first position"),
    "only_new_tokens": (_gen(result="ids[len(token_ids):]"), "only the new ids"),
    "temperature_multiplied": (_gen(scaled="logits * temperature"),
                               "multiplied by the temperature"),
    "argmax_flat": (_gen(row=""), "took np.argmax of the whole [N, V] logits matrix"),
    "one_token_short": ("""def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    ids = list(token_ids)
    n_ctx = len(params["P"])
    for _ in range(n_new - 1):
        logits = language_model_forward(ids[-n_ctx:], params, n_heads)[-1]
        if temperature == 0:
            ids.append(int(np.argmax(logits)))
        else:
            p = softmax(logits / temperature)
            ids.append(int(rng.choice(len(p), p=p)))
    return np.array(ids)
""", "n_new - 1"),
    "uniform_sampling": (_gen(scaled="np.zeros_like(logits)"), "uniformly"),
    # NumPy's global generator: the same seed gives other ids on the next call
    "rng_ignored": (_GEN.format(**{**_OK}).replace("rng.choice(len(p), p=p)",
                                                   "np.random.choice(len(p), p=p)"),
                    "rng argument was not used"),
    # a generator of its own, always seeded the same: another seed gives the same ids
    "rng_reseeded": (_GEN.format(**{**_OK}).replace(
        "rng.choice(len(p), p=p)", "np.random.default_rng(0).choice(len(p), p=p)"),
        "differently seeded generators gave the same ids"),
}

CORRECT = {
    "array_append": _gen(),
    "gumbel_max": """def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    ids = np.asarray(token_ids, dtype=int)
    n_ctx = params["P"].shape[0]
    for _ in range(n_new):
        logits = language_model_forward(ids[max(0, len(ids) - n_ctx):], params, n_heads)[-1]
        if temperature == 0:
            nxt = np.argmax(logits)
        else:
            nxt = np.argmax(logits / temperature + rng.gumbel(size=logits.shape))
        ids = np.concatenate([ids, [nxt]])
    return ids
""",
    "inverse_cdf_with_log_warning": """def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    out = list(token_ids)
    n_ctx = len(params["P"])
    for step in range(n_new):
        logits = language_model_forward(np.array(out[-n_ctx:]), params, n_heads)[-1]
        if temperature > 0:
            p = softmax(logits / temperature)
            np.log(p - p)              # a stray debugging line: warns, changes nothing
            nxt = int(np.searchsorted(np.cumsum(p), rng.random() * p.sum()))
            nxt = min(nxt, len(p) - 1)
        else:
            nxt = int(logits.argmax())
        out.append(nxt)
    return np.array(out, dtype=int)
""",
}
