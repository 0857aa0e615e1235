"""``pairwise_scores`` (notebook 01_dot_products): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _f


CONTRACT = Contract(args={"X": Arg("[N, d]", lists=True)}, returns=Arg("[N, N]"))

EXERCISE = Exercise('pairwise_scores', reference.pairwise_scores, contract=CONTRACT, uses=('dot',),
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Entry $(i, j)$ pairs row $i$ of $X$ with row $j$ of $X$. A matrix product `A @ B`
pairs the rows of `A` with the *columns* of `B`: which matrix has the rows of $X$ as its
columns?""",
        r"""The transpose `X.T` has shape `[d, N]`, and `[N, d] @ [d, N]` gives `[N, N]`. Convert a
list input with `np.asarray(X, dtype=float)` first. The loop version, if you start there:

```python
X = np.asarray(X, dtype=float)
N = X.shape[0]
S = np.zeros((N, N))
for i in range(N):
    for j in range(N):
        S[i, j] = ___
return S
```""",
    ),
)


@EXERCISE.cases
def cases():
    X_scales = draw.normal(13, (4, 3)) * np.array([[1e-2], [1.0], [1e2], [1e3]])
    return [
        case("slides_cat", "the embeddings X of 'The cat sat <end>' (4 tokens, d = 4)",
             (ex.CAT_X,), group="slides"),
        case("lists_3x2", "a list of 3 rows with d = 2 (N != d)", ([[1, 2], [3, -4], [5, 6]],),
             group="shapes"),
        case("random_5x3", "5 random rows, d = 3", (draw.normal(11, (5, 3)),), hidden=True),
        case("wide_2x6", "2 rows, d = 6", (draw.normal(12, (2, 6)),), group="shapes", hidden=True),
        case("row_scales", "rows at scales 1, 10 and 300",
             (draw.normal(14, (3, 2)) * np.array([[1.0], [10.0], [300.0]]),), group="scales"),
        case("scales", "rows at very different scales (1e-2 to 1e3)", (X_scales,), group="scales",
             hidden=True),
        case("one_row", "a single row", (np.array([[1.5, -2.0, 0.5]]),), group="shapes",
             hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("gram_of_columns",
                  "computed X.T @ X (columns against columns); the scores between rows are X @ X.T")
def _pair_xtx(X):
    X = _f(X)
    return X.T @ X


@EXERCISE.mistake("x_times_x",
                  "computed X @ X; the second factor must be transposed: X @ X.T")
def _pair_xx(X):
    X = _f(X)
    return X @ X


@EXERCISE.mistake("elementwise",
                  "computed X * X (entry by entry); the scores are the matrix product X @ X.T")
def _pair_elementwise(X):
    X = _f(X)
    return X * X


@EXERCISE.mistake("cosine",
                  "normalised the rows (cosine similarities); the scores are plain dot products")
def _pair_cosine(X):
    X = _f(X)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / n) @ (X / n).T


@EXERCISE.mistake("scaled",
                  "divided by sqrt(d): that scaling belongs to attention, not to the raw scores")
def _pair_scaled(X):
    X = _f(X)
    return X @ X.T / np.sqrt(X.shape[1])


@EXERCISE.mistake("softmaxed",
                  "applied a softmax: the scores are the raw dot products, before any softmax")
def _pair_softmaxed(X):
    X = _f(X)
    return reference.softmax(X @ X.T, axis=-1)


@EXERCISE.mistake("upper_triangle_only",
                  "only the pairs j >= i were filled in (the loop started at i); the matrix is "
                  "symmetric, S[j, i] = S[i, j], so fill both halves")
def _pair_upper(X):
    X = _f(X)
    return np.triu(X @ X.T)

