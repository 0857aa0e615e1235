"""Code shared by several exercises' known mistakes (deliberately wrong in one
place each; the right parts call :mod:`helpers.reference` through the module)."""

from __future__ import annotations

import numpy as np

import helpers
from helpers import reference
from helpers.course import draw
from helpers.course.text import model_fingerprint


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


def _cos_with(a, b, denominator):
    a, b = _f(a), _f(b)
    return float(a @ b / denominator(a, b))


def _simple(X, scale, axis=-1, softmax=None, output="out"):
    X = _f(X)
    s = X @ X.T / scale(X)
    w = (softmax or reference.softmax)(s, axis=axis)
    if output == "weights":
        return w
    if output == "weights_T":
        return w.T @ X
    return w @ X


def _xattn(X_dec, H_enc, W_Q, W_K, W_V, *, q_from="dec", kv_from="enc", **kw):
    src = {"dec": _f(X_dec), "enc": _f(H_enc)}
    Q = src[q_from] @ _f(W_Q)
    K = src[kv_from] @ _f(W_K)
    V = src[kv_from] @ _f(W_V)
    return _attention(Q, K, V, **kw)


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


def _ffn(x, W1, b1, W2, b2, *, act=None, use_b1=True, use_b2=True, b1_after=False,
         relu_out=False):
    x = _f(x)
    act = act or (lambda a: np.maximum(0.0, a))
    pre = x @ _f(W1)
    hidden = act(pre) + _f(b1) if b1_after else act(pre + (_f(b1) if use_b1 else 0.0))
    out = hidden @ _f(W2) + (_f(b2) if use_b2 else 0.0)
    return np.maximum(0.0, out) if relu_out else out


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


def _ids(token_ids):
    return np.asarray(token_ids).astype(np.int64)


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


def _nll_rows(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    m = z.max(axis=-1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(z - m).sum(axis=-1))
    return lse - z[np.arange(len(t)), t]


#: The reference's logits by (model, n_heads, context), for :func:`_gen`: diagnosing a
#: wrong generate runs each known mistake on the same small models and contexts (one
#: notebook: 25,000 forward passes, 3,500 of them different).
_FORWARD_MEMO: dict = {}


def _forward(ctx, params, n_heads, model: str):
    key = (model, n_heads, ctx.tobytes())
    logits = _FORWARD_MEMO.get(key)
    if logits is None:
        if len(_FORWARD_MEMO) > 20000:
            _FORWARD_MEMO.clear()
        # as the learner's generate calls it: the reference checked at the edge
        logits = _FORWARD_MEMO[key] = helpers.language_model_forward(ctx, params, n_heads)
        logits.flags.writeable = False               # shared by every later caller
    return logits


def _gen(token_ids, params, n_heads, n_new, temperature=0.0, rng=None, *, crop=None,
         extend=True, position=-1, only_new=False, flat_argmax=False, sampler=None):
    ids = _ids(token_ids)
    prompt = ids.copy()
    n_ctx = np.shape(params["P"])[0]
    crop = n_ctx if crop is None else crop
    model = model_fingerprint(params)
    for _ in range(n_new):
        ctx = ids if extend else prompt
        ctx = ctx[-crop:] if crop else ctx
        all_logits = _forward(ctx, params, n_heads, model)
        logits = all_logits[position]
        if flat_argmax and temperature == 0:
            nxt = int(np.argmax(all_logits))
        elif temperature == 0 and sampler is None:
            nxt = int(np.argmax(logits))
        else:
            p = (sampler or _sample_correct)(logits, temperature)
            nxt = int(draw.rng(rng).choice(len(p), p=p))
        ids = np.append(ids, nxt)
    return ids[len(prompt):] if only_new else ids


def _probs(z):
    """``reference.softmax`` of one row of the reference's own logits, the same
    operations without its checks at the edge (a generation samples thousands of steps)."""
    shifted = z - z.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def _sample_correct(logits, temperature):
    return _probs((logits - logits.max()) / temperature)


def _sampler_multiplied(logits, temperature):
    return _probs(logits * temperature) if temperature > 0 else _onehot(logits)


def _sampler_no_temperature(logits, temperature):
    return _probs(logits) if temperature > 0 else _onehot(logits)


def _onehot(logits, temperature=0.0):
    p = np.zeros(len(logits))
    p[int(np.argmax(logits))] = 1.0
    return p


def _sampler_uniform(logits, temperature):
    return np.full(len(logits), 1.0 / len(logits)) if temperature > 0 else _onehot(logits)
