"""Answers to ``induction_scores(patterns, period)`` (notebook 14)."""

WRONG = {
    "earlier_copy_itself": ("""def induction_scores(patterns, period):
    P = np.asarray(patterns, dtype=float)
    rows = np.arange(period, 2 * period)
    return P[..., rows, rows - period].mean(axis=-1)
""", "the token that came after it"),
    "summed": ("""def induction_scores(patterns, period):
    P = np.asarray(patterns, dtype=float)
    rows = np.arange(period, 2 * period)
    return P[..., rows, rows - period + 1].sum(axis=-1)
""", "is the mean"),
    "columns_attend": ("""def induction_scores(patterns, period):
    P = np.asarray(patterns, dtype=float)
    rows = np.arange(period, 2 * period)
    return P[..., rows - period + 1, rows].mean(axis=-1)
""", "rows and columns were swapped"),
}

CORRECT = {
    "fancy_index": """def induction_scores(patterns, period):
    P = np.asarray(patterns, dtype=float)
    rows = np.arange(period, 2 * period)
    return P[..., rows, rows - period + 1].mean(axis=-1)
""",
    "diagonal": """def induction_scores(patterns, period):
    P = np.asarray(patterns, dtype=float)
    # the entries (i, i - period + 1) lie on the diagonal offset -(period - 1)
    d = np.diagonal(P, offset=-(period - 1), axis1=-2, axis2=-1)
    return d[..., 1:period + 1].mean(axis=-1)
""",
    "loops": """def induction_scores(patterns, period):
    P = np.asarray(patterns, dtype=float)
    L, H = P.shape[:2]
    out = np.zeros((L, H))
    for l in range(L):
        for h in range(H):
            out[l, h] = sum(P[l, h, i, i - period + 1]
                            for i in range(period, 2 * period)) / period
    return out
""",
}
