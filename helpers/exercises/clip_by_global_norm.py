"""``clip_by_global_norm`` (notebook 12_training): one scale for all the gradients."""

from __future__ import annotations

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.judge import nested_problem

PARTS = ("grads", "norm")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


def _grads(rng, shape, dims):
    """A model's layout: arrays, and a list of dicts of arrays, at a random scale."""
    s = float(rng.choice([0.1, 1.0, 3.0]))
    d = int(rng.integers(1, 4))
    return {"E": s * rng.standard_normal((3, d)), "b": s * rng.standard_normal(d),
            "blocks": [{"W1": s * rng.standard_normal((d, 2))}
                       for _ in range(int(rng.integers(1, 3)))]}


CONTRACT = Contract(
    args={"grads": Arg(dict, values=_grads),
          "max_norm": Arg(float, low=0.0,
                          values=lambda rng, shape, dims: float(rng.choice([0.5, 1.0, 2.0])))},
    returns=(Arg(dict), Arg(float)),
    invariants=("grads: arrays, or dicts and lists of them; the result has its layout",))

EXERCISE = Exercise(
    "clip_by_global_norm", training.clip_by_global_norm, contract=CONTRACT, compare=_compare,
    refuse=("helpers.training:global_norm",),
    difficulty=2, importance=2, minutes=10,
    hints=(
        r"""The global norm is the length of all the gradients' entries taken together as
one long vector: $\sqrt{\sum_{\text{arrays}} \sum (g^2)}$. If it exceeds `max_norm`, every
array is multiplied by the same factor `max_norm / (norm + 1e-6)`, so the direction of the
whole update is kept; otherwise nothing changes.""",
        r"""`flatten(grads)` (from `helpers.training`) lists every array of the nested dict;
`tree_map(fn, grads)` applies `fn` to each and keeps the layout.

```python
norm = float(np.sqrt(sum(___ for g in flatten(grads).values())))
scale = ___
if scale >= 1:
    return grads, norm
return tree_map(lambda g: ___, grads), norm
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1210)
    return [
        case("two_arrays", "{'a': [3, 0], 'b': [[4]]}: the norm is 5, clipped to 1",
             ({"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}, 1.0)),
        case("below", "a norm of 0.5 under max_norm = 1: unchanged",
             ({"a": np.array([0.3, 0.0]), "b": np.array([[0.4]])}, 1.0)),
        case("model", "a model's layout (E, P, 2 blocks), norm about 9, clipped to 2",
             ({"E": 2 * r.normal(size=(4, 3)), "P": r.normal(size=(2, 3)),
               "blocks": [{"W1": r.normal(size=(3, 3)), "b1": r.normal(size=3)},
                          {"W1": r.normal(size=(3, 3)), "b1": r.normal(size=3)}]}, 2.0)),
        case("one_array", "one array of norm about 6", ({"W": 2 * r.normal(size=(3, 2))}, 3.0),
             hidden=True),
        case("model_below", "a model's layout below the limit",
             ({"E": 0.01 * r.normal(size=(4, 3)), "blocks": [{"W1": 0.01 * r.normal(size=(3, 3))}]},
              1.0), hidden=True),
    ]


def _norms(grads):
    return {k: float(np.sqrt(np.sum(np.square(v)))) for k, v in training.flatten(grads).items()}


@EXERCISE.mistake("per_array", "each array was clipped on its own; the norm is one number for "
                  "all of them together (the square root of the sum of every square)")
def _per_array(grads, max_norm):
    norm = float(np.sqrt(sum(n * n for n in _norms(grads).values())))
    def clip(g):
        n = float(np.sqrt(np.sum(np.square(g))))
        return g * min(1.0, max_norm / (n + 1e-6))
    return training.tree_map(clip, grads), norm


@EXERCISE.mistake("always_scaled", "the gradients were scaled even though their norm is below "
                  "max_norm; only clip when max_norm / (norm + 1e-6) < 1")
def _always(grads, max_norm):
    norm = float(np.sqrt(sum(n * n for n in _norms(grads).values())))
    return training.tree_map(lambda g: g * max_norm / (norm + 1e-6), grads), norm


@EXERCISE.mistake("sum_of_norms", "the norms of the arrays were added; the global norm is "
                  "sqrt(sum of the squares of every entry)")
def _sum(grads, max_norm):
    norm = float(sum(_norms(grads).values()))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return training.tree_map(lambda g: g * scale, grads), norm


@EXERCISE.mistake("norm_after_clipping", "the norm returned is the one after clipping; return "
                  "the norm before")
def _after(grads, max_norm):
    clipped, norm = training.clip_by_global_norm(grads, max_norm)
    return clipped, min(norm, float(np.sqrt(sum(n * n for n in _norms(clipped).values()))))


@EXERCISE.mistake("squared_norm", "the norm is the sum of the squares without its square root: "
                  "the global norm is sqrt(sum of the squares of every entry)")
def _squared(grads, max_norm):
    norm = float(sum(n * n for n in _norms(grads).values()))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return training.tree_map(lambda g: g * scale, grads), norm
