"""Reading values from across the boundary: the decoder of the plain-data format.

The format is described in :mod:`autograder.isolation.wire` (which encodes values and
re-exports everything here). This module is its ground floor: the limits, the classes
that may cross, and :func:`decode`, which reads untrusted bytes (a child's reply, or in
the child a case's arguments) by an exact schema per wire type, every size checked
before anything is allocated. It imports nothing of the course but the classes it
rebuilds, and ships to the child as ``helpers/_wire_read.py``.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
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

_FILE_KEY = re.compile(r"[0-9a-f]{32}")

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


#: The first byte of the short form: a value without large arrays as its JSON structure
#: alone (an ``.npz`` starts with ``PK``).
SHORT = b"J"
#: In the short form, numeric arrays of at most this many entries (complex ones aside)
#: are written in the structure: their dtype, shape and bytes (base64; no float is
#: printed or parsed, which cost more than the calls of a small model themselves).
SHORT_ARRAY = 1 << 16


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


# ---------------------------------------------------------------------------------------
# Decoding untrusted bytes (a child's reply): every wire type has an exact schema, and
# every size is checked before anything is allocated.
# ---------------------------------------------------------------------------------------

#: Nesting of values (a list in a dict in a list ...) in a decoded value.
MAX_DEPTH = 40
#: Nesting of JSON brackets in a structure or a reply line, checked before parsing.
MAX_JSON_DEPTH = 128
#: Values (numbers, strings, arrays, containers, dict entries) in one decoded value, at
#: least (a larger ``max_bytes`` allows one per 160 bytes). With its separators capped at
#: 4 per value before parsing, the parsed structure of a forged reply stays under about
#: 100 MB.
MAX_ITEMS = 200_000
#: Arrays (members of the ``.npz``) in one value.
MAX_ARRAYS = 10_000
#: Dimensions of one array.
MAX_NDIM = 32
#: Digits of a big integer (``{"__int__": ...}``).
MAX_INT_DIGITS = 400
#: Bytes of the header of one ``.npy`` member.
MAX_NPY_HEADER = 4096


def _dtype_table() -> dict[str, np.dtype]:
    """The dtypes an array may have on the wire, by the ``descr`` an ``.npy`` header
    gives: bool, int8-64, uint8-64, float16/32/64, complex64/128, either byte order. The
    dtypes are made here from NumPy's types; a descr read from a reply is only looked up
    in this table, never handed to NumPy."""
    table = {}
    for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
              np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64,
              np.complex128):
        for order in ("<", ">"):
            dt = np.dtype(t).newbyteorder(order)
            table[dt.str] = dt
    return table


_DTYPES = _dtype_table()
_MEMBER = re.compile(r"a[0-9]{1,6}")
_JSON_ESCAPE = re.compile(r"\\.", re.S)
_JSON_STRING = re.compile(r'"[^"]*+"')
_NOT_STRUCTURE = re.compile(r"[^\[\]{},:]+")
_INT_TEXT = re.compile(r"-?[0-9]{1,%d}" % MAX_INT_DIGITS)


def json_shape(text: str) -> tuple[int, int]:
    """The deepest nesting of brackets in the JSON ``text`` and the number of its
    separators (``,`` and ``:``), both outside strings: a bound on how deep and how big
    parsing it would make it, computed without parsing it, in time and memory linear in
    its length (escapes are removed first, so that no pattern backtracks over them, then
    strings, then all but brackets and separators; the running depth is summed in
    chunks)."""
    text = _JSON_ESCAPE.sub("", text)
    skeleton = _NOT_STRUCTURE.sub("", _JSON_STRING.sub("", text))
    separators = skeleton.count(",") + skeleton.count(":")
    brackets = skeleton.replace(",", "").replace(":", "")
    deepest, depth, chunk = 0, 0, 1 << 20
    for start in range(0, len(brackets), chunk):
        steps = np.frombuffer(brackets[start:start + chunk].encode("ascii"), dtype=np.uint8)
        run = np.cumsum(np.where((steps == ord("[")) | (steps == ord("{")), 1, -1)
                        .astype(np.int32)) + depth
        deepest, depth = max(deepest, int(run.max())), int(run[-1])
    return deepest, separators


def json_depth(text: str) -> int:
    """The deepest nesting of brackets in the JSON ``text`` (see :func:`json_shape`)."""
    return json_shape(text)[0]


def loads(text, max_chars: int, max_depth: int = MAX_JSON_DEPTH,
          max_items: int | None = None):
    """``json.loads`` for untrusted text: its length, its nesting and (with
    ``max_items``) its number of separators are checked before it is parsed, so that
    parsing allocates at most in proportion to them; any failure (a RecursionError
    included) is a :class:`DecodeError`."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("text that is not UTF-8") from None
    if not isinstance(text, str):
        raise DecodeError("not text")
    if len(text) > max_chars:
        raise DecodeError(f"a line of {len(text)} characters exceeds the cap of {max_chars}")
    # Upper bounds first (brackets and separators counted inside strings too): when they
    # are within the caps, so are the exact counts, and the exact scan is not needed.
    if text.count("[") + text.count("{") > max_depth or (
            max_items is not None and text.count(",") + text.count(":") > max_items):
        depth, separators = json_shape(text)
        if depth > max_depth:
            raise DecodeError(f"nested deeper than {max_depth} levels")
        if max_items is not None and separators > max_items:
            raise DecodeError(f"too many items ({separators} separators, at most {max_items})")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"unreadable JSON ({type(exc).__name__})") from None


def _npy(raw: bytes, what: str) -> np.ndarray:
    """The array of one ``.npy`` member: its header read by the rules (a known dtype, a
    shape of at most :data:`MAX_NDIM` sizes whose bytes are exactly the data that
    follows), then the data copied into an array of that size."""
    if len(raw) < 12 or raw[:6] != b"\x93NUMPY":
        raise DecodeError(f"{what}: not an .npy array")
    if raw[6] == 1:
        start, hlen = 10, int.from_bytes(raw[8:10], "little")
    elif raw[6] in (2, 3):
        start, hlen = 12, int.from_bytes(raw[8:12], "little")
    else:
        raise DecodeError(f"{what}: unknown .npy version")
    if hlen > MAX_NPY_HEADER or start + hlen > len(raw):
        raise DecodeError(f"{what}: bad .npy header")
    try:
        header = ast.literal_eval(raw[start:start + hlen].decode("latin1"))
    except Exception:                 # SyntaxError, ValueError, MemoryError of the parser
        raise DecodeError(f"{what}: unreadable .npy header") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise DecodeError(f"{what}: bad .npy header")
    descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    dtype = _DTYPES.get(descr) if isinstance(descr, str) else None
    if dtype is None:
        raise DecodeError(f"{what}: dtype {str(descr)[:40]!r} cannot cross")
    if not isinstance(fortran, bool) or not isinstance(shape, tuple) or len(shape) > MAX_NDIM \
            or not all(type(n) is int and n >= 0 for n in shape):
        raise DecodeError(f"{what}: bad .npy header")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(raw) - start - hlen:
        raise DecodeError(f"{what}: shape {shape[:8]} does not match its "
                          f"{len(raw) - start - hlen} bytes of data")
    flat = np.frombuffer(raw, dtype=dtype, count=count, offset=start + hlen)
    return flat.reshape(shape, order="F" if fortran else "C").copy()


def _members(data: bytes, max_bytes: int) -> tuple[bytes, dict[str, bytes]]:
    """The structure member and the array members of an ``.npz``: uncompressed members
    of the names :func:`encode` writes only, at most :func:`array_cap` of them, their
    sizes checked before they are read."""
    most = array_cap(max_bytes)
    if data.count(b"PK\x01\x02") > most + 1:          # central directory entries
        raise DecodeError(f"more than {most} arrays")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception as exc:
        raise DecodeError(f"unreadable value ({type(exc).__name__})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > most + 1:
            raise DecodeError(f"more than {most} arrays")
        total, out, structure = 0, {}, None
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else ""
            if name != "__structure__" and not _MEMBER.fullmatch(name) or name in out:
                raise DecodeError("an array of an unknown or repeated name")
            if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                raise DecodeError("a compressed array")
            total += info.file_size
            if total > max_bytes:
                raise DecodeError("value too large")
            try:
                raw = zf.read(info)
            except Exception as exc:
                raise DecodeError(f"unreadable value ({type(exc).__name__})") from None
            if name == "__structure__":
                structure = raw
                out[name] = b""
            else:
                out[name] = raw
        if structure is None:
            raise DecodeError("no structure")
        del out["__structure__"]
        return structure, out


_U32, _U64 = 2**32 - 1, 2**64 - 1
#: The exact state of each bit generator that may cross: an int field as (low, high),
#: an array field as (dtype name, length) of unsigned integers.
_RNG_STATES = {
    "PCG64": {"state": {"state": (0, 2**128 - 1), "inc": (0, 2**128 - 1)},
              "has_uint32": (0, 1), "uinteger": (0, _U32)},
    "PCG64DXSM": {"state": {"state": (0, 2**128 - 1), "inc": (0, 2**128 - 1)},
                  "has_uint32": (0, 1), "uinteger": (0, _U32)},
    "MT19937": {"state": {"key": ("uint32", 624), "pos": (0, 624)}},
    "Philox": {"state": {"counter": ("uint64", 4), "key": ("uint64", 2)},
               "buffer": ("uint64", 4), "buffer_pos": (0, 4), "has_uint32": (0, 1),
               "uinteger": (0, _U32)},
    "SFC64": {"state": {"state": ("uint64", 4)}, "has_uint32": (0, 1),
              "uinteger": (0, _U32)},
}
_BIT_GENERATORS = tuple(_RNG_STATES)
_UINT = {"uint32": (np.uint32, _U32), "uint64": (np.uint64, _U64)}


def _rng_state(name: str, x, schema: dict) -> dict:
    """The state of bit generator ``name`` from its wire form ``x``, field by field:
    exactly the fields of ``schema``, integers in range, arrays of the given length made
    here with the dtype the schema names (the wire's dtype text must only equal it)."""
    if schema is _RNG_STATES[name]:
        if not isinstance(x, dict) or x.get("bit_generator") != name:
            raise DecodeError(f"bad {name} state")
        x = {k: v for k, v in x.items() if k != "bit_generator"}
    if not isinstance(x, dict) or set(x) != set(schema):
        raise DecodeError(f"bad {name} state: fields {sorted(map(str, x))[:8] if isinstance(x, dict) else type(x).__name__}")
    out: dict = {"bit_generator": name} if schema is _RNG_STATES[name] else {}
    for field, spec in schema.items():
        v = x[field]
        if isinstance(spec, dict):
            out[field] = _rng_state(name, v, spec)
        elif isinstance(spec[0], str):
            kind, length = spec
            dtype, high = _UINT[kind]
            if not isinstance(v, dict) or set(v) != {"__list__", "dtype"} \
                    or v["dtype"] != kind or not isinstance(v["__list__"], list) \
                    or len(v["__list__"]) != length \
                    or not all(type(n) is int and 0 <= n <= high for n in v["__list__"]):
                raise DecodeError(f"bad {name} state: {field}")
            out[field] = np.array(v["__list__"], dtype=dtype)
        else:
            low, high = spec
            if type(v) is not int or not low <= v <= high:
                raise DecodeError(f"bad {name} state: {field}")
            out[field] = v
    return out


def item_cap(max_bytes: int) -> int:
    """The most values a decoded value of at most ``max_bytes`` may hold."""
    return max(MAX_ITEMS, max_bytes // 160)


def array_cap(max_bytes: int) -> int:
    """The most arrays a decoded value of at most ``max_bytes`` may hold: MAX_ARRAYS for a
    child's reply (32 MB), more for a larger trusted file such as a bundle's recorded
    calls (an array member takes well over 4 KB's share of such a file's cap)."""
    return max(MAX_ARRAYS, max_bytes // 4096)


class _Budget:
    def __init__(self, max_items: int):
        self.left = max_items

    def take(self, n: int = 1) -> None:
        """Count ``n`` values; refuse more than the budget."""
        self.left -= n
        if self.left < 0:
            raise DecodeError("too many items")

    def check(self, n: int) -> None:
        """Refuse a container of ``n`` values before decoding any of them."""
        if n > self.left:
            raise DecodeError("too many items")


_SEQ_KINDS = ("list", "tuple", "set", "frozenset")
#: The types of parsed JSON that decode as themselves (and hold no array).
PLAIN = frozenset({str, int, float, bool, type(None)})
#: The exact keys of each tagged object of a structure.
_SHAPES = {frozenset({"__nd__", "scalar"}), frozenset({"__file__"}), frozenset({"__int__"}),
           frozenset({"__seq__", "items"}), frozenset({"__dict__"}), frozenset({"__map__"}),
           frozenset({"__ndb__", "dtype", "shape", "scalar"}),
           frozenset({"__rng__", "state"}), frozenset({"__obj__", "state"}),
           frozenset({"__repr__"})}


def _short_array(x: dict) -> np.ndarray:
    """An array of the short form: its dtype from the allowlist, its shape's count of
    entries times the dtype's size exactly its bytes' length, a boolean's bytes 0 or 1."""
    text, descr, shape, scalar = x["__ndb__"], x["dtype"], x["shape"], x["scalar"]
    dtype = _DTYPES.get(descr) if isinstance(descr, str) else None
    if dtype is None or dtype.kind not in "biuf" or not isinstance(text, str) or \
            len(text) > 4 * (SHORT_ARRAY * dtype.itemsize + 2) // 3 or \
            not isinstance(shape, list) or len(shape) > MAX_NDIM or \
            not isinstance(scalar, bool) or \
            not all(type(n) is int and 0 <= n <= SHORT_ARRAY for n in shape):
        raise DecodeError("bad short array")
    count = 0 if 0 in shape else 1
    for n in shape if count else ():
        count *= n
        if count > SHORT_ARRAY:      # too many already: it only grows
            raise DecodeError("bad short array")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except Exception:
        raise DecodeError("bad short array") from None
    if len(raw) != count * dtype.itemsize or (scalar and shape) or \
            (dtype.kind == "b" and raw.strip(b"\x00\x01")):       # a bool is a byte 0 or 1
        raise DecodeError("bad short array")
    a = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return a[()] if scalar else a


def _key(k, depth: int = 0) -> bool:
    """Whether ``k`` may be a decoded dict's key: None, a bool, number or string, or a
    tuple of those (nothing whose hash runs code)."""
    if isinstance(k, tuple):
        return depth < 8 and all(_key(v, depth + 1) for v in k)
    return k is None or type(k) in (bool, int, float, str) or (
        isinstance(k, np.generic) and k.dtype.kind in "biuf")


def decode(data: bytes, max_bytes: int = MAX_VALUE_BYTES, arrays: str | None = None):
    """Inverse of :func:`encode`, for untrusted bytes: no pickle, and an exact schema per
    wire type (see :data:`_SHAPES`, :data:`_DTYPES`, :data:`_RNG_STATES`), sizes checked
    before anything is allocated: at most ``max_bytes`` in, at most
    :func:`array_cap` arrays whose headers match their data, each referred to once, a
    structure nested at most :data:`MAX_JSON_DEPTH` brackets and :data:`MAX_DEPTH`
    values deep, at most :data:`MAX_ITEMS` values. Names of arrays stored by file are
    read from the folder ``arrays`` (refused without it). Any breach is a
    :class:`DecodeError`."""
    if not isinstance(data, (bytes, bytearray)):
        raise DecodeError("not bytes")
    if len(data) > max_bytes:
        raise DecodeError(f"value of {len(data)} bytes exceeds the cap of {max_bytes}")
    data = bytes(data)
    if data[:1] == SHORT:
        members: dict[str, bytes] = {}
        text_bytes = data[1:]
    else:
        structure_npy, members = _members(data, max_bytes)
        text = _npy(structure_npy, "structure")
        if text.dtype != np.uint8 or text.ndim != 1:
            raise DecodeError("bad structure")
        text_bytes = text.tobytes()
    # a value of encode's takes at most 4 separators ({"__nd__": k, "scalar": b} and the
    # comma after it)
    structure = loads(text_bytes, max_chars=max_bytes, max_items=4 * item_cap(max_bytes))
    budget = _Budget(item_cap(max_bytes))
    used: set[str] = set()

    def dec(x, depth=0):
        budget.take()
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if not isinstance(x, dict) or frozenset(x) not in _SHAPES:
            raise DecodeError("bad structure")
        if depth > MAX_DEPTH:
            raise DecodeError("nested too deeply")
        if "__nd__" in x:
            key, scalar = x["__nd__"], x["scalar"]
            if not isinstance(key, str) or key not in members or key in used \
                    or not isinstance(scalar, bool):
                raise DecodeError("bad array reference")
            used.add(key)
            a = _npy(members[key], f"array {key}")
            if scalar:
                if a.ndim:
                    raise DecodeError(f"array {key}: a scalar with a shape")
                return a[()]
            return a
        if "__ndb__" in x:
            return _short_array(x)
        if "__file__" in x:
            key = x["__file__"]
            if arrays is None or not isinstance(key, str) or not _FILE_KEY.fullmatch(key):
                raise DecodeError("bad structure")
            return np.load(os.path.join(arrays, key + ".npy"), allow_pickle=False)
        if "__int__" in x:
            if not isinstance(x["__int__"], str) or not _INT_TEXT.fullmatch(x["__int__"]):
                raise DecodeError("bad integer")
            return int(x["__int__"])
        if "__seq__" in x:
            kind, items = x["__seq__"], x["items"]
            if kind not in _SEQ_KINDS or not isinstance(items, list):
                raise DecodeError("bad sequence")
            budget.check(len(items))
            if all(type(v) in PLAIN for v in items):  # what dec returns as it is
                budget.take(len(items))
            else:
                items = [dec(v, depth + 1) for v in items]
            if kind in ("set", "frozenset"):
                try:
                    return set(items) if kind == "set" else frozenset(items)
                except TypeError:
                    raise DecodeError("unhashable item in a set") from None
            return tuple(items) if kind == "tuple" else items
        if "__dict__" in x:
            return dict(_pairs(x["__dict__"], lambda v: dec(v, depth + 1)))
        if "__map__" in x:
            entries = x["__map__"]
            if not isinstance(entries, list):
                raise DecodeError("bad structure")
            budget.check(len(entries))
            out = {}
            for entry in entries:
                if not isinstance(entry, list) or len(entry) != 2:
                    raise DecodeError("bad structure")
                key = dec(entry[0], depth + 1)
                if not _key(key):
                    raise DecodeError("a dict key that is not a number, string or tuple")
                out[key] = dec(entry[1], depth + 1)
            return out
        if "__rng__" in x:
            name = x["__rng__"]
            if name not in _RNG_STATES:
                raise DecodeError(f"unknown bit generator {str(name)[:40]}")
            state = _rng_state(name, x["state"], _RNG_STATES[name])
            bg = getattr(np.random, name)(0)
            try:
                bg.state = state
            except (TypeError, ValueError, KeyError) as exc:
                raise DecodeError(f"bad {name} state ({str(exc)[:80]})") from None
            return np.random.Generator(bg)
        if "__obj__" in x:
            name = x["__obj__"]
            if not isinstance(name, str) or name not in WIRE_CLASSES:
                raise DecodeError(f"objects of {str(name)[:80]} cannot cross")
            return _rebuild(name, dict(_pairs(x["state"], lambda v: dec(v, depth + 1))))
        if not isinstance(x["__repr__"], str):
            raise DecodeError("bad structure")
        return Unencodable(x["__repr__"][:200])

    def _pairs(entries, value):
        if not isinstance(entries, list):
            raise DecodeError("bad structure")
        budget.check(len(entries))
        out = []
        for entry in entries:
            if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str):
                raise DecodeError("bad structure")
            out.append((entry[0], value(entry[1])))
        return out

    try:
        value = dec(structure)
    except DecodeError:
        raise
    except Exception as exc:      # RecursionError included
        raise DecodeError(f"unreadable value ({type(exc).__name__}: {str(exc)[:200]})") from None
    if used != set(members):
        raise DecodeError("arrays that the structure does not refer to")
    return value

def unb64(text: str, max_bytes: int = MAX_VALUE_BYTES) -> bytes:
    if not isinstance(text, str) or len(text) > max_bytes * 4 // 3 + 8:
        raise DecodeError("bad or oversized payload")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except Exception:
        raise DecodeError("bad base64 payload") from None
