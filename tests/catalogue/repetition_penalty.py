"""Answers to ``repetition_penalty(logits, previous_ids, penalty)`` (notebook 13)."""

WRONG = {
    "negative_divided": ("""def repetition_penalty(logits, previous_ids, penalty):
    out = np.array(logits, dtype=float)
    seen = np.unique(previous_ids)
    out[seen] = out[seen] / penalty
    return out
""", "multiply negative logits"),
    "penalised_per_occurrence": ("""def repetition_penalty(logits, previous_ids, penalty):
    out = np.array(logits, dtype=float)
    for t in previous_ids:
        out[t] = out[t] / penalty if out[t] > 0 else out[t] * penalty
    return out
""", "once per occurrence"),
    "every_token_penalised": ("""def repetition_penalty(logits, previous_ids, penalty):
    u = np.array(logits, dtype=float)
    return np.where(u > 0, u / penalty, u * penalty)
""", "every token was penalised"),
    # np.asarray of an array is the caller's array itself: changed in place
    "in_place": ("""def repetition_penalty(logits, previous_ids, penalty):
    out = np.asarray(logits, dtype=float)
    seen = np.unique(previous_ids)
    out[seen] = np.where(out[seen] > 0, out[seen] / penalty, out[seen] * penalty)
    return out
""", "in place"),
}

CORRECT = {
    "where_unique": """def repetition_penalty(logits, previous_ids, penalty):
    out = np.array(logits, dtype=float)
    seen = np.unique(np.asarray(previous_ids, dtype=int))
    u = out[seen]
    out[seen] = np.where(u > 0, u / penalty, u * penalty)
    return out
""",
    "set_loop": """def repetition_penalty(logits, previous_ids, penalty):
    out = [float(u) for u in logits]
    for t in set(int(i) for i in previous_ids):
        out[t] = out[t] / penalty if out[t] > 0 else out[t] * penalty
    return np.array(out)
""",
    "boolean_mask": """def repetition_penalty(logits, previous_ids, penalty):
    u = np.asarray(logits, dtype=float)
    seen = np.zeros(len(u), dtype=bool)
    seen[np.asarray(previous_ids, dtype=int)] = True
    factor = np.where(u > 0, 1.0 / penalty, penalty)
    return np.where(seen, u * factor, u)
""",
}
