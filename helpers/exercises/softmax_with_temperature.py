"""``softmax_with_temperature`` (notebook 02_softmax): softmax(z / T) along the last axis."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, case
from helpers.course.scenarios import RAISES


def softmax_with_temperature(z, temperature):
    """softmax(z / T) along the last axis for T > 0; ValueError when T <= 0."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return reference.softmax(np.asarray(z, dtype=np.float64) / temperature, axis=-1)


CONTRACT = Contract(
    args={"z": Arg("[..., n]", lists=True),
          "temperature": Arg(float, low=1e-9, values=lambda rng, shape, dims:
                             float(rng.choice([0.1, 0.5, 2.0, 10.0])))},
    returns=Arg("[..., n]"), batch=(0, 1))

EXERCISE = Exercise("softmax_with_temperature", softmax_with_temperature, contract=CONTRACT, uses=("softmax",),
                    nan_hint="is the softmax stable? Subtract the maximum of each row of "
                             "z / T before exp",
                    difficulty=1, importance=2, minutes=5,
                    hints=(
                        r"""The temperature divides the scores before the softmax:
$\sigma(\mathbf{z}/T)$. $T < 1$ stretches the differences between scores, $T > 1$ shrinks
them. $T = 0$ would divide by zero, and "temperature 0" usually means "take the argmax",
a different function (notebook 08 uses it for greedy decoding): refuse $T \le 0$.""",
                        r"""A guard, then one call of your `softmax` (its default axis is the
last one):

```python
if ___:
    raise ValueError("temperature must be positive")
return softmax(___)
```""",
                    ))


@EXERCISE.cases
def cases():
    z = ex.CAT_SLIDE_SIMPLE["scaled_the"]
    large = np.array([[800.0, 801.0, 799.0], [-3.0, 0.0, 3.0]])
    return [
        case("t_1", "the scaled scores of 'The' at T = 1 (plain softmax)", (z, 1.0),
             group="slides"),
        case("t_0.25", "the same scores at T = 0.25 (sharper)", (z, 0.25)),
        case("t_4", "the same scores at T = 4 (flatter)", (z, 4.0)),
        case("integers", "integer scores [1, 3, 2] at T = 0.5", ([1, 3, 2], 0.5)),
        case("large_rows", "rows, large scores, T = 0.5: [[800, 801, 799], [-3, 0, 3]]",
             (large, 0.5), group="stability"),
        case("zero", "temperature 0 must raise a ValueError", (z, 0.0), scenario=RAISES,
             expected="ValueError", group="errors"),
        case("negative", "temperature -1.0 must raise a ValueError", (z, -1.0), scenario=RAISES,
             expected="ValueError", group="errors"),
        case("hot", "scores in the hundreds, T = 200", (np.array([[300.0, 100.0, -200.0]]), 200.0)),
        case("large_rows_hot", "rows, large scores, T = 100", (large * 1.5, 100.0),
             group="stability", hidden=True),
        case("cold", "[1, 3, 2] at T = 0.01 (almost all weight on the largest)",
             ([1.0, 3.0, 2.0], 0.01), hidden=True),
        case("huge", "rows of scores near 1e5 at T = 0.1", (1e5 + large, 0.1),
             group="stability", hidden=True),
        case("negative_half", "temperature -0.5 must raise a ValueError", (large, -0.5),
             scenario=RAISES, expected="ValueError", group="errors", hidden=True),
    ]


def _rows(z):
    return np.asarray(z, dtype=np.float64)


@EXERCISE.mistake("multiplies_by_T", "the scores were multiplied by T; divide them: "
                  "softmax(z / T)")
def _times_t(z, temperature):
    return reference.softmax(_rows(z) * temperature, axis=-1)


@EXERCISE.mistake("no_max_shift", "exp overflows without the max shift: subtract each row's "
                  "maximum of z / T before exp")
def _no_shift(z, temperature):
    with np.errstate(all="ignore"):
        e = np.exp(_rows(z) / temperature)
        return e / e.sum(axis=-1, keepdims=True)


@EXERCISE.mistake("whole_array_normalized", "normalised over the whole array: each row must sum "
                  "to 1 (sum along axis=-1 with keepdims=True)")
def _whole(z, temperature):
    y = _rows(z) / temperature
    e = np.exp(y - y.max())
    return e / e.sum()


@EXERCISE.mistake("in_place_on_integers", "in-place arithmetic (`z /= temperature`) on an "
                  "integer array: NumPy cannot store a float result in it; start from a float "
                  "copy, np.array(z, dtype=float)")
def _in_place_on_integers(z, temperature):
    z = np.array(z)                                  # integers stay integers
    z -= z.max(axis=-1, keepdims=True)
    z /= temperature                                 # raises for an integer array
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)
