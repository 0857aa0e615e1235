"""The mistakes learners really make in each exercise function, as runnable code.

Each :class:`Mistake` is a small function with the signature of the contract function
that computes what a solution with exactly that mistake returns, and a ``message`` that
says the mistake in words a learner can act on. :mod:`helpers.checks` runs them on the
same case as a failing answer: when one of them gives the same output, the failure
message names it ("scores were not divided by sqrt(d_k)").

``MISTAKES[name]`` lists the mistakes of contract function ``name`` (every name of
``helpers.CONTRACT_FUNCTIONS`` has an entry). A mistake of :func:`generate` that changes
the sampling distribution also carries ``sampler(logits, temperature) -> probabilities``,
because two samplers that draw from the same distribution need not consume the random
generator alike: sampled answers are diagnosed by distribution, not by exact ids.

The code here is deliberately wrong. For the parts that are right it calls other
functions of ``helpers.reference`` through the module (``reference.softmax``), never the
reference of its own function (which :func:`helpers.checks.check` poisons while a
function runs), so that each mistake can be checked like a learner's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from helpers import reference

__all__ = ["Mistake", "MISTAKES"]


@dataclass(frozen=True)
class Mistake:
    """One known mistake: ``fn`` reproduces it, ``message`` explains it."""

    key: str
    message: str
    fn: Callable
    sampler: Callable | None = None


MISTAKES: dict[str, list[Mistake]] = {}


def _mistake(function: str, key: str, message: str, sampler: Callable | None = None):
    """Decorator: register the decorated function as mistake ``key`` of ``function``."""

    def register(fn):
        MISTAKES.setdefault(function, []).append(Mistake(key, message, fn, sampler))
        return fn

    return register


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _naive_softmax(z, axis=-1):
    e = np.exp(_f(z))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_any(z, axis=-1):
    """A stable softmax that also accepts -inf rows (they give NaN, as a learner's would)."""
    z = _f(z)
    m = np.max(z, axis=axis, keepdims=True)
    e = np.exp(z - np.where(np.isfinite(m), m, 0.0))
    return e / e.sum(axis=axis, keepdims=True)


def _attention(Q, K, V, mask=None, *, scale=None, axis=-1, mask_mode="neg_inf",
               transpose_scores=False, scale_after_softmax=False):
    """Scaled dot-product attention with one knob per known mistake."""
    Q, K, V = _f(Q), _f(K), _f(V)
    s = K @ Q.T if transpose_scores else Q @ K.T
    d_k = Q.shape[-1]
    factor = np.sqrt(d_k) if scale is None else scale
    if not scale_after_softmax:
        s = s / factor
    if mask is not None and mask_mode != "ignored":
        m = np.asarray(mask, dtype=bool)
        if transpose_scores:
            m = m.T
        if mask_mode == "neg_inf":
            s = np.where(m, s, -np.inf)
        elif mask_mode == "inverted":
            s = np.where(~m, s, -np.inf)
        elif mask_mode == "inverted_large_negative":
            s = np.where(~m, s, s - 1e9)
        elif mask_mode == "inverted_constant_fill":
            s = np.where(~m, s, -1e9)
        elif mask_mode == "zero":
            s = np.where(m, s, 0.0)
    w = _softmax_any(s, axis=axis)
    if scale_after_softmax:
        w = w / factor
    if mask is not None and mask_mode == "after_softmax":
        w = w * np.asarray(mask, dtype=bool)
    return w @ V, w


# ---------------------------------------------------------------------------------------
# dot, cosine_similarity, pairwise_scores
# ---------------------------------------------------------------------------------------


@_mistake("dot", "no_sum",
          "the products a_i * b_i were returned without adding them up (use sum, or a @ b)")
def _dot_no_sum(a, b):
    return _f(a) * _f(b)


@_mistake("dot", "sum_times_sum",
          "computed sum(a) * sum(b); the dot product is the sum of the products a_i * b_i")
def _dot_sum_times_sum(a, b):
    return float(_f(a).sum() * _f(b).sum())


@_mistake("dot", "skips_last",
          "the loop skips the last entry (an off-by-one in range): use range(len(a))")
def _dot_skips_last(a, b):
    return float(_f(a)[:-1] @ _f(b)[:-1])


@_mistake("dot", "skips_first",
          "the loop skips the first entry (range(1, n)): indices start at 0")
def _dot_skips_first(a, b):
    return float(_f(a)[1:] @ _f(b)[1:])


@_mistake("dot", "uses_a_twice", "used a twice (a . a) instead of a . b")
def _dot_uses_a_twice(a, b):
    return float(_f(a) @ _f(a))


@_mistake("dot", "outer", "computed the outer product (a matrix); the dot product is one number")
def _dot_outer(a, b):
    return np.outer(_f(a), _f(b))


@_mistake("dot", "norms_product",
          "returned |a| * |b|, the product of the lengths; the dot product also depends on "
          "the angle")
def _dot_norms_product(a, b):
    return float(np.linalg.norm(_f(a)) * np.linalg.norm(_f(b)))


@_mistake("dot", "mean_not_sum", "averaged the products (mean); the dot product is their sum")
def _dot_mean(a, b):
    return float(np.mean(_f(a) * _f(b)))


def _cos_with(a, b, denominator):
    a, b = _f(a), _f(b)
    return float(a @ b / denominator(a, b))


@_mistake("cosine_similarity", "no_normalisation",
          "returned the plain dot product: divide by the lengths |a| |b|")
def _cos_no_norm(a, b):
    return float(_f(a) @ _f(b))


@_mistake("cosine_similarity", "only_norm_a", "divided by |a| only; divide by |a| * |b|")
def _cos_only_a(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(a))


@_mistake("cosine_similarity", "only_norm_b", "divided by |b| only; divide by |a| * |b|")
def _cos_only_b(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(b))


@_mistake("cosine_similarity", "squared_norms",
          "divided by |a|^2 |b|^2: the length is the square root of the sum of squares")
def _cos_squared(a, b):
    return _cos_with(a, b, lambda a, b: (a @ a) * (b @ b))


@_mistake("cosine_similarity", "sum_of_norms",
          "divided by |a| + |b|; divide by the product |a| * |b|")
def _cos_sum_norms(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(a) + np.linalg.norm(b))


@_mistake("cosine_similarity", "l1_norms",
          "used the sum of absolute values as the length; the length is sqrt(sum of squares)")
def _cos_l1(a, b):
    return _cos_with(a, b, lambda a, b: np.abs(a).sum() * np.abs(b).sum())


@_mistake("cosine_similarity", "norm_a_twice", "divided by |a| * |a|; the second length is |b|")
def _cos_a_twice(a, b):
    return _cos_with(a, b, lambda a, b: a @ a)


@_mistake("cosine_similarity", "cosine_distance",
          "returned 1 - cos (the cosine distance) instead of the cosine similarity")
def _cos_distance(a, b):
    return 1.0 - _cos_with(a, b, lambda a, b: np.linalg.norm(a) * np.linalg.norm(b))


@_mistake("cosine_similarity", "absolute_value",
          "took the absolute value: the cosine is negative when the vectors point apart")
def _cos_abs(a, b):
    return abs(_cos_with(a, b, lambda a, b: np.linalg.norm(a) * np.linalg.norm(b)))


@_mistake("cosine_similarity", "angle",
          "returned the angle (arccos of the cosine); return the cosine itself")
def _cos_angle(a, b):
    return float(np.arccos(np.clip(_cos_with(
        a, b, lambda a, b: np.linalg.norm(a) * np.linalg.norm(b)), -1.0, 1.0)))


@_mistake("cosine_similarity", "norm_of_product",
          "divided by the length of a * b (entry by entry); divide by |a| * |b|")
def _cos_norm_product(a, b):
    return _cos_with(a, b, lambda a, b: np.linalg.norm(a * b))


@_mistake("pairwise_scores", "gram_of_columns",
          "computed X.T @ X (columns against columns); the scores between rows are X @ X.T")
def _pair_xtx(X):
    X = _f(X)
    return X.T @ X


@_mistake("pairwise_scores", "x_times_x",
          "computed X @ X; the second factor must be transposed: X @ X.T")
def _pair_xx(X):
    X = _f(X)
    return X @ X


@_mistake("pairwise_scores", "elementwise",
          "computed X * X (entry by entry); the scores are the matrix product X @ X.T")
def _pair_elementwise(X):
    X = _f(X)
    return X * X


@_mistake("pairwise_scores", "cosine",
          "normalised the rows (cosine similarities); the scores are plain dot products")
def _pair_cosine(X):
    X = _f(X)
    n = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / n) @ (X / n).T


@_mistake("pairwise_scores", "scaled",
          "divided by sqrt(d): that scaling belongs to attention, not to the raw scores")
def _pair_scaled(X):
    X = _f(X)
    return X @ X.T / np.sqrt(X.shape[1])


@_mistake("pairwise_scores", "softmaxed",
          "applied a softmax: the scores are the raw dot products, before any softmax")
def _pair_softmaxed(X):
    X = _f(X)
    return reference.softmax(X @ X.T, axis=-1)


@_mistake("pairwise_scores", "upper_triangle_only",
          "only the pairs j >= i were filled in (the loop started at i); the matrix is "
          "symmetric, S[j, i] = S[i, j], so fill both halves")
def _pair_upper(X):
    X = _f(X)
    return np.triu(X @ X.T)


# ---------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------


@_mistake("softmax", "no_max_shift",
          "exp overflows (or all entries underflow to 0) without the max shift: "
          "subtract the maximum along the axis before exp, softmax(z) = softmax(z - max(z))")
def _softmax_no_shift(z, axis=-1):
    return _naive_softmax(z, axis)


@_mistake("softmax", "global_max_shift",
          "subtracted the maximum of the whole array instead of the maximum of each slice "
          "along the axis (z.max(axis=axis, keepdims=True)): rows at very different scales "
          "underflow to 0/0")
def _softmax_global_max(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max())
    return e / e.sum(axis=axis, keepdims=True)


@_mistake("softmax", "subtract_min",
          "subtracted the minimum instead of the maximum: exp still overflows on large inputs")
def _softmax_min(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.min(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@_mistake("softmax", "axis_0", "softmax taken over the wrong axis (axis 0); use the axis argument")
def _softmax_axis0(z, axis=-1):
    return _softmax_any(z, axis=0)


@_mistake("softmax", "ignores_axis",
          "the axis argument is ignored (always the last axis): pass axis to max and sum")
def _softmax_ignores_axis(z, axis=-1):
    return _softmax_any(z, axis=-1)


@_mistake("softmax", "whole_array",
          "normalised over the whole array (sum without axis): each slice along the axis "
          "must sum to 1")
def _softmax_whole(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max())
    return e / e.sum()


@_mistake("softmax", "no_keepdims",
          "the sum was taken without keepdims=True, so it divides the wrong entries "
          "(broadcasting along the other axis)")
def _softmax_no_keepdims(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis)


@_mistake("softmax", "max_no_keepdims",
          "the maximum was taken without keepdims=True, so each row subtracts another row's "
          "maximum (broadcasting along the other axis)")
def _softmax_max_no_keepdims(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max(axis=axis))
    return e / e.sum(axis=axis, keepdims=True)


@_mistake("softmax", "max_wrong_axis",
          "the maximum was taken along another axis than the sum: subtract the maximum of "
          "the same slice that is summed (z.max(axis=axis, keepdims=True))")
def _softmax_max_wrong_axis(z, axis=-1):
    z = _f(z)
    other = 0 if axis % z.ndim != 0 else -1
    e = np.exp(z - z.max(axis=other, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@_mistake("softmax", "divided_by_max",
          "divided by the largest exp instead of the sum of the exps: the entries must sum to 1")
def _softmax_by_max(z, axis=-1):
    z = _f(z)
    return np.exp(z - z.max(axis=axis, keepdims=True))


@_mistake("softmax", "no_exp", "forgot the exp: divided z by the sum of z")
def _softmax_no_exp(z, axis=-1):
    z = _f(z)
    return z / z.sum(axis=axis, keepdims=True)


@_mistake("softmax", "log_softmax",
          "returned log-probabilities (z - logsumexp(z)) instead of probabilities")
def _softmax_log(z, axis=-1):
    return np.log(_softmax_any(z, axis=axis))


# ---------------------------------------------------------------------------------------
# simple_self_attention
# ---------------------------------------------------------------------------------------


def _simple(X, scale, axis=-1, softmax=None, output="out"):
    X = _f(X)
    s = X @ X.T / scale(X)
    w = (softmax or reference.softmax)(s, axis=axis)
    if output == "weights":
        return w
    if output == "weights_T":
        return w.T @ X
    return w @ X


@_mistake("simple_self_attention", "no_scale", "scores were not divided by sqrt(d)")
def _simple_no_scale(X):
    return _simple(X, lambda X: 1.0)


@_mistake("simple_self_attention", "scale_d", "scores were divided by d instead of sqrt(d)")
def _simple_scale_d(X):
    return _simple(X, lambda X: X.shape[1])


@_mistake("simple_self_attention", "scale_sqrt_n",
          "scores were divided by sqrt(N) (the number of tokens) instead of sqrt(d) (the width)")
def _simple_scale_n(X):
    return _simple(X, lambda X: np.sqrt(X.shape[0]))


@_mistake("simple_self_attention", "softmax_axis_0",
          "softmax taken over the wrong axis (axis 0), or the weights transposed "
          "(weights.T @ X), which is the same here since X X^T is symmetric: each row of "
          "weights must sum to 1, and the output is weights @ X")
def _simple_axis0(X):
    return _simple(X, lambda X: np.sqrt(X.shape[1]), axis=0)


@_mistake("simple_self_attention", "returns_weights",
          "returned the attention weights; the output is weights @ X")
def _simple_weights(X):
    return _simple(X, lambda X: np.sqrt(X.shape[1]), output="weights")


@_mistake("simple_self_attention", "no_softmax",
          "forgot the softmax: returned (X X^T / sqrt(d)) X")
def _simple_no_softmax(X):
    X = _f(X)
    return X @ X.T / np.sqrt(X.shape[1]) @ X


@_mistake("simple_self_attention", "scores_not_transposed",
          "computed the scores as X @ X; they are X @ X.T (row i against row j)")
def _simple_xx(X):
    X = _f(X)
    return reference.softmax(X @ X / np.sqrt(X.shape[1]), axis=-1) @ X


@_mistake("simple_self_attention", "unstable_softmax",
          "the softmax is not stable (exp overflowed): subtract the row maximum before exp")
def _simple_unstable(X):
    return _simple(X, lambda X: np.sqrt(X.shape[1]), softmax=_naive_softmax)


# ---------------------------------------------------------------------------------------
# project_qkv
# ---------------------------------------------------------------------------------------


@_mistake("project_qkv", "weights_transposed",
          "multiplied by the transposed weights (X @ W.T); with row vectors it is Q = X @ W_Q")
def _qkv_transposed(X, W_Q, W_K, W_V):
    X = _f(X)
    return X @ _f(W_Q).T, X @ _f(W_K).T, X @ _f(W_V).T


@_mistake("project_qkv", "q_k_swapped", "Q and K are swapped: Q = X @ W_Q, K = X @ W_K")
def _qkv_swapped(X, W_Q, W_K, W_V):
    X = _f(X)
    return X @ _f(W_K), X @ _f(W_Q), X @ _f(W_V)


@_mistake("project_qkv", "k_v_swapped", "K and V are swapped: return (Q, K, V) in that order")
def _qkv_kv_swapped(X, W_Q, W_K, W_V):
    X = _f(X)
    return X @ _f(W_Q), X @ _f(W_V), X @ _f(W_K)


@_mistake("project_qkv", "same_weight", "used W_Q for all three; K needs W_K and V needs W_V")
def _qkv_same(X, W_Q, W_K, W_V):
    Q = _f(X) @ _f(W_Q)
    return Q, Q, Q


@_mistake("project_qkv", "elementwise",
          "multiplied entry by entry (X * W); use the matrix product X @ W")
def _qkv_elementwise(X, W_Q, W_K, W_V):
    X = _f(X)
    return X * _f(W_Q), X * _f(W_K), X * _f(W_V)


# ---------------------------------------------------------------------------------------
# scaled_dot_product_attention
# ---------------------------------------------------------------------------------------

_SDPA = "scaled_dot_product_attention"


@_mistake(_SDPA, "no_scale", "scores were not divided by sqrt(d_k)")
def _sdpa_no_scale(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=1.0)


@_mistake(_SDPA, "scale_sqrt_d_v",
          "scores were divided by sqrt(d_v) (the width of V); the scale is sqrt(d_k) = "
          "sqrt(Q.shape[-1])")
def _sdpa_sqrt_dv(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=np.sqrt(np.shape(V)[-1]))


@_mistake(_SDPA, "scale_d_k", "scores were divided by d_k; the scale is sqrt(d_k)")
def _sdpa_dk(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=float(np.shape(Q)[-1]))


@_mistake(_SDPA, "scale_sqrt_n_k",
          "scores were divided by sqrt(N_k) (the number of keys); the scale is sqrt(d_k)")
def _sdpa_sqrt_nk(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=np.sqrt(np.shape(K)[0]))


@_mistake(_SDPA, "scale_multiplied", "scores were multiplied by sqrt(d_k); divide by it")
def _sdpa_times(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=1.0 / np.sqrt(np.shape(Q)[-1]))


@_mistake(_SDPA, "scale_after_softmax",
          "divided the weights by sqrt(d_k) after the softmax; divide the scores before it")
def _sdpa_scale_after(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale_after_softmax=True)


@_mistake(_SDPA, "softmax_axis_0",
          "softmax taken over the wrong axis (axis 0, over queries): each row of weights "
          "(one query, all keys) must sum to 1")
def _sdpa_axis0(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, axis=0)


@_mistake(_SDPA, "scores_transposed",
          "scores computed as K @ Q.T; they are Q @ K.T (one row per query)")
def _sdpa_scores_t(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, transpose_scores=True)


@_mistake(_SDPA, "mask_after_softmax",
          "mask applied after the softmax (weights zeroed, the rest no longer sums to 1): "
          "set masked scores to -inf before the softmax")
def _sdpa_mask_after(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="after_softmax")


@_mistake(_SDPA, "mask_inverted",
          "mask inverted: True means 'may attend', so keep the scores where mask is True "
          "and set the others to -inf")
def _sdpa_mask_inverted(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="inverted")


@_mistake(_SDPA, "mask_inverted_large_negative",
          "mask inverted: True means 'may attend', so keep the scores where mask is True "
          "and push the others to a large negative number")
def _sdpa_mask_inverted_ln(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="inverted_large_negative")


# The usual way to write it: np.where(~mask, scores, -1e9). A row whose every key may be
# attended becomes a row of equal constants, i.e. uniform weights, unlike scores - 1e9
# above, which keeps that row's softmax; elsewhere both give the same output.
@_mistake(_SDPA, "mask_inverted_constant_fill",
          "mask inverted: True means 'may attend', so fill the scores where mask is False "
          "with a large negative number, np.where(mask, scores, -1e9), not those where it "
          "is True")
def _sdpa_mask_inverted_fill(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="inverted_constant_fill")


@_mistake(_SDPA, "mask_ignored", "the mask was ignored: masked pairs must get weight 0")
def _sdpa_mask_ignored(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="ignored")


@_mistake(_SDPA, "mask_zero_scores",
          "masked scores were set to 0 (or multiplied by the mask); exp(0) = 1 still gives "
          "them weight: set them to -inf (or a large negative number)")
def _sdpa_mask_zero(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="zero")


@_mistake(_SDPA, "softmax_whole_matrix",
          "the softmax normalised the whole score matrix at once; normalise each row "
          "(axis=-1)")
def _sdpa_whole(Q, K, V, mask=None):
    Q, K, V = _f(Q), _f(K), _f(V)
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    e = np.exp(s - s.max())
    w = e / e.sum()
    return w @ V, w


@_mistake(_SDPA, "output_transposed",
          "the output is transposed: it is weights @ V, shape [N_q, d_v]")
def _sdpa_out_t(Q, K, V, mask=None):
    out, w = _attention(Q, K, V, mask)
    return out.T, w


@_mistake(_SDPA, "tuple_swapped", "returned (weights, output); the order is (output, weights)")
def _sdpa_swapped(Q, K, V, mask=None):
    out, w = _attention(Q, K, V, mask)
    return w, out


@_mistake(_SDPA, "unstable_softmax",
          "the softmax is not stable (exp overflowed): subtract the row maximum before exp")
def _sdpa_unstable(Q, K, V, mask=None):
    Q, K, V = _f(Q), _f(K), _f(V)
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    w = _naive_softmax(s)
    return w @ V, w


# ---------------------------------------------------------------------------------------
# causal_mask, cross_attention
# ---------------------------------------------------------------------------------------


@_mistake("causal_mask", "inverted",
          "mask inverted (True above the diagonal): True means 'may attend', i.e. key j <= "
          "query i")
def _cm_inverted(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


@_mistake("causal_mask", "strict",
          "the diagonal is False (j < i): a token may attend to itself, so use j <= i")
def _cm_strict(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


@_mistake("causal_mask", "transposed",
          "upper triangle (j >= i): row i is query i, and it may attend to keys j <= i")
def _cm_transposed(n):
    return np.triu(np.ones((n, n), dtype=bool))


@_mistake("causal_mask", "all_true", "every entry is True: later keys must be masked out (False)")
def _cm_all_true(n):
    return np.ones((n, n), dtype=bool)


@_mistake("causal_mask", "additive",
          "returned an additive mask (0 and -inf); the contract wants booleans, True = may attend")
def _cm_additive(n):
    return np.where(np.tril(np.ones((n, n), dtype=bool)), 0.0, -np.inf)


def _xattn(X_dec, H_enc, W_Q, W_K, W_V, *, q_from="dec", kv_from="enc", **kw):
    src = {"dec": _f(X_dec), "enc": _f(H_enc)}
    Q = src[q_from] @ _f(W_Q)
    K = src[kv_from] @ _f(W_K)
    V = src[kv_from] @ _f(W_V)
    return _attention(Q, K, V, **kw)


@_mistake("cross_attention", "roles_swapped",
          "queries came from the encoder and keys/values from the decoder; it is the other "
          "way round: Q = X_dec W_Q, K = H_enc W_K, V = H_enc W_V")
def _xa_swapped(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, q_from="enc", kv_from="dec")[0]


@_mistake("cross_attention", "self_attention",
          "keys and values came from the decoder (that is self-attention); take them from H_enc")
def _xa_self(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, kv_from="dec")[0]


@_mistake("cross_attention", "no_scale", "scores were not divided by sqrt(d_k)")
def _xa_no_scale(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, scale=1.0)[0]


@_mistake("cross_attention", "scale_sqrt_d_v",
          "scores were divided by sqrt(d_v); the scale is sqrt(d_k), the width of the queries")
def _xa_sqrt_dv(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, scale=np.sqrt(np.shape(W_V)[1]))[0]


@_mistake("cross_attention", "scale_sqrt_d",
          "scores were divided by sqrt(d) (the width of X_dec); the scale is sqrt(d_k)")
def _xa_sqrt_d(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, scale=np.sqrt(np.shape(X_dec)[1]))[0]


@_mistake("cross_attention", "causal",
          "a causal mask was applied; cross-attention has no mask (the encoder's output is "
          "complete)")
def _xa_causal(X_dec, H_enc, W_Q, W_K, W_V):
    n_dec, n_enc = np.shape(X_dec)[0], np.shape(H_enc)[0]
    mask = np.tril(np.ones((n_dec, n_enc), dtype=bool))
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, mask=mask)[0]


@_mistake("cross_attention", "softmax_axis_0",
          "softmax taken over the wrong axis (axis 0): each query's weights over the encoder "
          "positions must sum to 1")
def _xa_axis0(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, axis=0)[0]


@_mistake("cross_attention", "returns_weights",
          "returned the attention weights; the output is weights @ V")
def _xa_weights(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V)[1]


# ---------------------------------------------------------------------------------------
# split_heads, merge_heads, multi_head_attention
# ---------------------------------------------------------------------------------------


@_mistake("split_heads", "reshape_without_transpose",
          "reshaped [N, d] straight to [n_heads, N, d_h]: that mixes rows of different tokens. "
          "Reshape to [N, n_heads, d_h], then swap the first two axes")
def _split_reshape(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(n_heads, N, d // n_heads)


@_mistake("split_heads", "no_swap",
          "returned [N, n_heads, d_h]: swap the first two axes to get [n_heads, N, d_h]")
def _split_no_swap(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(N, n_heads, d // n_heads)


@_mistake("split_heads", "interleaved",
          "head c took every n_heads-th column (c, c + n_heads, ...); it takes the block of "
          "columns c*d_h : (c+1)*d_h")
def _split_interleaved(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(N, d // n_heads, n_heads).transpose(2, 0, 1)


@_mistake("split_heads", "split_rows",
          "split the rows (tokens) instead of the columns (features): every head sees all "
          "tokens and d_h of the columns")
def _split_rows(X, n_heads):
    return np.stack(np.split(_f(X), n_heads, axis=0))


@_mistake("split_heads", "heads_transposed",
          "each head came out transposed, [d_h, N]; it should be [N, d_h]")
def _split_heads_t(X, n_heads):
    X = _f(X)
    N, d = X.shape
    return X.reshape(N, n_heads, d // n_heads).transpose(1, 2, 0)


@_mistake("merge_heads", "reshape_without_transpose",
          "reshaped [n_heads, N, d_h] straight to [N, n_heads*d_h]: that mixes tokens. "
          "Swap the first two axes first (to [N, n_heads, d_h]), then reshape")
def _merge_reshape(H):
    H = _f(H)
    h, N, d_h = H.shape
    return H.reshape(N, h * d_h)


@_mistake("merge_heads", "concatenate_rows",
          "concatenated the heads below each other (axis 0); put them side by side (columns)")
def _merge_rows(H):
    return np.concatenate(list(_f(H)), axis=0)


@_mistake("merge_heads", "interleaved",
          "interleaved the heads' columns; head c's columns are the block c*d_h : (c+1)*d_h")
def _merge_interleaved(H):
    H = _f(H)
    h, N, d_h = H.shape
    return H.transpose(1, 2, 0).reshape(N, h * d_h)


@_mistake("merge_heads", "sum_heads", "added the heads up; concatenate them side by side instead")
def _merge_sum(H):
    return _f(H).sum(axis=0)


@_mistake("merge_heads", "mean_heads", "averaged the heads; concatenate them side by side instead")
def _merge_mean(H):
    return _f(H).mean(axis=0)


def _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal=True, *, split=None, merge=None,
         scale=None, use_W_O=True, mask_on=None, axis=-1):
    X = _f(X)
    N, d_model = X.shape
    Q, K, V = X @ _f(W_Q), X @ _f(W_K), X @ _f(W_V)
    split = split or reference.split_heads
    merge = merge or reference.merge_heads
    Qh, Kh, Vh = split(Q, n_heads), split(K, n_heads), split(V, n_heads)
    apply_mask = causal if mask_on is None else mask_on
    mask = np.tril(np.ones((N, N), dtype=bool)) if apply_mask else None
    d_h = d_model // n_heads
    heads = [_attention(Qh[c], Kh[c], Vh[c], mask, scale=scale if scale else np.sqrt(d_h),
                        axis=axis)[0] for c in range(n_heads)]
    out = merge(np.stack(heads))
    return out @ _f(W_O) if use_W_O else out


_MHA = "multi_head_attention"


@_mistake(_MHA, "split_reshape_without_transpose",
          "the heads were split by reshaping [N, d_model] straight to [n_heads, N, d_h] "
          "(rows of different tokens get mixed); reshape to [N, n_heads, d_h] and swap axes")
def _mha_split_reshape(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, split=_split_reshape)


@_mistake(_MHA, "merge_reshape_without_transpose",
          "the heads were merged by reshaping [n_heads, N, d_h] straight to [N, d_model]; "
          "swap the first two axes first")
def _mha_merge_reshape(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, merge=_merge_reshape)


@_mistake(_MHA, "interleaved_heads",
          "head c took every n_heads-th column; it takes the block of columns c*d_h : (c+1)*d_h")
def _mha_interleaved(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, split=_split_interleaved,
                merge=_merge_interleaved)


@_mistake(_MHA, "missing_W_O",
          "the output projection W_O is missing: multiply the merged heads by W_O")
def _mha_no_wo(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, use_W_O=False)


@_mistake(_MHA, "scale_sqrt_d_model",
          "scores were divided by sqrt(d_model); each head divides by sqrt(d_h) = "
          "sqrt(d_model / n_heads)")
def _mha_sqrt_dmodel(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, scale=np.sqrt(np.shape(X)[-1]))


@_mistake(_MHA, "no_scale", "scores were not divided by sqrt(d_h)")
def _mha_no_scale(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, scale=1.0)


@_mistake(_MHA, "not_causal",
          "no causal mask although causal=True: a token must not attend to later tokens")
def _mha_not_causal(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, mask_on=False)


@_mistake(_MHA, "always_causal",
          "a causal mask was applied although causal=False: use the mask only when causal is True")
def _mha_always_causal(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, mask_on=True)


@_mistake(_MHA, "one_head",
          "n_heads was ignored (one head over all d_model columns, scaled by sqrt(d_model)): "
          "split Q, K, V into n_heads heads of width d_h")
def _mha_one_head(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, 1, causal)


@_mistake(_MHA, "softmax_axis_0",
          "softmax taken over the wrong axis (axis 0): each query's weights must sum to 1")
def _mha_axis0(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, axis=0)


# ---------------------------------------------------------------------------------------
# layer_norm, feed_forward, transformer_block
# ---------------------------------------------------------------------------------------


def _ln(x, gamma, beta, eps=1e-5, *, ddof=0, eps_mode="inside", axis=-1, center=True,
        affine=True, power=0.5, swap=False, beta_inside=False):
    x = _f(x)
    g, b = _f(gamma), _f(beta)
    if swap:
        g, b = b, g
    mu = x.mean(axis=axis, keepdims=True) if center else 0.0
    var = x.var(axis=axis, ddof=ddof, keepdims=True) if center else (x * x).mean(
        axis=axis, keepdims=True)
    if eps_mode == "inside":
        denom = (var + eps) ** power
    elif eps_mode == "outside":
        denom = var ** power + eps
    else:
        denom = var ** power
    xhat = (x - mu) / denom
    if not affine:
        return xhat
    return g * (xhat + b) if beta_inside else g * xhat + b


@_mistake("layer_norm", "ddof_1",
          "variance with ddof=1 (divided by d - 1); layer norm uses the population variance "
          "(divide by d, np.var's default)")
def _ln_ddof(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, ddof=1)


@_mistake("layer_norm", "eps_outside_sqrt",
          "eps was added outside the square root (std + eps); it goes inside: sqrt(var + eps)")
def _ln_eps_out(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, eps_mode="outside")


@_mistake("layer_norm", "no_eps", "eps is missing: divide by sqrt(var + eps)")
def _ln_no_eps(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, eps_mode="none")


@_mistake("layer_norm", "eps_ignored",
          "the eps argument was ignored (a fixed 1e-5 used instead): use the eps passed in")
def _ln_eps_fixed(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, 1e-5)


@_mistake("layer_norm", "no_gamma_beta",
          "gamma and beta were not applied: return gamma * normalised + beta")
def _ln_no_affine(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, affine=False)


@_mistake("layer_norm", "gamma_beta_swapped",
          "gamma and beta are swapped: gamma multiplies, beta is added")
def _ln_swapped(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, swap=True)


@_mistake("layer_norm", "beta_inside",
          "beta was added before multiplying by gamma; it is gamma * normalised + beta")
def _ln_beta_inside(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, beta_inside=True)


@_mistake("layer_norm", "divided_by_variance",
          "divided by the variance; divide by the standard deviation sqrt(var + eps)")
def _ln_by_var(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, power=1.0)


@_mistake("layer_norm", "no_centering",
          "the mean was not subtracted (this is RMS norm): use (x - mean) / sqrt(var + eps)")
def _ln_rms(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, center=False)


@_mistake("layer_norm", "axis_0",
          "normalised over the wrong axis (axis 0, over tokens); normalise each token's vector "
          "over its features, axis=-1 with keepdims=True")
def _ln_axis0(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, axis=0)


@_mistake("layer_norm", "whole_array",
          "mean and variance were taken over the whole array; take them per row (axis=-1, "
          "keepdims=True)")
def _ln_whole(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, axis=None)


def _ffn(x, W1, b1, W2, b2, *, act=None, use_b1=True, use_b2=True, b1_after=False,
         relu_out=False):
    x = _f(x)
    act = act or (lambda a: np.maximum(0.0, a))
    pre = x @ _f(W1)
    hidden = act(pre) + _f(b1) if b1_after else act(pre + (_f(b1) if use_b1 else 0.0))
    out = hidden @ _f(W2) + (_f(b2) if use_b2 else 0.0)
    return np.maximum(0.0, out) if relu_out else out


@_mistake("feed_forward", "no_relu", "the ReLU is missing: ReLU(x W1 + b1) = max(0, x W1 + b1)")
def _ffn_no_relu(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, act=lambda a: a)


@_mistake("feed_forward", "relu_on_output",
          "a ReLU was applied to the output too; only the hidden layer gets ReLU")
def _ffn_relu_out(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, relu_out=True)


@_mistake("feed_forward", "missing_b1", "b1 is missing: ReLU(x W1 + b1)")
def _ffn_no_b1(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, use_b1=False)


@_mistake("feed_forward", "missing_b2", "b2 is missing: ... W2 + b2")
def _ffn_no_b2(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, use_b2=False)


@_mistake("feed_forward", "b1_after_relu",
          "b1 was added after the ReLU; it goes inside: ReLU(x W1 + b1)")
def _ffn_b1_after(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, b1_after=True)


@_mistake("feed_forward", "gelu", "used GELU; this course's FFN uses ReLU, max(0, .)")
def _ffn_gelu(x, W1, b1, W2, b2):
    def gelu(a):
        return 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))
    return _ffn(x, W1, b1, W2, b2, act=gelu)


@_mistake("feed_forward", "abs_activation", "used abs(.) as the activation; ReLU is max(0, .)")
def _ffn_abs(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, act=np.abs)


def _block(x, p, n_heads, causal=True, *, post_norm=False, res1=True, res2="t3",
           ln1=True, ln2=True, ln2_params="ln2", ln2_input="t3", mha_causal=None):
    x = _f(x)
    r = reference
    mc = causal if mha_causal is None else mha_causal

    def ln(v, which):
        return r.layer_norm(v, p[f"{which}_gamma"], p[f"{which}_beta"])

    def mha(v):
        return r.multi_head_attention(v, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                                      causal=mc)

    def ffn(v):
        return r.feed_forward(v, p["W1"], p["b1"], p["W2"], p["b2"])

    if post_norm:
        t3 = ln(x + mha(x), "ln1")
        return ln(t3 + ffn(t3), "ln2")
    t1 = ln(x, "ln1") if ln1 else x
    t2 = mha(t1)
    t3 = t2 + x if res1 == "x" or res1 is True else (t2 + t1 if res1 == "t1" else t2)
    src = {"t3": t3, "t2": t2}[ln2_input]
    t4 = ln(src, ln2_params) if ln2 else src
    t5 = ffn(t4)
    extra = {"t3": t3, "x": x, "t4": t4, None: 0.0}[res2]
    return t5 + extra


_TB = "transformer_block"


@_mistake(_TB, "post_norm",
          "post-norm (layer norm after each residual sum); this block is pre-norm: "
          "t1 = LN1(x), t3 = MHA(t1) + x, h = FFN(LN2(t3)) + t3")
def _tb_post(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, post_norm=True)


@_mistake(_TB, "no_first_residual",
          "no residual connection around attention: t3 = t2 + x")
def _tb_no_res1(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res1=False)


@_mistake(_TB, "no_second_residual",
          "no residual connection around the feed-forward: h = t5 + t3")
def _tb_no_res2(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res2=None)


@_mistake(_TB, "no_residuals", "no residual connection at all: t3 = t2 + x and h = t5 + t3")
def _tb_no_res(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res1=False, res2=None)


@_mistake(_TB, "second_residual_from_x",
          "the second residual adds x; it adds t3 (the output of the first residual): h = t5 + t3")
def _tb_res2_x(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res2="x")


@_mistake(_TB, "residual_from_normalised",
          "the first residual adds the normalised t1; it adds the block's input x: t3 = t2 + x")
def _tb_res1_t1(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res1="t1")


@_mistake(_TB, "second_residual_from_t4",
          "the second residual adds t4 = LN2(t3); it adds t3: h = t5 + t3")
def _tb_res2_t4(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res2="t4")


@_mistake(_TB, "no_ln1", "the first layer norm is missing: attention reads t1 = LN1(x)")
def _tb_no_ln1(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln1=False)


@_mistake(_TB, "no_ln2", "the second layer norm is missing: the feed-forward reads t4 = LN2(t3)")
def _tb_no_ln2(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln2=False)


@_mistake(_TB, "ln2_on_t2",
          "LN2 was applied to the attention output t2; it normalises t3 = t2 + x")
def _tb_ln2_t2(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln2_input="t2")


@_mistake(_TB, "ln1_params_twice",
          "the second layer norm used ln1_gamma/ln1_beta; it has its own ln2_gamma/ln2_beta")
def _tb_ln1_twice(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln2_params="ln1")


@_mistake(_TB, "ffn_missing",
          "the feed-forward half is missing: returned t3; continue with t4 = LN2(t3), "
          "t5 = FFN(t4), h = t5 + t3")
def _tb_no_ffn(x, params, n_heads, causal=True):
    p = params
    t1 = reference.layer_norm(_f(x), p["ln1_gamma"], p["ln1_beta"])
    return reference.multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                                          causal=causal) + _f(x)


@_mistake(_TB, "causal_ignored",
          "the causal argument was not passed on to multi-head attention (it stayed causal "
          "when causal=False)")
def _tb_causal_ignored(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, mha_causal=True)


# ---------------------------------------------------------------------------------------
# embed, lm_head, language_model_forward, cross_entropy, generate
# ---------------------------------------------------------------------------------------


def _ids(token_ids):
    return np.asarray(token_ids).astype(np.int64)


@_mistake("embed", "positions_by_token_id",
          "position embeddings were indexed by token id (P[ids]); position i uses P[i], "
          "i.e. P[:N]")
def _embed_p_ids(token_ids, E, P):
    ids = _ids(token_ids)
    return _f(E)[ids] + _f(P)[ids]


@_mistake("embed", "no_positions", "the position embeddings are missing: X = E[ids] + P[:N]")
def _embed_no_p(token_ids, E, P):
    return _f(E)[_ids(token_ids)]


@_mistake("embed", "no_token_embeddings",
          "the token embeddings are missing: X = E[ids] + P[:N]")
def _embed_no_e(token_ids, E, P):
    return _f(P)[: len(_ids(token_ids))]


@_mistake("embed", "positions_not_cropped",
          "all n_ctx position rows were added; take the first N of them: P[:N]")
def _embed_p_full(token_ids, E, P):
    return _f(E)[_ids(token_ids)] + _f(P)


@_mistake("embed", "positions_off_by_one",
          "positions start at 1 (P[1:N+1]); the first token uses P[0]")
def _embed_p_shift(token_ids, E, P):
    ids = _ids(token_ids)
    return _f(E)[ids] + _f(P)[1: len(ids) + 1]


@_mistake("embed", "concatenated",
          "token and position embeddings were concatenated; they are added: E[ids] + P[:N]")
def _embed_concat(token_ids, E, P):
    ids = _ids(token_ids)
    return np.concatenate([_f(E)[ids], _f(P)[: len(ids)]], axis=1)


@_mistake("lm_head", "no_transpose",
          "computed h @ E; the tied head multiplies by the transpose, logits = h @ E.T")
def _lm_no_t(h, E):
    return _f(h) @ _f(E)


@_mistake("lm_head", "logits_transposed",
          "the logits are transposed ([V, N]): logits = h @ E.T has one row per position")
def _lm_t(h, E):
    return _f(E) @ _f(h).T


@_mistake("lm_head", "softmax_applied",
          "a softmax was applied: lm_head returns the raw logits h @ E.T")
def _lm_softmax(h, E):
    return reference.softmax(_f(h) @ _f(E).T, axis=-1)


@_mistake("lm_head", "scaled", "the logits were divided by sqrt(d); they are just h @ E.T")
def _lm_scaled(h, E):
    return _f(h) @ _f(E).T / np.sqrt(np.shape(E)[1])


def _lm(token_ids, params, n_heads, *, positions=True, pos_by_id=False, ln_f=True,
        causal=True, chain=True, blocks=None, probs=False):
    r = reference
    ids = _ids(token_ids)
    E, P = _f(params["E"]), _f(params["P"])
    x = E[ids] + (P[ids] if pos_by_id else P[: len(ids)] if positions else 0.0)
    h = x
    for block in (params["blocks"] if blocks is None else blocks(params["blocks"])):
        h = r.transformer_block(h if chain else x, block, n_heads, causal=causal)
    if ln_f and "ln_f_gamma" in params:
        h = r.layer_norm(h, params["ln_f_gamma"], params["ln_f_beta"])
    logits = h @ E.T
    return r.softmax(logits, axis=-1) if probs else logits


_LMF = "language_model_forward"


@_mistake(_LMF, "no_positions", "the position embeddings are missing: X = E[ids] + P[:N]")
def _lmf_no_pos(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, positions=False)


@_mistake(_LMF, "positions_by_token_id",
          "position embeddings were indexed by token id (P[ids]); use P[:N]")
def _lmf_pos_ids(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, pos_by_id=True)


@_mistake(_LMF, "no_final_layer_norm",
          "the final layer norm (ln_f_gamma, ln_f_beta) was skipped although params has it")
def _lmf_no_lnf(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, ln_f=False)


@_mistake(_LMF, "not_causal",
          "the blocks were not causal: a language model must not look at later tokens")
def _lmf_not_causal(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, causal=False)


@_mistake(_LMF, "blocks_not_chained",
          "every block read the embeddings X; each block must read the previous block's output")
def _lmf_not_chained(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, chain=False)


@_mistake(_LMF, "first_block_only",
          "only the first block was applied; apply all of params['blocks'] in order")
def _lmf_first(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, blocks=lambda b: b[:1])


@_mistake(_LMF, "blocks_reversed", "the blocks were applied in reverse order")
def _lmf_reversed(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, blocks=lambda b: b[::-1])


@_mistake(_LMF, "probabilities",
          "returned probabilities (softmax applied); language_model_forward returns logits")
def _lmf_probs(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, probs=True)


@_mistake(_LMF, "last_position_only",
          "returned the logits of the last position only; return all N rows (one per position)")
def _lmf_last(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads)[-1]


def _nll_rows(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    m = z.max(axis=-1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(z - m).sum(axis=-1))
    return lse - z[np.arange(len(t)), t]


@_mistake("cross_entropy", "sum_not_mean",
          "summed over the rows; the cross-entropy is the mean over rows")
def _ce_sum(logits, targets):
    return float(_nll_rows(logits, targets).sum())


@_mistake("cross_entropy", "naive_softmax_log",
          "log of a softmax computed without the max shift: exp overflows on large logits. "
          "Use log softmax(z)[t] = z[t] - logsumexp(z), logsumexp(z) = m + log(sum(exp(z - "
          "m))), m = max(z)")
def _ce_naive(logits, targets):
    p = _naive_softmax(logits)
    t = _ids(targets)
    return float(-np.log(p[np.arange(len(t)), t]).mean())


@_mistake("cross_entropy", "log_of_softmax",
          "took the log of a (stable) softmax: a probability that underflows to 0 gives "
          "log(0) = -inf. Compute log softmax directly: z[t] - logsumexp(z) with the max "
          "subtracted")
def _ce_log_softmax(logits, targets):
    p = reference.softmax(logits, axis=-1)
    t = _ids(targets)
    return float(-np.log(p[np.arange(len(t)), t]).mean())


@_mistake("cross_entropy", "shifted_targets",
          "shifted the targets inside the function (logits[:-1] with targets[1:]); the "
          "caller already aligned them: row i of logits goes with targets[i]")
def _ce_shifted(logits, targets):
    return float(_nll_rows(_f(logits)[:-1], _ids(targets)[1:]).mean())


@_mistake("cross_entropy", "wrong_sign",
          "the sign is wrong: the loss is the mean of -log p (positive), not of log p")
def _ce_sign(logits, targets):
    return float(-_nll_rows(logits, targets).mean())


@_mistake("cross_entropy", "log2", "used log base 2; the course uses the natural log (nats)")
def _ce_log2(logits, targets):
    return float(_nll_rows(logits, targets).mean() / np.log(2))


@_mistake("cross_entropy", "index_matrix",
          "indexed logp[:, targets], which picks an [N, N] matrix; pick one entry per row: "
          "logp[np.arange(N), targets]")
def _ce_matrix(logits, targets):
    z = _f(logits)
    logp = z - (z.max(axis=-1, keepdims=True) + np.log(
        np.exp(z - z.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)))
    return float(-logp[:, _ids(targets)].mean())


@_mistake("cross_entropy", "mean_over_vocab",
          "averaged -log p over the whole vocabulary; only the target's -log p counts in each row")
def _ce_mean_vocab(logits, targets):
    z = _f(logits)
    m = z.max(axis=-1, keepdims=True)
    logp = z - (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))
    return float(-logp.mean())


@_mistake("cross_entropy", "softmax_axis_0",
          "softmax taken over the wrong axis (axis 0); each row's probabilities over the "
          "vocabulary must sum to 1")
def _ce_axis0(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    p = reference.softmax(z, axis=0)
    return float(-np.log(p[np.arange(len(t)), t]).mean())


@_mistake("cross_entropy", "naive_logsumexp",
          "logsumexp computed as log(sum(exp(z))) without the max shift: exp overflows on "
          "large logits. Use logsumexp(z) = m + log(sum(exp(z - m))), m = max(z)")
def _ce_naive_lse(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    return float((np.log(np.exp(z).sum(axis=-1)) - z[np.arange(len(t)), t]).mean())


@_mistake("cross_entropy", "no_softmax",
          "took -log of the target's logit itself; logits are not probabilities: use "
          "-log softmax(z)[t] = logsumexp(z) - z[t]")
def _ce_no_softmax(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    return float(-np.log(z[np.arange(len(t)), t]).mean())


# generate ------------------------------------------------------------------------------


def _gen(token_ids, params, n_heads, n_new, temperature=0.0, rng=None, *, crop=None,
         extend=True, position=-1, only_new=False, flat_argmax=False, sampler=None):
    r = reference
    ids = _ids(token_ids)
    prompt = ids.copy()
    n_ctx = np.shape(params["P"])[0]
    crop = n_ctx if crop is None else crop
    for _ in range(n_new):
        ctx = ids if extend else prompt
        ctx = ctx[-crop:] if crop else ctx
        all_logits = r.language_model_forward(ctx, params, n_heads)
        logits = all_logits[position]
        if flat_argmax and temperature == 0:
            nxt = int(np.argmax(all_logits))
        elif temperature == 0 and sampler is None:
            nxt = int(np.argmax(logits))
        else:
            p = (sampler or _sample_correct)(logits, temperature)
            nxt = int((rng or np.random.default_rng()).choice(len(p), p=p))
        ids = np.append(ids, nxt)
    return ids[len(prompt):] if only_new else ids


def _sample_correct(logits, temperature):
    return reference.softmax((logits - logits.max()) / temperature)


def _sampler_multiplied(logits, temperature):
    return reference.softmax(logits * temperature) if temperature > 0 else _onehot(logits)


def _sampler_no_temperature(logits, temperature):
    return reference.softmax(logits) if temperature > 0 else _onehot(logits)


def _onehot(logits, temperature=0.0):
    p = np.zeros(len(logits))
    p[int(np.argmax(logits))] = 1.0
    return p


@_mistake("generate", "context_never_extended",
          "each step fed the prompt again: append the new id and feed the grown sequence "
          "(cropped to the last n_ctx tokens) at the next step")
def _gen_no_extend(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, extend=False)


@_mistake("generate", "not_cropped",
          "the context was not cropped: feed only the last n_ctx tokens, ids[-n_ctx:]")
def _gen_no_crop(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, crop=0)


@_mistake("generate", "cropped_one_short",
          "the context was cropped to n_ctx - 1 tokens; keep the last n_ctx: ids[-n_ctx:]")
def _gen_crop_short(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    n_ctx = np.shape(params["P"])[0]
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, crop=max(n_ctx - 1, 1))


@_mistake("generate", "first_position_logits",
          "used the logits of the first position; the next token is scored by the last row, "
          "logits[-1]")
def _gen_first(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, position=0)


@_mistake("generate", "argmax_flat",
          "took np.argmax of the whole [N, V] logits matrix (a flat index); take the argmax "
          "of the last row, logits[-1]")
def _gen_flat(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, flat_argmax=True)


@_mistake("generate", "only_new_tokens",
          "returned only the new ids; return the prompt followed by the n_new new ids")
def _gen_only_new(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng, only_new=True)


@_mistake("generate", "one_token_short",
          "generated n_new - 1 tokens (an off-by-one in the loop); generate exactly n_new")
def _gen_short(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, max(n_new - 1, 0), temperature, rng)


def _sampler_uniform(logits, temperature):
    return np.full(len(logits), 1.0 / len(logits)) if temperature > 0 else _onehot(logits)


@_mistake("generate", "uniform_sampling",
          "sampled uniformly (rng.choice(V) without p=...); pass the probabilities: "
          "rng.choice(V, p=softmax(logits / temperature))",
          sampler=_sampler_uniform)
def _gen_uniform(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng,
                sampler=_sampler_uniform if temperature > 0 else None)


@_mistake("generate", "temperature_multiplied",
          "the logits were multiplied by the temperature; divide them: softmax(logits / "
          "temperature)",
          sampler=_sampler_multiplied)
def _gen_t_mult(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng,
                sampler=_sampler_multiplied if temperature > 0 else None)


@_mistake("generate", "temperature_ignored",
          "the temperature was ignored when sampling: sample from softmax(logits / temperature)",
          sampler=_sampler_no_temperature)
def _gen_t_ignored(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, rng,
                sampler=_sampler_no_temperature if temperature > 0 else None)


@_mistake("generate", "always_greedy",
          "always took the argmax: with temperature > 0, sample from softmax(logits / "
          "temperature) "
          "with rng.choice",
          sampler=_onehot)
def _gen_greedy(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, 0.0, None)


@_mistake("generate", "rng_ignored",
          "the rng argument was not used (same seed, different outputs): draw with "
          "rng.choice(V, p=probs), not np.random")
def _gen_rng_ignored(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return _gen(token_ids, params, n_heads, n_new, temperature, None)
