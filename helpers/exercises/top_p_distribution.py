"""``top_p_distribution`` (notebook 13_inference): the distribution of nucleus sampling."""

from __future__ import annotations

import numpy as np

from helpers import inference, reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _naive_softmax


def _p(rng, shape, dims):
    return float(rng.choice([0.3, 0.6, 0.9]))


CONTRACT = Contract(
    args={"logits": Arg("[V]", lists=True), "p": Arg(float, low=1e-9, high=1.0, values=_p)},
    returns=Arg("[V]"),
    invariants=("0 < p <= 1", "ties between equal probabilities go to the smaller index"))

EXERCISE = Exercise(
    "top_p_distribution", inference.top_p_distribution, contract=CONTRACT, uses=("softmax",),
    nan_hint="is it stable? Take softmax from helpers (or subtract the largest logit before "
    "exp)",
    difficulty=2, importance=2, minutes=15,
    hints=(
        r"""Sort the probabilities from the likeliest down and add them up. Keep tokens while
the mass gathered **before** a token is still below $p$: the token that crosses $p$ is kept
too. Everything else gets probability 0, and the survivors are divided by their sum.""",
        r"""`np.argsort(-probs, kind="stable")` lists the tokens likeliest first, equal
probabilities in index order. `np.cumsum` gives the running mass; subtract each token's own
probability to get the mass before it.

```python
probs = softmax(np.asarray(logits, dtype=float))     # [V]
order = ___                                          # likeliest first
before = ___                                         # [V], the mass before each
keep = order[___]                                    # the nucleus
out = np.zeros_like(probs)
out[keep] = ___                                      # renormalised
return out
```""",
    ),
)


@EXERCISE.cases
def cases():
    e = np.e
    return [
        case("four_logits", "p = 0.7 on logits [2, 1, 0, -1] (probabilities 0.64, 0.24, "
             "0.09, 0.03: two tokens)", ([2.0, 1.0, 0.0, -1.0], 0.7),
             expected=np.array([e / (e + 1), 1 / (e + 1), 0.0, 0.0])),
        case("exact_mass", "p = 0.5 on probabilities [0.5, 0.25, 0.25]: the first token "
             "already holds p", (np.log([2.0, 1.0, 1.0]), 0.5),
             expected=np.array([1.0, 0.0, 0.0])),
        case("ties", "p = 0.5 on logits [1, 1, 1, 0]: three equal tokens, two kept, the "
             "first two by index", (np.array([1.0, 1.0, 1.0, 0.0]), 0.5),
             expected=np.array([0.5, 0.5, 0.0, 0.0])),
        case("unsorted", "p = 0.9 on logits [0, 3, -1, 2.5, 1] (vocabulary order kept)",
             (np.array([0.0, 3.0, -1.0, 2.5, 1.0]), 0.9)),
        case("p_one", "p = 1.0: every token, plain softmax", ([0.5, -0.5, 1.5], 1.0)),
        case("large", "large logits [1000, 999, 0], p = 0.9", ([1000.0, 999.0, 0.0], 0.9),
             group="stability"),
        case("tiny_p", "p = 0.01: only the likeliest token", (np.array([0.2, 0.1, 0.4, 0.3]),
             0.01), hidden=True, expected=np.array([0.0, 0.0, 1.0, 0.0])),
        case("random", "p = 0.8 on 20 random logits", (draw.normal(1301, (20,), 2.0), 0.8),
             hidden=True),
        case("huge", "logits near -1e4, p = 0.6", (-1e4 + draw.normal(1302, (7,)), 0.6),
             group="stability", hidden=True),
    ]


def _probs(logits):
    return reference.softmax(np.asarray(logits, dtype=np.float64))


def _nucleus(probs, keep):
    out = np.zeros_like(probs)
    out[keep] = probs[keep] / probs[keep].sum()
    return out


@EXERCISE.mistake("crossing_token_dropped", "the token whose probability takes the mass past "
                  "p was dropped: keep tokens while the mass BEFORE them is below p")
def _crossing_dropped(logits, p):
    probs = _probs(logits)
    order = np.argsort(-probs, kind="stable")
    keep = order[np.cumsum(probs[order]) <= p]
    return _nucleus(probs, keep if len(keep) else order[:1])


@EXERCISE.mistake("not_renormalised", "the kept probabilities were not renormalised: divide "
                  "them by their sum")
def _not_renormalised(logits, p):
    probs = _probs(logits)
    order = np.argsort(-probs, kind="stable")
    keep = order[np.cumsum(probs[order]) - probs[order] < p]
    out = np.zeros_like(probs)
    out[keep] = probs[keep]
    return out


@EXERCISE.mistake("least_likely_first", "the tokens were gathered from the LEAST likely up: "
                  "sort the probabilities in decreasing order")
def _ascending(logits, p):
    probs = _probs(logits)
    order = np.argsort(probs, kind="stable")
    return _nucleus(probs, order[np.cumsum(probs[order]) - probs[order] < p])


@EXERCISE.mistake("ties_reversed", "among equal probabilities the larger index was kept: "
                  "np.argsort(probs)[::-1] reverses ties; sort -probs with kind=\"stable\"")
def _ties_reversed(logits, p):
    probs = _probs(logits)
    order = np.argsort(probs, kind="stable")[::-1]
    return _nucleus(probs, order[np.cumsum(probs[order]) - probs[order] < p])


@EXERCISE.mistake("sorted_order_returned", "the probabilities came back in sorted order: put "
                  "each one back at its token's index")
def _sorted_out(logits, p):
    probs = _probs(logits)
    order = np.argsort(-probs, kind="stable")
    return _nucleus(probs, order[np.cumsum(probs[order]) - probs[order] < p])[order]


@EXERCISE.mistake("no_max_shift", "exp of the raw logits overflowed: subtract the largest "
                  "logit first (or use softmax from helpers)")
def _no_shift(logits, p):
    with np.errstate(all="ignore"):
        probs = _naive_softmax(logits)
    order = np.argsort(-probs, kind="stable")
    return _nucleus(probs, order[np.cumsum(probs[order]) - probs[order] < p])
