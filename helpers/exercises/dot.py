"""``dot`` (notebook 01_dot_products): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _f


CONTRACT = Contract(
    args={"a": Arg("[n]", lists=True), "b": Arg("[n]", lists=True)},
    returns=Arg(float))

EXERCISE = Exercise('dot', reference.dot, contract=CONTRACT, output='scalar', nan_hint='did a product overflow?',
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""Walk through the two vectors together: multiply the $k$-th entries, $a_k b_k$, and add
up the $n$ products. The result is one number, not a vector.""",
        r"""Convert first, so that lists work too: `np.asarray(a, dtype=float)` has shape `[n]`.
Then either `np.sum` of the elementwise product `a * b`, or the `@` operator. A skeleton:

```python
a = np.asarray(a, dtype=float)
b = ___
return float(___)
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("slides_the_cat", "x_The . x_cat in the slides' example 'The cat sat <end>' (= 1.08)",
             (ex.CAT_X[0], ex.CAT_X[1]), group="slides"),
        case("lists", "two plain Python lists of ints", ([1, 2, 3], [4, -5, 6])),
        case("decimals", "numbers with many decimals",
             ([0.123, -4.567, 7.891], [1.5, 0.25, -3.333])),
        case("random", "two random vectors of length 7", (draw.normal(1, 7), draw.normal(2, 7)),
             hidden=True),
        case("negative", "a dot product that comes out negative",
             ([2.0, -1.0, 0.5, 3.0], [-1.0, 4.0, 2.0, -0.5]), hidden=True),
        case("length_one", "vectors of length 1", (np.array([3.0]), np.array([-2.5])),
             group="shapes", hidden=True),
        case("mixed_scales", "entries from 1e-2 to 5e2 (the twin of a hidden case)",
             (np.array([5e2, -1e-2, 3.0]), np.array([2e-2, 3e2, -1.0])), group="scales"),
        case("scales", "entries from 1e-3 to 1e3",
             (np.array([1e3, 2e-3, -5.0, 7e2]), np.array([3e-3, 4e2, 1.5, -2e-3])), group="scales",
             hidden=True),
        case("long_lists", "lists of 12 floats",
             (list(draw.normal(3, 12, decimals=2)), list(draw.normal(4, 12, decimals=2))), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_sum",
                  "the products a_i * b_i were returned without adding them up (use sum, or a @ b)")
def _dot_no_sum(a, b):
    return _f(a) * _f(b)


@EXERCISE.mistake("sum_times_sum",
                  "computed sum(a) * sum(b); the dot product is the sum of the products a_i * b_i")
def _dot_sum_times_sum(a, b):
    return float(_f(a).sum() * _f(b).sum())


@EXERCISE.mistake("skips_last",
                  "the loop skips the last entry (an off-by-one in range): use range(len(a))")
def _dot_skips_last(a, b):
    return float(_f(a)[:-1] @ _f(b)[:-1])


@EXERCISE.mistake("skips_first",
                  "the loop skips the first entry (range(1, n)): indices start at 0")
def _dot_skips_first(a, b):
    return float(_f(a)[1:] @ _f(b)[1:])


@EXERCISE.mistake("uses_a_twice", "used a twice (a . a) instead of a . b")
def _dot_uses_a_twice(a, b):
    return float(_f(a) @ _f(a))


@EXERCISE.mistake("outer", "computed the outer product (a matrix); the dot product is one number")
def _dot_outer(a, b):
    return np.outer(_f(a), _f(b))


@EXERCISE.mistake("norms_product",
                  "returned |a| * |b|, the product of the lengths; the dot product also depends on "
                  "the angle")
def _dot_norms_product(a, b):
    return float(np.linalg.norm(_f(a)) * np.linalg.norm(_f(b)))


@EXERCISE.mistake("mean_not_sum", "averaged the products (mean); the dot product is their sum")
def _dot_mean(a, b):
    return float(np.mean(_f(a) * _f(b)))

