"""``most_similar`` (notebook 01_dot_products): the other row with the largest cosine."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers.course import Arg, Contract, Exercise, draw, case


def most_similar(X, i):
    """Index j != i of the row of X [N, d] with the largest cosine similarity to row i
    (ties: the smallest j)."""
    X = np.asarray(X, dtype=np.float64)                     # [N, d]
    norms = np.linalg.norm(X, axis=1)                       # [N]
    cosines = (X @ X[i]) / (norms * norms[i])               # [N]
    cosines[i] = -np.inf                                    # never itself
    return int(np.argmax(cosines))


def _compare(case, expected, got):
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
        return f"expected a row index (an int), got {type(got).__name__} {got!r:.60}"
    if int(got) != int(expected):
        return f"expected row {int(expected)}, got row {int(got)}"
    return None


CONTRACT = Contract(
    args={"X": Arg("[N, d]", lists=True),
          "i": Arg(int, low=0, values=lambda rng, shape, dims: int(rng.integers(dims["N"])))},
    returns=Arg(int), where=("N >= 2",),
    invariants=("0 <= i < N", "ties: the smallest j"))

EXERCISE = Exercise("most_similar", most_similar, contract=CONTRACT, compare=_compare, uses=("cosine_similarity",),
    difficulty=2, importance=1, minutes=10,
    hints=(
        r"""Compute $\cos(\mathbf{x}_i, \mathbf{x}_j)$ for every $j$, leave $j = i$ out, and keep
the index of the largest. In the example of the instructions the dot product prefers the
long `[10, 10]`, while the cosine prefers `[0.9, 0.1]`, which points almost exactly like
`[1, 0]`.""",
        r"""A loop over `j` with your `cosine_similarity`, skipping `j == i`; a strict `>` keeps the
first of a tie. (Or a whole row at once: the cosines of row $i$ are row $i$ of $X X^\top$
divided by the lengths, `np.linalg.norm(X, axis=1)` of shape `[N]`; set entry $i$ to
`-np.inf` and take `np.argmax`.)

```python
best, best_j = -np.inf, None
for j in range(len(X)):
    if j == i:
        continue
    c = ___
    if ___:
        best, best_j = c, j
return best_j
```""",
    ),
)


def _random(seed):
    rng = draw.rng(seed)
    return rng.normal(size=(6, 3)) * rng.uniform(0.1, 10, size=(6, 1))      # [6, 3]


@EXERCISE.cases
def cases():
    cat = ex.CAT_X.tolist()
    visible = [
        case("same_direction", "X = [[1, 0], [10, 10], [0.9, 0.1]], i = 0: row 2 points the "
             "same way as row 0, row 1 is longer", ([[1, 0], [10, 10], [0.9, 0.1]], 0),
             group="slides", expected=2),
        case("cat_sat", "'The cat sat <end>', i = 2 ('sat')", (cat, 2)),
        case("random", "6 random vectors in 3-D, i = 0 (every other cosine is negative)",
             (_random(17), 0)),
        case("ties", "X = [[1, 1], [2, 2], [3, 3]], i = 2: rows 0 and 1 tie (ties go to the "
             "smallest j)", ([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], 2), expected=0),
    ]
    hidden = [case(f"cat_{i}", f"'The cat sat <end>', i = {i}", (cat, i), hidden=True)
              for i in (0, 1, 3)]
    hidden += [case(f"random_{seed}_{i}", f"6 random vectors in 3-D (seed {seed}), i = {i}",
                    (_random(seed), i), hidden=True)
               for seed in (11, 12, 13) for i in range(6)]
    return visible + hidden


def _cosines(X, i):
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1)
    return X, (X @ X[i]) / (norms * norms[i])


@EXERCISE.mistake("dot_products", "did you compare dot products instead of cosines? Divide each "
                  "dot product by the two lengths")
def _dot_products(X, i):
    X = np.asarray(X, dtype=np.float64)
    scores = X @ X[i]
    scores[i] = -np.inf
    return int(np.argmax(scores))


@EXERCISE.mistake("returns_itself", "most_similar must never return i itself: leave row i out "
                  "(its cosine with itself is 1)")
def _returns_itself(X, i):
    return int(np.argmax(_cosines(X, i)[1]))


@EXERCISE.mistake("ties_to_largest_j", "ties go to the smallest j: keep the first of equal "
                  "cosines (np.argmax does)")
def _ties_to_largest(X, i):
    c = _cosines(X, i)[1]
    c[i] = -np.inf
    return int(len(c) - 1 - np.argmax(c[::-1]))


@EXERCISE.mistake("self_set_to_zero", "row i's own cosine was set to 0, but the other cosines "
                  "can all be negative: leave row i out with -inf")
def _self_zero(X, i):
    c = _cosines(X, i)[1]
    c[i] = 0.0
    return int(np.argmax(c))


@EXERCISE.mistake("nearest_by_distance", "this is the nearest row by distance; the most similar "
                  "one is by angle (the largest cosine)")
def _nearest(X, i):
    X = np.asarray(X, dtype=np.float64)
    d = np.linalg.norm(X - X[i], axis=1)
    d[i] = np.inf
    return int(np.argmin(d))
