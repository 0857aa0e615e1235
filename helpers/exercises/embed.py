"""``embed`` (notebook 08_language_model): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _f, _ids


CONTRACT = Contract(
    args={"token_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True,
                           values=lambda rng, shape, dims: rng.integers(0, dims["V"], shape)),
          # the weights are arrays: E[token_ids] is right, and no case hands them in as lists
          "E": Arg("[V, d]"), "P": Arg("[n_ctx, d]")},
    returns=Arg("[N, d]"), where=("N <= n_ctx",), sizes={"n_ctx": (4, 5, 6, 8)})

EXERCISE = Exercise(
    'embed', reference.embed, contract=CONTRACT,
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""Row $i$ of the result is $E[w_i] + P[i]$: the row of the token's id, plus the row
of its position. Positions count from 0, so a sequence of $N$ tokens uses the first $N$
rows of $P$, whatever the length of $P$.""",
        r"""NumPy's integer-array indexing picks many rows at once: with `ids` of shape `[N]`,
`E[ids]` has shape `[N, d]`. Convert the ids first, so that a Python list works too.

```python
ids = np.asarray(token_ids, dtype=int)     # [N]
token_rows = ___                           # [N, d]
position_rows = ___                        # [N, d]: the first N rows of P
return ___
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(231)
    E5, P6 = np.round(r.normal(size=(5, 3)), 1) + 0.0, np.round(r.normal(size=(6, 3)), 1) + 0.0
    E9, P12 = r.normal(size=(9, 4)), r.normal(size=(12, 4))
    P_aaba = np.round(0.1 * np.arange(12.0).reshape(6, 2), 1)
    return [
        case("slides_aaba", "'A A B A' with one-hot token embeddings E and a small P (n_ctx = 6)",
             (ex.AABA_IDS, ex.AABA_E, P_aaba), group="slides"),
        case("repeats", "ids [3, 1, 4, 1] (a repeated id), V = 5, d = 3, n_ctx = 6",
             (np.array([3, 1, 4, 1]), E5, P6)),
        case("list_ids_3", "ids as a list [1, 3, 0], V = 5, n_ctx = 6", ([1, 3, 0], E5, P6)),
        case("list_ids", "ids as a list [2, 0], V = 5, n_ctx = 6", ([2, 0], E5, P6), hidden=True),
        case("full_context", "N = n_ctx = 6", (np.array([4, 4, 0, 2, 3, 1]), E5, P6),
             group="shapes", hidden=True),
        case("one_token", "a single token", (np.array([2]), E9, P12), group="shapes", hidden=True),
        case("large_vocab", "V = 9, n_ctx = 12, ids above n_ctx/2",
             (np.array([8, 7, 5, 8, 6], dtype=np.int32), E9, P12), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("positions_by_token_id",
                  "position embeddings were indexed by token id (P[ids]); position i uses P[i], "
                  "i.e. P[:N]")
def _embed_p_ids(token_ids, E, P):
    ids = _ids(token_ids)
    return _f(E)[ids] + _f(P)[ids]


@EXERCISE.mistake("no_positions", "the position embeddings are missing: X = E[ids] + P[:N]")
def _embed_no_p(token_ids, E, P):
    return _f(E)[_ids(token_ids)]


@EXERCISE.mistake("no_token_embeddings",
                  "the token embeddings are missing: X = E[ids] + P[:N]")
def _embed_no_e(token_ids, E, P):
    return _f(P)[: len(_ids(token_ids))]


@EXERCISE.mistake("positions_not_cropped",
                  "all n_ctx position rows were added; take the first N of them: P[:N]")
def _embed_p_full(token_ids, E, P):
    return _f(E)[_ids(token_ids)] + _f(P)


@EXERCISE.mistake("positions_off_by_one",
                  "positions start at 1 (P[1:N+1]); the first token uses P[0]")
def _embed_p_shift(token_ids, E, P):
    ids = _ids(token_ids)
    return _f(E)[ids] + _f(P)[1: len(ids) + 1]


@EXERCISE.mistake("concatenated",
                  "token and position embeddings were concatenated; they are added: E[ids] + P[:N]")
def _embed_concat(token_ids, E, P):
    ids = _ids(token_ids)
    return np.concatenate([_f(E)[ids], _f(P)[: len(ids)]], axis=1)

