"""Answers to ``cross_entropy_backward(logits, targets)`` (notebook 12)."""

WRONG = {
    "no_mean": ("""def cross_entropy_backward(logits, targets):
    z = np.asarray(logits, dtype=float)
    flat = z.reshape(-1, z.shape[-1])
    t = np.asarray(targets).reshape(-1)
    e = np.exp(flat - flat.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    p[np.arange(len(t)), t] -= 1
    return p.reshape(z.shape)
""", "1/N of the mean is missing"),
    "no_onehot": ("""def cross_entropy_backward(logits, targets):
    z = np.asarray(logits, dtype=float)
    flat = z.reshape(-1, z.shape[-1])
    e = np.exp(flat - flat.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return (p / len(flat)).reshape(z.shape)
""", "one-hot was not subtracted"),
    "mean_over_batch_only": ("""def cross_entropy_backward(logits, targets):
    z = np.asarray(logits, dtype=float)
    flat = z.reshape(-1, z.shape[-1])
    t = np.asarray(targets).reshape(-1)
    e = np.exp(flat - flat.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    p[np.arange(len(t)), t] -= 1
    return p.reshape(z.shape) / z.shape[0]
""", "batch size B only"),
    "unstable_softmax": ("""def cross_entropy_backward(logits, targets):
    z = np.asarray(logits, dtype=float)
    flat = z.reshape(-1, z.shape[-1])
    t = np.asarray(targets).reshape(-1)
    e = np.exp(flat)
    p = e / e.sum(axis=-1, keepdims=True)
    p[np.arange(len(t)), t] -= 1
    return (p / len(t)).reshape(z.shape)
""", "subtract each row's maximum"),
}

CORRECT = {
    "eye_onehot": """def cross_entropy_backward(logits, targets):
    z = np.asarray(logits, dtype=float)
    V = z.shape[-1]
    s = z - z.max(axis=-1, keepdims=True)
    p = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)
    onehot = np.eye(V)[np.asarray(targets)]
    n = p.size // V
    return (p - onehot) / n
""",
    "log_softmax_loops": """def cross_entropy_backward(logits, targets):
    z = np.asarray(logits, dtype=float)
    flat = z.reshape(-1, z.shape[-1]).copy()
    t = np.asarray(targets).reshape(-1)
    out = np.empty_like(flat)
    for i, row in enumerate(flat):
        m = row.max()
        lse = m + np.log(np.sum(np.exp(row - m)))
        out[i] = np.exp(row - lse)
        out[i, t[i]] -= 1.0
    return (out / len(t)).reshape(z.shape)
""",
}
