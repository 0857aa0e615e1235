"""``causal_padding_mask`` (notebook 05_masking_cross_attention): causal, padding keys off."""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, case, trace


def causal_padding_mask(n, n_real):
    """bool [n, n]: True where key j <= query i and j < n_real (the last n - n_real
    positions are padding)."""
    positions = np.arange(n)
    causal = positions[None, :] <= positions[:, None]             # [n, n]
    real_key = positions < n_real                                  # [n]
    return causal & real_key[None, :]                              # [n, n]


CONTRACT = Contract(args={"n": Arg("n"), "n_real": Arg("n_real")},
                    returns=Arg("[n, n]", dtype="bool"), where=("n_real <= n",),
                    sizes={"n": (1, 2, 3, 4, 5, 6), "n_real": (1, 2, 3, 4, 5)},
                    dtype_judged=True)

EXERCISE = Exercise("causal_padding_mask", causal_padding_mask, contract=CONTRACT, output="mask",
                    uses=("causal_mask",),
    difficulty=2, importance=1, minutes=10,
    hints=(
        r"""Two conditions, both on the key $j$ (the column): the causal one, $j \le i$, and "is a
real token", $j < n_{real}$. A key is allowed when both hold. Rows of padding queries still
see the real keys, so no row is empty.""",
        r"""Build two boolean arrays and combine them with `&`: the causal mask of shape `[n, n]`
and a row of shape `[n]` that is `True` for the real keys. Broadcasting a row over a square
matrix applies it to every query.

```python
causal = ___                # [n, n]
real_key = ___              # [n], True where j < n_real
return ___ & ___            # [n, n]
```""",
    ),
)


@EXERCISE.cases
def cases():
    T, F = True, False
    return [
        case("n4_real2", "causal_padding_mask(4, 2): two real tokens, two of padding", (4, 2),
             expected=np.array([[T, F, F, F], [T, T, F, F], [T, T, F, F], [T, T, F, F]])),
        case("no_padding", "causal_padding_mask(3, 3), no padding: the causal mask", (3, 3),
             expected=np.array([[T, F, F], [T, T, F], [T, T, T]])),
        case("n6_real5", "causal_padding_mask(6, 5): one position of padding", (6, 5)),
        case("n5_real1", "causal_padding_mask(5, 1)", (5, 1), hidden=True,
             expected=np.array([[T, F, F, F, F]] * 5)),
        case("n1_real1", "causal_padding_mask(1, 1)", (1, 1), hidden=True),
        case("n6_real4", "causal_padding_mask(6, 4)", (6, 4), hidden=True),
        case("n7_real3", "causal_padding_mask(7, 3)", (7, 3), hidden=True),
    ]


def _pos(n):
    p = np.arange(n)
    return p[None, :], p[:, None]                                  # j (keys), i (queries)


@EXERCISE.mistake("padding_ignored", "the padding was ignored: keys j >= n_real must be False "
                  "in every row")
def _padding_ignored(n, n_real):
    j, i = _pos(n)
    return j <= i


@EXERCISE.mistake("pads_query_rows", "the padding was applied to the query rows; it is the KEYS "
                  "(columns) j >= n_real that no query may see")
def _rows(n, n_real):
    j, i = _pos(n)
    return (j <= i) & (i < n_real)


@EXERCISE.mistake("pads_rows_and_columns", "the padding rows were blanked too: only the padding "
                  "KEYS (columns) are masked; padding queries still see the real tokens")
def _both(n, n_real):
    j, i = _pos(n)
    return (j <= i) & (i < n_real) & (j < n_real)


@EXERCISE.mistake("strict_diagonal", "j < i leaves out the diagonal: a token may attend to "
                  "itself (j <= i)")
def _strict(n, n_real):
    j, i = _pos(n)
    return (j < i) & (j < n_real)


@EXERCISE.mistake("transposed", "the mask is transposed (upper triangle): query i sees keys "
                  "j <= i, the lower triangle")
def _upper(n, n_real):
    j, i = _pos(n)
    return (j >= i) & (j < n_real)


@EXERCISE.mistake("n_real_off_by_one", "one key too many or too few: the real keys are "
                  "j = 0 .. n_real - 1 (j < n_real)")
def _off_by_one(n, n_real):
    j, i = _pos(n)
    return (j <= i) & (j <= n_real)


@trace.steps("causal_padding_mask")
def _steps(n, n_real):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    i = np.arange(n)
    causal = i[None, :] <= i[:, None]
    real = i < n_real
    return [trace.Step("mask", "causal (key j <= query i) and only real keys "
                       "(columns j < n_real)", causal & real[None, :],
                       (("the padded query rows masked too (padding is a matter of keys, "
                         "the columns, only)", causal & real[:, None]),
                        ("the padded rows and columns both masked (padding is a matter of "
                         "keys, the columns, only)", causal & real[:, None] & real[None, :])))]
