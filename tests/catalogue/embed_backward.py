"""Answers to ``embed_backward(token_ids, d_X, vocab_size, n_ctx)`` (notebook 12)."""

WRONG = {
    "fancy_index_add": ("""def embed_backward(token_ids, d_X, vocab_size, n_ctx):
    ids = np.asarray(token_ids)
    dX = np.asarray(d_X, dtype=float)
    d, N = dX.shape[-1], ids.shape[-1]
    dE = np.zeros((vocab_size, d))
    dE[ids.reshape(-1)] += dX.reshape(-1, d)
    dP = np.zeros((n_ctx, d))
    dP[:N] = dX.reshape(-1, N, d).sum(axis=0)
    return dE, dP
""", "np.add.at"),
    "dP_first_sequence": ("""def embed_backward(token_ids, d_X, vocab_size, n_ctx):
    ids = np.asarray(token_ids)
    dX = np.asarray(d_X, dtype=float)
    d, N = dX.shape[-1], ids.shape[-1]
    dE = np.zeros((vocab_size, d))
    np.add.at(dE, ids.reshape(-1), dX.reshape(-1, d))
    dP = np.zeros((n_ctx, d))
    dP[:N] = dX.reshape(-1, N, d)[0]
    return dE, dP
""", "only the first sequence"),
    "dP_not_padded": ("""def embed_backward(token_ids, d_X, vocab_size, n_ctx):
    ids = np.asarray(token_ids)
    dX = np.asarray(d_X, dtype=float)
    d, N = dX.shape[-1], ids.shape[-1]
    dE = np.zeros((vocab_size, d))
    np.add.at(dE, ids.reshape(-1), dX.reshape(-1, d))
    return dE, dX.reshape(-1, N, d).sum(axis=0)
""", "n_ctx rows"),
}

CORRECT = {
    "loop": """def embed_backward(token_ids, d_X, vocab_size, n_ctx):
    ids = np.asarray(token_ids).reshape(-1, np.shape(token_ids)[-1])
    dX = np.asarray(d_X, dtype=float).reshape(ids.shape + (np.shape(d_X)[-1],))
    dE = np.zeros((vocab_size, dX.shape[-1]))
    dP = np.zeros((n_ctx, dX.shape[-1]))
    for b in range(ids.shape[0]):
        for i, v in enumerate(ids[b]):
            dE[v] += dX[b, i]
            dP[i] += dX[b, i]
    return dE, dP
""",
    "onehot_matmul": """def embed_backward(token_ids, d_X, vocab_size, n_ctx):
    ids = np.asarray(token_ids).reshape(-1)
    dX = np.asarray(d_X, dtype=float)
    d, N = dX.shape[-1], np.shape(token_ids)[-1]
    onehot = np.eye(vocab_size)[ids]                  # [rows, V]
    dP = np.zeros((n_ctx, d))
    dP[:N] = dX.reshape(-1, N, d).sum(axis=0)
    return onehot.T @ dX.reshape(-1, d), dP
""",
}
