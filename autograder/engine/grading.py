"""Grade one notebook: the notebook run, each exercise's verdict, the points (see the
package docstring)."""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from autograder import safe_text
from autograder.notebook import slicing
from autograder.notebook.source import (BEGIN_HIDDEN, END_HIDDEN, CaseSpec, Source, SourceCell,
                                         case_specs, hidden_block, load_source, strip_hidden)
from autograder.notebook.submission import (InvalidSubmission, Merged, _defined_functions, merge,
                                             read_submission)
from autograder.engine.resources import _prepare, _Resources, _resources
from autograder.isolation import (client, confine, executor, helpers_copy, student_helpers,
                                   wire)


#: Lengths of CellResult.message and .feedback (one place: :mod:`autograder.safe_text`).
MESSAGE_CHARS, FEEDBACK_CHARS = safe_text.MESSAGE_CHARS, safe_text.FEEDBACK_CHARS


@dataclass
class CellResult:
    """The grade of one graded cell (a test cell or a manually graded cell)."""

    grade_id: str
    kind: str                 # "test" | "manual"
    points: float
    max_points: float
    status: str   # ok | failed | timeout | memory | crashed | missing | invalid | needs_manual_grade
    message: str = ""         # one short line, safe to show
    feedback: str = ""        # longer text for the student (no hidden-test source)


@dataclass
class NotebookResult:
    """The grade of one submitted notebook."""

    assignment: str
    notebook: str
    status: str               # ok | timeout | memory | crashed | invalid
    message: str = ""
    cells: list[CellResult] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def points(self) -> float:
        return sum(c.points for c in self.cells)

    @property
    def max_points(self) -> float:
        return sum(c.max_points for c in self.cells)


# ---------------------------------------------------------------------------------------
# Grading.
# ---------------------------------------------------------------------------------------


def _short(text: str, n: int = MESSAGE_CHARS) -> str:
    return safe_text.shorten(text, n, one_line=True)


class _Scrubber:
    """Blanks out hidden-test source in text shown to students.

    Every line of a hidden block, and every string literal in one (an assertion message
    is source too), becomes ``[hidden]`` wherever it appears, as do the block markers;
    text that also appears outside the hidden blocks (a function's name) is left alone.
    """

    def __init__(self, source: Source):
        secrets: set[str] = {BEGIN_HIDDEN, END_HIDDEN}
        for cell in source.cells:
            if cell.kind != "test":
                continue
            block = hidden_block(cell.source)
            secrets |= {line.strip() for line in block.splitlines() if len(line.strip()) >= 6}
            try:
                tree = ast.parse(block)
            except (SyntaxError, ValueError, RecursionError):
                continue
            secrets |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                        and isinstance(n.value, str) and len(n.value) >= 6}
        # what students were given anyway (a function name in a hidden check call) is no secret
        visible = "\n".join(strip_hidden(c.source) for c in source.cells)
        secrets = {x for x in secrets if x in (BEGIN_HIDDEN, END_HIDDEN) or x not in visible}
        self.secrets = sorted(secrets, key=len, reverse=True)   # longest first
        self.has_hidden = len(secrets) > 2

    def __call__(self, text: str) -> str:
        if not self.has_hidden or not text:
            return text
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "[hidden]")
        return text


def _kernel_source(cell: SourceCell) -> str:
    """The test cell as the notebook run executes it: without its hidden block (hidden
    tests are judged by the isolated runs, so their source never reaches the learner's
    process)."""
    return cell.visible


@dataclass
class _Verdict:
    """The isolated run of one contract function: per-case problems (None = passed)."""

    function: str
    problems: list[str | None]
    hidden: list[bool]
    groups: list[str]
    inconclusive: list[bool]
    status: str               # ok | timeout | crashed
    note: str = ""


@lru_cache(maxsize=None)
def _load_cases(function: str) -> tuple[tuple, tuple[bool, ...], tuple[str, ...],
                                         tuple[str | None, ...], tuple[tuple[str, str], ...],
                                         dict]:
    """The visible then hidden cases of exercise ``function`` (hidden ones drawn with the
    default seed), which are hidden, their encoded arguments, their scenarios, the
    ``(name, "module:function")`` of the course functions it uses, and the large arrays
    the arguments name rather than carry (computed once per grading process)."""
    from helpers import course
    from helpers.course import judge

    ex = course.get(function)
    visible = list(judge.cases(ex, hidden=False))
    hidden = list(judge.cases(ex, hidden=True))
    cases = tuple(visible + hidden)
    store: dict = {}
    payloads = tuple(wire.b64(wire.encode((tuple(c.args), dict(c.kwargs)), store=store))
                     for c in cases)
    uses = tuple((dep, course.qualified(course.get(dep).reference))
                 for dep in ex.uses)
    return (cases, (False,) * len(visible) + (True,) * len(hidden), payloads,
            tuple(c.scenario for c in cases), uses, store)


@lru_cache(maxsize=64)
def _student_cases(function: str, seed: int) -> tuple:
    """:func:`_load_cases` with the hidden cases drawn from ``seed`` (a student's, see
    :mod:`autograder.run.secret`). The cases that do not depend on the seed (written
    ones, drawn visible ones) are the default's, with their encoded arguments; the
    seeded ones travel inline, never by file (the arrays folder beside an exercise's
    helpers copy is read by every student's child: no student's hidden input goes
    there)."""
    import copy

    from helpers import course

    base = _load_cases(function)
    ex = course.get(function)
    default, seeded = ex.all_cases(), ex.all_cases(hidden_seed=seed)
    index = {id(c): k for k, c in enumerate(default)}
    if all(id(c) in index for c in seeded):
        return base
    b_cases, _, b_payloads, _, uses, store = base
    cases, payloads = [], []
    for c in seeded:
        k = index.get(id(c))
        if k is not None:
            cases.append(b_cases[k])
            payloads.append(b_payloads[k])
        else:
            cases.append(copy.deepcopy(c))
            payloads.append(wire.b64(wire.encode((tuple(c.args), dict(c.kwargs)))))
    return (tuple(cases), tuple(c.hidden for c in cases), tuple(payloads),
            tuple(c.scenario for c in cases), uses, store)


def _cases_for(function: str, seed: int | None) -> tuple:
    """The cases exercise ``function`` is graded on: a student's seed draws its hidden
    ones (the default seed when None)."""
    from helpers import course

    if seed is None or not course.get(function).draws_hidden:
        return _load_cases(function)
    return _student_cases(function, int(seed))


def _verdict(function: str, merged: Merged, specs_of: dict[str, list[CaseSpec]],
             source: Source, res: _Resources, cell_timeout: float, notebook_timeout: float,
             limits: confine.Limits, hidden_seed: int | None = None) -> _Verdict:
    """Step 2 for one exercise: its outputs on every case, from a child whose ``helpers``
    is a student's (no reference, no case; its own reference and what it refuses raise),
    compared here with ``helpers.course.judge.compare``. The earlier course functions it uses
    are the learner's own; when a failing case called one of them, it is judged again
    with the course's (answered by the trusted process), and that verdict stands.

    The child runs the exercise's own answer cell whole (what the learner's notebook
    runs to define it) and, from the other cells before its first test, only the
    statements the function needs (:mod:`autograder.notebook.slicing`): slow top-level work in
    other answer cells is not run again."""
    cases, hidden, payloads, scenarios, uses, store = _cases_for(function, hidden_seed)
    groups = [str(getattr(c, "group", "") or "") for c in cases]
    own = {gid for gid, names in _answer_functions(source).items() if function in names}
    for cell in merged.cells:               # the learner's own cell does not parse: say so
        broken = slicing.syntax_error(cell.source) if cell.grade_id in own else None
        if broken:
            problem = f"your answer cell {cell.grade_id!r} does not run: {broken}"
            return _Verdict(function, [problem] * len(cases), list(hidden), groups,
                            [False] * len(cases), "ok")
    first_test = min((c.index for c in merged.cells if c.kind == "test"
                      and function in {s.function for s in specs_of.get(c.grade_id, [])}),
                     default=len(merged.cells))
    code = slicing.slice_cells([slicing.CellCode(c.index, c.source, c.grade_id in own)
                                for c in merged.cells if c.kind != "test" and c.index < first_test],
                               {function})
    cells = [{"index": i, "kind": "code", "source": src} for i, src in sorted(code.items())]
    job = {"kind": "calls", "cells": cells, "function": function, "cases": list(payloads),
           "scenarios": list(scenarios), "uses": {}, "watch": [dep for dep, _ in uses],
           "answers": list(student_helpers.trusted_answers(function)),
           "cell_timeout": cell_timeout, "case_timeout": cell_timeout,
           "timeout": notebook_timeout}
    res.arrays(function, store)
    t0 = time.monotonic()
    verdict, own_failed = _run_calls(function, job, cases, hidden, groups, source, res,
                                     limits, notebook_timeout)
    if uses and (verdict.status != "ok" or own_failed):
        # Credit isolation: a case that called the learner's own earlier functions failed
        # (or the run broke down, or broke a rule: their code ran in it), so the exercise
        # is judged again with the course's (answered by this trusted process: their
        # code is never in the child), and that verdict stands. A mistake in the
        # learner's layer_norm costs points in layer_norm's test only.
        left = max(1.0, notebook_timeout - (time.monotonic() - t0))
        job = dict(job, uses=dict(uses), watch=[], timeout=left,
                   case_timeout=min(cell_timeout, left), cell_timeout=min(cell_timeout, left))
        verdict, _ = _run_calls(function, job, cases, hidden, groups, source, res, limits,
                                left)
    return verdict


def _run_calls(function: str, job: dict, cases, hidden, groups, source: Source,
               res: _Resources, limits: confine.Limits, notebook_timeout: float
               ) -> tuple[_Verdict, bool]:
    """One isolated run of an exercise's calls (``job``), judged here; and whether a
    failing case called the learner's own earlier functions (the child's observation)."""
    from helpers import course
    from helpers.course import judge

    conf = res.conf(function, source)
    reply = res.worker.run(job, conf, limits)
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
            problems.append(_case_error(function, case, err, str(line.get("where") or "")))
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
            problems.append(judge.compare(course.get(function), case, got, changed))
        except Exception as exc:   # compare() on a strange value: a failed case
            problems.append(f"{function} returned a value that cannot be compared "
                            f"({type(exc).__name__}: {_short(exc, 200)})")
    if broken:
        # a reply that breaks the wire's rules (autograder/isolation/wire.py) is forged:
        # no reply of this run is trusted, and the exercise is invalid in every cell
        problems = [broken] * len(cases)
        inconclusive = [False] * len(cases)
        status, note = "invalid", broken
    own_failed = any(problems[k] is not None and (by_case.get(k, {}).get("own_uses") is True
                                                  or _missing_use(by_case.get(k), job))
                     for k in range(len(cases)))
    return (_Verdict(function, problems, list(hidden), groups, inconclusive, status, note),
            own_failed)


def _missing_use(line: dict | None, job: dict) -> bool:
    """Whether a case failed because an earlier function it uses is missing from the
    learner's notebook (its cell left as a bare ``raise NotImplementedError()``): judged
    like a failing one, again with the course's."""
    err = (line or {}).get("error")
    return isinstance(err, str) and err.startswith("NameError") and any(
        f"'{dep}'" in err for dep in job.get("watch") or ())


def _summary(text: str) -> str:
    """One line from a ``judge.compare`` explanation: the known mistake first (the
    most useful words), then the case and the problem. Other text is returned as is."""
    from helpers.course import judge

    lines = [line.strip() for line in text.splitlines()]
    problem = next((line[len("Problem:"):].strip() for line in lines
                    if line.startswith("Problem:")), None)
    if problem is None:
        return text
    mistake = " ".join(judge.mistake_lines(text).splitlines())    # candidates kept
    case = re.match(r"Case ('[^']*')", lines[0])
    where = f"case {case.group(1)}: " if case else ""
    return (f"{mistake} ({where}{problem})" if mistake else f"{where}{problem}")


def _too_large(function: str, case, size: int) -> str:
    """Words for a case whose output holds more array bytes than the grader takes."""
    label = f"case {getattr(case, 'name', '?')!r} ({getattr(case, 'description', '')})"
    return (f"{label}: {function} returned {size / 2**20:,.0f} MB of arrays; the grader "
            f"takes outputs of at most {wire.MAX_VALUE_BYTES // 2**20} MB (return only the "
            f"output the exercise asks for)")


def _case_error(function: str, case, err: str, where: str = "") -> str:
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


def _brief(function: str, group: str, text: str) -> str:
    """A failing hidden case in a few words: which group, and the likely mistake."""
    from helpers.course import judge

    mistake = judge.mistake_lines(text).replace("\n", "\n  ")     # candidates kept
    return (f"{function} failed a hidden case (group {group!r}; its inputs and expected "
            f"values are not shown)" + (f"\n  {mistake}" if mistake else ""))


def _answer_functions(source: Source) -> dict[str, list[str]]:
    """Answer grade_id -> the functions its source cell defines."""
    return {gid: _defined_functions(cell.source) or [gid]
            for gid, cell in source.by_id("answer").items()}


def _select(verdict: _Verdict, spec: CaseSpec) -> list[int]:
    known_groups = set(verdict.groups)
    group = spec.group if spec.group in known_groups else None
    return [k for k in range(len(verdict.problems))
            if (spec.hidden is None or verdict.hidden[k] == spec.hidden)
            and (group is None or verdict.groups[k] == group)]


def _kernel_outcome(line: dict | None, kernel_status: str) -> tuple[bool, str]:
    """(passed, explanation) of a test cell in the notebook run."""
    if line is None:
        return False, {"timeout": "not run: the notebook timed out before this cell",
                       "crashed": "not run: the notebook crashed before this cell",
                       "memory": "not run: the notebook ran out of memory before this cell",
                       }.get(kernel_status, "not run")
    err = line.get("error")
    if isinstance(err, dict):
        return False, f"{err.get('ename', 'Error')}: {err.get('evalue', '')}"
    if str(line.get("stderr") or "").strip():
        return False, "the cell wrote to stderr: " + str(line.get("stderr")).strip()
    return True, "passed"


def _feedback(line: dict | None, scrub: _Scrubber, extra: list[str]) -> str:
    parts = []
    if line is not None:
        for key in ("stdout", "stderr"):
            text = scrub(str(line.get(key) or "")).strip()
            if text:
                parts.append(f"[{key}]\n{text}")
        err = line.get("error")
        if isinstance(err, dict) and err.get("ename") == "CheckFailed":
            # the check's own words are the explanation; its traceback is the course's code
            parts.append("[your notebook's check]\n" + scrub(str(err.get("evalue", ""))))
        elif isinstance(err, dict):
            tb = scrub(str(err.get("traceback") or "")).strip()
            msg = scrub(f"{err.get('ename', 'Error')}: {err.get('evalue', '')}")
            parts.append("[error]\n" + (tb + "\n" if tb else "") + msg)
    for e in extra:                 # each explanation once: skip what is already shown,
        e = scrub(e) if e else ""   # but not the trusted verdict's diagnosis of it (the
        if not e:                   # notebook run's check holds no known mistake)
            continue
        shown = [i for i, p in enumerate(parts) if _same_case(e, p)]
        if not shown:
            parts.append(e)
        elif _DIAGNOSIS in e and _DIAGNOSIS not in parts[shown[0]]:
            parts[shown[0]] += _DIAGNOSIS + e.split(_DIAGNOSIS, 1)[1]
    text = "\n\n".join(parts)
    return safe_text.shorten(text, FEEDBACK_CHARS)


#: Where a failing case's explanation names a known mistake (helpers.course.judge's wording).
_DIAGNOSIS = "\n  Likely mistake"


def _same_case(text: str, shown: str) -> bool:
    """Whether ``text`` (an explanation of a failing case) is already part of ``shown``."""
    head = " ".join(text.split(_DIAGNOSIS, 1)[0].split())
    return bool(head) and head in " ".join(shown.split())   # the notebook's text is wrapped


@dataclass
class _Run:
    """What the notebook run reported: the first line per cell, and how it ended."""

    by_cell: dict[int, dict]
    status: str               # ok | timeout | memory | crashed
    message: str


def _notebook_run(merged: Merged, source: Source, res: _Resources, cell_timeout: float,
                  notebook_timeout: float, limits: confine.Limits) -> _Run:
    """Step 1: the merged notebook (answers, tests and what they need) in a child."""
    code = slicing.answers_and_tests(
        (c.index, _kernel_source(c.source_cell) if c.kind == "test" else c.source, c.kind)
        for c in merged.cells)
    cells = [{"index": c.index, "kind": c.kind, "grade_id": c.grade_id, "source": code[c.index]}
             for c in merged.cells if c.index in code]
    from helpers import course

    graded = tuple(sorted({f for names in _answer_functions(source).values() for f in names
                           if f in course.names()}))
    reply = res.worker.run({"kind": "notebook", "cells": cells, "cell_timeout": cell_timeout,
                            "timeout": notebook_timeout,
                            "answers": list(student_helpers.trusted_answers_of_notebook(graded))},
                           res.conf(None, source), limits)
    lines = client.parse_lines(reply.get("output", ""))
    by_cell: dict[int, dict] = {}
    for line in lines:
        i = line.get("cell")
        if isinstance(i, int) and i not in by_cell:
            by_cell[i] = line
    timed_out = [i for i, line in by_cell.items() if line.get("timeout")]
    memory = [i for i, line in by_cell.items() if line.get("memory")]
    exit_code = reply.get("exit")
    if exit_code == executor.EXIT_TIMEOUT or timed_out:
        if not timed_out and reply.get("stalled"):      # stopped in the first unreported cell
            timed_out = [c["index"] for c in cells if c["index"] not in by_cell][:1]
        where = f" (cell {timed_out[0] + 1})" if timed_out else ""
        return _Run(by_cell, "timeout", f"the notebook ran out of time{where}: cell limit "
                                        f"{cell_timeout:g} s, notebook limit {notebook_timeout:g} s")
    if memory:
        return _Run(by_cell, "memory", f"the notebook exceeded the memory limit of "
                                       f"{limits.memory_mb} MB (cell {memory[0] + 1})")
    if not any(line.get("done") is True for line in lines):
        how = (f"killed by signal {exit_code - 128}" if isinstance(exit_code, int)
               and exit_code > 128 else f"exit code {exit_code}")
        return _Run(by_cell, "crashed", f"the notebook's process stopped unexpectedly ({how})")
    return _Run(by_cell, "ok", "")


def _exercise_cell(scell: SourceCell, specs: list[CaseSpec], verdicts: dict[str, _Verdict],
                   line: dict | None, run: _Run, note: str, missing: dict[str, str],
                   scrub: _Scrubber, hidden_feedback: str = "full", credit: str = "all"
                   ) -> tuple[CellResult, list[str]]:
    """A test cell (its ``check`` calls): the isolated verdicts decide. With
    ``hidden_feedback="brief"`` a failing hidden case is reported without its inputs and
    expected values (the likely mistake is still named).

    With ``credit="cases"`` a failing cell earns the fraction of its case groups (a
    function's cases of one group, visible and hidden) whose cases all passed; tampering,
    a missing answer or a run that did not finish still scores 0.

    Returns the cell's result and the functions whose verdict contradicts a pass in the
    notebook run on the same (visible) cases: tampering.
    """
    from helpers.course import judge

    group_ok: dict[tuple[str, str], bool] = {}
    k_pass, k_text = _kernel_outcome(line, run.status)
    k_text = scrub(k_text)
    problems, tampered, extra = [], [], []
    status = "ok"
    for spec in specs:
        v = verdicts[spec.function]
        idx = _select(v, spec)
        failed = [k for k in idx if v.problems[k] is not None]
        for k in idx:
            key = (spec.function, v.groups[k])
            group_ok[key] = group_ok.get(key, True) and v.problems[k] is None
        which = {None: "", True: "hidden ", False: "visible "}[spec.hidden]
        group = f", group {spec.group!r}" if spec.group in v.groups else ""
        extra.append(f"isolated check of {spec.function} ({which}cases{group}): "
                     f"{len(idx) - len(failed)}/{len(idx)} passed")
        if not failed:
            continue
        shown = failed[judge.headline([v.problems[k] for k in failed])]   # a named
        first = v.problems[shown]                         # mistake first (helpers.course.judge)
        if hidden_feedback == "brief" and v.hidden[shown]:
            first = _brief(spec.function, v.groups[shown], first)
        extra.append(first)
        first = _summary(first)
        if spec.function in missing:
            status = "missing"
            first = f"answer cell {missing[spec.function]!r} not found in the submission"
        elif v.status != "ok" and status == "ok":
            status = v.status
        problems.append(first)
        if k_pass and spec.in_kernel and any(not v.hidden[k] and not v.inconclusive[k]
                                             for k in failed):
            tampered.append(spec.function)
    if not problems:
        points = scell.points
        message = "passed" if k_pass else f"passed the isolated check (notebook run: {k_text})"
    else:
        points, status = 0.0, status if status != "ok" else "failed"
        message = problems[0]
        if credit == "cases" and status == "failed" and not tampered and group_ok:
            passed = sum(group_ok.values())
            points = round(scell.points * passed / len(group_ok), 4)
            extra.insert(0, f"partial credit: {passed}/{len(group_ok)} case groups passed "
                            f"({_points_text(points)} of {_points_text(scell.points)} points)")
            message = f"{passed}/{len(group_ok)} case groups passed: {message}"
        if tampered:
            message = (f"tampering suspected: the test passed in the notebook, but the isolated "
                       f"re-run of {', '.join(dict.fromkeys(tampered))} failed the same checks "
                       f"({message})")
    if note:
        message += f" ({note})"
    return (CellResult(scell.grade_id, "test", points, scell.points, status,
                       _short(scrub(message)), _feedback(line, scrub, extra)),
            list(dict.fromkeys(tampered)))


def _points_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0")


def grade_notebook(submission: Path, assignment: str, *, cell_timeout: float = 30,
                   notebook_timeout: float = 120, memory_mb: int = 2048,
                   solutions: Path | None = None,
                   hidden_feedback: str = "full", credit: str = "all",
                   hidden_seed: int | None = None) -> NotebookResult:
    """Grade one submitted notebook against ``solutions/<assignment>/`` (see module doc).
    ``hidden_feedback``: ``full`` shows a failing hidden case's inputs and expected
    values, ``brief`` only that a hidden case of a group failed, and the likely mistake.
    ``credit``: ``all`` (all or nothing per test cell) or ``cases`` (the fraction of its
    case groups passed; see :func:`_exercise_cell`). ``hidden_seed``: the seed the
    hidden cases are drawn from (the student's, :mod:`autograder.run.secret`; the
    exercises' default seed when None). It stays in this process: the children get
    the cases' inputs, never the seed.

    Takes at most ``2 * notebook_timeout`` seconds plus a few: the notebook run, then the
    isolated runs sharing a second budget. ``solutions`` replaces the repository's
    ``solutions/`` folder (for tests). Raises
    only when the grader itself cannot run (``client.WorkerError``), never because of
    the submission.
    """
    t0 = time.perf_counter()
    submission = Path(submission)
    result = NotebookResult(assignment, submission.name, "ok")
    try:
        source = load_source(assignment, submission.name, solutions)
    except (FileNotFoundError, ValueError, KeyError, TypeError) as exc:
        result.status, result.message = "invalid", f"unknown assignment or notebook ({exc})"
        return result
    try:
        student = read_submission(submission)
    except InvalidSubmission as exc:
        result.status, result.message = "invalid", str(exc)
        result.cells = [CellResult(c.grade_id, "test" if c.kind == "test" else "manual", 0,
                                   c.points, "invalid", _short(exc))
                        for c in source.cells if c.kind in ("test", "manual")]
        result.seconds = time.perf_counter() - t0
        return result

    _prepare(source)
    merged = merge(source, student)
    result.answers, result.flags = merged.answers, list(merged.flags)
    limits = confine.Limits(memory_mb=memory_mb, cpu_seconds=int(notebook_timeout) + 10)
    res = _resources()
    scrub = _Scrubber(source)

    # 1. The notebook run.
    try:
        run = _notebook_run(merged, source, res, cell_timeout, notebook_timeout, limits)
    except slicing.TooLarge as exc:
        result.status, result.message = "invalid", _short(exc)
        result.cells = [CellResult(c.grade_id, "test" if c.kind == "test" else "manual", 0,
                                   c.points, "invalid", _short(exc))
                        for c in source.cells if c.kind in ("test", "manual")]
        result.seconds = time.perf_counter() - t0
        return result
    result.status, result.message = run.status, run.message
    if run.status != "ok":
        # The exercises are judged apart (step 2), so points may stand: the flag says the
        # notebook itself did not run to the end, for the instructor's review.
        result.flags.append(f"the notebook run stopped ({run.status}): {run.message}; "
                            f"the exercises were judged in their own runs")

    # 2. The authoritative verdicts, one isolated run per exercise tested.
    answer_functions = _answer_functions(source)
    specs = {c.grade_id: case_specs(c.source_cell, _kernel_source(c.source_cell))
             for c in merged.cells if c.kind == "test"}
    # They share one budget of notebook_timeout seconds (so grading a notebook takes at
    # most twice notebook_timeout, plus a few seconds, whatever it does).
    verdicts: dict[str, _Verdict] = {}
    budget_end = time.monotonic() + notebook_timeout
    for fn in dict.fromkeys(s.function for ss in specs.values() for s in ss):
        left = max(1.0, budget_end - time.monotonic())
        verdicts[fn] = _verdict(fn, merged, specs, source, res, min(cell_timeout, left), left,
                                limits, hidden_seed)
    missing = {fn: gid for gid, names in answer_functions.items() if gid in merged.missing
               for fn in names}
    if res.worker.mode == "fallback":
        res.cleanup_fallback()

    # 3. Points per graded cell, in source order.
    index_of = {c.grade_id: c.index for c in merged.cells if c.kind == "test"}
    for scell in source.cells:
        if scell.kind == "manual":
            text = merged.answers.get(scell.grade_id, "")
            result.cells.append(CellResult(
                scell.grade_id, "manual", 0.0, scell.points, "needs_manual_grade",
                "graded by hand" if text.strip() else "graded by hand (the answer is empty)"))
        elif scell.kind == "test":
            line = run.by_cell.get(index_of[scell.grade_id])
            note = merged.notes.get(scell.grade_id, "")
            if not specs[scell.grade_id]:
                result.cells.append(CellResult(
                    scell.grade_id, "test", 0.0, scell.points, "invalid",
                    "grader error: this test cell of the course's source calls no check(...) "
                    "of a known exercise; tell your instructor"))
                continue
            cell, tampered = _exercise_cell(scell, specs[scell.grade_id], verdicts, line,
                                            run, note, missing, scrub, hidden_feedback,
                                            credit)
            if tampered:
                result.flags.append(
                    f"tampering suspected in {scell.grade_id}: the test passed in the "
                    f"notebook, but the isolated re-run of {', '.join(tampered)} failed "
                    f"the same checks")
            result.cells.append(cell)
    result.seconds = time.perf_counter() - t0
    return result
