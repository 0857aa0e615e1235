"""Answers to ``numerical_gradient(f, x, h=1e-5)`` (notebook 12)."""

WRONG = {
    "forward_difference": ("""def numerical_gradient(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    base = f(x)
    for k in range(x.size):
        x.flat[k] += h
        grad.flat[k] = (f(x) - base) / h
        x.flat[k] -= h
    return grad
""", "one-sided difference"),
    "divided_by_h": ("""def numerical_gradient(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        old = x.flat[k]
        x.flat[k] = old + h
        a = f(x)
        x.flat[k] = old - h
        b = f(x)
        x.flat[k] = old
        grad.flat[k] = (a - b) / h
    return grad
""", "divided by h instead of 2 h"),
    "not_restored": ("""def numerical_gradient(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        x.flat[k] += h
        a = f(x)
        x.flat[k] -= 2 * h
        b = f(x)
        grad.flat[k] = (a - b) / (2 * h)
    return grad
""", "was not put back"),
    "unknown_half": ("""def numerical_gradient(f, x, h=1e-5):
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        old = x.flat[k]
        x.flat[k] = old + h
        a = f(x)
        x.flat[k] = old - h
        b = f(x)
        x.flat[k] = old
        grad.flat[k] = (a - b) / (4 * h)
    return grad
""", "first difference"),
    "in_place_drift": ("""def numerical_gradient(f, x, h=1e-5):
    x = np.asarray(x, dtype=float)
    grad = np.zeros_like(x)
    for k in range(x.size):
        x.flat[k] += h
        f_plus = f(x)
        x.flat[k] -= 2 * h
        f_minus = f(x)
        x.flat[k] += h
        grad.flat[k] = (f_plus - f_minus) / (2 * h)
    return grad
""", "modified its input `x` in place"),
}

CORRECT = {
    "basis_vectors": """def numerical_gradient(f, x, h=1e-5):
    x = np.asarray(x, dtype=float)
    out = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        e = e.reshape(x.shape)
        out.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(out).reshape(x.shape)
""",
    "ndindex": """def numerical_gradient(f, x, h=1e-5):
    x = np.array(x, dtype=np.float64)
    g = np.empty_like(x)
    for idx in np.ndindex(*x.shape):
        keep = x[idx]
        x[idx] = keep + h
        up = float(f(x.copy()))
        x[idx] = keep - h
        down = float(f(x.copy()))
        x[idx] = keep
        g[idx] = (up - down) / (2.0 * h)
    return g
""",
}
