"""all-MiniLM-L6-v2 in NumPy, one function per equation (see :mod:`helpers.bert`)."""

from __future__ import annotations

import math

import numpy as np

import helpers.reference as ref
from helpers.bert.weights import LN_EPS, load_encoder, tokenize

# ---------------------------------------------------------------------------------------
# The model, one equation per function
# ---------------------------------------------------------------------------------------

_math_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x) -> np.ndarray:
    """The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt``,
    elementwise (Python's ``math.erf`` on every entry; NumPy has no erf). Same shape."""
    x = np.asarray(x, dtype=np.float64)
    return np.asarray(_math_erf(x), dtype=np.float64).reshape(x.shape)


def gelu(x) -> np.ndarray:
    """Exact GELU, as BERT uses it: ``GELU(x) = x * Phi(x) = x * (1 + erf(x / sqrt 2)) / 2``.

    ``Phi`` is the standard normal CDF. x: any shape; returns the same shape.
    """
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def gelu_tanh(x) -> np.ndarray:
    """The tanh approximation of GELU (GPT-2's): ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
    Not what BERT uses; it differs from :func:`gelu` by up to about 5e-4."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def bert_embeddings(ids, params: dict) -> np.ndarray:
    """``X = LN_e(E[ids] + P[:N] + T[0])``: token, position and segment embeddings,
    then a layer norm. ids: ``[..., N]`` ints. Returns ``[..., N, d]``."""
    ids = np.asarray(ids, dtype=np.int64)
    n = ids.shape[-1]
    if n > params["P"].shape[0]:
        raise ValueError(f"{n} tokens is more than the model's {params['P'].shape[0]} positions")
    x = params["E"][ids] + params["P"][:n] + params["T"][0]        # [..., N, d]
    return ref.layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"],
                          eps=params.get("eps", LN_EPS))


def _key_mask(key_mask, x: np.ndarray):
    """``[..., N]`` True = real token  ->  ``[..., 1, 1, N]`` (heads, queries broadcast)."""
    if key_mask is None:
        return None
    key_mask = np.asarray(key_mask, dtype=bool)
    if key_mask.shape != x.shape[:-1]:
        raise ValueError(f"key_mask has shape {key_mask.shape}; x {x.shape} needs {x.shape[:-1]}")
    return key_mask[..., None, None, :]


def bert_attention(x, layer: dict, n_heads: int, key_mask=None) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head self-attention with biases, not causal, padding keys masked.

    ``Q = x W_Q + b_Q``, ``K = x W_K + b_K``, ``V = x W_V + b_V``; head ``c`` (column
    block ``c``, width ``d_h = d / n_heads``) computes
    ``softmax(Q_c K_c^T / sqrt(d_h) [key j masked where key_mask[j] is False]) V_c``;
    the heads are merged and projected: ``merge(heads) W_O + b_O``.

    x: ``[..., N, d]``; key_mask: ``[..., N]`` bool (True = a real token) or None.
    Returns ``(output [..., N, d], weights [..., n_heads, N, N])``.
    """
    x = np.asarray(x, dtype=np.float64)
    Qh = ref.split_heads(x @ layer["W_Q"] + layer["b_Q"], n_heads)   # [..., h, N, d_h]
    Kh = ref.split_heads(x @ layer["W_K"] + layer["b_K"], n_heads)   # [..., h, N, d_h]
    Vh = ref.split_heads(x @ layer["W_V"] + layer["b_V"], n_heads)   # [..., h, N, d_h]
    heads, weights = ref.scaled_dot_product_attention(Qh, Kh, Vh, _key_mask(key_mask, x))
    return ref.merge_heads(heads) @ layer["W_O"] + layer["b_O"], weights


def bert_layer(x, layer: dict, n_heads: int, key_mask=None, eps: float = LN_EPS) -> np.ndarray:
    """One post-norm encoder layer:

        h   = LN_1(x + MHA(x))                    (attention, residual, then norm)
        out = LN_2(h + GELU(h W1 + b1) W2 + b2)   (feed-forward, residual, then norm)

    x: ``[..., N, d]``; layer: a dict with :data:`LAYER_KEYS`; key_mask: ``[..., N]``
    bool or None (no padding). Returns ``[..., N, d]``.
    """
    x = np.asarray(x, dtype=np.float64)
    attended, _ = bert_attention(x, layer, n_heads, key_mask)         # [..., N, d]
    h = ref.layer_norm(x + attended, layer["ln1_gamma"], layer["ln1_beta"], eps=eps)
    ffn = gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"]   # [..., N, d]
    return ref.layer_norm(h + ffn, layer["ln2_gamma"], layer["ln2_beta"], eps=eps)


def bert_forward(ids, key_mask, params: dict, return_attention: bool = False):
    """The encoder: embeddings, then every layer. ids, key_mask: ``[..., N]``.

    Returns the last layer's token vectors ``[..., N, d]``; with ``return_attention``
    also the list of each layer's attention weights ``[..., n_heads, N, N]``.
    """
    h = bert_embeddings(ids, params)                                  # [..., N, d]
    n_heads, eps = params["n_heads"], params.get("eps", LN_EPS)
    attention = []
    for layer in params["layers"]:
        if return_attention:
            _, weights = bert_attention(h, layer, n_heads, key_mask)
            attention.append(weights)
        h = bert_layer(h, layer, n_heads, key_mask, eps=eps)
    return (h, attention) if return_attention else h


def mean_pool(h, key_mask) -> np.ndarray:
    """The mean of the real tokens' vectors: ``s = sum_i m_i h_i / sum_i m_i``.

    h: ``[..., N, d]``; key_mask: ``[..., N]`` (True/1 = real token, False/0 = padding).
    Returns ``[..., d]``. (sentence-transformers divides by ``max(sum_i m_i, 1e-9)``.)
    """
    h = np.asarray(h, dtype=np.float64)
    m = np.asarray(key_mask, dtype=np.float64)[..., None]            # [..., N, 1]
    return (h * m).sum(axis=-2) / np.maximum(m.sum(axis=-2), 1e-9)    # [..., d]


def l2_normalize(v) -> np.ndarray:
    """Each vector divided by its length: ``v / max(|v|, 1e-12)`` over the last axis."""
    v = np.asarray(v, dtype=np.float64)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def sentence_embeddings(ids, key_mask, params: dict) -> np.ndarray:
    """Unit-length sentence embeddings of a tokenized batch:
    ``l2_normalize(mean_pool(bert_forward(ids, key_mask)))``.

    ids, key_mask: ``[B, N]`` (a :class:`Batch`'s ``ids`` and ``mask``). Returns ``[B, d]``.
    """
    h = bert_forward(ids, key_mask, params)                           # [B, N, d]
    return l2_normalize(mean_pool(h, key_mask))                       # [B, d]


def encode(sentences, params: dict | None = None, tokenizer=None) -> np.ndarray:
    """Sentence embeddings as sentence-transformers computes them for this model:
    tokenize, encoder, mean over real tokens, unit length. Returns ``[B, d]``."""
    if params is None or tokenizer is None:
        loaded_params, loaded_tokenizer = load_encoder()
        params = loaded_params if params is None else params
        tokenizer = loaded_tokenizer if tokenizer is None else tokenizer
    batch = tokenize(sentences, tokenizer)
    return sentence_embeddings(batch.ids, batch.mask, params)         # [B, d]


def token_vectors(sentence: str, params: dict | None = None, tokenizer=None,
                  return_attention: bool = False):
    """One sentence's tokens and their contextual vectors ``[N, d]`` (last layer); with
    ``return_attention`` also each layer's attention ``[n_heads, N, N]``.

    Returns ``(tokens, vectors)`` or ``(tokens, vectors, attention)``.
    """
    if params is None or tokenizer is None:
        loaded_params, loaded_tokenizer = load_encoder()
        params = loaded_params if params is None else params
        tokenizer = loaded_tokenizer if tokenizer is None else tokenizer
    batch = tokenize([sentence], tokenizer)
    out = bert_forward(batch.ids, batch.mask, params, return_attention=return_attention)
    if return_attention:
        h, attention = out
        return batch.tokens[0], h[0], [w[0] for w in attention]
    return batch.tokens[0], out[0]

