"""Seeded inputs of notebook 09's exercises: random encoder layers and models, and the
real all-MiniLM-L6-v2 cut down to a few layers and the tokens of a batch."""

from __future__ import annotations

import numpy as np

from helpers.bert import LN_EPS, load_encoder, tokenize


def random_layer(rng, d: int, d_ff: int, scale: float = 1.5) -> dict:
    """Seeded parameters of one encoder layer, activations of order 1."""
    w = lambda *s: scale * rng.normal(size=s) / np.sqrt(s[0])  # noqa: E731
    v = lambda n: 0.3 * rng.normal(size=n)  # noqa: E731
    return {"W_Q": w(d, d), "b_Q": v(d), "W_K": w(d, d), "b_K": v(d),
            "W_V": w(d, d), "b_V": v(d), "W_O": w(d, d), "b_O": v(d),
            "ln1_gamma": 1 + v(d), "ln1_beta": v(d), "W1": w(d, d_ff),
            "b1": v(d_ff), "W2": w(d_ff, d), "b2": v(d),
            "ln2_gamma": 1 + v(d), "ln2_beta": v(d)}


def tiny_bert(rng, V: int, d: int, d_ff: int, n_heads: int, n_layers: int, n_ctx: int,
              scale: float = 1.5) -> dict:
    """A small random model in the layout of ``helpers.bert.load_params``."""
    return {"E": rng.normal(size=(V, d)), "P": 0.5 * rng.normal(size=(n_ctx, d)),
            "T": 0.5 * rng.normal(size=(2, d)), "ln_e_gamma": 1 + 0.2 * rng.normal(size=d),
            "ln_e_beta": 0.2 * rng.normal(size=d),
            "layers": [random_layer(rng, d, d_ff, scale) for _ in range(n_layers)],
            "n_heads": n_heads, "eps": LN_EPS}


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
