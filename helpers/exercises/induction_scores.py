"""``induction_scores`` (notebook 14_interpretability): how much each head attends from a
token in the second copy of a repeated sequence to the token after its earlier copy."""

from __future__ import annotations

import numpy as np

from helpers import interpretability
from helpers.course import Arg, Contract, Exercise, case, draw


def _patterns(seed: int, L: int, H: int, T: int) -> np.ndarray:
    """[L, H, 2T, 2T]: random causal attention patterns (rows sum to 1)."""
    scores = draw.normal(seed, (L, H, 2 * T, 2 * T), 2.0)
    scores = np.where(np.tril(np.ones((2 * T, 2 * T), dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _drawn_patterns(rng, shape, dims):
    """Random causal attention patterns of the drawn shape [L, H, N, N]."""
    L, H, N = shape[0], shape[1], shape[-1]
    return _patterns(int(rng.integers(1 << 30)), L, H, N // 2)


def _period(rng, shape, dims):
    return int(dims["N"] // 2)


CONTRACT = Contract(
    args={"patterns": Arg("[L, H, N, N]", lists=True, low=0.0, high=1.0,
                          values=_drawn_patterns),
          "period": Arg(int, low=1, values=_period)},
    returns=Arg("[L, H]"),
    sizes={"N": (2, 4, 6, 8)}, where=("N % 2 == 0",),
    invariants=("N == 2 * period: the sequence is one copy of period tokens, then another",
                "a head that always attends to the token after the earlier copy scores 1"))

EXERCISE = Exercise(
    "induction_scores", interpretability.induction_scores, contract=CONTRACT,
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""The sequence is $t_0 \dots t_{T-1}$ then the same $T$ tokens again. Token $i$ of
the second copy ($i \ge T$) first appeared at $i - T$; an induction head looks at what came
**after** that earlier copy, position $i - T + 1$, to predict what comes next. The score of a
head is its attention weight on that position, averaged over the $T$ rows of the second copy.""",
        r"""Fancy indexing picks one entry per row: with `rows = np.arange(T, 2 * T)`,
`P[..., rows, cols]` is `[L, H, T]` when `cols` has the same length as `rows`.

```python
P = np.asarray(patterns, dtype=float)   # [L, H, 2T, 2T]
rows = np.arange(period, 2 * period)    # the second copy
cols = ___                              # the token after each earlier copy
return P[..., rows, cols].mean(axis=-1) # [L, H]
```""",
    ),
)


def _ideal(L: int, H: int, T: int, head: tuple[int, int]) -> np.ndarray:
    """Uniform causal patterns, except one head that attends only to i - T + 1 from the
    second copy on: that head scores 1, the others 1 / (i + 1) on average."""
    n = 2 * T
    P = np.tril(np.ones((n, n)))
    P = np.broadcast_to(P / P.sum(axis=-1, keepdims=True), (L, H, n, n)).copy()
    rows = np.arange(T, n)
    P[head][rows] = 0.0
    P[head][rows, rows - T + 1] = 1.0
    return P


@EXERCISE.cases
def cases():
    uniform_t3 = np.mean([1 / (i + 1) for i in range(3, 6)])      # rows 3, 4, 5
    want = np.full((2, 2), uniform_t3)
    want[1, 0] = 1.0
    return [
        case("one_induction_head", "2 layers x 2 heads, period 3: head (1, 0) attends only "
             "to the token after the earlier copy, the others uniformly",
             (_ideal(2, 2, 3, (1, 0)), 3), expected=want),
        case("previous_token_head", "1 layer, 1 head that attends to the previous token "
             "(i - 1): not an induction head, period 4",
             (np.eye(8, k=-1)[None, None] + np.eye(8)[None, None] * (np.arange(8) == 0)[:, None],
              4),
             expected=np.zeros((1, 1))),
        case("random", "random causal patterns, 3 layers x 4 heads, period 5",
             (_patterns(1401, 3, 4, 5), 5)),
        case("random_hidden", "random causal patterns, 2 layers x 3 heads, period 6",
             (_patterns(1402, 2, 3, 6), 6), hidden=True),
        case("one_induction_head_hidden", "3 layers x 2 heads, period 4: head (2, 1) is the "
             "induction head", (_ideal(3, 2, 4, (2, 1)), 4), hidden=True),
    ]


def _second_copy(patterns, period):
    return np.asarray(patterns, dtype=np.float64), np.arange(period, 2 * period)


@EXERCISE.mistake("earlier_copy_itself", "the attention to the earlier copy of the token "
                  "(i - period) was scored: an induction head looks one further, at the "
                  "token that came after it (i - period + 1)")
def _copy_itself(patterns, period):
    P, rows = _second_copy(patterns, period)
    return P[..., rows, rows - period].mean(axis=-1)


@EXERCISE.mistake("every_row", "rows of the first copy were averaged too: only the second "
                  "copy (rows period .. 2 period - 1) has an earlier copy to look back at")
def _every_row(patterns, period):
    P = np.asarray(patterns, dtype=np.float64)
    rows = np.arange(1, 2 * period)
    return P[..., rows, np.maximum(rows - period + 1, 0)].mean(axis=-1)


@EXERCISE.mistake("summed", "the scores were summed over the second copy: the score is the "
                  "mean (a perfect induction head scores 1)")
def _summed(patterns, period):
    P, rows = _second_copy(patterns, period)
    return P[..., rows, rows - period + 1].sum(axis=-1)


@EXERCISE.mistake("columns_attend", "rows and columns were swapped (P[..., j, i]): a row is "
                  "the position that attends, a column the one attended to")
def _transposed(patterns, period):
    P, rows = _second_copy(patterns, period)
    return P[..., rows - period + 1, rows].mean(axis=-1)
