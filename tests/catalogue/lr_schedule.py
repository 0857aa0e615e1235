"""Answers to ``lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1)`` (notebook 12)."""

WRONG = {
    "warmup_from_zero": ("""def lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1):
    if step < warmup:
        return peak_lr * step / warmup
    q = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak_lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * q)))
""", "warm-up starts at 0"),
    "cosine_to_zero": ("""def lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1):
    if step < warmup:
        return peak_lr * (step + 1) / warmup
    q = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak_lr * 0.5 * (1 + math.cos(math.pi * q))
""", "decays to 0"),
    "progress_not_shifted": ("""def lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1):
    if step < warmup:
        return peak_lr * (step + 1) / warmup
    q = min(1.0, step / steps)
    return peak_lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * q)))
""", "ignores the warm-up"),
    "warmup_over_warmup_plus_1": ("""def lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1):
    if step < warmup:
        return peak_lr * (step + 1) / (warmup + 1)
    q = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak_lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * q)))
""", "never reaches the peak"),
    "progress_not_clamped": ("""def lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1):
    if step < warmup:
        return peak_lr * (step + 1) / warmup
    q = (step - warmup) / max(1, steps - warmup)
    return peak_lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * q)))
""", "climbed back up"),
}

CORRECT = {
    "numpy_clip": """def lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1):
    warm = peak_lr * (step + 1) / warmup
    q = np.clip((step - warmup) / max(1, steps - warmup), 0.0, 1.0)
    low = min_ratio * peak_lr
    cos = low + (peak_lr - low) * (np.cos(np.pi * q) + 1) / 2
    return float(warm if step < warmup else cos)
""",
    "interpolation": """def lr_schedule(step, steps, peak_lr, warmup, min_ratio=0.1):
    if step < warmup:
        return (step + 1) * peak_lr / warmup
    frac = (step - warmup) / max(1, steps - warmup)
    frac = 1.0 if frac > 1 else frac
    w = (1 + math.cos(frac * math.pi)) / 2
    return w * peak_lr + (1 - w) * min_ratio * peak_lr
""",
}
