"""Answers to ``logit_lens(hidden_states, final_norm_weight, W_U)`` (notebook 14)."""

WRONG = {
    "no_norm": ("""def logit_lens(hidden_states, final_norm_weight, W_U):
    h = np.asarray(hidden_states, dtype=float)
    z = h * final_norm_weight @ np.asarray(W_U).T
    z = z - z.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
""", "without the final RMSNorm"),
    "layer_norm": ("""def logit_lens(hidden_states, final_norm_weight, W_U):
    h = np.asarray(hidden_states, dtype=float)
    c = h - h.mean(axis=-1, keepdims=True)
    z = c / np.sqrt((c ** 2).mean(axis=-1, keepdims=True) + 1e-5) * final_norm_weight @ np.asarray(W_U).T
    z = z - z.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
""", "subtracts no mean"),
    "logits_not_probabilities": ("""def logit_lens(hidden_states, final_norm_weight, W_U):
    h = np.asarray(hidden_states, dtype=float)
    return h / np.sqrt((h ** 2).mean(axis=-1, keepdims=True) + 1e-5) * final_norm_weight @ np.asarray(W_U).T
""", "softmax over the vocabulary"),
}

CORRECT = {
    "broadcast": """def logit_lens(hidden_states, final_norm_weight, W_U):
    h = np.asarray(hidden_states, dtype=float)
    rms = np.sqrt((h * h).mean(axis=-1, keepdims=True) + 1e-5)
    logits = (h / rms * final_norm_weight) @ np.asarray(W_U).T
    z = logits - logits.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
""",
    "per_layer_einsum": """def logit_lens(hidden_states, final_norm_weight, W_U):
    out = []
    for h in np.asarray(hidden_states, dtype=float):
        n = h / np.sqrt(np.mean(h ** 2, axis=1, keepdims=True) + 1e-5)
        logits = np.einsum("nd,vd->nv", n * np.asarray(final_norm_weight), np.asarray(W_U))
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        out.append(e / e.sum(axis=1, keepdims=True))
    return np.stack(out)
""",
}
