"""Answers to ``linear_backward(x, W, d_out)`` (notebook 12)."""

WRONG = {
    "W_not_transposed": ("""def linear_backward(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    xr, dyr = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return dy @ W, xr.T @ dyr, dyr.sum(axis=0)
""", "dx = d_out W^T"),
    "db_mean": ("""def linear_backward(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    xr, dyr = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return dy @ W.T, xr.T @ dyr, dyr.mean(axis=0)
""", "gradient is the sum"),
    "dW_transposed": ("""def linear_backward(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    xr, dyr = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
    return dy @ W.T, dyr.T @ xr, dyr.sum(axis=0)
""", "dW came out transposed"),
    "rank_2_only": ("""def linear_backward(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    return dy @ W.T, x.T @ dy, dy.sum(axis=0)
""", "written for one rank only"),
}

CORRECT = {
    "einsum": """def linear_backward(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    dx = np.einsum('...j,ij->...i', dy, W)
    dW = np.einsum('ni,nj->ij', x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1]))
    db = dy.reshape(-1, dy.shape[-1]).sum(0)
    return dx, dW, db
""",
    "tensordot": """def linear_backward(x, W, d_out):
    x = np.asarray(x, dtype=float)
    dy = np.asarray(d_out, dtype=float)
    axes = list(range(x.ndim - 1))
    return dy @ np.asarray(W).T, np.tensordot(x, dy, axes=(axes, axes)), dy.sum(axis=tuple(axes))
""",
}

#: Central differences of the forward pass instead of its derivative (issue 36, finding 7),
#: written in the answer cell as a learner would (the course's step, 1e-5).
WRONG["numerical_gradient"] = ("""def _central(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        up, down = x.copy(), x.copy()
        up.flat[k] += h
        down.flat[k] -= h
        grad.flat[k] = (f(up) - f(down)) / (2 * h)
    return grad


def linear_backward(x, W, d_out):
    x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
    loss = lambda x_, W_: np.sum(dy * (x_ @ W_))
    return (_central(lambda x_: loss(x_, W), x),
            _central(lambda W_: loss(x, W_), W),
            dy.reshape(-1, dy.shape[-1]).sum(axis=0))
""", "numerical, not analytic, gradient")
