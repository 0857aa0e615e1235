"""``apply_rope`` (notebook 10_modern_llm): rotary position embeddings."""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._llama_variants import rope_variant
from helpers.llama import model

CONTRACT = Contract(
    args={"x": Arg("[..., N, d]", lists=True),
          "positions": Arg("[N]", dtype="int", lists=True, low=0, high=5000),
          "theta": Arg(float, optional=True, low=10.0, high=1e6,
                       values=lambda rng, shape, dims: float(rng.choice([100.0, 1e4, 1e5])))},
    returns=Arg("[..., N, d]"), batch=(0, 1), where=("d % 2 == 0",),
    sizes={"d": (2, 4, 6, 8)})

EXERCISE = Exercise("apply_rope", model.apply_rope, contract=CONTRACT,
                    refuse=("helpers.llama.model:rotate_half", "helpers.llama.model:rope_angles",
                            "helpers.exercises._llama_variants:rope_variant"),
                    difficulty=3, importance=3, minutes=25,
                    hints=(
                        r"""Three steps. (1) One frequency per pair, $\omega_m =
\theta^{-2m/d_h}$ for $m = 0, \dots, d_h/2 - 1$. (2) One angle per row and pair, $p\,\omega_m$,
where $p$ is the row's entry of `positions`. (3) Rotate pair $m$, feature $m$ with feature
$m + d_h/2$ (the first half of the features with the second half, not neighbours):
$y_m = x_m \cos - x_{m+d_h/2} \sin$ and $y_{m+d_h/2} = x_{m+d_h/2} \cos + x_m \sin$.""",
                        r"""Shapes: the angles form a table `[N, half]` (an outer product of
the positions and the frequencies); it lines up with the last two axes of `x[..., :half]`,
`[..., N, half]`, and broadcasts over any head axes in front.

```python
x = np.asarray(x)
d_h = x.shape[-1]
half = d_h // 2
freqs = ___                                  # [half]: theta ** (-2 m / d_h), m = 0..half-1
angles = ___                                 # [N, half]: positions[:, None] times freqs[None, :]
x1, x2 = x[..., :half], x[..., half:]        # [..., N, half] each
```""",
                        r"""With `cos` and `sin` of the angles, the two new halves are put
side by side again (first halves first):

```python
cos, sin = np.cos(angles), np.sin(angles)    # [N, half]
return np.concatenate([___, ___], axis=-1)   # [..., N, d_h]
```""",
                    ))


@EXERCISE.cases
def cases():
    normal = draw.rng(1010).standard_normal
    c1, s1, c01, s01 = np.cos(1), np.sin(1), np.cos(0.1), np.sin(0.1)
    visible = [
        case("worked_example", "x = [[1, 2, 3, 4]] at position 1, theta = 100: pair (1, 3) "
             "turns by 1 radian, pair (2, 4) by 100^(-1/2) = 0.1",
             ([[1.0, 2.0, 3.0, 4.0]], [1]), {"theta": 100.0}, group="slides",
             expected=np.array([[c1 - 3 * s1, 2 * c01 - 4 * s01, 3 * c1 + s1,
                                 4 * c01 + 2 * s01]])),
        case("heads", "x [2, 5, 8] (2 heads), positions 0..4, theta=10000",
             (normal((2, 5, 8)), np.arange(5)), {"theta": 10000.0}),
        case("positions", "x [3, 8] at positions [3, 4, 10], theta=100",
             (normal((3, 8)), np.array([3, 4, 10])), {"theta": 100.0}),
    ]
    normal = draw.rng(1011).standard_normal
    x0 = draw.rng(10).standard_normal((2, 3, 6))
    hidden = [
        case("smollm2_base", "x [4, 6, 16] at positions 100..105, theta=100000 (SmolLM2's base)",
             (normal((4, 6, 16)), np.arange(100, 106)), {"theta": 1e5}, hidden=True),
        case("lists", "x [1, 2, 4] as Python lists, positions [0, 7], default theta",
             (normal((1, 2, 4)).tolist(), [0, 7]), hidden=True),
        case("position_0_visible", "two rows at position 0 (nothing turns)",
             (np.arange(8.0).reshape(2, 4), [0, 0])),
        case("position_0", "every row at position 0 (nothing turns)", (x0, [0, 0, 0]),
             hidden=True, expected=x0),
    ]
    return visible + hidden


@EXERCISE.mistake("interleaved", "neighbouring features (2m, 2m+1) were paired: this course "
                  "pairs feature m with m + d_h/2 (rotate_half)")
def _interleaved(x, positions, theta=10000.0):
    return rope_variant(x, positions, theta, interleaved=True)


@EXERCISE.mistake("wrong_way", "the rotation goes the wrong way (sign of the sin terms)")
def _wrong_way(x, positions, theta=10000.0):
    return rope_variant(x, positions, theta, sign=-1.0)


@EXERCISE.mistake("frequencies", "the frequencies use theta^(-m/d_h); they are theta^(-2m/d_h)")
def _frequencies(x, positions, theta=10000.0):
    return rope_variant(x, positions, theta, exponent=1.0)


@EXERCISE.mistake("positions_ignored", "the positions argument was ignored (rows were rotated "
                  "for 0, 1, 2, ...)")
def _positions_ignored(x, positions, theta=10000.0):
    return rope_variant(x, np.arange(np.shape(x)[-2]), theta)


@EXERCISE.mistake("not_rotated", "nothing was rotated")
def _not_rotated(x, positions, theta=10000.0):
    return np.asarray(x, dtype=np.float64)


@trace.steps("apply_rope")
def _steps(x, positions, theta=10000.0):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    half = d // 2
    pos = np.asarray(positions, dtype=float)
    if pos.ndim != 1:
        raise ValueError("steps are declared for positions of shape [N]")
    angles = np.outer(pos, theta ** (-2.0 * np.arange(half) / d))
    x1, x2 = x[..., :half], x[..., half:]
    out = np.concatenate([x1 * np.cos(angles) - x2 * np.sin(angles),
                          x2 * np.cos(angles) + x1 * np.sin(angles)], axis=-1)
    backwards = np.concatenate([x1 * np.cos(angles) + x2 * np.sin(angles),
                                x2 * np.cos(angles) - x1 * np.sin(angles)], axis=-1)
    return [trace.Step("angles", "position p times theta^(-2m/d_h), [N, d_h/2]", angles,
                       (("p theta^(-m/d_h): the exponent's 2 is missing",
                         np.outer(pos, theta ** (-np.arange(half) / d))),
                        ("the angles of positions 0 ... N-1, not of `positions`",
                         np.outer(np.arange(x.shape[-2], dtype=float),
                                  theta ** (-2.0 * np.arange(half) / d))))),
            trace.Step("output", "each pair (x[m], x[m + d_h/2]) rotated by its angle", out,
                       (("the pairs rotated by minus their angle (the wrong way)",
                         backwards),))]
