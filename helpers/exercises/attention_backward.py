"""``attention_backward`` (notebook 12_training): the gradients of (masked) attention."""

from __future__ import annotations

import numpy as np

from helpers import training
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.course.judge import nested_problem

PARTS = ("dQ", "dK", "dV")


def _compare(case, expected, got):
    return nested_problem(EXERCISE, expected, got, parts=PARTS)


CONTRACT = Contract(
    args={"Q": Arg("[..., N_q, d_k]"), "K": Arg("[..., N_k, d_k]"), "V": Arg("[..., N_k, d_v]"),
          "mask": Arg("[N_q, N_k]", dtype="bool", optional=True),
          "d_out": Arg("[..., N_q, d_v]")},
    returns=(Arg("[..., N_q, d_k]"), Arg("[..., N_k, d_k]"), Arg("[..., N_k, d_v]")),
    batch=(0, 1, 2),
    invariants=("mask: True where a query may attend, or None; every query sees a key",))

EXERCISE = Exercise(
    "attention_backward", training.attention_backward, contract=CONTRACT, compare=_compare,
    refuse=("helpers.training.kernels:attention_back",),
    difficulty=3, importance=3, minutes=20,
    hints=(
        r"""Forward: $S = QK^T/\sqrt{d_k}$ (masked pairs set to $-\infty$), $P =
\mathrm{softmax}(S)$ row by row, $O = PV$. Backward, in reverse: $dV = P^T dO$,
$dP = dO\,V^T$; softmax's Jacobian-vector product, row by row, $dS = P \odot (dP -
\sum_j P_j\,dP_j)$; then $dQ = dS\,K/\sqrt{d_k}$ and $dK = dS^T Q/\sqrt{d_k}$. Recompute
$P$ with the same mask as the forward pass.""",
        r"""`np.swapaxes(A, -1, -2)` transposes the last two axes (batches and heads come first).

```python
Q, K, V, dO = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
if mask is not None:
    S = np.where(mask, S, -np.inf)
P = ___                                                # softmax over the last axis
dV = ___
dP = ___
dS = P * (dP - ___)
return ___, ___, dV
```""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(1206)
    causal = np.tril(np.ones((4, 4), dtype=bool))
    return [
        case("causal", "4 positions, causal mask, d_k = 3, d_v = 2",
             (r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2)), causal,
              r.normal(size=(4, 2)))),
        case("no_mask", "mask None, 3 queries and 5 keys",
             (r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 2)), None,
              r.normal(size=(3, 2)))),
        case("heads", "two heads [2, 4, 2], causal",
             (r.normal(size=(2, 4, 2)), r.normal(size=(2, 4, 2)), r.normal(size=(2, 4, 3)),
              causal, r.normal(size=(2, 4, 3)))),
        case("batch_heads", "[2, 2, 3, 4], causal", tuple(r.normal(size=(2, 2, 3, s)) for s in
             (4, 4, 4)) + (np.tril(np.ones((3, 3), dtype=bool)), r.normal(size=(2, 2, 3, 4)))),
        case("sharp", "large scores (a peaked softmax)",
             (5 * r.normal(size=(3, 2)), 5 * r.normal(size=(3, 2)), r.normal(size=(3, 2)),
              np.tril(np.ones((3, 3), dtype=bool)), r.normal(size=(3, 2))), hidden=True),
        case("mixed_scales", "3 queries and keys, causal; d_out of the first query 1e10 times "
             "the others", _mixed_scales(draw.rng(1216))),
    ]


def _mixed_scales(r):
    """Q, K, V, a causal mask and a d_out whose first row is 1e10 times larger than the
    others: a sum of d_out times the output is then too large for central differences to
    see the other queries move, for any step (the analytic gradient is as exact as anywhere)."""
    Q, K, V, d_out = (r.normal(size=(3, s)) for s in (4, 4, 2, 2))
    d_out[0] *= 1e10
    return Q, K, V, np.tril(np.ones((3, 3), dtype=bool)), d_out


def _variant(Q, K, V, mask, d_out, use_mask=True, rowsum=True, scale=True, dK_T=True,
             scale_dK=True):
    Q, K, V, dO = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
    c = 1 / np.sqrt(Q.shape[-1]) if scale else 1.0
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None and use_mask:
        S = np.where(mask, S, -np.inf)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    P = e / e.sum(axis=-1, keepdims=True)
    dV = np.swapaxes(P, -1, -2) @ dO
    dP = dO @ np.swapaxes(V, -1, -2)
    dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True)) if rowsum else P * dP
    dK = (np.swapaxes(dS, -1, -2) @ Q if dK_T else dS @ Q) * (c if scale_dK else 1.0)
    return dS @ K * c, dK, dV


@EXERCISE.mistake("numerical_gradient", "numerical, not analytic, gradient: central differences of the forward pass agree with the analytic gradient only where they are well conditioned; with one entry or row of d_out 1e10 times the others, the loss is so large that a step h moves it by less than its rounding. Write the derivative itself (the chain rule), not (f(x + h) - f(x - h)) / 2h")
def _numerical(Q, K, V, mask, d_out):
    from helpers.reference import scaled_dot_product_attention as attention

    Q, K, V, dy = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
    loss = lambda q, k, v: np.sum(dy * attention(q, k, v, mask)[0])        # noqa: E731
    return (training.numerical_gradient(lambda q: loss(q, K, V), Q),
            training.numerical_gradient(lambda k: loss(Q, k, V), K),
            training.numerical_gradient(lambda v: loss(Q, K, v), V))


@EXERCISE.mistake("mask_ignored", "the mask was not applied in the backward pass: recompute P "
                  "with the same mask as the forward pass")
def _no_mask(Q, K, V, mask, d_out):
    return _variant(Q, K, V, mask, d_out, use_mask=False)


@EXERCISE.mistake("softmax_no_rowsum", "softmax's gradient without its second term: "
                  "dS = P * (dP - sum_j P_j dP_j), not P * dP")
def _no_rowsum(Q, K, V, mask, d_out):
    return _variant(Q, K, V, mask, d_out, rowsum=False)


@EXERCISE.mistake("no_scale", "dQ and dK are missing the 1/sqrt(d_k) of the scores")
def _no_scale(Q, K, V, mask, d_out):
    return _variant(Q, K, V, mask, d_out, scale=False)


@EXERCISE.mistake("dK_not_transposed", "dK = dS^T Q / sqrt(d_k): the transpose of dS is missing")
def _dk(Q, K, V, mask, d_out):
    return _variant(Q, K, V, mask, d_out, dK_T=False)


@EXERCISE.mistake("dK_not_scaled", "dK is missing the 1/sqrt(d_k) of the scores (dQ has it): "
                  "dK = dS^T Q / sqrt(d_k)")
def _dk_unscaled(Q, K, V, mask, d_out):
    return _variant(Q, K, V, mask, d_out, scale_dK=False)
