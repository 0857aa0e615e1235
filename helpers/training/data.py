"""Parameters as trees, their initialisation, and batches of the training text."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np



def tree_map(fn, *trees):
    """``fn`` applied to the arrays of nested dicts / lists with the same layout."""
    first = trees[0]
    if isinstance(first, dict):
        return {k: tree_map(fn, *(t[k] for t in trees)) for k in first}
    if isinstance(first, (list, tuple)):
        return [tree_map(fn, *items) for items in zip(*trees)]
    return fn(*trees)


def flatten(tree, prefix: str = "") -> dict:
    """``{"E": ..., "blocks.0.W_Q": ..., ...}`` from the nested params layout."""
    out = {}
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for k, v in items:
        name = f"{prefix}{k}"
        if isinstance(v, (dict, list, tuple)):
            out.update(flatten(v, name + "."))
        else:
            out[name] = v
    return out


def unflatten(flat: dict) -> dict:
    """The inverse of :func:`flatten` for the language model's layout."""
    out: dict = {}
    blocks: dict[int, dict] = {}
    for name, v in flat.items():
        if name.startswith("blocks."):
            _, i, key = name.split(".", 2)
            blocks.setdefault(int(i), {})[key] = v
        else:
            out[name] = v
    if blocks:
        out["blocks"] = [blocks[i] for i in sorted(blocks)]
    return out


def init_params(vocab_size: int, d_model: int, n_layers: int, d_ff: int, n_ctx: int,
                seed=0, dtype=np.float32) -> dict:
    """GPT-2 style initial parameters in the layout of ``language_model_forward``:
    N(0, 0.02) matrices and embeddings, ``W_O`` and ``W2`` (which write into the
    residual stream) N(0, 0.02 / sqrt(2 L)), zero biases and betas, unit gammas, a final
    layer norm. ``seed``: an int, or a NumPy generator to draw from (the exercises' cases
    hand it theirs)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    std, out_std = 0.02, 0.02 / math.sqrt(2 * n_layers)

    def normal(s, *shape):
        return (s * rng.standard_normal(shape)).astype(dtype)

    blocks = []
    for _ in range(n_layers):
        blocks.append({
            "ln1_gamma": np.ones(d_model, dtype), "ln1_beta": np.zeros(d_model, dtype),
            "W_Q": normal(std, d_model, d_model), "W_K": normal(std, d_model, d_model),
            "W_V": normal(std, d_model, d_model), "W_O": normal(out_std, d_model, d_model),
            "ln2_gamma": np.ones(d_model, dtype), "ln2_beta": np.zeros(d_model, dtype),
            "W1": normal(std, d_model, d_ff), "b1": np.zeros(d_ff, dtype),
            "W2": normal(out_std, d_ff, d_model), "b2": np.zeros(d_model, dtype)})
    return {"E": normal(std, vocab_size, d_model), "P": normal(std, n_ctx, d_model),
            "blocks": blocks, "ln_f_gamma": np.ones(d_model, dtype),
            "ln_f_beta": np.zeros(d_model, dtype)}


#: Romeo and Juliet (Project Gutenberg, public domain; see helpers/data/README.md), the
#: text notebook 12 trains on (written by tools/make_shakespeare_sample.py).
PLAY_PATH = Path(__file__).resolve().parents[1] / "data" / "romeo_and_juliet.txt"


def load_play(val_fraction: float = 0.1):
    """``(train_ids, val_ids, encode, decode)`` for the play, one id per character; the
    last ``val_fraction`` of the text (from a blank line) is held out."""
    text = PLAY_PATH.read_text(encoding="utf-8")
    vocab = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(vocab)}

    def encode(s: str) -> np.ndarray:
        missing = sorted(set(s) - set(index))
        if missing:
            raise ValueError(f"characters not in the play's vocabulary: {missing}")
        return np.array([index[c] for c in s], dtype=np.int64)

    def decode(ids) -> str:
        return "".join(vocab[int(i)] for i in np.asarray(ids).reshape(-1))

    cut = text.index("\n\n", int(len(text) * (1 - val_fraction))) + 2
    return encode(text[:cut]), encode(text[cut:]), encode, decode


def get_batch(data, n_ctx: int, batch_size: int, rng: np.random.Generator):
    """Random windows of ``data`` (1-D ids): inputs ``[B, n_ctx]`` and their next-token
    targets ``[B, n_ctx]`` (the same windows shifted by one)."""
    data = np.asarray(data)
    starts = rng.integers(0, len(data) - n_ctx - 1, size=batch_size)   # [B]
    windows = data[starts[:, None] + np.arange(n_ctx + 1)]              # [B, n_ctx + 1]
    return windows[:, :-1], windows[:, 1:]


