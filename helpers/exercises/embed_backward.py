"""``embed_backward`` (notebook 12_training): the gradients of X = E[ids] + P[:N]."""

from __future__ import annotations

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case, ids_below
from helpers.course.judge import nested_problem

PARTS = ("dE", "dP")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


CONTRACT = Contract(
    args={"token_ids": Arg("[..., N]", dtype="int", low=0, high="V - 1", lists=True,
                           values=ids_below("V")),
          "d_X": Arg("[..., N, d]"), "vocab_size": Arg("V"), "n_ctx": Arg("n_ctx")},
    returns=(Arg("[V, d]"), Arg("[n_ctx, d]")), batch=(0, 1), where=("N <= n_ctx",),
    sizes={"V": (2, 3, 5, 7), "n_ctx": (4, 5, 6, 8)}, invariants=("0 <= token_ids < V",))

EXERCISE = Exercise(
    "embed_backward", training.embed_backward, contract=CONTRACT, compare=_compare,
    refuse=("helpers.training.kernels:embed_back",),
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Row $i$ of $X$ is $E_{\mathrm{ids}[i]} + P_i$. So $dP_i = dX_i$ for the first $N$
positions (0 after them; summed over a batch), and row $v$ of $dE$ collects $dX_i$ from
*every* position $i$ whose id is $v$: a token that appears three times gets three
rows added.""",
        r"""`dE[ids] += dX` does not add repeated ids up (NumPy writes each index once);
`np.add.at` does.

```python
ids = np.asarray(token_ids)
dX = np.asarray(d_X, dtype=float)
d = dX.shape[-1]
dE = np.zeros((vocab_size, d))
np.add.at(dE, ___, ___)                     # flatten ids and dX's rows
dP = np.zeros((n_ctx, d))
dP[:ids.shape[-1]] = ___                    # summed over any batch dimension
return dE, dP
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1207)
    return [
        case("repeated", "ids [2, 0, 2, 2] (id 2 three times), V = 4, n_ctx = 6",
             ([2, 0, 2, 2], r.normal(size=(4, 3)), 4, 6)),
        case("batch", "a batch of 2 sequences [[1, 3, 1], [3, 3, 0]]: dP sums over the batch",
             (np.array([[1, 3, 1], [3, 3, 0]]), r.normal(size=(2, 3, 2)), 5, 3)),
        case("distinct", "distinct ids, N = n_ctx", ([4, 1, 0], r.normal(size=(3, 2)), 6, 3),
             hidden=True),
        case("batch_3", "a batch of 3", (r.integers(0, 3, (3, 5)), r.normal(size=(3, 5, 4)), 3,
                                         8), hidden=True),
    ]


def _variant(token_ids, d_X, vocab_size, n_ctx, fancy=False, batch="sum"):
    ids = np.asarray(token_ids)
    dX = np.asarray(d_X, dtype=float)
    d, N = dX.shape[-1], ids.shape[-1]
    dE = np.zeros((vocab_size, d))
    if fancy:
        dE[ids.reshape(-1)] += dX.reshape(-1, d)
    else:
        np.add.at(dE, ids.reshape(-1), dX.reshape(-1, d))
    dP = np.zeros((n_ctx, d))
    rows = dX.reshape(-1, N, d)
    dP[:N] = {"sum": rows.sum(axis=0), "first": rows[0], "mean": rows.mean(axis=0)}[batch]
    return dE, dP


@EXERCISE.mistake("fancy_index_add", "dE[ids] += dX keeps only one row per repeated id; use "
                  "np.add.at(dE, ids, dX) so repeated ids accumulate")
def _fancy(token_ids, d_X, vocab_size, n_ctx):
    return _variant(token_ids, d_X, vocab_size, n_ctx, fancy=True)


@EXERCISE.mistake("dP_first_sequence", "dP took only the first sequence of the batch: every "
                  "sequence used P, sum their rows")
def _first(token_ids, d_X, vocab_size, n_ctx):
    return _variant(token_ids, d_X, vocab_size, n_ctx, batch="first")


@EXERCISE.mistake("dP_mean", "dP is the mean over the batch; it is the sum")
def _mean(token_ids, d_X, vocab_size, n_ctx):
    return _variant(token_ids, d_X, vocab_size, n_ctx, batch="mean")


@EXERCISE.mistake("dP_not_padded", "dP must have n_ctx rows (zeros after position N), the shape "
                  "of P")
def _short(token_ids, d_X, vocab_size, n_ctx):
    dE, dP = _variant(token_ids, d_X, vocab_size, n_ctx)
    return dE, dP[:np.asarray(token_ids).shape[-1]]
