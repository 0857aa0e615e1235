"""Values across the boundary: plain data only.

The learner's process sends the grader return values; the grader sends it the cases'
arguments. Both go as JSON (the structure) plus uncompressed ``.npz`` bytes (the arrays)
read with ``allow_pickle=False``, size-capped; or, in the short form (``short=True``:
the cases, the replies and the trusted calls, whose arrays are small), as the JSON alone,
each array in it as its dtype, shape and base64 bytes, checked against each other before
anything is allocated (``_short_array``). What crosses:

* ``None``, booleans, numbers (big integers as text), strings;
* NumPy arrays and scalars of numeric or boolean dtype;
* lists, tuples, sets, frozensets and dicts of these (a dict whose keys are not all
  strings keeps its keys: numbers, strings, tuples of them);
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
import binascii
import hashlib
import io
import json
import os

import numpy as np

# the format's ground floor: its limits, classes and decoder (re-exported: one codec)
from autograder.isolation.wire_read import (  # noqa: F401
    MAX_ARRAYS, MAX_DEPTH, MAX_ITEMS, MAX_JSON_DEPTH, MAX_NDIM, MAX_VALUE_BYTES, PLAIN, SHORT,
    SHORT_ARRAY, WIRE_CLASSES, _DTYPES, DecodeError, Unencodable, _fields, _short_array,
    _wire_class, array_cap, decode, item_cap, json_depth, json_shape, loads, unb64)

#: Arrays at least this large go by file when :func:`encode` is given a store.
FILE_ARRAY_BYTES = 256 * 1024


def _wire_name(x) -> str | None:
    cls = type(x)
    name = f"{cls.__module__}:{cls.__qualname__}"
    return name if _wire_class(name) is cls else None


def _is_short(a: np.ndarray) -> bool:
    """Whether ``a`` is written in the short form (a real array of the short sizes)."""
    return a.dtype.kind in "biuf" and a.size <= SHORT_ARRAY and a.ndim <= MAX_NDIM


def _short_form(a: np.ndarray, scalar: bool) -> dict:
    """The short form of ``a``: its dtype, shape and bytes (C order) in base64."""
    return {"__ndb__": binascii.b2a_base64(a.tobytes(), newline=False).decode(),
            "dtype": a.dtype.str, "shape": list(a.shape), "scalar": scalar}


def array_key(a: np.ndarray) -> str:
    """The content name of array ``a`` (dtype, shape and bytes)."""
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()[:32]


def encode(obj, store=None, short: bool = False) -> bytes:
    """The wire form of ``obj`` (see the module docstring for what crosses). With
    ``store`` (a dict), numeric arrays of at least :data:`FILE_ARRAY_BYTES` are named by
    :func:`array_key` and put in ``store`` rather than in the bytes. With ``short``, a
    value holding no array but small ones (:data:`SHORT_ARRAY`) is its structure's JSON
    after :data:`SHORT` (no ``.npz``: for the many small calls a grading child makes of
    the trusted grader)."""
    arrays: dict[str, np.ndarray] = {}

    def enc(x, depth=0):
        if depth > 20:
            return {"__repr__": "nested too deeply"}
        t = type(x)
        if t is str or t is float or t is bool or x is None:    # the common exact types
            return x
        if t is np.ndarray and short and store is None and _is_short(x) and \
                x.dtype.str in _DTYPES:              # nothing to cast: as below, quicker
            return _short_form(x, False)
        if isinstance(x, (bool, str)):
            return x
        if isinstance(x, dict):          # before the numbers: the most common container
            if all(isinstance(k, str) for k in x):
                return {"__dict__": [[k, enc(v, depth + 1)] for k, v in x.items()]}
            return {"__map__": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
        if isinstance(x, (int, float)) and not isinstance(x, np.generic):
            return {"__int__": str(x)} if isinstance(x, int) and abs(x) > 2**53 else x
        if isinstance(x, (np.ndarray, np.generic)):
            a = np.asarray(x)
            if a.dtype.kind not in "biufc":
                try:
                    a = a.astype(np.float64)
                except (TypeError, ValueError):
                    return {"__repr__": f"array of dtype {a.dtype}"}
            elif a.dtype.str not in _DTYPES:          # long double: what decode accepts
                a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
            if store is not None and a.nbytes >= FILE_ARRAY_BYTES and a.dtype.kind in "biufc":
                name = array_key(a)
                store.setdefault(name, a)
                return {"__file__": name}
            if short and _is_short(a):
                return _short_form(a, isinstance(x, np.generic))
            key = f"a{len(arrays)}"
            arrays[key] = a
            return {"__nd__": key, "scalar": isinstance(x, np.generic)}
        if isinstance(x, (list, tuple, set, frozenset)):
            kind = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}.get(
                type(x), "tuple" if isinstance(x, tuple) else "list")
            items = x if isinstance(x, (list, tuple)) else _sorted_items(x)
            if all(type(v) in _FLAT for v in items):      # strings, floats, ...: as they are
                return {"__seq__": kind, "items": list(items)}
            return {"__seq__": kind, "items": [enc(v, depth + 1) for v in items]}
        if isinstance(x, np.random.Generator):
            bg = x.bit_generator
            return {"__rng__": type(bg).__name__, "state": _jsonable(bg.state)}
        name = _wire_name(x)
        if name is not None:
            return {"__obj__": name, "state": [[f, enc(getattr(x, f, None), depth + 1)]
                                                for f in _fields(type(x))]}
        return {"__repr__": type(x).__name__}

    structure = json.dumps(enc(obj), check_circular=False)      # enc built it: no cycle
    if short and not arrays:
        return SHORT + structure.encode()
    buf = io.BytesIO()
    np.savez(buf, __structure__=np.frombuffer(structure.encode(), dtype=np.uint8), **arrays)
    return buf.getvalue()


def array_bytes(obj, stop: int, depth: int = 0) -> int:
    """The bytes of the NumPy arrays and scalars in ``obj`` (into the containers
    :func:`encode` walks, as deep), counted until they exceed ``stop``: at least as
    much as its encoding would take, known before encoding it."""
    if isinstance(obj, (np.ndarray, np.generic)):
        return int(obj.nbytes)
    if depth > 20 or isinstance(obj, (str, bytes)):
        return 0
    if isinstance(obj, dict):
        items = list(obj.keys()) + list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        items = obj
    else:
        return 0
    total = 0
    for v in items:
        total += array_bytes(v, stop, depth + 1)
        if total > stop:
            break
    return total


class _NoKey(Exception):
    """A value :func:`call_key` does not describe (the call is encoded to be looked up)."""


def call_key(spec: str, args: dict, names: dict, blob_size: int):
    """A key of the call ``spec(**args)`` that decides the bytes of its request (a grading
    child's trusted call, ``autograder.isolation.course_calls``): equal keys, equal
    requests. Each value goes by its exact type and content; an array of more than
    ``blob_size`` entries goes by its :func:`array_key`, kept in ``names`` by ``id`` for
    the request. Returns None when an argument is of a kind it does not describe. It is
    built without encoding: a sampling loop asks the child's memory far more often than
    the grader, and encoding a block's twelve arrays to look a call up cost most of it."""
    try:
        return spec, _key(args, 0, names, blob_size)
    except _NoKey:
        return None


def _key(x, depth: int, names: dict, blob_size: int):
    t = type(x)
    if t is str or t is int or t is bool or x is None:
        return t, x
    if t is float:
        return t, x.hex()                           # -0.0 is not 0.0; every NaN is NaN
    if depth > 20:
        raise _NoKey
    if t is np.ndarray:
        if x.size > blob_size and x.dtype.kind in "biufc":
            names[id(x)] = name = array_key(x)      # named by its content
            return "\x00blob", name
        if x.dtype.kind not in "biuf":
            raise _NoKey
        return t, x.dtype.str, x.shape, x.tobytes()
    if isinstance(x, np.generic) and x.dtype.kind in "biuf":
        return np.generic, x.dtype.str, x.tobytes()
    if t is dict:
        if not all(type(k) is str for k in x):
            raise _NoKey
        return t, tuple((k, _key(v, depth + 1, names, blob_size)) for k, v in x.items())
    if t is list or t is tuple:
        return t, tuple(_key(v, depth + 1, names, blob_size) for v in x)
    raise _NoKey


#: The types :func:`encode` writes as they are, whatever their value (an int may be too
#: big for a JSON number: not one of them).
_FLAT = frozenset({str, float, bool, type(None)})


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


def write_arrays(store: dict[str, np.ndarray], folder) -> None:
    """Write the arrays :func:`encode` put in ``store`` as ``folder/<key>.npy``."""
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)                 # read by the child, whatever its uid
    for key, a in store.items():
        path = os.path.join(folder, key + ".npy")
        if not os.path.exists(path):
            np.save(path, a, allow_pickle=False)
            os.chmod(path, 0o644)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
