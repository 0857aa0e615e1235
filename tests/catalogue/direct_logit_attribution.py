"""Answers to ``direct_logit_attribution(head_outputs, W_U, target_ids)`` (notebook 14)."""

WRONG = {
    "every_token": ("""def direct_logit_attribution(head_outputs, W_U, target_ids):
    return np.asarray(head_outputs, dtype=float) @ np.asarray(W_U, dtype=float).T
""", "only the right next token"),
    "first_target": ("""def direct_logit_attribution(head_outputs, W_U, target_ids):
    return np.asarray(head_outputs, dtype=float) @ np.asarray(W_U, dtype=float)[target_ids[0]]
""", "its own target"),
    "heads_summed": ("""def direct_logit_attribution(head_outputs, W_U, target_ids):
    O = np.asarray(head_outputs, dtype=float).sum(axis=1)
    return (O * np.asarray(W_U, dtype=float)[np.asarray(target_ids)]).sum(axis=-1)
""", "per head"),
}

CORRECT = {
    "einsum": """def direct_logit_attribution(head_outputs, W_U, target_ids):
    U = np.asarray(W_U, dtype=float)[np.asarray(target_ids, dtype=int)]
    return np.einsum("lhnd,nd->lhn", np.asarray(head_outputs, dtype=float), U)
""",
    "all_logits_then_pick": """def direct_logit_attribution(head_outputs, W_U, target_ids):
    logits = np.asarray(head_outputs, dtype=float) @ np.asarray(W_U, dtype=float).T
    t = np.asarray(target_ids, dtype=int)
    return logits[..., np.arange(len(t)), t]
""",
}
