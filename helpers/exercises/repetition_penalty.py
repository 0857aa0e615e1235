"""``repetition_penalty`` (notebook 13_inference): discourage tokens already generated."""

from __future__ import annotations

import numpy as np

from helpers import inference
from helpers.course import Arg, Contract, Exercise, draw, case


def _penalty(rng, shape, dims):
    return float(rng.choice([1.3, 2.0]))


CONTRACT = Contract(
    args={"logits": Arg("[V]", lists=True),
          "previous_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True,
                              values=draw.ids_below("V")),
          "penalty": Arg(float, low=1e-9, values=_penalty)},
    returns=Arg("[V]"),
    invariants=("each seen token is penalised once, however often it was seen",
                "the caller's logits are not changed"))

EXERCISE = Exercise(
    "repetition_penalty", inference.repetition_penalty, contract=CONTRACT,
    difficulty=1, importance=2, minutes=10,
    hints=(
        r"""A penalty $r > 1$ must make every seen token **less** likely. Dividing a positive
logit by $r$ lowers it; dividing a negative one would raise it towards 0, so a negative
logit is multiplied by $r$ instead. Tokens never seen keep their logit, and a token seen
three times is penalised once.""",
        r"""`np.unique(previous_ids)` gives each seen token once; `np.where(u > 0, u / r,
u * r)` applies the rule to an array. Work on a copy: `np.array(logits, dtype=float)`.

```python
out = np.array(logits, dtype=float)        # [V], a copy
seen = ___                                 # each seen id once
u = out[seen]
out[seen] = ___
return out
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("signs", "logits [2, -1, 0.5, 3], seen [0, 1], penalty 2",
             ([2.0, -1.0, 0.5, 3.0], [0, 1], 2.0), expected=np.array([1.0, -2.0, 0.5, 3.0])),
        case("repeats", "token 2 seen three times, penalty 1.5: penalised once",
             (np.array([1.0, 0.0, 3.0, -0.6]), np.array([2, 2, 3, 2]), 1.5),
             expected=np.array([1.0, 0.0, 2.0, -0.9])),
        case("zero_logit", "a seen logit of 0 stays 0 (penalty 3)",
             (np.array([0.0, 1.2, -0.3]), [0], 3.0)),
        case("random", "12 random logits, 6 seen ids with repeats, penalty 1.3",
             (draw.normal(1311, (12,), 2.0), draw.rng(1312).integers(0, 12, 6), 1.3),
             hidden=True),
        case("all_seen", "every token seen, penalty 1.2",
             (np.array([0.7, -0.2, 1.9]), np.array([2, 1, 0]), 1.2), hidden=True),
    ]


def _seen(previous_ids):
    return np.asarray(previous_ids, dtype=np.int64)


@EXERCISE.mistake("negative_divided", "a negative logit was divided by the penalty, which "
                  "makes the token MORE likely: multiply negative logits by it")
def _negative_divided(logits, previous_ids, penalty):
    out = np.array(logits, dtype=np.float64)
    seen = np.unique(_seen(previous_ids))
    out[seen] = out[seen] / penalty
    return out


@EXERCISE.mistake("penalised_per_occurrence", "a token seen several times was penalised once "
                  "per occurrence: penalise each seen token once (np.unique)")
def _per_occurrence(logits, previous_ids, penalty):
    out = np.array(logits, dtype=np.float64)
    for t in _seen(previous_ids):
        out[t] = out[t] / penalty if out[t] > 0 else out[t] * penalty
    return out


@EXERCISE.mistake("signs_swapped", "positive logits were multiplied and negative ones divided: "
                  "divide a positive logit by the penalty, multiply a negative one")
def _swapped(logits, previous_ids, penalty):
    out = np.array(logits, dtype=np.float64)
    seen = np.unique(_seen(previous_ids))
    u = out[seen]
    out[seen] = np.where(u > 0, u * penalty, u / penalty)
    return out


@EXERCISE.mistake("every_token_penalised", "every token was penalised: only the ids in "
                  "previous_ids are")
def _every(logits, previous_ids, penalty):
    u = np.array(logits, dtype=np.float64)
    return np.where(u > 0, u / penalty, u * penalty)
