"""The course functions a student's helpers leave out, and the worked examples' outputs.

This file is shipped as ``helpers/_yours.py`` in every student bundle and in every copy
of ``helpers`` a grading child imports (``autograder/isolation/student_helpers.py``; it
imports nothing of ``autograder``); ``autograder/release/recording.py`` uses it in the
kernels that record the worked examples while a bundle is built.

Every left-out course function (``helpers.softmax``, say) is a stub whose body is one
call of :func:`course`. That call answers, in this order:

1. with the output the course's own function gave **on the same arguments** when the
   notebook ran at bundle time (its worked examples, demos and plots, with nothing
   answered and with the model answers: :data:`TABLE_DIR`), so every notebook runs from
   top to bottom before the learner has written a line, as the self-paced course does;
2. in a grading child that judges an exercise, for the earlier course functions that
   exercise uses (credit isolation): with what the trusted grader computes
   (:data:`trusted`, set by the grader's executor; the function's code is never in the
   child, and the grader answers no other function);
3. else, for an exercise's reference only (``stand_in``: the function a notebook asks the
   learner to write, under its name), with the learner's own function of that name,
   defined in the running notebook; never for another course function a notebook happens
   to define a function of the same name beside (a kernel, a demo's helper);
4. else by raising ``NotImplementedError`` with a message naming the exercise.

Arguments are matched by :func:`fingerprint`: everything exactly except floating-point
arrays of at most :data:`TOLERANT_SIZE` entries, compared within a tolerance (another
machine's BLAS rounds a matrix product differently). A table holds outputs for the
notebooks' own inputs only: no reference code, no hidden case.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import sys
import weakref
from collections import OrderedDict
from pathlib import Path

import numpy as np

#: Floating-point arrays with at most this many entries are matched within a tolerance;
#: larger ones (a model's weights, read from a file) by their exact content.
TOLERANT_SIZE = 65_536
RTOL, ATOL = 1e-4, 1e-6
#: The recorded calls, in this folder beside this file in the bundle's ``helpers/``: one
#: file per course function (:func:`table_file`), read when a notebook first calls it, so
#: a notebook's kernel holds only the recordings of the functions it calls.
TABLE_DIR = "_worked_examples"
MAX_TABLE_BYTES = 512 * 1024 * 1024


def table_file(spec: str) -> str:
    """The file of :data:`TABLE_DIR` holding the recorded calls of ``spec``
    (``helpers.training.kernels:block_forward_cached`` -> ``helpers.training.kernels.block_forward_cached.npz``)."""
    return spec.replace(":", ".") + ".npz"


class Unfingerprintable(TypeError):
    pass


_digests: dict[int, tuple] = {}          # id(large array) -> (weak reference, digest)


def _content_digest(a: np.ndarray) -> str:
    """The exact content of ``a``; for a large array computed once per array object."""
    if a.nbytes < (1 << 20):
        return hashlib.sha256(np.ascontiguousarray(a).data).hexdigest()
    hit = _digests.get(id(a))
    if hit is not None and hit[0]() is a:
        return hit[1]
    digest = hashlib.sha256(np.ascontiguousarray(a).data).hexdigest()
    try:
        _digests[id(a)] = (weakref.ref(a), digest)
    except TypeError:
        pass
    return digest


def fingerprint(args: dict) -> tuple[str, list[np.ndarray]]:
    """``(digest of everything matched exactly, tolerant float arrays in order)``."""
    h = hashlib.sha256()
    floats: list[np.ndarray] = []

    def put(text: str) -> None:
        h.update(text.encode("utf-8", "backslashreplace"))

    def walk(x, depth: int) -> None:
        if depth > 12:
            raise Unfingerprintable("nested too deeply")
        if x is None or isinstance(x, (bool, int, float, complex, str, bytes)) and \
                not isinstance(x, np.generic):
            put(f"{type(x).__name__}:{x!r};")
        elif isinstance(x, (np.ndarray, np.generic)):
            a = np.asarray(x)
            put(f"nd:{a.dtype.str}:{a.shape}:{isinstance(x, np.generic)};")
            if a.dtype.kind in "fc" and a.size <= TOLERANT_SIZE:
                floats.append(np.array(a, copy=True))
            elif a.dtype.kind in "biufc":
                put(_content_digest(a))
            else:
                raise Unfingerprintable(f"an array of dtype {a.dtype}")
        elif isinstance(x, (list, tuple)):
            put(f"{type(x).__name__}[{len(x)}:")
            for v in x:
                walk(v, depth + 1)
            put("]")
        elif isinstance(x, dict):
            put(f"dict[{len(x)}:")
            for k, v in x.items():
                put(f"{k!r}=")
                walk(v, depth + 1)
            put("]")
        elif isinstance(x, np.random.Generator):
            put(f"rng:{json.dumps(x.bit_generator.state, sort_keys=True, default=str)};")
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            put(f"dc:{type(x).__module__}:{type(x).__qualname__}(")
            for f in dataclasses.fields(x):
                put(f"{f.name}=")
                walk(getattr(x, f.name), depth + 1)
            put(")")
        elif hasattr(type(x), "WIRE_FIELDS"):   # a KV cache: its shape, not its content
            put(f"obj:{type(x).__module__}:{type(x).__qualname__}(")
            for name in type(x).WIRE_FIELDS:
                v = getattr(x, name, None)
                items = v if isinstance(v, list) else [v]
                put(f"{name}={[getattr(i, 'shape', i is None) for i in items]};")
            put(")")
        elif callable(x):
            put(f"fn:{getattr(x, '__module__', '')}:{getattr(x, '__qualname__', '')};")
        else:                                     # e.g. a tokenizer: its type only
            put(f"obj:{type(x).__module__}:{type(x).__qualname__};")

    walk(args, 0)
    return h.hexdigest(), floats


# -- side effects: what a call changes in its arguments -------------------------------------


def snapshot(args: dict) -> dict:
    """What :func:`changes` compares with after a call."""
    snap = {}
    for name, v in args.items():
        if isinstance(v, np.random.Generator):
            snap[name] = ("rng", copy.deepcopy(v.bit_generator.state))
        elif isinstance(v, np.ndarray) and v.size <= TOLERANT_SIZE and v.flags.writeable:
            snap[name] = ("nd", v.copy())
        elif isinstance(v, list):
            snap[name] = ("list", list(v))
        elif isinstance(v, dict):
            snap[name] = ("dict", dict(v))
        elif hasattr(type(v), "WIRE_FIELDS"):
            snap[name] = ("obj", {f: list(getattr(v, f)) if isinstance(getattr(v, f), list)
                                  else getattr(v, f) for f in type(v).WIRE_FIELDS})
    return snap


def changes(args: dict, snap: dict) -> list:
    """``[argument, kind, where, new value]`` for each change a call made to ``args``."""
    out = []
    for name, (kind, before) in snap.items():
        v = args[name]
        if kind == "rng":
            if v.bit_generator.state != before:
                out.append([name, "rng", None, v.bit_generator.state])
        elif kind == "nd":
            if v.shape != before.shape or not np.array_equal(v, before, equal_nan=True):
                out.append([name, "nd", None, v.copy()])
        elif kind == "list":
            if len(v) != len(before) or any(a is not b for a, b in zip(v, before)):
                out.append([name, "list", None, list(v)])
        elif kind == "dict":
            for k in set(v) | set(before):
                if k not in v or k not in before or v[k] is not before[k]:
                    out.append([name, "dict", k, v.get(k)])
        elif kind == "obj":
            for f, old in before.items():
                new = getattr(v, f)
                if isinstance(old, list):
                    if not isinstance(new, list) or len(new) != len(old):
                        out.append([name, "attr", [f, None], new])
                        continue
                    for i in range(len(new)):
                        if new[i] is not old[i]:
                            out.append([name, *_grown(f, i, old[i], new[i])])
                elif new is not old:
                    out.append([name, "attr", [f, None], new])
    return out


def _grown(field, i, old, new):
    """A list item replaced by a longer array that starts with the old one (a KV cache's
    store): only the new rows; else the whole new item."""
    if isinstance(old, np.ndarray) and isinstance(new, np.ndarray) and old.ndim == new.ndim \
            >= 2 and old.shape[:-2] == new.shape[:-2] and old.shape[-1] == new.shape[-1] and \
            new.shape[-2] > old.shape[-2] and np.array_equal(new[..., :old.shape[-2], :], old):
        return "grow", [field, i], new[..., old.shape[-2]:, :].copy()
    return "attr", [field, i], new


def apply_changes(args: dict, patches) -> None:
    for name, kind, where, value in patches:
        v = args[name]
        value = copy.deepcopy(value)
        if kind == "rng":
            v.bit_generator.state = value
        elif kind == "nd":
            v[...] = value
        elif kind == "list":
            v[:] = value
        elif kind == "dict":
            v[where] = value
        elif kind == "grow":
            field, index = where
            items = getattr(v, field)
            items[index] = np.concatenate([items[index], value], axis=-2)
        elif kind == "attr":
            field, index = where
            if index is None:
                setattr(v, field, value)
            else:
                getattr(v, field)[index] = value


# -- the table --------------------------------------------------------------------------------


_POOLED = "__array_of_the_table__"


class Table:
    """Recorded calls: ``function spec -> digest -> [(floats, output, patches)]``."""

    def __init__(self, plain=None):
        self.index: dict[str, dict[str, list]] = {}
        if plain:
            arrays = plain["arrays"]

            def unpool(x):
                if isinstance(x, dict) and set(x) == {_POOLED}:
                    return arrays[x[_POOLED]]
                if isinstance(x, (list, tuple)):
                    return type(x)(unpool(v) for v in x)
                if isinstance(x, dict):
                    return {k: unpool(v) for k, v in x.items()}
                return x

            for e in plain["entries"]:
                self.add(e["fn"], e["key"], [arrays[k] for k in e["floats"]],
                         unpool(e["out"]), unpool(e["patches"]))

    def add(self, spec, key, floats, out, patches) -> bool:
        bucket = self.index.setdefault(spec, {}).setdefault(key, [])
        for f, _, _ in bucket:
            if len(f) == len(floats) and all(a.shape == b.shape and np.array_equal(
                    a, b, equal_nan=True) for a, b in zip(f, floats)):
                return False
        bucket.append((list(floats), out, patches))
        return True

    def find(self, spec: str, args: dict):
        """``(output, patches)`` recorded for ``spec`` on arguments like ``args``, or None."""
        bucket = self.index.get(spec)
        if not bucket:
            return None
        try:
            key, floats = fingerprint(args)
        except Unfingerprintable:
            return None
        for stored, out, patches in bucket.get(key, ()):
            if len(stored) == len(floats) and all(
                    a.shape == b.shape and (a is b or np.allclose(
                        a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
                    for a, b in zip(floats, stored)):
                return out, patches
        return None

    def plain(self) -> dict:
        """The table as plain data, each distinct array stored once."""
        arrays: dict[str, np.ndarray] = {}
        entries = []

        def pool(x):
            if isinstance(x, np.ndarray) and x.size >= 64:
                name = hashlib.sha256(f"{x.dtype.str}{x.shape}".encode()
                                      + np.ascontiguousarray(x).data).hexdigest()[:32]
                arrays.setdefault(name, x)
                return {_POOLED: name}
            if isinstance(x, (list, tuple)):
                return type(x)(pool(v) for v in x)
            if isinstance(x, dict):
                return {k: pool(v) for k, v in x.items()}
            return x

        for spec, by_key in self.index.items():
            for key, bucket in by_key.items():
                for floats, out, patches in bucket:
                    names = []
                    for a in floats:
                        name = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode()
                                              + np.ascontiguousarray(a).data).hexdigest()[:32]
                        arrays.setdefault(name, a)
                        names.append(name)
                    entries.append({"fn": spec, "key": key, "floats": names,
                                    "out": pool(out), "patches": pool(patches)})
        return {"arrays": arrays, "entries": entries}


    def by_function(self) -> dict[str, "Table"]:
        """This table split by course function (what :data:`TABLE_DIR` holds)."""
        out = {}
        for spec, by_key in self.index.items():
            part = out[spec] = Table()
            part.index[spec] = by_key
        return out


class Recorded:
    """The bundle's recorded calls (:data:`TABLE_DIR`), each function's read on its first
    use; none when the folder has no file for it."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.tables: dict[str, Table] = {}

    def _part(self, spec: str) -> Table:
        part = self.tables.get(spec)
        if part is None:
            path = self.folder / table_file(spec)
            plain = None
            if path.is_file():
                from helpers import _wire

                plain = _wire.decode(path.read_bytes(), max_bytes=MAX_TABLE_BYTES)
            part = self.tables[spec] = Table(plain)
        return part

    def holds(self, spec: str) -> bool:
        """Whether any call of ``spec`` is recorded."""
        return bool(self._part(spec).index.get(spec))

    def find(self, spec: str, args: dict):
        return self._part(spec).find(spec, args)


_table: Recorded | None = None


def table() -> Recorded:
    """The bundle's recorded calls."""
    global _table
    if _table is None:
        _table = Recorded(Path(__file__).with_name(TABLE_DIR))
    return _table


class Hidden:
    """A left-out module-level value of the course (a compiled pattern, a table, a callable
    object): every use of it (an attribute, a call, an item, iteration) raises its
    message, ``RuntimeError`` when it is hidden while the learner's own is graded, else
    ``NotImplementedError`` (finish the exercise it belongs to)."""

    __slots__ = ("_spec", "_message", "_error")

    def __init__(self, spec: str, message: str, graded: bool = False):
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_message", message)
        object.__setattr__(self, "_error", RuntimeError if graded else NotImplementedError)

    def _refuse(self, *args, **kwargs):
        raise object.__getattribute__(self, "_error")(object.__getattribute__(self, "_message"))

    def __getattr__(self, attr):
        self._refuse()

    __call__ = __getitem__ = __iter__ = __len__ = __contains__ = __setattr__ = _refuse

    def __repr__(self) -> str:
        return f"<hidden {object.__getattribute__(self, '_spec')}>"


def yours(name: str):
    """The learner's own function ``name`` defined in the running notebook, or None."""
    fn = getattr(sys.modules.get("__main__"), name, None)
    if callable(fn) and getattr(fn, "__module__", None) == "__main__":
        return fn
    return None


# -- the trusted grader's answers (a grading child only) --------------------------------


#: Bytes of one request or reply between a grading child and the trusted grader.
MAX_CALL_BYTES = 32 * 1024 * 1024
#: Exceptions a reply's error is raised as (by name); any other: RuntimeError.
_ERRORS = {e.__name__: e for e in (ValueError, TypeError, IndexError, KeyError,
                                   ZeroDivisionError, ArithmeticError, AssertionError,
                                   NotImplementedError, RuntimeError)}


def _recv_exactly(sock, n: int) -> bytes:
    chunks, left = [], n
    while left:
        data = sock.recv(min(left, 1 << 20))
        if not data:
            raise RuntimeError("the grader stopped answering the course's functions")
        chunks.append(data)
        left -= len(data)
    return b"".join(chunks)


#: Arrays of more than this many entries cross once per run: later calls name them by
#: their content's digest (a model's weights, sent with every forward pass); smaller ones
#: are written in the request (the wire's short form). Not fewer: the child never
#: remembers a request that sends an array (asked again, it would only name it), so a
#: small model's activations, new in almost every call of a sampling loop, must stay
#: written in for the calls on a context seen before to be answered from its memory.
BLOB_SIZE = 64
#: Answers kept per run for requests asked again (a model's forward pass on a context
#: seen before, the pairs of a word no merge has changed), the least recently used
#: dropped first: at most this many, of at most MEMO_BYTES of requests and replies.
MEMO_ITEMS = 4096
MEMO_BYTES = 64 * 1024 * 1024
#: How a request names an array sent before: ``{BLOB: digest}``.
BLOB = "\x00blob"
#: The grader's answer to a request naming an array it does not hold: the call that sent
#: it was answered from the worker's memory (another child asked the same), so the child
#: sends this request's arrays again.
UNSENT = "an array that was never sent"


def blob_key(a: np.ndarray) -> str:
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()[:32]


#: Values :meth:`Trusted._named` has nothing to name in (``wire.PLAIN``: this module
#: imports nothing of ``autograder``).
_LEAVES = frozenset({str, int, float, bool, type(None)})


class Trusted:
    """The course functions ``specs`` answered by the trusted grader over the socket
    ``fd``: the arguments go as plain data (each large array once: :data:`BLOB_SIZE`),
    the output (and what the call changed in its arguments) comes back."""

    def __init__(self, fd: int, specs):
        import socket

        self.sock = socket.socket(fileno=fd)
        self.specs = frozenset(specs)
        self.sent: set[str] = set()
        self.answered: OrderedDict[bytes, tuple[object, int]] = OrderedDict()
        self.answered_bytes = 0          # request -> (output, bytes): calls without effects
        self.requests: dict = {}         # call_key -> its request, for the answered ones

    def _named(self, x, new: dict, depth: int = 0, names: dict | None = None):
        """``x`` with its large arrays replaced by their names (the new ones in ``new``;
        ``names``: those known already, by ``id``)."""
        if depth > 30:
            return x
        if type(x) is np.ndarray and x.size > BLOB_SIZE and x.dtype.kind in "biufc":
            key = (names or {}).get(id(x)) or blob_key(x)
            if key not in self.sent:
                new[key] = x
            return {BLOB: key}
        if type(x) is dict:
            return {k: self._named(v, new, depth + 1, names) for k, v in x.items()}
        if type(x) in (list, tuple):
            if all(type(v) in _LEAVES for v in x):     # no array in it: as it is
                return x
            return type(x)(self._named(v, new, depth + 1, names) for v in x)
        return x

    def _keep(self, request: bytes, value, size: int) -> None:
        while self.answered and (len(self.answered) >= MEMO_ITEMS
                                 or self.answered_bytes + size > MEMO_BYTES):
            _, (_, dropped) = self.answered.popitem(last=False)
            self.answered_bytes -= dropped
        self.answered[request] = (value, size)
        self.answered_bytes += size
        if len(self.requests) > 2 * MEMO_ITEMS:     # most name requests long dropped
            self.requests = {k: r for k, r in self.requests.items() if r in self.answered}

    def _request(self, spec: str, name: str, args: dict, names: dict | None = None
                 ) -> tuple[bytes, dict]:
        """The request for a call, and the arrays it sends (not sent before; ``names``:
        their names known already, by ``id``)."""
        from helpers import _wire

        new: dict = {}
        try:
            data = _wire.encode({"fn": spec, "args": self._named(args, new, 0, names),
                                 "blobs": new}, short=True)
        except Exception as exc:
            raise TypeError(f"the course's {name} cannot take these arguments while your "
                            f"work is graded ({exc})") from None
        if len(data) > MAX_CALL_BYTES:
            raise ValueError(f"the arguments of the course's {name} are too large "
                             f"({len(data)} bytes)")
        return data, new

    def _ask(self, data: bytes) -> tuple[dict, int]:
        """The grader's reply to the request ``data``, and its size in bytes."""
        from helpers import _wire

        self.sock.sendall(len(data).to_bytes(8, "big") + data)
        size = int.from_bytes(_recv_exactly(self.sock, 8), "big")
        if size > MAX_CALL_BYTES:
            raise RuntimeError("the grader's answer is too large")
        return _wire.decode(_recv_exactly(self.sock, size), max_bytes=MAX_CALL_BYTES), size

    def __call__(self, spec: str, name: str, args: dict):
        from helpers import _wire

        names: dict = {}
        key = _wire.call_key(spec, args, names, BLOB_SIZE)
        data, new = self.requests.get(key) if key is not None else None, {}
        if data not in self.answered:                   # not known by its key: encoded
            data, new = self._request(spec, name, args, names)
        if not new and data in self.answered:           # asked before: the same answer
            self.answered.move_to_end(data)
            if key is not None:
                self.requests[key] = data
            return copy.deepcopy(self.answered[data][0])
        reply, size = self._ask(data)
        if reply.get("error") == f"ValueError: {UNSENT}":
            # a call that sent arrays was answered from memory: they never reached the
            # grader's side of this run, so this request sends its own again
            self.sent.clear()
            data, new = self._request(spec, name, args, names)
            reply, size = self._ask(data)
        self.sent |= set(new)
        if "error" in reply:
            kind, _, text = str(reply["error"]).partition(": ")
            raise _ERRORS.get(kind, RuntimeError)(text if kind in _ERRORS else reply["error"])
        patches = reply.get("patches") or []
        apply_changes(args, patches)
        if not patches and not new and len(data) + size <= MEMO_BYTES:
            self._keep(data, copy.deepcopy(reply["value"]), len(data) + size)
            if key is not None:
                self.requests[key] = data
        return reply["value"]


#: In a grading child: the trusted grader's answers (:class:`Trusted`); None elsewhere.
trusted: Trusted | None = None
#: Stubs :func:`answered_by_grader` has decided, by function.
_by_grader: dict = {}


def answered_by_grader(fn) -> bool:
    """Whether every call of the stub ``fn`` goes to the trusted grader (a grading child,
    which the grader answers ``fn`` for, no call of it recorded here): the grader reads
    its arguments against the same contract as the learner's edge
    (``helpers.course.edge.checked``), which then checks them only when the call fails."""
    if trusted is None:
        return False
    if fn not in _by_grader:
        spec = f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', '')}"
        _by_grader[fn] = spec in trusted.specs and not table().holds(spec)
    return _by_grader[fn]


def course(spec: str, name: str, message: str, args: dict, call, stand_in: bool = False):
    """What the left-out course function ``spec`` gives on ``args`` (see the module
    docstring); ``call(fn)`` calls ``fn`` with the stub's own arguments; ``stand_in``:
    ``spec`` is an exercise's reference, which the learner's function ``name`` may answer."""
    hit = table().find(spec, args)
    if hit is not None:
        out, patches = hit
        apply_changes(args, patches)
        return copy.deepcopy(out)
    if trusted is not None and spec in trusted.specs:
        return trusted(spec, name, args)
    own = yours(name) if stand_in else None
    if own is not None:
        return call(own)
    raise NotImplementedError(message)
