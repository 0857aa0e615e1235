"""Looking inside a model (notebook 14, in progress): the references of its first
exercises, NumPy only, one short function per equation, no validation.

    logit lens        each layer's residual stream read out through the final RMSNorm and
                      the unembedding: softmax(RMSNorm(h_l) W_U^T)
    induction score   on a random sequence repeated twice (period T), a head's mean
                      attention from position i >= T to position i - T + 1
    ablation          the loss when chosen heads' outputs are zeroed
    answer rank       where the right next token stands in each layer's distribution
    direct logit      a head's output (after W_O) dotted with the unembedding of the
    attribution       right next token: how much it pushes that token's logit up
"""

from __future__ import annotations

import numpy as np

from helpers import reference

__all__ = ["logit_lens", "induction_scores", "ablate_heads", "answer_ranks",
           "direct_logit_attribution"]


#: The final RMSNorm's epsilon in the logit lens (the course's char model's and SmolLM2's).
LENS_EPS = 1e-5


def logit_lens(hidden_states, final_norm_weight, W_U) -> np.ndarray:
    """[L + 1, N, V]: each layer's next-token distribution, softmax(RMSNorm(h) W_U^T).

    hidden_states: [L + 1, N, d] (the embeddings, then each block's output);
    final_norm_weight: [d]; W_U: [V, d]."""
    h = np.asarray(hidden_states, dtype=np.float64)              # [L + 1, N, d]
    rms = np.sqrt((h * h).mean(axis=-1, keepdims=True) + LENS_EPS)  # [L + 1, N, 1]
    logits = (h / rms * final_norm_weight) @ np.asarray(W_U).T   # [L + 1, N, V]
    return reference.softmax(logits, axis=-1)                    # [L + 1, N, V]


def induction_scores(patterns, period) -> np.ndarray:
    """[L, H]: each head's mean attention from position i in the second copy (i >= period)
    to position i - period + 1, the token after the earlier copy of token i.

    patterns: [L, H, 2 * period, 2 * period], rows attending over columns."""
    P = np.asarray(patterns, dtype=np.float64)                   # [L, H, 2T, 2T]
    rows = np.arange(period, 2 * period)                         # [T], the second copy
    return P[..., rows, rows - period + 1].mean(axis=-1)         # [L, H]


def _heads(x, p, n_heads) -> np.ndarray:
    """[h, N, d_h]: each head's causal attention output, before merging and W_O."""
    Q, K, V = reference.project_qkv(x, p["W_Q"], p["W_K"], p["W_V"])   # [N, d] each
    heads, _ = reference.scaled_dot_product_attention(
        *(reference.split_heads(a, n_heads) for a in (Q, K, V)),
        reference.causal_mask(len(x)))                           # [h, N, d_h]
    return heads


def ablate_heads(token_ids, params, n_heads, heads) -> float:
    """The mean cross-entropy of the next tokens of token_ids when the heads listed in
    heads ((block, head) pairs) are zeroed, for the course's language model params."""
    ids = np.asarray(token_ids, dtype=np.int64)                  # [N]
    x = reference.embed(ids, params["E"], params["P"])           # [N, d]
    for b, p in enumerate(params["blocks"]):
        t1 = reference.layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
        out = _heads(t1, p, n_heads)                             # [h, N, d_h]
        for c in [c for (bb, c) in heads if bb == b]:
            out[c] = 0.0                                         # [N, d_h], zeroed
        t3 = reference.merge_heads(out) @ p["W_O"] + x           # [N, d]
        t4 = reference.layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])
        x = reference.feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"]) + t3
    if "ln_f_gamma" in params:
        x = reference.layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"])
    logits = reference.lm_head(x, params["E"])                   # [N, V]
    return reference.cross_entropy(logits[:-1], ids[1:])


def answer_ranks(distributions, target_ids) -> np.ndarray:
    """[L, N]: the rank of target_ids[n] in distributions[l, n] (0: the most likely token;
    a tie counts the tokens strictly more likely only).

    distributions: [L, N, V]; target_ids: [N]."""
    D = np.asarray(distributions, dtype=np.float64)                  # [L, N, V]
    t = np.asarray(target_ids, dtype=np.int64)                       # [N]
    p_target = D[:, np.arange(len(t)), t]                            # [L, N]
    return (D > p_target[..., None]).sum(axis=-1)                    # [L, N]


def direct_logit_attribution(head_outputs, W_U, target_ids) -> np.ndarray:
    """[L, H, N]: each head's output at each position (its share of the residual stream,
    after W_O) dotted with the unembedding row of the right next token.

    head_outputs: [L, H, N, d]; W_U: [V, d]; target_ids: [N]."""
    O = np.asarray(head_outputs, dtype=np.float64)                   # [L, H, N, d]
    U = np.asarray(W_U, dtype=np.float64)[np.asarray(target_ids, dtype=np.int64)]  # [N, d]
    return (O * U).sum(axis=-1)                                      # [L, H, N]
