"""``cross_entropy_backward`` (notebook 12_training): dL/dlogits of the mean cross-entropy."""

from __future__ import annotations

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case, ids_below

CONTRACT = Contract(
    args={"logits": Arg("[..., V]"),
          "targets": Arg("[...]", dtype="int", low=0, high="V - 1",
                         values=ids_below("V"))},
    returns=Arg("[..., V]"), batch=(1, 2),
    invariants=("targets has the shape of logits without its last axis", "0 <= targets < V"))

EXERCISE = Exercise(
    "cross_entropy_backward", training.cross_entropy_backward, contract=CONTRACT,
    difficulty=2, importance=3, minutes=10,
    nan_hint="is the softmax stable (subtract each row's maximum before exp)?",
    hints=(
        r"""For one position, $\partial(-\log p_t)/\partial z_v = p_v - [v = t]$: the
probabilities, minus 1 at the target. The loss is the *mean* over the $N$ positions,
so every row is divided by $N$, the number of positions (all leading dimensions
together).""",
        r"""Flatten the leading dimensions, softmax each row (stably), subtract the one-hot,
divide by the number of rows, and reshape back.

```python
z = np.asarray(logits, dtype=float)
flat = z.reshape(-1, z.shape[-1])                       # [N, V]
t = np.asarray(targets).reshape(-1)                     # [N]
p = ___                                                 # softmax of each row, stable
p[np.arange(len(t)), t] -= ___
return (p / ___).reshape(z.shape)
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1202)
    return [
        case("three_positions", "3 positions, 4 classes", (
            np.array([[2.0, 1.0, 0.1, -1.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 3.0, 0.0, 1.0]]),
            np.array([0, 2, 1]))),
        case("batch", "a batch [2, 3, 5] of logits: the mean is over all 6 positions",
             (r.normal(size=(2, 3, 5)) * 2.0, np.array([[0, 4, 4], [1, 2, 4]]))),
        case("extreme", "logits of 1e300 and -1e300 (a stable softmax is needed)",
             (np.array([[1e300, -1e300, 0.0], [0.0, 1.0, 2.0]]), np.array([1, 2]))),
        case("one_row", "a single position", (np.array([[0.3, -0.2, 1.5, 0.0, 0.7]]),
                                              np.array([3])), hidden=True),
        case("batch_4", "a batch [4, 2, 7]", (r.normal(size=(4, 2, 7)) * 3.0,
                                              r.integers(0, 7, (4, 2))), hidden=True),
        case("large_logits", "logits around 1000", (1000.0 + r.normal(size=(3, 4)),
                                                     np.array([3, 3, 0]))),
    ]


def _p(logits):
    z = np.asarray(logits, dtype=float)
    flat = z.reshape(-1, z.shape[-1])
    with np.errstate(all="ignore"):
        e = np.exp(flat - flat.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), z.shape


def _variant(logits, targets, onehot=1.0, scale="N", sign=1.0):
    p, shape = _p(logits)
    t = np.asarray(targets).reshape(-1)
    g = p.copy()
    g[np.arange(len(t)), t] -= onehot
    n = {"N": len(t), "1": 1, "B": shape[0] if len(shape) > 2 else len(t)}[scale]
    return (sign * g / n).reshape(shape)


@EXERCISE.mistake("no_mean", "the 1/N of the mean is missing: divide every row by the number "
                  "of positions N")
def _no_mean(logits, targets):
    return _variant(logits, targets, scale="1")


@EXERCISE.mistake("no_onehot", "the one-hot was not subtracted: the gradient is "
                  "(softmax(z) - onehot(target)) / N")
def _no_onehot(logits, targets):
    return _variant(logits, targets, onehot=0.0)


@EXERCISE.mistake("sign_flipped", "the sign is flipped: it is p - onehot, not onehot - p")
def _sign(logits, targets):
    return _variant(logits, targets, sign=-1.0)


@EXERCISE.mistake("mean_over_batch_only", "divided by the batch size B only; the mean is over "
                  "all B * N positions")
def _batch_only(logits, targets):
    return _variant(logits, targets, scale="B")


@EXERCISE.mistake("unstable_softmax", "exp overflowed: subtract each row's maximum before exp")
def _unstable(logits, targets):
    z = np.asarray(logits, dtype=float)
    flat = z.reshape(-1, z.shape[-1])
    with np.errstate(all="ignore"):
        e = np.exp(flat)
        p = e / e.sum(axis=-1, keepdims=True)
    t = np.asarray(targets).reshape(-1)
    p[np.arange(len(t)), t] -= 1.0
    return (p / len(t)).reshape(z.shape)
