"""``direct_logit_attribution`` (notebook 14_interpretability): how much each head's output
pushes up the logit of the right next token, read straight through the unembedding."""

from __future__ import annotations

import numpy as np

from helpers import interpretability
from helpers.course import Arg, Contract, Exercise, case, draw

CONTRACT = Contract(
    args={"head_outputs": Arg("[L, H, N, d]", lists=True),
          "W_U": Arg("[V, d]", lists=True),
          "target_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True,
                            values=draw.ids_below("V"))},
    returns=Arg("[L, H, N]"),
    invariants=("summed over heads and layers: the attention's share of the target's logit",
                "linear: doubling a head's output doubles its attribution"))

EXERCISE = Exercise(
    "direct_logit_attribution", interpretability.direct_logit_attribution, contract=CONTRACT,
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""The residual stream is a sum, and every head adds its output $o_{\ell,h}$ (after
$W_O$) to it. The logit of token $t$ is the stream dotted with $W_U[t]$, so the part of that
logit a head writes **directly** is $o_{\ell,h} \cdot W_U[t]$, with $t$ the right next token
at that position (the final norm's scale left aside).""",
        r"""`W_U[target_ids]` is `[N, d]`: one unembedding row per position. It broadcasts
against `[L, H, N, d]`; multiply and sum the last axis.

```python
O = np.asarray(head_outputs, dtype=float)      # [L, H, N, d]
U = ___                                        # [N, d]
return ___                                     # [L, H, N]
```""",
    ),
)


@EXERCISE.cases
def cases():
    O = np.zeros((1, 2, 2, 2))
    O[0, 0] = [[1.0, 2.0], [0.0, -1.0]]
    O[0, 1] = [[3.0, 0.0], [1.0, 1.0]]
    W_U = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]])
    # targets [2, 1]: rows [2, -1] and [0, 1]
    want = np.array([[[1 * 2 - 2 * 1, -1.0], [3 * 2, 1.0]]])
    return [
        case("by_hand", "1 layer, 2 heads, 2 positions, d = 2, targets [2, 1]",
             (O, W_U, [2, 1]), expected=want),
        case("random", "2 layers, 3 heads, 4 positions, d = 5, V = 6",
             (draw.normal(1451, (2, 3, 4, 5)), draw.normal(1452, (6, 5)),
              draw.rng(1453).integers(0, 6, 4))),
        case("repeated_target", "the same target at every position, 1 layer, 2 heads",
             (draw.normal(1454, (1, 2, 3, 4)), draw.normal(1455, (5, 4)), [4, 4, 4])),
        case("random_hidden", "3 layers, 2 heads, 5 positions, d = 4, V = 7",
             (draw.normal(1456, (3, 2, 5, 4)), draw.normal(1457, (7, 4)),
              draw.rng(1458).integers(0, 7, 5)), hidden=True),
        case("by_hand_hidden", "1 layer, 1 head, 3 positions, d = 2, targets [0, 2, 1]",
             (np.arange(6.0).reshape(1, 1, 3, 2), np.array([[1.0, 1.0], [1.0, -1.0],
                                                            [0.0, 2.0]]), [0, 2, 1]),
             hidden=True),
    ]


def _arrays(head_outputs, W_U):
    return np.asarray(head_outputs, dtype=np.float64), np.asarray(W_U, dtype=np.float64)


@EXERCISE.mistake("every_token", "every token's logit was attributed, [L, H, N, V]: only the "
                  "right next token's row of W_U counts at each position")
def _every(head_outputs, W_U, target_ids):
    O, U = _arrays(head_outputs, W_U)
    return O @ U.T


@EXERCISE.mistake("first_target", "one target was used for every position: position n is "
                  "scored against its own target, W_U[target_ids[n]]")
def _first(head_outputs, W_U, target_ids):
    O, U = _arrays(head_outputs, W_U)
    return O @ U[int(np.asarray(target_ids)[0])]


@EXERCISE.mistake("heads_summed", "the heads of a layer were summed, [L, N]: the "
                  "attribution is per head, [L, H, N]")
def _heads_summed(head_outputs, W_U, target_ids):
    O, U = _arrays(head_outputs, W_U)
    return (O.sum(axis=1) * U[np.asarray(target_ids, dtype=np.int64)]).sum(-1)
