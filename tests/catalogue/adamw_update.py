"""Answers to ``adamw_update(theta, grad, m, v, t, lr, ...)`` (notebook 12)."""

_SIG = """def adamw_update(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    theta, g, m, v = (np.asarray(a, dtype=float) for a in (theta, grad, m, v))
"""

WRONG = {
    "no_bias_correction": (_SIG + """    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    return theta - lr * weight_decay * theta - lr * m / (np.sqrt(v) + eps), m, v
""", "without bias correction"),
    "l2_not_decoupled": (_SIG + """    g = g + weight_decay * theta
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return theta - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
""", "added to the gradient"),
    "eps_inside_sqrt": (_SIG + """    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return theta - lr * weight_decay * theta - lr * m_hat / np.sqrt(v_hat + eps), m, v
""", "eps went inside the square root"),
    "t_plus_1": (_SIG + """    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** (t + 1)), v / (1 - beta2 ** (t + 1))
    return theta - lr * weight_decay * theta - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
""", "used t + 1"),
    "no_weight_decay": (_SIG + """    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return theta - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
""", "weight decay was left out"),
    "in_place_m_v": ("""def adamw_update(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    g = np.asarray(grad, dtype=float)
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    theta = np.asarray(theta, dtype=float)
    return theta - lr * weight_decay * theta - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
""", "`m` and `v` in place"),
}

CORRECT = {
    "decay_first": _SIG + """    theta = theta * (1 - lr * weight_decay)
    m = m * beta1 + g * (1 - beta1)
    v = v * beta2 + np.square(g) * (1 - beta2)
    step = lr / (1 - beta1 ** t)
    denom = np.sqrt(v) / np.sqrt(1 - beta2 ** t) + eps
    return theta - step * m / denom, m, v
""",
    "torch_style": """import math

def adamw_update(theta, grad, m, v, t, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    theta = np.array(theta, dtype=float)
    g = np.asarray(grad, dtype=float)
    m = np.array(m, dtype=float)
    v = np.array(v, dtype=float)
    theta *= 1 - lr * weight_decay
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g * g
    bc1, bc2 = 1 - beta1 ** t, 1 - beta2 ** t
    theta -= (lr / bc1) * m / (np.sqrt(v) / math.sqrt(bc2) + eps)
    return theta, m, v
""",
}
