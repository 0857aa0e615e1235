"""Answers to ``top_k_distribution(logits, k, temperature=1.0)`` (notebook 08)."""

WRONG = {
    "not_renormalised": ("""def top_k_distribution(logits, k, temperature=1.0):
    p = softmax(np.asarray(logits, dtype=float) / temperature)
    keep = np.argsort(p)[-k:]
    out = np.zeros_like(p)
    out[keep] = p[keep]
    return out
""", "top 2 of [2, 1, 0, -1]"),
    "smallest_k": ("""def top_k_distribution(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=float)
    keep = np.argsort(logits)[:k]
    kept = np.full_like(logits, -np.inf)
    kept[keep] = logits[keep]
    return softmax((kept - kept.max()) / temperature)
""", "top 2 of [2, 1, 0, -1]"),
    "dropped_set_to_zero": ("""def top_k_distribution(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=float)
    keep = np.argsort(logits)[-k:]
    kept = np.zeros_like(logits)
    kept[keep] = logits[keep]
    return softmax(kept / temperature)
""", "top 2 of [2, 1, 0, -1]"),
    "threshold_off_by_one": ("""def top_k_distribution(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=float)
    kth = np.sort(logits)[-k]
    kept = np.where(logits > kth, logits, -np.inf)
    return softmax(kept / temperature)
""", "top 2 of [2, 1, 0, -1]"),
    "temperature_ignored": ("""def top_k_distribution(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=float)
    keep = np.argsort(logits)[-k:]
    kept = np.full_like(logits, -np.inf)
    kept[keep] = logits[keep]
    return softmax(kept - kept.max())
""", "k = V at temperature 2"),
    "temperature_multiplies": ("""def top_k_distribution(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=float)
    keep = np.argsort(logits)[-k:]
    kept = np.full_like(logits, -np.inf)
    kept[keep] = logits[keep]
    return softmax((kept - kept.max()) * temperature)
""", "k = V at temperature 2"),
    "no_max_shift": ("""def top_k_distribution(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=float)
    keep = np.argsort(logits)[-k:]
    e = np.zeros_like(logits)
    e[keep] = np.exp(logits[keep] / temperature)
    return e / e.sum()
""", "large logits"),
}

CORRECT = {
    "loop_over_sorted": """def top_k_distribution(logits, k, temperature=1.0):
    logits = [float(v) for v in logits]
    order = sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)[:k]
    top = max(logits)
    weights = {i: np.exp((logits[i] - top) / temperature) for i in order}
    total = sum(weights.values())
    out = np.zeros(len(logits))
    for i, w in weights.items():
        out[i] = w / total
    return out
""",
    "argpartition_own_softmax": """def top_k_distribution(logits, k, temperature=1.0):
    z = np.asarray(logits, dtype=np.float64) / temperature
    keep = np.argpartition(z, len(z) - k)[len(z) - k:]
    out = np.zeros_like(z)
    e = np.exp(z[keep] - z[keep].max())
    out[keep] = e / e.sum()
    return out
""",
    "log_of_mask_warns": """def top_k_distribution(logits, k, temperature=1.0):
    z = np.asarray(logits, dtype=float)
    keep = np.zeros(z.shape)
    keep[np.argsort(z)[::-1][:k]] = 1.0
    z = z / temperature + np.log(keep)        # log(0) = -inf, with a RuntimeWarning
    e = np.exp(z - z.max())
    return e / e.sum()
""",
}
