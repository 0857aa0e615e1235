"""``cosine_similarity`` (notebook 01_dot_products): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _cos_with, _f


CONTRACT = Contract(
    args={"a": Arg("[n]", lists=True), "b": Arg("[n]", lists=True)},
    returns=Arg(float, low=-1.0, high=1.0))

EXERCISE = Exercise('cosine_similarity', reference.cosine_similarity, contract=CONTRACT, uses=('dot',), output='scalar', nan_hint='did a length come out as 0 or inf?',
    difficulty=1, importance=2, minutes=5,
    hints=(
        r"""Divide the dot product by both lengths. The length of a vector is the square root of
its dot product with itself: $\lVert\mathbf{a}\rVert = \sqrt{\mathbf{a}\cdot\mathbf{a}}$.
The check also feeds in vectors at very different scales (entries around $10^{3}$ and
$10^{-2}$): the cosine does not care, and neither should your code.""",
        r"""`np.sqrt(dot(a, a))` or `np.linalg.norm(a)` gives $\lVert\mathbf{a}\rVert$. A skeleton:

```python
norm_a = ___
norm_b = ___
return float(dot(a, b) / ___)
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("slides_the_cat", "x_The and x_cat from the slides' example 'The cat sat <end>'",
             (ex.CAT_X[0], ex.CAT_X[1]), group="slides"),
        case("lists", "two lists of different lengths |a| != |b|", ([1, 2, 2], [0, 3, 4])),
        case("negative_cosine",
             "vectors pointing in roughly opposite directions (a negative cosine)",
             ([1.0, -2.0, 0.5], [-2.0, 3.0, 1.0])),
        case("opposite", "vectors pointing in opposite directions (cos = -1)",
             ([1.0, -2.0, 0.5], [-2.0, 4.0, -1.0]), hidden=True),
        case("negative", "vectors at an obtuse angle (negative cosine)",
             (np.array([1.0, 2.0, -1.0, 0.5]), np.array([-2.0, 0.5, 1.5, 0.0])), hidden=True),
        case("random", "two random vectors of length 6", (draw.normal(5, 6), draw.normal(6, 6) * 3.0),
             hidden=True),
        case("long_short", "a long vector (entries ~1e2) and a short one (entries ~1e-3)",
             (draw.normal(11, 3) * 1e2, draw.normal(12, 3) * 1e-3), group="scales"),
        case("scales", "a long vector (entries ~1e3) and a short one (entries ~1e-2)",
             (draw.normal(7, 5) * 1e3, draw.normal(8, 5) * 1e-2), group="scales", hidden=True),
        case("big_and_small", "entries ~1e40 and ~1e-40",
             (draw.normal(9, 4) * 1e40, draw.normal(10, 4) * 1e-40), group="scales", hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_normalisation",
                  "returned the plain dot product: divide by the lengths |a| |b|")
def _cos_no_norm(a, b):
    return float(_f(a) @ _f(b))


@EXERCISE.mistake("only_norm_a", "divided by |a| only; divide by |a| * |b|")
def _cos_only_a(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(a))


@EXERCISE.mistake("only_norm_b", "divided by |b| only; divide by |a| * |b|")
def _cos_only_b(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(b))


@EXERCISE.mistake("squared_norms",
                  "divided by |a|^2 |b|^2: the length is the square root of the sum of squares")
def _cos_squared(a, b):
    return _cos_with(a, b, lambda a, b: (a @ a) * (b @ b))


@EXERCISE.mistake("sum_of_norms",
                  "divided by |a| + |b|; divide by the product |a| * |b|")
def _cos_sum_norms(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(a) + np.linalg.norm(b))


@EXERCISE.mistake("l1_norms",
                  "used the sum of absolute values as the length; the length is sqrt(sum of squares)")
def _cos_l1(a, b):
    return _cos_with(a, b, lambda a, b: np.abs(a).sum() * np.abs(b).sum())


@EXERCISE.mistake("norm_a_twice", "divided by |a| * |a|; the second length is |b|")
def _cos_a_twice(a, b):
    return _cos_with(a, b, lambda a, b: a @ a)


@EXERCISE.mistake("cosine_distance",
                  "returned 1 - cos (the cosine distance) instead of the cosine similarity")
def _cos_distance(a, b):
    return 1.0 - _cos_with(a, b, lambda a, b: np.linalg.norm(a) * np.linalg.norm(b))


@EXERCISE.mistake("absolute_value",
                  "took the absolute value: the cosine is negative when the vectors point apart")
def _cos_abs(a, b):
    return abs(_cos_with(a, b, lambda a, b: np.linalg.norm(a) * np.linalg.norm(b)))


@EXERCISE.mistake("angle",
                  "returned the angle (arccos of the cosine); return the cosine itself")
def _cos_angle(a, b):
    return float(np.arccos(np.clip(_cos_with(
        a, b, lambda a, b: np.linalg.norm(a) * np.linalg.norm(b)), -1.0, 1.0)))


@EXERCISE.mistake("norm_of_product",
                  "divided by the length of a * b (entry by entry); divide by |a| * |b|")
def _cos_norm_product(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(a * b))


# What the contract cannot say: checked when a learner calls helpers.cosine_similarity

@EXERCISE.edge
def _neither_zero(a, b):
    for name, v in (("a", a), ("b", b)):
        if not v.any():
            raise ValueError(f"cosine similarity is undefined: {name} is the zero vector")
