"""``linear_backward`` (notebook 12_training): the gradients of y = x W + b."""

from __future__ import annotations

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.judge import nested_problem

PARTS = ("dx", "dW", "db")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


CONTRACT = Contract(
    args={"x": Arg("[..., n_in]"), "W": Arg("[n_in, n_out]"), "d_out": Arg("[..., n_out]")},
    returns=(Arg("[..., n_in]"), Arg("[n_in, n_out]"), Arg("[n_out]")), batch=(1, 2),
    invariants=("d_out has the leading axes of x",))

EXERCISE = Exercise(
    "linear_backward", training.linear_backward, contract=CONTRACT, compare=_compare,
    refuse=("helpers.training.kernels:linear_back",),
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Each gradient has the shape of what it is the gradient of: `dx` like `x`, `dW`
like `W`, `db` like `b`. $y_{ij} = \sum_k x_{ik} W_{kj} + b_j$, so $x_{ik}$ reaches every
$y_{ij}$ through $W_{kj}$ ($dx = dy\,W^T$), $W_{kj}$ reaches $y_{ij}$ through $x_{ik}$ for
every row $i$ ($dW = x^T dy$, summed over the rows), and $b_j$ is added to every row.""",
        r"""With leading batch dimensions, flatten them to rows first: every row used the same
`W` and `b`, so their gradients sum over all rows.

```python
x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
x_rows = x.reshape(-1, x.shape[-1])                     # [rows, d_in]
dy_rows = dy.reshape(-1, dy.shape[-1])                  # [rows, d_out]
dx = ___                                                # [..., d_in]
dW = ___                                                # [d_in, d_out]
db = ___                                                # [d_out]
return dx, dW, db
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1203)
    return [
        case("square", "x [3, 3], W [3, 3] (square: a transpose does not show in the shapes)",
             (r.normal(size=(3, 3)), r.normal(size=(3, 3)), r.normal(size=(3, 3)))),
        case("tall", "x [4, 2], W [2, 3]",
             (r.normal(size=(4, 2)), r.normal(size=(2, 3)), r.normal(size=(4, 3)))),
        case("batch", "a batch: x [2, 3, 4], W [4, 2]: dW and db sum over all 6 rows",
             (r.normal(size=(2, 3, 4)), r.normal(size=(4, 2)), r.normal(size=(2, 3, 2)))),
        case("one_row", "a single row", (r.normal(size=(1, 5)), r.normal(size=(5, 5)),
                                         r.normal(size=(1, 5))), hidden=True),
        case("batch_square", "a batch [3, 2, 3], W [3, 3]",
             (r.normal(size=(3, 2, 3)), r.normal(size=(3, 3)), r.normal(size=(3, 2, 3))),
             hidden=True),
        case("mixed_scales", "x [3, 4], W [4, 2]; d_out of the first row 1e10 times the others",
             _mixed_scales(draw.rng(1217))),
    ]


def _mixed_scales(r):
    """x, W and a d_out whose first row is 1e10 times larger than the others: a sum of
    d_out times the output is then too large for central differences to see the other
    rows move, for any step (the analytic gradient is as exact as anywhere)."""
    x, W, d_out = r.normal(size=(3, 4)), r.normal(size=(4, 2)), r.normal(size=(3, 2))
    d_out[0] *= 1e10
    return x, W, d_out


def _rows(a):
    a = np.asarray(a, dtype=float)
    return a.reshape(-1, a.shape[-1])


@EXERCISE.mistake("numerical_gradient", "numerical, not analytic, gradient: central differences of the forward pass agree with the analytic gradient only where they are well conditioned; with one entry or row of d_out 1e10 times the others, the loss is so large that a step h moves it by less than its rounding. Write the derivative itself (the chain rule), not (f(x + h) - f(x - h)) / 2h")
def _numerical(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    loss = lambda x_, W_: np.sum(dy * (x_ @ W_))                            # noqa: E731
    return (training.numerical_gradient(lambda x_: loss(x_, W), x),
            training.numerical_gradient(lambda W_: loss(x, W_), W), _rows(dy).sum(axis=0))


@EXERCISE.mistake("W_not_transposed", "dx used W instead of its transpose: dx = d_out W^T")
def _w_not_t(x, W, d_out):
    W, dy = np.asarray(W, dtype=float), np.asarray(d_out, dtype=float)
    return dy @ W, _rows(x).T @ _rows(dy), _rows(dy).sum(axis=0)


@EXERCISE.mistake("dW_transposed", "dW came out transposed (d_out^T x): dW = x^T d_out has "
                  "W's shape [d_in, d_out]")
def _dw_t(x, W, d_out):
    W, dy = np.asarray(W, dtype=float), np.asarray(d_out, dtype=float)
    return dy @ W.T, _rows(dy).T @ _rows(x), _rows(dy).sum(axis=0)


@EXERCISE.mistake("db_mean", "db is the mean of d_out over the rows; b is added to every row, "
                  "so its gradient is the sum")
def _db_mean(x, W, d_out):
    W, dy = np.asarray(W, dtype=float), np.asarray(d_out, dtype=float)
    return dy @ W.T, _rows(x).T @ _rows(dy), _rows(dy).mean(axis=0)


@EXERCISE.mistake("db_not_summed", "db is d_out itself; sum it over the rows (axis 0, and over "
                  "any batch dimension)")
def _db_raw(x, W, d_out):
    W, dy = np.asarray(W, dtype=float), np.asarray(d_out, dtype=float)
    return dy @ W.T, _rows(x).T @ _rows(dy), dy


@EXERCISE.mistake("rank_2_only", "written for one rank only (x.T @ d_out, d_out.sum(axis=0)): "
                  "x may have batch axes [..., n_in]; flatten them to rows first "
                  "(x.reshape(-1, x.shape[-1])), then dW = x_rows^T dy_rows, db = dy_rows.sum(0)")
def _rank_2_only(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    return dy @ W.T, x.T @ dy, dy.sum(axis=0)
