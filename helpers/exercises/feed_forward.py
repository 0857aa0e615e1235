"""``feed_forward`` (notebook 07_transformer_block): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _ffn


CONTRACT = Contract(
    args={"x": Arg("[..., N, d]", lists=True), "W1": Arg("[d, d_ff]", lists=True),
          "b1": Arg("[d_ff]", lists=True), "W2": Arg("[d_ff, d]", lists=True),
          "b2": Arg("[d]", lists=True)},
    returns=Arg("[..., N, d]"), serves={"x": "[..., d]"})

EXERCISE = Exercise(
    'feed_forward', reference.feed_forward, contract=CONTRACT,
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""Two affine maps with a ReLU between them: widen from $d$ to $d_{ff}$, set the
negative entries to zero, narrow back to $d$. With `x` of shape `[N, d]`, every row (every
token) goes through the same network; the biases broadcast over the rows.""",
        r"""The ReLU is `np.maximum(0, a)`, entry by entry (not `np.max`, which reduces an
array to its single largest entry). Shapes: `[N, d] @ [d, d_ff]` then
`[N, d_ff] @ [d_ff, d]`.

```python
x = np.asarray(x, dtype=float)
hidden = ___        # [N, d_ff]: x W1 + b1, then the ReLU
return ___          # [N, d]
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("small", "2 tokens, d = 3, d_ff = 4 (some hidden units are cut by the ReLU)",
             draw.ffn_args(181, 2, 3, 4, decimals=1)),
        case("lists", "plain lists, 3 tokens, d = 2, d_ff = 3",
             tuple(a.tolist() for a in draw.ffn_args(186, 3, 2, 3, decimals=1))),
        case("wide", "5 tokens, d = 4, d_ff = 6", draw.ffn_args(191, 5, 4, 6), group="shapes",
             hidden=True),
        case("one_token", "1 token, d = 2, d_ff = 8", draw.ffn_args(196, 1, 2, 8), group="shapes",
             hidden=True),
        case("large_visible", "inputs ~100, 2 tokens, d = 3, d_ff = 4",
             draw.ffn_args(206, 2, 3, 4, scale=100.0)),
        case("large", "large inputs", draw.ffn_args(201, 3, 3, 5, scale=100.0), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_relu", "the ReLU is missing: ReLU(x W1 + b1) = max(0, x W1 + b1)")
def _ffn_no_relu(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, act=lambda a: a)


@EXERCISE.mistake("relu_on_output",
                  "a ReLU was applied to the output too; only the hidden layer gets ReLU")
def _ffn_relu_out(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, relu_out=True)


@EXERCISE.mistake("missing_b1", "b1 is missing: ReLU(x W1 + b1)")
def _ffn_no_b1(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, use_b1=False)


@EXERCISE.mistake("missing_b2", "b2 is missing: ... W2 + b2")
def _ffn_no_b2(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, use_b2=False)


@EXERCISE.mistake("b1_after_relu",
                  "b1 was added after the ReLU; it goes inside: ReLU(x W1 + b1)")
def _ffn_b1_after(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, b1_after=True)


@EXERCISE.mistake("gelu", "used GELU; this course's FFN uses ReLU, max(0, .)")
def _ffn_gelu(x, W1, b1, W2, b2):
    def gelu(a):
        return 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))
    return _ffn(x, W1, b1, W2, b2, act=gelu)


@EXERCISE.mistake("abs_activation", "used abs(.) as the activation; ReLU is max(0, .)")
def _ffn_abs(x, W1, b1, W2, b2):
    return _ffn(x, W1, b1, W2, b2, act=np.abs)


@trace.steps("feed_forward")
def _steps(x, W1, b1, W2, b2):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    x, W1, b1, W2, b2 = (np.asarray(a, dtype=float) for a in (x, W1, b1, W2, b2))
    pre = x @ W1 + b1
    hidden = np.maximum(0.0, pre)
    return [trace.Step("pre-activation", "x W1 + b1", pre,
                       (("x W1: b1 is missing", x @ W1),)),
            trace.Step("hidden", "ReLU(x W1 + b1)", hidden,
                       (("x W1 + b1: the ReLU is missing", pre),
                        ("ReLU(x W1) + b1: b1 added after the ReLU",
                         np.maximum(0.0, x @ W1) + b1))),
            trace.Step("output", "hidden W2 + b2", hidden @ W2 + b2,
                       (("hidden W2: b2 is missing", hidden @ W2),
                        ("ReLU(hidden W2 + b2): a ReLU on the output too",
                         np.maximum(0.0, hidden @ W2 + b2))))]
