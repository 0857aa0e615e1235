"""``logit_lens`` (notebook 14_interpretability): every layer's residual stream read out as
a next-token distribution, through the final RMSNorm and the unembedding."""

from __future__ import annotations

import numpy as np

from helpers import interpretability
from helpers.course import Arg, Contract, Exercise, case, draw


def _norm_weight(rng, shape, dims):
    return 1.0 + 0.3 * rng.normal(size=shape)


CONTRACT = Contract(
    args={"hidden_states": Arg("[L, N, d]", lists=True),
          "final_norm_weight": Arg("[d]", lists=True, values=_norm_weight),
          "W_U": Arg("[V, d]", lists=True)},
    returns=Arg("[L, N, V]"),
    invariants=("every row of the result is a distribution (non-negative, sums to 1)",
                "layer 0 is the embeddings, read out like the last layer"))

EXERCISE = Exercise(
    "logit_lens", interpretability.logit_lens, contract=CONTRACT, uses=("softmax",),
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""The model only ever turns its **last** residual stream into a prediction:
RMSNorm with the final weight $g$, then the unembedding $W_U$ (`[V, d]`), then softmax. The
logit lens applies exactly those three steps to **every** layer's stream $h_\ell$:
$p_\ell = \mathrm{softmax}\big(\tfrac{h_\ell}{\mathrm{rms}(h_\ell)}\, g\; W_U^\top\big)$, with
$\mathrm{rms}(h) = \sqrt{\mathrm{mean}(h^2) + \epsilon}$ over the last axis ($\epsilon = 10^{-5}$).""",
        r"""All layers at once: the last axis is $d$ everywhere, so `keepdims=True` and
broadcasting do the work; subtract the row maximum before `np.exp`.

```python
h = np.asarray(hidden_states, dtype=float)              # [L, N, d]
rms = np.sqrt(___ + 1e-5)                               # [L, N, 1]
logits = (h / rms * final_norm_weight) @ ___            # [L, N, V]
z = logits - logits.max(axis=-1, keepdims=True)
return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
```""",
    ),
)


def _one_hot_case():
    """Two layers, one position, d = 2, V = 3, g = 1, W_U = [[1, 0], [0, 1], [1, 1]]:
    h = [3, 4] has rms sqrt(12.5 + 1e-5); h = [0, 2] has rms sqrt(2 + 1e-5)."""
    h = np.array([[[3.0, 4.0]], [[0.0, 2.0]]])
    W_U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    out = []
    for (a, b) in ([3.0, 4.0], [0.0, 2.0]):
        r = np.sqrt((a * a + b * b) / 2 + 1e-5)
        z = np.array([a, b, a + b]) / r
        out.append([np.exp(z) / np.exp(z).sum()])
    return (h, np.ones(2), W_U), np.array(out)


@EXERCISE.cases
def cases():
    args, want = _one_hot_case()
    return [
        case("by_hand", "2 layers, 1 position, d = 2, V = 3, weight 1", args, expected=want),
        case("weighted", "3 layers, 4 positions, d = 5, V = 7, a final weight not all 1",
             (draw.normal(1411, (3, 4, 5), 2.0), 1.0 + draw.normal(1412, (5,), 0.3),
              draw.normal(1413, (7, 5)))),
        case("large_stream", "a residual stream of size ~1000: the norm, not the size, "
             "decides the distribution", (draw.normal(1414, (2, 3, 4), 1000.0),
                                          np.ones(4), draw.normal(1415, (6, 4)))),
        case("weighted_hidden", "4 layers, 3 positions, d = 6, V = 5",
             (draw.normal(1416, (4, 3, 6), 1.5), 1.0 + draw.normal(1417, (6,), 0.3),
              draw.normal(1418, (5, 6))), hidden=True),
        case("by_hand_hidden", "1 layer, 2 positions, d = 2, V = 3",
             (np.array([[[1.0, -1.0], [2.0, 0.5]]]), np.array([2.0, 0.5]),
              np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])), hidden=True),
    ]


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)


def _h(hidden_states):
    return np.asarray(hidden_states, dtype=np.float64)


@EXERCISE.mistake("no_norm", "the stream was unembedded without the final RMSNorm: the model "
                  "normalises its last stream before W_U, and the lens must do the same to "
                  "every layer")
def _no_norm(hidden_states, final_norm_weight, W_U):
    return _softmax(_h(hidden_states) * final_norm_weight @ np.asarray(W_U).T)


@EXERCISE.mistake("weight_dropped", "the final norm's weight was left out: multiply the "
                  "normalised stream by final_norm_weight")
def _weight_dropped(hidden_states, final_norm_weight, W_U):
    h = _h(hidden_states)
    return _softmax(h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) @ np.asarray(W_U).T)


@EXERCISE.mistake("layer_norm", "the stream was centred (LayerNorm): RMSNorm divides by the "
                  "root mean square and subtracts no mean")
def _layer_norm(hidden_states, final_norm_weight, W_U):
    h = _h(hidden_states)
    c = h - h.mean(-1, keepdims=True)
    return _softmax(c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5)
                    * final_norm_weight @ np.asarray(W_U).T)


@EXERCISE.mistake("logits_not_probabilities", "the logits were returned: the lens reads "
                  "each layer out as a distribution (softmax over the vocabulary)")
def _logits(hidden_states, final_norm_weight, W_U):
    h = _h(hidden_states)
    return (h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) * final_norm_weight
            @ np.asarray(W_U).T)
