"""Llama parts with one thing changed: the outputs of notebook 10's known mistakes.

With their default arguments they compute the right answer, so the grader hides this
module from the learner's code like a reference."""

from __future__ import annotations

import numpy as np

from helpers import reference as ref
from helpers.llama.model import rms_norm, swiglu


def rope_variant(x, positions, theta, interleaved=False, sign=1.0, exponent=2.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta ** (
        -exponent * np.arange(d // 2) / d)                        # [N, d/2]
    cos, sin = np.cos(angles), sign * np.sin(angles)
    if interleaved:                                               # pairs (2m, 2m+1)
        a, b = x[..., 0::2], x[..., 1::2]
        y = np.empty_like(x)
        y[..., 0::2], y[..., 1::2] = a * cos - b * sin, b * cos + a * sin
        return y
    a, b = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def gqa_variant(Q, K, V, grouped=True, mask="offset", scale=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n_heads, n_q, d_h = Q.shape
    n_kv, n_k = K.shape[0], K.shape[1]
    kv = np.arange(n_heads) // (n_heads // n_kv) if grouped else np.arange(n_heads) % n_kv
    scores = Q @ np.swapaxes(K[kv], -1, -2) / (np.sqrt(d_h) if scale is None else scale)
    if mask == "offset":
        allowed = np.arange(n_k)[None, :] <= (n_k - n_q) + np.arange(n_q)[:, None]
    elif mask == "start":
        allowed = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]
    else:
        allowed = np.ones((n_q, n_k), dtype=bool)
    scores = np.where(allowed, scores, -np.inf)
    return ref.softmax(scores, axis=-1) @ V[kv]


def block_variant(x, block, config, start=0, rope=True, offset=True, residual=True,
                  norm=True, post_norm=False, rope_values=False):
    x = np.asarray(x, dtype=np.float64)
    b = {k: np.asarray(v, dtype=np.float64) for k, v in block.items()}
    pos = np.arange(start if offset else 0, (start if offset else 0) + len(x))
    t1 = rms_norm(x, b["attn_norm"], config.eps) if norm and not post_norm else x
    Q = ref.split_heads(t1 @ b["W_Q"], config.n_heads)
    K = ref.split_heads(t1 @ b["W_K"], config.n_kv_heads)
    V = ref.split_heads(t1 @ b["W_V"], config.n_kv_heads)
    if rope:
        Q, K = (rope_variant(a, pos, config.rope_theta) for a in (Q, K))
    if rope_values:
        V = rope_variant(V, pos, config.rope_theta)
    t3 = ref.merge_heads(gqa_variant(Q, K, V)) @ b["W_O"] + (x if residual else 0)
    if post_norm:                        # each norm after its residual sum (BERT's order)
        t3 = rms_norm(t3, b["attn_norm"], config.eps)
        return rms_norm(swiglu(t3, b["W_gate"], b["W_up"], b["W_down"]) + t3,
                        b["ffn_norm"], config.eps)
    t4 = rms_norm(t3, b["ffn_norm"], config.eps) if norm else t3
    return swiglu(t4, b["W_gate"], b["W_up"], b["W_down"]) + (t3 if residual else 0)
