"""Answers to ``embed(token_ids, E, P)`` (notebook 08)."""

WRONG = {
    "positions_by_token_id": ("""def embed(token_ids, E, P):
    ids = np.asarray(token_ids, dtype=int)
    return np.asarray(E, dtype=float)[ids] + np.asarray(P, dtype=float)[ids]
""", "indexed by token id"),
    "no_positions": ("""def embed(token_ids, E, P):
    return np.asarray(E, dtype=float)[np.asarray(token_ids, dtype=int)]
""", "position embeddings are missing"),
    "positions_off_by_one": ("""def embed(token_ids, E, P):
    ids = np.asarray(token_ids, dtype=int)
    return np.asarray(E, dtype=float)[ids] + np.asarray(P, dtype=float)[1:len(ids) + 1]
""", "positions start at 1"),
}

CORRECT = {
    "picogpt_indexing": """def embed(token_ids, E, P):
    return E[token_ids] + P[range(len(token_ids))]
""",
    "loop": """def embed(token_ids, E, P):
    rows = [np.asarray(E[t], dtype=float) + np.asarray(P[i], dtype=float)
            for i, t in enumerate(token_ids)]
    return np.array(rows)
""",
    "one_hot": """def embed(token_ids, E, P):
    E = np.asarray(E, dtype=float)
    ids = np.asarray(token_ids).astype(int)
    one_hot = np.eye(E.shape[0])[ids]
    return one_hot @ E + np.asarray(P, dtype=float)[np.arange(len(ids))]
""",
    "take": """def embed(token_ids, E, P):
    n = len(token_ids)
    return np.take(E, token_ids, axis=0) + np.asarray(P)[:n]
""",
}
