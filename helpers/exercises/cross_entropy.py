"""``cross_entropy`` (notebook 08_language_model): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _f, _ids, _naive_softmax, _nll_rows


CONTRACT = Contract(
    args={"logits": Arg("[N, V]", lists=True),
          "targets": Arg("[N]", dtype="int", low=0, high="V - 1", lists=True,
                         values=lambda rng, shape, dims: rng.integers(0, dims["V"], shape))},
    returns=Arg(float), where=("N >= 1",),
    invariants=("0 <= targets < V", "finite for large logits"))

EXERCISE = Exercise(
    'cross_entropy', reference.cross_entropy, contract=CONTRACT, uses=('softmax',), output='scalar',
    # a loss of 0 (a confident right prediction) computed with a small eps in the log
    # (log(sum + 1e-7)) is off by 1e-7: within float64 noise of the right answer
    atol=1e-6, nan_hint='is it stable? Compute log softmax(z)[t] = z[t] - logsumexp(z) with the maximum subtracted, rather than log(softmax(z))',
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Per row, the surprise is $\log \sum_v e^{u_{i,v}} - u_{i,t_i}$; the result is
its mean over the rows. Compute the log-sum-exp with the maximum trick,
$\log \sum_v e^{u_v} = m + \log \sum_v e^{u_v - m}$ with $m = \max_v u_v$, so that no
exponent is positive. `np.log(softmax(...))` is not enough: a probability that underflows
to 0 gives `-inf`.""",
        r"""Shapes: `logits` `[N, V]`, `targets` `[N]`. `logits[np.arange(N), targets]`
picks one entry per row, the target's logit (shape `[N]`).

```python
logits = np.asarray(logits, dtype=float)      # [N, V]
targets = np.asarray(targets, dtype=int)      # [N]
m = logits.max(axis=-1, keepdims=True)        # [N, 1]
log_sum_exp = ___                             # [N]
target_logits = ___                           # [N]
return float(___)
```""",
        r"""The log-sum-exp of every row; picking the targets and the mean are yours:

```python
m = logits.max(axis=-1, keepdims=True)
log_sum_exp = m[:, 0] + np.log(np.exp(logits - m).sum(axis=-1))    # [N]
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("small", "2 rows, V = 3", (np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]),
                                       np.array([0, 1]))),
        case("lists", "lists, 3 rows, V = 4, targets not at the largest logit",
             ([[1.0, 2.0, 0.0, -1.0], [0.0, 0.0, 3.0, 1.0], [2.0, -2.0, 1.0, 0.0]], [3, 0, 1])),
        case("large", "large logits (around 1000)",
             (np.array([[1000.0, 0.0, -1000.0], [0.0, 1000.0, 2.0]]), np.array([1, 2])),
             group="stability"),
        case("huge_1e200", "logits up to 1e200", (np.array([[1e200, 0.0, -1e200]]),
                                                      np.array([1]))),
        case("huge", "logits up to 1e300", (np.array([[1e300, 0.0, -1e300], [1e3, 1e10, 1e100]]),
                                            np.array([1, 0])), group="stability", hidden=True),
        case("rows_scales", "rows at very different scales (1e-3 to 1e3)",
             (draw.normal(261, (3, 5)) * np.array([[1e-3], [1.0], [1e3]]), np.array([4, 0, 2])),
             group="scales", hidden=True),
        case("very_negative", "very negative logits (-1000 and below)",
             (np.array([[-1000.0, -1002.0, -1001.0]]), np.array([1])), group="stability",
             hidden=True),
        case("one_row", "a single row, V = 6", (draw.normal(262, (1, 6)), np.array([5])), hidden=True),
        case("random", "6 rows, V = 10",
             (draw.normal(263, (6, 10), 2.0), draw.rng(264).integers(0, 10, 6)), hidden=True),
        case("confident_right", "large logits with the target at the largest one",
             (np.array([[50.0, 0.0, -3.0], [1.0, 40.0, 2.0]]), np.array([0, 1])),
             group="stability", hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("sum_not_mean",
                  "summed over the rows; the cross-entropy is the mean over rows")
def _ce_sum(logits, targets):
    return float(_nll_rows(logits, targets).sum())


@EXERCISE.mistake("naive_softmax_log",
                  "log of a softmax computed without the max shift: exp overflows on large logits. "
                  "Use log softmax(z)[t] = z[t] - logsumexp(z), logsumexp(z) = m + log(sum(exp(z - "
                  "m))), m = max(z)")
def _ce_naive(logits, targets):
    p = _naive_softmax(logits)
    t = _ids(targets)
    return float(-np.log(p[np.arange(len(t)), t]).mean())


@EXERCISE.mistake("log_of_softmax",
                  "took the log of a (stable) softmax: a probability that underflows to 0 gives "
                  "log(0) = -inf. Compute log softmax directly: z[t] - logsumexp(z) with the max "
                  "subtracted")
def _ce_log_softmax(logits, targets):
    p = reference.softmax(logits, axis=-1)
    t = _ids(targets)
    return float(-np.log(p[np.arange(len(t)), t]).mean())


@EXERCISE.mistake("shifted_targets",
                  "shifted the targets inside the function (logits[:-1] with targets[1:]); the "
                  "caller already aligned them: row i of logits goes with targets[i]")
def _ce_shifted(logits, targets):
    return float(_nll_rows(_f(logits)[:-1], _ids(targets)[1:]).mean())


@EXERCISE.mistake("wrong_sign",
                  "the sign is wrong: the loss is the mean of -log p (positive), not of log p")
def _ce_sign(logits, targets):
    return float(-_nll_rows(logits, targets).mean())


@EXERCISE.mistake("log2", "used log base 2; the course uses the natural log (nats)")
def _ce_log2(logits, targets):
    return float(_nll_rows(logits, targets).mean() / np.log(2))


@EXERCISE.mistake("index_matrix",
                  "indexed logp[:, targets], which picks an [N, N] matrix; pick one entry per row: "
                  "logp[np.arange(N), targets]")
def _ce_matrix(logits, targets):
    z = _f(logits)
    logp = z - (z.max(axis=-1, keepdims=True) + np.log(
        np.exp(z - z.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)))
    return float(-logp[:, _ids(targets)].mean())


@EXERCISE.mistake("mean_over_vocab",
                  "averaged -log p over the whole vocabulary; only the target's -log p counts in each row")
def _ce_mean_vocab(logits, targets):
    z = _f(logits)
    m = z.max(axis=-1, keepdims=True)
    logp = z - (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))
    return float(-logp.mean())


@EXERCISE.mistake("softmax_axis_0",
                  "softmax taken over the wrong axis (axis 0); each row's probabilities over the "
                  "vocabulary must sum to 1")
def _ce_axis0(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    p = reference.softmax(z, axis=0)
    return float(-np.log(p[np.arange(len(t)), t]).mean())


@EXERCISE.mistake("naive_logsumexp",
                  "logsumexp computed as log(sum(exp(z))) without the max shift: exp overflows on "
                  "large logits. Use logsumexp(z) = m + log(sum(exp(z - m))), m = max(z)")
def _ce_naive_lse(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    return float((np.log(np.exp(z).sum(axis=-1)) - z[np.arange(len(t)), t]).mean())


@EXERCISE.mistake("no_softmax",
                  "took -log of the target's logit itself; logits are not probabilities: use "
                  "-log softmax(z)[t] = logsumexp(z) - z[t]")
def _ce_no_softmax(logits, targets):
    z = _f(logits)
    t = _ids(targets)
    return float(-np.log(z[np.arange(len(t)), t]).mean())


@trace.steps("cross_entropy")
def _steps(logits, targets):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    z = np.asarray(logits, dtype=float)
    t = np.asarray(targets)
    with np.errstate(all="ignore"):
        shifted = z - z.max(axis=-1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        naive = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
        nll = -logp[np.arange(len(t)), t]
        return [trace.Step("probabilities", "softmax(logits) along the last axis",
                           np.exp(logp),
                           (("exp(logits) / sum exp(logits) without the max shift "
                             "(it overflows)", naive),)),
                trace.Step("log-probabilities", "log softmax(logits), computed as "
                           "(z - max) - log sum exp(z - max) (never the log of a rounded 0)",
                           logp, (("log(softmax(logits)): -inf where a probability "
                                   "rounded to 0", np.log(np.exp(logp))),)),
                trace.Step("losses", "-log p[target] of each row", nll),
                trace.Step("output", "the mean of the losses", np.asarray(nll.mean()),
                           (("the sum of the losses, not their mean",
                             np.asarray(nll.sum())),))]
