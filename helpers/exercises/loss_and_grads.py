"""``loss_and_grads`` (notebook 12_training): the whole language model's gradient."""

from __future__ import annotations

import numpy as np

from helpers import reference, training
from helpers.course import Arg, Contract, Exercise, draw, case, ids_below
from helpers.course.judge import nested_problem

PARTS = ("loss", "grads")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


#: One block's parameters, by name (their dimensions bind with E's).
BLOCK = {k: Arg("[" + ", ".join(v) + "]") for k, v in reference.BLOCK_PARAM_SHAPES.items()}
#: The model's parameters, as language_model_forward takes them.
PARAMS = {"E": Arg("[V, d]"), "P": Arg("[n_ctx, d]"),
          "blocks": Arg(list, items=Arg(dict, fields=BLOCK)),
          "ln_f_gamma": Arg("[d]", optional=True), "ln_f_beta": Arg("[d]", optional=True)}


def _drawn_params(rng, dims):
    """A model of 1 or 2 blocks, with or without the final layer norm."""
    return _params(int(rng.integers(10_000)), dims["V"], dims["d"], int(rng.integers(1, 3)),
                   dims["d_ff"], dims["n_ctx"], final=bool(rng.integers(2)))


CONTRACT = Contract(
    args={"params": Arg(dict, fields=PARAMS,
                        values=lambda rng, shape, dims: _drawn_params(rng, dims)),
          "token_ids": Arg("[..., N]", dtype="int", low=0, high="V - 1",
                           values=ids_below("V")),
          "targets": Arg("[..., N]", dtype="int", low=0, high="V - 1",
                         values=ids_below("V")),
          "n_heads": Arg("n_heads")},
    returns=(Arg(float), Arg(dict, fields=PARAMS)), batch=(0, 1),
    where=("d % n_heads == 0", "N <= n_ctx"),
    sizes={"d": (2, 4, 6), "n_heads": (1, 2), "V": (3, 5, 7), "n_ctx": (4, 6, 8),
           "d_ff": (2, 4, 8)},
    invariants=("0 <= token_ids, targets < V", "grads has the layout of params"))

EXERCISE = Exercise(
    "loss_and_grads", training.loss_and_grads, contract=CONTRACT, compare=_compare,
    uses=("cross_entropy_backward", "embed_backward", "layer_norm_backward",
          "transformer_block_backward"),
    refuse=("helpers.training.kernels:model_loss_and_grads",),
    difficulty=3, importance=3, minutes=25,
    hints=(
        r"""Forward, keeping each block's input: $X = E[\mathrm{ids}] + P$, the blocks, the
final layer norm (when `params` has `ln_f_gamma`), logits $= h_f E^T$, the mean
cross-entropy. Backward in reverse: `cross_entropy_backward`; the head gives
$dh_f = d\mathrm{logits}\,E$ **and** a gradient for $E$ ($d\mathrm{logits}^T h_f$);
the final layer norm; the blocks from last to first; `embed_backward`. $E$ is used
twice (tied weights): its gradient is the sum of both.""",
        r"""```python
E, P = np.asarray(params["E"], dtype=float), np.asarray(params["P"], dtype=float)
ids, tg = np.asarray(token_ids), np.asarray(targets)
xs = [E[ids] + P[:ids.shape[-1]]]
for block in params["blocks"]:
    xs.append(transformer_block_with_cache(xs[-1], block, n_heads)[0])
...                                             # final layer norm, logits, loss
dlogits = cross_entropy_backward(logits, tg)
dE_head = ___                                   # [V, d]
...
dE_embed, dP = embed_backward(ids, dx, E.shape[0], P.shape[0])
grads = {"E": ___, "P": dP, "blocks": block_grads, ...}
```""",
    ),
)


def _params(seed, V, d, n_layers, d_ff, n_ctx, final=True):
    r = draw.rng(seed)
    p = training.init_params(V, d, n_layers, d_ff, n_ctx, seed=draw.rng(seed),
                             dtype=np.float64)
    p = training.tree_map(lambda a: a + 0.3 * r.normal(size=a.shape), p)
    if not final:
        del p["ln_f_gamma"], p["ln_f_beta"]
    return p


@EXERCISE.cases
def cases():
    return [
        case("one_sequence", "one sequence of 5 with a repeated id, V = 7, d = 4, 1 block, "
             "final layer norm", (_params(1, 7, 4, 1, 8, 6), np.array([3, 1, 3, 3, 0]),
                                  np.array([1, 3, 3, 0, 6]), 2)),
        case("batch", "a batch [2, 4], 2 blocks, no final layer norm",
             (_params(2, 6, 4, 2, 8, 4, final=False), np.array([[0, 5, 5, 2], [1, 1, 4, 0]]),
              np.array([[5, 5, 2, 1], [1, 4, 0, 3]]), 2)),
        case("one_head", "1 head, 1 block, 3 tokens", (_params(3, 5, 4, 1, 4, 3),
             np.array([4, 0, 4]), np.array([0, 4, 2]), 1), hidden=True),
        case("batch_final", "a batch [3, 3], 2 blocks, final layer norm",
             (_params(4, 8, 6, 2, 12, 5), np.array([[7, 1, 7], [2, 2, 2], [0, 3, 6]]),
              np.array([[1, 7, 2], [2, 2, 0], [3, 6, 6]]), 3)),
    ]


def _variant(params, token_ids, targets, n_heads, head=True, embedding=True, final=True,
             loss_sum=False):
    loss, g = training.loss_and_grads(params, token_ids, targets, n_heads)
    p = training.tree_map(lambda a: np.asarray(a, dtype=float), params)
    ids, tg = np.asarray(token_ids), np.asarray(targets)
    x = p["E"][ids] + p["P"][: ids.shape[-1]]
    for block in p["blocks"]:
        x = training.transformer_block_with_cache(x, block, n_heads)[0]
    has_final = "ln_f_gamma" in p
    if has_final:
        mu = x.mean(axis=-1, keepdims=True)
        hf = p["ln_f_gamma"] * (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) \
            + p["ln_f_beta"]
    else:
        hf = x
    logits = hf @ p["E"].T
    dlogits = training.cross_entropy_backward(logits, tg)
    V, d = p["E"].shape
    dE_head = dlogits.reshape(-1, V).T @ hf.reshape(-1, d)
    if not (head and embedding):
        g["E"] = g["E"] - dE_head if not head else dE_head
    if not final and has_final:
        g = _no_final(p, ids, tg, n_heads, dlogits, dE_head, g)
    if loss_sum:
        loss = loss * ids.size
    return loss, g


def _no_final(p, ids, tg, n_heads, dlogits, dE_head, g):
    xs = [p["E"][ids] + p["P"][: ids.shape[-1]]]
    for block in p["blocks"]:
        xs.append(training.transformer_block_with_cache(xs[-1], block, n_heads)[0])
    dx = dlogits @ p["E"]                          # the final layer norm skipped
    blocks = []
    for x, block in reversed(list(zip(xs[:-1], p["blocks"]))):
        dx, gb = training.transformer_block_backward(x, block, n_heads, dx)
        blocks.insert(0, gb)
    dE, dP = training.embed_backward(ids, dx, p["E"].shape[0], p["P"].shape[0])
    return {**g, "E": dE_head + dE, "P": dP, "blocks": blocks}


@EXERCISE.mistake("tied_head_only", "E's gradient holds only the LM head's part; E is also the "
                  "embedding: add embed_backward's dE")
def _head_only(params, token_ids, targets, n_heads):
    return _variant(params, token_ids, targets, n_heads, embedding=False)


@EXERCISE.mistake("tied_embedding_only", "E's gradient holds only the embedding's part; E is "
                  "also the LM head (logits = h E^T): add dlogits^T h")
def _embed_only(params, token_ids, targets, n_heads):
    return _variant(params, token_ids, targets, n_heads, head=False)


@EXERCISE.mistake("final_norm_skipped", "the final layer norm was skipped in the backward pass: "
                  "take dh back through layer_norm_backward before the blocks")
def _skip_final(params, token_ids, targets, n_heads):
    return _variant(params, token_ids, targets, n_heads, final=False)


@EXERCISE.mistake("loss_summed", "the loss is the sum over positions; it is the mean")
def _loss_sum(params, token_ids, targets, n_heads):
    return _variant(params, token_ids, targets, n_heads, loss_sum=True)


def _blocks_in_order(p, ids, tg, n_heads):
    """The backward pass through the blocks taken first to last (not reversed)."""
    xs = [p["E"][ids] + p["P"][: ids.shape[-1]]]
    for block in p["blocks"]:
        xs.append(training.transformer_block_with_cache(xs[-1], block, n_heads)[0])
    h, g = xs[-1], {}
    if "ln_f_gamma" in p:
        mu = h.mean(axis=-1, keepdims=True)
        hf = p["ln_f_gamma"] * (h - mu) / np.sqrt(h.var(axis=-1, keepdims=True) + 1e-5) \
            + p["ln_f_beta"]
    else:
        hf = h
    dlogits = training.cross_entropy_backward(hf @ p["E"].T, tg)
    V, d = p["E"].shape
    dh = dlogits @ p["E"]
    if "ln_f_gamma" in p:
        dh, g["ln_f_gamma"], g["ln_f_beta"] = training.layer_norm_backward(h, p["ln_f_gamma"], dh)
    blocks = []
    for x, block in zip(xs[:-1], p["blocks"]):                 # first to last: the mistake
        dh, gb = training.transformer_block_backward(x, block, n_heads, dh)
        blocks.append(gb)
    dE, dP = training.embed_backward(ids, dh, V, p["P"].shape[0])
    return {**g, "E": dlogits.reshape(-1, V).T @ hf.reshape(-1, d) + dE, "P": dP,
            "blocks": blocks}


@EXERCISE.mistake("blocks_not_reversed", "the backward pass went through the blocks first to "
                  "last; the gradient flows back from the last block to the first: loop over "
                  "reversed(...) and keep each block's gradients at its own index")
def _not_reversed(params, token_ids, targets, n_heads):
    loss, g = training.loss_and_grads(params, token_ids, targets, n_heads)
    p = training.tree_map(lambda a: np.asarray(a, dtype=float), params)
    got = _blocks_in_order(p, np.asarray(token_ids), np.asarray(targets), n_heads)
    return loss, {k: got[k] for k in g}

