"""Answers to ``layer_norm_backward(x, gamma, d_out, eps=1e-5)`` (notebook 12)."""

_HEAD = """def layer_norm_backward(x, gamma, d_out, eps=1e-5):
    x, dy = np.asarray(x, dtype=float), np.asarray(d_out, dtype=float)
    d = x.shape[-1]
    mu = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    xhat = (x - mu) / sigma
    dxhat = dy * gamma
"""
_TAIL = """    return dx, (dy * xhat).reshape(-1, d).sum(0), dy.reshape(-1, d).sum(0)
"""

WRONG = {
    "no_mean_terms": (_HEAD + """    dx = dxhat / sigma
""" + _TAIL, "the mean and the variance depend on every entry"),
    "no_variance_term": (_HEAD + """    dx = (dxhat - dxhat.mean(axis=-1, keepdims=True)) / sigma
""" + _TAIL, "variance's term is missing"),
    "gamma_not_applied": ("""def layer_norm_backward(x, gamma, d_out, eps=1e-5):
    x, dy = np.asarray(x, dtype=float), np.asarray(d_out, dtype=float)
    d = x.shape[-1]
    mu = x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    xhat = (x - mu) / sigma
    dxhat = dy
    dx = (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)) / sigma
""" + _TAIL, "gamma was left out"),
    "unknown_sign": (_HEAD + """    dx = (dxhat + dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)) / sigma
""" + _TAIL, "first difference"),
    "eps_outside_sqrt": (_HEAD.replace("np.sqrt(x.var(axis=-1, keepdims=True) + eps)",
                                       "np.sqrt(x.var(axis=-1, keepdims=True)) + eps") + """    dx = (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)) / sigma
""" + _TAIL, "eps went outside the square root"),
}

CORRECT = {
    "jacobian_per_row": """def layer_norm_backward(x, gamma, d_out, eps=1e-5):
    x = np.asarray(x, dtype=float)
    dy = np.asarray(d_out, dtype=float)
    d = x.shape[-1]
    rows, drows = x.reshape(-1, d), dy.reshape(-1, d)
    dx = np.empty_like(rows)
    dgamma, dbeta = np.zeros(d), np.zeros(d)
    for i, (r, g) in enumerate(zip(rows, drows)):
        s = np.sqrt(r.var() + eps)
        xh = (r - r.mean()) / s
        J = (np.eye(d) - 1.0 / d - np.outer(xh, xh) / d) / s     # dxhat / dx
        dx[i] = J.T @ (g * gamma)
        dgamma += g * xh
        dbeta += g
    return dx.reshape(x.shape), dgamma, dbeta
""",
    "explicit_chain": """def layer_norm_backward(x, gamma, d_out, eps=1e-5):
    x = np.asarray(x, dtype=float)
    dy = np.asarray(d_out, dtype=float)
    d = x.shape[-1]
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc ** 2, axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    dxhat = dy * gamma
    dvar = np.sum(dxhat * xc, axis=-1, keepdims=True) * -0.5 * inv ** 3
    dmu = np.sum(-dxhat * inv, axis=-1, keepdims=True) + dvar * np.mean(-2 * xc, axis=-1, keepdims=True)
    dx = dxhat * inv + dvar * 2 * xc / d + dmu / d
    axes = tuple(range(x.ndim - 1))
    return dx, np.sum(dy * xc * inv, axis=axes), np.sum(dy, axis=axes)
""",
}

#: Central differences of the forward pass instead of its derivative (issue 36, finding 7),
#: written in the answer cell as a learner would (the course's step, 1e-5).
WRONG["numerical_gradient"] = ("""from helpers import layer_norm

def _central(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[k] += h
        down.flat[k] -= h
        grad.flat[k] = (f(up) - f(down)) / (2 * h)
    return grad


def layer_norm_backward(x, gamma, d_out, eps=1e-5):
    x, gamma, dy = (np.asarray(a, dtype=float) for a in (x, gamma, d_out))
    beta = np.zeros_like(gamma)
    loss = lambda x_, g_: np.sum(dy * layer_norm(x_, g_, beta, eps))
    return (_central(lambda x_: loss(x_, gamma), x),
            _central(lambda g_: loss(x, g_), gamma),
            dy.reshape(-1, x.shape[-1]).sum(axis=0))
""", "numerical, not analytic, gradient")
