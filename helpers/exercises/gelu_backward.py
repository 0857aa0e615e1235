"""``gelu_backward`` (notebook 12_training): the gradient of the exact GELU."""

from __future__ import annotations

import math

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case

CONTRACT = Contract(args={"z": Arg("[...]"), "d_out": Arg("[...]")}, returns=Arg("[...]"),
                    batch=(1, 2, 3), invariants=("d_out has the shape of z",))

EXERCISE = Exercise(
    "gelu_backward", training.gelu_backward, contract=CONTRACT,
    refuse=("helpers.training:relu_backward",),   # equal to GELU's far from 0 (bundle probe)
    # The analytic derivative in float64 is within 1e-14 of the exact one (relative; 1e-16
    # absolute where Phi(z) + z phi(z) cancels): central differences, whatever their step,
    # are not closer than about 1e-11 (tests/helpers/test_analytic_gradients.py).
    rtol=1e-12, atol=1e-14,
    near_miss="the derivative itself, Phi(z) + z phi(z), is exact to about 1e-15; a central "
              "difference (f(z + h) - f(z - h)) / 2h is not closer than about 1e-11, whatever h",
    difficulty=2, importance=1, minutes=10,
    hints=(
        r"""$\mathrm{GELU}(z) = z\,\Phi(z)$ is a product: its derivative is
$\Phi(z) + z\,\varphi(z)$, with $\varphi(z) = e^{-z^2/2}/\sqrt{2\pi}$ the normal density
(the derivative of $\Phi$). Then the chain rule multiplies by `d_out`, entry by entry.""",
        r"""`erf` (from `helpers.bert`) works on arrays.

```python
z = np.asarray(z, dtype=float)
Phi = 0.5 * (1 + erf(z / np.sqrt(2)))
phi = ___                                   # exp(-z^2 / 2) / sqrt(2 pi)
return ___
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1204)
    return [
        case("vector", "z from -3 to 3, d_out = 1", (np.linspace(-3, 3, 7), np.ones(7))),
        case("matrix", "a [3, 4] matrix and a random d_out",
             (r.normal(size=(3, 4)) * 2, r.normal(size=(3, 4)))),
        case("far_out", "z = -40, -8, 8, 40: the density underflows to 0, the gradient is 0 or d_out",
             (np.array([-40.0, -8.0, 8.0, 40.0]), np.array([1.0, 2.0, 3.0, 4.0]))),
        case("batch", "a batch [2, 3, 5]", (r.normal(size=(2, 3, 5)), r.normal(size=(2, 3, 5)))),
        case("near_zero", "z near 0", (1e-3 * r.normal(size=6), r.normal(size=6)), hidden=True),
        case("mixed_scales", "z from -6 to 6 and near -0.75 (where Phi + z phi nearly cancels); "
             "one d_out 1e10, the others about 1",
             (np.concatenate([np.linspace(-6, 6, 9), [-0.75, -0.7517, 30.0]]),
              _mixed_scales(draw.rng(1214).normal(size=12)))),
    ]


def _mixed_scales(d_out, big=3):
    """``d_out`` with its entry ``big`` 1e10 times larger: a sum of d_out times the
    output is then too large for central differences to see the other entries move."""
    d_out = np.array(d_out, dtype=float)
    d_out[big] *= 1e10
    return d_out


def _parts(z):
    from helpers.bert.model import erf

    z = np.asarray(z, dtype=float)
    Phi = 0.5 * (1 + erf(z / math.sqrt(2)))
    with np.errstate(all="ignore"):
        phi = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return z, Phi, phi


@EXERCISE.mistake("Phi_only", "the z * phi(z) term is missing: GELU = z Phi(z) is a product, "
                  "its derivative is Phi(z) + z phi(z)")
def _phi_only(z, d_out):
    z, Phi, phi = _parts(z)
    return np.asarray(d_out) * Phi


@EXERCISE.mistake("no_chain_rule", "d_out was not multiplied in: return d_out * GELU'(z)")
def _no_chain(z, d_out):
    z, Phi, phi = _parts(z)
    return Phi + z * phi


@EXERCISE.mistake("numerical_gradient", "numerical, not analytic, gradient: central differences of the forward pass agree with the analytic gradient only where they are well conditioned; with one entry or row of d_out 1e10 times the others, the loss is so large that a step h moves it by less than its rounding. Write the derivative itself (the chain rule), not (f(x + h) - f(x - h)) / 2h")
def _numerical(z, d_out):
    from helpers.bert.model import gelu

    d_out = np.asarray(d_out, dtype=float)
    return training.numerical_gradient(lambda x: np.sum(d_out * gelu(x)), z)


@EXERCISE.mistake("tanh_approximation", "the derivative of the tanh approximation of GELU; "
                  "this course's GELU is the exact one, with erf")
def _tanh(z, d_out):
    z = np.asarray(z, dtype=float)
    c = math.sqrt(2 / math.pi)
    u = c * (z + 0.044715 * z ** 3)
    t = np.tanh(u)
    return np.asarray(d_out) * (0.5 * (1 + t) + 0.5 * z * (1 - t * t) * c * (1 + 3 * 0.044715 * z * z))
