"""``transformer_block`` (notebook 07_transformer_block): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _block, _f


#: The block's parameters, by name (their dimensions bind with x's).
BLOCK = {k: Arg("[" + ", ".join(v) + "]") for k, v in reference.BLOCK_PARAM_SHAPES.items()}

CONTRACT = Contract(
    args={"x": Arg("[N, d]", lists=True),
          "params": Arg(dict, fields=BLOCK,
                        values=lambda rng, shape, dims: draw.block(rng, dims["d"],
                                                                     dims["d_ff"])),
          "n_heads": Arg("n_heads"), "causal": Arg(bool, optional=True)},
    returns=Arg("[N, d]"), where=("d % n_heads == 0",), serves={"x": "[..., N, d]"},
    sizes={"d": (2, 4, 6), "n_heads": (1, 2), "d_ff": (2, 4, 8)},
    invariants=("params holds ln1_gamma, ln1_beta, W_Q, W_K, W_V, W_O, ln2_gamma, "
                "ln2_beta, W1, b1, W2, b2 of the shapes of d and d_ff",))

EXERCISE = Exercise(
    'transformer_block', reference.transformer_block, contract=CONTRACT, refuse=("helpers.training.kernels:block_forward_cached", "helpers.training.kernels:block_output"), uses=('layer_norm', 'multi_head_attention', 'feed_forward'),
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""One line of code per equation, $t^1$ to $h$. Only the attention line looks at
other tokens. Both residual additions use the un-normalised stream: the first adds the
block's input $x$ to $t^2$, the second adds $t^3$ to $t^5$. Pass `causal` on to the
attention.""",
        r"""The parameters come by name from the dict (`params["ln1_gamma"]`, `params["W_Q"]`,
...; the names are printed above). A skeleton:

```python
p = params
t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
t2 = multi_head_attention(t1, ___, n_heads, causal=causal)
t3 = ___
t4 = ___
t5 = feed_forward(t4, ___)
return ___
```""",
        r"""The attention half, written out; the feed-forward half ($t^4$, $t^5$ and $h$) is
yours:

```python
p = params
t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
t2 = multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                          causal=causal)
t3 = t2 + x
```""",
    ),
)


@EXERCISE.cases
def cases():
    n = draw.normal
    return [
        case("basic", "3 tokens, d = 4, d_ff = 8, n_heads = 2, causal",
             (n(211, (3, 4)), draw.block(212, 4, 8), 2)),
        case("not_causal", "4 tokens, d = 4, d_ff = 8, n_heads = 2, causal=False",
             (n(213, (4, 4)), draw.block(214, 4, 8), 2), {"causal": False}, group="causal"),
        case("h3", "5 tokens, d = 6, d_ff = 12, n_heads = 3, causal",
             (n(215, (5, 6)), draw.block(216, 6, 12), 3), group="heads", hidden=True),
        case("h3_not_causal", "5 tokens, d = 6, n_heads = 3, causal=False",
             (n(217, (5, 6)), draw.block(218, 6, 12), 3), {"causal": False}, group="causal",
             hidden=True),
        case("h4", "3 tokens, d = 8, d_ff = 16, n_heads = 4, causal=True passed explicitly",
             (n(219, (3, 8)), draw.block(220, 8, 16), 4), {"causal": True}, group="heads",
             hidden=True),
        case("h1", "4 tokens, d = 4, n_heads = 1", (n(221, (4, 4)), draw.block(222, 4, 8), 1),
             group="heads", hidden=True),
        case("scaled_input", "inputs around 10 in size", (n(223, (3, 4), 10.0),
                                                          draw.block(224, 4, 8), 2),
             group="scales", hidden=True),
        case("one_token", "a single token", (n(225, (1, 4)), draw.block(226, 4, 8), 2),
             hidden=True),
        case("list_input_3", "x as a plain list, 3 tokens, d = 4, n_heads = 1",
             (n(229, (3, 4), decimals=2).tolist(), draw.block(230, 4, 8), 1)),
        case("list_input", "x as a plain list, 2 tokens, d = 4, n_heads = 2",
             (n(227, (2, 4), decimals=2).tolist(), draw.block(228, 4, 8), 2), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("post_norm",
                  "post-norm (layer norm after each residual sum); this block is pre-norm: "
                  "t1 = LN1(x), t3 = MHA(t1) + x, h = FFN(LN2(t3)) + t3")
def _tb_post(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, post_norm=True)


@EXERCISE.mistake("no_first_residual",
                  "no residual connection around attention: t3 = t2 + x")
def _tb_no_res1(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res1=False)


@EXERCISE.mistake("no_second_residual",
                  "no residual connection around the feed-forward: h = t5 + t3")
def _tb_no_res2(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res2=None)


@EXERCISE.mistake("no_residuals", "no residual connection at all: t3 = t2 + x and h = t5 + t3")
def _tb_no_res(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res1=False, res2=None)


@EXERCISE.mistake("second_residual_from_x",
                  "the second residual adds x; it adds t3 (the output of the first residual): h = t5 + t3")
def _tb_res2_x(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res2="x")


@EXERCISE.mistake("residual_from_normalised",
                  "the first residual adds the normalised t1; it adds the block's input x: t3 = t2 + x")
def _tb_res1_t1(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res1="t1")


@EXERCISE.mistake("second_residual_from_t4",
                  "the second residual adds t4 = LN2(t3); it adds t3: h = t5 + t3")
def _tb_res2_t4(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, res2="t4")


@EXERCISE.mistake("no_ln1", "the first layer norm is missing: attention reads t1 = LN1(x)")
def _tb_no_ln1(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln1=False)


@EXERCISE.mistake("no_ln2", "the second layer norm is missing: the feed-forward reads t4 = LN2(t3)")
def _tb_no_ln2(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln2=False)


@EXERCISE.mistake("ln2_on_t2",
                  "LN2 was applied to the attention output t2; it normalises t3 = t2 + x")
def _tb_ln2_t2(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln2_input="t2")


@EXERCISE.mistake("ln1_params_twice",
                  "the second layer norm used ln1_gamma/ln1_beta; it has its own ln2_gamma/ln2_beta")
def _tb_ln1_twice(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, ln2_params="ln1")


@EXERCISE.mistake("ffn_missing",
                  "the feed-forward half is missing: returned t3; continue with t4 = LN2(t3), "
                  "t5 = FFN(t4), h = t5 + t3")
def _tb_no_ffn(x, params, n_heads, causal=True):
    p = params
    t1 = reference.layer_norm(_f(x), p["ln1_gamma"], p["ln1_beta"])
    return reference.multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                                          causal=causal) + _f(x)


@EXERCISE.mistake("causal_ignored",
                  "the causal argument was not passed on to multi-head attention (it stayed causal "
                  "when causal=False)")
def _tb_causal_ignored(x, params, n_heads, causal=True):
    return _block(x, params, n_heads, causal, mha_causal=True)


@trace.steps("transformer_block")
def _steps(x, params, n_heads, causal=True):
    """The named steps an answer goes through (helpers.course.trace): the slides'
    t1 ... t5 and h."""
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    x = np.asarray(x, dtype=float)
    ln, mha, ffn = reference.layer_norm, reference.multi_head_attention, reference.feed_forward
    t1 = ln(x, p["ln1_gamma"], p["ln1_beta"])
    t2 = mha(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=causal)
    t3 = t2 + x
    t4 = ln(t3, p["ln2_gamma"], p["ln2_beta"])
    t5 = ffn(t4, p["W1"], p["b1"], p["W2"], p["b2"])
    return [trace.Step("t1", "LayerNorm1(x)", t1),
            trace.Step("t2", "MultiHeadAttention(t1)", t2,
                       (("the attention without the causal argument passed on",
                         mha(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads)),
                        ("MultiHeadAttention(x): the attention of x, not of LayerNorm1(x)",
                         mha(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                             causal=causal)))),
            trace.Step("t3", "t2 + x (the first residual)", t3,
                       (("t2: the residual x is not added", t2),)),
            trace.Step("t4", "LayerNorm2(t3)", t4,
                       (("LayerNorm1's gamma and beta on t3, not LayerNorm2's",
                         ln(t3, p["ln1_gamma"], p["ln1_beta"])),)),
            trace.Step("t5", "FFN(t4)", t5),
            trace.Step("h", "t5 + t3 (the second residual)", t5 + t3,
                       (("t5: the residual t3 is not added", t5),
                        ("t5 + x: the residual adds x, not t3", t5 + x)))]
