"""``count_block_parameters`` (notebook 07_transformer_block): the numbers in one block."""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, case
from helpers.reference import BLOCK_PARAM_SHAPES


def count_block_parameters(d, d_ff):
    """The number of parameters of one block of width d and feed-forward width d_ff: the
    sizes of the twelve arrays of ``BLOCK_PARAM_SHAPES``."""
    sizes = {"d": d, "d_ff": d_ff}
    return sum(int(np.prod([sizes[s] for s in shape])) for shape in BLOCK_PARAM_SHAPES.values())


def _compare(case, expected, got):
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
        if isinstance(got, (float, np.floating)) and float(got).is_integer():
            got = int(got)
        else:
            return f"expected a whole number (an int), got {type(got).__name__} {got!r:.40}"
    if int(got) == int(expected):
        return None
    if case is None:
        return "differ"
    d, d_ff = case.args
    return (f"count_block_parameters({d}, {d_ff}) returned {int(got)}, but a block with "
            f"d={d}, d_ff={d_ff} has {int(expected)} numbers")


CONTRACT = Contract(args={"d": Arg(int, low=1), "d_ff": Arg(int, low=1)},
                    returns=Arg(int))

EXERCISE = Exercise(
    "count_block_parameters", count_block_parameters, contract=CONTRACT, compare=_compare,
    difficulty=1, importance=1, minutes=5,
    hints=(
        r"""Count the numbers in each of the twelve arrays from its shape and add them up: a
matrix of shape $[a, b]$ holds $a \cdot b$ numbers, a vector of length $a$ holds $a$.""",
        r"""Three groups: four $d \times d$ attention matrices; the feed-forward network's
$W_1$ $[d, d_{ff}]$, $b_1$ $[d_{ff}]$, $W_2$ $[d_{ff}, d]$, $b_2$ $[d]$; two layer norms,
each with a $\gamma$ and a $\beta$ of length $d$.

```python
attention = ___       # W_Q, W_K, W_V, W_O
ffn = ___             # W1, b1, W2, b2
norms = ___           # ln1 and ln2: gamma and beta each
return int(attention + ffn + norms)
```""",
    ),
)


@EXERCISE.cases
def cases():
    # by hand: 4 d^2 (W_Q, W_K, W_V, W_O) + d d_ff + d_ff + d_ff d + d (W1, b1, W2, b2)
    # + 4 d (two layer norms, gamma and beta)
    return [
        case("d4", "d = 4, d_ff = 8", (4, 8), expected=4 * 16 + (32 + 8 + 32 + 4) + 16),
        case("d16", "d = 16, d_ff = 64 (d_ff = 4 d)", (16, 64),
             expected=4 * 256 + (1024 + 64 + 1024 + 16) + 64),
        case("d6", "d = 6, d_ff = 10", (6, 10)),
        case("d128", "d = 128, d_ff = 512", (128, 512)),
        case("gpt2", "GPT-2 small's sizes, d = 768, d_ff = 3072 (no attention biases here)",
             (768, 3072), hidden=True,
             expected=7_084_800),
        case("d1", "d = 1, d_ff = 1", (1, 1), hidden=True),
        case("d12", "d = 12, d_ff = 7", (12, 7), hidden=True),
    ]


@EXERCISE.mistake("no_biases", "the biases b1 [d_ff] and b2 [d] were not counted")
def _no_biases(d, d_ff):
    return 4 * d * d + 2 * d * d_ff + 4 * d


@EXERCISE.mistake("no_layer_norms", "the two layer norms (gamma and beta, d numbers each) were "
                  "not counted")
def _no_norms(d, d_ff):
    return 4 * d * d + d * d_ff + d_ff + d_ff * d + d


@EXERCISE.mistake("gamma_only", "each layer norm has gamma AND beta (d numbers each)")
def _gamma_only(d, d_ff):
    return 4 * d * d + d * d_ff + d_ff + d_ff * d + d + 2 * d


@EXERCISE.mistake("no_W_O", "W_O [d, d] was not counted: attention has four d x d matrices")
def _no_w_o(d, d_ff):
    return 3 * d * d + d * d_ff + d_ff + d_ff * d + d + 4 * d


@EXERCISE.mistake("biases_swapped", "b1 has d_ff numbers and b2 has d (they were sized the "
                  "other way round or both d_ff)")
def _biases_swapped(d, d_ff):
    return 4 * d * d + 2 * d * d_ff + 2 * d_ff + 4 * d


@EXERCISE.mistake("assumes_d_ff_4d", "d_ff was taken as 4 d: use the d_ff argument")
def _assumes_4d(d, d_ff):
    return count_block_parameters(d, 4 * d)
