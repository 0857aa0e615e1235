"""``layer_norm_backward`` (notebook 12_training): the gradients of layer norm."""

from __future__ import annotations

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.judge import nested_problem

PARTS = ("dx", "dgamma", "dbeta")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


CONTRACT = Contract(
    args={"x": Arg("[..., d]"), "gamma": Arg("[d]"), "d_out": Arg("[..., d]"),
          "eps": Arg(float, optional=True, low=0.0, high=1.0,
                     values=lambda rng, shape, dims: float(rng.choice([1e-3, 1e-2, 0.1])))},
    returns=(Arg("[..., d]"), Arg("[d]"), Arg("[d]")), batch=(1, 2),
    sizes={"d": (2, 3, 4, 5, 6)}, invariants=("d_out has the shape of x",))

EXERCISE = Exercise(
    "layer_norm_backward", training.layer_norm_backward, contract=CONTRACT, compare=_compare,
    refuse=("helpers.training.kernels:ln_back",),
    difficulty=3, importance=3, minutes=20,
    hints=(
        r"""$\hat x = (x - \mu)/\sigma$ with $\sigma = \sqrt{\mathrm{var} + \varepsilon}$,
$y = \gamma \hat x + \beta$. $d\gamma$ and $d\beta$ are sums over the rows of
$dy \odot \hat x$ and $dy$. For $dx$: $d\hat x = dy \odot \gamma$, and each $x_k$ reaches
the output three ways: directly, through $\mu$ and through the variance. The result,
row by row: $dx = \big(d\hat x - \mathrm{mean}(d\hat x) - \hat x\,\mathrm{mean}(d\hat x
\odot \hat x)\big) / \sigma$.""",
        r"""Means over the last axis with `keepdims=True`; sums of `dgamma`, `dbeta` over all
the rows.

```python
x, dy = np.asarray(x, dtype=float), np.asarray(d_out, dtype=float)
mu = x.mean(axis=-1, keepdims=True)
sigma = np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
xhat = (x - mu) / sigma
dxhat = ___
dx = (dxhat - ___ - xhat * ___) / sigma
dgamma = ___                              # [d]
dbeta = ___                               # [d]
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1205)
    return [
        case("rows", "3 rows of 4 features, gamma = [1, 2, 0.5, 1.5]",
             (r.normal(size=(3, 4)) * 2 + 1, np.array([1.0, 2.0, 0.5, 1.5]),
              r.normal(size=(3, 4)))),
        case("batch", "a batch [2, 3, 5]: dgamma and dbeta sum over all 6 rows",
             (r.normal(size=(2, 3, 5)), 1 + 0.3 * r.normal(size=5), r.normal(size=(2, 3, 5)))),
        case("explicit_eps", "eps = 0.1 given, rows of small variance",
             (0.2 * r.normal(size=(2, 4)), np.array([1.0, -1.0, 0.5, 2.0]),
              r.normal(size=(2, 4))), {"eps": 0.1}),
        case("one_row", "a single row", (r.normal(size=(1, 6)) * 3, 1 + r.normal(size=6),
                                         r.normal(size=(1, 6))), hidden=True),
        case("offset_rows", "rows far from 0", (100 + r.normal(size=(4, 3)),
                                                 1 + r.normal(size=3), r.normal(size=(4, 3)))),
        case("mixed_scales", "3 rows of 4 features; d_out of the first row 1e10 times the others",
             _mixed_scales(draw.rng(1215))),
    ]


def _mixed_scales(r):
    """x, gamma and a d_out whose first row is 1e10 times larger than the others: a sum of
    d_out times the output is then too large for central differences to see the other
    rows move, for any step (the analytic gradient is as exact as anywhere)."""
    x, gamma, d_out = r.normal(size=(3, 4)) * 2, 1 + 0.3 * r.normal(size=4), r.normal(size=(3, 4))
    d_out[0] *= 1e10
    return x, gamma, d_out


def _variant(x, gamma, d_out, eps=1e-5, mean_term=True, var_term=True, use_gamma=True,
             ddof=0, eps_outside=False):
    x, dy, g = (np.asarray(a, dtype=float) for a in (x, d_out, gamma))
    d = x.shape[-1]
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).sum(axis=-1, keepdims=True) / (d - ddof)
    sigma = np.sqrt(var) + eps if eps_outside else np.sqrt(var + eps)
    xhat = (x - mu) / sigma
    dxhat = dy * g if use_gamma else dy
    dx = dxhat
    if mean_term:
        dx = dx - dxhat.mean(axis=-1, keepdims=True)
    if var_term:
        dx = dx - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
    rows = lambda a: a.reshape(-1, d)                                  # noqa: E731
    return dx / sigma, rows(dy * xhat).sum(axis=0), rows(dy).sum(axis=0)


@EXERCISE.mistake("numerical_gradient", "numerical, not analytic, gradient: central differences of the forward pass agree with the analytic gradient only where they are well conditioned; with one entry or row of d_out 1e10 times the others, the loss is so large that a step h moves it by less than its rounding. Write the derivative itself (the chain rule), not (f(x + h) - f(x - h)) / 2h")
def _numerical(x, gamma, d_out, eps=1e-5):
    from helpers.reference import layer_norm

    x, gamma, dy = (np.asarray(a, dtype=float) for a in (x, gamma, d_out))
    beta = np.zeros_like(gamma)
    loss = lambda x_, g_: np.sum(dy * layer_norm(x_, g_, beta, eps))        # noqa: E731
    return (training.numerical_gradient(lambda x_: loss(x_, gamma), x),
            training.numerical_gradient(lambda g_: loss(x, g_), gamma),
            dy.reshape(-1, x.shape[-1]).sum(axis=0))


@EXERCISE.mistake("no_mean_or_var_terms", "dx = dxhat / sigma only: the mean and the variance "
                  "depend on every entry too; subtract mean(dxhat) and xhat * mean(dxhat * xhat)")
def _none(x, gamma, d_out, eps=1e-5):
    return _variant(x, gamma, d_out, eps, mean_term=False, var_term=False)


@EXERCISE.mistake("no_mean_term", "the mean's term is missing: subtract mean(dxhat) over the "
                  "features")
def _no_mean(x, gamma, d_out, eps=1e-5):
    return _variant(x, gamma, d_out, eps, mean_term=False)


@EXERCISE.mistake("no_variance_term", "the variance's term is missing: subtract "
                  "xhat * mean(dxhat * xhat) over the features")
def _no_var(x, gamma, d_out, eps=1e-5):
    return _variant(x, gamma, d_out, eps, var_term=False)


@EXERCISE.mistake("gamma_not_applied", "dxhat = d_out * gamma: gamma was left out of dx")
def _no_gamma(x, gamma, d_out, eps=1e-5):
    return _variant(x, gamma, d_out, eps, use_gamma=False)


@EXERCISE.mistake("eps_ignored", "the eps argument was ignored: sigma = sqrt(var + eps) with "
                  "the eps passed in")
def _eps_fixed(x, gamma, d_out, eps=1e-5):
    return _variant(x, gamma, d_out, 1e-5)


@EXERCISE.mistake("ddof_1", "variance with ddof=1; layer norm uses the population variance")
def _ddof(x, gamma, d_out, eps=1e-5):
    return _variant(x, gamma, d_out, eps, ddof=1)


@EXERCISE.mistake("eps_outside_sqrt", "eps went outside the square root: sigma = sqrt(var) + "
                  "eps; the forward pass divides by sqrt(var + eps), and so must the backward")
def _eps_outside(x, gamma, d_out, eps=1e-5):
    return _variant(x, gamma, d_out, eps, eps_outside=True)
