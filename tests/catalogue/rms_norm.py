"""Answers to ``rms_norm(x, weight, eps=1e-5)`` (notebook 10)."""

WRONG = {
    "eps_outside_sqrt": ("""def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    rms = np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True))
    return x / (rms + eps) * weight
""", "eps was added outside the square root"),
    "no_weight": ("""def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps)
""", "the weight (gain) was not applied"),
    "wrong_axis": ("""def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    return x / np.sqrt(np.mean(x ** 2, axis=0, keepdims=True) + eps) * weight
""", "the mean was taken over the wrong axis"),
    "mean_subtracted_like_layer_norm": ("""def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    x = x - x.mean(axis=-1, keepdims=True)
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps) * weight
""", "the mean was subtracted (that is layer norm)"),
    "norm_not_rms": ("""def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    return x / np.sqrt(np.sum(x ** 2, axis=-1, keepdims=True) + eps) * weight
""", "not the root MEAN square"),
    "eps_hard_coded": ("""def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + 1e-5) * np.asarray(weight)
""", "the eps argument was ignored"),
}

CORRECT = {
    # issue 22, finding 6: float64 for a float32 x is right (dtypes of floats are not judged)
    "float64_for_float32": """def rms_norm(x, weight, eps=1e-5):
    x = np.array(x, dtype=np.float64)
    return x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps) * np.asarray(weight)
""",
    "rsqrt_power": """def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    inv_rms = (np.square(x).mean(axis=-1, keepdims=True) + eps) ** -0.5
    return np.asarray(weight) * (x * inv_rms)
""",
    "einsum": """def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    ms = np.einsum("...d,...d->...", x, x) / x.shape[-1]
    return x / np.sqrt(ms + eps)[..., None] * np.asarray(weight, dtype=float)
""",
    "loops_per_row": """import math

def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for r, row in enumerate(flat):
        ms = sum(v * v for v in row) / len(row)
        scale = 1.0 / math.sqrt(ms + eps)
        for c in range(len(row)):
            out[r, c] = row[c] * scale * weight[c]
    return out.reshape(x.shape)
""",
    "rescaled_first_warns_on_zero_rows": """def rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    peak = np.max(np.abs(x), axis=-1, keepdims=True)
    y = x / peak                                  # a zero row: 0/0 -> nan (RuntimeWarning), fixed below
    ms = np.mean(y * y, axis=-1, keepdims=True)
    out = y / np.sqrt(ms + eps / peak ** 2) * np.asarray(weight, dtype=float)
    return np.where(peak == 0, 0.0, out)
""",
}
