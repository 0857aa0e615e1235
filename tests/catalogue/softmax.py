"""Answers to ``softmax(z, axis=-1)`` (notebook 02)."""

WRONG = {
    "mean_shift": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.mean(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""", "stable"),
    "no_max_shift": ("""def softmax(z, axis=-1):
    e = np.exp(np.asarray(z, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)
""", "max shift"),
    "wrong_axis": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
""", "wrong axis"),
    "axis_ignored": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
""", "axis argument is ignored"),
    "global_max": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum(axis=axis, keepdims=True)
""", "maximum of the whole array"),
    "no_keepdims": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)
""", "keepdims"),
    "whole_array": ("""def softmax(z, axis=-1):
    e = np.exp(z - np.max(z))
    return e / np.sum(e)
""", "whole array"),
    "log_softmax": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))
""", "log-probabilities"),
    "unknown_halved_scores": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float) / 2
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""", "first difference"),
    "float32": ("""def softmax(z, axis=-1):
    z = np.asarray(z, dtype=np.float32)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""", "float32: 1e300 overflows"),
    "in_place": ("""def softmax(z, axis=-1):
    z -= z.max(axis=axis, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=axis, keepdims=True)
    return z
""", "in place"),
}

CORRECT = {
    "loops_over_rows": """def softmax(z, axis=-1):
    z = np.moveaxis(np.asarray(z, dtype=float), axis, -1)
    out = np.empty_like(z)
    for idx in np.ndindex(z.shape[:-1]):
        row = z[idx] - max(z[idx])
        e = [np.exp(v) for v in row]
        out[idx] = np.array(e) / sum(e)
    return np.moveaxis(out, -1, axis)
""",
    "logsumexp_form": """def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    m = np.max(z, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))
    return np.exp(z - lse)
""",
    "naive_then_shift_warns": """def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z)                      # overflows on large inputs (RuntimeWarning)...
    p = e / e.sum(axis=axis, keepdims=True)
    if not np.all(np.isfinite(p)) or np.any(e.sum(axis=axis) == 0):
        e = np.exp(z - z.max(axis=axis, keepdims=True))   # ...so shift and retry
        p = e / e.sum(axis=axis, keepdims=True)
    return p
""",
    "shift_by_min_of_max": """def softmax(z, axis=-1):
    z = np.asarray(z, dtype=np.float64)
    z = np.swapaxes(z, axis, -1)
    e = np.exp(z - z.max(-1)[..., None])
    return np.swapaxes(e / e.sum(-1)[..., None], axis, -1)
""",
}
