"""``multi_head_attention`` (notebook 06_multi_head_attention): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _mha
from helpers.exercises.merge_heads import _merge_interleaved
from helpers.exercises.merge_heads import _merge_reshape
from helpers.exercises.split_heads import _split_interleaved
from helpers.exercises.split_heads import _split_reshape


CONTRACT = Contract(
    args={"X": Arg("[N, d]", lists=True), "W_Q": Arg("[d, d]", lists=True),
          "W_K": Arg("[d, d]", lists=True), "W_V": Arg("[d, d]", lists=True),
          "W_O": Arg("[d, d]", lists=True), "n_heads": Arg("n_heads"),
          "causal": Arg(bool, optional=True)},
    returns=Arg("[N, d]"), where=("d % n_heads == 0", "N >= 1"), serves={"X": "[..., N, d]"},
    sizes={"d": (2, 4, 6, 8), "n_heads": (1, 2, 3, 4)})

EXERCISE = Exercise(
    'multi_head_attention', reference.multi_head_attention, contract=CONTRACT, refuse=("helpers.training.kernels:mha_forward",), uses=('project_qkv', 'split_heads', 'merge_heads', 'scaled_dot_product_attention', 'causal_mask', 'softmax'),
    difficulty=2, importance=3, minutes=20,
    hints=(
        r"""Four steps, as in the equation: project once with the full matrices
($Q = XW_Q$, and so on); cut $Q$, $K$ and $V$ into heads (column blocks); run scaled
dot-product attention in every head, each with its own scale $1/\sqrt{d_h}$ and the causal
mask when `causal` is true; glue the heads back side by side and multiply by $W_O$. Scaling
by $\sqrt{d_{model}}$ is the classic slip: each head's keys have only $d_h$ entries.""",
        r"""The functions at hand and their shapes: `project_qkv` gives three `[N, d_model]`
arrays; your `split_heads` makes each `[n_heads, N, d_h]`;
`scaled_dot_product_attention` accepts that leading head axis (it scales by the last axis
of its queries, $d_h$) and an `[N, N]` mask, which applies to every head; `merge_heads`
gives `[N, d_model]` back.

```python
Q, K, V = project_qkv(X, W_Q, W_K, W_V)      # each [N, d_model]
Qh, Kh, Vh = ___                             # each [n_heads, N, d_h]
mask = ___ if causal else None               # [N, N] or None
heads, weights = scaled_dot_product_attention(___)
return ___                                   # [N, d_model]
```""",
        r"""Everything up to the head outputs; the way back to `[N, d_model]` and $W_O$
are yours:

```python
Q, K, V = project_qkv(X, W_Q, W_K, W_V)
Qh, Kh, Vh = (split_heads(M, n_heads) for M in (Q, K, V))
mask = causal_mask(len(X)) if causal else None
heads, _ = scaled_dot_product_attention(Qh, Kh, Vh, mask)   # [n_heads, N, d_h]
```""",
    ),
)


@EXERCISE.cases
def cases():
    W_O = draw.normal(141, (4, 4), 0.5, decimals=1)
    return [
        case("slides_cat", "X and W_Q, W_K, W_V of 'The cat sat <end>', a random W_O, "
             "n_heads = 2, causal", (ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V, W_O, 2),
             group="slides"),
        case("not_causal", "3 tokens, d_model = 4, n_heads = 2, causal=False",
             (*draw.mha_args(142, 3, 4, decimals=1), 2), {"causal": False}, group="causal"),
        case("h3_causal", "5 tokens, d_model = 6, n_heads = 3, causal", (*draw.mha_args(147, 5, 6), 3),
             group="heads", hidden=True),
        case("h2_not_causal", "4 tokens, d_model = 6, n_heads = 2, causal=False",
             (*draw.mha_args(152, 4, 6), 2), {"causal": False}, group="causal", hidden=True),
        case("h4", "3 tokens, d_model = 8, n_heads = 4, causal=True passed explicitly",
             (*draw.mha_args(157, 3, 8), 4), {"causal": True}, group="heads", hidden=True),
        case("h1", "4 tokens, d_model = 4, n_heads = 1", (*draw.mha_args(162, 4, 4), 1), group="heads",
             hidden=True),
        case("large", "large inputs (scores in the hundreds), n_heads = 2",
             (*draw.mha_args(167, 4, 4, scale=15.0), 2), group="stability", hidden=True),
        case("lists", "plain lists, 2 tokens, d_model = 2, n_heads = 2",
             ([[1.0, 2.0], [0.5, -1.0]], [[1.0, 0.0], [0.5, 1.0]], [[0.5, 1.0], [1.0, 0.0]],
              [[1.0, 1.0], [0.0, 2.0]], [[1.0, -1.0], [0.5, 0.5]], 2), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("split_reshape_without_transpose",
                  "the heads were split by reshaping [N, d_model] straight to [n_heads, N, d_h] "
                  "(rows of different tokens get mixed); reshape to [N, n_heads, d_h] and swap axes")
def _mha_split_reshape(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, split=_split_reshape)


@EXERCISE.mistake("merge_reshape_without_transpose",
                  "the heads were merged by reshaping [n_heads, N, d_h] straight to [N, d_model]; "
                  "swap the first two axes first")
def _mha_merge_reshape(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, merge=_merge_reshape)


@EXERCISE.mistake("interleaved_heads",
                  "head c took every n_heads-th column; it takes the block of columns c*d_h : (c+1)*d_h")
def _mha_interleaved(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, split=_split_interleaved,
                merge=_merge_interleaved)


@EXERCISE.mistake("missing_W_O",
                  "the output projection W_O is missing: multiply the merged heads by W_O")
def _mha_no_wo(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, use_W_O=False)


@EXERCISE.mistake("scale_sqrt_d_model",
                  "scores were divided by sqrt(d_model); each head divides by sqrt(d_h) = "
                  "sqrt(d_model / n_heads)")
def _mha_sqrt_dmodel(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, scale=np.sqrt(np.shape(X)[-1]))


@EXERCISE.mistake("no_scale", "scores were not divided by sqrt(d_h)")
def _mha_no_scale(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, scale=1.0)


@EXERCISE.mistake("not_causal",
                  "no causal mask although causal=True: a token must not attend to later tokens")
def _mha_not_causal(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, mask_on=False)


@EXERCISE.mistake("always_causal",
                  "a causal mask was applied although causal=False: use the mask only when causal is True")
def _mha_always_causal(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, mask_on=True)


@EXERCISE.mistake("one_head",
                  "n_heads was ignored (one head over all d_model columns, scaled by sqrt(d_model)): "
                  "split Q, K, V into n_heads heads of width d_h")
def _mha_one_head(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, 1, causal)


@EXERCISE.mistake("softmax_axis_0",
                  "softmax taken over the wrong axis (axis 0): each query's weights must sum to 1")
def _mha_axis0(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return _mha(X, W_Q, W_K, W_V, W_O, n_heads, causal, axis=0)


def _rows(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@trace.steps("multi_head_attention")
def _steps(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong.
    The heads' steps are the first head's (a loop over heads holds it first)."""
    X, W_Q, W_K, W_V, W_O = (np.asarray(a, dtype=float) for a in (X, W_Q, W_K, W_V, W_O))
    if X.ndim != 2:
        raise ValueError("steps are declared for one sequence [N, d]")
    N, d = X.shape
    d_h = d // n_heads
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    raw = Q[:, :d_h] @ K[:, :d_h].T
    tril = np.tril(np.ones((N, N), dtype=bool))
    mask = (lambda s: np.where(tril, s, -np.inf)) if causal else (lambda s: s)
    weights = _rows(mask(raw / np.sqrt(d_h)))
    other = (lambda s: s) if causal else (lambda s: np.where(tril, s, -np.inf))
    return [trace.Step("queries", "X W_Q", Q), trace.Step("keys", "X W_K", K),
            trace.Step("values", "X W_V", V),
            trace.Step("first head's weights",
                       "softmax(Q₁ K₁ᵀ / √d_h" + (", causally masked)" if causal else ")"),
                       weights,
                       (("softmax(Q₁ K₁ᵀ): the 1/√d_h scaling is missing", _rows(mask(raw))),
                        ("softmax(Q₁ K₁ᵀ / √d_model): scaled by the model width, not d_h",
                         _rows(mask(raw / np.sqrt(d)))),
                        ("the weights " + ("without the causal mask" if causal else
                                           "with a causal mask although causal=False"),
                         _rows(other(raw / np.sqrt(d_h)))))),
            trace.Step("output", "the heads side by side, times W_O",
                       _head_by_head(X, W_Q, W_K, W_V, W_O, n_heads, causal))]


def _head_by_head(X, W_Q, W_K, W_V, W_O, n_heads, causal):
    """The output, head by head (the reference is refused while this exercise is checked)."""
    N, d = X.shape
    d_h = d // n_heads
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    tril = np.tril(np.ones((N, N), dtype=bool))
    heads = []
    for c in range(n_heads):
        cols = slice(c * d_h, (c + 1) * d_h)
        s = Q[:, cols] @ K[:, cols].T / np.sqrt(d_h)
        heads.append(_rows(np.where(tril, s, -np.inf) if causal else s) @ V[:, cols])
    return np.concatenate(heads, axis=1) @ W_O
