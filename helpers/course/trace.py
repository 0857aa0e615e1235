"""Where it goes wrong: the first named step of the reference a learner's function did not
reproduce, found by tracing the arrays each of its lines produces (issue 37).

An exercise declares its named intermediate steps once, in its module::

    @trace.steps("scaled_dot_product_attention")
    def _steps(Q, K, V, mask=None):
        scores = Q @ np.swapaxes(K, -1, -2)
        return [Step("scores", "Q Kᵀ", scores), ...]

:func:`where` runs the learner's function once more under a line tracer (only its own
frame: the arrays its local variables hold after each line, and what it returns),
matches each step with the first array of theirs equal to it (up to the tolerance, a
transpose of the last two axes or a reshape), and says which steps their code reproduced
(on which of their lines) and the first it did not: the line and variable where it
diverged and how (a known variant of the step: "the 1/√d_k scaling is missing"; a
constant factor; a constant offset; a transpose). Its words name steps, the learner's
variables and lines only: never a case's inputs or expected values.

    where(ex, fn, case)      "Where it goes wrong: ..." or None (the instant check)
    record(fn, args, kwargs) what the learner's lines held (the grader: in its child)
    to_plain / from_plain    that record as plain data for the wire, capped and checked
    explain(ex, case, seen)  the words, from a record (the grader: in its trusted process)

The grader runs :func:`record` in the sandboxed child on the failing case only, sends
:func:`to_plain` of it over the wire (no step of the reference ever reaches the child),
and matches it against the steps in the trusted process (:func:`from_plain` checks its
every field; :func:`explain` with ``brief`` names steps and the learner's lines only).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Step", "Seen", "steps", "declared", "record", "where", "explain", "to_plain",
           "from_plain", "MARK"]

#: How the feedback line begins (the instant check and the grader's page alike).
MARK = "Where it goes wrong:"
#: At most this many arrays are kept from one traced call (a loop over rows stays small).
MAX_SEEN = 400
#: At most this many bytes of arrays are kept from one traced call (what a child sends).
MAX_SEEN_BYTES = 4 * 1024 * 1024
#: A variable of a longer name (with its item's index) is not recorded.
MAX_NAME = 60


@dataclass(frozen=True, eq=False)
class Step:
    """One named step of the reference on a case: ``value``, what it is in words
    (``what``), and known wrong versions of it, ``variants``: (words, value)."""

    name: str
    what: str
    value: np.ndarray
    variants: tuple = ()


@dataclass(frozen=True, eq=False)
class Seen:
    """An array the learner's function held: in variable ``name`` after line ``line``."""

    line: int
    name: str
    value: np.ndarray


_STEPS: dict[str, Callable] = {}


def steps(name: str) -> Callable:
    """Decorator: ``fn(*args, **kwargs) -> [Step]`` are exercise ``name``'s named steps."""

    def register(fn):
        _STEPS[name] = fn
        return fn

    return register


def declared(name: str) -> bool:
    """Whether exercise ``name`` declares its steps (its module loaded first: the steps
    are declared where the exercise is)."""
    if name not in _STEPS:
        from helpers.course import registry

        try:
            registry.get(name)
        except (KeyError, ValueError, ImportError):
            return False
    return name in _STEPS


# ---------------------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------------------


def _code_of(fn):
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return getattr(fn, "__code__", None)


def _arrays(value):
    """The float arrays ``value`` is or holds (a returned tuple: each item)."""
    if isinstance(value, (tuple, list)) and len(value) <= 8 and any(
            isinstance(v, np.ndarray) for v in value):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiub" and value.size <= 1 << 16:
        return [value]
    return []


def record(fn, args: tuple, kwargs: dict) -> list[Seen]:
    """The arrays ``fn``'s own frame holds after each of its lines, in order (a variable
    is recorded again when its value changes), then what it returned (``return``)."""
    code = _code_of(fn)
    seen: list[Seen] = []
    last: dict[str, np.ndarray] = {}
    state = {"line": None, "bytes": 0}

    def keep(line, key, arr) -> np.ndarray | None:
        """``arr`` as a recorded float64 copy, or None past the caps."""
        if len(seen) >= MAX_SEEN or state["bytes"] + 8 * arr.size > MAX_SEEN_BYTES \
                or not _variable(key):
            return None
        state["bytes"] += 8 * arr.size
        kept = np.array(arr, dtype=np.float64)
        seen.append(Seen(line, key, kept))
        return kept

    def snapshot(frame):
        line = state["line"]
        for name, value in list(frame.f_locals.items()):
            for k, arr in enumerate(_arrays(value)):
                key = f"{name}[{k}]" if isinstance(value, (tuple, list)) else name
                old = last.get(key)
                if old is not None and old.shape == arr.shape and np.array_equal(
                        old, arr, equal_nan=True):
                    continue
                kept = keep(line, key, arr)
                if kept is not None:
                    last[key] = kept

    def local(frame, event, arg):
        if event in ("line", "return"):
            if state["line"] is not None:
                snapshot(frame)
            state["line"] = frame.f_lineno
            if event == "return":
                returned = np.asarray(arg) if isinstance(arg, (float, np.floating)) else arg
                for k, arr in enumerate(_arrays(returned)):   # a loss: a float, kept too
                    keep(frame.f_lineno, f"return[{k}]", arr)
        return local

    def outer(frame, event, arg):
        return local if event == "call" and frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        fn(*args, **kwargs)
    except Exception:          # the case's failure is told elsewhere; the steps before it count
        pass
    finally:
        sys.settrace(previous)
    return seen


# ---------------------------------------------------------------------------------------
# The record as plain data (the grader's wire): read back as hostile
# ---------------------------------------------------------------------------------------


def to_plain(seen: list[Seen]) -> list:
    """``seen`` as ``[[line, name, array], ...]`` (what :mod:`autograder.isolation.wire`
    carries)."""
    return [[int(s.line), str(s.name), s.value] for s in seen]


def from_plain(value) -> list[Seen]:
    """The record a child sent (``to_plain``'s form), every field checked: at most
    :data:`MAX_SEEN` entries of a line number, a name of at most :data:`MAX_NAME`
    characters and a numeric array, :data:`MAX_SEEN_BYTES` of them in all. Anything
    else is ValueError."""
    if not isinstance(value, list) or len(value) > MAX_SEEN:
        raise ValueError("a trace that is not a list of at most MAX_SEEN entries")
    out, total = [], 0
    for entry in value:
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise ValueError("a trace entry that is not [line, name, array]")
        line, name, arr = entry
        if type(line) is not int or not 0 <= line < 1 << 31 or not _variable(name) \
                or not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
            raise ValueError("a trace entry of the wrong kinds")
        total += 8 * arr.size
        if total > MAX_SEEN_BYTES:
            raise ValueError("a trace past its size cap")
        out.append(Seen(line, name, arr.astype(np.float64)))
    return out


def _variable(name) -> bool:
    """Whether ``name`` is what :func:`record` names an array: a Python identifier of
    at most :data:`MAX_NAME` characters, or one with an item's index (``out[1]``; no
    control, markup or backtick character can be in one)."""
    if not isinstance(name, str) or len(name) > MAX_NAME:
        return False
    base, bracket, index = name.partition("[")
    return base.isidentifier() and (not bracket or (index[:-1].isdigit() and index[-1:] == "]"))


# ---------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------


def _norm(a: np.ndarray) -> np.ndarray:
    """Masked entries alike: -inf and a large negative number (-1e9) are the same step."""
    a = np.array(a, dtype=np.float64)
    a[a < -1e8] = -np.inf
    return a


def _same(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> str | None:
    """"" when ``b`` equals ``a``; "transposed" or "reshaped" when it does so up to that;
    None otherwise."""
    a, b = _norm(a), _norm(b)
    with np.errstate(all="ignore"):
        if a.shape == b.shape and np.allclose(a, b, rtol, atol, equal_nan=True):
            return ""
        if a.ndim >= 2 and b.shape == np.swapaxes(a, -1, -2).shape and np.allclose(
                np.swapaxes(a, -1, -2), b, rtol, atol, equal_nan=True):
            return "transposed"
        if a.size == b.size and a.shape != b.shape and np.allclose(
                a.reshape(-1), b.reshape(-1), rtol, atol, equal_nan=True):
            return "reshaped"
    return None


def _how(step: Step, got: np.ndarray, rtol: float, atol: float) -> str:
    """How ``got`` differs from ``step``: a known variant, transposed, a constant factor
    or offset; "" when none of these."""
    for words, value in step.variants:
        if _same(np.asarray(value), got, rtol, atol) is not None:
            return f"they equal {words}"
    exp = _norm(step.value)
    if got.shape != exp.shape:
        return f"the shape is {got.shape}, not {exp.shape}"
    finite = np.isfinite(exp) & np.isfinite(got)
    if not finite.any():
        return ""
    e, g = exp[finite], got[finite]
    with np.errstate(all="ignore"):
        nz = np.abs(e) > 1e-12
        if nz.any():
            r = g[nz] / e[nz]
            if np.allclose(r, r[0], rtol=1e-6) and not np.isclose(r[0], 1.0):
                return f"every entry is {r[0]:.4g} times the right one"
        d = g - e
        if np.allclose(d, d.flat[0], rtol=1e-6, atol=1e-9):
            return f"every entry is off by {d.flat[0]:+.4g}"
    return ""


def _where_text(matched: list[tuple[Step, Seen]], missed: Step, how: str,
                shown: Seen | None) -> str:
    done = "; ".join(f"your `{_tick(s.name)}` (line {s.line}) matches {st.what}"
                     for st, s in matched[-3:])
    head = f"{MARK} {done}; " if done else f"{MARK} "
    if shown is None:
        return (head + f"no array of yours matches the next step, the {missed.name} "
                f"({missed.what})")
    if np.shape(shown.value) != np.shape(missed.value):     # the step is in no variable
        return (head + f"no variable of yours holds the {missed.name} ({missed.what}); "
                f"your `{_tick(shown.name)}` (line {shown.line}) is the first of yours "
                f"after them, and it is wrong")
    tail = f": {how}" if how else ""
    return (head + f"your `{_tick(shown.name)}` (line {shown.line}) differs from the "
            f"{missed.name}, {missed.what}{tail}")


def _tick(name: str) -> str:
    """A learner's variable name as shown between backticks (none inside it)."""
    return name.replace("`", "'")


def where(ex, fn, case) -> str | None:
    """"Where it goes wrong: ..." for the learner's ``fn`` on ``case`` of exercise ``ex``
    (None when the exercise declares no steps, the case is a scenario, or every step was
    reproduced). Runs ``fn`` once more, traced; the caller guards the call as it guards
    the learner's other calls."""
    if not declared(ex.name) or case.scenario:
        return None
    args, kwargs = case.fresh_args()
    return explain(ex, case, record(fn, args, kwargs))


def explain(ex, case, seen: list[Seen], brief: bool = False) -> str | None:
    """"Where it goes wrong: ..." from ``seen``, what the learner's function held on
    ``case`` (:func:`record`), matched against exercise ``ex``'s steps on it; None when
    it declares none, the case is a scenario or every step was reproduced. ``brief``
    (a hidden case's words): the steps' names and the learner's lines only, not how
    their value differs."""
    if not declared(ex.name) or case.scenario:
        return None
    args, kwargs = case.fresh_args()
    try:
        with np.errstate(all="ignore"):
            reference = _STEPS[ex.name](*args, **kwargs)
    except Exception:
        return None
    rtol, atol = max(ex.rtol, 1e-6), max(ex.atol, 1e-8)
    if reference and any(_same(reference[-1].value, s.value, rtol, atol) is not None
                         for s in seen):
        return None        # its output is the right one: no step of it went wrong
    matched: list[tuple[Step, Seen]] = []
    start = 0
    for i, step in enumerate(reference):
        hit = next(((k, s) for k, s in enumerate(seen[start:], start)
                    if _same(step.value, s.value, rtol, atol) is not None), None)
        if hit is None and _later_held(reference[i + 1:], seen[start:], rtol, atol):
            continue       # a step held in no variable, the next ones right: passed over
        if hit is None:
            after = seen[start:]
            # a later step in a known wrong version says most: "they equal softmax(scores)"
            step = next((later for later in reference[i:] if _variant_seen(later, after,
                                                                           rtol, atol)), step)
            shown = _closest(step, after, rtol, atol)
            how = _how(step, shown.value, rtol, atol) if shown is not None and not brief else ""
            return _where_text(matched, step, how, shown)
        start = hit[0] + 1
        matched.append((step, hit[1]))
    return None


def _later_held(later: list[Step], after: list[Seen], rtol: float, atol: float) -> bool:
    """Whether the learner holds one of the ``later`` steps, right."""
    return any(_same(st.value, s.value, rtol, atol) is not None for st in later for s in after)


def _variant_seen(step: Step, after: list[Seen], rtol: float, atol: float) -> bool:
    return any(_same(np.asarray(v), s.value, rtol, atol) is not None
               for _, v in step.variants for s in after)


def _closest(step: Step, after: list[Seen], rtol: float, atol: float) -> Seen | None:
    """The learner's array that stands where ``step`` should: one equal to a known variant
    of it, else the first of its shape (or its size), else the first at all."""
    for s in after:
        if any(_same(np.asarray(v), s.value, rtol, atol) is not None for _, v in step.variants):
            return s
    shape = np.shape(step.value)
    return (next((s for s in after if s.value.shape == shape), None)
            or next((s for s in after if s.value.size == np.size(step.value)), None)
            or (after[0] if after else None))
