"""Answers to ``merge_heads(H)`` (notebook 06)."""

WRONG = {
    "reshape_without_transpose": ("""def merge_heads(H):
    H = np.asarray(H, dtype=float)
    n_heads, N, d_h = H.shape
    return H.reshape(N, n_heads * d_h)
""", "reshaped [n_heads, N, d_h] straight to"),
    "concatenate_rows": ("""def merge_heads(H):
    return np.concatenate(list(np.asarray(H, dtype=float)), axis=0)
""", "below each other"),
    "mean": ("""def merge_heads(H):
    return np.asarray(H, dtype=float).mean(axis=0)
""", "averaged the heads"),
    "sum": ("""def merge_heads(H):
    return np.sum(np.asarray(H, dtype=float), axis=0)
""", "added the heads up"),
}

CORRECT = {
    "hstack": """def merge_heads(H):
    return np.hstack(list(np.asarray(H, dtype=float)))
""",
    "concatenate": """def merge_heads(H):
    return np.concatenate([h for h in np.asarray(H, dtype=float)], axis=-1)
""",
    "loop_fill": """def merge_heads(H):
    H = np.asarray(H, dtype=float)
    n_heads, N, d_h = H.shape
    out = np.zeros((N, n_heads * d_h))
    for c in range(n_heads):
        out[:, c * d_h:(c + 1) * d_h] = H[c]
    return out
""",
}
