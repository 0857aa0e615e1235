"""Answers to ``top_p_distribution(logits, p)`` (notebook 13)."""

_TOP_P = """def top_p_distribution(logits, p):
    probs = softmax(np.asarray(logits, dtype=float))
    order = {order}
    keep = order[{keep}]
    out = np.zeros_like(probs)
    out[keep] = {value}
    return out
"""

_OK = dict(order='np.argsort(-probs, kind="stable")',
           keep="np.cumsum(probs[order]) - probs[order] < p",
           value="probs[keep] / probs[keep].sum()")


def _top_p(**changes):
    return _TOP_P.format(**{**_OK, **changes})


WRONG = {
    "crossing_token_dropped": (_top_p(keep="np.cumsum(probs[order]) <= p"),
                               "mass BEFORE them is below p"),
    "not_renormalised": (_top_p(value="probs[keep]"), "not renormalised"),
    "least_likely_first": (_top_p(order='np.argsort(probs, kind="stable")'),
                           "LEAST likely up"),
    "ties_reversed": (_top_p(order="np.argsort(probs)[::-1]"), "reverses ties"),
    "no_max_shift": ("""def top_p_distribution(logits, p):
    e = np.exp(np.asarray(logits, dtype=float))
    probs = e / e.sum()
    order = np.argsort(-probs, kind="stable")
    keep = order[np.cumsum(probs[order]) - probs[order] < p]
    out = np.zeros_like(probs)
    out[keep] = probs[keep] / probs[keep].sum()
    return out
""", "subtract the largest logit"),
}

CORRECT = {
    "cumsum_mask": _top_p(),
    "loop": """def top_p_distribution(logits, p):
    z = [float(u) for u in logits]
    top = max(z)
    w = [np.exp(u - top) for u in z]
    total = sum(w)
    probs = [x / total for x in w]
    order = sorted(range(len(z)), key=lambda i: (-probs[i], i))
    kept, mass = [], 0.0
    for i in order:
        if mass >= p:
            break
        kept.append(i)
        mass += probs[i]
    out = np.zeros(len(z))
    for i in kept:
        out[i] = probs[i] / mass
    return out
""",
    "searchsorted": """def top_p_distribution(logits, p):
    z = np.asarray(logits, dtype=np.float64)
    probs = np.exp(z - z.max())
    probs /= probs.sum()
    order = np.lexsort((np.arange(len(z)), -probs))
    before = np.concatenate([[0.0], np.cumsum(probs[order])[:-1]])
    n_keep = max(1, int(np.searchsorted(before, p, side="left")))
    keep = order[:n_keep]
    out = np.zeros_like(probs)
    out[keep] = probs[keep] / probs[keep].sum()
    return out
""",
}
