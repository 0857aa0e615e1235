"""``split_heads`` (notebook 06_multi_head_attention): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _f


CONTRACT = Contract(args={"X": Arg("[N, d]", lists=True), "n_heads": Arg("n_heads")},
                    returns=Arg("[n_heads, N, d_h]"), where=("d % n_heads == 0",),
                    serves={"X": "[..., N, d]"},
                    sizes={"d": (2, 4, 6, 8), "n_heads": (1, 2, 3, 4)})

EXERCISE = Exercise(
    'split_heads', reference.split_heads, contract=CONTRACT,
    refuse=("helpers.llama.model:_split_heads", "helpers.training.kernels:split"),   # its float32 fast path (issue 23)
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Head $c$ owns the column block `X[:, c*d_h:(c+1)*d_h]`, of width $d_h = d / h$.
The result stacks these blocks along a new first axis, so that its slice `[c]` is head
$c$'s block: $h$ matrices of shape `[N, d_h]`. Beware of `X.reshape(n_heads, N, d_h)` in
one step: the shape is right, but it reads the numbers row after row, so each "head"
would receive whole rows of `X` instead of a block of columns.""",
        r"""Two routes. A reshape keeps every row's numbers together and groups its $d$ columns
into `n_heads` groups of `d_h`; a transpose then moves the head axis to the front:

```python
X = np.asarray(X, dtype=float)
N, d = X.shape
d_h = ___
grouped = X.reshape(N, ___, ___)     # [N, n_heads, d_h]
return grouped.transpose(___)        # [n_heads, N, d_h]
```""",
        r"""Or a loop over the heads that collects the blocks, then one `np.stack`; the
slice and the axis are yours:

```python
X = np.asarray(X, dtype=float)
d_h = X.shape[1] // n_heads
blocks = [X[:, ___] for c in range(n_heads)]     # each [N, d_h]
return np.stack(blocks, axis=___)                # [n_heads, N, d_h]
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("arange_4x6_h2", "X = arange(24) as 4x6, n_heads = 2",
             (np.arange(24.0).reshape(4, 6), 2)),
        case("lists_3x4_h2", "a list of 3 rows, d = 4, n_heads = 2",
             ([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], 2)),
        case("h3", "5x6, n_heads = 3", (draw.normal(121, (5, 6)), 3), group="heads", hidden=True),
        case("h4", "3x8, n_heads = 4", (draw.normal(122, (3, 8)), 4), group="heads", hidden=True),
        case("h1", "2x4, n_heads = 1 (one head holds everything)", (draw.normal(123, (2, 4)), 1),
             group="heads", hidden=True),
        case("dh1", "3x4, n_heads = 4 (d_h = 1)", (draw.normal(124, (3, 4)), 4), group="heads",
             hidden=True),
        case("h2_square", "2x4, n_heads = 2 (N equals n_heads)", (draw.normal(125, (2, 4)), 2),
             hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("reshape_without_transpose",
                  "reshaped [N, d] straight to [n_heads, N, d_h]: that mixes rows of different tokens. "
                  "Reshape to [N, n_heads, d_h], then swap the first two axes")
def _split_reshape(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(n_heads, N, d // n_heads)


@EXERCISE.mistake("no_swap",
                  "returned [N, n_heads, d_h]: swap the first two axes to get [n_heads, N, d_h]")
def _split_no_swap(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(N, n_heads, d // n_heads)


@EXERCISE.mistake("interleaved",
                  "head c took every n_heads-th column (c, c + n_heads, ...); it takes the block of "
                  "columns c*d_h : (c+1)*d_h")
def _split_interleaved(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(N, d // n_heads, n_heads).transpose(2, 0, 1)


@EXERCISE.mistake("split_rows",
                  "split the rows (tokens) instead of the columns (features): every head sees all "
                  "tokens and d_h of the columns")
def _split_rows(X, n_heads):
    return np.stack(np.split(_f(X), n_heads, axis=0))


@EXERCISE.mistake("heads_transposed",
                  "each head came out transposed, [d_h, N]; it should be [N, d_h]")
def _split_heads_t(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(N, n_heads, d // n_heads).transpose(1, 2, 0)

