"""``llama_block`` (notebook 10_modern_llm): one Llama block, with and without a KV cache.

The cache cases are scenarios (:func:`scenario_cache`): the block runs on a prompt with
an empty cache, then on one new row; the new row must equal the last row of a full pass.
"""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.judge import array_problem
from helpers.exercises._llama_variants import block_variant
from helpers.llama import model
from helpers.llama.model import SMALL_CONFIG, KVCache


def _compare(case, expected, got):
    if case is None and isinstance(expected, tuple) and isinstance(got, tuple):
        same = len(got) == 2 and got[0] == expected[0]   # two scenario outputs
        return None if same and array_problem(None, expected[1], got[1]) is None else "differ"
    if case is not None and case.scenario:
        if not isinstance(got, tuple) or len(got) != 2:
            return "the cache scenario needs (positions cached, new row)"
        n = case.args[3]
        if got[0] != n:
            return (f"after a prompt of {n} positions the cache holds {got[0]}: call "
                    f"cache.update(layer, K, V) when a cache is given")
        expected, got = expected[1], got[1]
        if expected is None:
            return None
    return array_problem(EXERCISE, expected, got)


CONTRACT = Contract(
    args={"x": Arg("[N, d]", dtype=("float64", "float32"), lists=True), "block": Arg(dict),
          "config": Arg(model.LlamaConfig), "start": Arg(int, optional=True, low=0),
          "cache": Arg(KVCache, optional=True), "layer": Arg(int, optional=True, low=0)},
    returns=Arg("[N, d]", dtype=("float64", "float32")), draw=False,
    invariants=("float64 or the dtype of x: the dtype is not judged",))

EXERCISE = Exercise(
    "llama_block", model.llama_block, contract=CONTRACT, compare=_compare,
    uses=("rms_norm", "apply_rope", "swiglu", "grouped_query_attention", "split_heads",
          "merge_heads"),
    refuse=("helpers.llama.model:forward", "helpers.llama.model:generate",
            "helpers.llama.model:_llama_block_float32",
            "helpers.exercises._llama_variants:block_variant"),
    difficulty=3, importance=3, minutes=30,
    hints=(
        r"""Follow the lines $t_1, \dots, t_5, h$ of the equation, as in notebook 07: norm,
attention, add $x$; norm, feed-forward, add $t_3$. The new parts: the new rows sit at
positions `start`, ..., `start + N - 1`; queries and keys (not values) are split into heads
and **then** rotated for those positions; with a cache, the rotated keys and the values
are appended and the attention uses everything the cache returns; queries have
`config.n_heads` heads, keys and values `config.n_kv_heads`.""",
        r"""The attention half, up to the cache. `split_heads` and `merge_heads` return
float64; `.astype(x.dtype)` after them keeps the real model in float32.

```python
x = np.asarray(x)
positions = np.arange(start, start + len(x))
t1 = rms_norm(x, block["attn_norm"], config.eps)                             # [N, d]
Q = split_heads(t1 @ block["W_Q"], config.n_heads).astype(x.dtype)           # [h, N, d_h]
Q = apply_rope(Q, positions, config.rope_theta)
K = ___                       # like Q, with W_K and config.n_kv_heads: [h_kv, N, d_h], rotated
V = ___                       # like K, with W_V, not rotated
if cache is not None:
    K, V = ___                # append, and take back every position of this layer
```""",
        r"""The rest, from the heads to the output (one line left for you):

```python
heads = grouped_query_attention(Q, K, V)                                     # [h, N, d_h]
t3 = merge_heads(heads).astype(x.dtype) @ block["W_O"] + x                  # [N, d]
t4 = rms_norm(t3, block["ffn_norm"], config.eps)
return ___                    # SwiGLU of t4 with W_gate, W_up, W_down, plus the residual
```""",
    ))


def scenario_cache(llama_block, x, block, config, n, *, _KVCache=KVCache):
    """The block on the first ``n`` rows of ``x`` with an empty cache, then on the last
    row with ``start = n``: observations only, ``{"keys": the cache's keys of layer 0
    after the prompt, "row": the new row's output}`` (:func:`scenario_cache_decide`
    judges them in the trusted process)."""
    cache = _KVCache(1)
    llama_block(x[:n], block, config, start=0, cache=cache, layer=0)
    keys = cache.keys[0]
    return {"keys": keys, "row": llama_block(x[n:], block, config, start=n, cache=cache,
                                             layer=0)}


def scenario_cache_decide(observed):
    """``(positions cached after the prompt, the new row's output)`` from the
    observations of :func:`scenario_cache` (what the cache cases compare)."""
    if not isinstance(observed, dict) or set(observed) != {"keys", "row"}:
        return "not the cache scenario's observations"      # fails the comparison
    keys = observed.get("keys")
    cached = 0 if keys is None else (int(np.shape(keys)[-2]) if np.ndim(keys) >= 2 else -1)
    return cached, observed.get("row")


def _cache_case(seed: int, n: int, hidden: bool):
    block = model.random_llama_params(SMALL_CONFIG, seed=draw.rng(seed))["blocks"][0]
    x = draw.rng(seed).standard_normal((n + 1, SMALL_CONFIG.d_model))
    full = model.llama_block(x, block, SMALL_CONFIG)[-1:]            # [1, d]: no cache
    return case(f"cache_{n}", f"a cache: {n} positions, then 1 new one at start = {n} (it "
                f"must see the {n} cached keys)", (x, block, SMALL_CONFIG, n), group="cache",
                hidden=hidden, scenario="helpers.exercises.llama_block:scenario_cache",
                expected=(n, full))


@EXERCISE.cases
def cases():
    normal = draw.rng(1010).standard_normal
    cfg = SMALL_CONFIG
    block = model.random_llama_params(cfg, seed=draw.rng(1010))["blocks"][0]
    visible = [
        case("no_cache", "x [5, 24], the small config (6 query heads, 2 key/value heads), "
             "start = 0, no cache", (normal((5, 24)), block, cfg)),
        case("start_4", "x [3, 24] at positions 4, 5, 6 (start = 4), no cache",
             (normal((3, 24)), block, cfg), {"start": 4}),
        _cache_case(2020, 4, hidden=False),
    ]
    normal = draw.rng(1011).standard_normal
    block = model.random_llama_params(cfg, seed=draw.rng(1011))["blocks"][0]
    hidden = [
        case("large_values", "x [6, 24] with large values, start = 9",
             (30 * normal((6, 24)), block, cfg), {"start": 9}, hidden=True),
        _cache_case(2021, 5, hidden=True),
    ]
    real = _smollm2_case()
    return visible + hidden + ([real] if real else [])


def _smollm2_case():
    """Block 1 of the real model, when it is installed (the grader's machine has it)."""
    from helpers.llama import weights

    if weights.missing_requirements():
        return None
    params, config = weights.load_smollm2()
    # the weights as the model stores them (float32: half the bytes on the sandbox's wire);
    # with float64 rows x, the block computes in float64 all the same
    real = {k: v.astype(np.float32) for k, v in params["blocks"][0].items()}
    ids = [504, 3575, 282, 4649, 314]                        # "The capital of France is"
    return case("smollm2_block_1", "block 1 of SmolLM2 on 'The capital of France is' at "
                "positions 2..6", (params["E"][ids].astype(np.float64), real, config),
                {"start": 2}, group="model", hidden=True)


@EXERCISE.mistake("no_residual", "no residual connections (t3 = t2 + x, h = t5 + t3)")
def _no_residual(x, block, config, start=0, cache=None, layer=0):
    return block_variant(x, block, config, start, residual=False)


@EXERCISE.mistake("no_rope", "queries and keys were not rotated (apply_rope)")
def _no_rope(x, block, config, start=0, cache=None, layer=0):
    return block_variant(x, block, config, start, rope=False)


@EXERCISE.mistake("no_norm", "the RMS norms before attention and feed-forward are missing")
def _no_norm(x, block, config, start=0, cache=None, layer=0):
    return block_variant(x, block, config, start, norm=False)


@EXERCISE.mistake("post_norm", "each RMS norm came after its residual sum (post-norm, as in "
                  "BERT); Llama normalises the input of each sublayer: t1 = rms_norm(x), "
                  "t4 = rms_norm(t3), and the sums stay unnormalised")
def _post_norm(x, block, config, start=0, cache=None, layer=0):
    return block_variant(x, block, config, start, post_norm=True)


@EXERCISE.mistake("rope_values", "the values were rotated too: RoPE rotates only the queries "
                  "and keys (it encodes positions in their dot products)")
def _rope_values(x, block, config, start=0, cache=None, layer=0):
    return block_variant(x, block, config, start, rope_values=True)


# Without a cache, ignoring `start` changes nothing (RoPE scores depend on offsets only):
# the cache scenario catches it.
@EXERCISE.mistake("start_ignored", "the rotations ignore start: the new row sits at position "
                  "start, after the cached ones")
def _start_ignored(x, block, config, start=0, cache=None, layer=0):
    return model.llama_block(x, block, config, start=0, cache=cache, layer=layer)


@EXERCISE.mistake("cache_not_read", "the new row did not attend to the cached keys and values: "
                  "use the K, V that cache.update returns")
def _cache_not_read(x, block, config, start=0, cache=None, layer=0):
    if cache is not None:                    # stored, never read back
        model.llama_block(x, block, config, start=start, cache=cache, layer=layer)
    return model.llama_block(x, block, config, start=start)
