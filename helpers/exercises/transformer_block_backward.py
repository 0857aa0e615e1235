"""``transformer_block_backward`` (notebook 12_training): one pre-norm block, backwards."""

from __future__ import annotations

import numpy as np

from helpers import reference, training
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.judge import nested_problem

PARTS = ("dx", "grads")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


#: The block's parameters, by name (their dimensions bind with x's).
BLOCK = {k: Arg("[" + ", ".join(v) + "]") for k, v in reference.BLOCK_PARAM_SHAPES.items()}

CONTRACT = Contract(
    args={"x": Arg("[..., N, d]"),
          "params": Arg(dict, fields=BLOCK,
                        values=lambda rng, shape, dims: _block(rng, dims["d"], dims["d_ff"])),
          "n_heads": Arg("n_heads"), "d_out": Arg("[..., N, d]"),
          "causal": Arg(bool, optional=True)},
    returns=(Arg("[..., N, d]"), Arg(dict, fields=BLOCK)), batch=(0, 1),
    where=("d % n_heads == 0",), sizes={"d": (2, 4, 6), "n_heads": (1, 2), "d_ff": (2, 4, 8)},
    invariants=("grads has the keys of params",))

EXERCISE = Exercise(
    "transformer_block_backward", training.transformer_block_backward, contract=CONTRACT, compare=_compare,
    uses=("linear_backward", "layer_norm_backward", "attention_backward", "transformer_block"),
    refuse=("helpers.training.kernels:block_back", "helpers.training.kernels:mha_back",
            "helpers.training:multi_head_attention_backward",
            "helpers.training:feed_forward_backward"),
    difficulty=3, importance=3, minutes=30,
    hints=(
        r"""Walk the six lines backwards. $h = t^5 + t^3$: $dt^5 = dh$ and $dh$ also flows
straight into $t^3$. Through the feed-forward ($t^5 = a W_2 + b_2$, $a = \mathrm{ReLU}(z)$,
$z = t^4 W_1 + b_1$) and $\mathrm{LN}_2$ to get a second part of $dt^3$; **add** the two.
$t^3 = t^2 + x$: $dt^2 = dt^3$ and $dx$ starts as $dt^3$. Through $W_O$, the heads, the
attention and the three projections (all three read $t^1$: their $dt^1$ add up), then
$\mathrm{LN}_1$ for the second part of $dx$.""",
        r"""`transformer_block_with_cache` gives the forward's values; heads are split like
`split_heads` does it.

```python
p = params
h, c = transformer_block_with_cache(x, p, n_heads, causal)
dh = np.asarray(d_out, dtype=float)
g = {}
da, g["W2"], g["b2"] = linear_backward(c["a"], p["W2"], dh)
dz = ___                                           # through the ReLU
dt4, g["W1"], g["b1"] = linear_backward(c["t4"], p["W1"], dz)
dt3, g["ln2_gamma"], g["ln2_beta"] = layer_norm_backward(c["t3"], p["ln2_gamma"], dt4)
dt3 = ___                                          # the residual around the FFN
dheads, g["W_O"], _ = linear_backward(c["heads"], p["W_O"], dt3)
...
```""",
    ),
)


def _block(rng, d, d_ff):
    b = training.init_params(3, d, 1, d_ff, 2, seed=draw.rng(int(rng.integers(1000))),
                             dtype=np.float64)["blocks"][0]
    return {k: v + 0.3 * rng.normal(size=v.shape) for k, v in b.items()}


@EXERCISE.cases
def cases():
    r = draw.rng(1208)
    return [
        case("small", "N = 4 tokens, d = 4, d_ff = 8, 2 heads",
             (r.normal(size=(4, 4)), _block(r, 4, 8), 2, r.normal(size=(4, 4)))),
        case("batch", "a batch [2, 3, 6], 3 heads, d_ff = 12",
             (r.normal(size=(2, 3, 6)), _block(r, 6, 12), 3, r.normal(size=(2, 3, 6)))),
        case("not_causal", "causal=False (every token sees every token)",
             (r.normal(size=(3, 4)), _block(r, 4, 8), 2, r.normal(size=(3, 4))),
             {"causal": False}),
        case("one_head", "1 head, N = 5", (r.normal(size=(5, 4)), _block(r, 4, 6), 1,
                                           r.normal(size=(5, 4))), hidden=True),
        case("four_heads", "4 heads, d = 8", (r.normal(size=(3, 8)), _block(r, 8, 16), 4,
                                              r.normal(size=(3, 8))), hidden=True),
    ]


def _variant(x, params, n_heads, d_out, causal=True, res_ffn=True, res_att=True,
             qkv=("W_Q", "W_K", "W_V"), relu=True):
    T = training
    p = params
    _, c = T.transformer_block_with_cache(x, p, n_heads, causal)
    dh = np.asarray(d_out, dtype=float)
    g = {}
    da, g["W2"], g["b2"] = T.linear_backward(c["a"], p["W2"], dh)
    dz = da * (c["z"] > 0) if relu else da
    dt4, g["W1"], g["b1"] = T.linear_backward(c["t4"], p["W1"], dz)
    dt3, g["ln2_gamma"], g["ln2_beta"] = T.layer_norm_backward(c["t3"], p["ln2_gamma"], dt4)
    if res_ffn:
        dt3 = dt3 + dh
    dheads, g["W_O"], _ = T.linear_backward(c["heads"], p["W_O"], dt3)
    split = np.swapaxes(dheads.reshape(*dheads.shape[:-1], n_heads, -1), -2, -3)
    dQ, dK, dV = T.attention_backward(c["Q"], c["K"], c["V"], c["mask"], split)
    dt1 = np.zeros_like(dheads)
    for name, dH in (("W_Q", dQ), ("W_K", dK), ("W_V", dV)):
        merged = np.swapaxes(dH, -2, -3)
        merged = merged.reshape(*merged.shape[:-2], -1)
        part, g[name], _ = T.linear_backward(c["t1"], p[name], merged)
        if name in qkv:
            dt1 = dt1 + part
    dx, g["ln1_gamma"], g["ln1_beta"] = T.layer_norm_backward(np.asarray(x, dtype=float),
                                                              p["ln1_gamma"], dt1)
    return (dx + dt3 if res_att else dx), g


@EXERCISE.mistake("no_residual_ffn", "the residual around the feed-forward is missing: "
                  "dt3 = dh + (what comes back through FFN and LN2)")
def _no_res_ffn(x, params, n_heads, d_out, causal=True):
    return _variant(x, params, n_heads, d_out, causal, res_ffn=False)


@EXERCISE.mistake("no_residual_attention", "the residual around the attention is missing: "
                  "dx = dt3 + (what comes back through the attention and LN1)")
def _no_res_att(x, params, n_heads, d_out, causal=True):
    return _variant(x, params, n_heads, d_out, causal, res_att=False)


@EXERCISE.mistake("queries_only", "dt1 came only through the queries; the keys and the values "
                  "read t1 too: add the three")
def _q_only(x, params, n_heads, d_out, causal=True):
    return _variant(x, params, n_heads, d_out, causal, qkv=("W_Q",))


@EXERCISE.mistake("no_relu_mask", "the ReLU was not applied backwards: dz = da * (z > 0)")
def _no_relu(x, params, n_heads, d_out, causal=True):
    return _variant(x, params, n_heads, d_out, causal, relu=False)


@EXERCISE.mistake("dt1_overwritten", "dt1 was overwritten by each of the three projections "
                  "(dt1 = ...), so only the values' part is left: t1 feeds the queries, the "
                  "keys and the values, add the three (dt1 = dt1 + ...)")
def _dt1_overwritten(x, params, n_heads, d_out, causal=True):
    return _variant(x, params, n_heads, d_out, causal, qkv=("W_V",))
