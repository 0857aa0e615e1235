"""``language_model_forward`` (notebook 08_language_model): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _lm


def _drawn_lm(rng, dims):
    """A small language model's params drawn for a contract case: 1 or 2 blocks, with or
    without the final layer norm."""
    return draw.lm(rng, dims["V"], dims["d"], dims["n_ctx"], blocks=int(rng.integers(1, 3)),
                    ln_f=bool(rng.random() < 0.5))


#: One block's parameters and the model's, by name (their dimensions bind with token_ids').
BLOCK = {k: Arg("[" + ", ".join(v) + "]") for k, v in reference.BLOCK_PARAM_SHAPES.items()}
PARAMS = {"E": Arg("[V, d]"), "P": Arg("[n_ctx, d]"),
          "blocks": Arg(list, items=Arg(dict, fields=BLOCK)),
          "ln_f_gamma": Arg("[d]", optional=True), "ln_f_beta": Arg("[d]", optional=True)}

CONTRACT = Contract(
    args={"token_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True,
                           values=lambda rng, shape, dims: rng.integers(0, dims["V"], shape)),
          "params": Arg(dict, fields=PARAMS,
                        values=lambda rng, shape, dims: _drawn_lm(rng, dims)),
          "n_heads": Arg("n_heads")},
    returns=Arg("[N, V]"), where=("d % n_heads == 0", "N <= n_ctx", "N >= 1"),
    sizes={"d": (2, 4, 6), "n_heads": (1, 2), "V": (3, 5, 7), "n_ctx": (4, 6, 8)},
    invariants=("params: E [V, d], P [n_ctx, d], blocks, optionally ln_f_gamma, ln_f_beta",
                "0 <= token_ids < V"))

EXERCISE = Exercise(
    'language_model_forward', reference.language_model_forward, contract=CONTRACT, uses=('embed', 'transformer_block', 'layer_norm', 'lm_head'),
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Four stages, bottom to top as in the diagram: embed the ids ($E[\boldsymbol{w}] +
P[:N]$); run the blocks in order, each causal, each reading the previous one's output;
apply the final layer norm only when `params` has one; score the vocabulary with the
tied matrix $E$. Every block has the same `n_heads`.""",
        r"""Your `embed`, `transformer_block`, `layer_norm` and `lm_head` do the work;
`params["blocks"]` is a list of block dicts.

```python
h = embed(token_ids, ___, ___)          # [N, d]
for block in params["blocks"]:
    h = ___                              # [N, d]
if "ln_f_gamma" in params:
    h = ___                              # final layer norm
return ___                               # [N, V]
```""",
    ),
)


@EXERCISE.cases
def cases():
    p1 = draw.seeded_lm(251, V=7, d=4, n_ctx=8, n_blocks=1, ln_f=False)
    p2 = draw.seeded_lm(252, V=7, d=4, n_ctx=8, n_blocks=2, ln_f=True)
    p3 = draw.seeded_lm(253, V=6, d=6, n_ctx=6, n_blocks=3, ln_f=True)
    p4 = draw.seeded_lm(254, V=5, d=8, n_ctx=5, n_blocks=2, ln_f=False)
    return [
        case("one_block", "V = 7, d = 4, n_ctx = 8, 1 block, n_heads = 2, no final layer norm",
             (np.array([1, 4, 2, 6, 0]), p1, 2)),
        case("two_blocks_ln_f", "ids as a list, 2 blocks, n_heads = 2, with a final layer norm",
             ([3, 3, 5], p2, 2), group="blocks"),
        case("three_blocks", "V = 6, d = 6, 3 blocks, n_heads = 3, final layer norm, N = n_ctx",
             (np.array([5, 0, 1, 1, 4, 2]), p3, 3), group="blocks", hidden=True),
        case("h1", "2 blocks, n_heads = 1", (np.array([0, 2, 1, 6]), p2, 1), group="blocks",
             hidden=True),
        case("h4_one_token", "d = 8, n_heads = 4, a single token", (np.array([3]), p4, 4),
             group="shapes", hidden=True),
        case("h4", "d = 8, n_heads = 4, 2 blocks, no final layer norm",
             (np.array([1, 1, 4, 0]), p4, 4), group="blocks", hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_positions", "the position embeddings are missing: X = E[ids] + P[:N]")
def _lmf_no_pos(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, positions=False)


@EXERCISE.mistake("positions_by_token_id",
                  "position embeddings were indexed by token id (P[ids]); use P[:N]")
def _lmf_pos_ids(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, pos_by_id=True)


@EXERCISE.mistake("no_final_layer_norm",
                  "the final layer norm (ln_f_gamma, ln_f_beta) was skipped although params has it")
def _lmf_no_lnf(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, ln_f=False)


@EXERCISE.mistake("not_causal",
                  "the blocks were not causal: a language model must not look at later tokens")
def _lmf_not_causal(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, causal=False)


@EXERCISE.mistake("blocks_not_chained",
                  "every block read the embeddings X; each block must read the previous block's output")
def _lmf_not_chained(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, chain=False)


@EXERCISE.mistake("first_block_only",
                  "only the first block was applied; apply all of params['blocks'] in order")
def _lmf_first(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, blocks=lambda b: b[:1])


@EXERCISE.mistake("blocks_reversed", "the blocks were applied in reverse order")
def _lmf_reversed(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, blocks=lambda b: b[::-1])


@EXERCISE.mistake("probabilities",
                  "returned probabilities (softmax applied); language_model_forward returns logits")
def _lmf_probs(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads, probs=True)


@EXERCISE.mistake("last_position_only",
                  "returned the logits of the last position only; return all N rows (one per position)")
def _lmf_last(token_ids, params, n_heads):
    return _lm(token_ids, params, n_heads)[-1]


# What the contract cannot say: checked when a learner calls
# helpers.language_model_forward

@EXERCISE.edge
def _final_norm_whole(token_ids, params, n_heads):
    given = [k for k in ("ln_f_gamma", "ln_f_beta") if k in params]
    if len(given) == 1:
        missing = "ln_f_beta" if given == ["ln_f_gamma"] else "ln_f_gamma"
        raise ValueError(f"params is missing {missing}")
