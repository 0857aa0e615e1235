"""``adamw_update`` (notebook 12_training): one AdamW step for one array."""

from __future__ import annotations

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.judge import nested_problem

PARTS = ("theta", "m", "v")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


def _choice(*options):
    return lambda rng, shape, dims: float(rng.choice(options))


CONTRACT = Contract(
    args={"theta": Arg("[...]"), "grad": Arg("[...]"),
          "m": Arg("[...]", values=lambda rng, shape, dims: 0.1 * rng.standard_normal(shape)),
          "v": Arg("[...]", values=lambda rng, shape, dims: 0.1 * rng.random(shape)),
          "t": Arg(int, low=1, values=lambda rng, shape, dims: int(rng.choice([1, 2, 3, 10]))),
          "lr": Arg(float, low=0.0, high=1.0, values=_choice(1e-3, 1e-2, 0.1)),
          "beta1": Arg(float, optional=True, low=0.0, high=1.0, values=_choice(0.8, 0.9)),
          "beta2": Arg(float, optional=True, low=0.0, high=1.0, values=_choice(0.9, 0.99)),
          "eps": Arg(float, optional=True, low=0.0, high=1.0, values=_choice(1e-8, 1e-6, 1e-3)),
          "weight_decay": Arg(float, optional=True, low=0.0, high=1.0,
                              values=_choice(0.01, 0.05, 0.1))},
    returns=(Arg("[...]"), Arg("[...]"), Arg("[...]")), batch=(1, 2),
    invariants=("theta, grad, m and v have one shape", "v >= 0"))

EXERCISE = Exercise(
    "adamw_update", training.adamw_update, contract=CONTRACT, compare=_compare,
    refuse=("helpers.training:adamw_step",),
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Two running averages: $m$ of the gradients, $v$ of their squares. Both start at
0, so early on they are too small by the factors $1 - \beta_1^t$ and $1 - \beta_2^t$
(and $v$'s, $1 - \beta_2^t$, is by far the smaller one): divide by them (bias correction). The step is
$\mathrm{lr}\cdot\hat m/(\sqrt{\hat v} + \varepsilon)$, and the weight decay shrinks
$\theta$ by $\mathrm{lr}\cdot\lambda\,\theta$ directly, apart from the gradient.""",
        r"""```python
theta, g, m, v = (np.asarray(a, dtype=float) for a in (theta, grad, m, v))
m = beta1 * m + (1 - beta1) * g
v = ___
m_hat = ___
v_hat = ___
theta = ___          # the Adam step, and the weight decay apart from it
return theta, m, v
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1209)
    return [     # m and v are two arrays: one shared array would hide an in-place update
        case("first_step", "t = 1, m = v = 0, weight decay 0.1: the step is about lr * sign(g)",
             (np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.3, -4.0, 0.01, 0.0]), np.zeros(4),
              np.zeros(4), 1, 0.1),
             {"weight_decay": 0.1}),
        case("later_step", "t = 5 with running averages, betas (0.8, 0.9), eps 1e-3",
             (r.normal(size=(2, 3)), r.normal(size=(2, 3)), 0.1 * r.normal(size=(2, 3)),
              0.1 * r.random(size=(2, 3)), 5, 0.01),
             {"beta1": 0.8, "beta2": 0.9, "eps": 1e-3}),
        case("no_decay", "t = 2, no weight decay", (r.normal(size=3), r.normal(size=3),
             0.1 * r.normal(size=3), 0.1 * r.random(size=3), 2, 0.001)),
        case("big_t", "t = 1000 (bias correction close to 1), decay 0.01",
             (r.normal(size=4), r.normal(size=4), 0.1 * r.normal(size=4),
              0.01 * r.random(size=4), 1000, 0.003), {"weight_decay": 0.01}),
        case("matrix", "a [3, 3] matrix at t = 3, all settings given",
             (r.normal(size=(3, 3)), r.normal(size=(3, 3)), 0.1 * r.normal(size=(3, 3)),
              0.1 * r.random(size=(3, 3)), 3, 0.02),
             {"beta1": 0.85, "beta2": 0.95, "eps": 1e-6, "weight_decay": 0.05}, hidden=True),
    ]


def _variant(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
             correct=True, decay="decoupled", eps_inside=False, t_shift=0):
    theta, g, m, v = (np.asarray(a, dtype=float) for a in (theta, grad, m, v))
    t = t + t_shift
    if decay == "l2":
        g = g + weight_decay * theta
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat = m / (1 - beta1 ** t) if correct else m
    v_hat = v / (1 - beta2 ** t) if correct else v
    denom = np.sqrt(v_hat + eps) if eps_inside else np.sqrt(v_hat) + eps
    step = lr * m_hat / denom
    if decay == "decoupled":
        theta = theta - lr * weight_decay * theta
    elif decay == "no_lr":
        theta = theta - weight_decay * theta
    # decay == "none": the weight decay left out
    return theta - step, m, v


@EXERCISE.mistake("no_bias_correction", "Adam without bias correction: divide m by "
                  "(1 - beta1^t) and v by (1 - beta2^t)")
def _no_bc(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    return _variant(theta, grad, m, v, t, lr, beta1, beta2, eps, weight_decay, correct=False)


@EXERCISE.mistake("l2_not_decoupled", "the weight decay was added to the gradient (L2, which "
                  "Adam then rescales); AdamW shrinks theta directly: theta -= lr * wd * theta")
def _l2(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    return _variant(theta, grad, m, v, t, lr, beta1, beta2, eps, weight_decay, decay="l2")


@EXERCISE.mistake("decay_without_lr", "the decay is lr * weight_decay * theta; the lr factor "
                  "is missing")
def _no_lr(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    return _variant(theta, grad, m, v, t, lr, beta1, beta2, eps, weight_decay, decay="no_lr")


@EXERCISE.mistake("eps_inside_sqrt", "eps went inside the square root; Adam divides by "
                  "sqrt(v_hat) + eps")
def _eps_in(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    return _variant(theta, grad, m, v, t, lr, beta1, beta2, eps, weight_decay, eps_inside=True)


@EXERCISE.mistake("t_plus_1", "the bias correction used t + 1: t counts from 1 already (the "
                  "first step has t = 1), so divide by (1 - beta1^t) and (1 - beta2^t)")
def _t_plus_1(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    return _variant(theta, grad, m, v, t, lr, beta1, beta2, eps, weight_decay, t_shift=1)


@EXERCISE.mistake("no_weight_decay", "the weight decay was left out: AdamW also shrinks theta, "
                  "theta -= lr * weight_decay * theta")
def _no_decay(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    return _variant(theta, grad, m, v, t, lr, beta1, beta2, eps, weight_decay, decay="none")
