"""``mean_pool`` (notebook 09_sentence_encoder): the mean of the real tokens' vectors."""

from __future__ import annotations

import numpy as np

from helpers import bert
from helpers.course import Arg, Contract, Exercise, draw, case, trace

CONTRACT = Contract(
    args={"h": Arg("[..., N, d]", lists=True),
          "key_mask": Arg("[..., N]", dtype=("bool", "int"), lists=True)},
    returns=Arg("[..., d]"), batch=(0, 1),
    invariants=("every sentence has at least one real token",))

EXERCISE = Exercise("mean_pool", bert.mean_pool, contract=CONTRACT,
                    refuse=("helpers.bert:sentence_embeddings", "helpers.bert:encode"),
                    near_miss="is every real token counted once, and nothing else?",
                    difficulty=1, importance=3, minutes=10,
                    hints=(
                        r"""A mean in which padding has weight 0: multiply each token's
vector by its mask value $m_i$ (1 for a real token, 0 for `[PAD]`), add over the tokens, and
divide by the number of real tokens $\sum_i m_i$, not by $N$. Padding must count neither
above nor below the fraction bar.""",
                        r"""The tokens are the second-to-last axis of `h` (`[..., N, d]`).
Give the mask a last axis of length 1 so that it broadcasts over the $d$ features, then sum
numerator and denominator over the token axis:

```python
h = np.asarray(h, dtype=float)
m = np.asarray(key_mask, dtype=float)[..., None]     # [..., N, 1]: 1 real, 0 padding
return ___ / ___                                     # both summed over axis=-2: [..., d]
```""",
                    ))


@EXERCISE.cases
def cases():
    rng = draw.rng(909)
    visible = [
        case("worked_example", "h = [[1, 2], [3, 0], [9, 9]], key_mask = [True, True, False]: "
             "the mean of the first two rows", ([[1.0, 2.0], [3.0, 0.0], [9.0, 9.0]],
                                                [True, True, False]),
             group="slides", expected=np.array([2.0, 1.0])),
        case("one_sentence", "one sentence h [4, 3], all tokens real",
             (rng.normal(size=(4, 3)), np.ones(4, dtype=bool))),
        case("padded_batch", "a batch h [2, 4, 3], the 2nd sentence padded after 2 tokens",
             (rng.normal(size=(2, 4, 3)), np.array([[True] * 4, [True] * 2 + [False] * 2])),
             group="mask"),
        case("int_mask", "a batch h [2, 3, 2] with key_mask given as 0/1 integers",
             (rng.normal(size=(2, 3, 2)), np.array([[1, 1, 0], [1, 0, 0]])), group="mask"),
        case("large_padding_2", "a batch h [2, 3, 2] with padding values ~1e5, key_mask as 0/1",
             (np.where(np.array([[1, 1, 0], [1, 0, 0]])[..., None] > 0, 1.0, 1e5)
              * rng.normal(size=(2, 3, 2)), np.array([[1, 1, 0], [1, 0, 0]])), group="mask"),
    ]
    rng = draw.rng(910)
    mask = np.array([[1, 1, 1, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 0, 0]])
    hidden = [
        case("large_padding", "a batch h [3, 5, 6] with large padding values, key_mask as 0/1",
             (np.where(mask[..., None] > 0, 1.0, 1e6) * rng.normal(size=(3, 5, 6)), mask),
             group="mask", hidden=True),
    ]
    return visible + hidden


def _hm(h, key_mask):
    h = np.asarray(h, dtype=np.float64)
    return h, np.asarray(key_mask, dtype=np.float64)[..., None]       # [..., N, d], [..., N, 1]


@EXERCISE.mistake("padding_included", "the mean includes the padding positions: average only "
                  "where key_mask is True")
def _with_padding(h, key_mask):
    return _hm(h, key_mask)[0].mean(axis=-2)


@EXERCISE.mistake("sum", "a sum, not a mean: divide by the number of real tokens")
def _sum(h, key_mask):
    h, m = _hm(h, key_mask)
    return (h * m).sum(axis=-2)


@EXERCISE.mistake("divided_by_n", "the real tokens were summed but divided by N (all positions, "
                  "padding included)")
def _by_n(h, key_mask):
    h, m = _hm(h, key_mask)
    return (h * m).sum(axis=-2) / h.shape[-2]


@EXERCISE.mistake("first_token", "this is the first token's vector, not the mean")
def _first(h, key_mask):
    return _hm(h, key_mask)[0][..., 0, :]


@trace.steps("mean_pool")
def _steps(h, key_mask):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    h = np.asarray(h, dtype=float)
    m = np.asarray(key_mask, dtype=float)[..., None]
    total, count = (h * m).sum(axis=-2), m.sum(axis=-2)
    with np.errstate(all="ignore"):
        return [trace.Step("masked sum", "the sum of the real tokens' vectors (over the "
                           "tokens, axis -2)", total,
                           (("the sum of every token's vector, padding included",
                             h.sum(axis=-2)),)),
                trace.Step("output", "that sum over the number of real tokens",
                           total / np.maximum(count, 1e-9),
                           (("the sum over all N positions, padding included",
                             total / h.shape[-2]),
                            ("the mean over every position, padding included",
                             h.mean(axis=-2))))]
