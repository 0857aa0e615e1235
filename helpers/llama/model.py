"""The Llama model in NumPy, one function per equation: RMS norm, rotary embeddings,
SwiGLU, grouped-query attention, the KV cache, the block, the forward pass (also with
every stream and attention pattern recorded) and greedy generation. Weights come from
:mod:`helpers.llama.weights`."""

from __future__ import annotations

import functools

import numpy as np

import helpers.reference as ref
from helpers.bert._threads import one_blas_thread
from helpers.llama.weights import LlamaConfig

# ---------------------------------------------------------------------------------------
# The parts of the block
# ---------------------------------------------------------------------------------------


def _float(x) -> np.ndarray:
    """``x`` as a float array: float32 and float64 stay as they are, the rest -> float64."""
    x = np.asarray(x)
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float64)


def rms_norm(x, weight, eps: float = 1e-5) -> np.ndarray:
    """Root-mean-square norm: ``x / sqrt(mean(x^2) + eps) * weight``, over the last axis.

    x: ``[..., d]``; weight: ``[d]`` (a gain per feature; no shift, no mean removed).
    Returns the same shape as ``x``. Each row is rescaled to a root mean square of 1
    (up to ``eps``), then multiplied feature by feature by ``weight``.
    """
    x = _float(x)
    ms = np.mean(x * x, axis=-1, keepdims=True)                   # [..., 1]
    return x / np.sqrt(ms + eps) * _float(weight)                 # [..., d]


def rope_angles(positions, d_head: int, theta: float = 10000.0) -> np.ndarray:
    """The rotation angles of rotary embeddings: ``angle[n, m] = p_n * theta^(-2m/d_h)``.

    positions: ``[N]`` (ints); returns ``[N, d_h/2]``, one angle per position and pair
    ``m = 0 .. d_h/2 - 1``. Pair 0 turns fastest (one radian per position), the last
    pair slowest (about ``1/theta`` radians per position).
    """
    if d_head % 2:
        raise ValueError(f"rotary embeddings need an even head width, got {d_head}")
    positions = np.asarray(positions, dtype=np.float64)          # [N]
    inv_freq = theta ** (-np.arange(0, d_head, 2) / d_head)       # [d_h/2]
    return positions[:, None] * inv_freq[None, :]                 # [N, d_h/2]


def rotate_half(x) -> np.ndarray:
    """``[x1, x2] -> [-x2, x1]`` with ``x1, x2`` the two halves of the last axis.

    With ``cos`` and ``sin`` repeated over both halves, ``x * cos + rotate_half(x) * sin``
    turns each pair ``(x[m], x[m + d/2])`` by its angle (Hugging Face's convention).
    """
    x = _float(x)
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, positions, theta: float = 10000.0) -> np.ndarray:
    """Rotary position embedding: rotate each pair ``(x[m], x[m + d_h/2])`` of a row by
    ``angle = p * theta^(-2m/d_h)``, with ``p`` that row's position.

    ``y[m] = x[m] cos a_m - x[m + d_h/2] sin a_m``,
    ``y[m + d_h/2] = x[m + d_h/2] cos a_m + x[m] sin a_m``.

    x: ``[..., N, d_h]`` (queries or keys, any number of leading head axes);
    positions: ``[N]``. Returns the same shape. Rotations keep lengths, and a query at
    position ``i`` dotted with a key at ``j`` depends only on ``i - j``.
    """
    x = _float(x)
    angles = rope_angles(positions, x.shape[-1], theta)           # [N, d_h/2]
    angles = np.concatenate([angles, angles], axis=-1)            # [N, d_h]
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    return x * cos + rotate_half(x) * sin                         # [..., N, d_h]


def silu(x) -> np.ndarray:
    """SiLU (also "swish"): ``x * sigmoid(x) = x / (1 + exp(-x))``, without overflow."""
    x = _float(x)
    e = np.exp(-np.abs(x))                                        # in (0, 1]: no overflow
    sigmoid = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return x * sigmoid.astype(x.dtype)


def swiglu(x, W_gate, W_up, W_down) -> np.ndarray:
    """Gated feed-forward of Llama: ``(silu(x W_gate) * (x W_up)) W_down``.

    x: ``[N, d]``; W_gate, W_up: ``[d, d_ff]``; W_down: ``[d_ff, d]``. No biases.
    Returns ``[N, d]``. The gate decides, feature by feature, how much of ``x W_up``
    passes (``*`` is element-wise).
    """
    x = _float(x)
    gate = silu(x @ _float(W_gate))                               # [N, d_ff]
    up = x @ _float(W_up)                                         # [N, d_ff]
    return (gate * up) @ _float(W_down)                           # [N, d]


def repeat_kv(K, n_rep: int) -> np.ndarray:
    """Repeat each key/value head ``n_rep`` times: ``[h_kv, N, d] -> [h_kv*n_rep, N, d]``.

    Query head ``c`` then meets key/value head ``c // n_rep``: consecutive query heads
    share one, as in Hugging Face's ``repeat_kv``.
    """
    return np.repeat(_float(K), n_rep, axis=-3)


def grouped_query_attention(Q, K, V) -> np.ndarray:
    """Causal attention where groups of query heads share a key/value head.

    Q: ``[n_heads, N_q, d_h]``; K, V: ``[n_kv_heads, N_k, d_h]`` with ``N_q <= N_k``
    and ``n_heads`` a multiple of ``n_kv_heads``. The queries are the LAST ``N_q``
    positions of the ``N_k`` (as with a KV cache: earlier keys come from the cache), so
    query ``i`` sits at position ``N_k - N_q + i`` and may attend to keys
    ``j <= N_k - N_q + i``. Query head ``c`` uses key/value head ``c // (n_heads //
    n_kv_heads)``. Scale ``1/sqrt(d_h)``. Returns ``[n_heads, N_q, d_h]``.
    """
    Q, K, V = _float(Q), _float(K), _float(V)
    n_heads, n_q = Q.shape[0], Q.shape[-2]
    n_kv, n_k = K.shape[0], K.shape[-2]
    if n_heads % n_kv:
        raise ValueError(f"{n_heads} query heads cannot share {n_kv} key/value heads")
    if n_q > n_k:
        raise ValueError(f"{n_q} queries but only {n_k} keys")
    n_rep = n_heads // n_kv
    if Q.dtype == K.dtype == V.dtype == np.float32 and Q.ndim == K.ndim == V.ndim == 3:
        return _gqa_float32(Q, K, V, n_rep)
    start = n_k - n_q                                             # position of query 0
    mask = np.arange(n_k)[None, :] <= start + np.arange(n_q)[:, None]   # [N_q, N_k]
    out, _ = ref.scaled_dot_product_attention(Q, repeat_kv(K, n_rep), repeat_kv(V, n_rep),
                                              mask)               # [h, N_q, d_h]
    return out.astype(np.result_type(Q.dtype, K.dtype, V.dtype))


def _gqa_float32(Q, K, V, n_rep: int) -> np.ndarray:
    """:func:`grouped_query_attention` in float32 without copying keys and values per
    query head: the ``n_rep`` query heads of a group are stacked as rows, so each group
    is one product with its key/value head. Same conventions and result."""
    n_heads, n_q, d_h = Q.shape
    n_kv, n_k = K.shape[0], K.shape[1]
    Qg = (Q * np.float32(1.0 / np.sqrt(d_h))).reshape(n_kv, n_rep * n_q, d_h)
    with one_blas_thread():                       # small products (helpers.bert._threads)
        scores = Qg @ K.swapaxes(-1, -2)                          # [h_kv, rep*N_q, N_k]
    if n_q > 1:                                                   # a single query sees all
        start = n_k - n_q
        allowed = np.arange(n_k)[None, :] <= start + np.arange(n_q)[:, None]   # [N_q, N_k]
        bias = np.where(allowed, np.float32(0.0), np.float32(-np.inf))
        scores.reshape(n_kv, n_rep, n_q, n_k)[...] += bias
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    with one_blas_thread():
        out = scores @ V                                          # [h_kv, rep*N_q, d_h]
    out /= scores.sum(axis=-1, keepdims=True)
    return out.reshape(n_heads, n_q, V.shape[-1])


class KVCache:
    """The keys and values of every layer for the positions seen so far.

    ``cache.update(layer, K_new, V_new)`` appends the new positions' keys and values
    (``[n_kv_heads, N_new, d_h]``, already rotated) to that layer's store and returns
    all of them, ``[n_kv_heads, N_past + N_new, d_h]``. ``len(cache)`` is the number of
    positions stored (read it before a forward pass: it is the position of the first new
    token). Memory: ``2 * n_layers * n_kv_heads * N * d_h`` numbers; sharing key/value
    heads (3 instead of 9) makes it three times smaller.
    """

    WIRE_FIELDS = ("keys", "values")     # what crosses the grader's sandbox boundary

    def __init__(self, n_layers: int):
        self.keys: list = [None] * n_layers
        self.values: list = [None] * n_layers

    def __len__(self) -> int:
        return 0 if self.keys[-1] is None else self.keys[-1].shape[-2]

    def update(self, layer: int, K_new, V_new) -> tuple[np.ndarray, np.ndarray]:
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = K_new, V_new
        else:
            self.keys[layer] = np.concatenate([self.keys[layer], K_new], axis=-2)
            self.values[layer] = np.concatenate([self.values[layer], V_new], axis=-2)
        return self.keys[layer], self.values[layer]


# ---------------------------------------------------------------------------------------
# Block, model, generation
# ---------------------------------------------------------------------------------------


def _split_heads(t: np.ndarray, n_heads: int) -> np.ndarray:
    """``[N, h*d_h] -> [h, N, d_h]`` (a view; :func:`helpers.reference.split_heads`)."""
    return t.reshape(t.shape[0], n_heads, -1).swapaxes(0, 1)


def _merge_heads(A: np.ndarray) -> np.ndarray:
    """``[h, N, d_h] -> [N, h*d_h]`` (:func:`helpers.reference.merge_heads`)."""
    return A.swapaxes(0, 1).reshape(A.shape[1], -1)


@functools.lru_cache(maxsize=256)
def _rope_tables(start: int, n: int, d_head: int, theta: float, dtype: str):
    """``cos, sin [N, d_h]`` of :func:`apply_rope` for positions ``start .. start+N-1``,
    computed once and shared by the blocks (read-only)."""
    angles = rope_angles(np.arange(start, start + n), d_head, theta)   # [N, d_h/2]
    angles = np.concatenate([angles, angles], axis=-1)             # [N, d_h]
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    cos.flags.writeable = sin.flags.writeable = False
    return cos, sin


def _rotated_qkv(t1: np.ndarray, block: dict, config: LlamaConfig, start: int, dtype):
    """The block's queries ``[h, N, d_h]``, keys and values ``[h_kv, N, d_h]`` of the
    normed rows ``t1`` in ``dtype``, queries and keys rotated (:func:`apply_rope`) for
    positions ``start .. start+N-1``."""
    dtype = np.dtype(dtype)
    cos, sin = _rope_tables(start, t1.shape[0], config.d_head, config.rope_theta, dtype.str)
    Q = _split_heads(t1 @ block["W_Q"], config.n_heads).astype(dtype, copy=False)
    K = _split_heads(t1 @ block["W_K"], config.n_kv_heads).astype(dtype, copy=False)
    V = _split_heads(t1 @ block["W_V"], config.n_kv_heads).astype(dtype, copy=False)
    return Q * cos + rotate_half(Q) * sin, K * cos + rotate_half(K) * sin, V


def llama_block(x, block: dict, config: LlamaConfig, start: int = 0,
                cache: KVCache | None = None, layer: int = 0) -> np.ndarray:
    """One Llama block, pre-norm like the course's, with the new parts:

    ``t1 = RMSNorm(x)``; ``Q, K, V = t1 W_Q, t1 W_K, t1 W_V`` split into heads (9 for
    ``Q``, 3 for ``K, V``); ``Q, K`` rotated for positions ``start .. start+N-1``;
    ``K, V`` appended to the cache (when given; then attention sees the past too);
    ``t2 = GQA(Q, K, V) W_O``; ``t3 = t2 + x``; ``t5 = SwiGLU(RMSNorm(t3))``;
    ``h = t5 + t3``.

    x: ``[N, d]`` (the new positions only); block: one entry of ``params["blocks"]``;
    start: the position of ``x``'s first row. Returns ``[N, d]``.
    """
    x = _float(x)
    if x.dtype == np.float32 and all(block[k].dtype == np.float32 for k in _BLOCK_KEYS):
        return _llama_block_float32(x, block, config, start, cache, layer)
    t1 = rms_norm(x, block["attn_norm"], config.eps)              # [N, d]
    Q, K, V = _rotated_qkv(t1, block, config, start, x.dtype)     # [h | h_kv, N, d_h]
    if cache is not None:
        K, V = cache.update(layer, K, V)                          # [h_kv, N_past+N, d_h]
    A = grouped_query_attention(Q, K, V)                          # [h, N, d_h]
    t2 = _merge_heads(A).astype(x.dtype, copy=False) @ block["W_O"]   # [N, d]
    t3 = t2 + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    t5 = swiglu(t4, block["W_gate"], block["W_up"], block["W_down"])
    return t5 + t3                                                # [N, d]


_BLOCK_KEYS = ("attn_norm", "W_Q", "W_K", "W_V", "W_O", "ffn_norm", "W_gate", "W_up", "W_down")


def _rms_norm_float32(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """:func:`rms_norm` of float32 rows, with fewer temporaries."""
    ms = np.square(x).sum(axis=-1, keepdims=True)                 # [N, 1]
    ms *= np.float32(1.0 / x.shape[-1])
    ms += np.float32(eps)
    np.sqrt(ms, out=ms)
    y = x / ms
    y *= weight
    return y


def _llama_block_float32(x, block, config, start, cache, layer) -> np.ndarray:
    """:func:`llama_block` for float32 rows and weights (the real model): the same
    equations, each written once, in place where possible. One generated token runs
    this 30 times, so every NumPy call it saves counts."""
    t1 = _rms_norm_float32(x, block["attn_norm"], config.eps)     # [N, d]
    Q, K, V = _rotated_qkv(t1, block, config, start, x.dtype)     # [h | h_kv, N, d_h]
    if cache is not None:
        K, V = cache.update(layer, K, V)                          # [h_kv, N_past+N, d_h]
    A = _gqa_float32(Q, K, V, config.n_heads // config.n_kv_heads)   # [h, N, d_h]
    t3 = _merge_heads(A) @ block["W_O"]                           # [N, d]
    t3 += x
    t4 = _rms_norm_float32(t3, block["ffn_norm"], config.eps)
    gate = t4 @ block["W_gate"]                                   # [N, d_ff]
    sig = gate * np.float32(0.5)                                  # sigmoid(g) =
    np.tanh(sig, out=sig)                                         #   (1 + tanh(g/2)) / 2
    sig += np.float32(1.0)
    sig *= np.float32(0.5)
    gate *= sig                                                   # silu(gate)
    gate *= t4 @ block["W_up"]
    out = gate @ block["W_down"]                                  # [N, d]
    out += t3
    return out


def forward(token_ids, params: dict, config: LlamaConfig, cache: KVCache | None = None,
            block_fn=None, last_only: bool = False) -> np.ndarray:
    """Logits of the next token after each of ``token_ids``.

    ``h = E[ids]`` (no position embeddings: positions are in the rotations), then the
    blocks, then ``logits = RMSNorm(h) E^T`` (tied head). With a cache, ``token_ids`` are
    the NEW tokens, placed after the ``len(cache)`` positions already stored, and the
    cache grows by them. ``block_fn`` (default :func:`llama_block`) computes each block,
    e.g. a learner's own. Returns ``[N, V]``, or ``[1, V]`` with ``last_only`` (the
    next token after the last one only, all that generation needs).
    """
    block_fn = llama_block if block_fn is None else block_fn
    ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
    start = 0 if cache is None else len(cache)
    if start + len(ids) > config.n_ctx:
        raise ValueError(f"{start + len(ids)} positions exceed the context of {config.n_ctx}")
    h = params["E"][ids]                                          # [N, d]
    for layer, block in enumerate(params["blocks"]):
        h = block_fn(h, block, config, start=start, cache=cache, layer=layer)
    if last_only:
        h = h[-1:]                                                # [1, d]
    return rms_norm(h, params["norm"], config.eps) @ params["E"].T   # [N, V]


def attention_patterns(x, block: dict, config: LlamaConfig) -> np.ndarray:
    """``[h, N, N]``: the causal attention weights of one block's query heads on the rows
    ``x`` ``[N, d]`` at positions ``0 .. N-1`` (row = query, column = key; each row sums
    to 1, zero above the diagonal), from the same queries and keys :func:`llama_block`
    computes."""
    x = _float(x)
    t1 = rms_norm(x, block["attn_norm"], config.eps)              # [N, d]
    Q, K, V = _rotated_qkv(t1, block, config, 0, x.dtype)         # [h | h_kv, N, d_h]
    n_rep = config.n_heads // config.n_kv_heads
    _, weights = ref.scaled_dot_product_attention(Q, repeat_kv(K, n_rep), repeat_kv(V, n_rep),
                                                  ref.causal_mask(len(x)))   # [h, N, N]
    return weights


def forward_recorded(token_ids, params: dict, config: LlamaConfig
                     ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`forward` with its insides kept, for looking into the model (notebook 14).

    Returns ``streams`` ``[L + 1, N, d]`` (the embeddings, then each block's output) and
    ``patterns`` ``[L, h, N, N]`` (each block's attention weights,
    :func:`attention_patterns`). ``rms_norm(streams[-1], params["norm"]) @ params["E"].T``
    is :func:`forward`'s logits.
    """
    ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
    if len(ids) > config.n_ctx:
        raise ValueError(f"{len(ids)} positions exceed the context of {config.n_ctx}")
    h = params["E"][ids]                                          # [N, d]
    streams, patterns = [h], []
    for block in params["blocks"]:
        patterns.append(attention_patterns(h, block, config))     # [h, N, N]
        h = llama_block(h, block, config)                         # [N, d]
        streams.append(h)
    return np.stack(streams), np.stack(patterns)                  # [L+1, N, d], [L, h, N, N]


def generate(token_ids, params: dict, config: LlamaConfig, n_new: int,
             use_cache: bool = True, stop_at_eos: bool = True, block_fn=None) -> np.ndarray:
    """Greedy decoding: append ``argmax`` of the last row of logits, ``n_new`` times.

    Without the cache every step runs the whole sequence again (step ``t`` costs ``t``
    rows); with it, the prompt runs once and each step runs one new row against the
    stored keys and values. Both give the same ids. Stops early after
    ``config.eos_id`` when ``stop_at_eos``. Returns the prompt followed by the new ids
    (1-D int64).
    """
    ids = [int(i) for i in np.asarray(token_ids).reshape(-1)]
    cache = KVCache(config.n_layers) if use_cache else None
    new = ids                                                     # what the model has not seen
    for _ in range(n_new):
        logits = forward(new if use_cache else ids, params, config, cache, block_fn,
                         last_only=True)
        next_id = int(np.argmax(logits[-1]))
        ids.append(next_id)
        new = [next_id]
        if stop_at_eos and next_id == config.eos_id:
            break
    return np.array(ids, dtype=np.int64)


def random_llama_params(config: LlamaConfig, seed=0, dtype=np.float64) -> dict:
    """Seeded random parameters in the layout of :func:`load_smollm2`, for tests and
    small demos (untrained). Weights are Gaussian with standard deviation
    ``1/sqrt(fan_in)``, norm gains near 1. ``seed``: an int, or a NumPy generator to draw
    from (the exercises' cases hand it theirs)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    d, d_h, d_ff = config.d_model, config.d_head, config.d_ff

    def w(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype)

    def gain(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(dtype)

    blocks = [{
        "attn_norm": gain(d), "W_Q": w(d, config.n_heads * d_h),
        "W_K": w(d, config.n_kv_heads * d_h), "W_V": w(d, config.n_kv_heads * d_h),
        "W_O": w(config.n_heads * d_h, d), "ffn_norm": gain(d),
        "W_gate": w(d, d_ff), "W_up": w(d, d_ff), "W_down": w(d_ff, d),
    } for _ in range(config.n_layers)]
    return {"E": rng.standard_normal((config.vocab_size, d)).astype(dtype),
            "blocks": blocks, "norm": gain(d)}


#: A small configuration for exercise checks and demos: 6 query heads share 2 key/value
#: heads of width 4 (a real model's proportions, tiny sizes).
SMALL_CONFIG = LlamaConfig(n_layers=2, d_model=24, n_heads=6, n_kv_heads=2, d_head=4,
                           d_ff=40, vocab_size=50, n_ctx=64, rope_theta=10000.0, eps=1e-5,
                           bos_id=1, eos_id=2)
