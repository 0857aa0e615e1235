"""Answers to ``cross_entropy(logits, targets)`` (notebook 08)."""

WRONG = {
    "sum_not_mean": ("""def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    m = z.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))[:, 0]
    return float(np.sum(lse - z[np.arange(len(targets)), targets]))
""", "summed over the rows"),
    "naive_log_softmax": ("""def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    return float(-np.mean(np.log(p[np.arange(len(targets)), targets])))
""", "without the max shift"),
    "log_of_stable_softmax": ("""def cross_entropy(logits, targets):
    p = softmax(np.asarray(logits, dtype=float), axis=-1)
    return float(-np.mean(np.log(p[np.arange(len(targets)), targets])))
""", "log of a (stable) softmax"),
    "index_matrix": ("""def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    m = z.max(axis=-1, keepdims=True)
    logp = z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    return float(-np.mean(logp[:, targets]))
""", "pick one entry per row"),
    "shifted_targets": ("""def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)[:-1]
    t = np.asarray(targets)[1:]
    m = z.max(axis=-1, keepdims=True)
    logp = z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    return float(-np.mean(logp[np.arange(len(t)), t]))
""", "shifted the targets"),
    "wrong_sign": ("""def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    m = z.max(axis=-1, keepdims=True)
    logp = z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    return float(np.mean(logp[np.arange(len(targets)), targets]))
""", "the sign is wrong"),
}

CORRECT = {
    "eps_in_log": """def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    m = z.max(axis=-1, keepdims=True)
    log_sum_exp = m[:, 0] + np.log(np.exp(z - m).sum(axis=-1) + 1e-7)
    t = np.asarray(targets, dtype=int)
    return float((log_sum_exp - z[np.arange(len(t)), t]).mean())
""",
    "log_p_plus_eps": """def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    t = np.asarray(targets, dtype=int)
    m = z.max(axis=-1, keepdims=True)
    log_p = z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    p = np.exp(log_p[np.arange(len(t)), t])
    return float(np.mean(np.where(p > 1e-6, -np.log(p + 1e-12), -log_p[np.arange(len(t)), t])))
""",
    "loop_logsumexp": """import math

def cross_entropy(logits, targets):
    total = 0.0
    for row, t in zip(np.asarray(logits, dtype=float), targets):
        m = max(row)
        lse = m + math.log(sum(math.exp(v - m) for v in row))
        total += lse - row[t]
    return total / len(targets)
""",
    "take_along_axis": """def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    t = np.asarray(targets, dtype=int)[:, None]
    return -np.take_along_axis(logp, t, axis=1).mean()
""",
    "logaddexp_reduce": """def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    lse = np.logaddexp.reduce(z, axis=-1)
    return float(np.mean(lse - z[np.arange(z.shape[0]), np.asarray(targets)]))
""",
}
