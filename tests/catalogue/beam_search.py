"""Answers to ``beam_search(token_ids, params, n_heads, n_new, beam_width, eos_id=-1,
alpha=1.0)`` (notebook 13)."""

_BEAM = """def beam_search(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    prompt = [int(t) for t in token_ids]
    n_ctx = len(params["P"])
    beams, done = [((), 0.0)], []
    for _ in range(n_new):
        children = []
        for new, score in beams:
            u = language_model_forward(np.array(prompt + list(new))[-n_ctx:], params, n_heads)[-1]
            logp = u - u.max() - np.log(np.exp(u - u.max()).sum())
            children += [(new + (v,), score + {gain}) for v in range(len(logp))]
        children = sorted(children, key=lambda b: -b[1])[:{width}]
        beams = [b for b in children if {alive}]
        done += [b for b in children if b[0][-1] == eos_id]
        if not beams:
            break
    best = max(done + beams, key=lambda b: {rank})
    return np.array(prompt + list(best[0]))
"""

_OK = dict(gain="logp[v]", width="beam_width", alive="b[0][-1] != eos_id",
           rank="b[1] / len(b[0]) ** alpha")


def _beam(**changes):
    return _BEAM.format(**{**_OK, **changes})


WRONG = {
    "greedy": (_beam(width="1"), "only one beam was kept"),
    "probabilities_added": (_beam(gain="np.exp(logp[v])"), "SUM OF LOG-probabilities"),
    "no_length_normalisation": (_beam(rank="b[1]"), "length ** alpha"),
    "grew_past_eos": ("""def beam_search(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    prompt = [int(t) for t in token_ids]
    n_ctx = len(params["P"])
    beams = [((), 0.0)]
    for _ in range(n_new):
        children = []
        for new, score in beams:
            u = language_model_forward(np.array(prompt + list(new))[-n_ctx:], params, n_heads)[-1]
            logp = u - u.max() - np.log(np.exp(u - u.max()).sum())
            children += [(new + (v,), score + logp[v]) for v in range(len(logp))]
        beams = sorted(children, key=lambda b: -b[1])[:beam_width]
    best = max(beams, key=lambda b: b[1] / len(b[0]) ** alpha)
    return np.array(prompt + list(best[0]))
""", "went on growing after eos_id"),
}

CORRECT = {
    "tuples_sorted": _beam(),
    "arrays_and_argsort": """def beam_search(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    prompt = list(np.asarray(token_ids, dtype=int))
    n_ctx = params["P"].shape[0]
    live = [([], 0.0)]
    finished = []
    for step in range(n_new):
        seqs, scores = [], []
        for new, score in live:
            logits = language_model_forward(np.array(prompt + new)[-n_ctx:], params, n_heads)[-1]
            logp = np.log(softmax(logits))
            for v in range(len(logp)):
                seqs.append(new + [v])
                scores.append(score + logp[v])
        order = np.argsort(-np.array(scores), kind="stable")[:beam_width]
        live = []
        for i in order:
            (finished if seqs[i][-1] == eos_id else live).append((seqs[i], scores[i]))
        if not live:
            break
    candidates = finished + live
    norm = [s / len(seq) ** alpha for seq, s in candidates]
    return np.array(prompt + candidates[int(np.argmax(norm))][0])
""",
}
