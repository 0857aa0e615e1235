"""In the worker (trusted): the course functions a child's job may have answered.

A job may list ``answers``: the course functions its child may use (an exercise's
earlier functions, credit isolation). The child's copy of ``helpers`` holds no course
function's code (autograder/isolation/student_helpers.py); its stubs send each call, as
plain data (:mod:`autograder.isolation.wire`), on one end of a socket pair, and the
worker computes it here (:func:`answer`) and replies. A hostile request gets an error
reply, never an exception in the worker. Replies are remembered (least recently used
first within :data:`MEMO_BYTES`) for the identical requests that follow.
"""

from __future__ import annotations

import hashlib
import socket
import time

from autograder import safe_text
from autograder.isolation import budget, wire
from autograder.isolation.same import resolve

#: The memory a run may use when no limit is given (the grader's default, MB).
DEFAULT_MEMORY_BYTES = 2048 * 2**20


def course_function(spec: str):
    """The course function ``"module:attr"`` names, as learners call it: a function of
    ``helpers.reference`` (the math alone) is the package's export of it, checked at the
    edge by its exercise's contract; anything else is what the spec names."""
    import importlib

    module, _, attr = spec.partition(":")
    if module == "helpers.reference":
        exported = getattr(importlib.import_module("helpers"), attr, None)
        if callable(exported):
            return exported
    return resolve(spec)


def recv_exactly(sock: socket.socket, n: int, deadline: float) -> bytearray | None:
    """Exactly ``n`` bytes from ``sock`` by ``deadline`` (else None), read into one buffer
    allocated once: a message costs its own size, never a second copy."""
    buffer = bytearray(n)
    view, got = memoryview(buffer), 0
    while got < n:
        wait = deadline - time.monotonic()
        if wait <= 0:
            return None
        sock.settimeout(wait)
        try:
            size = sock.recv_into(view[got:], min(n - got, 1 << 20))
        except OSError:
            return None
        if not size:
            return None
        got += size
    return buffer


def send_message(sock: socket.socket, head: bytes, body) -> None:
    """``head`` then ``body`` on ``sock``, without joining them (a join copies the body)."""
    sock.sendall(head)
    sock.sendall(body)


#: The course functions the worker has answered with, by spec, and their parameters
#: (each resolved once).
_ANSWERING: dict = {}
_PARAMETERS: dict = {}


def _parameters(fn):
    import inspect

    return inspect.signature(fn).parameters


def _bind(fn, args: dict) -> tuple[list, dict]:
    """``fn``'s positional and keyword arguments from ``args`` (every parameter by name,
    as the stub sends them)."""
    params = _PARAMETERS[fn] if fn in _PARAMETERS else _PARAMETERS.setdefault(fn, _parameters(fn))
    if set(args) != set(params):
        raise TypeError(f"{fn.__name__} takes {', '.join(params)}")
    pos, kw = [], {}
    for name, p in params.items():
        if p.kind is p.VAR_POSITIONAL:
            pos.extend(args[name])
        elif p.kind is p.VAR_KEYWORD:
            kw.update(args[name])
        elif p.kind is p.POSITIONAL_ONLY:
            pos.append(args[name])
        else:
            kw[name] = args[name]
    return pos, kw


#: Bytes of the arrays one job's child may have the worker keep (named by digest).
MAX_BLOB_BYTES = 256 * 1024 * 1024


def _unnamed(x, blobs: dict, depth: int = 0):
    """``x`` with every ``{BLOB: digest}`` replaced by a read-only view of that array."""
    from autograder.isolation.course_calls import BLOB, UNSENT

    if depth > 40:
        raise ValueError("nested too deeply")
    if type(x) is dict:
        if len(x) == 1 and BLOB in x:
            if x[BLOB] not in blobs:
                raise ValueError(UNSENT)
            view = blobs[x[BLOB]].view()
            view.flags.writeable = False          # kept for later calls: never changed
            return view
        return {k: _unnamed(v, blobs, depth + 1) for k, v in x.items()}
    if type(x) in (list, tuple):
        if all(type(v) in wire.PLAIN for v in x):      # no name in it: as it is
            return x
        return type(x)(_unnamed(v, blobs, depth + 1) for v in x)
    return x


#: Replies the worker gave, by the digest of their request (its arrays written in, sent
#: with it, or named by their content): the same request from any child of this grading
#: process (the first call of each exercise's run sends the same model) gets the
#: same reply without being computed again (the visible cases run in the notebook run
#: and in the exercise's, and a class's notebooks ask the same of the course model).
_MEMO: dict[bytes, tuple[str, bytes | memoryview]] = {}
MEMO_BYTES = 64 * 1024 * 1024
_memo_size = [0]


def request_key(request) -> bytes:
    """The name a request's reply is remembered by: its digest (computed once a call)."""
    return hashlib.sha256(request).digest()


def make_room(size: int) -> None:
    """Forget the remembered replies unless a reply of ``size`` bytes fits beside them
    within MEMO_BYTES: called before such a reply is read, so the replies remembered and
    the one arriving never hold more than MEMO_BYTES together."""
    if _memo_size[0] + size > MEMO_BYTES:
        _MEMO.clear()
        _memo_size[0] = 0


def remember(key: bytes, spec: str, reply) -> None:
    """Keep ``reply`` to the request of ``key`` (:func:`request_key`) for the identical
    requests that follow (within MEMO_BYTES)."""
    make_room(len(reply))
    _MEMO[key] = (spec, reply)
    _memo_size[0] += len(reply)


def remembered(key: bytes, answers: frozenset):
    """The reply given before to the request of ``key``, if a run that may ask it asks."""
    hit = _MEMO.get(key)
    return hit[1] if hit is not None and hit[0] in answers else None


def answer(data: bytes, answers: frozenset, blobs: Held | None = None,
           memory_bytes: int = DEFAULT_MEMORY_BYTES) -> bytes:
    """The reply to one request of a child, computed in this process (see
    :func:`compute`), remembered for the identical requests that follow. (The worker
    computes in a helper process instead: :mod:`autograder.isolation.answerer`.)"""
    key = request_key(data)
    hit = remembered(key, answers)
    if hit is not None:
        return hit
    reply, spec = compute(data, answers, blobs, memory_bytes)
    if spec is not None:
        remember(key, spec, reply)
    return reply


def compute(data: bytes, answers: frozenset, blobs: Held | None = None,
            memory_bytes: int = DEFAULT_MEMORY_BYTES) -> tuple[bytes, str | None]:
    """The reply to one request of a child: the course function it names (one of
    ``answers``) on its arguments, with what the call changed in them; or the error.
    The request is hostile: decoded by the wire's schema, within its caps, and checked
    against the run's budget (``memory_bytes``, :func:`autograder.isolation.budget.check`)
    before the call runs; the arrays it sends for later calls are kept in ``blobs`` (one
    job's, within :data:`MAX_BLOB_BYTES`) under their content's digest, computed here.
    Also returns the function's spec when the reply may be remembered, else None (an
    error): the request's bytes decide its reply, each array in it written in, sent with
    it or named by the digest of its content. (A child whose call that sent arrays was
    answered from memory sends them again when a later call names them:
    :data:`autograder.isolation.course_calls.UNSENT`.)"""
    import warnings

    import numpy as np

    from autograder.isolation import course_calls

    blobs = Held() if blobs is None else blobs
    try:
        req = wire.decode(data, max_bytes=course_calls.MAX_CALL_BYTES)
        if not isinstance(req, dict) or set(req) != {"fn", "args", "blobs"} or \
                not isinstance(req["args"], dict) or not isinstance(req["fn"], str) or \
                not isinstance(req["blobs"], dict):
            raise ValueError("a malformed request")
        if req["fn"] not in answers:
            raise RuntimeError(f"the grader computes only the earlier course functions "
                               f"this run may use, not {req['fn'][:120]}")
        for a in req["blobs"].values():
            if type(a) is not np.ndarray:
                raise ValueError("a malformed request")
            if blobs.nbytes + a.nbytes > MAX_BLOB_BYTES:
                raise MemoryError("too many arrays sent to the grader in one run")
            blobs[course_calls.blob_key(a)] = a          # named by what it holds
        spec = req["fn"]                     # the course's own, in this trusted process
        fn = preload(spec)
        args = _unnamed(req["args"], blobs)
        pos, kw = _bind(fn, args)
        budget.check(spec.rpartition(":")[2], args, memory_bytes)
        before = course_calls.snapshot(args)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            value = fn(*pos, **kw)
        out = wire.encode({"value": value, "patches": course_calls.changes(args, before)},
                          short=True)
        if len(out) > course_calls.MAX_CALL_BYTES:
            raise ValueError("the output is too large to send")
        return out, spec
    except Exception as exc:
        return error_reply(f"{type(exc).__name__}: {exc}"), None


class Held(dict):
    """The arrays one job's child sent for later calls, by the digest of their content,
    with their total size kept as they arrive (a job may send thousands: summing them
    on every call cost more than the calls of a sampling loop)."""

    nbytes = 0

    def __setitem__(self, key: str, array) -> None:
        if key not in self:
            self.nbytes += array.nbytes
        super().__setitem__(key, array)


def error_reply(text: str) -> bytes:
    """A reply that makes the child's call raise (``"Type: message"``)."""
    return wire.encode({"error": safe_text.shorten(text, safe_text.CHILD_ERROR_CHARS)},
                       short=True)


def preload(spec: str):
    """The course function ``spec`` names, imported once in this (trusted) process."""
    if spec not in _ANSWERING:
        _ANSWERING[spec] = course_function(spec)
    return _ANSWERING[spec]
