"""``merge_heads`` (notebook 06_multi_head_attention): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _f


CONTRACT = Contract(args={"H": Arg("[n_heads, N, d_h]", lists=True)}, returns=Arg("[N, d]"),
                    serves={"H": "[..., n_heads, N, d_h]"})

EXERCISE = Exercise(
    'merge_heads', reference.merge_heads, contract=CONTRACT,
    refuse=("helpers.llama.model:_merge_heads", "helpers.training.kernels:merge"),   # its float32 fast path (issue 23)
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""The inverse of `split_heads`: row $i$ of the result is head 0's row $i$, then head
1's row $i$, and so on, side by side,
$\text{head}^0_i \oplus \text{head}^1_i \oplus \dots$. Head $c$ lands in the columns
`c*d_h` to `(c+1)*d_h - 1`. Reshaping `H` straight to `[N, n_heads * d_h]` has the right
shape and the wrong order.""",
        r"""Undo the two steps of `split_heads` in reverse order: first a transpose that puts
the heads second, `[N, n_heads, d_h]`, then a reshape that joins the last two axes.
(`np.concatenate` of the list of heads along the last axis is another way.)

```python
H = np.asarray(H, dtype=float)
n_heads, N, d_h = H.shape
per_token = H.transpose(___)     # [N, n_heads, d_h]
return per_token.reshape(___)    # [N, n_heads * d_h]
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("arange_2x4x3", "H = arange(24) as 2 heads x 4 tokens x 3",
             (np.arange(24.0).reshape(2, 4, 3),)),
        case("lists_2x3x2", "nested lists: 2 heads, 3 tokens, d_h = 2",
             ([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]],)),
        case("h3", "3 heads x 5 tokens x 2", (draw.normal(131, (3, 5, 2)),), group="heads",
             hidden=True),
        case("h1", "1 head x 3 tokens x 4", (draw.normal(132, (1, 3, 4)),), group="heads",
             hidden=True),
        case("h4", "4 heads x 2 tokens x 2", (draw.normal(133, (4, 2, 2)),), group="heads",
             hidden=True),
        case("h2_square", "2 heads x 2 tokens x 3", (draw.normal(134, (2, 2, 3)),), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("reshape_without_transpose",
                  "reshaped [n_heads, N, d_h] straight to [N, n_heads*d_h]: that mixes tokens. "
                  "Swap the first two axes first (to [N, n_heads, d_h]), then reshape")
def _merge_reshape(H):
    H = _f(H)
    h, N, d_h = H.shape
    return H.reshape(N, h * d_h)


@EXERCISE.mistake("concatenate_rows",
                  "concatenated the heads below each other (axis 0); put them side by side (columns)")
def _merge_rows(H):
    return np.concatenate(list(_f(H)), axis=0)


@EXERCISE.mistake("interleaved",
                  "interleaved the heads' columns; head c's columns are the block c*d_h : (c+1)*d_h")
def _merge_interleaved(H):
    H = _f(H)
    h, N, d_h = H.shape
    return H.transpose(1, 2, 0).reshape(N, h * d_h)


@EXERCISE.mistake("sum_heads", "added the heads up; concatenate them side by side instead")
def _merge_sum(H):
    return _f(H).sum(axis=0)


@EXERCISE.mistake("mean_heads", "averaged the heads; concatenate them side by side instead")
def _merge_mean(H):
    return _f(H).mean(axis=0)

