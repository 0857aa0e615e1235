"""Inference, fast and memory-light (notebook 13): the references of its exercises.

One short function per equation, NumPy only, no validation (what the learner calls is
each one checked at the edge by its exercise's contract, ``helpers/exercises/<name>.py``):

    top-p            the smallest set of likeliest tokens with mass >= p, renormalised
    penalty          a seen token's logit u -> u / r if u > 0, u * r otherwise
    beam search      keep the B best partial sequences by sum of log-probabilities;
                     rank finished ones by (sum log p) / length ** alpha
    KV cache         one new token's attention reads the keys and values kept so far
    online softmax   a running max m and sum l over blocks: l <- l e^(m - m') + sum e^(z - m')
    flash attention  the same running max and sum per query row, never the [n, n] scores
"""

from __future__ import annotations

import numpy as np

from helpers import reference

__all__ = ["top_p_distribution", "repetition_penalty", "beam_search", "attention_with_cache",
           "generate_cached", "online_softmax", "flash_attention"]


def top_p_distribution(logits, p) -> np.ndarray:
    """[V]: softmax(logits) on the nucleus, renormalised, 0 elsewhere.

    The nucleus: the fewest likeliest tokens whose probabilities sum to at least p
    (equal probabilities in index order)."""
    probs = reference.softmax(np.asarray(logits, dtype=np.float64))   # [V]
    order = np.argsort(-probs, kind="stable")                    # [V], likeliest first
    before = np.cumsum(probs[order]) - probs[order]              # [V], mass before each
    keep = order[before < p]                                     # the nucleus (>= 1 token)
    out = np.zeros_like(probs)                                   # [V]
    out[keep] = probs[keep] / probs[keep].sum()                  # renormalised
    return out


def repetition_penalty(logits, previous_ids, penalty) -> np.ndarray:
    """[V]: the logits, each token of previous_ids penalised once.

    A seen token's positive logit is divided by penalty, a non-positive one multiplied
    by it; the others are unchanged."""
    out = np.array(logits, dtype=np.float64)                     # [V], a copy
    seen = np.unique(np.asarray(previous_ids, dtype=np.int64))   # each seen token once
    u = out[seen]                                                # [S]
    out[seen] = np.where(u > 0, u / penalty, u * penalty)        # [S]
    return out


def _log_probs(ids, params, n_heads) -> np.ndarray:
    n_ctx = len(params["P"])
    logits = reference.language_model_forward(ids[-n_ctx:], params, n_heads)[-1]  # [V]
    return logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())     # [V]


def beam_search(token_ids, params, n_heads, n_new, beam_width, eos_id=-1,
                alpha=1.0) -> np.ndarray:
    """[M]: the prompt followed by the best continuation beam search finds.

    Keeps the beam_width best partial sequences by sum of log-probabilities; a beam
    ending with eos_id is finished; at most n_new new ids. The winner among finished and
    live beams has the largest (sum of log-probabilities) / length ** alpha."""
    prompt = [int(t) for t in token_ids]
    beams = [((), 0.0)]                                          # (new ids, sum log p)
    done = []                                                    # finished hypotheses
    for _ in range(n_new):
        grown = [(new + (v,), score + lp)
                 for new, score in beams
                 for v, lp in enumerate(_log_probs(np.array(prompt + list(new)), params, n_heads))]
        grown.sort(key=lambda b: -b[1])                          # stable: ties keep order
        beams = []
        for new, score in grown[:beam_width]:
            (done if new[-1] == eos_id else beams).append((new, score))
        if not beams:
            break
    best = max(done + beams, key=lambda b: b[1] / len(b[0]) ** alpha)   # normalised
    return np.array(prompt + list(best[0]), dtype=np.int64)


def attention_with_cache(x, W_Q, W_K, W_V, W_O, n_heads, K_cache, V_cache):
    """(y [d], K [t + 1, d], V [t + 1, d]): one new token's attention and the cache.

    y: the multi-head attention of the new token x [d] over the t cached keys and
    values and its own; K, V: the cache with x's key and value appended."""
    x, W_Q, W_K, W_V, W_O = (np.asarray(a, dtype=np.float64) for a in (x, W_Q, W_K, W_V, W_O))
    d = x.shape[0]
    K = np.vstack([np.reshape(K_cache, (-1, d)), (x @ W_K)[None]])   # [t + 1, d]
    V = np.vstack([np.reshape(V_cache, (-1, d)), (x @ W_V)[None]])   # [t + 1, d]
    q = reference.split_heads((x @ W_Q)[None], n_heads)          # [h, 1, d_h]
    heads, _ = reference.scaled_dot_product_attention(
        q, reference.split_heads(K, n_heads), reference.split_heads(V, n_heads))  # [h, 1, d_h]
    return (reference.merge_heads(heads) @ W_O)[0], K, V        # [d], [t+1, d], [t+1, d]


def _block_step(x, block, n_heads, cache):
    p = block
    t1 = reference.layer_norm(x, p["ln1_gamma"], p["ln1_beta"])  # [d]
    t2, cache["K"], cache["V"] = attention_with_cache(
        t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, cache["K"], cache["V"])
    t3 = t2 + x                                                  # [d]
    t4 = reference.layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])  # [d]
    return reference.feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"]) + t3   # [d]


def generate_cached(token_ids, params, n_heads, n_new) -> np.ndarray:
    """[N + n_new]: greedy generation with a KV cache per block; N + n_new <= n_ctx.
    Each token runs through the blocks once: the same ids as ``generate`` at T = 0."""
    d = params["E"].shape[1]
    caches = [{"K": np.zeros((0, d)), "V": np.zeros((0, d))} for _ in params["blocks"]]
    ids = [int(t) for t in token_ids]
    for pos in range(len(ids) + n_new - 1):
        h = params["E"][ids[pos]] + params["P"][pos]             # [d]
        for block, cache in zip(params["blocks"], caches):
            h = _block_step(h, block, n_heads, cache)            # [d]
        if pos + 1 >= len(ids):                                  # past the prompt: choose
            if "ln_f_gamma" in params:
                h = reference.layer_norm(h, params["ln_f_gamma"], params["ln_f_beta"])
            ids.append(int(np.argmax(params["E"] @ h)))          # [V] -> the next id
    return np.array(ids, dtype=np.int64)


def online_softmax(z, block_size) -> np.ndarray:
    """[n]: softmax(z), its max and sum gathered block by block in one pass.

    m' = max(m, max block); l <- l e^(m - m') + sum e^(block - m'); then e^(z - m) / l."""
    z = np.asarray(z, dtype=np.float64)                          # [n]
    m, l = -np.inf, 0.0
    for start in range(0, len(z), block_size):
        block = z[start:start + block_size]                      # [<= block_size]
        m_new = max(m, block.max())
        l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()  # rescale the old sum
        m = m_new
    return np.exp(z - m) / l                                     # [n]


def flash_attention(Q, K, V, block_size, causal=False) -> np.ndarray:
    """[n, d_v]: softmax(Q K^T / sqrt(d_k) [causal]) V, computed by blocks of keys.

    A running max m, sum l and output O per query row, over blocks of block_size keys:
    never the whole [n, n] scores."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))   # [n, d_k], [n, d_v]
    n, d_k = Q.shape
    m = np.full((n, 1), -np.inf)                                 # [n, 1], running max
    l = np.zeros((n, 1))                                         # [n, 1], running sum
    O = np.zeros((n, V.shape[1]))                                # [n, d_v], unnormalised
    rows = np.arange(n)[:, None]                                 # [n, 1], query positions
    for start in range(0, K.shape[0], block_size):
        s = Q @ K[start:start + block_size].T / np.sqrt(d_k)     # [n, b], one block
        if causal:
            s = np.where(start + np.arange(s.shape[1]) <= rows, s, -np.inf)   # [n, b]
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))      # [n, 1]
        safe = np.where(np.isfinite(m_new), m_new, 0.0)          # rows with no key yet
        scale = np.exp(m - safe)                                 # [n, 1], old -> new max
        e = np.exp(s - safe)                                     # [n, b]
        l = l * scale + e.sum(axis=1, keepdims=True)             # [n, 1]
        O = O * scale + e @ V[start:start + block_size]          # [n, d_v]
        m = m_new
    return O / l                                                 # [n, d_v]
