"""``gelu`` (notebook 09_sentence_encoder): BERT's exact GELU, x * Phi(x)."""

from __future__ import annotations

import numpy as np

from helpers import bert
from helpers.course import Arg, Contract, Exercise, draw, case

CONTRACT = Contract(args={"x": Arg("[...]", lists=True)}, returns=Arg("[...]"), batch=(1, 2, 3))

EXERCISE = Exercise("gelu", bert.gelu, contract=CONTRACT,
                    refuse=("helpers.bert.model:_gelu_float32_inplace", "helpers.training:gelu"),  # fast path (issue 23)
                    near_miss="is it an approximation? BERT's GELU is the "
                    "exact one, with erf",
                    difficulty=1, importance=2, minutes=5,
                    hints=(
                        r"""Every entry is treated on its own: $x$ times the probability
$\Phi(x)$ that a standard normal variable lies below $x$. The normal distribution's
cumulative function is written with the error function, $\Phi(x) = \frac{1}{2}\big(1 +
\operatorname{erf}(x/\sqrt 2)\big)$. The tanh formula of GPT-2 is only close to it; the
check wants the exact one.""",
                        r"""NumPy has no `erf`; `math.erf` takes one number, and
`np.vectorize` turns it into a function of arrays (shape in, same shape out):

```python
x = np.asarray(x, dtype=float)
erf = np.vectorize(___)        # the error function of the math module
return ___                     # x * Phi(x), with Phi written with erf(x / np.sqrt(2))
```""",
                    ))


@EXERCISE.cases
def cases():
    rng = draw.rng(909)
    visible = [
        case("linspace", "x = linspace(-5, 5, 21)", (np.linspace(-5, 5, 21),)),
        case("batch", "a [2, 2, 3] array", (draw.rng(908).normal(size=(2, 2, 3)),)),
        case("matrix", "a [3, 4] array", (rng.normal(size=(3, 4)) * 2,)),
        case("worked_example", "x = [-1, 0, 1]: GELU(1) = Phi(1) = 0.841345, "
             "GELU(-1) = -(1 - Phi(1))", ([-1.0, 0.0, 1.0],), group="slides",
             expected=np.array([-0.15865525393145707, 0.0, 0.8413447460685429])),
    ]
    rng = draw.rng(910)
    hidden = [
        case("extremes", "large and tiny values",
             (np.array([-40.0, -8.0, -1e-8, 0.0, 1e-8, 8.0, 40.0]),), hidden=True),
        case("3d", "a [2, 3, 5] array", (rng.normal(size=(2, 3, 5)) * 3,), hidden=True),
        case("list", "a Python list", ([-1.5, -0.5, 0.5, 1.5],), hidden=True),
    ]
    return visible + hidden


def _x(x):
    return np.asarray(x, dtype=np.float64)


@EXERCISE.mistake("tanh", "this is the tanh approximation of GELU (GPT-2's); BERT uses the "
                  "exact x * (1 + erf(x / sqrt(2))) / 2")
def _gelu_tanh(x):
    return bert.gelu_tanh(_x(x))


@EXERCISE.mistake("erf_unscaled", "erf(x) instead of erf(x / sqrt(2))")
def _gelu_erf_unscaled(x):
    x = _x(x)
    return 0.5 * x * (1 + bert.erf(x))


@EXERCISE.mistake("relu", "this is ReLU, not GELU")
def _gelu_relu(x):
    return np.maximum(0.0, _x(x))


@EXERCISE.mistake("no_x", "Phi(x) without the factor x: GELU(x) = x * Phi(x)")
def _gelu_phi(x):
    return 0.5 * (1 + bert.erf(_x(x) / np.sqrt(2)))


@EXERCISE.mistake("sigmoid", "the sigmoid approximation x * sigmoid(1.702 x), not the exact GELU")
def _gelu_sigmoid(x):
    x = _x(x)
    with np.errstate(over="ignore"):
        return x / (1 + np.exp(-1.702 * x))


@EXERCISE.mistake("math_erf", "math.erf takes one number, not an array: apply it to every "
                  "entry with np.vectorize(math.erf)")
def _math_erf(x):
    import math

    x = _x(x)
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))     # TypeError for an array
