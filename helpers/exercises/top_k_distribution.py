"""``top_k_distribution`` (notebook 08_language_model): the distribution of top-k sampling."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace


def top_k_distribution(logits, k, temperature=1.0):
    """[V]: softmax(logits / temperature) over the k largest logits, 0 elsewhere."""
    logits = np.asarray(logits, dtype=np.float64)                  # [V]
    keep = np.argsort(logits)[-k:]                                 # the k largest
    kept = np.full_like(logits, -np.inf)
    kept[keep] = logits[keep]
    return reference.softmax((kept - kept.max()) / temperature)   # [V], 0 off the top k


CONTRACT = Contract(
    args={"logits": Arg("[V]", lists=True),
          "k": Arg(int, low=1, values=lambda rng, shape, dims: int(rng.integers(1, dims["V"] + 1))),
          "temperature": Arg(float, optional=True, low=1e-9,
                             values=lambda rng, shape, dims: float(rng.choice([0.5, 2.0])))},
    returns=Arg("[V]"), invariants=("1 <= k <= V",))

EXERCISE = Exercise(
    "top_k_distribution", top_k_distribution, contract=CONTRACT, uses=("softmax",),
    nan_hint="is it stable? Subtract the largest kept logit before exp, and "
    "give the dropped tokens -inf (exp(-inf) = 0)",
    difficulty=2, importance=1, minutes=10,
    hints=(
        r"""Keep the $k$ largest logits, give every other token the logit $-\infty$ (so that
$e^{-\infty} = 0$), and take $\operatorname{softmax}(\boldsymbol{u}/T)$ of the result. The
survivors' probabilities then sum to 1 and everybody else gets exactly 0.""",
        r"""`np.argsort(logits)[-k:]` gives the indices of the `k` largest logits. Work in a
copy filled with `-np.inf`, so that the caller's array is not changed; `softmax` from
`helpers` maps `-inf` to exactly 0.

```python
logits = np.asarray(logits, dtype=float)     # [V]
keep = ___                                   # the indices of the k largest
kept = np.full_like(logits, -np.inf)
kept[keep] = ___
return ___                                   # softmax with temperature, [V]
```""",
    ),
)


@EXERCISE.cases
def cases():
    e = np.e
    z = np.exp([0.5, 1.0, 1.5])
    return [
        case("top2", "top 2 of [2, 1, 0, -1]", ([2.0, 1.0, 0.0, -1.0], 2),
             expected=np.array([e / (e + 1), 1 / (e + 1), 0.0, 0.0])),
        case("array", "top 2 of an array of 5 logits", (np.array([0.5, -1.0, 2.0, 1.5, 0.0]), 2)),
        case("greedy", "top 1 of [0, 3, 1] (greedy)", ([0.0, 3.0, 1.0], 1),
             expected=np.array([0.0, 1.0, 0.0])),
        case("k_is_v", "k = V at temperature 2 (plain softmax of logits / 2)",
             ([1.0, 2.0, 3.0], 3), {"temperature": 2.0}, expected=z / z.sum()),
        case("large", "large logits: top 2 of [1000, 999, -5]", ([1000.0, 999.0, -5.0], 2),
             group="stability", expected=np.array([e / (e + 1), 1 / (e + 1), 0.0])),
        case("cold", "top 2 of [0, 4, 1, 2] at temperature 0.5", ([0.0, 4.0, 1.0, 2.0], 2),
             {"temperature": 0.5}, hidden=True,
             expected=np.array([0.0, 1 / (1 + e ** -4), 0.0, e ** -4 / (1 + e ** -4)])),
        case("random", "top 5 of 20 random logits at temperature 0.8",
             (draw.rng(8).normal(size=20) * 3, 5), {"temperature": 0.8},
             hidden=True),
        case("huge", "top 3 of logits near -1e4 at temperature 1.5",
             (-1e4 + draw.rng(9).normal(size=7), 3), {"temperature": 1.5},
             group="stability", hidden=True),
    ]


def _kept(logits, keep):
    logits = np.asarray(logits, dtype=np.float64)
    kept = np.full_like(logits, -np.inf)
    kept[keep] = logits[keep]
    return kept


@EXERCISE.mistake("not_renormalised", "the kept probabilities were not renormalised: take the "
                  "softmax over the k kept logits only, so they sum to 1")
def _not_renormalised(logits, k, temperature=1.0):
    p = reference.softmax(np.asarray(logits, dtype=np.float64) / temperature)
    out = np.zeros_like(p)
    keep = np.argsort(p)[-k:]
    out[keep] = p[keep]
    return out


@EXERCISE.mistake("smallest_k", "the k SMALLEST logits were kept: keep the k largest "
                  "(np.argsort(logits)[-k:])")
def _smallest(logits, k, temperature=1.0):
    kept = _kept(logits, np.argsort(np.asarray(logits, dtype=np.float64))[:k])
    return reference.softmax((kept - kept.max()) / temperature)


@EXERCISE.mistake("dropped_set_to_zero", "the dropped logits were set to 0, which exp turns into "
                  "1: set them to -inf so that their probability is 0")
def _dropped_zero(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=np.float64)
    kept = np.zeros_like(logits)
    keep = np.argsort(logits)[-k:]
    kept[keep] = logits[keep]
    return reference.softmax(kept / temperature)


@EXERCISE.mistake("threshold_off_by_one", "only logits above the k-th largest were kept (k - 1 "
                  "tokens): keep the k-th largest too")
def _threshold(logits, k, temperature=1.0):
    logits = np.asarray(logits, dtype=np.float64)
    kth = np.sort(logits)[-k]
    return reference.softmax(np.where(logits > kth, logits, -np.inf) / temperature)


@EXERCISE.mistake("temperature_ignored", "the temperature was ignored: divide the logits by it")
def _t_ignored(logits, k, temperature=1.0):
    return top_k_distribution(logits, k, 1.0)


@EXERCISE.mistake("temperature_multiplies", "the logits were multiplied by the temperature; "
                  "divide them")
def _t_times(logits, k, temperature=1.0):
    kept = _kept(logits, np.argsort(np.asarray(logits, dtype=np.float64))[-k:])
    return reference.softmax((kept - kept.max()) * temperature)


@trace.steps("top_k_distribution")
def _steps(logits, k, temperature=1.0):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    logits = np.asarray(logits, dtype=float)
    kept = np.full_like(logits, -np.inf)
    keep = np.argsort(logits)[-k:]
    kept[keep] = logits[keep]
    with np.errstate(all="ignore"):
        e = np.exp((kept - kept.max()) / temperature)
        zeroed = np.where(np.isfinite(kept), kept, 0.0)
        small = np.full_like(logits, -np.inf)
        small[np.argsort(logits)[:k]] = logits[np.argsort(logits)[:k]]
        return [trace.Step("kept logits", "the k largest logits, -inf elsewhere", kept,
                           (("the k smallest logits, not the largest", small),
                            ("the k largest logits, 0 (not -inf) elsewhere", zeroed))),
                trace.Step("output", "softmax(kept logits / temperature)", e / e.sum(),
                           (("softmax(kept logits): the temperature is ignored",
                             np.exp(kept - kept.max()) / np.exp(kept - kept.max()).sum()),))]
