"""Answers to ``attention_backward(Q, K, V, mask, d_out)`` (notebook 12)."""

_FORWARD = """def attention_backward(Q, K, V, mask, d_out):
    Q, K, V, dO = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
    c = 1 / np.sqrt(Q.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) * c
"""
_SOFTMAX = """    P = np.exp(S - S.max(-1, keepdims=True))
    P = P / P.sum(-1, keepdims=True)
    dV = np.swapaxes(P, -1, -2) @ dO
    dP = dO @ np.swapaxes(V, -1, -2)
"""
_MASK = """    if mask is not None:
        S = np.where(mask, S, -np.inf)
"""

WRONG = {
    "mask_ignored": (_FORWARD + _SOFTMAX + """    dS = P * (dP - (P * dP).sum(-1, keepdims=True))
    return dS @ K * c, np.swapaxes(dS, -1, -2) @ Q * c, dV
""", "mask was not applied in the backward"),
    "softmax_no_rowsum": (_FORWARD + _MASK + _SOFTMAX + """    dS = P * dP
    return dS @ K * c, np.swapaxes(dS, -1, -2) @ Q * c, dV
""", "softmax's gradient without its second term"),
    "no_scale": (_FORWARD + _MASK + _SOFTMAX + """    dS = P * (dP - (P * dP).sum(-1, keepdims=True))
    return dS @ K, np.swapaxes(dS, -1, -2) @ Q, dV
""", "1/sqrt(d_k)"),
    "dK_not_scaled": (_FORWARD + _MASK + _SOFTMAX + """    dS = P * (dP - (P * dP).sum(-1, keepdims=True))
    return dS @ K * c, np.swapaxes(dS, -1, -2) @ Q, dV
""", "dK is missing the 1/sqrt(d_k)"),
}

CORRECT = {
    "large_negative": _FORWARD + """    if mask is not None:
        S = np.where(mask, S, -1e30)
""" + _SOFTMAX + """    dS = P * dP - P * np.sum(P * dP, axis=-1, keepdims=True)
    return dS @ K * c, np.swapaxes(dS, -1, -2) @ Q * c, dV
""",
    "einsum": """def attention_backward(Q, K, V, mask, d_out):
    Q, K, V, dO = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
    c = Q.shape[-1] ** -0.5
    S = np.einsum('...qd,...kd->...qk', Q, K) * c
    if mask is not None:
        S = np.where(np.asarray(mask, dtype=bool), S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    P = np.exp(S)
    P /= P.sum(axis=-1, keepdims=True)
    dV = np.einsum('...qk,...qv->...kv', P, dO)
    dP = np.einsum('...qv,...kv->...qk', dO, V)
    dS = P * (dP - np.einsum('...qk,...qk->...q', P, dP)[..., None])
    return (np.einsum('...qk,...kd->...qd', dS, K) * c,
            np.einsum('...qk,...qd->...kd', dS, Q) * c, dV)
""",
}

#: Central differences of the forward pass instead of its derivative (issue 36, finding 7),
#: written in the answer cell as a learner would (the course's step, 1e-5).
WRONG["numerical_gradient"] = ("""from helpers import scaled_dot_product_attention

def _central(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[k] += h
        down.flat[k] -= h
        grad.flat[k] = (f(up) - f(down)) / (2 * h)
    return grad


def attention_backward(Q, K, V, mask, d_out):
    Q, K, V, dy = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
    loss = lambda q, k, v: np.sum(dy * scaled_dot_product_attention(q, k, v, mask)[0])
    return (_central(lambda q: loss(q, K, V), Q),
            _central(lambda k: loss(Q, k, V), K),
            _central(lambda v: loss(Q, K, v), V))
""", "numerical, not analytic, gradient")
