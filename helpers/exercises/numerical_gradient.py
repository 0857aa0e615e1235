"""``numerical_gradient`` (notebook 12_training): the gradient check, central differences.

A function cannot cross the sandbox's wire, so every case is a scenario
(:func:`scenario_function`): it builds one of a few fixed float64 functions by name where
the learner's code runs and returns ``numerical_gradient(f, x, h)``.
"""

from __future__ import annotations

import numpy as np

from helpers import training
from collections.abc import Callable

from helpers.course import Arg, Contract, Exercise, draw, case

SCENARIO = "helpers.exercises.numerical_gradient:scenario_function"


def scenario_function(numerical_gradient, name, x, **kwargs):
    """``numerical_gradient(f, x, **kwargs)`` with ``f`` the function called ``name``."""
    import math

    import numpy

    functions = {
        "cubic": lambda a: float(numpy.sum(numpy.asarray(a) ** 3)),
        "sin_times": lambda a: float(math.sin(a[0]) * a[1] + a[1] ** 2),
        "log_sum_exp": lambda a: float(numpy.log(numpy.sum(numpy.exp(numpy.asarray(a))))),
        "quadratic": lambda a: float(numpy.sum(numpy.asarray(a) ** 2 * numpy.arange(
            1.0, numpy.asarray(a).size + 1).reshape(numpy.shape(a)))),
        "product": lambda a: float(numpy.prod(numpy.asarray(a))),
    }
    return numerical_gradient(functions[name], x, **kwargs)


CONTRACT = Contract(
    args={"f": Arg(Callable), "x": Arg("[...]"),
          "h": Arg(float, optional=True, low=0.0, high=1.0)},
    # draw=False: f is a function, which no drawn case can pass to a sandboxed answer
    # (every case is a scenario that builds f by name)
    returns=Arg("[...]"), batch=(1, 2), draw=False,
    invariants=("f takes an array shaped like x and returns a number",))

EXERCISE = Exercise(
    "numerical_gradient", training.numerical_gradient, contract=CONTRACT,
    difficulty=1, importance=3, minutes=10,
    hints=(
        r"""Nudge one entry at a time: for entry $k$, evaluate $f$ with $x_k + h$ and with
$x_k - h$ (every other entry unchanged), and divide the difference by $2h$. Put the entry
back before moving on to the next one.""",
        r"""Work on a float64 copy so the caller's array is not changed; `x.flat[k]` reaches
entry `k` whatever the shape.

```python
x = np.array(x, dtype=float)              # a copy
grad = np.zeros_like(x)
for k in range(x.size):
    old = x.flat[k]
    x.flat[k] = old + h
    f_plus = f(x)
    x.flat[k] = ___
    f_minus = f(x)
    x.flat[k] = ___                       # put it back
    grad.flat[k] = ___
return grad
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1201)
    return [
        case("cubic", "f(x) = sum(x^3) on a 2 x 2 matrix: the gradient is 3 x^2",
             ("cubic", np.array([[0.5, -1.0], [2.0, 1.5]])), scenario=SCENARIO),
        case("sin_times", "f(x) = sin(x0) x1 + x1^2 at [1, 2]",
             ("sin_times", np.array([1.0, 2.0])), scenario=SCENARIO),
        case("big_h", "f(x) = sum(x^3) with h = 0.01 given (its O(h^2) error shows)",
             ("cubic", np.array([1.0, -2.0, 3.0])), {"h": 1e-2}, scenario=SCENARIO),
        case("log_sum_exp", "f(x) = log sum exp(x) on a vector of 5",
             ("log_sum_exp", r.normal(size=5)), scenario=SCENARIO, hidden=True),
        case("quadratic", "f(x) = sum_k k x_k^2 on a 3 x 2 matrix",
             ("quadratic", r.normal(size=(3, 2))), scenario=SCENARIO, hidden=True),
        case("product", "f(x) = prod(x), h = 1e-3", ("product", r.normal(size=4)),
             {"h": 1e-3}, scenario=SCENARIO, hidden=True),
    ]


def _differences(f, x, h=1e-5, kind="central", restore=True):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        old = x.flat[k]
        x.flat[k] = old + h
        up = f(x.copy())
        if kind == "forward":
            x.flat[k] = old
            grad.flat[k] = (up - f(x.copy())) / h
            continue
        x.flat[k] = old - h
        down = f(x.copy())
        if restore:
            x.flat[k] = old
        grad.flat[k] = (up - down) / (h if kind == "by_h" else 2 * h)
    return grad


@EXERCISE.mistake("forward_difference",
                  "a one-sided difference (f(x + h) - f(x)) / h: its error is O(h), use the "
                  "central difference (f(x + h) - f(x - h)) / (2 h)")
def _forward(f, x, h=1e-5):
    return _differences(f, x, h, kind="forward")


@EXERCISE.mistake("divided_by_h",
                  "divided by h instead of 2 h: the two points x + h and x - h are 2 h apart")
def _by_h(f, x, h=1e-5):
    return _differences(f, x, h, kind="by_h")


@EXERCISE.mistake("not_restored",
                  "entry k was not put back after the two evaluations, so the later entries "
                  "are measured at a shifted point: restore x[k] = old")
def _not_restored(f, x, h=1e-5):
    return _differences(f, x, h, restore=False)


@EXERCISE.mistake("h_ignored", "the h argument was ignored (a fixed 1e-5 used): use the h passed in")
def _h_fixed(f, x, h=1e-5):
    return _differences(f, x, 1e-5)
