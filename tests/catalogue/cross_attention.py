"""Answers to ``cross_attention(X_dec, H_enc, W_Q, W_K, W_V)`` (notebook 05)."""

WRONG = {
    "roles_swapped": ("""def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
    Q = np.asarray(H_enc, dtype=float) @ np.asarray(W_Q, dtype=float)
    K = np.asarray(X_dec, dtype=float) @ np.asarray(W_K, dtype=float)
    V = np.asarray(X_dec, dtype=float) @ np.asarray(W_V, dtype=float)
    return scaled_dot_product_attention(Q, K, V)[0]
""", "queries came from the encoder"),
    "no_scale": ("""def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
    Q = np.asarray(X_dec, dtype=float) @ np.asarray(W_Q, dtype=float)
    K = np.asarray(H_enc, dtype=float) @ np.asarray(W_K, dtype=float)
    V = np.asarray(H_enc, dtype=float) @ np.asarray(W_V, dtype=float)
    return softmax(Q @ K.T) @ V
""", "not divided by sqrt(d_k)"),
    "scale_sqrt_d_model": ("""def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
    X_dec, H_enc = np.asarray(X_dec, dtype=float), np.asarray(H_enc, dtype=float)
    Q, K, V = X_dec @ np.asarray(W_Q), H_enc @ np.asarray(W_K), H_enc @ np.asarray(W_V)
    return softmax(Q @ K.T / np.sqrt(X_dec.shape[1])) @ V
""", "sqrt(d)"),
    "causal": ("""def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
    Q = np.asarray(X_dec, dtype=float) @ np.asarray(W_Q, dtype=float)
    K = np.asarray(H_enc, dtype=float) @ np.asarray(W_K, dtype=float)
    V = np.asarray(H_enc, dtype=float) @ np.asarray(W_V, dtype=float)
    mask = np.tril(np.ones((len(Q), len(K)), dtype=bool))
    return scaled_dot_product_attention(Q, K, V, mask)[0]
""", "causal mask"),
}

CORRECT = {
    "by_hand": """def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
    Q = np.asarray(X_dec, dtype=float) @ np.asarray(W_Q, dtype=float)
    K = np.asarray(H_enc, dtype=float) @ np.asarray(W_K, dtype=float)
    V = np.asarray(H_enc, dtype=float) @ np.asarray(W_V, dtype=float)
    S = Q @ K.T / np.sqrt(K.shape[-1])
    A = np.exp(S - S.max(axis=1, keepdims=True))
    return (A / A.sum(axis=1, keepdims=True)) @ V
""",
    "einsum_per_query": """def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
    Q = np.einsum("nd,dk->nk", np.asarray(X_dec, float), np.asarray(W_Q, float))
    K = np.einsum("md,dk->mk", np.asarray(H_enc, float), np.asarray(W_K, float))
    V = np.einsum("md,dv->mv", np.asarray(H_enc, float), np.asarray(W_V, float))
    rows = []
    for q in Q:
        w = softmax(K @ q / np.sqrt(len(q)))
        rows.append(w @ V)
    return np.array(rows)
""",
}
