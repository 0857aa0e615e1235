"""The course's reference implementation: a transformer language model in NumPy.

One function per equation, in the order the course teaches them, with the notation of
the lecture slides (Jurafsky & Martin, *Speech and Language Processing*, ch. 9-10):

    dot products      a . b,  cos(a, b),  X X^T
    softmax           softmax(z)_i = exp(z_i) / sum_j exp(z_j)
    self-attention    softmax(X X^T / sqrt(d)) X
    Q, K, V           Q = X W_Q,  K = X W_K,  V = X W_V
    attention         softmax(Q K^T / sqrt(d_k) [masked]) V
    multi-head        (head_1 (+) ... (+) head_h) W_O
    block (pre-norm)  t1 = LN1(x); t2 = MHA(t1); t3 = t2 + x; t4 = LN2(t3);
                      t5 = FFN(t4); h = t5 + t3
    LM                X = E[ids] + P[:N]; blocks; logits = h E^T (tied weights)

Conventions (``docs/contract.md``): row vectors (a sequence is ``X`` of shape ``[N, d]``,
one token per row); ``float64``; a boolean mask is ``True`` where query ``i`` *may*
attend to key ``j``; the attention scale is ``1 / sqrt(d_k)``; layer norm uses the
population variance with ``eps`` inside the square root.

These functions hold the math only, as picoGPT's ``gpt2.py`` does: they take NumPy
arrays of the right shapes and check nothing. What ``helpers`` exports (``from helpers
import softmax``) is each of them checked at the edge by its exercise's contract
(``helpers/exercises/<name>.py``): array-likes become float64 arrays, every shape and
named dimension is checked, and a wrong input is a ``ValueError`` that names it; a
product beyond float64 is a ``ValueError`` quoting the line below that overflowed.
On finite input none of them returns NaN or emits a NumPy warning: softmax and
cross-entropy subtract the maximum, layer norm and cosine similarity rescale before
squaring, masked scores become exact zeros instead of ``exp(-inf)``.

References: Vaswani et al. (2017) "Attention is all you need"; Radford et al. (2019),
GPT-2; Jay Mody's picoGPT (the style of one pure function per equation).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "dot", "cosine_similarity", "pairwise_scores", "softmax", "simple_self_attention",
    "project_qkv", "scaled_dot_product_attention", "causal_mask", "cross_attention",
    "split_heads", "merge_heads", "multi_head_attention", "layer_norm", "feed_forward",
    "transformer_block", "embed", "lm_head", "language_model_forward", "cross_entropy",
    "generate", "BLOCK_PARAM_SHAPES",
]


# ---------------------------------------------------------------------------------------
# 1. Dot products and similarity
# ---------------------------------------------------------------------------------------


def dot(a, b) -> float:
    """Dot product of two vectors: ``a . b = sum_i a_i b_i``. a, b: ``[n]``; a float."""
    return float(a @ b)                                          # [n] . [n] -> scalar


def cosine_similarity(a, b) -> float:
    """Cosine of the angle between two vectors: ``a . b / (|a| |b|)``, in ``[-1, 1]``.

    a, b: ``[n]``, neither all zeros. Each vector is first divided by its largest
    absolute entry (the cosine does not change), so that squaring cannot overflow."""
    a = a / np.abs(a).max()                                      # [n], max |a_i| = 1
    b = b / np.abs(b).max()                                      # [n]
    cos = (a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))      # scalar
    return float(np.clip(cos, -1.0, 1.0))


def pairwise_scores(X) -> np.ndarray:
    """All dot products between the rows of ``X``: ``S = X X^T``. X: ``[N, d]``; ``[N, N]``."""
    return X @ X.T                                               # [N, d] @ [d, N] -> [N, N]


# ---------------------------------------------------------------------------------------
# 2. Softmax
# ---------------------------------------------------------------------------------------


def softmax(z, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``: ``softmax(z)_i = exp(z_i) / sum_j exp(z_j)``.

    z: any shape; the same shape back, each slice along ``axis`` summing to 1. Stable:
    ``softmax(z) = softmax(z - max(z))``, so the largest exponent is ``exp(0) = 1``.
    Entries of ``-inf`` (masked scores) get probability exactly 0."""
    z_max = z.max(axis=axis, keepdims=True)                      # [..., 1, ...]
    with np.errstate(over="ignore"):                             # a gap wider than the
        shifted = z - z_max                                      # float range -> -inf
    e = np.exp(shifted)                                          # same shape, in [0, 1]
    return e / e.sum(axis=axis, keepdims=True)                   # sum >= 1: no 0/0


# ---------------------------------------------------------------------------------------
# 3. Simple self-attention (no weights): the slides' "bird's-eye view"
# ---------------------------------------------------------------------------------------


def simple_self_attention(X) -> np.ndarray:
    """Self-attention with no learned weights: ``softmax(X X^T / sqrt(d)) X``.

    X: ``[N, d]``; returns ``[N, d]``: row ``i`` is the average of all rows of ``X``,
    weighted by how similar they are to ``x_i``. No mask: every token sees every token."""
    scores = X @ X.T / np.sqrt(X.shape[-1])                      # [N, N]
    weights = softmax(scores, axis=-1)                           # [N, N], rows sum to 1
    return weights @ X                                           # [N, N] @ [N, d] -> [N, d]


# ---------------------------------------------------------------------------------------
# 4. Queries, keys, values and scaled dot-product attention
# ---------------------------------------------------------------------------------------


def project_qkv(X, W_Q, W_K, W_V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries, keys and values: ``Q = X W_Q, K = X W_K, V = X W_V``.

    X: ``[N, d]``; W_Q, W_K: ``[d, d_k]``; W_V: ``[d, d_v]``."""
    return X @ W_Q, X @ W_K, X @ W_V                             # [N, d_k], [N, d_k], [N, d_v]


def scaled_dot_product_attention(Q, K, V, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, optionally masked.

    Q: ``[..., N_q, d_k]``, K: ``[..., N_k, d_k]``, V: ``[..., N_k, d_v]``; mask: bool,
    broadcastable to ``[..., N_q, N_k]``, ``True`` where query ``i`` may attend to key
    ``j`` (masked pairs get weight exactly 0). Returns ``(output [..., N_q, d_v],
    weights [..., N_q, N_k])``; each row of ``weights`` sums to 1."""
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)           # [..., N_q, N_k]
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)                 # masked -> -inf
    weights = softmax(scores, axis=-1)                           # [..., N_q, N_k]
    return weights @ V, weights                                  # [..., N_q, d_v]


# ---------------------------------------------------------------------------------------
# 5. Masking and cross-attention
# ---------------------------------------------------------------------------------------


def causal_mask(n: int) -> np.ndarray:
    """Left-to-right mask for a decoder: ``mask[i, j] = (j <= i)``, bool ``[n, n]``."""
    return np.tril(np.ones((n, n), dtype=bool))                  # [n, n]


def cross_attention(X_dec, H_enc, W_Q, W_K, W_V) -> np.ndarray:
    """Encoder-decoder attention: queries from the decoder, keys and values from the encoder.

    ``Q = X_dec W_Q``, ``K = H_enc W_K``, ``V = H_enc W_V``,
    ``output = softmax(Q K^T / sqrt(d_k)) V``, no mask. Returns ``[N_dec, d_v]``."""
    Q = X_dec @ W_Q                                              # [N_dec, d_k]
    K = H_enc @ W_K                                              # [N_enc, d_k]
    V = H_enc @ W_V                                              # [N_enc, d_v]
    output, _ = scaled_dot_product_attention(Q, K, V)            # [N_dec, d_v]
    return output


# ---------------------------------------------------------------------------------------
# 6. Multi-head attention
# ---------------------------------------------------------------------------------------


def split_heads(X, n_heads: int) -> np.ndarray:
    """Split the columns of ``X`` into ``n_heads`` heads of width ``d_h = d / n_heads``.

    X: ``[..., N, d]``; returns ``[..., n_heads, N, d_h]``, head ``c`` holding columns
    ``c*d_h : (c+1)*d_h``."""
    d_h = X.shape[-1] // n_heads
    H = X.reshape(*X.shape[:-1], n_heads, d_h)                   # [..., N, n_heads, d_h]
    return np.swapaxes(H, -2, -3)                                # [..., n_heads, N, d_h]


def merge_heads(H) -> np.ndarray:
    """Concatenate heads side by side, the inverse of :func:`split_heads`:
    ``[..., n_heads, N, d_h]`` to ``[..., N, n_heads * d_h]``."""
    X = np.swapaxes(H, -2, -3)                                   # [..., N, n_heads, d_h]
    return X.reshape(*X.shape[:-2], X.shape[-2] * X.shape[-1])   # [..., N, n_heads*d_h]


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads: int, causal: bool = True) -> np.ndarray:
    """Multi-head self-attention: ``MHA(X) = (head_1 (+) ... (+) head_h) W_O``.

    ``head_c = Attention(X W_Q^c, X W_K^c, X W_V^c)``, ``W_*^c`` the column block ``c``
    of ``W_*`` (width ``d_h = d / n_heads``), causal unless ``causal=False``.
    X: ``[..., N, d]``; W_Q, W_K, W_V, W_O: ``[d, d]``. Returns ``[..., N, d]``."""
    Q, K, V = project_qkv(X, W_Q, W_K, W_V)                      # each [..., N, d]
    Qh = split_heads(Q, n_heads)                                 # [..., h, N, d_h]
    Kh = split_heads(K, n_heads)                                 # [..., h, N, d_h]
    Vh = split_heads(V, n_heads)                                 # [..., h, N, d_h]
    mask = causal_mask(X.shape[-2]) if causal else None          # [N, N] or None
    heads, _ = scaled_dot_product_attention(Qh, Kh, Vh, mask)    # [..., h, N, d_h]
    return merge_heads(heads) @ W_O                              # [..., N, d]


# ---------------------------------------------------------------------------------------
# 7. The transformer block
# ---------------------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps: float = 1e-5) -> np.ndarray:
    """Layer norm over the last axis: ``gamma * (x - mu) / sqrt(sigma^2 + eps) + beta``.

    ``mu`` and ``sigma^2`` are the mean and the *population* variance of each vector.
    x: ``[..., d]``; gamma, beta: ``[d]``. Each row is first scaled exactly by a power
    of two (``r = s 2^e``, its largest deviation from the mean, ``eps`` by ``r^2``): the
    same result, with every square finite and nonzero for rows near 1e300 or 1e-300."""
    _, e = np.frexp(np.abs(x).max(axis=-1, keepdims=True))       # [..., 1], |x| < 2**e
    xs = np.ldexp(x, -e)                                         # [..., d], |xs| < 1, exact
    dev = xs - xs.mean(axis=-1, keepdims=True)                   # [..., d], x - mu, scaled
    s = np.abs(dev).max(axis=-1, keepdims=True)                  # [..., 1]
    s = np.where(s > 0, s, 1.0)                                  # constant rows: no 0/0
    u = dev / s                                                  # [..., d], |u| <= 1
    var_u = (u * u).mean(axis=-1, keepdims=True)                 # [..., 1], sigma^2 / r^2
    with np.errstate(under="ignore", over="ignore"):
        eps_u = np.ldexp(eps / s / s, -2 * e)                    # [..., 1], eps / r^2
    denom = np.sqrt(var_u + eps_u)                               # [..., 1], 0: constant row
    y = u / np.where(denom > 0, denom, 1.0)                      # [..., d], (x - mu) / sigma
    small = eps_u > 1                                            # rows far below sqrt(eps),
    if small.any():                                              # in true units (r^2 < eps)
        r = np.ldexp(s, np.where(small, e, 0))                   # [..., 1], r = s 2^e
        with np.errstate(under="ignore"):
            y = np.where(small, u * r / np.sqrt(eps + var_u * r * r), y)  # [..., d]
    return gamma * y + beta                                      # [..., d]


def feed_forward(x, W1, b1, W2, b2) -> np.ndarray:
    """Position-wise feed-forward network: ``FFN(x) = ReLU(x W1 + b1) W2 + b2``.

    x: ``[..., N, d]``; W1: ``[d, d_ff]``; b1: ``[d_ff]``; W2: ``[d_ff, d]``; b2: ``[d]``."""
    hidden = np.maximum(0.0, x @ W1 + b1)                        # [N, d_ff], ReLU
    return hidden @ W2 + b2                                      # [N, d]


#: The parameters of one transformer block, as shapes in terms of ``d`` and ``d_ff``.
BLOCK_PARAM_SHAPES = {
    "ln1_gamma": ("d",), "ln1_beta": ("d",),
    "W_Q": ("d", "d"), "W_K": ("d", "d"), "W_V": ("d", "d"), "W_O": ("d", "d"),
    "ln2_gamma": ("d",), "ln2_beta": ("d",),
    "W1": ("d", "d_ff"), "b1": ("d_ff",), "W2": ("d_ff", "d"), "b2": ("d",),
}


def transformer_block(x, params, n_heads: int, causal: bool = True) -> np.ndarray:
    """One pre-norm transformer block, exactly the slides' equations:

        t1 = LayerNorm1(x)
        t2 = MultiHeadAttention(t1)
        t3 = t2 + x                 (residual)
        t4 = LayerNorm2(t3)
        t5 = FFN(t4)
        h  = t5 + t3                (residual)

    x: ``[N, d]``; params: the block's weights, ``BLOCK_PARAM_SHAPES``. Returns ``h``."""
    p = params
    t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])            # [N, d]
    t2 = multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"],
                              n_heads, causal=causal)            # [N, d]
    t3 = t2 + x                                                  # [N, d], the residual
    t4 = layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])           # [N, d]
    t5 = feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"])    # [N, d]
    return t5 + t3                                               # [N, d], the residual


# ---------------------------------------------------------------------------------------
# 8. Embeddings and the language-model head
# ---------------------------------------------------------------------------------------


def embed(token_ids, E, P) -> np.ndarray:
    """Token plus position embeddings: ``X = E[ids] + P[:N]``.

    token_ids: ``[N]`` ints in ``[0, V)``; E: ``[V, d]``; P: ``[n_ctx, d]``, ``N <= n_ctx``.
    Returns ``[N, d]``: row ``i`` is ``E[ids[i]] + P[i]``."""
    return E[token_ids] + P[: len(token_ids)]                    # [N, d]


def lm_head(h, E) -> np.ndarray:
    """Unembedding with tied weights: ``logits = h E^T``, h: ``[N, d]``, E: ``[V, d]``:
    ``logits[i, v]`` is position ``i``'s vector dotted with token ``v``'s embedding."""
    return h @ E.T                                               # [N, d] @ [d, V] -> [N, V]


def language_model_forward(token_ids, params, n_heads: int) -> np.ndarray:
    """A decoder-only transformer language model, token ids to next-token logits.

        X = E[ids] + P[:N]
        h = block_L( ... block_1(X))          (all causal)
        h = LayerNorm_f(h)                    (if ln_f_gamma / ln_f_beta are given)
        logits = h E^T

    params: ``E [V, d]``, ``P [n_ctx, d]``, ``blocks`` (block parameter dicts) and
    optionally ``ln_f_gamma, ln_f_beta [d]``. Returns logits ``[N, V]``: row ``i``
    scores the token that follows ``token_ids[: i + 1]``."""
    h = embed(token_ids, params["E"], params["P"])               # [N, d]
    for block in params["blocks"]:
        h = transformer_block(h, block, n_heads, causal=True)    # [N, d]
    if "ln_f_gamma" in params:
        h = layer_norm(h, params["ln_f_gamma"], params["ln_f_beta"])  # [N, d]
    return lm_head(h, params["E"])                               # [N, V]


def cross_entropy(logits, targets) -> float:
    """Mean negative log-likelihood of the targets,
    ``mean_i [ -log softmax(logits[i])[targets[i]] ]``, in nats.

    ``-log softmax(z)[t] = log sum exp(z - m) - (z[t] - m)`` with ``m = max(z)``: stable,
    and ``m`` cancels exactly instead of being added and subtracted (``1e300 + log 2 -
    1e300`` would give 0). logits: ``[N, V]``; targets: ``[N]`` ints in ``[0, V)``."""
    N = len(logits)
    m = logits.max(axis=-1, keepdims=True)                       # [N, 1]
    with np.errstate(over="ignore"):                             # gaps beyond the float
        shifted = logits - m                                     # range -> -inf: [N, V]
        nll = (np.log(np.exp(shifted).sum(axis=-1))              # logsumexp(z) - m
               - shifted[np.arange(N), targets])                 # - (z_t - m): [N], >= 0
    return float(np.sum(nll / N))                                # mean; no overflow in sum


def generate(token_ids, params, n_heads: int, n_new: int, temperature: float = 0.0,
             rng=None) -> np.ndarray:
    """Extend a prompt by ``n_new`` tokens, one at a time (autoregressive decoding).

    At each step the model reads the last ``n_ctx`` tokens and scores the next one.
    ``temperature == 0``: the argmax (greedy); otherwise a sample of
    ``softmax(logits / temperature)`` drawn with ``rng`` (a fresh one when None).
    Returns the prompt followed by the ``n_new`` new ids."""
    V, n_ctx = len(params["E"]), len(params["P"])
    rng = np.random.default_rng() if rng is None else rng
    ids = np.asarray(token_ids, dtype=np.int64)                  # [N]
    for _ in range(n_new):
        logits = language_model_forward(ids[-n_ctx:], params, n_heads)[-1]  # [V]
        if temperature == 0:
            next_id = int(np.argmax(logits))
        else:
            with np.errstate(over="ignore"):                     # tiny T: -> -inf, p=0
                scaled = (logits - logits.max()) / temperature   # [V], <= 0
            next_id = int(rng.choice(V, p=softmax(scaled)))
        ids = np.append(ids, next_id)                            # [N + 1]
    return ids
