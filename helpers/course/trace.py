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

    where(ex, fn, case)      "Where it goes wrong: ..." or None
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Step", "Seen", "steps", "declared", "record", "where", "MARK"]

#: How the feedback line begins (the instant check and the grader's page alike).
MARK = "Where it goes wrong:"
#: At most this many arrays are kept from one traced call (a loop over rows stays small).
MAX_SEEN = 400


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
    """Whether exercise ``name`` declares its steps."""
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
    state = {"line": None}

    def snapshot(frame):
        line = state["line"]
        for name, value in list(frame.f_locals.items()):
            for k, arr in enumerate(_arrays(value)):
                key = f"{name}[{k}]" if isinstance(value, (tuple, list)) else name
                old = last.get(key)
                if old is not None and old.shape == arr.shape and np.array_equal(
                        old, arr, equal_nan=True):
                    continue
                if len(seen) < MAX_SEEN:
                    last[key] = np.array(arr, dtype=np.float64)
                    seen.append(Seen(line, key, last[key]))

    def local(frame, event, arg):
        if event in ("line", "return"):
            if state["line"] is not None:
                snapshot(frame)
            state["line"] = frame.f_lineno
            if event == "return":
                for k, arr in enumerate(_arrays(arg)):
                    if len(seen) < MAX_SEEN:
                        seen.append(Seen(frame.f_lineno, f"return[{k}]",
                                         np.array(arr, dtype=np.float64)))
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
    done = "; ".join(f"your `{s.name}` (line {s.line}) matches {st.what}"
                     for st, s in matched[-3:])
    head = f"{MARK} {done}; " if done else f"{MARK} "
    if shown is None:
        return (head + f"no array of yours matches the next step, the {missed.name} "
                f"({missed.what})")
    tail = f": {how}" if how else ""
    return (head + f"your `{shown.name}` (line {shown.line}) differs from the {missed.name}, "
            f"{missed.what}{tail}")


def where(ex, fn, case) -> str | None:
    """"Where it goes wrong: ..." for the learner's ``fn`` on ``case`` of exercise ``ex``
    (None when the exercise declares no steps, the case is a scenario, or every step was
    reproduced). Runs ``fn`` once more, traced; the caller guards the call as it guards
    the learner's other calls."""
    if not declared(ex.name) or case.scenario:
        return None
    args, kwargs = case.fresh_args()
    try:
        with np.errstate(all="ignore"):
            reference = _STEPS[ex.name](*args, **kwargs)
    except Exception:
        return None
    args, kwargs = case.fresh_args()
    seen = record(fn, args, kwargs)
    rtol, atol = max(ex.rtol, 1e-6), max(ex.atol, 1e-8)
    matched: list[tuple[Step, Seen]] = []
    start = 0
    for i, step in enumerate(reference):
        hit = next(((k, s) for k, s in enumerate(seen[start:], start)
                    if _same(step.value, s.value, rtol, atol) is not None), None)
        if hit is None:
            after = seen[start:]
            # a later step in a known wrong version says most: "they equal softmax(scores)"
            step = next((later for later in reference[i:] if _variant_seen(later, after,
                                                                           rtol, atol)), step)
            shown = _closest(step, after, rtol, atol)
            how = _how(step, shown.value, rtol, atol) if shown is not None else ""
            return _where_text(matched, step, how, shown)
        start = hit[0] + 1
        matched.append((step, hit[1]))
    return None


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
