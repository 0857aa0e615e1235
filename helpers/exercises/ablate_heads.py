"""``ablate_heads`` (notebook 14_interpretability): the language model's loss on a text when
chosen attention heads' outputs are zeroed, the first measure of what a head is for."""

from __future__ import annotations

import numpy as np

from helpers import interpretability, reference
from helpers.course import Arg, Contract, Exercise, case, draw
from helpers.exercises.language_model_forward import PARAMS

CONTRACT = Contract(
    args={"token_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True),
          "params": Arg(dict, fields=PARAMS), "n_heads": Arg(int, low=1),
          "heads": Arg(list, items=(int, int))},
    returns=Arg(float), draw=False, where=("N >= 2",),
    invariants=("heads = []: the model's own loss, cross_entropy of language_model_forward",
                "a (block, head) pair zeroes that head's [N, d_h] output in that block only, "
                "before the heads are merged and W_O applied"))

EXERCISE = Exercise(
    "ablate_heads", interpretability.ablate_heads, contract=CONTRACT,
    uses=("embed", "layer_norm", "project_qkv", "split_heads", "causal_mask",
          "scaled_dot_product_attention", "merge_heads", "feed_forward", "lm_head",
          "cross_entropy"),
    difficulty=3, importance=3, minutes=25,
    hints=(
        r"""Run the model's forward pass block by block, as in notebook 08, but stop inside
the attention: after `scaled_dot_product_attention` you hold every head's output, `[h, N,
d_h]`. Set the rows of the ablated heads **of this block** to 0, then merge the heads, apply
$W_O$ and add the residual as usual. The loss is the mean cross-entropy of the next tokens:
the logits of positions $0..N-2$ against the ids $1..N-1$.""",
        r"""Inside the loop over `enumerate(params["blocks"])`:

```python
out, _ = scaled_dot_product_attention(*(split_heads(a, n_heads) for a in (Q, K, V)),
                                      causal_mask(len(x)))        # [h, N, d_h]
for (block, head) in heads:
    if block == b:
        ___ = 0.0
x_attn = merge_heads(out) @ p["W_O"] + x
```
Do not forget the final layer norm when the model has one (`"ln_f_gamma" in params`).""",
    ),
)


def _models():
    return {"a": draw.seeded_lm(1431, V=6, d=4, n_ctx=8, n_blocks=2, ln_f=True, e_scale=2.0),
            "b": draw.seeded_lm(1432, V=5, d=6, n_ctx=8, n_blocks=2, ln_f=False, e_scale=1.5)}


@EXERCISE.cases
def cases():
    m = _models()
    return [
        case("none", "no head ablated: the model's own loss", ([0, 3, 1, 5, 2], m["a"], 2, []),
             expected=reference.cross_entropy(
                 reference.language_model_forward(np.array([0, 3, 1, 5, 2]), m["a"], 2)[:-1],
                 np.array([3, 1, 5, 2]))),
        case("one_head", "head 1 of block 0 ablated", ([0, 3, 1, 5, 2], m["a"], 2, [(0, 1)])),
        case("two_blocks", "head 2 of block 1 and head 1 of block 0, 3 heads a block",
             ([1, 1, 4, 0, 2, 3], m["b"], 3, [(1, 2), (0, 1)])),
        case("one_head_hidden", "head 0 of block 1 ablated", ([2, 0, 4, 4, 1], m["a"], 2,
                                                               [(1, 0)]), hidden=True),
        case("all_heads_hidden", "every head of block 0 ablated, 3 heads",
             ([4, 3, 2, 1, 0, 1], m["b"], 3, [(0, 0), (0, 1), (0, 2)]), hidden=True),
    ]


def _ablated(token_ids, params, n_heads, heads, keep):
    """The reference's forward with the heads for which keep(block, head, b) is False
    zeroed; the mean cross-entropy of the next tokens."""
    ids = np.asarray(token_ids, dtype=np.int64)
    x = reference.embed(ids, params["E"], params["P"])
    for b, p in enumerate(params["blocks"]):
        t1 = reference.layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
        Q, K, V = reference.project_qkv(t1, p["W_Q"], p["W_K"], p["W_V"])
        out, _ = reference.scaled_dot_product_attention(
            *(reference.split_heads(a, n_heads) for a in (Q, K, V)), reference.causal_mask(len(x)))
        for (bb, c) in heads:
            if not keep(bb, c, b):
                out[c] = 0.0
        t3 = reference.merge_heads(out) @ p["W_O"] + x
        t4 = reference.layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])
        x = reference.feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"]) + t3
    if "ln_f_gamma" in params:
        x = reference.layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"])
    return reference.cross_entropy(reference.lm_head(x, params["E"])[:-1], ids[1:])


@EXERCISE.mistake("every_block", "the head was zeroed in every block: a (block, head) pair "
                  "ablates that head of that block only")
def _every_block(token_ids, params, n_heads, heads):
    return _ablated(token_ids, params, n_heads, heads, lambda bb, c, b: False)


@EXERCISE.mistake("pair_swapped", "the pair was read as (head, block): heads lists (block, "
                  "head) pairs")
def _swapped(token_ids, params, n_heads, heads):
    return _ablated(token_ids, params, n_heads, [(c, bb) for (bb, c) in heads],
                    lambda bb, c, b: bb != b)


@EXERCISE.mistake("ignored", "the loss did not change with the ablated heads: zero their "
                  "outputs before merging the heads and applying W_O")
def _ignored(token_ids, params, n_heads, heads):
    return _ablated(token_ids, params, n_heads, [], lambda bb, c, b: True)
