"""Answers to ``find_slips(printed, computed, tokens, tolerance=0.006)`` (notebook 04)."""

import numpy as np

WRONG = {
    "tolerance_inclusive": ("""def find_slips(printed, computed, tokens, tolerance=0.006):
    slips = set()
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=float) - np.asarray(computed[name], dtype=float))
        for token, row in zip(tokens, diff):
            if (row >= tolerance).any():
                slips.add((name, token))
    return slips
""", "off by MORE than the tolerance"),
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

_rng = np.random.default_rng(4)
_A = _rng.normal(size=(5, 3))
_B = _A + np.where(_rng.random((5, 3)) < 0.2, 0.05, 0.001)

#: (args, kwargs) on which each entry is compared with the solution's find_slips.
CASES = [
    (({"M": [[1.00, 2.00], [3.00, 4.00], [5.00, 6.01]], "N": [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]},
      {"M": [[1.004, 2.0], [3.0, 4.2], [5.0, 6.0]], "N": [[0.0, 0.0], [1.0, 1.0], [2.0, 2.5]]},
      ["a", "b", "c"]), {}),
    (({"A": [[1.0, 1.0]]}, {"A": [[1.0, 0.99]]}, ["x"]), {"tolerance": 0.02}),
    (({"A": [[1.0, 1.0]]}, {"A": [[1.0, 0.99]]}, ["x"]), {"tolerance": 0.001}),
    (({"A": [[1.0, -1.0], [0.0, 0.0]]}, {"A": [[1.0, -1.5], [0.0, 0.0]]}, ["x", "y"]), {}),
    (({"P": _A, "Q": _B}, {"P": _B, "Q": _A, "R": _A * 2}, ["t0", "t1", "t2", "t3", "t4"]), {}),
    (({"P": _A}, {"P": _B}, ["t0", "t1", "t2", "t3", "t4"]), {"tolerance": 0.01}),
    (({}, {"A": [[1.0]]}, ["x"]), {}),
    (({"A": [[1.5, 0.0]]}, {"A": [[1.0, 0.0]]}, ["x"]), {"tolerance": 0.5}),   # exactly at the tolerance
]
