"""Answers to ``softmax_with_temperature(z, temperature)`` (notebook 02)."""

WRONG = {
    "in_place_on_integers": ("""def softmax_with_temperature(z, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    z = np.array(z)
    z -= z.max(axis=-1, keepdims=True)
    z /= temperature
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)
""", "Likely mistake: in-place arithmetic (`z /= temperature`) on an integer array"),
    "multiplies_by_T": ("""def softmax_with_temperature(z, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    return softmax(np.asarray(z, dtype=float) * temperature, axis=-1)
""", "T = 0.25"),
    "no_check_for_zero": ("""def softmax_with_temperature(z, temperature):
    z = np.asarray(z, dtype=float) / temperature        # T = 0 gives inf/nan, no error
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
""", "temperature 0 must raise a ValueError"),
    "allows_zero": ("""def softmax_with_temperature(z, temperature):
    if temperature < 0:
        raise ValueError("temperature must be positive")
    return softmax(np.asarray(z, dtype=float) / temperature)
""", "temperature 0 must raise a ValueError"),
    "only_zero_rejected": ("""def softmax_with_temperature(z, temperature):
    if temperature == 0:
        raise ValueError("temperature must not be 0")
    return softmax(np.asarray(z, dtype=float) / temperature)
""", "temperature -1.0 must raise a ValueError"),
    "no_max_shift": ("""def softmax_with_temperature(z, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    e = np.exp(np.asarray(z, dtype=float) / temperature)
    return e / e.sum(axis=-1, keepdims=True)
""", "rows, large scores, T = 0.5"),
    "whole_array_normalized": ("""def softmax_with_temperature(z, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    z = np.asarray(z, dtype=float) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()
""", "rows, large scores, T = 0.5"),
}

CORRECT = {
    "explicit_stable_exp": """def softmax_with_temperature(z, temperature):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    scaled = np.asarray(z, dtype=np.float64) * (1.0 / temperature)
    scaled = scaled - np.max(scaled, axis=-1, keepdims=True)
    w = np.exp(scaled)
    return w / np.sum(w, axis=-1, keepdims=True)
""",
    "logsumexp": """def softmax_with_temperature(z, temperature):
    if temperature <= 0:
        raise ValueError(f"bad temperature {temperature}")
    s = np.asarray(z, dtype=float) / temperature
    return np.exp(s - np.logaddexp.reduce(s, axis=-1, keepdims=True))
""",
    "divides_before_checking_warns": """def softmax_with_temperature(z, temperature):
    s = np.asarray(z, dtype=float) / np.float64(temperature)   # T = 0: RuntimeWarning
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    return softmax(s, axis=-1)
""",
    "loop_over_rows": """def softmax_with_temperature(z, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    z = np.asarray(z, dtype=float)
    flat = z.reshape(-1, z.shape[-1])
    out = np.empty_like(flat)
    for r, row in enumerate(flat):
        m = max(row)
        e = [np.exp((v - m) / temperature) for v in row]
        total = sum(e)
        out[r] = [x / total for x in e]
    return out.reshape(z.shape)
""",
}
