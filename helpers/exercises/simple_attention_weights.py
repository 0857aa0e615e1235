"""``simple_attention_weights`` (notebook 03_simple_self_attention): softmax(X X^T / sqrt(d))."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case


def simple_attention_weights(X):
    """Attention weights without learned parameters, row by row: softmax(X X^T / sqrt(d))."""
    X = np.asarray(X, dtype=np.float64)                          # [N, d]
    scores = X @ X.T / np.sqrt(X.shape[-1])                      # [N, N]
    return reference.softmax(scores, axis=-1)                    # rows sum to 1


CONTRACT = Contract(args={"X": Arg("[N, d]", lists=True)}, returns=Arg("[N, N]"))

EXERCISE = Exercise("simple_attention_weights", simple_attention_weights, contract=CONTRACT,
                    uses=("pairwise_scores", "softmax"),
                    refuse=("helpers.plots:simple_attention_weights",
                            "helpers.reference:simple_self_attention"),
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Three steps: every dot product at once, $X X^\top$ (shape `[N, N]`); divided by
$\sqrt{d}$, where $d$ is the length of one token vector; then a softmax along each row,
so that row $i$ says how token $i$ spreads its attention.""",
        r"""$d$ is `X.shape[-1]`, the softmax over each row is `axis=-1`, and `X.T` turns the rows
of `X` into columns:

```python
X = np.asarray(X, dtype=float)
d = ___
scores = ___                          # [N, N]
return helpers.softmax(___, axis=___)
```""",
    ),
)


@EXERCISE.cases
def cases():
    rng = draw.rng(3)
    return [
        case("cat", "weights of 'The cat sat <end>' (the slides' embeddings)", (ex.CAT_X,),
             group="slides"),
        case("n_ne_d", "a list of 3 rows, d = 2 (N != d)", ([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]],),
             group="shapes"),
        case("integers", "integers [[1, 0, 2], [0, 3, 1]]", ([[1, 0, 2], [0, 3, 1]],)),
        case("large", "large vectors (stability): entries around 20", (rng.normal(size=(4, 3))
                                                                        * 20.0,),
             group="stability"),
        case("large_hidden", "large vectors (stability), 5 rows", (rng.normal(size=(5, 3)) * 30.0,),
             group="stability", hidden=True),
        case("wide", "2 rows, d = 7", (rng.normal(size=(2, 7)),), group="shapes", hidden=True),
        case("constant_row", "X with a row of equal entries",
             (np.array([[1.0, 1.0, 1.0], [0.5, -1.0, 2.0]]),)),
        case("integers_hidden", "integers, 3 rows of 4", ([[2, 0, 1, 1], [0, 1, 0, 3],
                                                          [1, 1, 1, 1]],), hidden=True),
    ]


def _x(X):
    return np.asarray(X, dtype=np.float64)


@EXERCISE.mistake("no_scale", "the scores were not divided by sqrt(d)")
def _no_scale(X):
    X = _x(X)
    return reference.softmax(X @ X.T, axis=-1)


@EXERCISE.mistake("divides_by_d", "the scores were divided by d instead of sqrt(d)")
def _by_d(X):
    X = _x(X)
    return reference.softmax(X @ X.T / X.shape[-1], axis=-1)


@EXERCISE.mistake("scale_sqrt_N", "the scores were divided by sqrt(N) (the number of tokens); "
                  "the scale is sqrt(d), the width of a row")
def _by_sqrt_n(X):
    X = _x(X)
    return reference.softmax(X @ X.T / np.sqrt(X.shape[0]), axis=-1)


@EXERCISE.mistake("columns_sum_to_one", "the softmax went down the columns (axis=0): each row "
                  "of weights must sum to 1")
def _columns(X):
    X = _x(X)
    return reference.softmax(X @ X.T / np.sqrt(X.shape[-1]), axis=0)


@EXERCISE.mistake("gram_of_features", "X.T @ X compares features, not tokens: the scores are "
                  "X @ X.T, one row per token")
def _gram(X):
    X = _x(X)
    return reference.softmax(X.T @ X / np.sqrt(X.shape[-1]), axis=-1)


@EXERCISE.mistake("no_max_shift", "exp overflows without the max shift: subtract each row's "
                  "maximum before exp")
def _no_shift(X):
    X = _x(X)
    with np.errstate(all="ignore"):
        e = np.exp(X @ X.T / np.sqrt(X.shape[-1]))
        return e / e.sum(axis=-1, keepdims=True)


@EXERCISE.mistake("in_place_on_integers", "in-place arithmetic (`scores /= np.sqrt(d)`) on an "
                  "integer array: NumPy cannot store a float result in it; compute in floats "
                  "(np.asarray(X, dtype=float)) or write scores = scores / np.sqrt(d)")
def _in_place_on_integers(X):
    X = np.asarray(X)
    scores = X @ X.T                                 # integers for integer X
    scores /= np.sqrt(X.shape[1])                    # raises for an integer array
    return reference.softmax(scores, axis=-1)
