"""Answers to ``dot(a, b)`` (notebook 01)."""

WRONG = {
    "no_sum": ("""def dot(a, b):
    return np.asarray(a, dtype=float) * np.asarray(b, dtype=float)
""", "without adding them up"),
    "sum_times_sum": ("""def dot(a, b):
    return float(np.sum(a) * np.sum(b))
""", "sum(a) * sum(b)"),
    "loop_off_by_one": ("""def dot(a, b):
    total = 0.0
    for i in range(len(a) - 1):
        total += a[i] * b[i]
    return total
""", "skips the last entry"),
    "mean_not_sum": ("""def dot(a, b):
    return float(np.mean(np.asarray(a) * np.asarray(b)))
""", "averaged the products"),
    "unknown_rounded": ("""def dot(a, b):
    return round(float(np.dot(a, b)), 2)
""", "expected"),
}

CORRECT = {
    "loop": """def dot(a, b):
    total = 0.0
    for x, y in zip(a, b):
        total = total + x * y
    return total
""",
    "einsum": """def dot(a, b):
    return np.einsum("i,i->", np.asarray(a, dtype=float), np.asarray(b, dtype=float))
""",
    "matmul_lists": """def dot(a, b):
    return np.array(a) @ np.array(b)
""",
}
