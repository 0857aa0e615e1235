"""Answers to ``find_slips(printed, computed, tokens, tolerance=0.006)`` (notebook 04)."""

WRONG = {
    "tolerance_inclusive": ("""def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float))
        for token, row in zip(tokens, diff):
            if (row >= tolerance).any():
                slips.add((name, token))
    return slips
""", "Likely mistake: a difference of exactly the tolerance counted"),
    "signed_difference": ("""def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name, rows in printed.items():
        diff = np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float)
        for token, row in zip(tokens, diff):
            if (row > tolerance).any():
                slips.add((name, token))
    return slips
""", "toy example"),
    "returns_a_list": ("""def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = []
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float))
        for token, row in zip(tokens, diff):
            if (row > tolerance).any():
                slips.append((name, token))
    return slips
""", "find_slips must return a set"),
    "tolerance_hardcoded": ("""def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float))
        for token, row in zip(tokens, diff):
            if (row > 0.006).any():
                slips.add((name, token))
    return slips
""", "tolerance argument ignored?"),
    "mean_of_row": ("""def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float))
        for token, row in zip(tokens, diff):
            if row.mean() > tolerance:
                slips.add((name, token))
    return slips
""", "toy example"),
    "token_name_swapped": ("""def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float))
        for token, row in zip(tokens, diff):
            if (row > tolerance).any():
                slips.add((token, name))
    return slips
""", "toy example"),
}

CORRECT = {
    "plain_python_loops": """def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name in printed:
        for i, token in enumerate(tokens):
            for p, c in zip(printed[name][i], computed[name][i]):
                if abs(float(p) - float(c)) > tolerance:
                    slips.add((name, token))
                    break
    return slips
""",
    "vectorised_any": """def find_slips(printed, computed, tokens, tolerance=0.006):
    out = set()
    for name in printed:
        bad = np.any(np.abs(np.subtract(printed[name], computed[name])) > tolerance, axis=-1)
        out |= {(name, tokens[i]) for i in np.flatnonzero(bad)}
    return out
""",
    "log_of_difference_warns": """def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float))
        log_diff = np.log(diff)          # log(0) = -inf, with a RuntimeWarning
        for token, row in zip(tokens, log_diff):
            if np.max(row) > np.log(tolerance):
                slips.add((name, token))
    return slips
""",
}
