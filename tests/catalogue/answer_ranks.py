"""Answers to ``answer_ranks(distributions, target_ids)`` (notebook 14)."""

WRONG = {
    "one_based": ("""def answer_ranks(distributions, target_ids):
    D = np.asarray(distributions, dtype=float)
    p = D[:, np.arange(len(target_ids)), target_ids]
    return (D > p[..., None]).sum(axis=-1) + 1
""", "0 for the top prediction"),
    "ties_counted": ("""def answer_ranks(distributions, target_ids):
    D = np.asarray(distributions, dtype=float)
    p = D[:, np.arange(len(target_ids)), target_ids]
    return (D >= p[..., None]).sum(axis=-1) - 1
""", "strictly more likely"),
    # argsort's position of the target: ties before it by index counted, which on the
    # tied case is what counting every tie gives: the feedback names that candidate
    "argsort_ties_by_index": ("""def answer_ranks(distributions, target_ids):
    D = np.asarray(distributions, dtype=float)
    order = np.argsort(-D, axis=-1, kind="stable")
    t = np.asarray(target_ids)
    return np.argmax(order == t[None, :, None], axis=-1)
""", "exactly as likely as the target"),
}

CORRECT = {
    "broadcast": """def answer_ranks(distributions, target_ids):
    D = np.asarray(distributions, dtype=float)
    t = np.asarray(target_ids, dtype=int)
    p = np.take_along_axis(D, np.broadcast_to(t[None, :, None], D.shape[:2] + (1,)), axis=-1)
    return (D > p).sum(axis=-1)
""",
    "loops": """def answer_ranks(distributions, target_ids):
    D = np.asarray(distributions, dtype=float)
    out = np.zeros(D.shape[:2], dtype=int)
    for l in range(D.shape[0]):
        for n, t in enumerate(target_ids):
            out[l, n] = sum(1 for q in D[l, n] if q > D[l, n, t])
    return out
""",
}
