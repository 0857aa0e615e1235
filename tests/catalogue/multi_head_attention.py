"""Answers to ``multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True)`` (06)."""

_TEMPLATE = """def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=float)
    N, d_model = X.shape
    d_h = d_model // n_heads
    Q, K, V = X @ np.asarray(W_Q), X @ np.asarray(W_K), X @ np.asarray(W_V)
    heads = []
    for c in range(n_heads):
        cols = slice(c * d_h, (c + 1) * d_h)
        S = Q[:, cols] @ K[:, cols].T / {scale}
        if {masked}:
            S = np.where(np.tril(np.ones((N, N), dtype=bool)), S, -np.inf)
        A = np.exp(S - S.max(axis=-1, keepdims=True))
        A = A / A.sum(axis=-1, keepdims=True)
        heads.append(A @ V[:, cols])
    return {output}
"""


def _mha(scale="np.sqrt(d_h)", masked="causal", output="np.concatenate(heads, axis=1) @ np.asarray(W_O)"):
    return _TEMPLATE.format(scale=scale, masked=masked, output=output)


WRONG = {
    "split_reshape_without_transpose": ("""def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=float)
    N, d_model = X.shape
    d_h = d_model // n_heads
    Q, K, V = project_qkv(X, W_Q, W_K, W_V)
    Qh = Q.reshape(n_heads, N, d_h)
    Kh = K.reshape(n_heads, N, d_h)
    Vh = V.reshape(n_heads, N, d_h)
    mask = causal_mask(N) if causal else None
    heads, _ = scaled_dot_product_attention(Qh, Kh, Vh, mask)
    return merge_heads(heads) @ np.asarray(W_O)
""", "reshaping [N, d_model] straight to [n_heads, N, d_h]"),
    "missing_W_O": (_mha(output="np.concatenate(heads, axis=1)"), "W_O is missing"),
    "scale_sqrt_d_model": (_mha(scale="np.sqrt(d_model)"), "divided by sqrt(d_model)"),
    "no_scale": (_mha(scale="1.0"), "not divided by sqrt(d_h)"),
    "not_causal": (_mha(masked="False"), "no causal mask"),
    "always_causal": (_mha(masked="True"), "although causal=False"),
    # its own softmax fails softmax's check (lists, axis) but is right on these scores:
    # the mistake named is multi_head_attention's own (issue 22)
    "own_softmax_always_causal": ("""def softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=float)
    N, d = X.shape[-2], X.shape[-1]
    d_h = d // n_heads
    heads = []
    for c in range(n_heads):
        cols = slice(c * d_h, (c + 1) * d_h)
        Q, K, V = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_h)
        s = np.where(np.triu(np.ones((N, N), bool), 1), -np.inf, s)
        heads.append(softmax(s) @ V)
    return np.concatenate(heads, axis=-1) @ W_O
""", "causal=False"),
}

CORRECT = {
    "head_loop": _mha(),
    "solution_helpers": """def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=float)
    Q, K, V = project_qkv(X, W_Q, W_K, W_V)
    mask = causal_mask(len(X)) if causal else None
    outs = [scaled_dot_product_attention(q, k, v, mask)[0]
            for q, k, v in zip(split_heads(Q, n_heads), split_heads(K, n_heads),
                               split_heads(V, n_heads))]
    return merge_heads(np.stack(outs)) @ W_O
""",
    "einsum_large_negative": """def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=float)
    N, d = X.shape
    h = n_heads
    q = (X @ W_Q).reshape(N, h, d // h)
    k = (X @ W_K).reshape(N, h, d // h)
    v = (X @ W_V).reshape(N, h, d // h)
    s = np.einsum("nhe,mhe->hnm", q, k) / np.sqrt(d / h)
    if causal:
        s = s + np.triu(np.full((N, N), -1e9), k=1)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = np.einsum("hnm,mhe->nhe", a, v).reshape(N, d)
    return o @ W_O
""",
}
