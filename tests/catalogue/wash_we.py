"""Answers to ``wash_we()`` (notebook 04): the slides' "we wash our cats" activity."""

WRONG = {
    "no_scale": ("""def wash_we():
    q1 = examples.WASH_X1 @ examples.WASH_W_Q
    k1 = examples.WASH_X1 @ examples.WASH_W_K
    K = np.vstack([k1, examples.WASH_K_REST])
    scores = K @ q1
    weights = helpers.softmax(scores)
    z1 = weights @ examples.WASH_V
    return q1, k1, scores, weights, z1
""", "the weights (scores / 8, then softmax)"),
    "scale_sqrt_of_shown_d_k": ("""def wash_we():
    q1 = examples.WASH_X1 @ examples.WASH_W_Q
    k1 = examples.WASH_X1 @ examples.WASH_W_K
    K = np.vstack([k1, examples.WASH_K_REST])
    scores = K @ q1
    weights = helpers.softmax(scores / np.sqrt(len(q1)))     # d_k = 3, as the vectors show
    z1 = weights @ examples.WASH_V
    return q1, k1, scores, weights, z1
""", "the weights (scores / 8, then softmax)"),
    "scale_by_d_k_not_sqrt": ("""def wash_we():
    q1 = examples.WASH_X1 @ examples.WASH_W_Q
    k1 = examples.WASH_X1 @ examples.WASH_W_K
    K = np.vstack([k1, examples.WASH_K_REST])
    scores = K @ q1
    weights = helpers.softmax(scores / 64)
    z1 = weights @ examples.WASH_V
    return q1, k1, scores, weights, z1
""", "the weights (scores / 8, then softmax)"),
    "k1_as_query": ("""def wash_we():
    q1 = examples.WASH_X1 @ examples.WASH_W_Q
    k1 = examples.WASH_X1 @ examples.WASH_W_K
    K = np.vstack([k1, examples.WASH_K_REST])
    scores = K @ k1
    weights = helpers.softmax(scores / 8)
    z1 = weights @ examples.WASH_V
    return q1, k1, scores, weights, z1
""", "the scores q1 . k_j (before scaling)"),
    "k1_left_out": ("""def wash_we():
    q1 = examples.WASH_X1 @ examples.WASH_W_Q
    k1 = examples.WASH_X1 @ examples.WASH_W_K
    scores = np.concatenate([[q1 @ q1], examples.WASH_K_REST @ q1])   # used q1 as the first key
    weights = helpers.softmax(scores / 8)
    z1 = weights @ examples.WASH_V
    return q1, k1, scores, weights, z1
""", "the scores q1 . k_j (before scaling)"),
    "returns_scaled_scores": ("""def wash_we():
    q1 = examples.WASH_X1 @ examples.WASH_W_Q
    k1 = examples.WASH_X1 @ examples.WASH_W_K
    K = np.vstack([k1, examples.WASH_K_REST])
    scores = K @ q1 / 8
    weights = helpers.softmax(scores)
    z1 = weights @ examples.WASH_V
    return q1, k1, scores, weights, z1
""", "the scores q1 . k_j (before scaling)"),
}

CORRECT = {
    "loops_and_math_exp": """def wash_we():
    import math
    x1, W_Q, W_K = examples.WASH_X1, examples.WASH_W_Q, examples.WASH_W_K
    q1 = np.array([sum(x1[i] * W_Q[i, j] for i in range(4)) for j in range(3)])
    k1 = np.array([sum(x1[i] * W_K[i, j] for i in range(4)) for j in range(3)])
    keys = [k1] + list(examples.WASH_K_REST)
    scores = np.array([sum(q * k for q, k in zip(q1, key)) for key in keys])
    m = max(scores)
    e = [math.exp((s - m) / math.sqrt(64)) for s in scores]
    weights = np.array([v / sum(e) for v in e])
    z1 = np.array([sum(weights[t] * examples.WASH_V[t, j] for t in range(4)) for j in range(3)])
    return q1, k1, scores, weights, z1
""",
    "einsum_and_own_softmax": """def wash_we():
    q1 = np.einsum("i,ij->j", examples.WASH_X1, examples.WASH_W_Q)
    k1 = np.einsum("i,ij->j", examples.WASH_X1, examples.WASH_W_K)
    K = np.concatenate([k1[None, :], examples.WASH_K_REST], axis=0)
    scores = np.einsum("tj,j->t", K, q1)
    scaled = scores / np.sqrt(64.0)
    e = np.exp(scaled - scaled.max())
    weights = e / e.sum()
    z1 = np.einsum("t,tj->j", weights, examples.WASH_V)
    return (q1, k1, scores, weights, z1)
""",
    "matrix_of_one_row": """def wash_we():
    x = examples.WASH_X1[None, :]                      # [1, 4]
    q = x @ examples.WASH_W_Q                          # [1, 3]
    k = x @ examples.WASH_W_K
    K = np.r_[k, examples.WASH_K_REST]                 # [4, 3]
    S = q @ K.T                                        # [1, 4]
    W = helpers.softmax(S / examples.WASH_SCALE, axis=-1)
    Z = W @ examples.WASH_V                            # [1, 3]
    return q[0], k[0], S[0], W[0], Z[0]
""",
}
