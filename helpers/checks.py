"""Instant checks for every graded exercise: ``check("softmax", softmax)``.

Each exercise is declared once, in ``helpers/exercises/<name>.py`` (its reference,
visible and hidden cases, known mistakes, the earlier functions it uses and the
references it must not call). This module judges them all the same way, in the
notebook (:func:`check`) and in the grader, which calls the learner's function on
:func:`cases` in a sandbox and judges the outputs here with :func:`compare`.

    check(name, fn)                 the visible cases; one line on stdout when all pass
    check(name, fn, hidden=True)    the hidden cases (inside ### BEGIN HIDDEN TESTS)
    check(name, fn, group="mask")   only the cases of one group
    assert_close(got, expected, what="the scores")   a one-off comparison in a notebook

A failure raises :class:`CheckFailed` (an ``AssertionError``) that says which case failed
(in words, with its input), expected against got (shape first, then the first differing
entry) and, when the output is what a known mistake produces, that mistake in words.
When an earlier function of the learner that this one uses fails its own check, the
failure says so instead ("your layer_norm fails its own check: fix it first"), and no
mistake of this exercise is blamed for it.

Rules every check follows:

* values are compared as float64 with ``rtol=1e-6, atol=1e-8`` (unless an exercise
  states other tolerances): loops, ``einsum``, ``-inf`` or ``-1e9`` masking and every
  stable softmax pass; dtypes are not judged;
* warnings raised by the learner's code are silenced (a NumPy warning on stderr would
  cost an nbgrader cell); NaN or inf where a number is expected fails, with a hint;
* while the learner's function runs, the exercise's reference and the functions it
  ``refuse``\\ s are replaced by a poison wherever the function could reach them (as
  attributes of ``helpers`` modules, and as globals, closure cells or default arguments
  of the function): calling one fails the check. Other ``helpers`` functions stay usable;
* inputs are fresh copies for every call: an answer that modifies its input in place
  cannot spoil later cases;
* cases are built from fixed seeds: the same cases on every run, plain values.

``generate`` with ``temperature == 0`` (greedy) is compared exactly; sampling cases are
judged by distribution, and a scenario case calls it twice with the same seed and once
with another (see ``helpers/exercises/generate.py``).

``python -m helpers.checks`` prints the cases of every exercise (name, group, words).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import sys
import traceback
import warnings
from typing import Callable

import numpy as np

from helpers import exercises
from helpers.exercises import Case, Exercise, Mistake
from helpers.exercises._compare import (_array_problem, _as_float_array, _close,
                                        _expected_got, _fmt_value, _mask_problem, _num)
from helpers.exercises._scenarios import RAISES

__all__ = ["check", "assert_close", "quiet", "CheckFailed", "Case", "cases", "compare",
           "diagnose", "groups", "RTOL", "ATOL", "exercise_names"]

RTOL = exercises.RTOL
ATOL = exercises.ATOL


#: Longest line of a failed check as a notebook shows it. nbgrader's Validate button cuts
#: every line of an error at 87 characters, its own four-space indent included.
LINE = 80


class CheckFailed(AssertionError):
    """A check did not pass; the message says which case and why."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it (and what nbgrader's Validate reads): the message
        alone, wrapped at :data:`LINE` characters, without the course's own frames."""
        return wrap(f"CheckFailed: {self}").splitlines()


def wrap(text: str, width: int = LINE) -> str:
    """``text`` with every line longer than ``width`` wrapped, continuations indented."""
    import textwrap

    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[:len(line) - len(line.lstrip())]
        out.append(textwrap.fill(line, width, subsequent_indent=lead + "    ",
                                 break_on_hyphens=False))
    return "\n".join(out)


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


def cases(name: str, hidden: bool = False, group: str | None = None) -> list[Case]:
    """The visible (``hidden=False``) or hidden cases of exercise ``name``."""
    selected = [c for c in _exercise(name).all_cases() if c.hidden == hidden]
    if group is not None:
        selected = [c for c in selected if c.group == group]
        if not selected:
            raise ValueError(
                f"{name} has no {'hidden' if hidden else 'visible'} cases in group {group!r}; "
                f"its groups are: {', '.join(groups(name, hidden))}")
    return copy.deepcopy(selected)     # nothing a caller does to them leaks into the next call


# ---------------------------------------------------------------------------------------
# Running a learner's function
# ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet():
    """No warnings and no floating-point error messages from the code inside.

    Under plain nbgrader any output on stderr scores a test cell 0, and a correct answer
    may make NumPy warn (``0 * inf`` in a mask, say): the checks run inside it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield


_quiet = quiet      # for code where `quiet` is a parameter (assert_close)


def _is_reference(fn, ref) -> bool:
    seen = set()
    code = getattr(ref, "__code__", None)
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        if fn is ref or (code is not None and getattr(fn, "__code__", None) is code):
            return True
        fn = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None) or getattr(
            fn, "__func__", None)
    return False


def _functions_of(fn) -> list:
    """fn and whatever it wraps (partials, bound methods, decorators), as plain functions."""
    out, todo, seen = [], [fn], set()
    while todo:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        if inspect.isfunction(f):
            out.append(f)
        todo += [getattr(f, "__wrapped__", None), getattr(f, "func", None),
                 getattr(f, "__func__", None)]
        call = getattr(type(f), "__call__", None)
        if call is not None and inspect.isfunction(call):
            todo.append(call)
    return out


def _label(fn) -> str:
    """How a learner reaches ``fn``: the shortest package that re-exports it
    (``helpers.softmax``, ``helpers.llama.rms_norm``)."""
    name = getattr(fn, "__name__", "?")
    module = getattr(fn, "__module__", "") or ""
    while "." in module:
        parent = module.rsplit(".", 1)[0]
        if getattr(sys.modules.get(parent), name, None) is not fn:
            break
        module = parent
    return f"{module}.{name}"


def _refused(ex: Exercise) -> dict[str, Callable]:
    """The functions the learner must not call for ``ex``: label -> function."""
    out = {_label(ex.reference): ex.reference}
    for spec in ex.refuse:
        fn = exercises.resolve(spec)
        out[_label(fn)] = fn
    return out


def _own_implementation_message(name: str, label: str) -> str:
    return (f"{name} must be your own implementation; it called {label} (the course's "
            f"answer). Other helpers functions may be used, not this one.")


@contextlib.contextmanager
def _poisoned_references(name: str, references: dict[str, Callable], fn):
    """While active, each reference raises ``CheckFailed`` wherever ``fn`` could reach
    it: as an attribute of any loaded ``helpers`` module, and as a global, closure cell
    or default argument of ``fn`` and of what it wraps. Yields a dict whose ``"called"``
    turns True on a call (an answer that catches the error still fails)."""
    state = {"called": False}
    poisons: dict[int, Callable] = {}
    originals: dict[int, Callable] = {}
    for label, ref in references.items():
        def poison(*args, _label=label, **kwargs):
            state["called"] = True
            raise CheckFailed(_own_implementation_message(name, _label))

        poisons[id(ref)], originals[id(ref)] = poison, ref

    def swap(value):
        try:
            return poisons.get(id(value)) if originals.get(id(value)) is value else None
        except Exception:                       # an odd object in a namespace
            return None

    undo = []
    for mod_name, module in list(sys.modules.items()):
        if module is None or not (mod_name == "helpers" or mod_name.startswith("helpers.")):
            continue
        for attr, value in list(vars(module).items()):
            if swap(value) is not None:
                undo.append(lambda o=module, a=attr, v=value: setattr(o, a, v))
                setattr(module, attr, swap(value))
    for f in _functions_of(fn):
        g = f.__globals__
        for key, value in list(g.items()):
            if swap(value) is not None:
                undo.append(lambda g=g, k=key, v=value: g.__setitem__(k, v))
                g[key] = swap(value)
        for cell in f.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:              # an empty cell
                continue
            if swap(value) is not None:
                undo.append(lambda c=cell, v=value: setattr(c, "cell_contents", v))
                cell.cell_contents = swap(value)
        if f.__defaults__ and any(swap(d) is not None for d in f.__defaults__):
            old = f.__defaults__
            undo.append(lambda f=f, old=old: setattr(f, "__defaults__", old))
            f.__defaults__ = tuple(swap(d) or d for d in old)
        if f.__kwdefaults__ and any(swap(d) is not None for d in f.__kwdefaults__.values()):
            old_kw = dict(f.__kwdefaults__)
            undo.append(lambda f=f, old=old_kw: setattr(f, "__kwdefaults__", old))
            f.__kwdefaults__ = {k: swap(d) or d for k, d in old_kw.items()}
    try:
        yield state
    finally:
        for restore in reversed(undo):
            restore()


def _run(ex: Exercise, fn, case: Case):
    """(output, error, called_reference) of the learner's ``fn`` on ``case``."""
    got, error = None, None
    with _quiet(), _poisoned_references(ex.name, _refused(ex), fn) as state:
        try:
            got = case.run(fn)
        except Exception as exc:                      # the learner's code may raise anything
            error = exc
    return got, error, state["called"]


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


#: Part of the message of a course function a student bundle leaves out (autograder/release/bundle.py).
BUNDLE_MARK = "not in the student bundle"


def _not_implemented_message(name: str, exc: BaseException | None = None, fn=None) -> str:
    """Names the function that raised: the innermost learner function, if it is not the
    one being checked (``fn``, called ``name`` in the notebook). In a student bundle, a
    course function left out of it says which exercise it is: that message is kept."""
    if exc is not None and BUNDLE_MARK in str(exc):
        return f"your {name} needs {exc}"
    frames = _user_frames(exc) if exc is not None else []
    raiser = frames[-1].name if frames else name
    own = {getattr(f, "__name__", None) for f in _functions_of(fn)} if fn is not None else set()
    if raiser in own or raiser in ("<module>", "<lambda>") or not raiser.isidentifier():
        raiser = name
    if raiser != name:
        return (f"{raiser} is not implemented yet (your {name} calls it): replace `raise "
                f"NotImplementedError()` in {raiser} by your code")
    return (f"{name} is not implemented yet: replace `raise "
            f"NotImplementedError()` by your code")


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
        p = _array_problem(ex, e, g, what=part)
        if p:
            return p
    return None


def _problem(ex: Exercise, case: Case, expected, got) -> str | None:
    """None when ``got`` is right for ``case``; else what is wrong (no case header)."""
    if case is not None and case.scenario == RAISES:
        return None if got == "ValueError" else f"{ex.name} must raise a ValueError here: {got}"
    if ex.custom_compare is not None:
        return ex.custom_compare(case, expected, got)
    if ex.output == "mask":
        return _mask_problem(expected, got)
    if ex.output == "ids":
        return _ids_problem(expected, got)
    if ex.output == "tuple":
        return _tuple_problem(ex, expected, got)
    return _array_problem(ex, expected, got, "the result" if ex.output == "scalar" else "the output")


def _same_output(ex: Exercise | None, a, b) -> bool:
    """Whether two outputs agree (NaN where NaN), used to recognise a mistake."""
    try:
        if ex is not None and ex.custom_compare is not None:
            with _quiet():
                return ex.custom_compare(None, a, b) is None
        if ex is not None and ex.output == "tuple":
            if not isinstance(a, (tuple, list)) or not isinstance(b, (tuple, list)) or \
                    len(a) != len(b):
                return False
            return all(_same_output(None, x, y) for x, y in zip(a, b))
        with _quiet():
            x = np.asarray(a, dtype=np.float64)
            y = np.asarray(b, dtype=np.float64)
        rtol, atol = (ex.rtol, ex.atol) if ex is not None else (RTOL, ATOL)
        return x.shape == y.shape and bool(_close(x, y, True, rtol, atol).all())
    except (TypeError, ValueError):
        return False


def diagnose(name: str, case: Case, got=None, error: BaseException | None = None) -> list[Mistake]:
    """The known mistakes of ``name`` whose output on ``case`` is ``got``.

    With ``error``, the mistakes that raise the same exception (type and text) instead.
    """
    ex = _exercise(name)
    if ex.custom_diagnose is not None:
        found = ex.custom_diagnose(case, got, error)
        if found is not None:
            return found
    found = []
    for mistake in ex.mistakes:
        with _quiet():
            try:
                out, err = case.run(mistake.fn), None
            except Exception as exc:                   # a mistake may fail on some inputs
                out, err = None, exc
        if error is not None:
            if err is not None and type(err) is type(error) and str(err) == str(error):
                found.append(mistake)
        elif err is None and _same_output(ex, out, got):
            found.append(mistake)
    return found


def _diagnosis_text(found: list[Mistake]) -> str:
    if not found:
        return ""
    if len(found) == 1:
        return f"\n  Likely mistake: {found[0].message}."
    return "\n  Likely mistake (one of these gives exactly this output):\n" + "\n".join(
        f"    - {m.message}." for m in found)


def compare(name: str, case: Case, got) -> str | None:
    """None when ``got`` is a right answer to ``case``; otherwise what is wrong, in words.

    The text names the case and its input, expected against got, and the known mistake
    that produces exactly ``got`` when there is one.
    """
    ex = _exercise(name)
    expected = None if case.is_sampling else case.expected()   # samples have no one answer
    problem = _problem(ex, case, expected, got)
    if problem is None:
        return None
    return f"{_case_header(case)}\n  Problem: {problem}{_diagnosis_text(diagnose(name, case, got))}"


def _signature_text(ex: Exercise) -> str:
    params = inspect.signature(ex.signature).parameters.values()
    sig = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                    for p in params)
    return f"{ex.name}({sig})"


def error_text(name: str, case: Case, error: str, exc: BaseException | None = None) -> str:
    """Words for a case on which the learner's function raised ``error`` ("Type: text")."""
    ex = _exercise(name)
    found = diagnose(name, case, error=exc) if exc is not None else []
    short = (error.strip().splitlines() or [""])[0][:300]
    hint = ""
    if short.startswith("TypeError") and "argument" in short:
        hint = f"\n  The signature must be {_signature_text(ex)}"
    where = _student_location(exc) if exc is not None else ""
    return (f"{_case_header(case)}\n  Problem: your {name} raised {short}{where}{hint}"
            f"{_diagnosis_text(found)}")


# ---------------------------------------------------------------------------------------
# check and assert_close
# ---------------------------------------------------------------------------------------


def _failures(ex: Exercise, fn, selected: list[Case]) -> list[tuple[Case, str, bool]]:
    """[(case, text, raised NotImplementedError)] of the cases ``fn`` fails."""
    out = []
    for case in selected:
        got, error, called = _run(ex, fn, case)
        if called or isinstance(error, CheckFailed):
            label = next(iter(_refused(ex)))
            raise CheckFailed(str(error) if isinstance(error, CheckFailed)
                              else _own_implementation_message(ex.name, label)) from None
        if isinstance(error, NotImplementedError):
            out.append((case, _not_implemented_message(ex.name, error, fn), True))
            break
        if error is not None:
            out.append((case, error_text(ex.name, case, f"{type(error).__name__}: {error}",
                                         error), False))
            continue
        problem = compare(ex.name, case, got)
        if problem is not None:
            out.append((case, problem, False))
    return out


def _learner_version(fn, dep: str):
    """The learner's own ``dep`` as ``fn`` sees it (None when it is the course's)."""
    for f in _functions_of(fn):
        own = f.__globals__.get(dep)
        if callable(own) and not _is_reference(own, _exercise(dep).reference):
            return own
    return None


def _broken_dependency(ex: Exercise, fn, seen=None) -> str | None:
    """The first earlier function ``fn`` uses that fails its own visible check, deepest
    first, in words; None when they all pass (or are the course's)."""
    seen = set() if seen is None else seen
    for dep in ex.uses:
        if dep in seen:
            continue
        seen.add(dep)
        own = _learner_version(fn, dep)
        if own is None:
            continue
        deeper = _broken_dependency(_exercise(dep), own, seen)
        if deeper:
            return deeper
        try:
            fails = _failures(_exercise(dep), own, cases(dep))
        except CheckFailed as exc:
            return f"your {dep} fails its own check: fix it first ({exc})"
        if fails:
            if fails[0][2]:
                return fails[0][1]
            return (f"your {dep} fails its own check: fix it first (run "
                    f"check({dep!r}, {dep}) to see why)")
    return None


def check(name: str, fn, hidden: bool = False, group: str | None = None) -> None:
    """Run the visible (or hidden) cases of exercise ``name`` on ``fn``.

    Prints one line when every case passes; raises :class:`CheckFailed` otherwise, with
    the first failing case explained (and the names of the other failing ones).
    """
    ex = _exercise(name)
    selected = cases(name, hidden=hidden, group=group)
    if not callable(fn):
        raise CheckFailed(f"check({name!r}, ...) needs your function, got {type(fn).__name__}")
    for label, ref in _refused(ex).items():
        if _is_reference(fn, ref):
            raise CheckFailed(_own_implementation_message(name, label))
    failures = _failures(ex, fn, selected)
    n = len(selected)
    label = f"{name}{' (hidden)' if hidden else ''}{f' [{group}]' if group else ''}"
    if not failures:
        print(f"{label}: {n}/{n} checks passed")
        return
    first_case, text, not_implemented = failures[0]
    if not_implemented:
        raise CheckFailed(text) from None
    broken = _broken_dependency(ex, fn)
    if broken:
        text = text.split("\n  Likely mistake", 1)[0]     # not this exercise's mistake
        raise CheckFailed(f"{label}: {broken}\n{text}") from None
    others = ""
    if len(failures) > 1:
        others = "\n  Also failed: " + ", ".join(repr(c.name) for c, _, _ in failures[1:])
    raise CheckFailed(f"{label}: {n - len(failures)}/{n} checks passed.\n{text}{others}") from None


def assert_close(got, expected, what: str = "the result", rtol: float = RTOL,
                 atol: float = ATOL, quiet: bool = False) -> None:
    """Check ``got`` against ``expected`` (shapes, then values) in the style of :func:`check`.

    For one-off comparisons in a notebook (demonstrations, not graded exercises). Prints
    one line when they match (unless ``quiet``); raises :class:`CheckFailed` otherwise.
    """
    exp = np.asarray(expected, dtype=np.float64)
    arr, problem = _as_float_array(got, what)
    if problem is None:
        if arr.shape != exp.shape:
            problem = f"{what} has the wrong shape: expected {exp.shape}, got {arr.shape}"
        else:
            with _quiet():
                ok = np.isclose(arr, exp, rtol=rtol, atol=atol)
            if not ok.all():
                # booleans (masks) are shown as True/False, numbers with 6 digits
                shown_exp = np.asarray(expected) if np.asarray(expected).dtype == bool else exp
                shown_got = np.asarray(got) if np.asarray(got).dtype == bool else arr
                idx = tuple(int(i) for i in np.argwhere(~ok)[0])
                where = f" at index {idx}" if idx else ""
                problem = (f"{what}: first difference{where}: expected {_num(shown_exp[idx])}, "
                           f"got {_num(shown_got[idx])}")
                if exp.size > 1:
                    problem += _expected_got(shown_exp, shown_got)
                if not np.isfinite(arr[idx]) and np.isfinite(exp[idx]):
                    problem += "\n    (a NaN or inf: is a computation unstable?)"
    if problem is not None:
        raise CheckFailed(problem)
    if not quiet:
        print(f"{what}: correct")


def _main() -> None:
    for name in exercises.names():
        print(name)
        for hidden in (False, True):
            for c in cases(name, hidden):
                print(f"  {'H' if hidden else 'V'} {c.group:10s} {c.name:22s} {c.description}")


if __name__ == "__main__":
    _main()
