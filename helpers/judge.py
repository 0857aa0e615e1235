"""The judge: whether an output of an exercise's function is right, and why not, in words.

One judge for the whole course, used in two places: :mod:`helpers.checks` (the
notebook's instant ``check``, which runs the learner's function on the visible cases) and
the grader (``autograder/engine/grading.py``), which runs the function on the visible and
hidden cases in a sandbox and judges the returned values here, in its own process. The
judge never runs learner code: it takes outputs (or the error raised) and the
:class:`~helpers.exercises.Case` they answer.

    cases(name, hidden=False, group=None, seed=None)
                                            the visible (or hidden) cases of an exercise
    compare(name, case, got)                None when right; else the case, the problem and
                                            the known mistake that gives exactly ``got``
    error_text(name, case, error, exc)      the same words for a case that raised
    diagnose(name, case, got)               the known mistakes whose output is ``got``
    changed_inputs(case, args, kwargs)      which inputs a call modified (positions, names)

A function must leave its inputs as they were: ``compare(..., changed=...)`` (what
:func:`changed_inputs` observed, or what the grader's child reported) fails an otherwise
right output with the named mistake "modified its input `x` in place".

Values are compared as float64 with ``rtol=1e-6, atol=1e-8`` unless an exercise states
other tolerances; dtypes are not judged; NaN or inf where a number is expected fails.
Each exercise is declared once, in ``helpers/exercises/<name>.py``.

``python -m helpers.judge`` prints the cases of every exercise (name, group, words).
"""

from __future__ import annotations

import copy
import inspect
import traceback

import numpy as np

from helpers import exercises
from helpers._same import differs
from helpers.exercises import Case, Exercise, Mistake, quiet
from helpers.exercises._compare import (_array_problem, _as_float_array, _close,
                                        _fmt_value, _mask_problem)
from helpers.exercises._scenarios import RAISES

__all__ = ["cases", "groups", "compare", "diagnose", "error_text", "exercise_names", "quiet",
           "changed_inputs", "RTOL", "ATOL"]

RTOL = exercises.RTOL
ATOL = exercises.ATOL


def exercise_names() -> tuple[str, ...]:
    """Every graded exercise, in course order."""
    return exercises.names()


def _exercise(name: str) -> Exercise:
    try:
        return exercises.get(name)
    except ValueError:
        raise ValueError(f"{name!r} is not an exercise function; choose one of: "
                         f"{', '.join(exercises.names())}") from None


def groups(name: str, hidden: bool | None = None) -> list[str]:
    """The group names of ``name``'s cases (visible, hidden, or both when None)."""
    out = []
    for c in _exercise(name).all_cases():
        if (hidden is None or c.hidden == hidden) and c.group not in out:
            out.append(c.group)
    return out


def cases(name: str, hidden: bool = False, group: str | None = None,
          seed: int | None = None) -> list[Case]:
    """The visible (``hidden=False``) or hidden cases of exercise ``name``; the hidden
    ones drawn from its contract with ``seed`` (the grader's per-student seed; the
    default seed when None)."""
    selected = [c for c in _exercise(name).all_cases(seed) if c.hidden == hidden]
    if group is not None:
        selected = [c for c in selected if c.group == group]
        if not selected:
            raise ValueError(
                f"{name} has no {'hidden' if hidden else 'visible'} cases in group {group!r}; "
                f"its groups are: {', '.join(groups(name, hidden))}")
    return copy.deepcopy(selected)     # nothing a caller does to them leaks into the next call


def _user_frames(exc: BaseException) -> list:
    helpers_dir = __file__.rsplit("/", 1)[0] + "/"
    return [f for f in traceback.extract_tb(exc.__traceback__)
            if not f.filename.startswith(helpers_dir) and "/numpy/" not in f.filename]


def _student_location(exc: BaseException) -> str:
    """' (in softmax, line 3 `e = np.exp(z)`)' for the innermost frame outside NumPy and us."""
    frames = _user_frames(exc)
    if not frames:
        return ""
    f = frames[-1]
    code = f" `{f.line.strip()}`" if f.line else ""
    return f" (in {f.name}, line {f.lineno}{code})"


# ---------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------


def _describe_input(case: Case) -> str:
    ex = _exercise(case.function)
    params = list(inspect.signature(ex.signature).parameters)
    named = [(params[i] if i < len(params) else f"arg{i}", a) for i, a in enumerate(case.args)]
    named += list(case.kwargs.items())
    return "\n".join(f"    {k} = {_fmt_value(v, indent=len(k) + 7)}" for k, v in named)


def _case_header(case: Case) -> str:
    kind = "hidden" if case.hidden else "visible"
    return (f"Case {case.name!r} ({kind}, group {case.group!r}): {case.description}.\n"
            f"  Input:\n{_describe_input(case)}")


# ---------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------


def _ids_problem(expected, got) -> str | None:
    arr, problem = _as_float_array(got, "the output")
    if problem:
        return problem
    exp = np.asarray(expected)
    if arr.shape != exp.shape:
        return f"the output has the wrong shape: expected {exp.shape}, got {arr.shape}"
    if np.array_equal(arr, exp.astype(np.float64)):
        return None
    return f"wrong values: expected {exp.tolist()}, got {np.asarray(got).tolist()}"


def _tuple_problem(ex: Exercise, expected, got) -> str | None:
    parts = ex.parts
    if isinstance(got, np.ndarray) or not isinstance(got, (tuple, list)):
        return (f"expected a tuple ({', '.join(parts)}), got "
                f"{'None: is a `return` missing?' if got is None else type(got).__name__}")
    if len(got) != len(parts):
        return f"expected a tuple of {len(parts)} ({', '.join(parts)}), got {len(got)} items"
    for part, e, g in zip(parts, expected, got):
        p = _array_problem(ex, e, g, what=part, part=part)
        if p:
            return p
    return None


def _problem(ex: Exercise, case: Case, expected, got) -> str | None:
    """None when ``got`` is right for ``case``; else what is wrong (no case header)."""
    if case is not None and case.scenario == RAISES:
        return None if got == "ValueError" else f"{ex.name} must raise a ValueError here: {got}"
    if case is not None and got is not None and ex.contract is not None and \
            ex.contract.dtype_judged:
        wrong = exercises.dtype_problem(ex.contract.returns, got)
        if wrong:
            return wrong
    if ex.custom_compare is not None:
        return ex.custom_compare(case, expected, got)
    if ex.output == "mask":
        return _mask_problem(expected, got)
    if ex.output == "ids":
        return _ids_problem(expected, got)
    if ex.output == "tuple":
        return _tuple_problem(ex, expected, got)
    return _array_problem(ex, expected, got, "the result" if ex.output == "scalar" else "the output")


def _same_output(ex: Exercise | None, a, b, tolerance: tuple[float, float] | None = None
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
            return all(_same_output(None, x, y, ex.tolerance(part)) for part, x, y in
                       zip(ex.parts or [None] * len(a), a, b))
        with quiet():
            x = np.asarray(a, dtype=np.float64)
            y = np.asarray(b, dtype=np.float64)
        rtol, atol = tolerance or ((ex.rtol, ex.atol) if ex is not None else (RTOL, ATOL))
        return x.shape == y.shape and bool(_close(x, y, True, rtol, atol).all())
    except (TypeError, ValueError):
        return False


def diagnose(name: str, case: Case, got=None, error: BaseException | None = None,
             reported: str | None = None) -> list[Mistake]:
    """The known mistakes of ``name`` whose output on ``case`` is ``got``.

    With ``error``, the mistakes that raise the same exception (type and text) instead;
    with ``reported`` (``"Type: text"``, an error as the grader's child reports it), the
    mistakes that raise one whose first line reads the same.
    """
    ex = _exercise(name)
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
        elif err is None and _same_output(ex, copy.deepcopy(out) if ex.custom_compare else out,
                                          got):     # kept: only our own code reads it
            found.append(mistake)
    return found


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def _diagnosis_text(found: list[Mistake]) -> str:
    if not found:
        return ""
    if len(found) == 1:
        return f"\n  Likely mistake: {found[0].message}."
    return "\n  Likely mistake (one of these gives exactly this output):\n" + "\n".join(
        f"    - {m.message}." for m in found)


def changed_inputs(case: Case, args: tuple, kwargs: dict) -> list:
    """The inputs of ``case`` that a call changed, given the ``args`` and ``kwargs`` it
    was called with: positions (int) of ``args``, names (str) of ``kwargs``."""
    out: list = [i for i, (a, b) in enumerate(zip(case.args, args)) if differs(a, b)]
    out += [str(k) for k in case.kwargs if differs(case.kwargs[k], kwargs.get(k))]
    return out


def _input_names(case: Case, changed) -> list[str]:
    """The parameter names of the changed inputs (positions or names), as the learner
    wrote them in the signature (a scenario's inputs by position)."""
    params = [] if case.scenario else list(inspect.signature(_exercise(case.function)
                                                              .signature).parameters)
    out = []
    for k in changed:
        if isinstance(k, bool):
            continue
        if isinstance(k, int):
            out.append(params[k] if 0 <= k < len(params) else f"argument {k + 1}")
        elif isinstance(k, str) and k.isidentifier():
            out.append(k)
    return out


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


def compare(name: str, case: Case, got, changed=()) -> str | None:
    """None when ``got`` is a right answer to ``case``; otherwise what is wrong, in words.

    The text names the case and its input, expected against got, and the known mistake
    that produces exactly ``got`` when there is one. ``changed``: the inputs the call
    modified (:func:`changed_inputs`); a right output with a changed input fails, with
    the mistake "modified its input `x` in place".
    """
    ex = _exercise(name)
    expected = None if case.is_sampling else case.expected()   # samples have no one answer
    problem = _problem(ex, case, expected, got)
    names = _input_names(case, changed or ())
    in_place = f"\n  Likely mistake: {in_place_text(name, names)}." if changed else ""
    if problem is None:
        if not changed:
            return None
        what = (f"its input{'s' if len(names) > 1 else ''} "
                + ", ".join(f"`{n}`" for n in names)) if names else "an input"
        return (f"{_case_header(case)}\n  Problem: the output is right, but {name} modified "
                f"{what} in place{in_place}")
    overflow = _overflow_text(case, got)
    if overflow:            # the dtype, not a formula: no mistake of the exercise is blamed
        problem, found = (f"{overflow}\n    (the output holds inf or NaN where numbers "
                          f"were expected)"), ""
    else:
        found = _diagnosis_text(diagnose(name, case, got))
    also = f"\n  Also: {in_place_text(name, names)}." if changed else ""
    return f"{_case_header(case)}\n  Problem: {problem}{found}{also}"


def _signature_text(ex: Exercise) -> str:
    params = inspect.signature(ex.signature).parameters.values()
    sig = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                    for p in params)
    return f"{ex.name}({sig})"


def error_text(name: str, case: Case, error: str, exc: BaseException | None = None) -> str:
    """Words for a case on which the learner's function raised ``error`` ("Type: text")."""
    ex = _exercise(name)
    found = (diagnose(name, case, error=exc) if exc is not None
             else diagnose(name, case, reported=error))   # the grader: the child's words
    short = _first_line(error)
    hint = ""
    if short.startswith("TypeError") and "argument" in short:
        hint = f"\n  The signature must be {_signature_text(ex)}"
    where = _student_location(exc) if exc is not None else ""
    return (f"{_case_header(case)}\n  Problem: your {name} raised {short}{where}{hint}"
            f"{_diagnosis_text(found)}")


def _main() -> None:
    for name in exercises.names():
        print(name)
        for hidden in (False, True):
            for c in cases(name, hidden):
                print(f"  {'H' if hidden else 'V'} {c.group:10s} {c.name:22s} {c.description}")


if __name__ == "__main__":
    _main()
