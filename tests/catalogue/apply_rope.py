"""Answers to ``apply_rope(x, positions, theta=10000.0)`` (notebook 10)."""

WRONG = {
    "adjacent_pairs": ("""def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    angles = np.asarray(positions, dtype=float)[:, None] * theta ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x2 * cos + x1 * sin
    return out
""", "neighbouring features (2m, 2m+1) were paired"),
    "rotates_backwards": ("""def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    half = x.shape[-1] // 2
    angles = np.outer(positions, theta ** (-2 * np.arange(half) / x.shape[-1]))
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * np.cos(angles) + x2 * np.sin(angles),
                           x2 * np.cos(angles) - x1 * np.sin(angles)], axis=-1)
""", "the rotation goes the wrong way"),
    "exponent_without_2": ("""def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    half = x.shape[-1] // 2
    angles = np.outer(positions, theta ** (-np.arange(half) / x.shape[-1]))
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * np.cos(angles) - x2 * np.sin(angles),
                           x2 * np.cos(angles) + x1 * np.sin(angles)], axis=-1)
""", "the frequencies use theta^(-m/d_h)"),
    "positions_not_a_column": ("""def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    half = x.shape[-1] // 2
    angles = np.asarray(positions) * theta ** (-2 * np.arange(half) / x.shape[-1])
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * np.cos(angles) - x2 * np.sin(angles),
                           x2 * np.cos(angles) + x1 * np.sin(angles)], axis=-1)
""", "raised ValueError"),
    "positions_ignored": ("""def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    half = x.shape[-1] // 2
    pos = np.arange(x.shape[-2])
    angles = pos[:, None] * theta ** (-2 * np.arange(half) / x.shape[-1])
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * np.cos(angles) - x2 * np.sin(angles),
                           x2 * np.cos(angles) + x1 * np.sin(angles)], axis=-1)
""", "the positions argument was ignored"),
}

CORRECT = {
    "rotate_half_trick": """def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    inv_freq = 1.0 / theta ** (np.arange(0, d, 2) / d)
    angles = np.asarray(positions, dtype=float)[:, None] * inv_freq
    angles = np.concatenate([angles, angles], axis=-1)             # [N, d]
    rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * np.cos(angles) + rotated * np.sin(angles)
""",
    "complex_numbers": """def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    half = x.shape[-1] // 2
    freqs = np.exp(-2 * np.arange(half) / x.shape[-1] * np.log(theta))
    turn = np.exp(1j * np.multiply.outer(np.asarray(positions, dtype=float), freqs))
    z = (x[..., :half] + 1j * x[..., half:]) * turn
    return np.concatenate([z.real, z.imag], axis=-1)
""",
    "loops_over_pairs": """import math

def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    out = x.copy()
    for n, p in enumerate(positions):
        for m in range(d // 2):
            a = p * theta ** (-2 * m / d)
            c, s = math.cos(a), math.sin(a)
            first, second = x[..., n, m], x[..., n, m + d // 2]
            out[..., n, m] = first * c - second * s
            out[..., n, m + d // 2] = second * c + first * s
    return out
""",
    "rotation_matrices_einsum": """def apply_rope(x, positions, theta=10000.0):
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    half = d // 2
    angles = np.asarray(positions, dtype=float)[:, None] / theta ** (np.arange(half) * 2 / d)
    cos, sin = np.cos(angles), np.sin(angles)
    R = np.array([[cos, -sin], [sin, cos]])                          # [2, 2, N, half]
    pairs = np.stack([x[..., :half], x[..., half:]])                 # [2, ..., N, half]
    out = np.einsum("ijnm,j...nm->i...nm", R, pairs)
    return np.concatenate([out[0], out[1]], axis=-1)
""",
}
