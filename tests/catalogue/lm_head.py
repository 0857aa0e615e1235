"""Answers to ``lm_head(h, E)`` (notebook 08)."""

WRONG = {
    "no_transpose": ("""def lm_head(h, E):
    return np.asarray(h, dtype=float) @ np.asarray(E, dtype=float)
""", "computed h @ E"),
    "logits_transposed": ("""def lm_head(h, E):
    return np.asarray(E, dtype=float) @ np.asarray(h, dtype=float).T
""", "logits are transposed"),
    "softmax_applied": ("""def lm_head(h, E):
    return softmax(np.asarray(h, dtype=float) @ np.asarray(E, dtype=float).T)
""", "softmax was applied"),
    "scaled": ("""def lm_head(h, E):
    h = np.asarray(h, dtype=float)
    return h @ np.asarray(E, dtype=float).T / np.sqrt(h.shape[-1])
""", "divided by sqrt(d)"),
}

CORRECT = {
    "einsum": """def lm_head(h, E):
    return np.einsum("nd,vd->nv", np.asarray(h, float), np.asarray(E, float))
""",
    "rows_dot": """def lm_head(h, E):
    E = np.asarray(E, dtype=float)
    return np.array([[row @ e for e in E] for row in np.asarray(h, dtype=float)])
""",
}
