"""``find_slips`` (notebook 04_queries_keys_values): the printed rows that are not rounding."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers.course import Arg, Contract, Exercise, case


def find_slips(printed, computed, tokens, tolerance=0.006):
    """The set of (matrix name, token) whose printed row differs from the computed one by
    more than ``tolerance`` in some entry."""
    slips = set()
    for name, rows in printed.items():
        diff = np.abs(np.asarray(rows, dtype=np.float64)
                      - np.asarray(computed[name], dtype=np.float64))   # [N, d]
        for token, row_diff in zip(tokens, diff):
            if (row_diff > tolerance).any():
                slips.add((name, token))
    return slips


def _compare(case, expected, got):
    if not isinstance(got, (set, frozenset)):
        return (f"find_slips must return a set of (matrix name, token) pairs, got "
                f"{type(got).__name__}")
    try:
        got = {tuple(x) for x in got}
    except TypeError:
        return "every element must be a (matrix name, token) pair"
    if got != set(expected):
        missing, extra = sorted(set(expected) - got), sorted(got - set(expected))
        return (f"expected {sorted(expected)}, got {sorted(got)}"
                + (f"; missing {missing}" if missing else "")
                + (f"; not slips {extra}" if extra else ""))
    return None


CONTRACT = Contract(
    args={"printed": Arg(dict), "computed": Arg(dict), "tokens": Arg(list),
          "tolerance": Arg(float, optional=True, low=0.0)},
    returns=Arg(set), draw=False)

EXERCISE = Exercise("find_slips", find_slips, contract=CONTRACT, compare=_compare,
    difficulty=2, importance=2, minutes=15,
    hints=(
        r"""A row is a slip when at least one of its entries is off by more than the tolerance:
$\max_k |p_{ik} - c_{ik}| > \mathrm{tolerance}$, with $p$ the printed and $c$ the computed
matrix of the same name. Look at every name of `printed`, and report a row by its token.""",
        r"""`np.abs(P - C)` is `[N, d]`; `(diff > tolerance).any(axis=1)` gives one boolean per row,
`[N]`; `zip(tokens, ...)` pairs each row with its token. Return a `set` of
`(name, token)` tuples.

```python
slips = set()
for name, rows in printed.items():
    diff = ___                                  # [N, d]
    for token, off in zip(tokens, ___):         # one boolean per row
        if off:
            slips.add(___)
return slips
```""",
    ),
)


def _slides():
    exact = {"Q": ex.CAT_X @ ex.CAT_W_Q, "K": ex.CAT_X @ ex.CAT_W_K,
             "V_listed": ex.CAT_X @ ex.CAT_W_V, "V_used_in_sum": ex.CAT_X @ ex.CAT_W_V}
    printed = {name: ex.CAT_SLIDE_WEIGHTED[name] for name in exact}
    return printed, exact


@EXERCISE.cases
def cases():
    toy_printed = {"M": [[1.00, 2.00], [3.00, 4.00], [5.00, 6.01]],
                   "N": [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]}
    toy_computed = {"M": [[1.004, 2.0], [3.0, 4.2], [5.0, 6.0]],
                    "N": [[0.0, 0.0], [1.0, 1.0], [2.0, 2.5]]}
    printed, exact = _slides()
    return [
        case("toy", "toy example: a difference of 0.004 is rounding, 0.01 and more is a slip",
             (toy_printed, toy_computed, ["a", "b", "c"]),
             expected={("M", "b"), ("M", "c"), ("N", "c")}),
        case("signed", "toy example with a printed value BELOW the computed one (use the "
             "absolute difference)", ({"A": [[1.0, -1.0]], "B": [[2.0, 2.0]]},
                                      {"A": [[1.0, -1.5]], "B": [[2.0, 2.003]]}, ["x"]),
             expected={("A", "x")}),
        case("slides", "the slides' Q, K and V of 'The cat sat <end>' against the computed ones",
             (printed, exact, list(ex.CAT_TOKENS)), group="slides"),
        case("tolerance", "a difference of 0.01 with tolerance=0.02 given: rounding",
             ({"A": [[1.0, 1.0]]}, {"A": [[1.0, 0.99]]}, ["x"]), {"tolerance": 0.02},
             expected=set()),
        case("exactly_tolerance", "a difference of exactly the tolerance (0.5) is rounding: a "
             "slip is off by MORE than the tolerance",
             ({"A": [[1.5, 0.0]]}, {"A": [[1.0, 0.0]]}, ["x"]), {"tolerance": 0.5},
             expected=set()),
        case("none", "no slips: the empty set", ({"A": [[1.0, 1.0]]}, {"A": [[1.0, 1.0]]}, ["x"]),
             hidden=True, expected=set()),
        case("small_tolerance", "a difference of 0.01 with tolerance=0.001",
             ({"A": [[1.0, 1.0]]}, {"A": [[1.0, 0.99]]}, ["x"]), {"tolerance": 0.001},
             hidden=True, expected={("A", "x")}),
        case("negative", "a printed -1.0 where -1.5 is right",
             ({"A": [[1.0, -1.0]]}, {"A": [[1.0, -1.5]]}, ["x"]), hidden=True,
             expected={("A", "x")}),
        case("three_matrices", "three matrices of 4 rows, one slip in the middle of each",
             ({k: np.eye(4) + d for k, d in (("P", 0.0), ("R", 0.0), ("S", 0.0))},
              {"P": np.eye(4) + np.diag([0, 0.2, 0, 0]), "R": np.eye(4),
               "S": np.eye(4) - np.diag([0, 0, 0.05, 0])}, ["w", "x", "y", "z"]),
             hidden=True, expected={("P", "x"), ("S", "y")}),
    ]


def _diffs(printed, computed, signed=False):
    for name, rows in printed.items():
        d = np.asarray(rows, dtype=np.float64) - np.asarray(computed[name], dtype=np.float64)
        yield name, (d if signed else np.abs(d))


@EXERCISE.mistake("tolerance_inclusive", "a difference of exactly the tolerance counted as a "
                  "slip: a slip is off by MORE than the tolerance (>, not >=)")
def _inclusive(printed, computed, tokens, tolerance=0.006):
    return {(n, t) for n, d in _diffs(printed, computed) for t, r in zip(tokens, d)
            if (r >= tolerance).any()}


@EXERCISE.mistake("signed_difference", "the signed difference misses rows printed too low: "
                  "compare the absolute difference")
def _signed(printed, computed, tokens, tolerance=0.006):
    return {(n, t) for n, d in _diffs(printed, computed, signed=True) for t, r in zip(tokens, d)
            if (r > tolerance).any()}


@EXERCISE.mistake("tolerance_hardcoded", "tolerance argument ignored? The fixed 0.006 was used "
                  "where another tolerance was given")
def _hardcoded(printed, computed, tokens, tolerance=0.006):
    return {(n, t) for n, d in _diffs(printed, computed) for t, r in zip(tokens, d)
            if (r > 0.006).any()}


@EXERCISE.mistake("mean_of_row", "the mean difference of a row was compared: a row is a slip "
                  "when ANY entry is off by more than the tolerance")
def _mean(printed, computed, tokens, tolerance=0.006):
    return {(n, t) for n, d in _diffs(printed, computed) for t, r in zip(tokens, d)
            if r.mean() > tolerance}


@EXERCISE.mistake("token_name_swapped", "the pairs are (token, name): return (matrix name, "
                  "token)")
def _swapped(printed, computed, tokens, tolerance=0.006):
    return {(t, n) for n, d in _diffs(printed, computed) for t, r in zip(tokens, d)
            if (r > tolerance).any()}
