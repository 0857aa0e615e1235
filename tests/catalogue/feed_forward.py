"""Answers to ``feed_forward(x, W1, b1, W2, b2)`` (notebook 07)."""

WRONG = {
    "no_relu": ("""def feed_forward(x, W1, b1, W2, b2):
    x = np.asarray(x, dtype=float)
    return (x @ W1 + b1) @ W2 + b2
""", "the ReLU is missing"),
    "relu_on_output": ("""def feed_forward(x, W1, b1, W2, b2):
    relu = lambda a: np.maximum(a, 0)
    return relu(relu(np.asarray(x, dtype=float) @ W1 + b1) @ W2 + b2)
""", "ReLU was applied to the output"),
    "b1_after_relu": ("""def feed_forward(x, W1, b1, W2, b2):
    return (np.maximum(0, np.asarray(x, dtype=float) @ W1) + b1) @ W2 + b2
""", "b1 was added after the ReLU"),
    "missing_b2": ("""def feed_forward(x, W1, b1, W2, b2):
    return np.maximum(0, np.asarray(x, dtype=float) @ W1 + b1) @ W2
""", "b2 is missing"),
    "gelu": ("""def feed_forward(x, W1, b1, W2, b2):
    h = np.asarray(x, dtype=float) @ W1 + b1
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    return h @ W2 + b2
""", "GELU"),
}

CORRECT = {
    "where": """def feed_forward(x, W1, b1, W2, b2):
    h = np.asarray(x, dtype=float) @ np.asarray(W1) + np.asarray(b1)
    h = np.where(h > 0, h, 0.0)
    return h @ np.asarray(W2) + np.asarray(b2)
""",
    "clip_einsum": """def feed_forward(x, W1, b1, W2, b2):
    h = np.clip(np.einsum("nd,df->nf", np.asarray(x, float), np.asarray(W1, float)) + b1, 0, None)
    return np.einsum("nf,fd->nd", h, np.asarray(W2, float)) + b2
""",
    "mask_multiply": """def feed_forward(x, W1, b1, W2, b2):
    pre = np.dot(x, W1) + b1
    return np.dot(pre * (pre > 0), W2) + b2
""",
}
