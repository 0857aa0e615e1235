"""``swiglu`` (notebook 10_modern_llm): Llama's gated feed-forward."""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.llama import model

CONTRACT = Contract(
    args={"x": Arg("[N, d]", lists=True), "W_gate": Arg("[d, d_ff]", lists=True),
          "W_up": Arg("[d, d_ff]", lists=True), "W_down": Arg("[d_ff, d]", lists=True)},
    returns=Arg("[N, d]"), invariants=("float64 or the dtype of x: the dtype is not judged",))

EXERCISE = Exercise(
    "swiglu", model.swiglu, contract=CONTRACT, refuse=("helpers.llama.model:silu",),
    difficulty=1, importance=2, minutes=10,
    hints=(
        r"""Two projections up, $\boldsymbol{x} W_{gate}$ and $\boldsymbol{x} W_{up}$, both
$[N, d_{ff}]$; the first goes through $\operatorname{silu}(z) = z\,\sigma(z)$ and then
multiplies the second entry by entry (the gate); one projection down with $W_{down}$ brings
the rows back to width $d$. No biases.""",
        r"""Shapes: `x` `[N, d]`, `W_gate` and `W_up` `[d, d_ff]`, `W_down` `[d_ff, d]`. For the
sigmoid, $\sigma(z) = 1/(1 + e^{-z})$ overflows in `np.exp` for very negative $z$ (a warning,
though the limit comes out right); $\sigma(z) = \frac{1}{2}\big(1 + \tanh(z/2)\big)$ is the
same function without the overflow.

```python
gate = x @ W_gate                 # [N, d_ff]
up = ___                          # [N, d_ff]
silu = ___                        # gate times the sigmoid of gate, entry by entry
return ___                        # the gated product, projected down: [N, d]
```""",
    ))


def _weights(normal, d, d_ff, scale=1.0):
    return (scale * normal((d, d_ff)) / np.sqrt(d), scale * normal((d, d_ff)) / np.sqrt(d),
            normal((d_ff, d)) / np.sqrt(d_ff))


@EXERCISE.cases
def cases():
    normal = draw.rng(1010).standard_normal
    visible = [
        case("worked_example", "x = [[2]], W_gate = [[1, -1]], W_up = [[3, 3]], W_down = "
             "[[1], [1]]: silu(2) * 6 + silu(-2) * 6",
             ([[2.0]], [[1.0, -1.0]], [[3.0, 3.0]], [[1.0], [1.0]]), group="slides",
             expected=np.array([[6 * 2 / (1 + np.exp(-2)) + 6 * -2 / (1 + np.exp(2))]])),
        case("small", "x [4, 6], d_ff = 10", (normal((4, 6)), *_weights(normal, 6, 10))),
        case("large", "large pre-activations (|x W_gate| up to ~1000)",
             (300 * draw.rng(1012).standard_normal((3, 5)),
              *_weights(draw.rng(1013).standard_normal, 5, 7, 2.0)),
             group="stability"),
    ]
    normal = draw.rng(1011).standard_normal
    hidden = [
        case("large_hidden", "large pre-activations (|x W_gate| up to ~1000)",
             (300 * normal((3, 5)), *_weights(normal, 5, 7, 2.0)), group="stability",
             hidden=True),
        case("one_row", "x [1, 8], d_ff = 3", (normal((1, 8)), *_weights(normal, 8, 3)),
             hidden=True),
    ]
    return visible + hidden


def _gu(x, W_gate, W_up, W_down):
    x, Wg, Wu, Wd = (np.asarray(a, dtype=np.float64) for a in (x, W_gate, W_up, W_down))
    return x @ Wg, x @ Wu, Wd


def _sigmoid(z):
    with np.errstate(all="ignore"):
        return 1 / (1 + np.exp(-z))


@EXERCISE.mistake("silu_on_up", "SiLU was applied to x W_up instead of the gate x W_gate")
def _silu_on_up(x, W_gate, W_up, W_down):
    g, u, Wd = _gu(x, W_gate, W_up, W_down)
    return (g * u * _sigmoid(u)) @ Wd


@EXERCISE.mistake("relu", "ReLU instead of SiLU on the gate")
def _relu(x, W_gate, W_up, W_down):
    g, u, Wd = _gu(x, W_gate, W_up, W_down)
    return (np.maximum(g, 0) * u) @ Wd


@EXERCISE.mistake("sigmoid", "sigmoid(x W_gate) instead of SiLU: silu(z) = z * sigmoid(z)")
def _sigmoid_gate(x, W_gate, W_up, W_down):
    g, u, Wd = _gu(x, W_gate, W_up, W_down)
    return (_sigmoid(g) * u) @ Wd


@EXERCISE.mistake("no_gate", "no gate: the product with silu(x W_gate) is missing")
def _no_gate(x, W_gate, W_up, W_down):
    g, u, Wd = _gu(x, W_gate, W_up, W_down)
    return u @ Wd


def _silu(g):
    return g / (1.0 + np.exp(-g))


@trace.steps("swiglu")
def _steps(x, W_gate, W_up, W_down):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    x, W_gate, W_up, W_down = (np.asarray(a, dtype=float) for a in (x, W_gate, W_up, W_down))
    with np.errstate(all="ignore"):
        g, up = x @ W_gate, x @ W_up
        gate = _silu(g)
        variants = (("ReLU(x W_gate): a ReLU, not SiLU, on the gate", np.maximum(g, 0.0)),
                    ("sigmoid(x W_gate): the sigmoid without the factor x W_gate",
                     1.0 / (1.0 + np.exp(-g))),
                    ("x W_gate: the SiLU is missing", g))
        return [trace.Step("gate", "SiLU(x W_gate)", gate, variants),
                trace.Step("up", "x W_up", up),
                trace.Step("product", "gate * up (element by element)", gate * up,
                           tuple((f"{w.split(':')[0]} * up: {w.split(': ', 1)[-1]}", v * up)
                                 for w, v in variants)),
                trace.Step("output", "(gate * up) W_down", (gate * up) @ W_down,
                           (("(gate W_down) * (up W_down): W_down applied before the product",
                             (gate @ W_down) * (up @ W_down)),))]
