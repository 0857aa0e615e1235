"""Optimisation: AdamW, the learning-rate schedule, clipping by the global norm."""

from __future__ import annotations

import math

import numpy as np

from helpers.training.data import flatten, tree_map, unflatten


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


