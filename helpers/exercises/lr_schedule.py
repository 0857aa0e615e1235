"""``lr_schedule`` (notebook 12_training): linear warm-up, then cosine decay."""

from __future__ import annotations

import math

from helpers import training
from helpers.course import Arg, Contract, Exercise, case

def _int(low, high):
    return lambda rng, shape, dims: int(rng.integers(low, high + 1))


CONTRACT = Contract(
    args={"step": Arg(int, low=0, values=_int(0, 130)),
          "steps": Arg(int, low=1, values=_int(50, 120)),
          "peak_lr": Arg(float, low=0.0, high=1.0,
                         values=lambda rng, shape, dims: float(rng.choice([5e-4, 1e-3, 3e-3]))),
          "warmup": Arg(int, low=1, values=_int(1, 20)),
          "min_ratio": Arg(float, optional=True, low=0.0, high=1.0,
                           values=lambda rng, shape, dims: float(rng.choice([0.05, 0.2, 0.5])))},
    returns=Arg(float), invariants=("warmup < steps",
                                    "step may pass steps: past the end the rate stays at "
                                    "min_ratio * peak_lr"))

EXERCISE = Exercise(
    "lr_schedule", training.lr_schedule, contract=CONTRACT, output="scalar",
    difficulty=1, importance=2, minutes=10,
    hints=(
        r"""Two pieces. While `step < warmup` the rate climbs in a straight line and reaches
the peak at step `warmup - 1`: $\mathrm{peak}\cdot(\mathrm{step}+1)/\mathrm{warmup}$. After,
`progress` goes from 0 to 1 over the remaining `steps - warmup` steps and the rate follows
half a cosine from the peak down to `min_ratio * peak`.""",
        r"""```python
if step < warmup:
    return ___
progress = min(1.0, (step - warmup) / max(1, steps - warmup))
cosine = 0.5 * (1 + math.cos(math.pi * progress))     # 1 -> 0
return peak_lr * (___ + ___ * cosine)
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("first_step", "step 0 of warm-up 10 (the rate is already peak / 10)",
             (0, 100, 1e-3, 10)),
        case("end_of_warmup", "step 9, the last warm-up step: the peak", (9, 100, 1e-3, 10)),
        case("cosine", "step 60 of 100 after a warm-up of 10", (60, 100, 2e-3, 10)),
        case("min_ratio", "the last step, min_ratio = 0.3 given", (100, 100, 1e-3, 10),
             {"min_ratio": 0.3}),
        case("after_end", "step 110 of 100: past the end the rate stays at min_ratio * peak",
             (110, 100, 1e-3, 10)),
        case("quarter", "step 35 of 110, warm-up 10", (35, 110, 3e-3, 10), hidden=True),
        case("warmup_5", "step 2 of warm-up 5", (2, 50, 5e-4, 5), hidden=True),
        case("past_end", "a step past the end stays at the minimum", (130, 120, 1e-3, 20),
             {"min_ratio": 0.05}, hidden=True),
    ]


def _variant(step, steps, peak_lr, warmup, min_ratio=0.1, start="plus1", floor=True,
             shift=True, clamp=True):
    if step < warmup:
        if start == "both_plus1":
            return peak_lr * (step + 1) / (warmup + 1)
        return peak_lr * ((step + 1) if start == "plus1" else step) / warmup
    progress = (step - warmup) / max(1, steps - warmup) if shift else step / steps
    progress = min(1.0, progress) if clamp else progress
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    low = min_ratio if floor else 0.0
    return peak_lr * (low + (1 - low) * cosine)


@EXERCISE.mistake("warmup_from_zero", "the warm-up starts at 0 (peak * step / warmup); step 0 "
                  "already trains: use peak * (step + 1) / warmup")
def _zero(step, steps, peak_lr, warmup, min_ratio=0.1):
    return _variant(step, steps, peak_lr, warmup, min_ratio, start="zero")


@EXERCISE.mistake("cosine_to_zero", "the cosine decays to 0; it ends at min_ratio * peak_lr")
def _to_zero(step, steps, peak_lr, warmup, min_ratio=0.1):
    return _variant(step, steps, peak_lr, warmup, min_ratio, floor=False)


@EXERCISE.mistake("progress_not_shifted", "progress = step / steps ignores the warm-up: it is "
                  "(step - warmup) / (steps - warmup)")
def _unshifted(step, steps, peak_lr, warmup, min_ratio=0.1):
    return _variant(step, steps, peak_lr, warmup, min_ratio, shift=False)


@EXERCISE.mistake("warmup_over_warmup_plus_1", "the warm-up is peak * (step + 1) / (warmup + "
                  "1), which never reaches the peak; it is peak * (step + 1) / warmup (the peak "
                  "at step warmup - 1)")
def _plus_one(step, steps, peak_lr, warmup, min_ratio=0.1):
    return _variant(step, steps, peak_lr, warmup, min_ratio, start="both_plus1")


@EXERCISE.mistake("progress_not_clamped", "past the end progress went beyond 1 and the cosine "
                  "climbed back up: clamp it, progress = min(1.0, ...), so the rate stays at "
                  "min_ratio * peak_lr")
def _unclamped(step, steps, peak_lr, warmup, min_ratio=0.1):
    return _variant(step, steps, peak_lr, warmup, min_ratio, clamp=False)
