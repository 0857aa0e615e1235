"""Answers to ``clip_by_global_norm(grads, max_norm)`` (notebook 12)."""

WRONG = {
    "per_array": ("""def clip_by_global_norm(grads, max_norm):
    norm = float(np.sqrt(sum(np.sum(g ** 2) for g in flatten(grads).values())))
    def clip(g):
        n = np.sqrt(np.sum(g ** 2))
        return g * min(1.0, max_norm / (n + 1e-6))
    return tree_map(clip, grads), norm
""", "clipped on its own"),
    "always_scaled": ("""def clip_by_global_norm(grads, max_norm):
    norm = float(np.sqrt(sum(np.sum(g ** 2) for g in flatten(grads).values())))
    return tree_map(lambda g: g * max_norm / (norm + 1e-6), grads), norm
""", "below max_norm"),
    "sum_of_norms": ("""def clip_by_global_norm(grads, max_norm):
    norm = float(sum(np.linalg.norm(g) for g in flatten(grads).values()))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return tree_map(lambda g: g * scale, grads), norm
""", "norms of the arrays were added"),
    "squared_norm": ("""def clip_by_global_norm(grads, max_norm):
    norm = float(sum(np.sum(g ** 2) for g in flatten(grads).values()))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return tree_map(lambda g: g * scale, grads), norm
""", "without its square root"),
}

CORRECT = {
    "recursive": """def clip_by_global_norm(grads, max_norm):
    def leaves(t):
        if isinstance(t, dict):
            return [x for v in t.values() for x in leaves(v)]
        if isinstance(t, (list, tuple)):
            return [x for v in t for x in leaves(v)]
        return [np.asarray(t, dtype=float)]
    def scale_all(t, s):
        if isinstance(t, dict):
            return {k: scale_all(v, s) for k, v in t.items()}
        if isinstance(t, (list, tuple)):
            return [scale_all(v, s) for v in t]
        return np.asarray(t, dtype=float) * s
    norm = float(np.sqrt(sum(float(np.vdot(a, a)) for a in leaves(grads))))
    s = max_norm / (norm + 1e-6)
    return (scale_all(grads, s) if s < 1 else grads), norm
""",
    "concatenate": """def clip_by_global_norm(grads, max_norm):
    flat = flatten(grads)
    norm = float(np.linalg.norm(np.concatenate([np.ravel(g) for g in flat.values()])))
    factor = 1.0 if norm + 1e-6 <= max_norm else max_norm / (norm + 1e-6)
    return unflatten({k: g * factor for k, g in flat.items()}), norm
""",
}

# The names the notebook imports in its first cell, so that each answer also runs alone.
_IMPORTS = "from helpers.training import flatten, transformer_block_with_cache, tree_map, unflatten\n"
WRONG = {k: (_IMPORTS + src, words) for k, (src, words) in WRONG.items()}
CORRECT = {k: _IMPORTS + src for k, src in CORRECT.items()}
