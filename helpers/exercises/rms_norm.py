"""``rms_norm`` (notebook 10_modern_llm): x / sqrt(mean(x^2) + eps) * weight."""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.llama import model

CONTRACT = Contract(
    args={"x": Arg("[..., d]", dtype=("float64", "float32"), lists=True),
          "weight": Arg("[d]", lists=True),
          "eps": Arg(float, optional=True, low=0.0, high=1.0,
                     values=lambda rng, shape, dims: float(rng.choice([1e-3, 1e-2, 0.1])))},
    returns=Arg("[..., d]", dtype=("float64", "float32")), batch=(0, 1, 2),
    invariants=("float64 or the dtype of x: the dtype is not judged",))

EXERCISE = Exercise("rms_norm", model.rms_norm, contract=CONTRACT,
                    refuse=("helpers.llama.model:_rms_norm_float32",),  # fast path (issue 23)
                    nan_hint="is eps inside the square root, "
                    "x / sqrt(mean(x^2) + eps)?",
                    difficulty=1, importance=3, minutes=10,
                    hints=(
                        r"""Each row (the last axis) is divided by its root mean square
$\sqrt{\frac{1}{d}\sum_j x_j^2 + \epsilon}$ and then multiplied entry by entry by the gain
`weight`. Compared with layer norm, nothing is subtracted first (no mean) and nothing is
added at the end (no $\beta$); $\epsilon$ goes inside the square root.""",
                        r"""Reduce over the last axis and keep it with length 1, so that the
result, of shape `[..., 1]`, broadcasts against `x` `[..., d]`. Keep the dtype of `x`
(`np.asarray(x)`): the real model's rows are float32.

```python
x = np.asarray(x)
mean_square = ___            # [..., 1]: the mean of x * x over axis=-1, keepdims=True
return ___ * weight          # x divided by the root of (mean_square + eps)
```""",
                    ))


@EXERCISE.cases
def cases():
    normal = draw.rng(1010).standard_normal
    scales = np.array([[0.01], [1.0], [50.0]])
    visible = [
        case("worked_example", "x = [3, 0, 1, -0.5], weight = ones, eps = 0: mean(x^2) = "
             "2.5625, so every entry is divided by 1.600781", ([3.0, 0.0, 1.0, -0.5], np.ones(4)),
             {"eps": 0.0}, group="slides",
             expected=np.array([3.0, 0.0, 1.0, -0.5]) / 1.6007810593582121),
        case("row_scales", "x [3, 6] with rows at scales 0.01, 1, 50 and weight = ones",
             (normal((3, 6)) * scales, np.ones(6))),
        case("gains", "x [4, 5] and a weight [5] of varied gains", (normal((4, 5)),
                                                                   1 + normal(5) / 2)),
        case("eps_matters", "tiny rows where eps matters (eps=0.01)",
             (1e-2 * normal((3, 4)), normal(4)), {"eps": 1e-2}, group="eps"),
    ]
    normal = draw.rng(1011).standard_normal
    hidden = [
        case("eps_tiny_rows", "tiny rows where eps matters (eps=0.01)",
             (1e-2 * normal((3, 4)), normal(4)), {"eps": 1e-2}, group="eps", hidden=True),
        case("batch_mean", "a batch x [2, 3, 8] with a non-zero mean per row",
             (normal((2, 3, 8)) + 5.0, 1 + normal(8) / 3), hidden=True),
        case("lists", "Python lists", ([[1.0, -2.0, 3.0], [0.5, 0.5, -4.0]], [1.0, 2.0, 0.5]),
             hidden=True),
        case("tiny_and_large", "a tiny row and a large row, eps = 1e-5",
             ([[1e-3, -2e-3], [4.0, 3.0]], [2.0, 0.5]), {"eps": 1e-5}, hidden=True),
    ]
    return visible + hidden


def _xw(x, weight):
    return np.asarray(x, dtype=np.float64), np.asarray(weight, dtype=np.float64)


def _ms(x):
    return np.mean(x ** 2, axis=-1, keepdims=True)


@EXERCISE.mistake("mean_subtracted", "the mean was subtracted (that is layer norm): RMS norm "
                  "only rescales")
def _centred(x, weight, eps=1e-5):
    x, w = _xw(x, weight)
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt(_ms(c) + eps) * w


@EXERCISE.mistake("eps_outside", "eps was added outside the square root: use "
                  "sqrt(mean(x^2) + eps)")
def _eps_outside(x, weight, eps=1e-5):
    x, w = _xw(x, weight)
    return x / (np.sqrt(_ms(x)) + eps) * w


@EXERCISE.mistake("no_weight", "the weight (gain) was not applied")
def _no_weight(x, weight, eps=1e-5):
    x, _ = _xw(x, weight)
    return x / np.sqrt(_ms(x) + eps)


@EXERCISE.mistake("length", "divided by the length sqrt(sum(x^2)), not the root MEAN square")
def _length(x, weight, eps=1e-5):
    x, w = _xw(x, weight)
    return x / np.sqrt(np.sum(x ** 2, axis=-1, keepdims=True) + eps) * w


@EXERCISE.mistake("wrong_axis", "the mean was taken over the wrong axis (use the last, axis=-1)")
def _wrong_axis(x, weight, eps=1e-5):
    x, w = _xw(x, weight)
    return x / np.sqrt(np.mean(x ** 2, axis=0, keepdims=True) + eps) * w


@EXERCISE.mistake("eps_ignored", "the eps argument was ignored (a fixed 1e-5 was used): pass "
                  "eps through")
def _eps_ignored(x, weight, eps=1e-5):
    x, w = _xw(x, weight)
    return x / np.sqrt(_ms(x) + 1e-5) * w
