"""Step 2 of grading a notebook: each exercise's verdict, from its isolated runs.

An exercise's cases (:class:`CaseSet`, the student's hidden ones drawn from their seed)
are called in a confined child whose ``helpers`` is a student's; the outputs are judged
here with ``helpers.course.judge.compare`` (see the package docstring and
docs/threat_model.md). A run the machine was too busy to finish is run again
(:func:`run_unbusied`): load never decides a grade.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from autograder import safe_text
from autograder.engine.resources import _Resources
from autograder.isolation import client, confine, executor, helpers_copy, student_helpers, wire
from autograder.notebook import slicing
from autograder.notebook.source import CaseSpec, Source
from autograder.notebook.submission import Merged, _defined_functions


def _short(text, n: int = safe_text.MESSAGE_CHARS) -> str:
    return safe_text.shorten(str(text), n, one_line=True)


@dataclass
class Verdict:
    """The isolated run of one contract function: per-case problems (None = passed)."""

    function: str
    problems: list[str | None]
    hidden: list[bool]
    groups: list[str]
    inconclusive: list[bool]
    status: str               # ok | timeout | crashed
    note: str = ""
    #: case index -> where it goes wrong (:class:`autograder.engine.where.Where`)
    wheres: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CaseSet:
    """The cases an exercise is graded on: the cases (visible then hidden), which are
    hidden, their encoded arguments, their scenarios, the ``(name, "module:function")``
    of the course functions the exercise uses, and the large arrays the arguments name
    rather than carry (``store``)."""

    cases: tuple
    hidden: tuple[bool, ...]
    payloads: tuple[str, ...]
    scenarios: tuple[str | None, ...]
    uses: tuple[tuple[str, str], ...]
    store: dict

    @property
    def groups(self) -> list[str]:
        return [str(getattr(c, "group", "") or "") for c in self.cases]


def _payload(case, store: dict | None = None) -> str:
    """A case's arguments as the child decodes them (the wire's short form; its large
    arrays named into ``store``, when given)."""
    return wire.b64(wire.encode((tuple(case.args), dict(case.kwargs)), store=store,
                                short=True))


@lru_cache(maxsize=None)
def _default_cases(name: str) -> CaseSet:
    """The cases of exercise ``name``, hidden ones drawn with the default seed (computed
    once per grading process)."""
    from helpers import course
    from helpers.course import judge

    ex = course.get(name)
    visible = list(judge.cases(ex, hidden=False))
    hidden = list(judge.cases(ex, hidden=True))
    cases = tuple(visible + hidden)
    store: dict = {}
    payloads = tuple(_payload(c, store) for c in cases)
    uses = tuple((dep, course.qualified(course.get(dep).reference)) for dep in ex.uses)
    return CaseSet(cases, (False,) * len(visible) + (True,) * len(hidden), payloads,
                   tuple(c.scenario for c in cases), uses, store)


@lru_cache(maxsize=64)
def _student_cases(ex, seed: int) -> CaseSet:
    """:func:`_default_cases` with the hidden cases drawn from ``seed`` (a student's, see
    :mod:`autograder.run.secret`). The cases that do not depend on the seed (written
    ones, drawn visible ones) are the default's, with their encoded arguments; the
    seeded ones travel inline, never by file (the arrays folder beside an exercise's
    helpers copy is read by every student's child: no student's hidden input goes
    there)."""
    import copy

    base = _default_cases(ex.name)
    default, seeded = ex.all_cases(), ex.all_cases(hidden_seed=seed)
    index = {id(c): k for k, c in enumerate(default)}
    if all(id(c) in index for c in seeded):
        return base
    cases, payloads = [], []
    for c in seeded:
        k = index.get(id(c))
        if k is not None:
            cases.append(base.cases[k])
            payloads.append(base.payloads[k])
        else:
            cases.append(copy.deepcopy(c))
            payloads.append(_payload(c))
    return CaseSet(tuple(cases), tuple(c.hidden for c in cases), tuple(payloads),
                   tuple(c.scenario for c in cases), base.uses, base.store)


def cases_for(ex, seed: int | None) -> CaseSet:
    """The cases exercise ``ex`` is graded on: a student's seed draws its hidden ones
    (the default seed when None)."""
    if seed is None or not ex.draws_hidden:
        return _default_cases(ex.name)
    return _student_cases(ex, int(seed))


def verdict(ex, merged: Merged, specs_of: dict[str, list[CaseSpec]], source: Source,
            res: _Resources, cell_timeout: float, notebook_timeout: float,
            limits: confine.Limits, hidden_seed: int | None = None) -> Verdict:
    """Step 2 for one exercise: its outputs on every case, from a child whose ``helpers``
    is a student's (no reference, no case; its own reference and what it refuses raise),
    compared here with ``helpers.course.judge.compare``. The earlier course functions it uses
    are the learner's own; when a failing case called one of them, it is judged again
    with the course's (answered by the trusted process), and that verdict stands.

    The child runs the exercise's own answer cell whole (what the learner's notebook
    runs to define it) and, from the other cells before its first test, only the
    statements the function needs (:mod:`autograder.notebook.slicing`): slow top-level work in
    other answer cells is not run again."""
    function, case_set = ex.name, cases_for(ex, hidden_seed)
    n = len(case_set.cases)
    own = {gid for gid, names in answer_functions(source).items() if function in names}
    for cell in merged.cells:               # the learner's own cell does not parse: say so
        broken = slicing.syntax_error(cell.source) if cell.grade_id in own else None
        if broken:
            problem = f"your answer cell {cell.grade_id!r} does not run: {broken}"
            return Verdict(function, [problem] * n, list(case_set.hidden), case_set.groups,
                           [False] * n, "ok")
    first_test = min((c.index for c in merged.cells if c.kind == "test"
                      and function in {s.function for s in specs_of.get(c.grade_id, [])}),
                     default=len(merged.cells))
    code = slicing.slice_cells([slicing.CellCode(c.index, c.source, c.grade_id in own)
                                for c in merged.cells if c.kind != "test" and c.index < first_test],
                               {function})
    cells = [{"index": i, "kind": "code", "source": src} for i, src in sorted(code.items())]
    job = {"kind": "calls", "cells": cells, "function": function,
           "cases": list(case_set.payloads), "scenarios": list(case_set.scenarios),
           "uses": {}, "watch": [dep for dep, _ in case_set.uses],
           "answers": list(student_helpers.trusted_answers(function)),
           "cell_timeout": cell_timeout, "case_timeout": cell_timeout,
           "timeout": notebook_timeout}
    res.arrays(function, case_set.store)
    first, own_failed = _run_calls(function, job, case_set, source, res, limits,
                                   notebook_timeout)
    if case_set.uses and (first.status != "ok" or own_failed):
        # Credit isolation: a case that called the learner's own earlier functions failed
        # (or the run broke down, or broke a rule: their code ran in it), so the exercise
        # is judged again with the course's (answered by this trusted process: their
        # code is never in the child), and that verdict stands. A mistake in the
        # learner's layer_norm costs points in layer_norm's test only.
        # The run that decides gets the full limits: a case that timed out in the first
        # run (the learner's slow earlier function, say) must not leave it less time.
        job = dict(job, uses=dict(case_set.uses), watch=[])
        first = _run_calls(function, job, case_set, source, res, limits, notebook_timeout)[0]
    return _with_where(ex, first, job, case_set, source, res, limits)


def _with_where(ex, v: Verdict, job: dict, case_set: CaseSet, source: Source,
                res: _Resources, limits: confine.Limits) -> Verdict:
    """``v`` with where it goes wrong on its headline failing cases, from a traced run
    of the learner's function on those cases only (:mod:`autograder.engine.where`)."""
    from autograder.engine import where

    if v.status == "invalid":
        return v
    chosen = where.traced_cases(ex, case_set, v.problems, v.inconclusive)
    if not chosen:
        return v
    try:
        reply = run_unbusied(res, where.trace_job(job, case_set, chosen),
                             res.conf(ex.name, source), limits)
    except client.WorkerError:        # words only: a busy machine costs them, not the grade
        return v
    v.wheres = where.where_of(ex, case_set, chosen, where.reply_lines(reply))
    return v


def _run_calls(function: str, job: dict, case_set: CaseSet, source: Source,
               res: _Resources, limits: confine.Limits, notebook_timeout: float
               ) -> tuple[Verdict, bool]:
    """One isolated run of an exercise's calls (``job``), judged here; and whether a
    failing case called the learner's own earlier functions (the child's observation)."""
    from helpers import course
    from helpers.course import candidates, judge

    ex = course.get(function)
    cases = case_set.cases
    reply = run_unbusied(res, job, res.conf(function, source), limits)
    lines, refused = client.parse_reply(reply.get("output", ""))
    by_case: dict[int, dict] = {}
    for line in lines:
        k = line.get("case")
        if isinstance(k, int) and 0 <= k < len(cases) and k not in by_case:
            by_case[k] = line
    done = any(line.get("done") is True for line in lines)
    status, note = "ok", ""
    if reply.get("exit") == executor.EXIT_TIMEOUT and reply.get("stalled"):
        status, note = "timeout", (
            f"the isolated run of {function} was stopped: a cell or call ran past its "
            f"limit of {job['case_timeout']:g} s and did not stop (its timer was blocked)")
    elif reply.get("exit") == executor.EXIT_TIMEOUT:
        status, note = "timeout", f"the isolated run of {function} took longer than {notebook_timeout:g} s"
    elif not done:
        status, note = "crashed", f"the isolated run of {function} stopped unexpectedly"
    problems: list[str | None] = []
    inconclusive: list[bool] = []      # failed for lack of time/memory, not on the merits
    broken = ""                        # why a reply broke the wire's rules
    if refused:
        broken = (f"invalid: the isolated run of {function} sent a reply that breaks the "
                  f"grader's rules ({_short(refused[0], 160)})")
    for k, case in enumerate(cases):
        line = by_case.get(k)
        inconclusive.append(line is None)
        if line is None:
            problems.append(note or f"{function} was not run on this case")
            continue
        if isinstance(line.get("error"), str):
            err = line["error"]
            if err.startswith("timeout"):
                status = "timeout" if status == "ok" else status
            inconclusive[-1] = err.startswith(("timeout", "MemoryError"))
            problems.append(case_error(function, case, err, str(line.get("where") or "")))
            continue
        size = line.get("too_large")
        if type(size) is int and size > wire.MAX_VALUE_BYTES:
            problems.append(_too_large(function, case, size))
            continue
        try:
            got = wire.decode(wire.unb64(line.get("value")))
        except wire.DecodeError as exc:
            broken = broken or (f"invalid: the isolated run of {function} sent a reply that "
                                f"breaks the grader's rules ({_short(exc, 160)})")
            problems.append(broken)
            continue
        changed = line.get("changed")            # the child's observation; judged here
        changed = [c for c in changed if isinstance(c, (int, str)) and not isinstance(
            c, bool)][:20] if isinstance(changed, list) else []
        try:
            if case.scenario:     # raw observations: what they mean is decided here only
                got = course.decide(case.scenario, got)
            problems.append(judge.compare(ex, case, got, changed))
        except Exception as exc:   # compare() on a strange value: a failed case
            problems.append(f"{function} returned a value that cannot be compared "
                            f"({type(exc).__name__}: {_short(exc, 200)})")
    # a list of candidate mistakes narrowed by the learner's outcomes on the visible
    # cases, as the instant check narrows it (helpers.course.candidates.narrow)
    problems = candidates.narrow(ex, list(cases), problems,
                            [not h and not i for h, i in zip(case_set.hidden, inconclusive)])
    if broken:
        # a reply that breaks the wire's rules (autograder/isolation/wire.py) is forged:
        # no reply of this run is trusted, and the exercise is invalid in every cell
        problems = [broken] * len(cases)
        inconclusive = [False] * len(cases)
        status, note = "invalid", broken
    own_failed = any(problems[k] is not None and (by_case.get(k, {}).get("own_uses") is True
                                                  or _missing_use(by_case.get(k), job))
                     for k in range(len(cases)))
    return (Verdict(function, problems, list(case_set.hidden), case_set.groups, inconclusive,
                    status, note), own_failed)


def _missing_use(line: dict | None, job: dict) -> bool:
    """Whether a case failed because an earlier function it uses is missing from the
    learner's notebook (its cell left as a bare ``raise NotImplementedError()``): judged
    like a failing one, again with the course's."""
    err = (line or {}).get("error")
    return isinstance(err, str) and err.startswith("NameError") and any(
        f"'{dep}'" in err for dep in job.get("watch") or ())


def run_unbusied(res: _Resources, job: dict, conf: dict, limits: confine.Limits) -> dict:
    """The worker's reply to ``job``, run again once when the machine was too busy to
    finish it (stopped at the wall-clock backstop with its own time not spent,
    :mod:`autograder.isolation.clock`); raises ``client.WorkerError`` when it was
    again: load never decides a grade, the notebook is the grader's error, to grade
    again."""
    for _ in range(2):
        reply = res.worker.run(job, conf, limits)
        if reply.get("exit") != executor.EXIT_BUSY and not reply.get("busy"):
            return reply
    raise client.WorkerError("the grading machine was too busy to finish a run within "
                             "the wall-clock backstop of its limits; grade it again")


def _too_large(function: str, case, size: int) -> str:
    """Words for a case whose output holds more array bytes than the grader takes."""
    label = f"case {getattr(case, 'name', '?')!r} ({getattr(case, 'description', '')})"
    return (f"{label}: {function} returned {size / 2**20:,.0f} MB of arrays; the grader "
            f"takes outputs of at most {wire.MAX_VALUE_BYTES // 2**20} MB (return only the "
            f"output the exercise asks for)")


def case_error(function: str, case, err: str, where: str = "") -> str:
    """Words for a case on which the isolated call raised (``err``: "Type: text";
    ``where``: the innermost function of the learner's code it came from)."""
    from helpers import course
    from helpers.course import judge

    if err.startswith("NotImplementedError"):
        if where and where != function and where.isidentifier():
            return (f"{where} is not implemented yet (your {function} calls it): replace "
                    f"`raise NotImplementedError()` in {where} by your code")
        return f"{function} is not implemented yet: replace `raise NotImplementedError()` by your code"
    stub = re.search(rf"([\w.]+) {re.escape(helpers_copy.REFERENCE_STUB_MARK)}", err)
    forbidden = judge.forbidden_text(function, stub.group(1)) if stub else None
    if forbidden:                                    # a function forbidden for this one
        return forbidden
    if stub:
        return (f"{function} must be your own implementation: it called {stub.group(1)} "
                f"(the course's answer, hidden while yours is graded)")
    if err.startswith("timeout"):
        label = f"case {getattr(case, 'name', '?')!r} ({getattr(case, 'description', '')})"
        return f"{label}: {function} did not finish ({err})"
    if getattr(case, "hidden", False):
        # only the exception's type: its text is the learner's, and could carry the
        # hidden inputs (which the child must have) out into the feedback page
        err = (_short(err.split(":", 1)[0], 60)
               + ": (the message of an error on a hidden case is not shown)")
    return judge.error_text(course.get(function), case, _short(err, 400))


def answer_functions(source: Source) -> dict[str, tuple[str, ...]]:
    """Answer grade_id -> the functions its source cell defines (parsed once per source:
    every exercise's verdict asks)."""
    return dict(_answer_functions(source))


@lru_cache(maxsize=64)
def _answer_functions(source: Source) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((gid, tuple(_defined_functions(cell.source) or [gid]))
                 for gid, cell in source.by_id("answer").items())
