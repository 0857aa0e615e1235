"""``cross_attention`` (notebook 05_masking_cross_attention): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case, trace
from helpers.exercises._variants import _xattn


CONTRACT = Contract(
    args={"X_dec": Arg("[N_dec, d_dec]", lists=True),
          "H_enc": Arg("[N_enc, d_enc]", lists=True), "W_Q": Arg("[d_dec, d_k]", lists=True),
          "W_K": Arg("[d_enc, d_k]", lists=True), "W_V": Arg("[d_enc, d_v]", lists=True)},
    returns=Arg("[N_dec, d_v]"))

EXERCISE = Exercise('cross_attention', reference.cross_attention, contract=CONTRACT, uses=('project_qkv', 'scaled_dot_product_attention'),
    difficulty=2, importance=3, minutes=10,
    hints=(
        r"""The attention of notebook 04 with one change: the queries come from the decoder, the
keys and values from the encoder. So the weight matrix is $[N_{dec}, N_{enc}]$, not square,
and no mask is needed.""",
        r"""Three matrix products, then `scaled_dot_product_attention`, which returns a tuple
`(output, weights)`. `project_qkv` does not fit here: it projects a single sequence.

```python
Q = ___ @ W_Q            # [N_dec, d_k]
K = ___                  # [N_enc, d_k]
V = ___                  # [N_enc, d_v]
output, weights = ___
return ___               # [N_dec, d_v]
```""",
    ),
)


@EXERCISE.cases
def cases():
    n = draw.normal
    return [
        case("slides_cat", "decoder: 'The cat' (2 rows of the slides' X); encoder: all 4 rows; "
             "the slides' W_Q, W_K, W_V",
             (ex.CAT_X[:2], ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V), group="slides"),
        case("shapes", "N_dec = 2, N_enc = 5, d = 3, d_enc = 4, d_k = 2, d_v = 3",
             tuple(n(91 + i, s, decimals=1) for i, s in
                   enumerate([(2, 3), (5, 4), (3, 2), (4, 2), (4, 3)])), group="shapes"),
        case("more_dec", "N_dec = 4 > N_enc = 3, d = 5, d_enc = 2, d_k = 3, d_v = 2",
             tuple(n(96 + i, s) for i, s in enumerate([(4, 5), (3, 2), (5, 3), (2, 3), (2, 2)])),
             group="shapes", hidden=True),
        case("one_query", "a single decoder token, N_enc = 6",
             tuple(n(101 + i, s) for i, s in enumerate([(1, 4), (6, 4), (4, 3), (4, 3), (4, 5)])),
             group="shapes", hidden=True),
        case("square", "N_dec = N_enc = 3 and d = d_enc = 3 (all weights 3x3)",
             tuple(n(106 + i, s) for i, s in enumerate([(3, 3), (3, 3), (3, 3), (3, 3), (3, 3)])),
             hidden=True),
        case("large", "large inputs (scores in the thousands)",
             tuple(n(111 + i, s, sc) for i, (s, sc) in
                   enumerate([((2, 4), 20.0), ((3, 4), 20.0), ((4, 4), 1.0), ((4, 4), 1.0),
                              ((4, 2), 1.0)])), group="stability", hidden=True),
        case("lists", "plain lists, N_dec = 2, N_enc = 2, d = d_enc = 2, d_k = d_v = 2",
             ([[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [-1.0, 0.5]], [[1.0, 0.5], [0.0, 1.0]],
              [[0.5, 0.0], [1.0, 1.0]], [[1.0, -1.0], [0.0, 2.0]]), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("roles_swapped",
                  "queries came from the encoder and keys/values from the decoder; it is the other "
                  "way round: Q = X_dec W_Q, K = H_enc W_K, V = H_enc W_V")
def _xa_swapped(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, q_from="enc", kv_from="dec")[0]


@EXERCISE.mistake("self_attention",
                  "keys and values came from the decoder (that is self-attention); take them from H_enc")
def _xa_self(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, kv_from="dec")[0]


@EXERCISE.mistake("no_scale", "scores were not divided by sqrt(d_k)")
def _xa_no_scale(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, scale=1.0)[0]


@EXERCISE.mistake("scale_sqrt_d_v",
                  "scores were divided by sqrt(d_v); the scale is sqrt(d_k), the width of the queries")
def _xa_sqrt_dv(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, scale=np.sqrt(np.shape(W_V)[1]))[0]


@EXERCISE.mistake("scale_sqrt_d",
                  "scores were divided by sqrt(d) (the width of X_dec); the scale is sqrt(d_k)")
def _xa_sqrt_d(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, scale=np.sqrt(np.shape(X_dec)[1]))[0]


@EXERCISE.mistake("causal",
                  "a causal mask was applied; cross-attention has no mask (the encoder's output is "
                  "complete)")
def _xa_causal(X_dec, H_enc, W_Q, W_K, W_V):
    n_dec, n_enc = np.shape(X_dec)[0], np.shape(H_enc)[0]
    mask = np.tril(np.ones((n_dec, n_enc), dtype=bool))
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, mask=mask)[0]


@EXERCISE.mistake("softmax_axis_0",
                  "softmax taken over the wrong axis (axis 0): each query's weights over the encoder "
                  "positions must sum to 1")
def _xa_axis0(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V, axis=0)[0]


@EXERCISE.mistake("returns_weights",
                  "returned the attention weights; the output is weights @ V")
def _xa_weights(X_dec, H_enc, W_Q, W_K, W_V):
    return _xattn(X_dec, H_enc, W_Q, W_K, W_V)[1]


def _rows(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@trace.steps("cross_attention")
def _steps(X_dec, H_enc, W_Q, W_K, W_V):
    """The named steps an answer goes through (helpers.course.trace): where it goes wrong."""
    X_dec, H_enc, W_Q, W_K, W_V = (np.asarray(a, dtype=float)
                                   for a in (X_dec, H_enc, W_Q, W_K, W_V))
    Q, K, V = X_dec @ W_Q, H_enc @ W_K, H_enc @ W_V
    raw = Q @ K.T
    scaled = raw / np.sqrt(Q.shape[-1])
    weights = _rows(scaled)
    swapped = X_dec.shape[-1] == H_enc.shape[-1]          # the roles swapped can compute
    return [trace.Step("queries", "X_dec W_Q (queries from the decoder)", Q,
                       (("H_enc W_Q: the queries come from the decoder, not the encoder",
                         H_enc @ W_Q),) if swapped else ()),
            trace.Step("keys", "H_enc W_K (keys from the encoder)", K,
                       (("X_dec W_K: the keys come from the encoder, not the decoder",
                         X_dec @ W_K),) if swapped else ()),
            trace.Step("values", "H_enc W_V (values from the encoder)", V,
                       (("X_dec W_V: the values come from the encoder, not the decoder",
                         X_dec @ W_V),) if swapped else ()),
            trace.Step("scores", "Q Kᵀ / √d_k", scaled,
                       (("Q Kᵀ: the 1/√d_k scaling is missing", raw),
                        ("Q Kᵀ / √d_model: scaled by the model width, not d_k",
                         raw / np.sqrt(X_dec.shape[-1])))),
            trace.Step("weights", "softmax(scores) over the encoder's tokens (last axis)",
                       weights, (("softmax(Q Kᵀ): the scaling is missing", _rows(raw)),)),
            trace.Step("output", "weights V", weights @ V)]
