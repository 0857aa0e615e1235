"""``stack_tokens`` (notebook 00_start_here): N token vectors as the rows of X [N, d]."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers.course import Arg, Contract, Exercise, case
from helpers.course.scenarios import RAISES


def stack_tokens(vectors):
    """Stack N token vectors of length d into a float64 matrix X [N, d], X[i] = vectors[i];
    ValueError when the lengths differ."""
    lengths = {len(v) for v in vectors}
    if len(lengths) > 1:
        raise ValueError(f"all token vectors must have the same length, got {sorted(lengths)}")
    X = np.asarray(vectors, dtype=np.float64)                    # [N, d]
    if X.ndim != 2:
        raise ValueError(f"expected a list of 1-D vectors, got an array of shape {X.shape}")
    return X


def _compare(case, expected, got):
    if not isinstance(got, np.ndarray):
        return f"expected a NumPy array, got {type(got).__name__}"
    exp = np.asarray(expected)
    if got.shape != exp.shape:
        return (f"expected shape {exp.shape}: {exp.shape[0]} tokens, {exp.shape[1]} numbers "
                f"each; got {got.shape}")
    if not np.array_equal(got, exp):
        return f"row i must be vector i: expected\n{exp}\n    got\n{got}"
    return None


CONTRACT = Contract(args={"vectors": Arg("[N, d]", dtype=("float64", "int"), lists=True)},
                    returns=Arg("[N, d]"), dtype_judged=True,     # float64: the point of it
                    invariants=("a ValueError when the vectors' lengths differ",))

EXERCISE = Exercise("stack_tokens", stack_tokens, contract=CONTRACT, compare=_compare,
    difficulty=1, importance=2, minutes=5,
    hints=(
        r"""A list of $N$ vectors of length $d$ is a matrix in waiting: one NumPy call turns it into
an `[N, d]` array. The work is in refusing what is not a matrix, vectors of different
lengths.""",
        r"""`np.asarray(vectors, dtype=np.float64)` builds the matrix. Look at the lengths first (a
set of `len(v)` holds one number when they all agree), or check `.ndim` of the result:
vectors of different lengths cannot form a 2-D array (NumPy raises its own `ValueError`, or
builds something that is not 2-D).

```python
lengths = {len(v) for v in vectors}
if ___:
    raise ValueError(___)
return ___
```""",
    ),
)


@EXERCISE.cases
def cases():
    rows = [np.arange(4) * k for k in range(5)]
    return [
        case("two_tokens", "two tokens of 3 integers each, [[1, 2, 3], [4, 5, 6]]",
             ([[1, 2, 3], [4, 5, 6]],), expected=np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])),
        case("floats", "two tokens of 2 floats each, [[0.5, -1.0], [2.25, 3.0]]",
             ([[0.5, -1.0], [2.25, 3.0]],)),
        case("constant_row", "a token whose entries are equal, [[2, 2, 2], [1, 0, 3]]",
             ([[2.0, 2.0, 2.0], [1.0, 0.0, 3.0]],)),
        case("ragged", "vectors of lengths 3 and 2: must raise a ValueError",
             ([[1, 2, 3], [4, 5]],), scenario=RAISES, expected="ValueError"),
        case("arrays", "five 1-D arrays of 4 integers", (rows,), hidden=True),
        case("one_by_one", "a single token of one number", ([[0.5]],), hidden=True),
        case("cat", "the rows of 'The cat sat <end>'", (list(ex.CAT_X),), hidden=True),
        case("ragged_last", "the last vector one number longer: must raise a ValueError",
             ([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0, 7.0]],), scenario=RAISES,
             expected="ValueError", hidden=True),
    ]


@EXERCISE.mistake("integer_dtype", "the array keeps the integers' dtype: pass dtype=np.float64")
def _integer_dtype(vectors):
    return np.array(vectors)


@EXERCISE.mistake("transposed", "the vectors became the columns (X.T): each vector is a row")
def _transposed(vectors):
    return np.asarray(vectors, dtype=np.float64).T
