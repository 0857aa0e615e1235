"""Inputs of notebook 09's exercises from the real all-MiniLM-L6-v2: the model cut down
to a few layers and the tokens of a batch (random encoders: ``draw.tiny_bert``)."""

from __future__ import annotations

import numpy as np

from helpers.bert import load_encoder, tokenize


def cut_model(sentences, layers) -> tuple:
    """``(ids, key_mask, params)``: the real model with only ``layers`` (indices) and the
    rows of ``E`` that ``sentences`` use (ids renumbered), ``P`` cut to the batch length.
    (The arguments cross a process boundary when the grader calls the learner's code.)

    The embedding tables are float64, so the embeddings and everything after them are
    computed in float64, as the exercises are; the layers' weights stay float32 as the
    model stores them (the same numbers, half the bytes on the grader's wire).
    """
    params, tokenizer = load_encoder()
    batch = tokenize(sentences, tokenizer)
    vocab, ids = np.unique(batch.ids, return_inverse=True)
    ids = ids.reshape(batch.ids.shape).astype(np.int64)                  # [B, N]

    def f64(a):
        return np.asarray(a, dtype=np.float64)

    small = {"E": f64(params["E"][vocab]), "P": f64(params["P"][:ids.shape[1]]),
             "T": f64(params["T"]), "ln_e_gamma": f64(params["ln_e_gamma"]),
             "ln_e_beta": f64(params["ln_e_beta"]),
             "layers": [params["layers"][i] for i in layers],
             "n_heads": params["n_heads"], "eps": params["eps"]}
    return ids, batch.mask, small
