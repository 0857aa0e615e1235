"""``grouped_query_attention`` (notebook 10_modern_llm): causal attention in which groups
of query heads share a key/value head."""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._llama_variants import gqa_variant
from helpers.llama import model

CONTRACT = Contract(
    args={"Q": Arg("[n_heads, N_q, d_h]", lists=True),
          "K": Arg("[n_kv_heads, N_k, d_h]", lists=True),
          "V": Arg("[n_kv_heads, N_k, d_h]", lists=True)},
    returns=Arg("[n_heads, N_q, d_h]"),
    where=("n_heads % n_kv_heads == 0", "N_q <= N_k"),
    sizes={"n_heads": (1, 2, 4, 6), "n_kv_heads": (1, 2, 3)},
    invariants=("the queries are the last N_q of the N_k positions (causal)",))

EXERCISE = Exercise("grouped_query_attention", model.grouped_query_attention, contract=CONTRACT,
                    uses=("softmax", "scaled_dot_product_attention"),
                    refuse=("helpers.llama.model:repeat_kv", "helpers.llama.model:_gqa_float32",
                            "helpers.exercises._llama_variants:gqa_variant"),
                    difficulty=2, importance=3, minutes=20,
                    hints=(
                        r"""Two ideas. (1) Give every query head its own copy of its
group's key/value head: with $r = h / h_{kv}$ query heads per group, key/value head $g$ is
used by query heads $gr, \dots, gr + r - 1$, so repeat each head $r$ times **in place**
($k_0, k_0, k_0, k_1, \dots$). Then it is the multi-head attention of notebook 06. (2) The
queries are the **last** $N_q$ of the $N_k$ positions: query $i$ sits at $N_k - N_q + i$
and may see key $j$ when $j \le N_k - N_q + i$.""",
                        r"""`np.repeat(a, r, axis=0)` copies each entry of axis 0 $r$ times
in place; `np.tile` would repeat the whole stack ($k_0, k_1, k_2, k_0, \dots$), the wrong
grouping. The mask compares a row of key positions with a column of query positions:

```python
n_rep = Q.shape[0] // K.shape[0]
K = ___                                    # [n_heads, N_k, d_h]
V = ___
n_q, n_k = Q.shape[-2], K.shape[-2]
mask = ___                                 # bool [N_q, N_k]: key j <= (n_k - n_q) + query i
```""",
                        r"""The mask, as broadcasting builds it; the attention itself is the
`scaled_dot_product_attention` of notebook 04, which handles the head axis and returns
`(output, weights)`:

```python
mask = np.arange(n_k)[None, :] <= (n_k - n_q) + np.arange(n_q)[:, None]
out, _ = ___
```""",
                    ))


@EXERCISE.cases
def cases():
    normal = draw.rng(1010).standard_normal
    visible = [
        case("worked_example", "zero queries: 2 query heads share 1 key/value head with keys "
             "[1, 0], [0, 1] and values [1, 0], [3, 4]; each head averages the two values",
             (np.zeros((2, 1, 2)), np.array([[[1.0, 0.0], [0.0, 1.0]]]),
              np.array([[[1.0, 0.0], [3.0, 4.0]]])), group="slides",
             expected=np.array([[[2.0, 2.0]], [[2.0, 2.0]]])),
        case("grouped", "6 query heads, 2 key/value heads, N_q = N_k = 4, d_h = 8",
             (normal((6, 4, 8)), normal((2, 4, 8)), normal((2, 4, 8)))),
        case("one_new_query", "4 query heads, 2 key/value heads, ONE new query after 4 cached "
             "keys (N_q = 1, N_k = 5)", (normal((4, 1, 8)), normal((2, 5, 8)), normal((2, 5, 8))),
             group="cache"),
    ]
    normal = draw.rng(1011).standard_normal
    hidden = [
        case("multi_query", "one key/value head for 6 query heads (multi-query), N_q = 3, "
             "N_k = 7, d_h = 4, large scores",
             (4 * normal((6, 3, 4)), 4 * normal((1, 7, 4)), normal((1, 7, 4))), group="cache",
             hidden=True),
        case("multi_head", "3 query heads and 3 key/value heads (ordinary multi-head), N = 5",
             (normal((3, 5, 6)), normal((3, 5, 6)), normal((3, 5, 6))), hidden=True),
    ]
    return visible + hidden


@EXERCISE.mistake("tiled", "query head c used key/value head c % n_kv_heads (tiled); "
                  "consecutive query heads share one: c // (n_heads // n_kv_heads)")
def _tiled(Q, K, V):
    return gqa_variant(Q, K, V, grouped=False)


@EXERCISE.mistake("no_mask", "no causal mask")
def _no_mask(Q, K, V):
    return gqa_variant(Q, K, V, mask=None)


@EXERCISE.mistake("scale_d", "scores were divided by d_h instead of sqrt(d_h)")
def _scale_d(Q, K, V):
    return gqa_variant(Q, K, V, scale=float(np.shape(Q)[-1]))


@EXERCISE.mistake("mask_from_0", "the causal mask starts at key 0: the queries are the LAST "
                  "N_q positions, so query i may see keys j <= N_k - N_q + i")
def _mask_from_0(Q, K, V):
    return gqa_variant(Q, K, V, mask="start")


def _rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@trace.steps("grouped_query_attention")
def _steps(Q, K, V):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if Q.ndim != 3 or K.ndim != 3 or Q.shape[0] % K.shape[0]:
        raise ValueError("steps are declared for [heads, N, d_h] inputs")
    rep = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, rep, axis=0), np.repeat(V, rep, axis=0)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    mask = np.arange(n_k)[None, :] <= n_k - n_q + np.arange(n_q)[:, None]
    raw = Q @ np.swapaxes(K, -1, -2)
    with np.errstate(all="ignore"):
        weights = _rows(np.where(mask, raw / np.sqrt(Q.shape[-1]), -np.inf))
        unscaled = _rows(np.where(mask, raw, -np.inf))
    return [trace.Step("keys", "each query head's key head (head c // (n_heads / "
                       "n_kv_heads)), repeated", K),
            trace.Step("weights", "softmax(Q Kᵀ / √d_h, causal from the last N_q "
                       "positions)", weights,
                       (("softmax(Q Kᵀ): the 1/√d_h scaling is missing", unscaled),)),
            trace.Step("output", "weights V", weights @ V,
                       (("the output without the 1/√d_h scaling", unscaled @ V),))]
