"""``attention_with_cache`` (notebook 13_inference): one new token's multi-head attention
over the keys and values kept from the earlier tokens (the KV cache)."""

from __future__ import annotations

import numpy as np

from helpers import inference, reference
from helpers.course import Arg, Contract, Exercise, draw, case


CONTRACT = Contract(
    args={"x": Arg("[d]", lists=True), "W_Q": Arg("[d, d]", lists=True),
          "W_K": Arg("[d, d]", lists=True), "W_V": Arg("[d, d]", lists=True),
          "W_O": Arg("[d, d]", lists=True), "n_heads": Arg("n_heads"),
          "K_cache": Arg("[t, d]", lists=True), "V_cache": Arg("[t, d]", lists=True)},
    returns=(Arg("[d]"), Arg("[T, d]"), Arg("[T, d]")), where=("d % n_heads == 0",),
    sizes={"d": (2, 4, 6), "n_heads": (1, 2)},
    invariants=("T = t + 1: the new token's key and value are appended as the last rows",
                "y equals the last row of the causal multi_head_attention of all t + 1 tokens"))

EXERCISE = Exercise(
    "attention_with_cache", inference.attention_with_cache, contract=CONTRACT,
    uses=("split_heads", "merge_heads", "scaled_dot_product_attention", "softmax"),
    refuse=("helpers.inference:generate_cached",),
    output="tuple", parts=("y", "K", "V"),
    difficulty=2, importance=3, minutes=20,
    hints=(
        r"""A new token needs its own query, key and value only: $\boldsymbol{q} =
\boldsymbol{x}W_Q$, $\boldsymbol{k} = \boldsymbol{x}W_K$, $\boldsymbol{v} = \boldsymbol{x}W_V$.
Append $\boldsymbol{k}$ and $\boldsymbol{v}$ to the cache as new last rows; the query then
attends to **all** $t + 1$ keys (the earlier ones and its own), head by head, with no mask:
nothing in the cache comes after it. Merge the heads and multiply by $W_O$.""",
        r"""`np.vstack([K_cache, k[None]])` appends a row. Make the query a one-row matrix
`q[None]` (`[1, d]`), so that `split_heads` gives `[n_heads, 1, d_h]` and
`scaled_dot_product_attention` scales each head by $\sqrt{d_h}$.

```python
K = np.vstack([K_cache, ___])                 # [t + 1, d]
V = np.vstack([V_cache, ___])                 # [t + 1, d]
q = split_heads(___, n_heads)                 # [n_heads, 1, d_h]
heads, _ = scaled_dot_product_attention(q, split_heads(K, n_heads), ___)
y = ___                                       # [d]
return y, K, V
```""",
    ),
)


def _step_case(seed, t, d, n_heads, scale=1.0):
    """x, the weights, n_heads and the cache of t earlier tokens (their real keys, values)."""
    X = draw.normal(seed, (t + 1, d), scale)
    W = [draw.normal(seed + i + 1, (d, d), 1.0 / np.sqrt(d)) for i in range(4)]
    return (X[-1], *W, n_heads, X[:-1] @ W[1], X[:-1] @ W[2])


@EXERCISE.cases
def cases():
    return [
        case("two_heads", "the 4th token, d = 4, 2 heads (a cache of 3 rows)",
             _step_case(1361, 3, 4, 2)),
        case("one_head", "the 3rd token, d = 2, 1 head", _step_case(1366, 2, 2, 1)),
        case("first_token", "the first token: an empty cache (0 rows), d = 4, 2 heads",
             _step_case(1371, 0, 4, 2)),
        case("lists", "the 2nd token, d = 2, 1 head, everything as lists",
             tuple(a if isinstance(a, int) else a.tolist() for a in _step_case(1376, 1, 2, 1))),
        case("large", "large inputs (scores in the hundreds), 3 heads, d = 6",
             _step_case(1381, 4, 6, 3, 10.0), group="stability"),
        case("long", "the 9th token, d = 6, 3 heads", _step_case(1386, 8, 6, 3), hidden=True),
        case("wide", "the 5th token, d = 8, 4 heads", _step_case(1391, 4, 8, 4), hidden=True),
    ]


def _attend(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache, *, heads=None, d_h=None,
            self_key=True, first=False, extend=True):
    """One cached attention step with one knob per known mistake."""
    x, W_Q, W_K, W_V, W_O, K_cache, V_cache = (np.asarray(a, dtype=np.float64) for a in
                                               (x, W_Q, W_K, W_V, W_O, K_cache, V_cache))
    n_h = n_heads if heads is None else heads
    k, v = (x @ W_K)[None], (x @ W_V)[None]
    K = np.vstack([k, K_cache] if first else [K_cache, k])
    V = np.vstack([v, V_cache] if first else [V_cache, v])
    K_read, V_read = (K, V) if self_key or len(K_cache) == 0 else (K_cache, V_cache)
    q, Kh, Vh = (reference.split_heads(a, n_h) for a in ((x @ W_Q)[None], K_read, V_read))
    s = q @ np.swapaxes(Kh, -1, -2) / np.sqrt(d_h or q.shape[-1])
    y = (reference.merge_heads(reference.softmax(s) @ Vh) @ W_O)[0]
    return (y, K, V) if extend else (y, K_cache, V_cache)


@EXERCISE.mistake("own_key_left_out", "the new token did not attend to its own key: append "
                  "k and v to the cache first, then attend to all t + 1 rows")
def _own_key(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    return _attend(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache, self_key=False)


@EXERCISE.mistake("cache_not_returned_extended", "the cache came back without the new row: "
                  "return the cache with the new token's key and value appended")
def _not_extended(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    return _attend(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache, extend=False)


@EXERCISE.mistake("new_row_first", "the new key and value were put first: append them as the "
                  "LAST rows, in token order")
def _first(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    return _attend(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache, first=True)


@EXERCISE.mistake("one_head", "the heads were not split: attend in each of the n_heads heads "
                  "(split_heads) and merge them")
def _one_head(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    return _attend(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache, heads=1)


@EXERCISE.mistake("scaled_by_d_model", "the scores were divided by sqrt(d), the model width; "
                  "each head's keys have d_h = d / n_heads entries: divide by sqrt(d_h)")
def _d_model(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    return _attend(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache, d_h=np.shape(W_Q)[1])
