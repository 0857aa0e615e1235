"""``answer_ranks`` (notebook 14_interpretability): where the right next token stands, layer
by layer, in the logit lens's distributions."""

from __future__ import annotations

import numpy as np

from helpers import interpretability
from helpers.course import Arg, Contract, Exercise, case, draw


def _distributions(rng, shape, dims):
    e = np.exp(2.0 * rng.normal(size=shape))
    return e / e.sum(axis=-1, keepdims=True)


CONTRACT = Contract(
    args={"distributions": Arg("[L, N, V]", lists=True, low=0.0, high=1.0,
                               values=_distributions),
          "target_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True,
                            values=draw.ids_below("V"))},
    returns=Arg("[L, N]", dtype="int"),
    invariants=("rank 0: the target is the most likely token",
                "tokens as likely as the target do not push its rank down"))

EXERCISE = Exercise(
    "answer_ranks", interpretability.answer_ranks, contract=CONTRACT,
    difficulty=1, importance=2, minutes=10,
    hints=(
        r"""The rank of the right token is the number of tokens the layer finds **more**
likely than it: 0 when it is the top prediction. Equal probabilities do not count, so a
uniform distribution ranks every token 0.""",
        r"""Pick each position's target probability with two index arrays, then compare it
with the whole row (broadcast it along a new last axis):

```python
D = np.asarray(distributions, dtype=float)          # [L, N, V]
p = D[:, np.arange(len(target_ids)), target_ids]    # [L, N]
return (D > ___).sum(axis=-1)
```""",
    ),
)


@EXERCISE.cases
def cases():
    D = np.array([[[0.1, 0.6, 0.3], [0.2, 0.2, 0.6]],
                  [[0.5, 0.4, 0.1], [1 / 3, 1 / 3, 1 / 3]]])
    return [
        case("by_hand", "2 layers, 2 positions, V = 3, targets [2, 0]; a uniform row",
             (D, [2, 0]), expected=np.array([[1, 1], [2, 0]])),
        case("random", "4 layers, 5 positions, V = 8",
             (_distributions(draw.rng(1441), (4, 5, 8), {}), draw.rng(1442).integers(0, 8, 5))),
        case("ties", "ties with the target: 3 tokens of 0.25 and the target among them",
             (np.array([[[0.25, 0.25, 0.125, 0.25, 0.125]]]), [3]), expected=np.array([[0]])),
        case("random_hidden", "3 layers, 6 positions, V = 10",
             (_distributions(draw.rng(1443), (3, 6, 10), {}), draw.rng(1444).integers(0, 10, 6)),
             hidden=True),
        case("ties_hidden", "ties below and above the target", (np.array(
            [[[0.3, 0.3, 0.1, 0.1, 0.2]], [[0.1, 0.1, 0.6, 0.1, 0.1]]]), [4]), hidden=True),
    ]


def _target_p(distributions, target_ids):
    D = np.asarray(distributions, dtype=np.float64)
    t = np.asarray(target_ids, dtype=np.int64)
    return D, D[:, np.arange(len(t)), t][..., None]


@EXERCISE.mistake("one_based", "the top token got rank 1: count the tokens more likely than "
                  "the target, 0 for the top prediction")
def _one_based(distributions, target_ids):
    D, p = _target_p(distributions, target_ids)
    return (D > p).sum(axis=-1) + 1


@EXERCISE.mistake("ties_counted", "tokens exactly as likely as the target were counted (>=): "
                  "only strictly more likely tokens rank above it")
def _ties(distributions, target_ids):
    D, p = _target_p(distributions, target_ids)
    return (D >= p).sum(axis=-1) - 1


@EXERCISE.mistake("less_likely_counted", "the tokens less likely than the target were "
                  "counted: rank counts the ones above it")
def _below(distributions, target_ids):
    D, p = _target_p(distributions, target_ids)
    return (D < p).sum(axis=-1)
