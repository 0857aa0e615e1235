"""``wash_we`` (notebook 04_queries_keys_values): the slides' activity "we wash our cats"."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, case


def wash_we():
    """The new vector of "we": ``(q1, k1, scores before scaling, weights, z1)``."""
    q1 = ex.WASH_X1 @ ex.WASH_W_Q                                  # [3]
    k1 = ex.WASH_X1 @ ex.WASH_W_K                                  # [3]
    K = np.vstack([k1, ex.WASH_K_REST])                            # [4, 3]
    scores = K @ q1                                                # [4]
    weights = reference.softmax(scores / ex.WASH_SCALE)            # [4]
    return q1, k1, scores, weights, weights @ ex.WASH_V            # z1: [3]


CONTRACT = Contract(args={}, returns=(Arg("[3]"), Arg("[3]"), Arg("[4]"), Arg("[4]"), Arg("[3]")))

EXERCISE = Exercise(
    "wash_we", wash_we, contract=CONTRACT, output="tuple", uses=("softmax",),
    parts=("q1", "k1", "the scores q1 . k_j (before scaling)",
           "the weights (scores / 8, then softmax)", "z1"),
    difficulty=2, importance=2, minutes=15,
    hints=(
        r"""Follow worked example 3 step by step: project "we" to get its query and its key, put
its key on top of the three given ones so that you have all four keys, score every key
against the query, divide by $\sqrt{64} = 8$, take the softmax, and mix the four values
with the weights.""",
        r"""`np.vstack([k1, examples.WASH_K_REST])` stacks the keys into `[4, 3]`, and a matrix
times a vector, `K @ q1`, gives the four scores at once. You should find
$\mathbf{q}_1 = [1, 3, 3]$ and $\mathbf{k}_1 = [1, 2, 2]$.

```python
q1 = examples.WASH_X1 @ ___                   # [3]
k1 = ___                                      # [3]
K = np.vstack([k1, examples.WASH_K_REST])     # [4, 3]
scores = ___                                  # [4], before scaling
weights = softmax(___)                        # [4]
z1 = ___                                      # [3]
return q1, k1, scores, weights, z1
```""",
    ),
)


@EXERCISE.cases
def cases():
    # hand-derived: q1 = x1 W_Q = [1, 3, 3], k1 = x1 W_K = [1, 2, 2], q1 . k_j for the keys
    e = np.exp(np.array([13.0, 24.0, 20.0, 12.0]) / 8.0)
    w = e / e.sum()
    V = np.array([[1, 0.5, -1], [4, 5, -2], [-3, 2, 2], [1, 1, 6]])
    by_hand = (np.array([1.0, 3.0, 3.0]), np.array([1.0, 2.0, 2.0]),
               np.array([13.0, 24.0, 20.0, 12.0]), w, w @ V)
    return [case("by_hand", "'we wash our cats', the query of 'we', scores scaled by "
                 "sqrt(64) = 8", (), group="slides", expected=by_hand),
            case("reference", "the same, against the course's computation", (), hidden=True)]


def _parts(scale=8.0, query="q1", with_k1=True, scaled_scores=False):
    q1 = ex.WASH_X1 @ ex.WASH_W_Q
    k1 = ex.WASH_X1 @ ex.WASH_W_K
    K = np.vstack([k1, ex.WASH_K_REST]) if with_k1 else np.asarray(ex.WASH_K_REST, float)
    scores = K @ (k1 if query == "k1" else q1)
    w = reference.softmax(scores / scale)
    return q1, k1, scores / scale if scaled_scores else scores, w, w @ np.asarray(
        ex.WASH_V, float)[-len(w):]


@EXERCISE.mistake("no_scale", "the scores were not divided by sqrt(d_k) = 8 before the softmax")
def _no_scale():
    return _parts(scale=1.0)


@EXERCISE.mistake("scale_sqrt_of_shown_d_k", "the scores were divided by sqrt(3) (the width "
                  "shown); the activity takes d_k = 64, so sqrt(d_k) = 8")
def _sqrt3():
    return _parts(scale=float(np.sqrt(3)))


@EXERCISE.mistake("scale_by_d_k", "the scores were divided by d_k = 64 instead of sqrt(d_k) = 8")
def _by_64():
    return _parts(scale=64.0)


@EXERCISE.mistake("k1_as_query", "k1 was used as the query: the scores are q1 . k_j")
def _k1_query():
    return _parts(query="k1")


@EXERCISE.mistake("returns_scaled_scores", "the scores were returned after scaling; return "
                  "q1 . k_j before dividing by 8")
def _scaled():
    return _parts(scaled_scores=True)
