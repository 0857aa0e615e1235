"""How an output is compared with the right one, in words a learner can act on:
shapes first, then the first differing entry, expected against got, with hints (a
transpose, a constant factor, float32 rounding, NaN where a number belongs). Used by
:mod:`helpers.judge` (and :mod:`helpers.checks`' ``assert_close``) and by the exercises'
own ``compare`` functions."""

from __future__ import annotations

import hashlib

import numpy as np

from helpers.exercises import ATOL, RTOL, Exercise
from helpers.exercises import quiet as _quiet

_ATTENTION_HINT = ("is the softmax stable (subtract each row's maximum before exp), and do "
                   "masked scores use -inf or a large negative number consistently?")


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters and ``...`` when longer: the one truncation of
    the course's messages to the learner (the grader cuts its records again)."""
    return text if len(text) <= limit else text[:limit] + "..."


def _num(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    v = float(v)
    if np.isnan(v) or np.isinf(v):
        return str(v)
    return f"{v:.6g}"


def _fmt_array(a, limit: int = 48, indent: int = 8) -> str:
    try:
        arr = np.asarray(a)
    except Exception:
        return repr(a)
    if arr.dtype == object or arr.dtype.kind not in "biufc":     # text: tokens, pairs
        text = repr(a)
        return text if len(text) <= 200 else f"{shorten(text, 200)} ({len(a)} items)"
    if arr.size <= limit:
        text = np.array2string(arr, precision=6, separator=", ", max_line_width=96,
                               suppress_small=False)
        return text.replace("\n", "\n" + " " * indent)
    lo, hi = (arr.min(), arr.max()) if arr.size else (0, 0)
    return f"array of shape {arr.shape}, values from {_num(lo)} to {_num(hi)}"


def _expected_got(expected, got) -> str:
    """Two aligned lines: the expected array, then the one that was got."""
    return (f"\n    expected: {_fmt_array(expected, indent=14)}"
            f"\n    got:      {_fmt_array(got, indent=14)}")


def _fmt_value(v, indent: int = 8) -> str:
    if isinstance(v, np.random.Generator):
        return "a numpy Generator (see the case's words for its seed)"
    if isinstance(v, dict) and v and all(isinstance(x, (int, str)) for x in v.values()):
        head = dict(list(v.items())[:6])                          # e.g. a vocabulary
        return f"dict of {len(v)} entries: {head!r}" + (" ..." if len(v) > 6 else "")
    if isinstance(v, dict):
        parts = []
        for k, x in v.items():
            if k == "blocks":
                parts.append(f"blocks: {len(x)} block(s) with keys {', '.join(x[0])}" if x
                             else "blocks: []")
            else:
                parts.append(f"{k} {list(np.shape(x))}")
        return "dict with " + "; ".join(parts)
    if isinstance(v, (list, tuple, np.ndarray)):
        return _fmt_array(v, indent=indent)
    return repr(v)


def _as_float_array(got, what: str):
    """(array, None) or (None, problem)."""
    if got is None:
        return None, f"{what} is None: is a `return` missing?"
    try:
        with _quiet():
            arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return None, (f"{what} could not be read as an array of numbers ({exc}); got "
                      f"{type(got).__name__}")
    return arr, None


def _close(a: np.ndarray, b: np.ndarray, equal_nan: bool = False, rtol: float = RTOL,
           atol: float = ATOL) -> np.ndarray:
    with _quiet():
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _tolerance_note(rtol: float, atol: float) -> str:
    """The tolerances a failed comparison used, in words (issue 22)."""
    return (f"\n    (judged with rtol={rtol:g}, atol={atol:g}: each entry must be within "
            f"atol + rtol * |expected| of the expected one)")


def _array_problem(ex: Exercise | None, expected, got, what: str = "the output",
                   part: str | None = None) -> str | None:
    rtol, atol = ex.tolerance(part) if ex is not None else (RTOL, ATOL)
    exp = np.asarray(expected, dtype=np.float64)
    if isinstance(got, tuple):
        msg = f"{what} should be one array, got a tuple of {len(got)} items"
        first, _ = _as_float_array(got[0], what) if got else (None, None)
        if first is not None and first.shape == exp.shape and _close(first, exp, rtol=rtol,
                                                                      atol=atol).all():
            msg += " (the first item is right: return only that one)"
        return msg
    arr, problem = _as_float_array(got, what)
    if problem:
        return problem
    if arr.shape != exp.shape:
        msg = f"{what} has the wrong shape: expected {exp.shape}, got {arr.shape}"
        if arr.ndim == 2 and arr.T.shape == exp.shape and _close(arr.T, exp, rtol=rtol, atol=atol).all():
            msg += " (it is the transpose of the expected output)"
        elif arr.shape == () and exp.ndim:
            msg += " (a single number instead of an array)"
        elif exp.shape == () and arr.size == 1:
            msg += " (return a single number, e.g. float(...), not an array)"
        return msg
    ok = _close(arr, exp, rtol=rtol, atol=atol)
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    idx = tuple(int(i) for i in bad[0])
    where = f" at index {idx}" if idx else ""
    e, g = exp[idx], arr[idx]
    if exp.shape == () and np.isfinite(g):
        return (f"{what}: expected {_num(e)}, got {_num(g)}{_precision_hint(got, exp, arr)}"
                f"{_tolerance_note(rtol, atol)}")
    if not np.isfinite(g) and np.isfinite(e):
        hint = (ex.nan_hint if ex is not None else "") or _ATTENTION_HINT
        n_bad = int((~np.isfinite(arr) & np.isfinite(exp)).sum())
        return (f"{what}: got {_num(g)}{where} where {_num(e)} was expected "
                f"({n_bad} non-finite entr{'y' if n_bad == 1 else 'ies'}): {hint}")
    msg = (f"{what}: wrong values ({len(bad)} of {exp.size} entries differ); first "
           f"difference{where}: expected {_num(e)}, got {_num(g)}")
    # the hints first, the arrays last: a long message is cut at its end (feedback pages)
    ratio = _constant_ratio(exp, arr) if exp.size > 1 else None
    if ratio is not None:
        msg += f"\n    (every entry is {_num(ratio)} times the expected one)"
    msg += _precision_hint(got, exp, arr)
    if ex is not None and ex.near_miss:
        with _quiet():
            if np.allclose(arr, exp, rtol=1e-3, atol=1e-5):
                msg += f"\n    (nearly right: {ex.near_miss})"
    msg += _tolerance_note(rtol, atol)
    return msg + _expected_got(exp, arr) if exp.size > 1 else msg


def _precision_hint(got, exp: np.ndarray, arr: np.ndarray) -> str:
    """A hint when the answer is right up to float32 rounding."""
    dtype = getattr(got, "dtype", None)
    if dtype is None and isinstance(got, (tuple, list)) and got:
        dtype = getattr(got[0], "dtype", None)
    low = dtype in (np.float32, np.float16) if dtype is not None else False
    with _quiet():
        near = bool(np.allclose(arr, exp, rtol=1e-3, atol=1e-5))
    if low and near:
        return (f"\n    (your answer is {dtype}, and right up to its rounding: compute in "
                f"float64, e.g. np.asarray(x, dtype=np.float64))")
    return ""


def _constant_ratio(exp: np.ndarray, arr: np.ndarray):
    with _quiet():
        nz = np.abs(exp) > 1e-12
        if nz.sum() < 1 or not np.isfinite(arr).all():
            return None
        r = arr[nz] / exp[nz]
        if np.allclose(r, r[0], rtol=1e-6) and not np.isclose(r[0], 1.0) and r[0] != 0 and \
                np.allclose(arr[~nz], 0.0, atol=ATOL):
            return float(r[0])
    return None


def _mask_problem(expected, got) -> str | None:
    arr, problem = _as_float_array(got, "the mask")
    if problem:
        return problem
    exp = np.asarray(expected)
    if arr.shape != exp.shape:
        return f"the mask has the wrong shape: expected {exp.shape}, got {arr.shape}"
    if np.array_equal(arr, exp.astype(np.float64)):
        return None
    idx = tuple(int(i) for i in np.argwhere(arr != exp)[0])
    return (f"the mask has wrong entries; first at [i, j] = {list(idx)}: expected "
            f"{bool(exp[idx])}, got {_fmt_array(np.asarray(got)[idx])}"
            f"{_expected_got(exp, np.asarray(got))}")


def nested_problem(ex: Exercise | None, expected, got, what: str = "the output",
                   parts: tuple[str, ...] = ()) -> str | None:
    """Compare an output made of arrays, tuples and dicts of arrays (a gradient for
    every parameter): the first part that is wrong, named (``grads['W_Q']``)."""
    if isinstance(expected, tuple):
        names = parts or tuple(f"item {i}" for i in range(len(expected)))
        if isinstance(got, np.ndarray) or not isinstance(got, (tuple, list)):
            return (f"expected a tuple ({', '.join(names)}), got "
                    f"{'None: is a `return` missing?' if got is None else type(got).__name__}")
        if len(got) != len(expected):
            return f"expected a tuple of {len(expected)} ({', '.join(names)}), got {len(got)} items"
        for name, e, g in zip(names, expected, got):
            p = nested_problem(ex, e, g, name)
            if p:
                return p
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{what} should be a dict with keys {', '.join(expected)}, got {type(got).__name__}"
        missing = [k for k in expected if k not in got]
        extra = [k for k in got if k not in expected]
        if missing or extra:
            return (f"{what} should have the keys {', '.join(expected)}"
                    + (f"; missing {', '.join(map(str, missing))}" if missing else "")
                    + (f"; unexpected {', '.join(map(str, extra))}" if extra else ""))
        for k in expected:
            p = nested_problem(ex, expected[k], got[k], f"{what}[{k!r}]")
            if p:
                return p
        return None
    if isinstance(expected, list) and expected and isinstance(expected[0], dict):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            return f"{what} should be a list of {len(expected)} dicts, one per block"
        for i, (e, g) in enumerate(zip(expected, got)):
            p = nested_problem(ex, e, g, f"{what}[{i}]")
            if p:
                return p
        return None
    return _array_problem(ex, expected, got, what)


def model_fingerprint(obj) -> str:
    """A hash of every number in a (nested) params dict: equal models, equal hashes (the
    key of the reference logits that judging and diagnosing generate reuse)."""
    h = hashlib.sha1()

    def feed(o):
        if isinstance(o, dict):
            for k in sorted(o):
                h.update(str(k).encode())
                feed(o[k])
        elif isinstance(o, (list, tuple)) and o and isinstance(o[0], dict):
            for x in o:
                feed(x)
        else:
            a = np.asarray(o, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())

    feed(obj)
    return h.hexdigest()
