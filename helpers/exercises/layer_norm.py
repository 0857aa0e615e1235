"""``layer_norm`` (notebook 07_transformer_block): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _ln


CONTRACT = Contract(
    args={"x": Arg("[..., d]", lists=True), "gamma": Arg("[d]", lists=True),
          "beta": Arg("[d]", lists=True),
          "eps": Arg(float, optional=True, low=0.0, high=1.0,
                     values=lambda rng, shape, dims: float(rng.choice([1e-3, 1e-2, 0.1])))},
    returns=Arg("[..., d]"), batch=(0, 1, 2), sizes={"d": (2, 3, 4, 5, 6)},
    invariants=("each vector of the last axis is normalised on its own",))

EXERCISE = Exercise(
    'layer_norm', reference.layer_norm, contract=CONTRACT,
    # its float32 fast path, and RMS norm (of centred rows, it is layer norm): issue 23
    refuse=("helpers.bert.model:_layer_norm", "helpers.llama.model:rms_norm",
            "helpers.llama.model:_rms_norm_float32", "helpers.training.kernels:ln_forward",
            "helpers.training.kernels:ln_output"),
    nan_hint='is eps inside the square root, (x - mean) / sqrt(var + eps)?',
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""Each vector on its own: subtract its mean $\mu$ and divide by its standard
deviation over its $d$ features, $(x - \mu)/\sqrt{\sigma^2 + \varepsilon}$, then scale by
$\gamma$ and shift by $\beta$ feature by feature. $\sigma^2$ is the population variance
(divide by $d$), and $\varepsilon$ sits inside the square root.""",
        r"""Reduce over the last axis and keep it with length 1: for `x` of shape `[N, d]`,
`x.mean(axis=-1, keepdims=True)` is `[N, 1]` and broadcasts back over the features. The
same code then works for a single vector `[d]`. `np.var` divides by $d$ by default
(`ddof=0`), the one we want; `ddof=1` is a classic slip.

```python
x = np.asarray(x, dtype=float)
mu = x.mean(axis=___, keepdims=True)     # [..., 1]
var = ___                                # [..., 1], population variance
x_hat = (x - mu) / ___                   # eps inside the square root
return ___                               # gamma and beta, each [d]
```""",
    ),
)


@EXERCISE.cases
def cases():
    g4, b4 = np.array([1.0, 2.0, 0.5, 1.5]), np.array([0.0, 0.1, -0.2, 1.0])
    small = 5.0 + draw.normal(171, (3, 6), 1e-3)
    tiny = np.array([[1.0, 1.0 + 1e-4, 1.0 - 1e-4, 1.0], [0.0, 1e-3, 2e-3, -1e-3]])
    scales = draw.normal(172, (3, 5)) * np.array([[1e-3], [1.0], [1e3]])
    r = draw.rng(173)
    g6, b6 = 1.0 + 0.3 * r.normal(size=6), 0.2 * r.normal(size=6)
    g5, b5 = 1.0 + 0.3 * r.normal(size=5), 0.2 * r.normal(size=5)
    g8, b8 = 1.0 + 0.3 * r.normal(size=8), 0.2 * r.normal(size=8)
    return [
        case("slides_cat", "the embeddings of 'The cat sat <end>', gamma = 1, beta = 0",
             (ex.CAT_X, np.ones(4), np.zeros(4)), group="slides"),
        case("lists_gamma_beta", "lists, with gamma and beta that are not 1 and 0",
             ([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 9.0]], g4.tolist(), b4.tolist())),
        case("small_variance", "rows whose variance (~1e-6) is smaller than eps", (small, g6, b6),
             group="eps"),
        case("explicit_eps", "eps = 0.01 given as an argument, rows of small variance",
             (0.1 * draw.normal(176, (2, 5)), g5, b5), {"eps": 1e-2}, group="eps"),
        case("constant_row_visible", "a constant row (variance 0) next to a normal one",
             (np.array([[-2.0, -2.0, -2.0, -2.0], [0.5, 1.0, -1.0, 2.0]]), g4, b4), group="eps"),
        case("tiny_variance", "rows with variance ~1e-8 and ~1e-6", (tiny, g4, b4), group="eps",
             hidden=True),
        case("constant_row", "a constant row (variance 0) next to a normal one",
             (np.array([[3.0, 3.0, 3.0, 3.0], [1.0, -1.0, 2.0, 0.5]]), g4, b4), group="eps",
             hidden=True),
        case("eps_1e-3", "eps = 1e-3 given as an argument", (small[:2] * 10.0, g6, b6),
             {"eps": 1e-3}, group="eps", hidden=True),
        case("eps_0.1", "eps = 0.1 given as an argument", (draw.normal(174, (2, 5)), g5, b5),
             {"eps": 0.1}, group="eps", hidden=True),
        case("row_scales", "rows at scales 1e-2, 1 and 1e3",
             (draw.normal(177, (3, 4)) * np.array([[1e-2], [1.0], [1e3]]), g4, b4), group="scales"),
        case("scales", "rows at very different scales (1e-3 to 1e3)", (scales, g5, b5),
             group="scales", hidden=True),
        case("random", "5 random rows, d = 8, offset from 0",
             (3.0 + draw.normal(175, (5, 8), 2.0), g8, b8), hidden=True),
        case("one_row", "a single row", (np.array([[0.5, -1.5, 2.0, 4.0]]), g4, b4), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("ddof_1",
                  "variance with ddof=1 (divided by d - 1); layer norm uses the population variance "
                  "(divide by d, np.var's default)")
def _ln_ddof(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, ddof=1)


@EXERCISE.mistake("eps_outside_sqrt",
                  "eps was added outside the square root (std + eps); it goes inside: sqrt(var + eps)")
def _ln_eps_out(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, eps_mode="outside")


@EXERCISE.mistake("no_eps", "eps is missing: divide by sqrt(var + eps)")
def _ln_no_eps(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, eps_mode="none")


@EXERCISE.mistake("eps_ignored",
                  "the eps argument was ignored (a fixed 1e-5 used instead): use the eps passed in")
def _ln_eps_fixed(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, 1e-5)


@EXERCISE.mistake("no_gamma_beta",
                  "gamma and beta were not applied: return gamma * normalised + beta")
def _ln_no_affine(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, affine=False)


@EXERCISE.mistake("gamma_beta_swapped",
                  "gamma and beta are swapped: gamma multiplies, beta is added")
def _ln_swapped(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, swap=True)


@EXERCISE.mistake("beta_inside",
                  "beta was added before multiplying by gamma; it is gamma * normalised + beta")
def _ln_beta_inside(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, beta_inside=True)


@EXERCISE.mistake("divided_by_variance",
                  "divided by the variance; divide by the standard deviation sqrt(var + eps)")
def _ln_by_var(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, power=1.0)


@EXERCISE.mistake("no_centering",
                  "the mean was not subtracted (this is RMS norm): use (x - mean) / sqrt(var + eps)")
def _ln_rms(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, center=False)


@EXERCISE.mistake("axis_0",
                  "normalised over the wrong axis (axis 0, over tokens); normalise each token's vector "
                  "over its features, axis=-1 with keepdims=True")
def _ln_axis0(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, axis=0)


@EXERCISE.mistake("whole_array",
                  "mean and variance were taken over the whole array; take them per row (axis=-1, "
                  "keepdims=True)")
def _ln_whole(x, gamma, beta, eps=1e-5):
    return _ln(x, gamma, beta, eps, axis=None)


# What the contract cannot say: checked when a learner calls helpers.layer_norm

@EXERCISE.edge
def _a_deviation_or_eps(x, gamma, beta, eps=1e-5):
    if eps == 0 and (x == x[..., :1]).all(axis=-1).any():
        raise ValueError("layer norm of a constant vector with eps=0 divides by zero")


@trace.steps("layer_norm")
def _steps(x, gamma, beta, eps=1e-5):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    normalised = (x - mean) / np.sqrt(var + eps)
    return [trace.Step("mean", "the mean over the last axis", mean),
            trace.Step("variance", "the population variance over the last axis", var,
                       (("the variance with ddof=1 (divided by d - 1)", var * d / max(d - 1, 1)),
                        ("the standard deviation, not the variance", np.sqrt(var)))),
            trace.Step("normalised", "(x - mean) / sqrt(variance + eps)", normalised,
                       (("(x - mean) / (sqrt(variance) + eps): eps outside the root",
                         (x - mean) / (np.sqrt(var) + eps)),
                        ("(x - mean) / (variance + eps): the square root is missing",
                         (x - mean) / (var + eps)))),
            trace.Step("output", "gamma * normalised + beta",
                       np.asarray(gamma) * normalised + np.asarray(beta))]
