"""``scaled_dot_product_attention`` (notebook 04_queries_keys_values): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _attention, _f, _naive_softmax


CONTRACT = Contract(
    args={"Q": Arg("[..., N_q, d_k]", lists=True), "K": Arg("[..., N_k, d_k]", lists=True),
          "V": Arg("[..., N_k, d_v]", lists=True),
          "mask": Arg("[..., N_q, N_k]", dtype="bool", lists=True, optional=True,
                      broadcasts=True)},
    returns=(Arg("[..., N_q, d_v]"), Arg("[..., N_q, N_k]")), batch=(0,),
    invariants=("masked keys get weight 0", "each row of weights sums to 1"))

EXERCISE = Exercise('scaled_dot_product_attention', reference.scaled_dot_product_attention, contract=CONTRACT, uses=('softmax',), output='tuple', parts=('output', 'weights'),
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Three steps, as in the equation: the scores $QK^\top/\sqrt{d_k}$ (one row per query, one
column per key), a softmax along each row, then the weighted sum of the value rows. The
mask acts on the *scores*: a score of $-\infty$ becomes a weight of exactly
$e^{-\infty} = 0$, and the softmax still makes each row sum to 1.""",
        r"""`[N_q, d_k] @ [d_k, N_k] -> [N_q, N_k]`. $d_k$ is `Q.shape[-1]`: dividing by the width of
`V` or of the model is a classic bug (the checks use $d_k \ne d_v$). `np.where(condition,
a, b)` takes `a` where the condition holds and `b` elsewhere. Zeroing weights *after* the
softmax leaves rows that no longer sum to 1.

```python
scores = ___ / np.sqrt(___)              # [N_q, N_k]
if mask is not None:
    scores = np.where(___, ___, -np.inf)
weights = ___                            # [N_q, N_k], rows sum to 1
return ___, weights                      # output: [N_q, d_v]
```""",
    ),
)


@EXERCISE.cases
def cases():
    Q, K, V = reference.project_qkv(ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V)
    wash_K = np.vstack([ex.WASH_X1 @ ex.WASH_W_K, ex.WASH_K_REST])
    wash_q = (ex.WASH_X1 @ ex.WASH_W_Q)[None, :]
    aaba_X = ex.AABA_E[ex.AABA_IDS]
    aaba = (np.tile(ex.AABA_QUERY, (4, 1)), aaba_X @ ex.AABA_W_K, aaba_X)
    causal3 = np.tril(np.ones((3, 3), dtype=bool))
    causal5 = np.tril(np.ones((5, 5), dtype=bool))
    one_key = np.zeros((4, 6), dtype=bool)
    one_key[np.arange(4), [2, 0, 5, 3]] = True
    one_key[1, 1] = True
    n = draw.normal
    return [
        case("slides_cat",
             "Q, K, V of 'The cat sat <end>' (from the slides' W_Q, W_K, W_V), no mask", (Q, K, V),
             group="slides"),
        case("slides_wash",
             "'we wash our cats': the query of 'we' against 4 keys (N_q = 1, N_k = 4)",
             (wash_q, wash_K, ex.WASH_V), group="slides"),
        case("dk_dv_nq_nk", "N_q = 2 queries, N_k = 4 keys, d_k = 3, d_v = 5",
             (n(61, (2, 3), decimals=1), n(62, (4, 3), decimals=1), n(63, (4, 5), decimals=1)),
             group="shapes"),
        case("causal_mask", "3 tokens with a causal mask (a bool array), d_k = 2, d_v = 3",
             (n(64, (3, 2), decimals=1), n(65, (3, 2), decimals=1), n(66, (3, 3), decimals=1)),
             {"mask": causal3}, group="mask"),
        case("large_scores_masked",
             "large queries and keys (scores in the thousands) with a causal mask",
             (n(93, (3, 4), 100.0), n(94, (3, 4), 100.0), n(95, (3, 2))),
             {"mask": causal3}, group="stability"),
        case("slides_aaba",
             "'A A B A': every query asks for B, keys are 10x the one-hot embeddings", aaba,
             group="slides", hidden=True),
        case("tall_keys", "N_q = 3, N_k = 6, d_k = 2, d_v = 4",
             (n(67, (3, 2)), n(68, (6, 2)), n(69, (6, 4))), group="shapes", hidden=True),
        case("many_queries", "N_q = 5, N_k = 2, d_k = 4, d_v = 1",
             (n(70, (5, 4)), n(71, (2, 4)), n(72, (2, 1))), group="shapes", hidden=True),
        case("random_mask", "a random bool mask, N_q = 3, N_k = 5, d_k = 4, d_v = 2",
             (n(73, (3, 4)), n(74, (5, 4)), n(75, (5, 2))), {"mask": draw.valid_mask(76, 3, 5)},
             group="mask", hidden=True),
        case("causal_5", "a causal mask on 5 tokens, d_k = 4, d_v = 2",
             (n(77, (5, 4)), n(78, (5, 4)), n(79, (5, 2))), {"mask": causal5}, group="mask",
             hidden=True),
        case("one_key_rows", "a mask that lets most queries see a single key",
             (n(80, (4, 3)), n(81, (6, 3)), n(82, (6, 3))), {"mask": one_key}, group="mask",
             hidden=True),
        case("large_scores", "large queries and keys (scores in the thousands)",
             (n(83, (3, 4), 30.0), n(84, (4, 4), 30.0), n(85, (4, 2))), group="stability",
             hidden=True),
        case("rows_scales", "queries at very different scales (1e-2, 1, 30), N_k = 5, d_v = 3",
             (n(89, (3, 4)) * np.array([[1e-2], [1.0], [30.0]]), n(90, (5, 4), 3.0),
              n(91, (5, 3))), {"mask": draw.valid_mask(92, 3, 5)}, group="stability", hidden=True),
        case("large_masked", "large scores with a causal mask",
             (n(86, (3, 4), 30.0), n(87, (3, 4), 30.0), n(88, (3, 3))), {"mask": causal3},
             group="stability", hidden=True),
        case("lists", "plain lists, N_q = 2, N_k = 3, d_k = 2, d_v = 1",
             ([[1.0, 0.5], [-1.0, 2.0]], [[0.5, 0.5], [1.0, -1.0], [2.0, 0.0]],
              [[1.0], [2.0], [3.0]]), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_scale", "scores were not divided by sqrt(d_k)")
def _sdpa_no_scale(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=1.0)


@EXERCISE.mistake("scale_sqrt_d_v",
                  "scores were divided by sqrt(d_v) (the width of V); the scale is sqrt(d_k) = "
                  "sqrt(Q.shape[-1])")
def _sdpa_sqrt_dv(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=np.sqrt(np.shape(V)[-1]))


@EXERCISE.mistake("scale_d_k", "scores were divided by d_k; the scale is sqrt(d_k)")
def _sdpa_dk(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=float(np.shape(Q)[-1]))


@EXERCISE.mistake("scale_sqrt_n_k",
                  "scores were divided by sqrt(N_k) (the number of keys); the scale is sqrt(d_k)")
def _sdpa_sqrt_nk(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=np.sqrt(np.shape(K)[0]))


@EXERCISE.mistake("scale_multiplied", "scores were multiplied by sqrt(d_k); divide by it")
def _sdpa_times(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale=1.0 / np.sqrt(np.shape(Q)[-1]))


@EXERCISE.mistake("scale_after_softmax",
                  "divided the weights by sqrt(d_k) after the softmax; divide the scores before it")
def _sdpa_scale_after(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, scale_after_softmax=True)


@EXERCISE.mistake("softmax_axis_0",
                  "softmax taken over the wrong axis (axis 0, over queries): each row of weights "
                  "(one query, all keys) must sum to 1")
def _sdpa_axis0(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, axis=0)


@EXERCISE.mistake("scores_transposed",
                  "scores computed as K @ Q.T; they are Q @ K.T (one row per query)")
def _sdpa_scores_t(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, transpose_scores=True)


@EXERCISE.mistake("mask_after_softmax",
                  "mask applied after the softmax (weights zeroed, the rest no longer sums to 1): "
                  "set masked scores to -inf before the softmax")
def _sdpa_mask_after(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="after_softmax")


@EXERCISE.mistake("mask_inverted",
                  "mask inverted: True means 'may attend', so keep the scores where mask is True "
                  "and set the others to -inf")
def _sdpa_mask_inverted(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="inverted")


@EXERCISE.mistake("mask_inverted_large_negative",
                  "mask inverted: True means 'may attend', so keep the scores where mask is True "
                  "and push the others to a large negative number")
def _sdpa_mask_inverted_ln(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="inverted_large_negative")


# The usual way to write it: np.where(~mask, scores, -1e9). A row whose every key may be
# attended becomes a row of equal constants, i.e. uniform weights, unlike scores - 1e9
# above, which keeps that row's softmax; elsewhere both give the same output.
@EXERCISE.mistake("mask_inverted_constant_fill",
                  "mask inverted: True means 'may attend', so fill the scores where mask is False "
                  "with a large negative number, np.where(mask, scores, -1e9), not those where it "
                  "is True")
def _sdpa_mask_inverted_fill(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="inverted_constant_fill")


@EXERCISE.mistake("mask_ignored", "the mask was ignored: masked pairs must get weight 0")
def _sdpa_mask_ignored(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="ignored")


@EXERCISE.mistake("mask_zero_scores",
                  "masked scores were set to 0 (or multiplied by the mask); exp(0) = 1 still gives "
                  "them weight: set them to -inf (or a large negative number)")
def _sdpa_mask_zero(Q, K, V, mask=None):
    return _attention(Q, K, V, mask, mask_mode="zero")


@EXERCISE.mistake("softmax_whole_matrix",
                  "the softmax normalised the whole score matrix at once; normalise each row "
                  "(axis=-1)")
def _sdpa_whole(Q, K, V, mask=None):
    Q, K, V = _f(Q), _f(K), _f(V)
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    e = np.exp(s - s.max())
    w = e / e.sum()
    return w @ V, w


@EXERCISE.mistake("output_transposed",
                  "the output is transposed: it is weights @ V, shape [N_q, d_v]")
def _sdpa_out_t(Q, K, V, mask=None):
    out, w = _attention(Q, K, V, mask)
    return out.T, w


@EXERCISE.mistake("tuple_swapped", "returned (weights, output); the order is (output, weights)")
def _sdpa_swapped(Q, K, V, mask=None):
    out, w = _attention(Q, K, V, mask)
    return w, out


@EXERCISE.mistake("unstable_softmax",
                  "the softmax is not stable (exp overflowed): subtract the row maximum before exp")
def _sdpa_unstable(Q, K, V, mask=None):
    Q, K, V = _f(Q), _f(K), _f(V)
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    w = _naive_softmax(s)
    return w @ V, w


# What the contract cannot say: checked when a learner calls
# helpers.scaled_dot_product_attention

@EXERCISE.edge
def _every_query_sees_a_key(Q, K, V, mask=None):
    empty = None if mask is None else ~mask.any(axis=-1)         # [..., N_q]
    if empty is not None and empty.any():
        row = tuple(int(i) for i in np.argwhere(empty)[0])
        raise ValueError(f"mask lets query {row} attend to no key at all")


def _softmax_rows(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@trace.steps("scaled_dot_product_attention")
def _steps(Q, K, V, mask=None):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    raw = Q @ np.swapaxes(K, -1, -2)                              # [..., N_q, N_k]
    scaled = raw / np.sqrt(Q.shape[-1])
    masked = scaled if mask is None else np.where(mask, scaled, -np.inf)
    unscaled = raw if mask is None else np.where(mask, raw, -np.inf)
    weights = _softmax_rows(masked)
    out = [trace.Step("scores", "Q Kᵀ", raw),
           trace.Step("scaled scores", "scores / √d_k", scaled,
                      (("scores / √d_v (the scale is √d_k, d_k = Q.shape[-1])",
                        raw / np.sqrt(V.shape[-1])),))]
    if mask is not None:
        out.append(trace.Step("masked scores", "the scaled scores, -inf where the mask is False",
                              masked))
    out.append(trace.Step("weights", "softmax(scaled scores) over the keys (last axis)",
                          weights,
                          (("softmax(scores): the scaling is missing", _softmax_rows(unscaled)),
                           ("a softmax over the queries (axis -2), not the keys",
                            _softmax_rows(masked, axis=-2)))))
    out.append(trace.Step("output", "weights V", weights @ V))
    return out
