"""``beam_search`` (notebook 13_inference): the B likeliest continuations, kept step by step,
ranked at the end with length normalisation."""

from __future__ import annotations

import numpy as np

from helpers import inference, reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises.language_model_forward import PARAMS


CONTRACT = Contract(
    args={"token_ids": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True),
          "params": Arg(dict, fields=PARAMS), "n_heads": Arg(int, low=1),
          "n_new": Arg(int, low=1), "beam_width": Arg(int, low=1),
          "eos_id": Arg(int, optional=True, low=-1), "alpha": Arg(float, optional=True,
                                                                   low=0.0)},
    returns=Arg("[M]", dtype="int"), draw=False, where=("N >= 1",),
    invariants=("N <= M <= N + n_new: the prompt, then the new ids up to and with eos_id",
                "eos_id = -1: no end token", "the model reads the last n_ctx ids"))

EXERCISE = Exercise(
    "beam_search", inference.beam_search, contract=CONTRACT,
    uses=("language_model_forward", "softmax"),
    refuse=("helpers.inference:generate_cached",), output="ids",
    difficulty=3, importance=2, minutes=30,
    hints=(
        r"""Keep a list of beams, each (its new ids, the sum of their log-probabilities).
Each step grows every beam by every token $v$ (score plus $\log p(v \mid$ prompt and
beam$)$), sorts all the children by score and keeps the best `beam_width`. A child that
ends in `eos_id` is finished: move it to a list of its own and stop growing it. At the end
the winner among finished and live beams is the largest $\text{score} /
\text{length}^{\alpha}$, the length being its number of new ids.""",
        r"""The log-probabilities of the next token: the last row of
`language_model_forward(ids[-n_ctx:], params, n_heads)`, then $u - \log\sum e^{u}$ (shift
by the max first). `sorted(children, key=lambda b: -b[1])` keeps equal scores in their
order.

```python
prompt = [int(t) for t in token_ids]
beams, done = [((), 0.0)], []
for _ in range(n_new):
    children = []
    for new, score in beams:
        logp = ___                                  # [V]
        children += [(new + (v,), score + logp[v]) for v in range(len(logp))]
    children = sorted(children, key=lambda b: -b[1])[:beam_width]
    beams = [b for b in children if ___]            # still growing
    done += [b for b in children if ___]            # ended with eos_id
    if not beams:
        break
best = max(done + beams, key=lambda b: ___)
return np.array(prompt + list(best[0]))
```""",
    ),
)


def _models():
    """Small language models of the cases (built per call: cases may change them)."""
    return {"a": draw.seeded_lm(1425, V=4, d=4, n_ctx=8, n_blocks=1, ln_f=True, e_scale=3.0),
            "b": draw.seeded_lm(1402, V=5, d=4, n_ctx=6, n_blocks=2, ln_f=True, e_scale=1.5)}


@EXERCISE.cases
def cases():
    m = _models()
    return [
        case("width2", "beam_width 2, prompt [3], 3 new ids, no end token",
             (np.array([3]), m["a"], 2, 3, 2), group="beams"),
        case("eos", "beam_width 2, prompt [3], at most 3 new ids, end token 3, alpha 1",
             (np.array([3]), m["a"], 2, 3, 2), {"eos_id": 3, "alpha": 1.0}, group="eos"),
        case("width1", "beam_width 1 (greedy), prompt [0, 2], 3 new ids",
             ([0, 2], m["a"], 1, 3, 1), group="beams"),
        case("eos_alpha0", "beam_width 3, prompt [1], end token 0, alpha 0 (no normalisation)",
             (np.array([1]), m["a"], 2, 4, 3), {"eos_id": 0, "alpha": 0.0}, group="eos"),
        case("crop", "beam_width 3, prompt of 5 ids, 3 new ids, n_ctx = 6 (crop the context)",
             (np.array([0, 4, 1, 3, 2]), m["b"], 2, 3, 3), group="beams"),
        case("wider_than_deep", "beam_width 4, more beams than new ids: prompt [2], 2 new ids",
             (np.array([2]), m["a"], 2, 2, 4), group="beams"),
        case("wide", "beam_width 5, prompt [4], 3 new ids, end token 1, alpha 0.7",
             (np.array([4]), m["b"], 1, 3, 5), {"eos_id": 1, "alpha": 0.7}, group="eos",
             hidden=True),
        case("deep", "beam_width 2, prompt [1, 1], 5 new ids", (np.array([1, 1]), m["a"], 2, 5, 2),
             group="beams", hidden=True),
    ]


def _logp(ids, params, n_heads):
    n_ctx = len(params["P"])
    u = reference.language_model_forward(np.asarray(ids)[-n_ctx:], params, n_heads)[-1]
    return u - u.max() - np.log(np.exp(u - u.max()).sum())


def _search(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0, *,
            score=lambda lp: lp, width=None, stop_at_eos=True, normalise=True,
            only_new=False):
    """Beam search with one knob per known mistake."""
    prompt = [int(t) for t in token_ids]
    beams, done = [((), 0.0)], []
    for _ in range(n_new):
        grown = [(new + (v,), s + score(lp)) for new, s in beams
                 for v, lp in enumerate(_logp(prompt + list(new), params, n_heads))]
        grown = sorted(grown, key=lambda b: -b[1])[:width or beam_width]
        beams = [b for b in grown if not (stop_at_eos and b[0][-1] == eos_id)]
        done += [b for b in grown if stop_at_eos and b[0][-1] == eos_id]
        if not beams:
            break
    power = alpha if normalise else 0.0
    best = max(done + beams, key=lambda b: b[1] / len(b[0]) ** power)
    return np.array(list(best[0]) if only_new else prompt + list(best[0]), dtype=np.int64)


@EXERCISE.mistake("greedy", "only one beam was kept: keep the beam_width best children at "
                  "every step")
def _greedy(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    return _search(token_ids, params, n_heads, n_new, beam_width, eos_id, alpha, width=1)


@EXERCISE.mistake("probabilities_added", "probabilities were added up; a sequence's score is "
                  "the SUM OF LOG-probabilities (the log of their product)")
def _added(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    return _search(token_ids, params, n_heads, n_new, beam_width, eos_id, alpha, score=np.exp)


@EXERCISE.mistake("no_length_normalisation", "the final ranking ignored the length: divide "
                  "each score by length ** alpha (short finished beams win otherwise)")
def _unnormalised(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    return _search(token_ids, params, n_heads, n_new, beam_width, eos_id, alpha,
                   normalise=False)


@EXERCISE.mistake("grew_past_eos", "beams went on growing after eos_id: a beam ending with "
                  "the end token is finished")
def _past_eos(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    return _search(token_ids, params, n_heads, n_new, beam_width, eos_id, alpha,
                   stop_at_eos=False)


@EXERCISE.mistake("only_new_ids", "only the new ids were returned: return the prompt followed "
                  "by them")
def _only_new(token_ids, params, n_heads, n_new, beam_width, eos_id=-1, alpha=1.0):
    return _search(token_ids, params, n_heads, n_new, beam_width, eos_id, alpha,
                   only_new=True)
