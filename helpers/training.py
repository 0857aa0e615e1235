"""Training by hand: the backward pass of the course's transformer, and AdamW, in NumPy.

Each function is the chain rule of one forward equation of :mod:`helpers.reference`,
written with the same conventions (row vectors, population-variance layer norm with
``eps`` inside the square root, pre-norm block, causal attention scaled by
``1/sqrt(d_h)``, LM head tied to the token embeddings, optional final layer norm).
A backward function takes the forward's inputs and ``d_out``, the gradient of the loss
with respect to the forward's output (same shape as the output), and returns the
gradients with respect to the inputs and parameters (each shaped like what it is the
gradient of):

    cross-entropy      dL/dlogits = (softmax(logits) - onehot(targets)) / N
    linear             y = x W + b:     dx = dy W^T,  dW = x^T dy,  db = sum_rows dy
    ReLU               dz = dy * [z > 0]
    GELU               dz = dy * (Phi(z) + z phi(z))
    layer norm         dx = (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) / sqrt(var + eps),
                       dxhat = dy * gamma,  dgamma = sum xhat dy,  dbeta = sum dy
    attention          dV = P^T dO,  dP = dO V^T,  dS = P * (dP - rowsum(P * dP)),
                       dQ = dS K / sqrt(d_k),  dK = dS^T Q / sqrt(d_k)
    embedding          dE[v] = sum of dX[i] over the positions i with ids[i] = v (np.add.at),
                       dP[:N] = dX
    residual           y = f(x) + x:    dx = dy + (df/dx)^T dy
    tied head          logits = h E^T:  dh = dlogits E,  dE += dlogits^T h

:func:`loss_and_grads` chains them into the gradient of the whole model; :func:`adamw_step`,
:func:`lr_schedule` and :func:`clip_by_global_norm` turn gradients into a training step.

Every function accepts leading batch dimensions (``[B, N, d]`` as well as ``[N, d]``);
a parameter's gradient is summed over them. The public functions compute in float64 and
raise ``ValueError`` (never return NaN or warn) when a product would exceed float64.
:func:`loss_and_grads` and :func:`adamw_step` keep the dtype of ``params`` (float32
for fast training, float64 for checking).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import helpers
from helpers import reference
from helpers.course.edge import array as _array
from helpers.course.edge import in_float64_range as _in_float64_range
from helpers.course.edge import nonnegative, require
from helpers.course.edge import token_ids as _token_ids

__all__ = [
    "numerical_gradient", "relative_error",
    "cross_entropy_backward", "linear_backward", "relu_backward", "gelu", "gelu_backward",
    "layer_norm_backward", "attention_backward", "embed_backward",
    "multi_head_attention_backward", "feed_forward_backward",
    "transformer_block_backward", "transformer_block_with_cache", "loss_and_grads",
    "language_model_loss", "sample",
    "adamw_update", "adamw_step", "adamw_init", "decays", "lr_schedule",
    "clip_by_global_norm", "global_norm",
    "init_params", "flatten", "unflatten", "tree_map", "get_batch", "BLOCK_KEYS",
    "PLAY_PATH", "load_play",
]

BLOCK_KEYS = tuple(reference.BLOCK_PARAM_SHAPES)
LN_EPS = 1e-5


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
        return _linear_back(x, W, dy)


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
        return _ln_back(xhat, rstd, gamma, dy)


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
        return _attention_back(Q, K, V, P, dO)


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
        return _embed_back(ids, dX, vocab_size, n_ctx)


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
        da, dW2, db2 = _linear_back(a, W2, dy)                   # [..., d_ff], ...
        dz = da * (z > 0)                                        # [..., d_ff]
        dx, dW1, db1 = _linear_back(x, W1, dz)                   # [..., d], ...
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
        cache = _mha_forward(X, *Ws, n_heads, causal)[1]
        return _mha_back(cache, *Ws, dy)


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
        h, (ln1, mha, ln2, t3, t4, z, a) = _block_forward(x, p, n_heads, causal)
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
        _, cache = _block_forward(x, p, n_heads, causal)
        return _block_back(cache, p, dy)


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
        return _loss_and_grads(p, ids, tg, n_heads, final_ln)


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
            x = _block_output(x, block, n_heads)
        if "ln_f_gamma" in p:
            x = _ln_output(x, p["ln_f_gamma"], p["ln_f_beta"])
        flat = _rows(x @ p["E"].T)                               # [M, V]
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
            x = _block_output(x, block, n_heads)
        if "ln_f_gamma" in p:
            x = _ln_output(x, p["ln_f_gamma"], p["ln_f_beta"])
        z = x[-1] @ p["E"].T                                     # [V]
        if temperature == 0:
            ids.append(int(np.argmax(z)))
            continue
        pr = np.exp((z - z.max()) / temperature)
        ids.append(int(rng.choice(len(z), p=pr / pr.sum())))
    return np.array(ids, dtype=np.int64)


# ---------------------------------------------------------------------------------------
# Optimisation: AdamW, the learning-rate schedule, clipping
# ---------------------------------------------------------------------------------------


def adamw_update(theta, grad, m, v, t: int, lr: float, beta1: float = 0.9,
                 beta2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0):
    """One AdamW step for one array (Loshchilov & Hutter, 2019):

        m = beta1 m + (1 - beta1) g;         v = beta2 v + (1 - beta2) g^2
        m_hat = m / (1 - beta1^t);           v_hat = v / (1 - beta2^t)   (bias correction)
        theta = theta - lr * weight_decay * theta - lr * m_hat / (sqrt(v_hat) + eps)

    The decay is *decoupled*: it shrinks theta directly, not through the gradient (adding
    ``weight_decay * theta`` to g would be L2 regularisation, rescaled by Adam).
    theta, grad, m, v: the same shape; t: the step number, from 1.
    Returns ``(theta, m, v)``, new arrays of theta's dtype.
    """
    dtype = np.result_type(np.asarray(theta).dtype, np.float32)
    theta, g, m, v = (np.asarray(a, dtype=dtype) for a in (theta, grad, m, v))
    m = beta1 * m + (1 - beta1) * g                              # first moment
    v = beta2 * v + (1 - beta2) * (g * g)                        # second moment
    m_hat = m / (1 - beta1 ** t)                                 # bias-corrected
    v_hat = v / (1 - beta2 ** t)
    theta = theta * (1 - lr * weight_decay) - lr * m_hat / (np.sqrt(v_hat) + eps)
    return theta.astype(dtype, copy=False), m, v


def decays(name: str) -> bool:
    """Whether parameter ``name`` (a :func:`flatten` key) gets weight decay: the weight
    matrices of the blocks only; not gains, biases, betas or the embeddings E and P."""
    return name.rsplit(".", 1)[-1] in ("W_Q", "W_K", "W_V", "W_O", "W1", "W2")


def adamw_init(params) -> dict:
    """AdamW's state before the first step: ``t = 0`` and zero moments like params."""
    return {"t": 0, "m": tree_map(np.zeros_like, params), "v": tree_map(np.zeros_like, params)}


def adamw_step(params, grads, state, lr: float, betas=(0.9, 0.999), eps: float = 1e-8,
               weight_decay: float = 0.0, decay=decays):
    """:func:`adamw_update` on every array of params (``decay(name)`` says which decay).

    Returns ``(params, state)``, both new (the inputs are not changed).
    """
    t = state["t"] + 1
    fp, fg = flatten(params), flatten(grads)
    fm, fv = flatten(state["m"]), flatten(state["v"])
    new_p, new_m, new_v = {}, {}, {}
    for k in fp:
        wd = weight_decay if decay(k) else 0.0
        new_p[k], new_m[k], new_v[k] = adamw_update(fp[k], fg[k], fm[k], fv[k], t, lr,
                                                    betas[0], betas[1], eps, wd)
    return unflatten(new_p), {"t": t, "m": unflatten(new_m), "v": unflatten(new_v)}


def lr_schedule(step: int, steps: int, peak_lr: float, warmup: int,
                min_ratio: float = 0.1) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to ``min_ratio * peak_lr``.

    step: from 0. ``lr = peak * (step + 1) / warmup`` while ``step < warmup``; then, with
    ``progress = (step - warmup) / (steps - warmup)`` in [0, 1],
    ``lr = peak * (min_ratio + (1 - min_ratio) * (1 + cos(pi * progress)) / 2)``.
    """
    if step < warmup:
        return peak_lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak_lr * (min_ratio + (1 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress)))


def global_norm(grads) -> float:
    """The Euclidean norm of all the gradients' entries together."""
    return float(math.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64)))
                               for g in flatten(grads).values())))


def clip_by_global_norm(grads, max_norm: float):
    """Scale every gradient by ``max_norm / (norm + 1e-6)`` when that is below 1, with
    ``norm`` the global norm over all of them (the direction is kept; ``1e-6`` as in
    ``torch.nn.utils.clip_grad_norm_``). Returns ``(grads, norm)``, the norm before."""
    norm = global_norm(grads)
    scale = max_norm / (norm + 1e-6)
    if scale >= 1.0:
        return tree_map(lambda g: np.array(g), grads), norm
    return tree_map(lambda g: (np.asarray(g) * scale).astype(np.asarray(g).dtype), grads), norm


# ---------------------------------------------------------------------------------------
# Parameters as trees, initialisation, batches
# ---------------------------------------------------------------------------------------


def tree_map(fn, *trees):
    """``fn`` applied to the arrays of nested dicts / lists with the same layout."""
    first = trees[0]
    if isinstance(first, dict):
        return {k: tree_map(fn, *(t[k] for t in trees)) for k in first}
    if isinstance(first, (list, tuple)):
        return [tree_map(fn, *items) for items in zip(*trees)]
    return fn(*trees)


def flatten(tree, prefix: str = "") -> dict:
    """``{"E": ..., "blocks.0.W_Q": ..., ...}`` from the nested params layout."""
    out = {}
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for k, v in items:
        name = f"{prefix}{k}"
        if isinstance(v, (dict, list, tuple)):
            out.update(flatten(v, name + "."))
        else:
            out[name] = v
    return out


def unflatten(flat: dict) -> dict:
    """The inverse of :func:`flatten` for the language model's layout."""
    out: dict = {}
    blocks: dict[int, dict] = {}
    for name, v in flat.items():
        if name.startswith("blocks."):
            _, i, key = name.split(".", 2)
            blocks.setdefault(int(i), {})[key] = v
        else:
            out[name] = v
    if blocks:
        out["blocks"] = [blocks[i] for i in sorted(blocks)]
    return out


def init_params(vocab_size: int, d_model: int, n_layers: int, d_ff: int, n_ctx: int,
                seed=0, dtype=np.float32) -> dict:
    """GPT-2 style initial parameters in the layout of ``language_model_forward``:
    N(0, 0.02) matrices and embeddings, ``W_O`` and ``W2`` (which write into the
    residual stream) N(0, 0.02 / sqrt(2 L)), zero biases and betas, unit gammas, a final
    layer norm. ``seed``: an int, or a NumPy generator to draw from (the exercises' cases
    hand it theirs)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    std, out_std = 0.02, 0.02 / math.sqrt(2 * n_layers)

    def normal(s, *shape):
        return (s * rng.standard_normal(shape)).astype(dtype)

    blocks = []
    for _ in range(n_layers):
        blocks.append({
            "ln1_gamma": np.ones(d_model, dtype), "ln1_beta": np.zeros(d_model, dtype),
            "W_Q": normal(std, d_model, d_model), "W_K": normal(std, d_model, d_model),
            "W_V": normal(std, d_model, d_model), "W_O": normal(out_std, d_model, d_model),
            "ln2_gamma": np.ones(d_model, dtype), "ln2_beta": np.zeros(d_model, dtype),
            "W1": normal(std, d_model, d_ff), "b1": np.zeros(d_ff, dtype),
            "W2": normal(out_std, d_ff, d_model), "b2": np.zeros(d_model, dtype)})
    return {"E": normal(std, vocab_size, d_model), "P": normal(std, n_ctx, d_model),
            "blocks": blocks, "ln_f_gamma": np.ones(d_model, dtype),
            "ln_f_beta": np.zeros(d_model, dtype)}


#: Romeo and Juliet (Project Gutenberg, public domain; see helpers/data/README.md), the
#: text notebook 12 trains on (written by tools/make_shakespeare_sample.py).
PLAY_PATH = Path(__file__).resolve().parent / "data" / "romeo_and_juliet.txt"


def load_play(val_fraction: float = 0.1):
    """``(train_ids, val_ids, encode, decode)`` for the play, one id per character; the
    last ``val_fraction`` of the text (from a blank line) is held out."""
    text = PLAY_PATH.read_text(encoding="utf-8")
    vocab = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(vocab)}

    def encode(s: str) -> np.ndarray:
        missing = sorted(set(s) - set(index))
        if missing:
            raise ValueError(f"characters not in the play's vocabulary: {missing}")
        return np.array([index[c] for c in s], dtype=np.int64)

    def decode(ids) -> str:
        return "".join(vocab[int(i)] for i in np.asarray(ids).reshape(-1))

    cut = text.index("\n\n", int(len(text) * (1 - val_fraction))) + 2
    return encode(text[:cut]), encode(text[cut:]), encode, decode


def get_batch(data, n_ctx: int, batch_size: int, rng: np.random.Generator):
    """Random windows of ``data`` (1-D ids): inputs ``[B, n_ctx]`` and their next-token
    targets ``[B, n_ctx]`` (the same windows shifted by one)."""
    data = np.asarray(data)
    starts = rng.integers(0, len(data) - n_ctx - 1, size=batch_size)   # [B]
    windows = data[starts[:, None] + np.arange(n_ctx + 1)]              # [B, n_ctx + 1]
    return windows[:, :-1], windows[:, 1:]


# ---------------------------------------------------------------------------------------
# The computations, without input checks (the public functions above check first).
# Forward functions return (output, cache); backward functions take the cache.
# ---------------------------------------------------------------------------------------


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])                            # [rows, last]


def _linear_back(x, W, dy):
    dx = dy @ W.T                                                # [..., d_in]
    dW = _rows(x).T @ _rows(dy)                                  # [d_in, d_out]
    db = _rows(dy).sum(axis=0)                                   # [d_out]
    return dx, dW, db


def _ln_forward(x, gamma, beta, eps=LN_EPS):
    mu = x.mean(axis=-1, keepdims=True)                          # [..., 1]
    dev = x - mu                                                 # [..., d]
    var = (dev * dev).mean(axis=-1, keepdims=True)               # [..., 1], population
    rstd = 1.0 / np.sqrt(var + eps)                              # [..., 1]
    xhat = dev * rstd                                            # [..., d]
    return gamma * xhat + beta, (xhat, rstd)


def _ln_output(x, gamma, beta, eps=LN_EPS):
    """The layer norm's output alone (see :func:`_block_output`)."""
    return _ln_forward(x, gamma, beta, eps)[0]


def _ln_back(xhat, rstd, gamma, dy):
    dgamma = _rows(dy * xhat).sum(axis=0)                        # [d]
    dbeta = _rows(dy).sum(axis=0)                                # [d]
    dxhat = dy * gamma                                           # [..., d]
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)      # [..., d]: the mean's
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))  # and var's terms
    return dx, dgamma, dbeta


def _softmax_rows(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))                # masked: exp(-inf) = 0
    return e / e.sum(axis=-1, keepdims=True)


def _attention_back(Q, K, V, P, dO):
    scale = 1.0 / math.sqrt(Q.shape[-1])
    dV = np.swapaxes(P, -1, -2) @ dO                             # [..., N_k, d_v]
    dP = dO @ np.swapaxes(V, -1, -2)                             # [..., N_q, N_k]
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))         # softmax's JVP
    dQ = (dS @ K) * scale                                        # [..., N_q, d_k]
    dK = (np.swapaxes(dS, -1, -2) @ Q) * scale                   # [..., N_k, d_k]
    return dQ, dK, dV


def _embed_back(ids, dX, vocab_size, n_ctx):
    d = dX.shape[-1]
    dE = np.zeros((vocab_size, d), dtype=dX.dtype)               # [V, d]
    np.add.at(dE, ids.reshape(-1), _rows(dX))                    # repeated ids add up
    dP = np.zeros((n_ctx, d), dtype=dX.dtype)                    # [n_ctx, d]
    N = ids.shape[-1]
    dP[:N] = dX.reshape(-1, N, d).sum(axis=0)                    # summed over the batch
    return dE, dP


def _split(X, h):                                                # [..., N, d] -> [..., h, N, d_h]
    return np.swapaxes(X.reshape(*X.shape[:-1], h, X.shape[-1] // h), -2, -3)


def _merge(H):                                                   # [..., h, N, d_h] -> [..., N, d]
    X = np.swapaxes(H, -2, -3)
    return X.reshape(*X.shape[:-2], X.shape[-2] * X.shape[-1])


def _mha_forward(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    Qh = _split(X @ W_Q, n_heads)                                # [..., h, N, d_h]
    Kh = _split(X @ W_K, n_heads)
    Vh = _split(X @ W_V, n_heads)
    S = (Qh @ np.swapaxes(Kh, -1, -2)) * (1.0 / math.sqrt(Qh.shape[-1]))  # [..., h, N, N]
    if causal:
        N = X.shape[-2]
        S = S + np.triu(np.full((N, N), -np.inf, dtype=S.dtype), k=1)  # j > i -> -inf
    P = _softmax_rows(S)                                         # [..., h, N, N]
    merged = _merge(P @ Vh)                                      # [..., N, d]
    return merged @ W_O, (X, Qh, Kh, Vh, P, merged)


def _mha_back(cache, W_Q, W_K, W_V, W_O, dy):
    X, Qh, Kh, Vh, P, merged = cache
    n_heads = Qh.shape[-3]
    dmerged, dW_O, _ = _linear_back(merged, W_O, dy)             # [..., N, d]
    dQh, dKh, dVh = _attention_back(Qh, Kh, Vh, P, _split(dmerged, n_heads))
    dX = np.zeros_like(X)
    grads = {}
    for name, W, dH in (("W_Q", W_Q, dQh), ("W_K", W_K, dKh), ("W_V", W_V, dVh)):
        dX_part, grads[name], _ = _linear_back(X, W, _merge(dH))  # X feeds all three
        dX += dX_part
    grads["W_O"] = dW_O
    return dX, grads


def _block_forward(x, p, n_heads, causal=True):
    t1, ln1 = _ln_forward(x, p["ln1_gamma"], p["ln1_beta"])      # [..., N, d]
    t2, mha = _mha_forward(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal)
    t3 = t2 + x                                                  # residual
    t4, ln2 = _ln_forward(t3, p["ln2_gamma"], p["ln2_beta"])
    z = t4 @ p["W1"] + p["b1"]                                   # [..., N, d_ff]
    a = np.maximum(z, 0)                                         # ReLU
    h = a @ p["W2"] + p["b2"] + t3                               # t5 + t3, residual
    return h, (ln1, mha, ln2, t3, t4, z, a)


def _block_output(x, p, n_heads, causal=True):
    """The block's output alone, for forward passes that keep no cache (the held-out loss,
    sampling). A student bundle records it without the cache: notebook 12's samples and
    held-out losses take 5 MB there instead of 330."""
    return _block_forward(x, p, n_heads, causal)[0]


def _block_back(cache, p, dh):
    ln1, mha, ln2, _, t4, z, a = cache
    g = {}
    da, g["W2"], g["b2"] = _linear_back(a, p["W2"], dh)          # dt5 = dh
    dz = da * (z > 0)                                            # ReLU
    dt4, g["W1"], g["b1"] = _linear_back(t4, p["W1"], dz)
    dt3_ln, g["ln2_gamma"], g["ln2_beta"] = _ln_back(*ln2, p["ln2_gamma"], dt4)
    dt3 = dh + dt3_ln                                            # residual: both paths
    dt1, mha_grads = _mha_back(mha, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], dt3)  # dt2 = dt3
    g.update(mha_grads)
    dx_ln, g["ln1_gamma"], g["ln1_beta"] = _ln_back(*ln1, p["ln1_gamma"], dt1)
    dx = dt3 + dx_ln                                             # residual: both paths
    return dx, {k: g[k] for k in BLOCK_KEYS}


def _loss_and_grads(p, ids, tg, n_heads, final_ln):
    E, P = p["E"], p["P"]
    N = ids.shape[-1]
    x = E[ids] + P[:N]                                           # [..., N, d]
    caches = []
    for block in p["blocks"]:
        x, cache = _block_forward(x, block, n_heads)
        caches.append(cache)
    if final_ln:
        hf, ln_f = _ln_forward(x, p["ln_f_gamma"], p["ln_f_beta"])
    else:
        hf = x
    logits = hf @ E.T                                            # [..., N, V], tied head
    flat = _rows(logits)                                         # [M, V]
    M = flat.shape[0]
    t = tg.reshape(-1)
    m = flat.max(axis=-1, keepdims=True)                         # [M, 1]
    e = np.exp(flat - m)                                         # [M, V]
    s = e.sum(axis=-1, keepdims=True)                            # [M, 1]
    nll = np.log(s[:, 0]) - (flat[np.arange(M), t] - m[:, 0])    # [M]
    loss = float(np.sum(nll.astype(np.float64)) / M)
    dlogits = e / s                                              # softmax, [M, V]
    dlogits[np.arange(M), t] -= 1                                # p - onehot
    dlogits *= 1.0 / M                                           # the mean's 1/M
    dlogits = dlogits.reshape(logits.shape)
    grads: dict = {}
    dhf = dlogits @ E                                            # [..., N, d]
    dE_head = _rows(dlogits).T @ _rows(hf)                       # [V, d], from the head
    if final_ln:
        dx, grads["ln_f_gamma"], grads["ln_f_beta"] = _ln_back(*ln_f, p["ln_f_gamma"], dhf)
    else:
        dx = dhf
    block_grads = [None] * len(caches)
    for i in reversed(range(len(caches))):
        dx, block_grads[i] = _block_back(caches[i], p["blocks"][i], dx)
    dE_embed, dP = _embed_back(ids, dx, E.shape[0], P.shape[0])
    out = {"E": dE_head + dE_embed, "P": dP, "blocks": block_grads}   # tied: both add
    if final_ln:
        out["ln_f_gamma"], out["ln_f_beta"] = grads["ln_f_gamma"], grads["ln_f_beta"]
    return loss, {k: out[k] for k in p if k in out}
