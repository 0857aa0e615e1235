"""all-MiniLM-L6-v2 in NumPy, one function per equation (see :mod:`helpers.bert`)."""

from __future__ import annotations

import math

import numpy as np

import helpers.reference as ref
from helpers.bert._threads import one_blas_thread
from helpers.bert.weights import LAYER_KEYS, LN_EPS, load_encoder, tokenize

# ---------------------------------------------------------------------------------------
# The model, one equation per function
# ---------------------------------------------------------------------------------------

_math_erf = np.frompyfunc(math.erf, 1, 1)

# erf in float32 without a Python call per entry: erf(x) = tanh(x p(x^2 / 16)), p a
# polynomial of degree 6 in u = min(x^2 / 16, 1). Its coefficients come from a weighted
# least-squares fit of atanh(erf(x)) / x on [0, 4] (weights (1 - erf^2) x, the factor by
# which an error inside tanh reaches erf), refined towards the smallest largest error.
# Beyond |x| = 4, erf(x) is 1 in float32 and the argument of tanh only grows, so tanh
# saturates. In float32 the result is within 1.4e-7 of math.erf everywhere (a few units
# in the last place; tests/helpers/test_bert.py checks a dense grid).
_ERF_TANH_COEFFS = (1.1283797054566098, 1.644247706014715, -0.04720236700480439,
                    -2.5629445867639564, 5.879380525061311, -6.276365375610294,
                    2.6667997689583665)
_GELU_ROWS = 64          # rows per chunk of the float32 GELU: its temporaries stay in cache
_SMALL_ROWS = 512        # a float32 batch of fewer token rows runs on one BLAS thread


def _float(x) -> np.ndarray:
    """``x`` as a float array: float32 and float64 stay as they are, the rest -> float64."""
    x = np.asarray(x)
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float64)


def _erf_float32(x: np.ndarray, out: np.ndarray | None = None, scale: float = 1.0
                 ) -> np.ndarray:
    """``erf(scale * x)`` for a float32 array, vectorised (see ``_ERF_TANH_COEFFS``)."""
    f32 = np.float32
    with np.errstate(over="ignore"):                        # |x| > 1e19: inf, then tanh = 1
        u = np.multiply(x, x, out=out)                      # x^2
        u *= f32(scale * scale / 16.0)
        np.minimum(u, f32(1.0), out=u)                      # u = min((scale x)^2 / 16, 1)
        c = _ERF_TANH_COEFFS
        p = u * f32(c[-1])
        p += f32(c[-2])
        for coeff in c[-3::-1]:                             # Horner
            p *= u
            p += f32(coeff)
        p *= x
        p *= f32(scale)
    np.tanh(p, out=u)
    return u


def erf(x) -> np.ndarray:
    """The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise.

    float64 (and anything that is not float32): Python's ``math.erf`` on every entry
    (NumPy has no erf), exact to the last digit. float32: a vectorised approximation,
    ``tanh(x p(x^2))``, within 1.4e-7 of ``math.erf`` (float32 keeps about 7 digits).
    Same shape and dtype as the input.
    """
    x = _float(x)
    if x.dtype == np.float32:
        return _erf_float32(x.reshape(-1)).reshape(x.shape)
    return np.asarray(_math_erf(x), dtype=np.float64).reshape(x.shape)


def _gelu_float32_inplace(z: np.ndarray) -> np.ndarray:
    """Exact GELU of a float32 array, written over ``z``, a chunk of rows at a time."""
    rows = z.reshape(-1, z.shape[-1]) if z.ndim > 1 else z.reshape(1, -1)
    half = np.float32(0.5)
    for i in range(0, rows.shape[0], _GELU_ROWS):
        r = rows[i:i + _GELU_ROWS]
        phi = _erf_float32(r, scale=1.0 / math.sqrt(2.0))   # erf(z / sqrt 2)
        phi += np.float32(1.0)
        phi *= half
        r *= phi                                            # z * Phi(z)
    return z


def gelu(x) -> np.ndarray:
    """Exact GELU, as BERT uses it: ``GELU(x) = x * Phi(x) = x * (1 + erf(x / sqrt 2)) / 2``.

    ``Phi`` is the standard normal CDF. x: any shape; returns the same shape, float32 for
    float32 input (with the vectorised :func:`erf`), float64 otherwise.
    """
    x = _float(x)
    if x.dtype == np.float32:
        return _gelu_float32_inplace(x.copy())
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def gelu_tanh(x) -> np.ndarray:
    """The tanh approximation of GELU (GPT-2's): ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
    Not what BERT uses; it differs from :func:`gelu` by up to about 5e-4."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def _is_float32(*arrays) -> bool:
    """True when every array is float32: the capstone path (the model's own weights)."""
    return all(np.asarray(a).dtype == np.float32 for a in arrays)


def _layer_norm(x: np.ndarray, gamma, beta, eps: float) -> np.ndarray:
    """Layer norm in the dtype of ``x``: float64 -> :func:`helpers.reference.layer_norm`
    (the course's function, with its checks); float32 -> the same formula in float32."""
    if x.dtype != np.float32:
        return ref.layer_norm(x, gamma, beta, eps=eps)
    centred = x - x.mean(axis=-1, keepdims=True)                     # [..., d]
    var = np.mean(np.square(centred), axis=-1, keepdims=True)       # [..., 1]
    centred *= 1.0 / np.sqrt(var + np.float32(eps))
    centred *= gamma
    centred += beta
    return centred


def bert_embeddings(ids, params: dict) -> np.ndarray:
    """``X = LN_e(E[ids] + P[:N] + T[0])``: token, position and segment embeddings,
    then a layer norm. ids: ``[..., N]`` ints. Returns ``[..., N, d]`` in the dtype of
    ``E`` (float32 for the model's own weights, float64 for float64 tables)."""
    ids = np.asarray(ids, dtype=np.int64)
    n = ids.shape[-1]
    if n > params["P"].shape[0]:
        raise ValueError(f"{n} tokens is more than the model's {params['P'].shape[0]} positions")
    x = _float(params["E"][ids])
    x = x + params["P"][:n].astype(x.dtype, copy=False)              # [..., N, d]
    x += params["T"][0].astype(x.dtype, copy=False)
    return _layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"],
                       params.get("eps", LN_EPS))


def _key_mask(key_mask, x: np.ndarray):
    """``[..., N]`` True = real token  ->  ``[..., 1, 1, N]`` (heads, queries broadcast)."""
    if key_mask is None:
        return None
    key_mask = np.asarray(key_mask, dtype=bool)
    if key_mask.shape != x.shape[:-1]:
        raise ValueError(f"key_mask has shape {key_mask.shape}; x {x.shape} needs {x.shape[:-1]}")
    return key_mask[..., None, None, :]


def _attention_float32(x: np.ndarray, layer: dict, n_heads: int, key_mask,
                       need_weights: bool):
    """Multi-head attention of float32 ``x [..., N, d]``: every head in one batched
    product, padding keys masked by adding -inf to their scores, the softmax's division
    applied to the (smaller) output instead of the ``N x N`` weights when they are not
    asked for. Returns ``(merged heads before W_O [..., N, d], weights or None)``."""
    *lead, n, d = x.shape
    d_h = d // n_heads
    rows = x.reshape(-1, d)                                          # [R, d]

    def heads(W, b, scale=None):                                     # -> [..., h, N, d_h]
        t = rows @ W
        t += b
        if scale is not None:
            t *= scale
        return t.reshape(*lead, n, n_heads, d_h).swapaxes(-2, -3)

    Qh = heads(layer["W_Q"], layer["b_Q"], np.float32(1.0 / math.sqrt(d_h)))
    Kh = heads(layer["W_K"], layer["b_K"])
    Vh = heads(layer["W_V"], layer["b_V"])
    with one_blas_thread():                          # many small products: see _threads
        scores = Qh @ Kh.swapaxes(-1, -2)                            # [..., h, N, N]
    mask = _key_mask(key_mask, x)
    if mask is not None and not mask.all():
        if not mask.any(axis=-1).all():
            raise ValueError("a sentence of the batch has no real token (key_mask all False)")
        scores += np.where(mask, np.float32(0.0), np.float32(-np.inf))  # [..., 1, 1, N]
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)                                       # masked keys -> 0
    total = scores.sum(axis=-1, keepdims=True)                       # [..., h, N, 1]
    if need_weights:
        scores /= total
    with one_blas_thread():
        out = scores @ Vh                                            # [..., h, N, d_h]
    if not need_weights:
        out /= total
    merged = out.swapaxes(-2, -3).reshape(*lead, n, d)               # [..., N, d]
    return merged, (scores if need_weights else None)


def _attention(x: np.ndarray, layer: dict, n_heads: int, key_mask, need_weights: bool):
    """``(merged heads [..., N, d], weights [..., h, N, N] or None)``; float64 through the
    course's functions, float32 through :func:`_attention_float32`."""
    if x.dtype == np.float32:                         # _input: the weights are too
        return _attention_float32(x, layer, n_heads, key_mask, need_weights)
    Qh = ref.split_heads(x @ layer["W_Q"] + layer["b_Q"], n_heads)   # [..., h, N, d_h]
    Kh = ref.split_heads(x @ layer["W_K"] + layer["b_K"], n_heads)   # [..., h, N, d_h]
    Vh = ref.split_heads(x @ layer["W_V"] + layer["b_V"], n_heads)   # [..., h, N, d_h]
    heads, weights = ref.scaled_dot_product_attention(Qh, Kh, Vh, _key_mask(key_mask, x))
    return ref.merge_heads(heads), weights


def _input(x, layer: dict) -> np.ndarray:
    """``x`` in the layer's working dtype: float32 only when ``x`` and the weights are."""
    x = _float(x)
    if x.dtype == np.float32 and not _is_float32(*(layer[k] for k in LAYER_KEYS)):
        x = x.astype(np.float64)
    return x


def bert_attention(x, layer: dict, n_heads: int, key_mask=None) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head self-attention with biases, not causal, padding keys masked.

    ``Q = x W_Q + b_Q``, ``K = x W_K + b_K``, ``V = x W_V + b_V``; head ``c`` (column
    block ``c``, width ``d_h = d / n_heads``) computes
    ``softmax(Q_c K_c^T / sqrt(d_h) [key j masked where key_mask[j] is False]) V_c``;
    the heads are merged and projected: ``merge(heads) W_O + b_O``.

    x: ``[..., N, d]``; key_mask: ``[..., N]`` bool (True = a real token) or None.
    Returns ``(output [..., N, d], weights [..., n_heads, N, N])``, float32 when ``x``
    and the weights are float32, float64 otherwise.
    """
    x = _input(x, layer)
    merged, weights = _attention(x, layer, n_heads, key_mask, need_weights=True)
    return merged @ layer["W_O"] + layer["b_O"], weights


def bert_layer(x, layer: dict, n_heads: int, key_mask=None, eps: float = LN_EPS) -> np.ndarray:
    """One post-norm encoder layer:

        h   = LN_1(x + MHA(x))                    (attention, residual, then norm)
        out = LN_2(h + GELU(h W1 + b1) W2 + b2)   (feed-forward, residual, then norm)

    x: ``[..., N, d]``; layer: a dict with :data:`LAYER_KEYS`; key_mask: ``[..., N]``
    bool or None (no padding). Returns ``[..., N, d]``: float32 when ``x`` and the
    weights are float32 (the model as loaded), float64 otherwise (the exercises).
    """
    x = _input(x, layer)
    if x.dtype == np.float32 and x.size < _SMALL_ROWS * x.shape[-1]:
        with one_blas_thread():                      # a small batch: see _threads
            return _bert_layer(x, layer, n_heads, key_mask, eps)
    return _bert_layer(x, layer, n_heads, key_mask, eps)


def _bert_layer(x: np.ndarray, layer: dict, n_heads: int, key_mask, eps: float) -> np.ndarray:
    merged, _ = _attention(x, layer, n_heads, key_mask, need_weights=False)
    attended = merged @ layer["W_O"]                                 # [..., N, d]
    attended += layer["b_O"]
    attended += x
    h = _layer_norm(attended, layer["ln1_gamma"], layer["ln1_beta"], eps)
    if x.dtype == np.float32:                                        # in place, in chunks
        z = h.reshape(-1, h.shape[-1]) @ layer["W1"]                 # [R, d_ff]
        z += layer["b1"]
        ffn = (_gelu_float32_inplace(z) @ layer["W2"]).reshape(h.shape)
    else:
        ffn = gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"]      # [..., N, d]
    ffn += layer["b2"]
    ffn += h
    return _layer_norm(ffn, layer["ln2_gamma"], layer["ln2_beta"], eps)


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
    Returns ``[..., d]`` (float32 for float32 ``h``, else float64). (sentence-transformers
    divides by ``max(sum_i m_i, 1e-9)``.)
    """
    h = _float(h)
    m = np.asarray(key_mask, dtype=h.dtype)[..., None]               # [..., N, 1]
    return (h * m).sum(axis=-2) / np.maximum(m.sum(axis=-2), h.dtype.type(1e-9))   # [..., d]


def l2_normalize(v) -> np.ndarray:
    """Each vector divided by its length: ``v / max(|v|, 1e-12)`` over the last axis."""
    v = _float(v)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), v.dtype.type(1e-12))


def sentence_embeddings(ids, key_mask, params: dict) -> np.ndarray:
    """Unit-length sentence embeddings of a tokenized batch:
    ``l2_normalize(mean_pool(bert_forward(ids, key_mask)))``.

    ids, key_mask: ``[B, N]`` (a :class:`Batch`'s ``ids`` and ``mask``). Returns ``[B, d]``.
    """
    h = bert_forward(ids, key_mask, params)                           # [B, N, d]
    return l2_normalize(mean_pool(h, key_mask))                       # [B, d]


def encode(sentences, params: dict | None = None, tokenizer=None,
           batch_size: int = 32) -> np.ndarray:
    """Sentence embeddings as sentence-transformers computes them for this model:
    tokenize, encoder, mean over real tokens, unit length. Returns ``[B, d]`` (float32
    with the model as loaded).

    Like sentence-transformers, the sentences are sorted by length and run in batches
    of ``batch_size``, each padded only to its own longest sentence; the result is in
    the order given.
    """
    if params is None or tokenizer is None:
        loaded_params, loaded_tokenizer = load_encoder()
        params = loaded_params if params is None else params
        tokenizer = loaded_tokenizer if tokenizer is None else tokenizer
    if isinstance(sentences, str):
        sentences = [sentences]
    sentences = list(sentences)
    if len(sentences) <= batch_size:
        batch = tokenize(sentences, tokenizer)
        return sentence_embeddings(batch.ids, batch.mask, params)     # [B, d]
    lengths = [len(e.ids) for e in tokenizer.encode_batch(sentences)]
    order = np.argsort(-np.array(lengths), kind="stable")            # longest first
    parts = []
    for start in range(0, len(order), batch_size):
        chunk = [sentences[i] for i in order[start:start + batch_size]]
        batch = tokenize(chunk, tokenizer)
        parts.append(sentence_embeddings(batch.ids, batch.mask, params))
    out = np.empty((len(sentences), parts[0].shape[-1]), dtype=parts[0].dtype)
    out[order] = np.concatenate(parts)
    return out


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
