"""``bert_layer`` (notebook 09_sentence_encoder): one post-norm encoder layer of BERT."""

from __future__ import annotations

import functools

import numpy as np

from helpers import bert
from helpers import reference as ref
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._bert_inputs import cut_model


def _signature(x, layer, n_heads, key_mask=None):
    """The notebook's signature (the reference also takes ``eps``)."""


CONTRACT = Contract(
    args={"x": Arg("[..., N, d]", lists=True), "layer": Arg(dict), "n_heads": Arg(int, low=1),
          "key_mask": Arg("[..., N]", dtype=("bool", "int"), lists=True, optional=True)},
    returns=Arg("[..., N, d]"), batch=(0, 1), draw=False)

EXERCISE = Exercise(
    "bert_layer", bert.bert_layer, contract=CONTRACT, signature=_signature,
    uses=("layer_norm", "scaled_dot_product_attention", "split_heads", "merge_heads", "gelu"),
    refuse=("helpers.bert:bert_attention", "helpers.bert:bert_forward",
            "helpers.bert.model:_bert_layer",
            "helpers.bert.model:_attention_float32",
            "helpers.bert:sentence_embeddings", "helpers.bert:encode",
            "helpers.bert:token_vectors"),
    near_miss="do BOTH layer norms use eps=1e-12, and is GELU the exact (erf) one?",
    difficulty=3, importance=3, minutes=25,
    hints=(
        r"""Notebook 07's block with three changes. (1) **Post-norm**: each layer norm comes
*after* its residual addition, $H = \operatorname{LN}_1(X + \operatorname{MHA}(X))$, then
$\operatorname{LN}_2(H + \operatorname{FFN}(H))$, with $\epsilon = 10^{-12}$ (not the default
$10^{-5}$). (2) Every projection has a bias, $XW + \boldsymbol{b}$. (3) The mask hides
padding keys only: no causal mask, every token sees every real token. The feed-forward
network uses your `gelu`.""",
        r"""The attention half. The scores of all heads are `[..., h, N, N]`; the key mask
`[..., N]` must hide *columns* (keys), so give it two axes of length 1 before its last one,
`[..., 1, 1, N]`:

```python
x = np.asarray(x, dtype=float)
mask = None if key_mask is None else ___          # bool [..., 1, 1, N]
Qh = split_heads(x @ layer["W_Q"] + layer["b_Q"], n_heads)      # [..., h, N, d_h]
Kh = ___                                          # likewise with W_K, b_K
Vh = ___                                          # likewise with W_V, b_V
heads, _ = scaled_dot_product_attention(Qh, Kh, Vh, mask)
attention = ___                                   # merge the heads, then W_O and b_O: [..., N, d]
h = layer_norm(___, layer["ln1_gamma"], layer["ln1_beta"], eps=___)
```""",
        r"""The feed-forward half, once `h` is right (the first line is complete, the
return is not):

```python
ffn = gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"]    # [..., N, d]
return layer_norm(___, layer["ln2_gamma"], layer["ln2_beta"], eps=___)
```""",
    ))


@EXERCISE.cases
def cases():
    rng = draw.rng(909)
    small = functools.partial(draw.bert_layer, rng)
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    visible = [
        case("one_sentence", "one sentence x [5, 8], 2 heads, no padding (key_mask=None)",
             (rng.normal(size=(5, 8)), small(8, 12, 1.5), 2, None)),
        case("padded_batch", "a batch x [2, 5, 8], 2 heads, the 2nd sentence padded after "
             "3 tokens", (rng.normal(size=(2, 5, 8)), small(8, 12, 1.5), 2, mask),
             group="mask"),
    ]
    rng = draw.rng(910)
    mask = np.array([[True] * 6, [True] * 2 + [False] * 4])
    hidden = [
        case("large_values", "a batch x [2, 6, 16] with large values, 4 heads, padding",
             (20 * rng.normal(size=(2, 6, 16)), draw.bert_layer(rng, 16, 24, 3.0), 4, mask),
             group="stability", hidden=True),
    ]
    if not bert.missing_requirements():            # the real model, where it is installed
        # float64 embeddings x (so the layer computes in float64), the layer's weights
        # float32 as the model stores them (half the bytes on the grader's wire)
        ids, mask, small = cut_model(["Padding hides these tokens.", "Hi"], [0])
        x = bert.bert_embeddings(ids, small)                           # [2, N, 384] float64
        hidden.append(case(
            "minilm_layer_1", "layer 1 of all-MiniLM-L6-v2 on a padded batch of two sentences",
            (x, small["layers"][0], small["n_heads"], mask), group="model",
            hidden=True))
    return visible + hidden


def _layer_variant(x, p, n_heads, key_mask, *, pre_norm=False, causal=False, padding=True,
                   eps=bert.LN_EPS, act=bert.gelu, biases=True, residual=True, eps2=None,
                   scale_by_d_model=False, mask_queries=False):
    """The layer with one thing changed: the outputs of known mistakes."""
    x = np.asarray(x, dtype=np.float64)
    zero = np.zeros(np.shape(p["b_Q"]))
    b = (lambda name: p[name]) if biases else (lambda name: zero)
    n = x.shape[-2]
    mask = None
    if padding and key_mask is not None:
        mask = np.asarray(key_mask, dtype=bool)[..., None, None, :]     # [B, 1, 1, N]
        if mask_queries:
            mask = np.asarray(key_mask, dtype=bool)[..., None, :, None]  # [B, 1, N, 1]
    if causal:
        mask = ref.causal_mask(n) if mask is None else mask & ref.causal_mask(n)

    def mha(v):
        Qh = ref.split_heads(v @ p["W_Q"] + b("b_Q"), n_heads)
        if scale_by_d_model:                  # 1/sqrt(d) instead of 1/sqrt(d / n_heads)
            Qh = Qh / np.sqrt(n_heads)
        Kh = ref.split_heads(v @ p["W_K"] + b("b_K"), n_heads)
        Vh = ref.split_heads(v @ p["W_V"] + b("b_V"), n_heads)
        # a mask on the queries is refused at the edge, as the learner's call is refused
        sdpa = _checked_sdpa() if mask_queries else ref.scaled_dot_product_attention
        heads, _ = sdpa(Qh, Kh, Vh, mask)
        return ref.merge_heads(heads) @ p["W_O"] + b("b_O")

    def ffn(v):
        return act(v @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]

    def ln1(v):
        return ref.layer_norm(v, p["ln1_gamma"], p["ln1_beta"], eps=eps)

    def ln2(v):
        return ref.layer_norm(v, p["ln2_gamma"], p["ln2_beta"], eps=eps if eps2 is None else eps2)

    if pre_norm:
        t = x + mha(ln1(x))
        return t + ffn(ln2(t))
    keep = 1.0 if residual else 0.0
    h = ln1(keep * x + mha(x))
    return ln2(keep * h + ffn(h))


def _checked_sdpa():
    import helpers                      # the export, checked by its exercise's contract

    return helpers.scaled_dot_product_attention


def _relu(x):
    return np.maximum(0.0, x)


@EXERCISE.mistake("pre_norm", "pre-norm order (layer norm before attention and feed-forward); "
                  "BERT is post-norm: h = LN1(x + MHA(x)), out = LN2(h + FFN(h))")
def _pre_norm(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, pre_norm=True)


@EXERCISE.mistake("causal", "a causal mask: BERT's tokens also see the tokens after them; only "
                  "padding keys are masked")
def _causal(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, causal=True)


@EXERCISE.mistake("padding_ignored", "the padding mask is ignored: keys where key_mask is False "
                  "must get weight 0")
def _padding_ignored(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, padding=False)


@EXERCISE.mistake("eps_1e-5", "layer norm with eps=1e-5; BERT uses eps=1e-12")
def _eps(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, eps=1e-5)


@EXERCISE.mistake("gelu_tanh", "the tanh approximation of GELU; BERT uses the exact (erf) GELU")
def _tanh(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, act=bert.gelu_tanh)


@EXERCISE.mistake("relu", "ReLU in the feed-forward network; BERT uses GELU")
def _relu_ffn(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, act=_relu)


@EXERCISE.mistake("no_biases", "the attention biases b_Q, b_K, b_V, b_O are missing")
def _no_biases(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, biases=False)


@EXERCISE.mistake("no_residual", "no residual connections (x + MHA(x), h + FFN(h))")
def _no_residual(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, residual=False)


@EXERCISE.mistake("scale_d_model", "the scores were divided by sqrt(d_model); each head's "
                  "scores are divided by sqrt(d_head), d_head = d_model / n_heads")
def _scale_d_model(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, scale_by_d_model=True)


@EXERCISE.mistake("mask_on_queries", "the padding mask was put on the queries (rows); it hides "
                  "KEYS: key_mask[..., None, None, :] masks the columns")
def _mask_on_queries(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, mask_queries=True)


@EXERCISE.mistake("second_eps", "the second layer norm used the default eps=1e-5; both of "
                  "BERT's layer norms use eps=1e-12")
def _second_eps(x, layer, n_heads, key_mask=None):
    return _layer_variant(x, layer, n_heads, key_mask, eps2=1e-5)
