"""The gradient check and one backward function per forward equation (see
:mod:`helpers.training`): each checks its arguments, then runs the computation of
:mod:`helpers.training.kernels`."""

from __future__ import annotations

import math

import numpy as np

import helpers
from helpers import reference
from helpers.course.edge import array as _array
from helpers.course.edge import in_float64_range as _in_float64_range
from helpers.course.edge import nonnegative, require
from helpers.course.edge import token_ids as _token_ids
from helpers.training import kernels
from helpers.training.kernels import BLOCK_KEYS, LN_EPS
from helpers.training.data import tree_map


# ---------------------------------------------------------------------------------------
# The gradient check
# ---------------------------------------------------------------------------------------


def numerical_gradient(f, x, h: float = 1e-5) -> np.ndarray:
    """Central differences: ``grad[k] = (f(x + h e_k) - f(x - h e_k)) / (2 h)``.

    f: a function of an array shaped like ``x`` returning a number; x: any shape.
    Returns float64, shaped like ``x``. The error is O(h^2) plus the rounding error of
    f, about ``1e-16 |f| / h``: in float64, ``h = 1e-5`` gives about 1e-10.
    """
    x = _array(x, "x").copy()
    grad = np.zeros_like(x)                                      # shaped like x
    for k in range(x.size):
        old = x.flat[k]
        x.flat[k] = old + h
        f_plus = float(f(x.copy()))                              # f(x + h e_k)
        x.flat[k] = old - h
        f_minus = float(f(x.copy()))                             # f(x - h e_k)
        x.flat[k] = old
        grad.flat[k] = (f_plus - f_minus) / (2 * h)
    return grad


def relative_error(a, b) -> float:
    """``|a - b| / (|a| + |b|)`` in the Euclidean norm over all entries (0 if both are 0).

    Below about 1e-7 a float64 gradient agrees with its check; above 1e-3 it is wrong.
    """
    a = _array(a, "a").ravel()
    b = _array(b, "b").ravel()
    if a.shape != b.shape:
        raise ValueError(f"a has {a.size} entries but b has {b.size}")
    scale = max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0))
    if scale == 0:
        return 0.0
    a, b = a / scale, b / scale                                  # no overflow in squares
    return float(np.linalg.norm(a - b) / (np.linalg.norm(a) + np.linalg.norm(b)))


# ---------------------------------------------------------------------------------------
# One backward per forward equation
# ---------------------------------------------------------------------------------------


def cross_entropy_backward(logits, targets) -> np.ndarray:
    """Gradient of ``cross_entropy(logits, targets)`` (the mean over positions).

    logits: ``[..., V]``; targets: ints shaped like ``logits.shape[:-1]``.
    Returns ``[..., V]``: ``(softmax(logits) - onehot(targets)) / N``, ``N`` the
    number of positions (all leading dimensions together).
    """
    logits = _array(logits, "logits", min_ndim=1)
    V = logits.shape[-1]
    flat = logits.reshape(-1, V)                                 # [N, V]
    targets = np.asarray(targets)
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets has shape {targets.shape} but logits has {logits.shape}")
    t = _token_ids(targets.reshape(-1), V, name="targets")       # [N]
    N = len(t)
    if N == 0:
        raise ValueError("cross-entropy of zero predictions is undefined")
    grad = reference.softmax(flat, axis=-1)                      # [N, V], p
    grad[np.arange(N), t] -= 1.0                                 # p - onehot
    return (grad / N).reshape(logits.shape)                      # mean over positions


def linear_backward(x, W, d_out) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of ``y = x W + b``.

    x: ``[..., d_in]``; W: ``[d_in, d_out]``; d_out: ``[..., d_out]`` (dL/dy).
    Returns ``(dx [..., d_in], dW [d_in, d_out], db [d_out])``: ``dx = dy W^T``,
    ``dW = x^T dy`` and ``db = sum of dy`` over every row (all leading dimensions).
    """
    x = _array(x, "x", min_ndim=1)
    W = _array(W, "W", ndim=2)
    dy = _array(d_out, "d_out", min_ndim=1)
    if x.shape[-1] != W.shape[0] or dy.shape != x.shape[:-1] + (W.shape[1],):
        raise ValueError(f"x {x.shape}, W {W.shape} and d_out {dy.shape} do not fit "
                         f"y = x W + b")
    with _in_float64_range("the linear layer's gradients"):
        return kernels.linear_back(x, W, dy)


def relu_backward(z, d_out) -> np.ndarray:
    """Gradient of ``ReLU(z) = max(0, z)``: ``d_out * [z > 0]`` (0 at z = 0).

    z: the ReLU's input, any shape; d_out: same shape. Returns the same shape.
    """
    z = _array(z, "z")
    dy = _array(d_out, "d_out")
    if z.shape != dy.shape:
        raise ValueError(f"z has shape {z.shape} but d_out has {dy.shape}")
    return dy * (z > 0)                                          # same shape


def gelu(z) -> np.ndarray:
    """Exact GELU, ``z Phi(z) = z (1 + erf(z / sqrt 2)) / 2`` (as in notebook 09)."""
    from helpers.bert.model import erf

    z = _array(z, "z")
    return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)))


def gelu_backward(z, d_out) -> np.ndarray:
    """Gradient of the exact GELU: ``d_out * (Phi(z) + z phi(z))``, with
    ``Phi(z) = (1 + erf(z / sqrt 2)) / 2`` and ``phi(z) = exp(-z^2 / 2) / sqrt(2 pi)``.

    z: the GELU's input, any shape; d_out: same shape. Returns the same shape.
    """
    from helpers.bert.model import erf

    z = _array(z, "z")
    dy = _array(d_out, "d_out")
    if z.shape != dy.shape:
        raise ValueError(f"z has shape {z.shape} but d_out has {dy.shape}")
    Phi = 0.5 * (1.0 + erf(z / math.sqrt(2.0)))                  # same shape, in [0, 1]
    with np.errstate(under="ignore", over="ignore"):
        phi = np.exp(-0.5 * np.minimum(z * z, 1e4)) / math.sqrt(2.0 * math.pi)
    with _in_float64_range("the GELU's gradient"):
        return dy * (Phi + z * phi)                              # same shape


def layer_norm_backward(x, gamma, d_out, eps: float = LN_EPS):
    """Gradients of ``y = gamma * xhat + beta``, ``xhat = (x - mu) / sqrt(var + eps)``.

    x: ``[..., d]`` (the layer norm's input); gamma: ``[d]``; d_out: ``[..., d]``.
    Returns ``(dx [..., d], dgamma [d], dbeta [d])`` with ``dxhat = d_out * gamma``,
    ``dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sqrt(var + eps)``
    (means over the last axis: the mean and the variance depend on every entry),
    ``dgamma = sum(d_out * xhat)`` and ``dbeta = sum(d_out)`` over the rows.
    """
    x = _array(x, "x", min_ndim=1)
    gamma = _array(gamma, "gamma", ndim=1)
    dy = _array(d_out, "d_out")
    if gamma.shape != x.shape[-1:] or dy.shape != x.shape:
        raise ValueError(f"x {x.shape}, gamma {gamma.shape} and d_out {dy.shape} do not fit")
    eps = nonnegative(eps, "eps")
    xhat = reference.layer_norm(x, np.ones_like(gamma), np.zeros_like(gamma), eps)
    with _in_float64_range("the layer norm's gradient"):
        dev = x - x.mean(axis=-1, keepdims=True)                 # [..., d]
        scale = np.abs(dev).max(axis=-1, keepdims=True)          # [..., 1]
        scale = np.where(scale > 0, scale, 1.0)
        u = dev / scale                                          # [..., d], |u| <= 1
        # 1 / sqrt(var + eps) = 1 / (scale sqrt(var_u + eps / scale^2))
        with np.errstate(over="ignore"):
            eps_u = eps / scale / scale                          # may be inf: rstd -> 0
        rstd = 1.0 / (scale * np.sqrt((u * u).mean(axis=-1, keepdims=True) + eps_u))
        return kernels.ln_back(xhat, rstd, gamma, dy)


def attention_backward(Q, K, V, mask, d_out):
    """Gradients of ``O = softmax(Q K^T / sqrt(d_k) [masked]) V``.

    Q: ``[..., N_q, d_k]``; K: ``[..., N_k, d_k]``; V: ``[..., N_k, d_v]``; mask: bool,
    broadcastable to ``[..., N_q, N_k]`` (True: may attend) or None; d_out:
    ``[..., N_q, d_v]``. Returns ``(dQ, dK, dV)`` shaped like Q, K, V. Softmax's
    Jacobian-vector product, row by row: ``dS = P * (dP - sum_j P_j dP_j)``; a masked
    pair has ``P = 0`` and so ``dS = 0``.
    """
    Q = _array(Q, "Q", min_ndim=2)
    K = _array(K, "K", min_ndim=2)
    V = _array(V, "V", min_ndim=2)
    dO = _array(d_out, "d_out", min_ndim=2)
    _, P = reference.scaled_dot_product_attention(Q, K, V, mask)  # [..., N_q, N_k]
    if dO.shape != P.shape[:-1] + (V.shape[-1],):
        raise ValueError(f"d_out has shape {dO.shape}, expected {P.shape[:-1] + V.shape[-1:]}")
    with _in_float64_range("the attention's gradients"):
        return kernels.attention_back(Q, K, V, P, dO)


def embed_backward(token_ids, d_X, vocab_size: int, n_ctx: int):
    """Gradients of ``X = E[ids] + P[:N]``.

    token_ids: ``[..., N]`` ints; d_X: ``[..., N, d]``; vocab_size, n_ctx: the rows of
    E and P. Returns ``(dE [vocab_size, d], dP [n_ctx, d])``: a token that occurs
    several times collects the sum of its rows (``np.add.at``, not ``dE[ids] += dX``,
    which keeps only one of them); positions after ``N`` get 0.
    """
    dX = _array(d_X, "d_X", min_ndim=2)
    ids = np.asarray(token_ids)
    if ids.shape != dX.shape[:-1]:
        raise ValueError(f"token_ids has shape {ids.shape} but d_X has {dX.shape}")
    ids = _token_ids(ids.reshape(-1), vocab_size).reshape(ids.shape)
    if ids.shape[-1] > n_ctx:
        raise ValueError(f"{ids.shape[-1]} positions but n_ctx = {n_ctx}")
    with _in_float64_range("the embeddings' gradients"):
        return kernels.embed_back(ids, dX, vocab_size, n_ctx)


def feed_forward_backward(x, W1, b1, W2, b2, d_out):
    """Gradients of ``FFN(x) = ReLU(x W1 + b1) W2 + b2``.

    x: ``[..., d]``; W1 ``[d, d_ff]``, b1 ``[d_ff]``, W2 ``[d_ff, d]``, b2 ``[d]``;
    d_out: ``[..., d]``. Returns ``(dx, {"W1", "b1", "W2", "b2"})``.
    """
    x = _array(x, "x", min_ndim=1)
    W1, b1 = _array(W1, "W1", ndim=2), _array(b1, "b1", ndim=1)
    W2, b2 = _array(W2, "W2", ndim=2), _array(b2, "b2", ndim=1)
    dy = _array(d_out, "d_out")
    helpers.feed_forward(x, W1, b1, W2, b2)                      # checks the shapes
    with _in_float64_range("the feed-forward network's gradients"):
        z = x @ W1 + b1                                          # [..., d_ff]
        a = np.maximum(z, 0.0)                                   # [..., d_ff]
        da, dW2, db2 = kernels.linear_back(a, W2, dy)                   # [..., d_ff], ...
        dz = da * (z > 0)                                        # [..., d_ff]
        dx, dW1, db1 = kernels.linear_back(x, W1, dz)                   # [..., d], ...
    return dx, {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2}


def multi_head_attention_backward(X, W_Q, W_K, W_V, W_O, n_heads: int, d_out,
                                  causal: bool = True):
    """Gradients of ``MHA(X) = merge(Attention(split(X W_Q), split(X W_K),
    split(X W_V))) W_O``.

    X: ``[..., N, d]``; W_*: ``[d, d]``; d_out: ``[..., N, d]``.
    Returns ``(dX, {"W_Q", "W_K", "W_V", "W_O"})``; ``dX`` sums the three paths
    (queries, keys and values all come from X).
    """
    X = _array(X, "X", min_ndim=2)
    Ws = [_array(W, name, ndim=2) for W, name in
          ((W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V"), (W_O, "W_O"))]
    dy = _array(d_out, "d_out", min_ndim=2)
    out = helpers.multi_head_attention(X, *Ws, n_heads, causal=causal)  # checks shapes
    if dy.shape != out.shape:
        raise ValueError(f"d_out has shape {dy.shape} but the output has {out.shape}")
    with _in_float64_range("the attention's gradients"):
        cache = kernels.mha_forward(X, *Ws, n_heads, causal)[1]
        return kernels.mha_back(cache, *Ws, dy)


def _check_heads(n_heads, d: int) -> None:
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")
    if d % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d}")


def _check_block(x, p, n_heads) -> None:
    """The shapes of a block's input and parameters (``BLOCK_PARAM_SHAPES``), without
    running the forward pass of notebook 07."""
    d = x.shape[-1]
    _check_heads(n_heads, d)
    sizes = {"d": d, "d_ff": np.shape(p["W1"])[-1]}
    for k, shape in reference.BLOCK_PARAM_SHAPES.items():
        want = tuple(sizes[s] for s in shape)
        if np.shape(p[k]) != want:
            raise ValueError(f"params[{k!r}] has shape {np.shape(p[k])}, expected {want} "
                             f"for x of width d={d}")


def transformer_block_with_cache(x, params, n_heads: int, causal: bool = True):
    """The forward pass of :func:`helpers.reference.transformer_block` (not an exercise),
    keeping what its backward needs: ``(h, cache)`` with ``cache`` a dict of

    ``t1`` (LN1's output ``[..., N, d]``), ``Q, K, V`` (split into heads,
    ``[..., n_heads, N, d_h]``), ``mask`` (``[N, N]`` bool or None), ``heads``
    (the attention's output merged back, ``[..., N, d]``), ``t3``, ``t4``, ``z``
    (``t4 W1 + b1``, the ReLU's input, ``[..., N, d_ff]``) and ``a`` (``ReLU(z)``).
    """
    require(params, BLOCK_KEYS, "params")
    x = _array(x, "x", min_ndim=2)
    p = {k: _array(params[k], k) for k in BLOCK_KEYS}
    _check_block(x, p, n_heads)
    with _in_float64_range("the block"):
        h, (ln1, mha, ln2, t3, t4, z, a) = kernels.block_forward_cached(x, p, n_heads, causal)
    _, Qh, Kh, Vh, _, merged = mha
    N = x.shape[-2]
    return h, {"t1": mha[0], "Q": Qh, "K": Kh, "V": Vh,
               "mask": reference.causal_mask(N) if causal else None, "heads": merged,
               "t3": t3, "t4": t4, "z": z, "a": a}


def transformer_block_backward(x, params, n_heads: int, d_out, causal: bool = True):
    """Gradients of :func:`helpers.reference.transformer_block` (pre-norm):

        t1 = LN1(x); t2 = MHA(t1); t3 = t2 + x; t4 = LN2(t3); t5 = FFN(t4); h = t5 + t3

    backwards: ``dt5 = dh``; ``dt3 = dh + LN2'(dFFN'(dt5))`` (the residual adds the
    path around the FFN); ``dx = dt3 + LN1'(MHA'(dt3))``.
    x: ``[..., N, d]``; params: the block's dict; d_out: ``[..., N, d]`` (dL/dh).
    Returns ``(dx [..., N, d], grads)``, grads a dict with the keys of params.
    """
    require(params, BLOCK_KEYS, "params")
    x = _array(x, "x", min_ndim=2)
    p = {k: _array(params[k], k) for k in BLOCK_KEYS}
    dy = _array(d_out, "d_out", min_ndim=2)
    h = helpers.transformer_block(x, p, n_heads, causal=causal)  # checks the shapes
    if dy.shape != h.shape:
        raise ValueError(f"d_out has shape {dy.shape} but the block's output has {h.shape}")
    with _in_float64_range("the block's gradients"):
        _, cache = kernels.block_forward_cached(x, p, n_heads, causal)
        return kernels.block_back(cache, p, dy)


def loss_and_grads(params, token_ids, targets, n_heads: int):
    """The language model's mean cross-entropy and its gradient with respect to params.

    params: as :func:`helpers.language_model_forward` takes them (``E, P, blocks``,
    optionally ``ln_f_gamma, ln_f_beta``); token_ids, targets: ``[N]`` or a batch
    ``[B, N]`` of ints; n_heads: the attention heads.
    Returns ``(loss, grads)``: loss the mean over every position of
    ``-log softmax(logits)[target]`` (a float), grads the same nested dict as params.
    ``E`` is used twice (embedding and tied LM head): its gradient is the sum of both.
    Computes in the dtype of ``params["E"]`` (float32 or float64).
    """
    require(params, ("E", "P", "blocks"), "params")
    dtype = np.asarray(params["E"]).dtype
    dtype = dtype if dtype in (np.float32, np.float64) else np.float64
    p = tree_map(lambda a: np.asarray(a, dtype=dtype), params)
    ids = np.asarray(token_ids)
    V, n_ctx = p["E"].shape[0], p["P"].shape[0]
    ids = _token_ids(ids.reshape(-1), V).reshape(ids.shape)
    tg = np.asarray(targets)
    if tg.shape != ids.shape:
        raise ValueError(f"targets has shape {tg.shape} but token_ids has {ids.shape}")
    tg = _token_ids(tg.reshape(-1), V, name="targets").reshape(ids.shape)
    if ids.ndim not in (1, 2) or ids.shape[-1] == 0:
        raise ValueError(f"token_ids must be [N] or [B, N] with N >= 1, got {ids.shape}")
    if ids.shape[-1] > n_ctx:
        raise ValueError(f"{ids.shape[-1]} positions but n_ctx = {n_ctx}")
    final_ln = "ln_f_gamma" in p or "ln_f_beta" in p
    if final_ln:
        require(p, ("ln_f_gamma", "ln_f_beta"), "params")
    with _in_float64_range("the model's loss and gradients"):
        return kernels.model_loss_and_grads(p, ids, tg, n_heads, final_ln)


def language_model_loss(params, token_ids, targets, n_heads: int) -> float:
    """The mean cross-entropy of :func:`loss_and_grads` without the gradients (a forward
    pass only, in the dtype of ``params["E"]``): for evaluating on held-out text."""
    dtype = np.asarray(params["E"]).dtype
    dtype = dtype if dtype in (np.float32, np.float64) else np.float64
    p = tree_map(lambda a: np.asarray(a, dtype=dtype), params)
    ids, tg = np.asarray(token_ids), np.asarray(targets)
    with _in_float64_range("the model's loss"):
        x = p["E"][ids] + p["P"][: ids.shape[-1]]                # [..., N, d]
        for block in p["blocks"]:
            x = kernels.block_output(x, block, n_heads)
        if "ln_f_gamma" in p:
            x = kernels.ln_output(x, p["ln_f_gamma"], p["ln_f_beta"])
        flat = kernels.rows(x @ p["E"].T)                               # [M, V]
        m = flat.max(axis=-1)                                    # [M]
        t = tg.reshape(-1)
        nll = (np.log(np.exp(flat - m[:, None]).sum(axis=-1))   # [M]
               - (flat[np.arange(len(t)), t] - m))
    return float(np.mean(nll, dtype=np.float64))


def sample(params, n_heads: int, prompt_ids, n_new: int, temperature: float = 1.0,
           rng=None) -> np.ndarray:
    """Extend ``prompt_ids`` by ``n_new`` ids drawn from ``softmax(logits / temperature)``
    (greedy at temperature 0), the context cropped to ``n_ctx``: notebook 12's way to
    see what a model has learned. Returns the prompt and the new ids."""
    rng = rng if rng is not None else np.random.default_rng()
    p = tree_map(lambda a: np.asarray(a, dtype=np.float64), params)
    ids = [int(i) for i in np.asarray(prompt_ids).reshape(-1)]
    n_ctx = p["P"].shape[0]
    for _ in range(n_new):
        x = p["E"][ids[-n_ctx:]] + p["P"][: len(ids[-n_ctx:])]   # [N, d]
        for block in p["blocks"]:
            x = kernels.block_output(x, block, n_heads)
        if "ln_f_gamma" in p:
            x = kernels.ln_output(x, p["ln_f_gamma"], p["ln_f_beta"])
        z = x[-1] @ p["E"].T                                     # [V]
        if temperature == 0:
            ids.append(int(np.argmax(z)))
            continue
        pr = np.exp((z - z.max()) / temperature)
        ids.append(int(rng.choice(len(z), p=pr / pr.sum())))
    return np.array(ids, dtype=np.int64)


