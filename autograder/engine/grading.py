"""Grade one notebook: the notebook run, each exercise's verdict, the points (see the
package docstring)."""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder import safe_text
from autograder.notebook import slicing
from autograder.notebook.source import (BEGIN_HIDDEN, END_HIDDEN, CaseSpec, Source, SourceCell,
                                         case_specs, hidden_block, load_source, strip_hidden)
from autograder.notebook.submission import InvalidSubmission, Merged, merge, read_submission
from autograder.engine.resources import _prepare, _Resources, _resources
from autograder.engine.verdicts import Verdict, answer_functions, run_unbusied, verdict
from autograder.isolation import client, clock, confine, executor, student_helpers


#: How many times its limits a notebook's grading may take on the wall clock before a
#: caller gives up on it (a busy machine stretches the wall clock, never the limits,
#: which count the student's own time: :mod:`autograder.isolation.clock`).
WALL_FACTOR = clock.BACKSTOP_FACTOR

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


def _brief(function: str, group: str, text: str) -> str:
    """A failing hidden case in a few words: which group, and the likely mistake."""
    from helpers.course import judge

    mistake = judge.mistake_lines(text).replace("\n", "\n  ")     # candidates kept
    return (f"{function} failed a hidden case (group {group!r}; its inputs and expected "
            f"values are not shown)" + (f"\n  {mistake}" if mistake else ""))


def _select(verdict: Verdict, spec: CaseSpec) -> list[int]:
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
            continue
        for mark in (_DIAGNOSIS, _WHERE):
            if mark in e and mark not in parts[shown[0]]:
                parts[shown[0]] += mark + e.split(mark, 1)[1].split(_other(mark), 1)[0]
    text = "\n\n".join(parts)
    return safe_text.shorten(text, FEEDBACK_CHARS)


#: Where a failing case's explanation names a known mistake (helpers.course.judge's wording).
_DIAGNOSIS = "\n  Likely mistake"
#: Where it says where the learner's computation left the reference's steps.
_WHERE = "\n  Where it goes wrong:"


def _other(mark: str) -> str:
    """The other of the two marks (each one's words end where the other's begin)."""
    return _WHERE if mark == _DIAGNOSIS else _DIAGNOSIS


def _same_case(text: str, shown: str) -> bool:
    """Whether ``text`` (an explanation of a failing case) is already part of ``shown``."""
    head = " ".join(text.split(_DIAGNOSIS, 1)[0].split(_WHERE, 1)[0].split())
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

    graded = tuple(sorted({f for names in answer_functions(source).values() for f in names
                           if f in course.names()}))
    reply = run_unbusied(res, {"kind": "notebook", "cells": cells, "cell_timeout": cell_timeout,
                               "timeout": notebook_timeout, "answers": list(
                                   student_helpers.trusted_answers_of_notebook(graded))},
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


def _exercise_cell(scell: SourceCell, specs: list[CaseSpec], verdicts: dict[str, Verdict],
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
        brief = hidden_feedback == "brief" and v.hidden[shown]
        if brief:
            first = _brief(spec.function, v.groups[shown], first)
        if shown in v.wheres:
            w = v.wheres[shown]
            first += "\n  " + (w.brief if brief else w.full)
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


def _invalid(result: NotebookResult, source: Source, message: str, t0: float
             ) -> NotebookResult:
    """``result`` for a submission that cannot be graded: status ``invalid`` with
    ``message``, every graded cell listed with no points and the same message."""
    result.status, result.message = "invalid", message
    result.cells = [CellResult(c.grade_id, "test" if c.kind == "test" else "manual", 0,
                               c.points, "invalid", _short(message))
                    for c in source.cells if c.kind in ("test", "manual")]
    result.seconds = time.perf_counter() - t0
    return result


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

    Each run (the notebook run, each exercise's isolated runs) has ``notebook_timeout``
    seconds of its child's own time and ``cell_timeout`` seconds of CPU per cell or call
    (:mod:`autograder.isolation.clock`); a run the machine was too busy to finish within
    the wall-clock backstop is run again, and then raises ``client.WorkerError``. ``solutions`` replaces the repository's
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
        return _invalid(result, source, str(exc), t0)

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
        return _invalid(result, source, _short(exc), t0)
    result.status, result.message = run.status, run.message
    if run.status != "ok":
        # The exercises are judged apart (step 2), so points may stand: the flag says the
        # notebook itself did not run to the end, for the instructor's review.
        result.flags.append(f"the notebook run stopped ({run.status}): {run.message}; "
                            f"the exercises were judged in their own runs")

    # 2. The authoritative verdicts, one isolated run per exercise tested.
    defined = answer_functions(source)
    specs = {c.grade_id: case_specs(c.source_cell, _kernel_source(c.source_cell))
             for c in merged.cells if c.kind == "test"}
    # Each gets the full limits, counted in its child's own time (CPU time per call, own
    # time per run: docs/grading.md, "Limits"), so that neither a busy machine nor an
    # earlier exercise's slow run leaves an exercise less.
    from helpers import course

    verdicts: dict[str, Verdict] = {}
    for fn in dict.fromkeys(s.function for ss in specs.values() for s in ss):
        verdicts[fn] = verdict(course.get(fn), merged, specs, source, res, cell_timeout,
                               notebook_timeout, limits, hidden_seed)
    missing = {fn: gid for gid, names in defined.items() if gid in merged.missing
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
