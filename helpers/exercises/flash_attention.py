"""``flash_attention`` (notebook 13_inference): attention block by block, with the running
max and sum of the online softmax, never the whole score matrix."""

from __future__ import annotations

import numpy as np

from helpers import inference
from helpers.course import Arg, Contract, Exercise, draw, case


def _block(rng, shape, dims):
    return int(rng.integers(1, dims["n"] + 2))


CONTRACT = Contract(
    args={"Q": Arg("[n, d_k]", lists=True), "K": Arg("[n, d_k]", lists=True),
          "V": Arg("[n, d_v]", lists=True), "block_size": Arg(int, low=1, values=_block),
          "causal": Arg(bool, optional=True)},
    returns=Arg("[n, d_v]"), where=("n >= 1",),
    invariants=("equal to scaled_dot_product_attention (with the causal mask when causal)",
                "block_size need not divide n"))

EXERCISE = Exercise(
    "flash_attention", inference.flash_attention, contract=CONTRACT, uses=("causal_mask",),
    # the whole point is never to hold the full [n, n] scores: the full-matrix attention
    # (or a softmax of the whole score matrix) gives the same numbers, so a call of either
    # is refused rather than judged by its output (the notebook says: without them)
    forbid=("helpers:scaled_dot_product_attention",
            "helpers.reference:scaled_dot_product_attention", "helpers:softmax",
            "helpers.reference:softmax"),
    nan_hint="a row with no key yet has max -inf, and -inf - (-inf) is nan: subtract 0 "
    "instead where the running max is still -inf",
    difficulty=3, importance=3, minutes=30,
    hints=(
        r"""The online softmax, once per query row, with a third running quantity: the
unnormalised output $O = \sum_j e^{s_j - m} \boldsymbol{v}_j$. For each block of keys compute
the block's scores $S = Q K_b^\top / \sqrt{d_k}$ (masked with $-\infty$ where a key comes
after its query, when `causal`), the new max $m'$, and rescale **both** the old sum and the
old output by $e^{m - m'}$ before adding the block's share. Divide $O$ by $\ell$ at the end.""",
        r"""Keep `m` `[n, 1]` (start at `-np.inf`), `l` `[n, 1]` and `O` `[n, d_v]` (zeros).
Key `start + j` may be seen by query `i` when `start + j <= i`: build the block's mask from
`start + np.arange(b)` and `np.arange(n)[:, None]`. Where `m_new` is still `-inf` (a row
whose keys are all masked so far) subtract 0 instead, so no `-inf - (-inf)` appears.

```python
for start in range(0, n, block_size):
    s = ___                                   # [n, b]
    if causal:
        s = np.where(___, s, -np.inf)
    m_new = np.maximum(m, s.max(axis=1, keepdims=True))
    safe = np.where(np.isfinite(m_new), m_new, 0.0)
    scale = ___                               # [n, 1]
    e = ___                                   # [n, b]
    l = ___
    O = ___
    m = m_new
return O / l
```""",
    ),
)


@EXERCISE.cases
def cases():
    n = draw.normal
    return [
        case("divides", "n = 6 in blocks of 2, no mask (d_k = 3, d_v = 2)",
             (n(1331, (6, 3)), n(1332, (6, 3)), n(1333, (6, 2)), 2)),
        case("uneven", "n = 5 in blocks of 2 (the last block has one key), no mask",
             (n(1334, (5, 3)), n(1335, (5, 3)), n(1336, (5, 4)), 2)),
        case("causal", "n = 6 in blocks of 4, causal (the second block is shorter)",
             (n(1337, (6, 2)), n(1338, (6, 2)), n(1339, (6, 3)), 4), {"causal": True}),
        case("causal_blocks", "n = 5 in blocks of 2, causal",
             (n(1340, (5, 3), 2.0), n(1341, (5, 3), 2.0), n(1342, (5, 2)), 2),
             {"causal": True}),
        case("large", "scores in the hundreds, n = 4 in blocks of 3, causal",
             (n(1343, (4, 2), 20.0), n(1344, (4, 2), 20.0), n(1345, (4, 2)), 3),
             {"causal": True}, group="stability"),
        case("lists", "n = 3 given as lists, one block", ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
             [[0.5, 0.5], [1.0, -1.0], [0.0, 2.0]], [[1.0], [2.0], [3.0]], 3)),
        case("long", "n = 17 in blocks of 5, causal", (n(1346, (17, 4)), n(1347, (17, 4)),
             n(1348, (17, 3)), 5), {"causal": True}, hidden=True),
        case("long_free", "n = 12 in blocks of 5, no mask", (n(1349, (12, 2)), n(1350, (12, 2)),
             n(1351, (12, 2)), 5), hidden=True),
    ]


def _flash(Q, K, V, block_size, causal=False, *, rescale_output=True, offset=True,
           scale=True):
    """Flash attention with one knob per known mistake."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n, d_k = Q.shape
    m, l = np.full((n, 1), -np.inf), np.zeros((n, 1))
    O = np.zeros((n, V.shape[1]))
    rows = np.arange(n)[:, None]
    with np.errstate(all="ignore"):
        for start in range(0, K.shape[0], block_size):
            s = Q @ K[start:start + block_size].T / (np.sqrt(d_k) if scale else 1.0)
            cols = np.arange(s.shape[1]) + (start if offset else 0)
            if causal:
                s = np.where(cols <= rows, s, -np.inf)
            m_new = np.maximum(m, s.max(axis=1, keepdims=True))
            safe = np.where(np.isfinite(m_new), m_new, 0.0)
            factor = np.exp(m - safe)
            e = np.exp(s - safe)
            l = l * factor + e.sum(axis=1, keepdims=True)
            O = (O * factor if rescale_output else O) + e @ V[start:start + block_size]
            m = m_new
        return O / l


@EXERCISE.mistake("output_not_rescaled", "the running output was not rescaled when the max "
                  "grew: multiply O by exp(m_old - m_new), as the sum")
def _not_rescaled(Q, K, V, block_size, causal=False):
    return _flash(Q, K, V, block_size, causal, rescale_output=False)


@EXERCISE.mistake("mask_without_offset", "the causal mask compared the key's index inside its "
                  "block with the query's: key start + j is visible when start + j <= i")
def _no_offset(Q, K, V, block_size, causal=False):
    return _flash(Q, K, V, block_size, causal, offset=False)


@EXERCISE.mistake("causal_ignored", "causal=True was ignored: mask the keys after each query")
def _causal_ignored(Q, K, V, block_size, causal=False):
    return _flash(Q, K, V, block_size, False)


@EXERCISE.mistake("not_scaled", "the scores were not divided by sqrt(d_k)")
def _not_scaled(Q, K, V, block_size, causal=False):
    return _flash(Q, K, V, block_size, causal, scale=False)
