"""Instant checks for every graded exercise: ``check("softmax", softmax)``.

Each exercise is declared once, in ``helpers/exercises/<name>.py`` (its reference,
visible and hidden cases, known mistakes, the earlier functions it uses and the
references it must not call). This module is what a notebook imports: it runs the
learner's function on the cases and explains a failure. Whether an output is right, and
the words for it, come from :mod:`helpers.course.judge`, which the grader uses too (it runs the
learner's function on the visible and hidden cases in a sandbox and judges the outputs
in its own process): a notebook and the grader judge every exercise the same way.

    check(name, fn)                 the visible cases; one line on stdout when all pass
    check(name, fn, hidden=True)    the hidden cases (inside ### BEGIN HIDDEN TESTS); a
                                    student's copy of helpers has none, and raises
                                    (:data:`HIDDEN_ELSEWHERE`) instead of passing
    check(name, fn, group="mask")   only the cases of one group
    assert_close(got, expected, what="the scores")   a one-off comparison in a notebook

A failure raises :class:`CheckFailed` (an ``AssertionError``) that says which case failed
(in words, with its input), expected against got (shape first, then the first differing
entry) and, when the output is what a known mistake produces, that mistake in words.
When an earlier function of the learner that this one uses gives a wrong result on the
inputs this one called it with (on the failing case), the failure says so instead ("your
layer_norm fails its own check: fix it first"), and no mistake of this exercise is blamed
for it; an earlier function that is wrong only on other inputs is not blamed.

Rules every check follows:

* values are compared as float64 with ``rtol=1e-6, atol=1e-8`` (unless an exercise
  states other tolerances): loops, ``einsum``, ``-inf`` or ``-1e9`` masking and every
  stable softmax pass; dtypes are judged only where the contract says so
  (`dtype_judged`: masks, `stack_tokens`; docs/contract.md);
* warnings raised by the learner's code are silenced (a NumPy warning on stderr would
  cost an nbgrader cell); NaN or inf where a number is expected fails, with a hint;
* while the learner's function runs, the exercise's reference and the functions it
  ``refuse``\\ s are replaced by a poison wherever the function could reach them (as
  attributes of ``helpers`` modules, and as globals, closure cells or default arguments
  of the function): calling one fails the check. Other ``helpers`` functions stay usable;
* inputs are fresh copies for every call, compared with the case's afterwards: an answer
  that modifies its input in place cannot spoil later cases, and fails ("modified its
  input `x` in place": the learner's own later functions would get a spoilt input);
* cases are built from fixed seeds: the same cases on every run, plain values.

``generate`` with ``temperature == 0`` (greedy) is compared exactly; sampling cases are
judged by distribution, and a scenario case calls it twice with the same seed and once
with another (see ``helpers/exercises/generate.py``).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import sys
from typing import Callable

import numpy as np

from helpers import course
from helpers.course import candidates, judge
from helpers.course import Case, Exercise
from helpers.course.judge import as_float_array, quiet
from helpers.course.text import expected_got, number

__all__ = ["check", "assert_close", "quiet", "CheckFailed", "RTOL", "ATOL", "BUNDLE_MARK"]

RTOL = course.RTOL
ATOL = course.ATOL


#: What ``check(..., hidden=True)`` raises where the exercise has no hidden case (a
#: student's copy of ``helpers``: the bundle, a JupyterHub running it): a hidden check that
#: ran nothing would print "0/0 checks passed" and plain nbgrader would give its points.
HIDDEN_ELSEWHERE = ("{name}: no hidden case here: hidden cases are graded by "
                    "`python -m autograder grade`")


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


# ---------------------------------------------------------------------------------------
# Running a learner's function
# ---------------------------------------------------------------------------------------


_quiet = quiet      # for code where `quiet` is a parameter (assert_close)


def _is_reference(fn, ref) -> bool:
    seen = set()
    # a wrapper (the reference checked at the edge) shares its code with every other
    # wrapper: it is recognised by identity, the reference inside it by its code
    code = None if hasattr(ref, "__wrapped__") else getattr(ref, "__code__", None)
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
    out = {_label(ex.answer): ex.answer, _label(ex.reference): ex.reference}
    for spec in (*ex.refuse, *ex.forbid):
        fn = course.resolve(spec)
        out[_label(fn)] = fn
    return out


def _own_implementation_message(name: str, label: str) -> str:
    forbidden = judge.forbidden_text(name, label)      # another function, refused here
    if forbidden:
        return f"{forbidden}. Other helpers functions may be used, not this one."
    return (f"{name} must be your own implementation; it called {label} (the course's "
            f"answer). Other helpers functions may be used, not this one.")


@contextlib.contextmanager
def _poisoned_references(name: str, references: dict[str, Callable], fn):
    """While active, each reference raises ``CheckFailed`` wherever ``fn`` could reach
    it: as an attribute of any loaded ``helpers`` module, and as a global, closure cell
    or default argument of ``fn`` and of what it wraps. Yields a dict whose ``"called"``
    turns True on a call (an answer that catches the error still fails).

    This is the instant check's way, in the learner's own process, which holds the whole
    course: nothing there can be rewritten. The grader's children never hold a reference
    (``autograder.isolation.student_helpers`` writes every one as a stub, one rewriter for
    the bundle and every child)."""
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
    """(output, error, called_reference, changed inputs) of the learner's ``fn`` on
    ``case``: it is called on fresh copies of the case's inputs, compared afterwards."""
    got, error, changed = None, None, []
    with _quiet(), _poisoned_references(ex.name, _refused(ex), fn) as state:
        try:
            args, kwargs = case.fresh_args()
            if case.scenario:
                got = course.decide(case.scenario,        # observations, then meaning
                                       course.resolve(case.scenario)(fn, *args, **kwargs))
            else:
                got = fn(*args, **kwargs)
            changed = judge.changed_inputs(case, args, kwargs)
        except Exception as exc:                      # the learner's code may raise anything
            error = exc
    return got, error, state["called"], changed


#: Part of the message of a course function a student bundle leaves out (autograder/release/bundle.py).
BUNDLE_MARK = "not in the student bundle"


def _not_implemented_message(name: str, exc: BaseException | None = None, fn=None) -> str:
    """Names the function that raised: the innermost learner function, if it is not the
    one being checked (``fn``, called ``name`` in the notebook). In a student bundle, a
    course function left out of it says which exercise it is: that message is kept."""
    if exc is not None and BUNDLE_MARK in str(exc):
        return f"your {name} needs {exc}"
    frames = judge.user_frames(exc) if exc is not None else []
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
# check and assert_close
# ---------------------------------------------------------------------------------------


def _failures(ex: Exercise, fn, selected: list[Case]) -> list[tuple[Case, str, bool]]:
    """[(case, text, raised NotImplementedError)] of the cases ``fn`` fails."""
    out = []
    for case in selected:
        got, error, called, changed = _run(ex, fn, case)
        if called or isinstance(error, CheckFailed):
            label = next(iter(_refused(ex)))
            raise CheckFailed(str(error) if isinstance(error, CheckFailed)
                              else _own_implementation_message(ex.name, label)) from None
        if isinstance(error, NotImplementedError):
            out.append((case, _not_implemented_message(ex.name, error, fn), True))
            break
        if error is not None:
            out.append((case, judge.error_text(ex, case, f"{type(error).__name__}: {error}",
                                         error), False))
            continue
        problem = judge.compare(ex, case, got, changed)
        if problem is not None:
            out.append((case, problem, False))
    return out


def _learner_version(fn, dep: str):
    """The learner's own ``dep`` as ``fn`` sees it (None when it is the course's)."""
    for f in _functions_of(fn):
        own = f.__globals__.get(dep)
        if callable(own) and not _is_reference(own, course.get(dep).reference):
            return own
    return None


def _calls_of(ex: Exercise, fn, dep: str, own, case: Case) -> list[tuple]:
    """The calls of the learner's ``own`` version of ``dep`` while ``fn`` runs on
    ``case``: (copies of the arguments it was given, their keywords, what it returned,
    whether it modified them)."""
    calls: list = []

    def recorder(*args, **kwargs):
        try:
            given = copy.deepcopy((args, kwargs))
        except Exception:                 # an odd argument: this call is not recorded
            given = None
        out = own(*args, **kwargs)
        if given is not None and len(calls) < 50:
            changed = any(judge.differs(g, a) for g, a in zip(given[0], args)) or any(
                judge.differs(given[1][k], kwargs.get(k)) for k in given[1])
            calls.append((given[0], given[1], out, changed))
        return out

    undo = []
    for f in _functions_of(fn):
        g = f.__globals__
        if g.get(dep) is own:
            undo.append(g)
            g[dep] = recorder
    try:
        _run(ex, fn, case)
    finally:
        for g in undo:
            g[dep] = own
    return calls


def _wrong_call(dep: str, calls) -> tuple[tuple, dict] | None:
    """The inputs of the first recorded call that modified its inputs or whose output the
    course's ``dep`` does not give on the same inputs (None when every call was right)."""
    dep_ex = course.get(dep)
    for args, kwargs, out, changed in calls:
        if changed:                # it modified its input in place: wrong, whatever it returns
            return args, kwargs
        try:
            with _quiet():
                a, k = copy.deepcopy((args, kwargs))
                expected = dep_ex.answer(*a, **k)
                problem = judge.output_problem(dep_ex, None, expected, out)
        except Exception:          # inputs the course's version refuses: not the learner's fault
            continue
        if problem is not None:
            return args, kwargs
    return None


def _broken_dependency(ex: Exercise, fn, case: Case, seen=None) -> str | None:
    """The first earlier function ``fn`` uses that gives a wrong result on the inputs
    ``fn`` called it with on ``case``, deepest first, in words; None when every call of
    the learner's earlier functions was right (or they are the course's): a learner's
    earlier function that fails its own check on other inputs is not blamed here."""
    seen = set() if seen is None else seen
    for dep in ex.uses:
        if dep in seen:
            continue
        own = _learner_version(fn, dep)
        if own is None:
            continue
        wrong = _wrong_call(dep, _calls_of(ex, fn, dep, own, case))
        if wrong is None:
            continue
        seen.add(dep)
        dep_ex = course.get(dep)
        dep_case = Case(dep, case.name, f"the inputs your {ex.name} gave it", tuple(wrong[0]),
                        dict(wrong[1]))
        deeper = _broken_dependency(dep_ex, own, dep_case, seen)
        if deeper:
            return deeper
        try:
            fails = _failures(dep_ex, own, judge.cases(dep_ex))
        except CheckFailed as exc:
            return f"your {dep} fails its own check: fix it first ({exc})"
        if fails and fails[0][2]:
            return fails[0][1]
        if fails:
            return (f"your {dep} fails its own check: fix it first (run "
                    f"check({dep!r}, {dep}) to see why)")
        return (f"your {dep} gives a wrong result on the inputs your {ex.name} called it "
                f"with: fix it first")
    return None


def _where_it_goes_wrong(ex: Exercise, fn, case: Case) -> str:
    """The first named step of the reference that ``fn`` did not reproduce on ``case``
    (:mod:`helpers.course.trace`), as a line of the failure; "" when none is declared or
    found. Run as the learner's other calls are (no warnings, references poisoned)."""
    from helpers.course import trace

    if not trace.declared(ex.name):
        return ""
    with _quiet(), _poisoned_references(ex.name, _refused(ex), fn):
        try:
            found = trace.where(ex, fn, case)
        except Exception:               # the tracer never costs the learner the check
            found = None
    return f"\n  {found}" if found else ""


def check(name: str, fn, hidden: bool = False, group: str | None = None) -> None:
    """Run the visible (or hidden) cases of exercise ``name`` on ``fn``.

    Prints one line when every case passes; raises :class:`CheckFailed` otherwise, with
    the first failing case explained (and the names of the other failing ones). With
    ``hidden`` where the exercise has no hidden case (a student's copy of ``helpers``)
    it raises :data:`HIDDEN_ELSEWHERE`: those cases are the grader's.
    """
    ex = course.get(name)
    if hidden and not judge.cases(ex, hidden=True):
        raise CheckFailed(HIDDEN_ELSEWHERE.format(name=name))
    selected = judge.cases(ex, hidden=hidden, group=group)
    if not callable(fn):
        raise CheckFailed(f"check({name!r}, ...) needs your function, got {type(fn).__name__}")
    for label, ref in _refused(ex).items():
        if _is_reference(fn, ref):
            raise CheckFailed(_own_implementation_message(name, label))
    failures = _failures(ex, fn, selected)
    if failures and not failures[-1][2]:      # candidates narrowed by the other cases
        said = {id(c): t for c, t, _ in failures}
        told = candidates.narrow(ex, selected, [said.get(id(c)) for c in selected])
        failures = [(c, told[selected.index(c)], ni) for c, _, ni in failures]
    n = len(selected)
    label = f"{name}{' (hidden)' if hidden else ''}{f' [{group}]' if group else ''}"
    if not failures:
        print(f"{label}: {n}/{n} checks passed")
        return
    # a named mistake in any failing case wins the headline over a crash in another
    first = judge.headline([t for _, t, _ in failures])
    first_case, text, not_implemented = failures[first]
    if not_implemented:
        raise CheckFailed(text) from None
    broken = _broken_dependency(ex, fn, first_case)
    if broken:
        text = text.split("\n  Likely mistake", 1)[0]     # not this exercise's mistake
        raise CheckFailed(f"{label}: {broken}\n{text}") from None
    text += _where_it_goes_wrong(ex, fn, first_case)
    others = ""
    if len(failures) > 1:
        others = "\n  Also failed: " + ", ".join(repr(c.name) for c, _, _ in failures
                                                 if c is not first_case)
    raise CheckFailed(f"{label}: {n - len(failures)}/{n} checks passed.\n{text}{others}") from None


def assert_close(got, expected, what: str = "the result", rtol: float = RTOL,
                 atol: float = ATOL, quiet: bool = False) -> None:
    """Check ``got`` against ``expected`` (shapes, then values) in the style of :func:`check`.

    For one-off comparisons in a notebook (demonstrations, not graded exercises). Prints
    one line when they match (unless ``quiet``); raises :class:`CheckFailed` otherwise.
    """
    exp = np.asarray(expected, dtype=np.float64)
    arr, problem = as_float_array(got, what)
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
                problem = (f"{what}: first difference{where}: expected {number(shown_exp[idx])}, "
                           f"got {number(shown_got[idx])}")
                if exp.size > 1:
                    problem += expected_got(shown_exp, shown_got)
                if not np.isfinite(arr[idx]) and np.isfinite(exp[idx]):
                    problem += "\n    (a NaN or inf: is a computation unstable?)"
    if problem is not None:
        raise CheckFailed(problem)
    if not quiet:
        print(f"{what}: correct")
