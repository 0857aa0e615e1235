"""Values across the boundary: plain data only.

The learner's process sends the grader return values; the grader sends it the cases'
arguments. Both go as JSON (the structure) plus uncompressed ``.npz`` bytes (the arrays)
read with ``allow_pickle=False``, size-capped. What crosses:

* ``None``, booleans, numbers (big integers as text), strings;
* NumPy arrays and scalars of numeric or boolean dtype;
* lists, tuples, sets, frozensets and dicts (string keys) of these;
* NumPy random generators (one of NumPy's bit generators, its state as numbers);
* the course classes of :data:`WIRE_CLASSES` (a model configuration, a KV cache), rebuilt
  field by field from plain values, their declared fields only.

Nothing else is ever reconstructed in the grading process: any other object is sent as
its type's name (:class:`Unencodable`), and a structure naming anything else fails to
decode (:class:`DecodeError`). No value is copied back into the caller's objects (a
call that modifies its arguments changes only its own copies).

Large arrays of the cases' arguments (a capstone's real weights, megabytes each) need not
travel through the pipes: :func:`encode` with a ``store`` names them by a content hash
(``{"__file__": key}``), the grader writes them as ``.npy`` files beside the read-only
copy of ``helpers`` the child imports, and the child's :func:`decode` (given that folder)
reads its own copy. Only the child's decode accepts such names; the grader's decode of a
reply refuses them.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import importlib
import io
import json
import os
import re
import zipfile
from dataclasses import dataclass

import numpy as np

MAX_VALUE_BYTES = 32 * 1024 * 1024

#: The course classes that may cross, by ``"module:qualname"``: their fields (a callable
#: rebuilds one from plain values). Anything else named in a structure fails to decode.
WIRE_CLASSES = ("helpers.llama.weights:LlamaConfig", "helpers.llama.model:KVCache")

#: Arrays at least this large go by file when :func:`encode` is given a store.
FILE_ARRAY_BYTES = 256 * 1024
_FILE_KEY = re.compile(r"[0-9a-f]{32}")

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


class DecodeError(ValueError):
    pass


@dataclass(frozen=True)
class Unencodable:
    """Stands for a returned object that cannot cross the boundary (e.g. a function)."""

    type_name: str

    def __repr__(self) -> str:
        return f"<object of type {self.type_name}>"


def _wire_class(name: str):
    """The class ``name`` of :data:`WIRE_CLASSES` (None for every other name)."""
    if name not in WIRE_CLASSES:
        return None
    module, _, qualname = name.partition(":")
    cls = getattr(importlib.import_module(module), qualname, None)
    return cls if isinstance(cls, type) else None


def _fields(cls) -> tuple[str, ...]:
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    return tuple(getattr(cls, "WIRE_FIELDS", ()))


def _wire_name(x) -> str | None:
    cls = type(x)
    name = f"{cls.__module__}:{cls.__qualname__}"
    return name if _wire_class(name) is cls else None


def array_key(a: np.ndarray) -> str:
    """The content name of array ``a`` (dtype, shape and bytes)."""
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()[:32]


def encode(obj, store=None) -> bytes:
    """The wire form of ``obj`` (see the module docstring for what crosses). With
    ``store`` (a dict), numeric arrays of at least :data:`FILE_ARRAY_BYTES` are named by
    :func:`array_key` and put in ``store`` rather than in the bytes."""
    arrays: dict[str, np.ndarray] = {}

    def enc(x, depth=0):
        if depth > 20:
            return {"__repr__": "nested too deeply"}
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, (int, float)) and not isinstance(x, np.generic):
            return {"__int__": str(x)} if isinstance(x, int) and abs(x) > 2**53 else x
        if isinstance(x, (np.ndarray, np.generic)):
            a = np.asarray(x)
            if a.dtype.kind not in "biufc":
                try:
                    a = a.astype(np.float64)
                except (TypeError, ValueError):
                    return {"__repr__": f"array of dtype {a.dtype}"}
            if store is not None and a.nbytes >= FILE_ARRAY_BYTES and a.dtype.kind in "biufc":
                name = array_key(a)
                store.setdefault(name, a)
                return {"__file__": name}
            key = f"a{len(arrays)}"
            arrays[key] = a
            return {"__nd__": key, "scalar": isinstance(x, np.generic)}
        if isinstance(x, (list, tuple, set, frozenset)):
            kind = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}.get(
                type(x), "tuple" if isinstance(x, tuple) else "list")
            items = x if isinstance(x, (list, tuple)) else _sorted_items(x)
            return {"__seq__": kind, "items": [enc(v, depth + 1) for v in items]}
        if isinstance(x, dict):
            return {"__dict__": [[str(k), enc(v, depth + 1)] for k, v in x.items()]}
        if isinstance(x, np.random.Generator):
            bg = x.bit_generator
            return {"__rng__": type(bg).__name__, "state": _jsonable(bg.state)}
        name = _wire_name(x)
        if name is not None:
            return {"__obj__": name, "state": [[f, enc(getattr(x, f, None), depth + 1)]
                                                for f in _fields(type(x))]}
        return {"__repr__": type(x).__name__}

    structure = json.dumps(enc(obj))
    buf = io.BytesIO()
    np.savez(buf, __structure__=np.frombuffer(structure.encode(), dtype=np.uint8), **arrays)
    return buf.getvalue()


def _sorted_items(items) -> list:
    try:
        return sorted(items)
    except TypeError:
        return list(items)


def _jsonable(x):
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return {"__list__": x.tolist(), "dtype": str(x.dtype)}
    if isinstance(x, np.integer):
        return int(x)
    return x


def _unjsonable(x):
    if isinstance(x, dict):
        if "__list__" in x:
            return np.asarray(x["__list__"], dtype=str(x["dtype"]))
        return {str(k): _unjsonable(v) for k, v in x.items()}
    return x


def _plain(v) -> bool:
    """Whether a decoded value holds nothing but plain data (no course object)."""
    if isinstance(v, (list, tuple, set, frozenset)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(_plain(x) for x in v.values())
    return v is None or isinstance(v, (bool, int, float, str, np.ndarray, np.generic))


def _rebuild(name: str, state: dict):
    """An object of the wire class ``name`` from plain field values (declared fields
    only, every one of them)."""
    cls = _wire_class(name)
    if cls is None:
        raise DecodeError(f"objects of {name[:80]} cannot cross")
    fields = _fields(cls)
    if set(state) != set(fields) or not all(_plain(v) for v in state.values()):
        raise DecodeError(f"bad fields for {name}")
    if dataclasses.is_dataclass(cls):
        try:
            return cls(**state)                  # the course's own constructor
        except (TypeError, ValueError) as exc:
            raise DecodeError(f"bad fields for {name} ({exc})") from None
    obj = object.__new__(cls)
    for k in fields:
        setattr(obj, k, state[k])
    return obj


def write_arrays(store: dict[str, np.ndarray], folder) -> None:
    """Write the arrays :func:`encode` put in ``store`` as ``folder/<key>.npy``."""
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)                 # read by the child, whatever its uid
    for key, a in store.items():
        path = os.path.join(folder, key + ".npy")
        if not os.path.exists(path):
            np.save(path, a, allow_pickle=False)
            os.chmod(path, 0o644)


def decode(data: bytes, max_bytes: int = MAX_VALUE_BYTES, arrays: str | None = None):
    """Inverse of :func:`encode`, for untrusted bytes: size-capped, no pickle. Names of
    arrays stored by file are read from the folder ``arrays`` (refused without it)."""
    if len(data) > max_bytes:
        raise DecodeError(f"value of {len(data)} bytes exceeds the cap of {max_bytes}")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            if sum(i.file_size for i in zf.infolist()) > max_bytes:
                raise DecodeError("value too large")
        npz = np.load(io.BytesIO(data), allow_pickle=False)
        structure = json.loads(bytes(npz["__structure__"]).decode())
    except DecodeError:
        raise
    except Exception as exc:
        raise DecodeError(f"unreadable value ({type(exc).__name__})") from None

    def dec(x, depth=0):
        if depth > 40:
            raise DecodeError("nested too deeply")
        if not isinstance(x, dict):
            if isinstance(x, list):
                raise DecodeError("bad structure")
            return x
        if "__nd__" in x:
            a = npz[str(x["__nd__"])]
            return a[()] if x.get("scalar") else a
        if "__file__" in x:
            key = str(x["__file__"])
            if arrays is None or not _FILE_KEY.fullmatch(key):
                raise DecodeError("bad structure")
            return np.load(os.path.join(arrays, key + ".npy"), allow_pickle=False)
        if "__int__" in x:
            return int(x["__int__"])
        if "__seq__" in x:
            items = [dec(v, depth + 1) for v in x["items"]]
            kind = x["__seq__"]
            if kind in ("set", "frozenset"):
                try:
                    return set(items) if kind == "set" else frozenset(items)
                except TypeError:
                    raise DecodeError("unhashable item in a set") from None
            return tuple(items) if kind == "tuple" else items
        if "__dict__" in x:
            return {str(k): dec(v, depth + 1) for k, v in x["__dict__"]}
        if "__rng__" in x:
            name = str(x["__rng__"])
            if name not in _BIT_GENERATORS:
                raise DecodeError(f"unknown bit generator {name[:40]}")
            bg = getattr(np.random, name)()
            bg.state = _unjsonable(x["state"])
            return np.random.Generator(bg)
        if "__obj__" in x:
            state = {str(k): dec(v, depth + 1) for k, v in x.get("state", [])}
            return _rebuild(str(x["__obj__"]), state)
        if "__repr__" in x:
            return Unencodable(str(x["__repr__"])[:200])
        raise DecodeError("bad structure")

    try:
        return dec(structure)
    except DecodeError:
        raise
    except Exception as exc:
        raise DecodeError(f"unreadable value ({type(exc).__name__}: {exc})") from None


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str, max_bytes: int = MAX_VALUE_BYTES) -> bytes:
    if not isinstance(text, str) or len(text) > max_bytes * 4 // 3 + 8:
        raise DecodeError("bad or oversized payload")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except Exception:
        raise DecodeError("bad base64 payload") from None
