"""``sentence_embeddings`` (notebook 09_sentence_encoder): the whole encoder, mean-pooled
and unit length, as sentence-transformers computes all-MiniLM-L6-v2's embeddings."""

from __future__ import annotations

import numpy as np

import helpers.reference as ref
from helpers import bert
from helpers.examples import IT_SENTENCES
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._bert_inputs import cut_model

CONTRACT = Contract(
    args={"ids": Arg("[B, N]", dtype="int", lists=True),
          "key_mask": Arg("[B, N]", dtype=("bool", "int"), lists=True), "params": Arg(dict)},
    returns=Arg("[B, d]"), draw=False, invariants=("each row has length 1",))

EXERCISE = Exercise(
    "sentence_embeddings", bert.sentence_embeddings, contract=CONTRACT, uses=("bert_layer", "mean_pool", "gelu", "layer_norm"),
    refuse=("helpers.bert:encode", "helpers.bert:bert_forward", "helpers.bert:token_vectors"),
    near_miss="does EVERY layer norm (the embeddings' too) use eps=1e-12, and is GELU the "
              "exact (erf) one?",
    difficulty=2, importance=3, minutes=20,
    hints=(
        r"""No new mathematics: chain what you have. Embed ($E[\text{ids}] + P[:N] + T[0]$,
then the embedding layer norm, also with $\epsilon = 10^{-12}$), run every layer in order,
mean-pool over the real tokens, and divide each sentence vector by its length
$\lVert \boldsymbol{s} \rVert$. The same `key_mask` serves the layers (hide padding keys)
and the pooling (skip padding rows).""",
        r"""Indexing `E` `[V, d]` with `ids` `[B, N]` gives `[B, N, d]`; `P[:n]` `[N, d]` and
`T[0]` `[d]` broadcast over the batch. A skeleton:

```python
ids = np.asarray(ids)
n = ids.shape[-1]
x = ___                                            # [B, N, d]: the three rows added
h = layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"], eps=1e-12)
for layer in params["layers"]:
    h = ___                                        # your bert_layer, params["n_heads"] heads
s = ___                                            # [B, d]
return ___                                         # unit rows: np.linalg.norm(..., axis=-1, keepdims=True)
```""",
    ))


@EXERCISE.cases
def cases():
    rng = draw.rng(909)
    mask = np.array([[True] * 6, [True] * 4 + [False] * 2, [True] * 2 + [False] * 4])
    tiny = draw.tiny_bert(rng, V=30, d=16, d_ff=24, n_heads=4, n_layers=2, n_ctx=10,
                           eps=bert.LN_EPS)
    sentences = [IT_SENTENCES["tired"], IT_SENTENCES["wide"], "A short one."]
    installed = not bert.missing_requirements()     # the real model's cases need it
    visible = [
        case("tiny_bert", "a tiny random BERT (V=30, d=16, 4 heads, 2 layers), ids [3, 6] with "
             "padding", (rng.integers(1, 30, size=(3, 6)), mask, tiny)),
    ] + ([case("minilm_first_layer", f"all-MiniLM-L6-v2 with its first layer only "
               f"(vocabulary cut to these tokens) on {sentences}", cut_model(sentences, [0]),
               group="model")] if installed else [])
    rng = draw.rng(910)
    tiny = draw.tiny_bert(rng, V=25, d=12, d_ff=20, n_heads=3, n_layers=3, n_ctx=8,
                           eps=bert.LN_EPS, scale=3.0)
    sentences = ["Mean pooling averages the token vectors.", "Hello world",
                 "Encoders read the whole sentence."]
    hidden = [
        case("tiny_bert_large", "a tiny random BERT with 3 layers and large weights, ids [3, 6] "
             "with padding", (rng.integers(1, 25, size=(3, 6)), mask, tiny), hidden=True),
    ] + ([case("minilm_last_layer", f"all-MiniLM-L6-v2 with its last layer only (vocabulary "
               f"cut to these tokens) on {sentences}", cut_model(sentences, [5]), group="model",
               hidden=True)] if installed else [])
    return visible + hidden


@EXERCISE.mistake("not_normalized", "the embeddings are not unit vectors: divide each by its "
                  "length (L2 norm)")
def _not_normalized(ids, key_mask, params):
    return bert.mean_pool(bert.bert_forward(ids, key_mask, params), key_mask)


@EXERCISE.mistake("cls_token", "this is the [CLS] token's vector; the model's sentence embedding "
                  "is the mean over the real tokens")
def _cls(ids, key_mask, params):
    return bert.l2_normalize(bert.bert_forward(ids, key_mask, params)[:, 0])


@EXERCISE.mistake("padding_included", "the mean includes the padding positions: average only "
                  "where key_mask is True")
def _with_padding(ids, key_mask, params):
    return bert.l2_normalize(bert.bert_forward(ids, key_mask, params).mean(axis=-2))


def _variant(ids, key_mask, params, *, segment=True, positions_by_id=False, eps_e=None,
             layer_mask=True, norm_axis=-1):
    """The encoder with one thing changed: the outputs of known mistakes."""
    ids = np.asarray(ids)
    eps = params.get("eps", bert.LN_EPS)
    P = params["P"][ids] if positions_by_id else params["P"][:ids.shape[-1]]
    x = params["E"][ids] + P + (params["T"][0] if segment else 0.0)   # [B, N, d]
    h = ref.layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"],
                        eps=eps if eps_e is None else eps_e)
    for layer in params["layers"]:
        h = bert.bert_layer(h, layer, params["n_heads"], key_mask if layer_mask else None,
                            eps=eps)
    s = bert.mean_pool(h, key_mask)                                   # [B, d]
    return s / np.linalg.norm(s, axis=norm_axis, keepdims=True)


@EXERCISE.mistake("no_segment", "the segment embedding T[0] is missing: a token's input is "
                  "E[id] + P[position] + T[0]")
def _no_segment(ids, key_mask, params):
    return _variant(ids, key_mask, params, segment=False)


@EXERCISE.mistake("positions_by_id", "the positions were looked up by token id (P[ids]); the "
                  "position rows are P[:N], one per place in the sentence")
def _positions_by_id(ids, key_mask, params):
    return _variant(ids, key_mask, params, positions_by_id=True)


@EXERCISE.mistake("embedding_eps", "the embeddings' layer norm used the default eps=1e-5; "
                  "BERT uses eps=1e-12 there too")
def _embedding_eps(ids, key_mask, params):
    return _variant(ids, key_mask, params, eps_e=1e-5)


@EXERCISE.mistake("mask_not_in_layers", "the layers were run without key_mask: the real "
                  "tokens attended to the padding; pass the mask to every layer too")
def _mask_not_in_layers(ids, key_mask, params):
    return _variant(ids, key_mask, params, layer_mask=False)


@EXERCISE.mistake("norm_over_batch", "each embedding was divided by a length taken over the "
                  "batch (axis=0); take each sentence's own length (axis=-1)")
def _norm_over_batch(ids, key_mask, params):
    return _variant(ids, key_mask, params, norm_axis=0)
