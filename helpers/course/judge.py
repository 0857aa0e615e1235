"""The judge: whether an output of an exercise's function is right, and why not, in words.

One judge for the whole course, used in two places: :mod:`helpers.checks` (the
notebook's instant ``check``, which runs the learner's function on the visible cases) and
the grader (``autograder/engine/grading.py``), which runs the function on the visible and
hidden cases in a sandbox and judges the returned values here, in its own process. The
judge never runs learner code: it takes outputs (or the error raised) and the
:class:`~helpers.course.exercise.Case` they answer. Every function takes the
:class:`~helpers.course.exercise.Exercise` itself, looked up once by its caller.

    cases(ex, hidden=False, group=None, seed=None)
                                            the visible (or hidden) cases of an exercise
    compare(ex, case, got)                  None when right; else the case, the problem and
                                            the known mistake that gives exactly ``got``
    error_text(ex, case, error, exc)        the same words for a case that raised
    diagnose(ex, case, got)                 the known mistakes whose output is ``got``
    changed_inputs(case, args, kwargs)      which inputs a call modified (positions, names)

A function must leave its inputs as they were: ``compare(..., changed=...)`` (what
:func:`changed_inputs` observed, or what the grader's child reported) fails an otherwise
right output with the named mistake "modified its input `x` in place".

Values are compared as float64 with ``rtol=1e-6, atol=1e-8`` unless an exercise states
other tolerances; dtypes are judged only where the contract says so (``dtype_judged``,
masks); NaN or inf where a number is expected fails. Shapes first, then the first
differing entry, expected against got, with hints (a transpose, a constant factor,
float32 rounding, NaN where a number belongs).

``python -m helpers.course.judge`` prints the cases of every exercise (name, group, words).
"""

from __future__ import annotations

import copy
import inspect
import traceback

import numpy as np

from helpers.course import registry
from helpers.course.contract import dtype_problem
from helpers.course.exercise import ATOL, RTOL, Case, Exercise, Mistake, quiet
from helpers.course.scenarios import RAISES
from helpers.course.text import array_text, expected_got, number, value_text
from helpers._same import differs

__all__ = ["cases", "groups", "compare", "diagnose", "error_text", "headline", "mistake_lines",
           "DIAGNOSIS", "quiet", "changed_inputs",
           "in_place_text", "array_problem", "as_float_array", "close", "mask_problem",
           "nested_problem", "output_problem", "same_output", "differs", "user_frames",
           "RTOL", "ATOL"]


def groups(ex: Exercise, hidden: bool | None = None) -> list[str]:
    """The group names of ``ex``'s cases (visible, hidden, or both when None)."""
    out = []
    for c in ex.all_cases():
        if (hidden is None or c.hidden == hidden) and c.group not in out:
            out.append(c.group)
    return out


def cases(ex: Exercise, hidden: bool = False, group: str | None = None,
          seed: int | None = None) -> list[Case]:
    """The visible (``hidden=False``) or hidden cases of exercise ``ex``; the hidden
    ones drawn from its contract with ``seed`` (the grader's per-student seed; the
    default seed when None)."""
    selected = [c for c in ex.all_cases(seed) if c.hidden == hidden]
    if group is not None:
        selected = [c for c in selected if c.group == group]
        if not selected:
            raise ValueError(
                f"{ex.name} has no {'hidden' if hidden else 'visible'} cases in group "
                f"{group!r}; its groups are: {', '.join(groups(ex, hidden))}")
    return copy.deepcopy(selected)     # nothing a caller does to them leaks into the next call


def user_frames(exc: BaseException) -> list:
    helpers_dir = __file__.rsplit("/", 2)[0] + "/"          # the course's own frames
    return [f for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.startswith(helpers_dir) and "/numpy/" not in f.filename]


def _student_location(exc: BaseException) -> str:
    """' (in softmax, line 3 `e = np.exp(z)`)' for the innermost frame outside NumPy and us."""
    frames = user_frames(exc)
    if not frames:
        return ""
    f = frames[-1]
    code = f" `{f.line.strip()}`" if f.line else ""
    return f" (in {f.name}, line {f.lineno}{code})"


# ---------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------


def _describe_input(ex: Exercise, case: Case) -> str:
    params = list(inspect.signature(ex.signature).parameters)
    named = [(params[i] if i < len(params) else f"arg{i}", a) for i, a in enumerate(case.args)]
    named += list(case.kwargs.items())
    return "\n".join(f"    {k} = {value_text(v, indent=len(k) + 7)}" for k, v in named)


def _case_header(ex: Exercise, case: Case) -> str:
    kind = "hidden" if case.hidden else "visible"
    return (f"Case {case.name!r} ({kind}, group {case.group!r}): {case.description}.\n"
            f"  Input:\n{_describe_input(ex, case)}")


# ---------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------


ATTENTION_HINT = ("is the softmax stable (subtract each row's maximum before exp), and do "
                  "masked scores use -inf or a large negative number consistently?")


def as_float_array(got, what: str):
    """(array, None) or (None, problem)."""
    if got is None:
        return None, f"{what} is None: is a `return` missing?"
    try:
        with quiet():
            arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return None, (f"{what} could not be read as an array of numbers ({exc}); got "
                      f"{type(got).__name__}")
    return arr, None


def close(a: np.ndarray, b: np.ndarray, equal_nan: bool = False, rtol: float = RTOL,
           atol: float = ATOL) -> np.ndarray:
    with quiet():
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _tolerance_note(rtol: float, atol: float) -> str:
    """The tolerances a failed comparison used, in words (issue 22)."""
    return (f"\n    (judged with rtol={rtol:g}, atol={atol:g}: each entry must be within "
            f"atol + rtol * |expected| of the expected one)")


def array_problem(ex: Exercise | None, expected, got, what: str = "the output",
                   part: str | None = None) -> str | None:
    rtol, atol = ex.tolerance(part) if ex is not None else (RTOL, ATOL)
    exp = np.asarray(expected, dtype=np.float64)
    if isinstance(got, tuple):
        msg = f"{what} should be one array, got a tuple of {len(got)} items"
        first, _ = as_float_array(got[0], what) if got else (None, None)
        if first is not None and first.shape == exp.shape and close(first, exp, rtol=rtol,
                                                                      atol=atol).all():
            msg += " (the first item is right: return only that one)"
        return msg
    arr, problem = as_float_array(got, what)
    if problem:
        return problem
    if arr.shape != exp.shape:
        msg = f"{what} has the wrong shape: expected {exp.shape}, got {arr.shape}"
        if arr.ndim == 2 and arr.T.shape == exp.shape and close(arr.T, exp, rtol=rtol, atol=atol).all():
            msg += " (it is the transpose of the expected output)"
        elif arr.shape == () and exp.ndim:
            msg += " (a single number instead of an array)"
        elif exp.shape == () and arr.size == 1:
            msg += " (return a single number, e.g. float(...), not an array)"
        return msg
    ok = close(arr, exp, rtol=rtol, atol=atol)
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    idx = tuple(int(i) for i in bad[0])
    where = f" at index {idx}" if idx else ""
    e, g = exp[idx], arr[idx]
    if exp.shape == () and np.isfinite(g):
        return (f"{what}: expected {number(e)}, got {number(g)}{_precision_hint(got, exp, arr)}"
                f"{_tolerance_note(rtol, atol)}")
    if not np.isfinite(g) and np.isfinite(e):
        hint = (ex.nan_hint if ex is not None else "") or ATTENTION_HINT
        n_bad = int((~np.isfinite(arr) & np.isfinite(exp)).sum())
        return (f"{what}: got {number(g)}{where} where {number(e)} was expected "
                f"({n_bad} non-finite entr{'y' if n_bad == 1 else 'ies'}): {hint}")
    msg = (f"{what}: wrong values ({len(bad)} of {exp.size} entries differ); first "
           f"difference{where}: expected {number(e)}, got {number(g)}")
    # the hints first, the arrays last: a long message is cut at its end (feedback pages)
    ratio = _constant_ratio(exp, arr) if exp.size > 1 else None
    if ratio is not None:
        msg += f"\n    (every entry is {number(ratio)} times the expected one)"
    msg += _precision_hint(got, exp, arr)
    if ex is not None and ex.near_miss:
        with quiet():
            if np.allclose(arr, exp, rtol=1e-3, atol=1e-5):
                msg += f"\n    (nearly right: {ex.near_miss})"
    msg += _tolerance_note(rtol, atol)
    return msg + expected_got(exp, arr) if exp.size > 1 else msg


def _precision_hint(got, exp: np.ndarray, arr: np.ndarray) -> str:
    """A hint when the answer is right up to float32 rounding."""
    dtype = getattr(got, "dtype", None)
    if dtype is None and isinstance(got, (tuple, list)) and got:
        dtype = getattr(got[0], "dtype", None)
    low = dtype in (np.float32, np.float16) if dtype is not None else False
    with quiet():
        near = bool(np.allclose(arr, exp, rtol=1e-3, atol=1e-5))
    if low and near:
        return (f"\n    (your answer is {dtype}, and right up to its rounding: compute in "
                f"float64, e.g. np.asarray(x, dtype=np.float64))")
    return ""


def _constant_ratio(exp: np.ndarray, arr: np.ndarray):
    with quiet():
        nz = np.abs(exp) > 1e-12
        if nz.sum() < 1 or not np.isfinite(arr).all():
            return None
        r = arr[nz] / exp[nz]
        if np.allclose(r, r[0], rtol=1e-6) and not np.isclose(r[0], 1.0) and r[0] != 0 and \
                np.allclose(arr[~nz], 0.0, atol=ATOL):
            return float(r[0])
    return None


def _exact(expected, got, what: str) -> tuple[np.ndarray, np.ndarray, str | None]:
    """``(expected, got)`` as arrays, and what is wrong with ``got`` before its entries
    are compared exactly (not numbers, another shape); the problem is "" when they are
    equal and None when only the entries differ."""
    arr, problem = as_float_array(got, what)
    exp = np.asarray(expected)
    if problem:
        return exp, arr, problem
    if arr.shape != exp.shape:
        return exp, arr, f"{what} has the wrong shape: expected {exp.shape}, got {arr.shape}"
    return exp, arr, "" if np.array_equal(arr, exp.astype(np.float64)) else None


def mask_problem(expected, got) -> str | None:
    exp, arr, problem = _exact(expected, got, "the mask")
    if problem is not None:
        return problem or None
    idx = tuple(int(i) for i in np.argwhere(arr != exp)[0])
    return (f"the mask has wrong entries; first at [i, j] = {list(idx)}: expected "
            f"{bool(exp[idx])}, got {array_text(np.asarray(got)[idx])}"
            f"{expected_got(exp, np.asarray(got))}")


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
    return array_problem(ex, expected, got, what)


def _ids_problem(expected, got) -> str | None:
    exp, _, problem = _exact(expected, got, "the output")
    if problem is not None:
        return problem or None
    return f"wrong values: expected {exp.tolist()}, got {np.asarray(got).tolist()}"


def _tuple_problem(ex: Exercise, expected, got) -> str | None:
    parts = ex.parts
    if isinstance(got, np.ndarray) or not isinstance(got, (tuple, list)):
        return (f"expected a tuple ({', '.join(parts)}), got "
                f"{'None: is a `return` missing?' if got is None else type(got).__name__}")
    if len(got) != len(parts):
        return f"expected a tuple of {len(parts)} ({', '.join(parts)}), got {len(got)} items"
    for part, e, g in zip(parts, expected, got):
        p = array_problem(ex, e, g, what=part, part=part)
        if p:
            return p
    return None


def output_problem(ex: Exercise, case: Case, expected, got) -> str | None:
    """None when ``got`` is right for ``case``; else what is wrong (no case header)."""
    if case is not None and case.scenario == RAISES:
        return None if got == "ValueError" else f"{ex.name} must raise a ValueError here: {got}"
    if case is not None and got is not None and ex.contract is not None and \
            ex.contract.dtype_judged:
        wrong = dtype_problem(ex.contract.returns, got)
        if wrong:
            return wrong
    if ex.custom_compare is not None:
        return ex.custom_compare(case, expected, got)
    if ex.output == "mask":
        return mask_problem(expected, got)
    if ex.output == "ids":
        return _ids_problem(expected, got)
    if ex.output == "tuple":
        return _tuple_problem(ex, expected, got)
    return array_problem(ex, expected, got, "the result" if ex.output == "scalar" else "the output")


def same_output(ex: Exercise | None, a, b, tolerance: tuple[float, float] | None = None
                 ) -> bool:
    """Whether two outputs agree (NaN where NaN), used to recognise a mistake."""
    try:
        if ex is not None and ex.custom_compare is not None:
            with quiet():
                return ex.custom_compare(None, a, b) is None
        if ex is not None and ex.output == "tuple":
            if not isinstance(a, (tuple, list)) or not isinstance(b, (tuple, list)) or \
                    len(a) != len(b):
                return False
            return all(same_output(None, x, y, ex.tolerance(part)) for part, x, y in
                       zip(ex.parts or [None] * len(a), a, b))
        with quiet():
            x = np.asarray(a, dtype=np.float64)
            y = np.asarray(b, dtype=np.float64)
        rtol, atol = tolerance or ((ex.rtol, ex.atol) if ex is not None else (RTOL, ATOL))
        return x.shape == y.shape and bool(close(x, y, True, rtol, atol).all())
    except (TypeError, ValueError):
        return False


def diagnose(ex: Exercise, case: Case, got=None, error: BaseException | None = None,
             reported: str | None = None) -> list[Mistake]:
    """The known mistakes of ``ex`` whose output on ``case`` is ``got``.

    With ``error``, the mistakes that raise the same exception (type and text) instead;
    with ``reported`` (``"Type: text"``, an error as the grader's child reports it), the
    mistakes that raise one whose first line reads the same.
    """
    if ex.custom_diagnose is not None and reported is None:
        found = ex.custom_diagnose(case, got, error)
        if found is not None:
            return found
    found = []
    for mistake in ex.mistakes:
        out, err = case.outcome(mistake.fn)       # a mistake may fail on some inputs
        if error is not None:
            if err is not None and type(err) is type(error) and str(err) == str(error):
                found.append(mistake)
        elif reported is not None:
            if err is not None and _first_line(f"{type(err).__name__}: {err}") == \
                    _first_line(reported):
                found.append(mistake)
        elif err is None and same_output(ex, copy.deepcopy(out) if ex.custom_compare else out,
                                          got):     # kept: only our own code reads it
            found.append(mistake)
    return found


#: How an explanation names a known mistake: "Likely mistake: ..." or, when several give
#: exactly this output, "Likely mistake (one of these ...):" and a list.
DIAGNOSIS = "\n  Likely mistake"


def headline(problems: list) -> int | None:
    """Which of ``problems`` (an explanation per case, None if it passed) to explain first:
    the first naming a known mistake (it says more than a crash or wrong values in another
    case), else the first failing one; None when every case passed."""
    failing = [k for k, p in enumerate(problems) if p is not None]
    named = [k for k in failing if DIAGNOSIS in str(problems[k])]
    return (named or failing or [None])[0]


#: How an explanation announces several known mistakes that give exactly its output (a
#: list follows, one "    - message." per line; :mod:`helpers.course.candidates` narrows it).
CANDIDATES = "\n  Likely mistake (one of these gives exactly this output):\n"


def mistake_lines(text: str) -> str:
    """The known mistake an explanation names, as it names it (one line, or the line
    announcing candidates and the list under it); "" when it names none."""
    if DIAGNOSIS not in text:
        return ""
    lines = ("Likely mistake" + text.split(DIAGNOSIS, 1)[1]).splitlines()
    out = [lines[0].strip()]
    if not lines[0].startswith("Likely mistake:"):
        out += [line.strip() for line in lines[1:] if line.startswith("    - ")]
    return "\n".join(out)


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def _diagnosis_text(found: list[Mistake]) -> str:
    if not found:
        return ""
    if len(found) == 1:
        return f"\n  Likely mistake: {found[0].message}."
    return CANDIDATES + "\n".join(f"    - {m.message}." for m in found)


def changed_inputs(case: Case, args: tuple, kwargs: dict) -> list:
    """The inputs of ``case`` that a call changed, given the ``args`` and ``kwargs`` it
    was called with: positions (int) of ``args``, names (str) of ``kwargs``."""
    out: list = [i for i, (a, b) in enumerate(zip(case.args, args)) if differs(a, b)]
    out += [str(k) for k in case.kwargs if differs(case.kwargs[k], kwargs.get(k))]
    return out


def _parameters(ex: Exercise, case: Case) -> list[str]:
    """The names of a case's positional inputs: the exercise's parameters, or for a
    scenario case those of the scenario after the function it drives
    (``scenario_function(numerical_gradient, name, x)``: ``name``, ``x``)."""
    own = list(inspect.signature(ex.signature).parameters)
    if not case.scenario:
        return own
    try:
        params = list(inspect.signature(registry.resolve(case.scenario)).parameters.values())
    except (ValueError, TypeError, ImportError, AttributeError):
        return []
    if any(p.kind == p.VAR_POSITIONAL for p in params[1:]):   # passes them on as they are
        return own
    return [p.name for p in params[1:] if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]


def _input_names(ex: Exercise, case: Case, changed) -> list[str]:
    """The parameter names of the changed inputs (positions or names), as the learner
    wrote them in the signature (a scenario's inputs as its scenario names them)."""
    params = _parameters(ex, case)
    out = []
    for k in changed:
        if isinstance(k, bool):
            continue
        if isinstance(k, int):
            out.append(params[k] if 0 <= k < len(params) else f"argument {k + 1}")
        elif isinstance(k, str) and k.isidentifier():
            out.append(k)
    return out


def forbidden_text(name: str, label: str) -> str | None:
    """The words for ``name`` calling ``label`` (``helpers.softmax``), a function it
    forbids (not its own reference); None when ``label`` is ``name``'s own: the instant
    check and the grader say it alike."""
    if label.rpartition(".")[2] == name:
        return None
    return (f"{name} must be your own implementation; it called {label}, which this "
            f"exercise asks you to do without (it is what {name} replaces)")


def in_place_text(name: str, changed) -> str:
    """The named mistake of a function that modified its inputs: "modified its input
    `x` in place", with what to do instead."""
    names = [f"`{n}`" for n in changed] or ["an input"]
    what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    noun = "input" if len(names) == 1 else "inputs"
    return (f"your {name} modified its {noun} {what} in place (e.g. `x -= mean`, "
            f"`z[...] = ...`, `out=` on an input): the caller's array changed. Compute into a "
            f"new array (`x = x - mean`) or start from a copy (`x = np.array(x, dtype=float)`)")


def _low_dtype(got):
    """float16 or float32 when ``got`` (or its first item) is an array of that dtype."""
    dtype = getattr(got, "dtype", None)
    if dtype is None and isinstance(got, (tuple, list)) and got:
        dtype = getattr(got[0], "dtype", None)
    return dtype if dtype in (np.float16, np.float32) else None


def _largest_input(value, depth: int = 0) -> float:
    """The largest finite magnitude among the numbers of a case's inputs."""
    if depth > 6 or isinstance(value, (str, bytes, np.random.Generator)):
        return 0.0
    if isinstance(value, dict):
        return max((_largest_input(v, depth + 1) for v in value.values()), default=0.0)
    try:
        with quiet():
            arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        if isinstance(value, (list, tuple)):
            return max((_largest_input(v, depth + 1) for v in value), default=0.0)
        return 0.0
    finite = np.abs(arr[np.isfinite(arr)])
    return float(finite.max()) if finite.size else 0.0


def _overflow_text(case: Case, got) -> str | None:
    """The headline for a low-precision result that is not finite because an input is
    beyond its range (1e300 in float32): the dtype is the mistake, not the formula."""
    dtype = _low_dtype(got)
    if dtype is None:
        return None
    try:
        with quiet():
            arr = np.asarray(got[0] if isinstance(got, (tuple, list)) else got, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if np.isfinite(arr).all():
        return None
    limit = float(np.finfo(dtype).max)
    big = max(_largest_input(case.args), _largest_input(case.kwargs))
    if big <= limit:
        return None
    name = np.dtype(dtype).name
    return (f"your result is {name}: {big:.3g} overflows it ({name} holds numbers up to "
            f"{limit:.3g}); compute in float64 (e.g. np.asarray(z, dtype=np.float64))"
            ).replace("e+", "e")


def compare(ex: Exercise, case: Case, got, changed=()) -> str | None:
    """None when ``got`` is a right answer to ``case``; otherwise what is wrong, in words.

    The text names the case and its input, expected against got, and the known mistake
    that produces exactly ``got`` when there is one. ``changed``: the inputs the call
    modified (:func:`changed_inputs`); a right output with a changed input fails, with
    the mistake "modified its input `x` in place".
    """
    name = ex.name
    expected = None if case.is_sampling else case.expected()   # samples have no one answer
    problem = output_problem(ex, case, expected, got)
    names = _input_names(ex, case, changed or ())
    in_place = f"\n  Likely mistake: {in_place_text(name, names)}." if changed else ""
    if problem is None:
        if not changed:
            return None
        what = (f"its input{'s' if len(names) > 1 else ''} "
                + ", ".join(f"`{n}`" for n in names)) if names else "an input"
        return (f"{_case_header(ex, case)}\n  Problem: the output is right, but {name} modified "
                f"{what} in place{in_place}")
    overflow = _overflow_text(case, got)
    if overflow:            # the dtype, not a formula: no mistake of the exercise is blamed
        problem, found = (f"{overflow}\n    (the output holds inf or NaN where numbers "
                          f"were expected)"), ""
    else:
        found = _diagnosis_text(diagnose(ex, case, got))
    also = f"\n  Also: {in_place_text(name, names)}." if changed else ""
    return f"{_case_header(ex, case)}\n  Problem: {problem}{found}{also}"


def _signature_text(ex: Exercise) -> str:
    params = inspect.signature(ex.signature).parameters.values()
    sig = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                    for p in params)
    return f"{ex.name}({sig})"


def error_text(ex: Exercise, case: Case, error: str, exc: BaseException | None = None) -> str:
    """Words for a case on which the learner's function raised ``error`` ("Type: text")."""
    found = (diagnose(ex, case, error=exc) if exc is not None
             else diagnose(ex, case, reported=error))   # the grader: the child's words
    short = _first_line(error)
    hint = ""
    if short.startswith("TypeError") and "argument" in short:
        hint = f"\n  The signature must be {_signature_text(ex)}"
    where = _student_location(exc) if exc is not None else ""
    return (f"{_case_header(ex, case)}\n  Problem: your {ex.name} raised {short}{where}{hint}"
            f"{_diagnosis_text(found)}")


def _main() -> None:
    for name in registry.names():
        print(name)
        for hidden in (False, True):
            for c in cases(registry.get(name), hidden):
                print(f"  {'H' if hidden else 'V'} {c.group:10s} {c.name:22s} {c.description}")


if __name__ == "__main__":
    _main()
