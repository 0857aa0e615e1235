"""``simple_self_attention`` (notebook 03_simple_self_attention): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _f, _naive_softmax, _simple


CONTRACT = Contract(args={"X": Arg("[N, d]", lists=True)}, returns=Arg("[N, d]"))

EXERCISE = Exercise('simple_self_attention', reference.simple_self_attention, contract=CONTRACT, uses=('pairwise_scores', 'softmax', 'simple_attention_weights'),
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""Row $i$ of the output is a weighted sum of the rows of $X$, $\sum_j \alpha_{ij}\mathbf{x}_j$,
with the weights of row $i$ of the weight matrix. A weighted sum of rows, for every $i$ at
once, is one matrix product.""",
        r"""Mind the order of the factors: `[N, N] @ [N, d] -> [N, d]`, the weights on the left.
`X @ weights` or `weights.T @ X` mixes the wrong rows (the check says so).

```python
weights = ___        # [N, N], each row sums to 1
return ___           # [N, d]
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("slides_cat", "the embeddings X of 'The cat sat <end>' (the slides' example)",
             (ex.CAT_X,), group="slides"),
        case("lists_3x2", "a list of 3 rows with d = 2 (N != d)",
             ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],), group="shapes"),
        case("large_visible", "large embeddings: a row of 40s (scores in the thousands)",
             ([[40.0, 0.0, 10.0], [0.0, 40.0, -10.0], [30.0, 30.0, 0.0]],), group="stability"),
        case("random_5x3", "5 random rows, d = 3", (draw.normal(31, (5, 3)),), hidden=True),
        case("wide_2x6", "2 rows, d = 6", (draw.normal(32, (2, 6)),), group="shapes", hidden=True),
        case("large", "large embeddings (scores in the thousands)", (draw.normal(33, (4, 4), 25.0),),
             group="stability", hidden=True),
        case("rows_scales", "rows at very different scales",
             (draw.normal(34, (4, 3)) * np.array([[0.01], [1.0], [10.0], [30.0]]),), group="stability",
             hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_scale", "scores were not divided by sqrt(d)")
def _simple_no_scale(X):
    return _simple(X, lambda X: 1.0)


@EXERCISE.mistake("scale_d", "scores were divided by d instead of sqrt(d)")
def _simple_scale_d(X):
    return _simple(X, lambda X: X.shape[1])


@EXERCISE.mistake("scale_sqrt_n",
                  "scores were divided by sqrt(N) (the number of tokens) instead of sqrt(d) (the width)")
def _simple_scale_n(X):
    return _simple(X, lambda X: np.sqrt(X.shape[0]))


@EXERCISE.mistake("softmax_axis_0",
                  "softmax taken over the wrong axis (axis 0), or the weights transposed "
                  "(weights.T @ X), which is the same here since X X^T is symmetric: each row of "
                  "weights must sum to 1, and the output is weights @ X")
def _simple_axis0(X):
    return _simple(X, lambda X: np.sqrt(X.shape[1]), axis=0)


@EXERCISE.mistake("returns_weights",
                  "returned the attention weights; the output is weights @ X")
def _simple_weights(X):
    return _simple(X, lambda X: np.sqrt(X.shape[1]), output="weights")


@EXERCISE.mistake("no_softmax",
                  "forgot the softmax: returned (X X^T / sqrt(d)) X")
def _simple_no_softmax(X):
    X = _f(X)
    return X @ X.T / np.sqrt(X.shape[1]) @ X


@EXERCISE.mistake("scores_not_transposed",
                  "computed the scores as X @ X; they are X @ X.T (row i against row j)")
def _simple_xx(X):
    X = _f(X)
    return reference.softmax(X @ X / np.sqrt(X.shape[1]), axis=-1) @ X


@EXERCISE.mistake("unstable_softmax",
                  "the softmax is not stable (exp overflowed): subtract the row maximum before exp")
def _simple_unstable(X):
    return _simple(X, lambda X: np.sqrt(X.shape[1]), softmax=_naive_softmax)


def _rows(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@trace.steps("simple_self_attention")
def _steps(X):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    X = np.asarray(X, dtype=float)
    raw = X @ np.swapaxes(X, -1, -2)
    scaled = raw / np.sqrt(X.shape[-1])
    weights = _rows(scaled)
    return [trace.Step("scores", "X Xᵀ / √d", scaled,
                       (("X Xᵀ: the 1/√d scaling is missing", raw),
                        ("X Xᵀ / √N: scaled by the number of tokens, not d",
                         raw / np.sqrt(X.shape[-2])))),
            trace.Step("weights", "softmax(scores) over each row (last axis)", weights,
                       (("softmax(X Xᵀ): the scaling is missing", _rows(raw)),
                        ("a softmax over the columns (axis -2), not the rows",
                         _rows(scaled, axis=-2)))),
            trace.Step("output", "weights X", weights @ X)]
