"""``softmax`` (notebook 02_softmax): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _f, _naive_softmax, _softmax_any


CONTRACT = Contract(
    args={"z": Arg("[..., n]", lists=True, neg_inf=True),
          "axis": Arg(int, optional=True, low=-3, high=2,
                      values=lambda rng, shape, dims: int(rng.choice([-1, 0])))},
    returns=Arg("[..., n]"), batch=(0, 1, 2),
    invariants=("each slice along axis sums to 1", "finite for every finite input"))

EXERCISE = Exercise(
    'softmax', reference.softmax, contract=CONTRACT, refuse=("helpers.training.kernels:softmax_rows",),
    nan_hint='is the softmax stable? Subtract the maximum along the axis before exp',
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Exponentiate, then normalise, but shift first: $\sigma(\mathbf{z}) =
\sigma(\mathbf{z} - m)$ for any number $m$, so subtract the maximum $m$ of each slice along
`axis`. The largest exponent is then $e^0 = 1$ (no overflow) and the denominator is at
least 1 (no division by zero).""",
        r"""Reduce along `axis` and keep the reduced axis with length 1, so that broadcasting
pairs every entry with its own slice: for `z` of shape `[N, N]` and `axis=-1`,
`z.max(axis=axis, keepdims=True)` has shape `[N, 1]`. A skeleton:

```python
z = np.asarray(z, dtype=float)
z_max = ___          # like z, but length 1 along axis
e = np.exp(___)
return e / ___       # the sum of e along the same axis, also with keepdims=True
```""",
        r"""The shift and the exponential; the division by the sum along `axis` is yours:

```python
z = np.asarray(z, dtype=float)
e = np.exp(z - z.max(axis=axis, keepdims=True))
```""",
    ),
)


@EXERCISE.cases
def cases():
    cat_scores = ex.CAT_X[0] @ ex.CAT_X.T / 2.0
    z3 = np.array([[0.0, 1.0, 2.0], [-2000.0, -1999.0, -2001.0], [1e3, 1e3 + 1, 1e3 - 2]])
    return [
        case("slides_the", "the scaled scores of 'The' in the slides' example: "
             "[0.65, 0.54, 0.325, 0.135]", (cat_scores,), group="slides"),
        case("list", "a list of ints", ([1, 2, 3, 4],)),
        case("matrix", "a 3x3 matrix, softmax over each row (default axis=-1)",
             (np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [-1.0, 0.0, 4.0]]),)),
        case("axis_0", "a 3x2 matrix with axis=0 (each column sums to 1)",
             (np.array([[1.0, -1.0], [2.0, 0.5], [0.0, 3.0]]),), {"axis": 0}, group="axis"),
        case("large", "large entries [1000, 1001, 1002]", ([1000.0, 1001.0, 1002.0],),
             group="stability"),
        case("extremes", "rows at very different scales: around 0, around -2000, and up to 1e300",
             (np.array([[0.5, 1.0, -0.5], [-2000.0, -2001.0, -1999.5], [1e300, -1e300, 0.0]]),),
             group="stability"),
        case("rows_scales", "rows at very different scales (around 0, -2000 and 1000)", (z3,),
             group="stability", hidden=True),
        case("huge", "entries up to 1e300 in size", (np.array([[1e300, 1e299, -1e300],
                                                               [3e200, -3e200, 0.0]]),),
             group="stability", hidden=True),
        case("very_negative", "very negative entries (-1000 and below)",
             (np.array([-1000.0, -1001.0, -1003.0, -1000.5]),), group="stability", hidden=True),
        case("random_4x6", "a random 4x6 matrix, default axis", (draw.normal(21, (4, 6), 3.0),),
             hidden=True),
        case("single", "a single entry", (np.array([5.0]),), hidden=True),
        case("uniform", "equal entries (uniform output)", (np.full((2, 4), 2.0),), hidden=True),
        case("3d_axis_1", "a 2x3x4 array with axis=1", (draw.normal(22, (2, 3, 4), 2.0),), {"axis": 1},
             group="axis", hidden=True),
        case("3d_axis_-2", "a 2x4x3 array with axis=-2", (draw.normal(23, (2, 4, 3), 2.0),),
             {"axis": -2}, group="axis", hidden=True),
        case("3d_axis_0_large", "a 3x2x2 array with axis=0 and entries near 800",
             (800.0 + draw.normal(24, (3, 2, 2), 5.0),), {"axis": 0}, group="axis", hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_max_shift",
                  "exp overflows (or all entries underflow to 0) without the max shift: "
                  "subtract the maximum along the axis before exp, softmax(z) = softmax(z - max(z))")
def _softmax_no_shift(z, axis=-1):
    return _naive_softmax(z, axis)


@EXERCISE.mistake("global_max_shift",
                  "subtracted the maximum of the whole array instead of the maximum of each slice "
                  "along the axis (z.max(axis=axis, keepdims=True)): rows at very different scales "
                  "underflow to 0/0")
def _softmax_global_max(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max())
    return e / e.sum(axis=axis, keepdims=True)


@EXERCISE.mistake("subtract_min",
                  "subtracted the minimum instead of the maximum: exp still overflows on large inputs")
def _softmax_min(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.min(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@EXERCISE.mistake("axis_0", "softmax taken over the wrong axis (axis 0); use the axis argument")
def _softmax_axis0(z, axis=-1):
    return _softmax_any(z, axis=0)


@EXERCISE.mistake("ignores_axis",
                  "the axis argument is ignored (always the last axis): pass axis to max and sum")
def _softmax_ignores_axis(z, axis=-1):
    return _softmax_any(z, axis=-1)


@EXERCISE.mistake("whole_array",
                  "normalised over the whole array (sum without axis): each slice along the axis "
                  "must sum to 1")
def _softmax_whole(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max())
    return e / e.sum()


@EXERCISE.mistake("no_keepdims",
                  "the sum was taken without keepdims=True, so it divides the wrong entries "
                  "(broadcasting along the other axis)")
def _softmax_no_keepdims(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis)


@EXERCISE.mistake("max_no_keepdims",
                  "the maximum was taken without keepdims=True, so each row subtracts another row's "
                  "maximum (broadcasting along the other axis)")
def _softmax_max_no_keepdims(z, axis=-1):
    z = _f(z)
    e = np.exp(z - z.max(axis=axis))
    return e / e.sum(axis=axis, keepdims=True)


@EXERCISE.mistake("max_wrong_axis",
                  "the maximum was taken along another axis than the sum: subtract the maximum of "
                  "the same slice that is summed (z.max(axis=axis, keepdims=True))")
def _softmax_max_wrong_axis(z, axis=-1):
    z = _f(z)
    other = 0 if axis % z.ndim != 0 else -1
    e = np.exp(z - z.max(axis=other, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@EXERCISE.mistake("divided_by_max",
                  "divided by the largest exp instead of the sum of the exps: the entries must sum to 1")
def _softmax_by_max(z, axis=-1):
    z = _f(z)
    return np.exp(z - z.max(axis=axis, keepdims=True))


@EXERCISE.mistake("no_exp", "forgot the exp: divided z by the sum of z")
def _softmax_no_exp(z, axis=-1):
    z = _f(z)
    return z / z.sum(axis=axis, keepdims=True)


@EXERCISE.mistake("log_softmax",
                  "returned log-probabilities (z - logsumexp(z)) instead of probabilities")
def _softmax_log(z, axis=-1):
    return np.log(_softmax_any(z, axis=axis))


# What the contract cannot say: checked when a learner calls helpers.softmax

@EXERCISE.edge
def _a_distribution_exists(z, axis=-1):
    if not -z.ndim <= axis < z.ndim:
        raise ValueError(f"axis {axis} is out of range for z of shape {z.shape}")
    if z.shape[axis] == 0:
        raise ValueError(f"softmax over an empty axis {axis} (z has shape {z.shape})")
    if np.isneginf(z).all(axis=axis).any():
        raise ValueError("softmax is undefined where every entry along the axis is -inf")


def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@trace.steps("softmax")
def _steps(z, axis=-1):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    z = np.asarray(z, dtype=float)
    with np.errstate(all="ignore"):
        shifted = z - z.max(axis=axis, keepdims=True)
        e = np.exp(shifted)
        total = e.sum(axis=axis, keepdims=True)
        others = [k for k in range(z.ndim) if k != axis % max(z.ndim, 1)]
        variants = [("a sum over the whole array, not along axis", e / e.sum())] + [
            (f"a softmax along axis {k}, not along axis", _softmax(z, k)) for k in others[-1:]]
    return [trace.Step("shifted", "z - max(z) along axis", shifted,
                       (("z minus the maximum of the whole array, not along axis",
                         z - z.max()),)),
            trace.Step("exponentials", "exp(z - max(z))", e),
            trace.Step("output", "the exponentials over their sum along axis", e / total,
                       tuple(variants))]
