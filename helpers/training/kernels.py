"""The computations of the backward pass, without input checks (the public functions of
:mod:`helpers.training` check first). Forward functions return ``(output, cache)``;
backward functions take the cache. Exercises name those that would do their work in
``refuse`` (``"helpers.training.kernels:ln_back"``)."""

from __future__ import annotations

import math

import numpy as np

from helpers import reference

BLOCK_KEYS = tuple(reference.BLOCK_PARAM_SHAPES)
LN_EPS = 1e-5


def rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])                            # [rows, last]


def linear_back(x, W, dy):
    dx = dy @ W.T                                                # [..., d_in]
    dW = rows(x).T @ rows(dy)                                  # [d_in, d_out]
    db = rows(dy).sum(axis=0)                                   # [d_out]
    return dx, dW, db


def ln_forward(x, gamma, beta, eps=LN_EPS):
    mu = x.mean(axis=-1, keepdims=True)                          # [..., 1]
    dev = x - mu                                                 # [..., d]
    var = (dev * dev).mean(axis=-1, keepdims=True)               # [..., 1], population
    rstd = 1.0 / np.sqrt(var + eps)                              # [..., 1]
    xhat = dev * rstd                                            # [..., d]
    return gamma * xhat + beta, (xhat, rstd)


def ln_output(x, gamma, beta, eps=LN_EPS):
    """The layer norm's output alone (see :func:`block_output`)."""
    return ln_forward(x, gamma, beta, eps)[0]


def ln_back(xhat, rstd, gamma, dy):
    dgamma = rows(dy * xhat).sum(axis=0)                        # [d]
    dbeta = rows(dy).sum(axis=0)                                # [d]
    dxhat = dy * gamma                                           # [..., d]
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)      # [..., d]: the mean's
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))  # and var's terms
    return dx, dgamma, dbeta


def softmax_rows(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))                # masked: exp(-inf) = 0
    return e / e.sum(axis=-1, keepdims=True)


def attention_back(Q, K, V, P, dO):
    scale = 1.0 / math.sqrt(Q.shape[-1])
    dV = np.swapaxes(P, -1, -2) @ dO                             # [..., N_k, d_v]
    dP = dO @ np.swapaxes(V, -1, -2)                             # [..., N_q, N_k]
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))         # softmax's JVP
    dQ = (dS @ K) * scale                                        # [..., N_q, d_k]
    dK = (np.swapaxes(dS, -1, -2) @ Q) * scale                   # [..., N_k, d_k]
    return dQ, dK, dV


def embed_back(ids, dX, vocab_size, n_ctx):
    d = dX.shape[-1]
    dE = np.zeros((vocab_size, d), dtype=dX.dtype)               # [V, d]
    np.add.at(dE, ids.reshape(-1), rows(dX))                    # repeated ids add up
    dP = np.zeros((n_ctx, d), dtype=dX.dtype)                    # [n_ctx, d]
    N = ids.shape[-1]
    dP[:N] = dX.reshape(-1, N, d).sum(axis=0)                    # summed over the batch
    return dE, dP


def split(X, h):                                                # [..., N, d] -> [..., h, N, d_h]
    return np.swapaxes(X.reshape(*X.shape[:-1], h, X.shape[-1] // h), -2, -3)


def merge(H):                                                   # [..., h, N, d_h] -> [..., N, d]
    X = np.swapaxes(H, -2, -3)
    return X.reshape(*X.shape[:-2], X.shape[-2] * X.shape[-1])


def mha_forward(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    Qh = split(X @ W_Q, n_heads)                                # [..., h, N, d_h]
    Kh = split(X @ W_K, n_heads)
    Vh = split(X @ W_V, n_heads)
    S = (Qh @ np.swapaxes(Kh, -1, -2)) * (1.0 / math.sqrt(Qh.shape[-1]))  # [..., h, N, N]
    if causal:
        N = X.shape[-2]
        S = S + np.triu(np.full((N, N), -np.inf, dtype=S.dtype), k=1)  # j > i -> -inf
    P = softmax_rows(S)                                         # [..., h, N, N]
    merged = merge(P @ Vh)                                      # [..., N, d]
    return merged @ W_O, (X, Qh, Kh, Vh, P, merged)


def mha_back(cache, W_Q, W_K, W_V, W_O, dy):
    X, Qh, Kh, Vh, P, merged = cache
    n_heads = Qh.shape[-3]
    dmerged, dW_O, _ = linear_back(merged, W_O, dy)             # [..., N, d]
    dQh, dKh, dVh = attention_back(Qh, Kh, Vh, P, split(dmerged, n_heads))
    dX = np.zeros_like(X)
    grads = {}
    for name, W, dH in (("W_Q", W_Q, dQh), ("W_K", W_K, dKh), ("W_V", W_V, dVh)):
        dX_part, grads[name], _ = linear_back(X, W, merge(dH))  # X feeds all three
        dX += dX_part
    grads["W_O"] = dW_O
    return dX, grads


def block_forward_cached(x, p, n_heads, causal=True):
    t1, ln1 = ln_forward(x, p["ln1_gamma"], p["ln1_beta"])      # [..., N, d]
    t2, mha = mha_forward(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal)
    t3 = t2 + x                                                  # residual
    t4, ln2 = ln_forward(t3, p["ln2_gamma"], p["ln2_beta"])
    z = t4 @ p["W1"] + p["b1"]                                   # [..., N, d_ff]
    a = np.maximum(z, 0)                                         # ReLU
    h = a @ p["W2"] + p["b2"] + t3                               # t5 + t3, residual
    return h, (ln1, mha, ln2, t3, t4, z, a)


def block_output(x, p, n_heads, causal=True):
    """The block's output alone, for forward passes that keep no cache (the held-out loss,
    sampling). A student bundle records it without the cache: notebook 12's samples and
    held-out losses take 5 MB there instead of 330."""
    return block_forward_cached(x, p, n_heads, causal)[0]


def block_back(cache, p, dh):
    ln1, mha, ln2, _, t4, z, a = cache
    g = {}
    da, g["W2"], g["b2"] = linear_back(a, p["W2"], dh)          # dt5 = dh
    dz = da * (z > 0)                                            # ReLU
    dt4, g["W1"], g["b1"] = linear_back(t4, p["W1"], dz)
    dt3_ln, g["ln2_gamma"], g["ln2_beta"] = ln_back(*ln2, p["ln2_gamma"], dt4)
    dt3 = dh + dt3_ln                                            # residual: both paths
    dt1, mha_grads = mha_back(mha, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], dt3)  # dt2 = dt3
    g.update(mha_grads)
    dx_ln, g["ln1_gamma"], g["ln1_beta"] = ln_back(*ln1, p["ln1_gamma"], dt1)
    dx = dt3 + dx_ln                                             # residual: both paths
    return dx, {k: g[k] for k in BLOCK_KEYS}


def model_loss_and_grads(p, ids, tg, n_heads, final_ln):
    E, P = p["E"], p["P"]
    N = ids.shape[-1]
    x = E[ids] + P[:N]                                           # [..., N, d]
    caches = []
    for block in p["blocks"]:
        x, cache = block_forward_cached(x, block, n_heads)
        caches.append(cache)
    if final_ln:
        hf, ln_f = ln_forward(x, p["ln_f_gamma"], p["ln_f_beta"])
    else:
        hf = x
    logits = hf @ E.T                                            # [..., N, V], tied head
    flat = rows(logits)                                         # [M, V]
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
    dE_head = rows(dlogits).T @ rows(hf)                       # [V, d], from the head
    if final_ln:
        dx, grads["ln_f_gamma"], grads["ln_f_beta"] = ln_back(*ln_f, p["ln_f_gamma"], dhf)
    else:
        dx = dhf
    block_grads = [None] * len(caches)
    for i in reversed(range(len(caches))):
        dx, block_grads[i] = block_back(caches[i], p["blocks"][i], dx)
    dE_embed, dP = embed_back(ids, dx, E.shape[0], P.shape[0])
    out = {"E": dE_head + dE_embed, "P": dP, "blocks": block_grads}   # tied: both add
    if final_ln:
        out["ln_f_gamma"], out["ln_f_beta"] = grads["ln_f_gamma"], grads["ln_f_beta"]
    return loss, {k: out[k] for k in p if k in out}
