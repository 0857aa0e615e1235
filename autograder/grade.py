"""Grade a whole class: discovery, sharding, a pool of per-student processes, outputs.

``python -m autograder grade SUBMISSIONS --out OUT`` lands here. The layout of
SUBMISSIONS is ``<student_id>/<assignment>/<notebook>.ipynb``, the same relative paths as
``notebooks/``. One notebook is graded by :func:`autograder.engine.grade_notebook`; this
module only organises the run:

* :func:`discover` lists the students and which course notebooks each one handed in;
* :func:`in_shard` splits the class into disjoint parts (deterministic by student id), so
  that several machines can each grade a part (``--shard I/N``) and
  ``python -m autograder merge`` joins their outputs;
* :func:`grade_class` grades students in parallel, each student in a process of its own
  (a notebook that kills the process above it takes only that student's current
  notebook with it); results stream back to this process one notebook at a time;
* :func:`write_outputs` writes ``OUT/results.jsonl`` (one JSON object per notebook, the
  canonical record that ``merge``, ``report`` and ``export`` read), ``OUT/grades.csv``
  (one row per graded cell), ``OUT/summary.csv`` (one row per student and assignment)
  and ``OUT/feedback/<student>/<assignment>/<notebook>.html``.

Nothing under SUBMISSIONS is ever written: every notebook is copied to a private
temporary folder before the engine sees it.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Iterable

from autograder import SOLUTIONS_DIR

#: Columns of ``grades.csv`` (one row per graded cell).
GRADE_COLUMNS = ["student_id", "assignment", "notebook", "grade_id", "kind", "points",
                 "max_points", "status", "message"]
#: Columns of ``summary.csv`` (one row per student and assignment).
SUMMARY_COLUMNS = ["student_id", "assignment", "points", "max_points", "status", "notebooks",
                   "flags", "message"]
#: Notebook statuses from best to worst; an assignment's status is its worst notebook's.
STATUS_ORDER = ["ok", "failed", "needs_manual_grade", "timeout", "memory", "output_limit",
                "crashed", "invalid", "missing", "grader_error"]
#: Longest answer source (characters) kept in results.jsonl and the feedback page.
MAX_ANSWER_CHARS = 20_000
#: Longest message / feedback text kept per cell.
MAX_MESSAGE_CHARS = 300
MAX_FEEDBACK_CHARS = 4_000


# --------------------------------------------------------------------------- course layout

@dataclasses.dataclass(frozen=True)
class GradedCell:
    """A cell of a solution notebook that earns points."""

    grade_id: str
    kind: str          # "test" (autograded code cell) or "manual" (graded by hand)
    max_points: float


def course_notebooks(solutions: Path = SOLUTIONS_DIR) -> dict[tuple[str, str], list[GradedCell]]:
    """``{(assignment, notebook file name): graded cells}`` for every solution notebook.

    The solution notebooks are the source of truth for what is graded and how many
    points each cell is worth (the engine reads the same files).
    """
    found: dict[tuple[str, str], list[GradedCell]] = {}
    if not solutions.is_dir():
        return found
    for folder in sorted(p for p in solutions.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(folder.glob("*.ipynb")):
            cells = []
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if meta.get("grade"):
                    kind = "test" if cell["cell_type"] == "code" and not meta.get("solution") else "manual"
                    cells.append(GradedCell(meta["grade_id"], kind, float(meta.get("points", 0))))
            found[(folder.name, path.name)] = cells
    return found


# --------------------------------------------------------------------------- discovery

@dataclasses.dataclass
class Student:
    student_id: str
    #: ``(assignment, notebook file name) -> path`` of what the student handed in.
    notebooks: dict[tuple[str, str], Path]
    #: Files in the student's folder that are not course notebooks (reported, not graded).
    ignored: list[Path] = dataclasses.field(default_factory=list)


def discover(submissions: Path, course: Iterable[tuple[str, str]]) -> list[Student]:
    """The students in ``submissions`` (sorted by id) and their course notebooks.

    Folders whose name starts with ``.`` or ``_`` are not students (``collect`` keeps
    unmatched files in ``_unmatched/``).
    """
    course = set(course)
    students = []
    for folder in sorted(submissions.iterdir()):
        if not folder.is_dir() or folder.name.startswith((".", "_")):
            continue
        student = Student(folder.name, {})
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or ".ipynb_checkpoints" in path.parts:
                continue
            rel = path.relative_to(folder).parts
            if len(rel) == 2 and (rel[0], rel[1]) in course:
                student.notebooks[(rel[0], rel[1])] = path
            else:
                student.ignored.append(path)
        students.append(student)
    return students


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``; shards are numbered from 1 to N."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes I/N (e.g. 2/4), not {text!r}") from None
    if not (count >= 1 and 1 <= index <= count):
        raise ValueError(f"--shard {text}: need 1 <= I <= N")
    return index, count


def shard_of(student_id: str, count: int) -> int:
    """The shard (1..count) a student belongs to: a hash of the id, so it is the same on
    every machine and does not depend on who else is in the folder."""
    digest = hashlib.sha256(student_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(student_id: str, shard: tuple[int, int] | None) -> bool:
    return shard is None or shard_of(student_id, shard[1]) == shard[0]


# --------------------------------------------------------------------------- one notebook

@dataclasses.dataclass
class Limits:
    """Limits passed to the engine for every notebook."""

    cell_timeout: float = 30.0
    notebook_timeout: float = 120.0
    memory_mb: int = 2048


def _short(text, limit: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_record(student_id: str, assignment: str, notebook: str, result,
                  cells: list[GradedCell], seconds: float) -> dict:
    """A JSON-ready record of one graded notebook (an engine ``NotebookResult``).

    Every graded cell of the solution gets a row: a cell the engine did not report (the
    notebook could not be read, say) scores 0 with the notebook's status and message.
    """
    status = str(getattr(result, "status", "grader_error"))
    message = _short(getattr(result, "message", ""), MAX_MESSAGE_CHARS)
    by_id = {}
    for cell in getattr(result, "cells", []) or []:
        by_id.setdefault(str(cell.grade_id), cell)
    rows = []
    for expected in cells:
        cell = by_id.pop(expected.grade_id, None)
        if cell is None:
            rows.append({"grade_id": expected.grade_id, "kind": expected.kind, "points": 0.0,
                         "max_points": expected.max_points,
                         "status": status if status != "ok" else "missing",
                         "message": message or "not graded", "feedback": ""})
            continue
        rows.append({
            "grade_id": expected.grade_id,
            "kind": str(getattr(cell, "kind", expected.kind)),
            "points": float(getattr(cell, "points", 0.0) or 0.0),
            "max_points": expected.max_points,
            "status": str(getattr(cell, "status", status)),
            "message": _short(getattr(cell, "message", ""), MAX_MESSAGE_CHARS),
            "feedback": _short(getattr(cell, "feedback", ""), MAX_FEEDBACK_CHARS),
        })
    answers = getattr(result, "answers", {}) or {}
    return {
        "student_id": student_id, "assignment": assignment, "notebook": notebook,
        "status": status, "message": message,
        "flags": [_short(f, MAX_MESSAGE_CHARS) for f in getattr(result, "flags", []) or []],
        "points": sum(r["points"] for r in rows),
        "max_points": sum(r["max_points"] for r in rows),
        "cells": rows,
        "answers": {str(k): _short(v, MAX_ANSWER_CHARS) for k, v in answers.items()},
        "seconds": round(seconds, 3),
    }


def missing_record(student_id: str, assignment: str, notebook: str, cells: list[GradedCell],
                   status: str = "missing", message: str = "notebook not handed in") -> dict:
    """The record of a notebook that was not graded: every cell 0 with ``status``."""
    failed = type("Unread", (), {"status": status, "message": message, "cells": [],
                                  "answers": {}, "flags": []})()
    record = result_record(student_id, assignment, notebook, failed, cells, 0.0)
    for row in record["cells"]:
        row["status"], row["message"] = status, message
    return record


# --------------------------------------------------------------------------- the pool

GradeFunction = Callable[..., object]


def _engine_grade_notebook(*args, **kwargs):
    from autograder.engine import grade_notebook

    return grade_notebook(*args, **kwargs)


def _grade_student(student_id: str, jobs: list[tuple[str, str, str]], limits: Limits,
                   course: dict, grade_fn: GradeFunction, conn) -> None:
    """Body of a student's process: grade each notebook, send one JSON record per notebook."""
    os.setpgid(0, 0)  # its own process group: a timeout kills the whole tree
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        os.chdir(tmp)
        for assignment, notebook, source in jobs:
            # A private copy: the engine (and the student's code) never sees SUBMISSIONS.
            copy = Path(tmp) / assignment / notebook
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
            start = time.monotonic()
            try:
                result = grade_fn(copy, assignment, cell_timeout=limits.cell_timeout,
                                  notebook_timeout=limits.notebook_timeout,
                                  memory_mb=limits.memory_mb)
                record = result_record(student_id, assignment, notebook, result,
                                       course[(assignment, notebook)], time.monotonic() - start)
            except Exception as exc:  # the engine promises not to raise; if it does, say so
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                record = missing_record(student_id, assignment, notebook,
                                        course[(assignment, notebook)], "grader_error",
                                        f"the grader failed on this notebook: {last}")
            conn.send_bytes(json.dumps(record).encode("utf-8"))
    conn.close()


@dataclasses.dataclass
class _Running:
    student: Student
    jobs: list[tuple[str, str, str]]
    process: multiprocessing.Process
    conn: object
    deadline: float
    done: set = dataclasses.field(default_factory=set)


def grade_class(students: list[Student], course: dict[tuple[str, str], list[GradedCell]],
                limits: Limits, jobs: int, progress=None,
                grade_fn: GradeFunction = _engine_grade_notebook,
                budget_margin: float = 30.0) -> list[dict]:
    """Grade every course notebook of every student; return one record per notebook.

    Up to ``jobs`` students are graded at once, each in a forked process. A student's
    process that dies (killed by the student's code, out of memory) or overruns its time
    (every notebook's limit plus ``budget_margin`` seconds) costs only the notebooks it had not finished:
    they are recorded as ``crashed`` / ``timeout`` with zero points, and the run goes on.
    A notebook the student did not hand in is recorded as ``missing``.
    """
    ctx = multiprocessing.get_context("fork")
    records: list[dict] = []
    queue = []
    for student in students:
        for (assignment, notebook), cells in sorted(course.items()):
            if (assignment, notebook) not in student.notebooks:
                records.append(missing_record(student.student_id, assignment, notebook, cells))
                if progress:
                    progress.advance(worked=False)
        todo = [(a, n, str(p)) for (a, n), p in sorted(student.notebooks.items())]
        if todo:
            queue.append((student, todo))
    queue.reverse()  # pop() from the end keeps the students in order
    running: list[_Running] = []

    def finish(run: _Running, status: str, message: str) -> None:
        for assignment, notebook, _ in run.jobs:
            if (assignment, notebook) not in run.done:
                records.append(missing_record(run.student.student_id, assignment, notebook,
                                              course[(assignment, notebook)], status, message))
                if progress:
                    progress.advance(failed=True)
        run.conn.close()

    try:
        while queue or running:
            while queue and len(running) < max(1, jobs):
                student, todo = queue.pop()
                receiver, sender = ctx.Pipe(duplex=False)
                process = ctx.Process(
                    target=_grade_student, name=f"grade-{student.student_id}",
                    args=(student.student_id, todo, limits, course, grade_fn, sender), daemon=False)
                process.start()
                sender.close()
                budget = len(todo) * (limits.notebook_timeout + budget_margin) + budget_margin
                running.append(_Running(student, todo, process, receiver, time.monotonic() + budget))
            ready = wait([r.conn for r in running], timeout=0.5)
            for run in list(running):
                if run.conn in ready:
                    try:
                        record = json.loads(run.conn.recv_bytes())
                    except (EOFError, OSError):
                        run.process.join()
                        code = run.process.exitcode
                        if len(run.done) < len(run.jobs):
                            how = (f"killed by signal {-code}" if code and code < 0
                                   else f"exited with code {code}")
                            finish(run, "crashed", f"the grading process of this student was {how}"
                                   " while grading this notebook (killed by the notebook?)")
                        else:
                            run.conn.close()
                        running.remove(run)
                        continue
                    run.done.add((record["assignment"], record["notebook"]))
                    records.append(record)
                    if progress:
                        progress.advance(failed=record["status"] != "ok")
                elif time.monotonic() > run.deadline:
                    _kill_tree(run.process)
                    finish(run, "timeout", "the student's grading process overran its time limit")
                    running.remove(run)
    finally:
        for run in running:  # interrupted: leave no process behind
            _kill_tree(run.process)
    return records


def _kill_tree(process: multiprocessing.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.join(5)


# --------------------------------------------------------------------------- outputs

def sort_key(record: dict) -> tuple:
    return (record["student_id"], record["assignment"], record["notebook"])


def worst_status(statuses: Iterable[str]) -> str:
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    return max(statuses, key=lambda s: rank.get(s, len(STATUS_ORDER)), default="missing")


def summary_rows(records: list[dict]) -> list[dict]:
    """One row per (student, assignment): points, worst status, flags, messages."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for record in sorted(records, key=sort_key):
        groups[(record["student_id"], record["assignment"])].append(record)
    rows = []
    for (student_id, assignment), group in groups.items():
        messages = [f"{r['notebook']}: {r['message']}" for r in group if r["status"] != "ok" and r["message"]]
        rows.append({
            "student_id": student_id, "assignment": assignment,
            "points": _num(sum(r["points"] for r in group)),
            "max_points": _num(sum(r["max_points"] for r in group)),
            "status": worst_status(r["status"] for r in group),
            "notebooks": len(group),
            "flags": "; ".join(f for r in group for f in r["flags"]),
            "message": "; ".join(messages),
        })
    return rows


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(float(x), 4)


def write_outputs(records: list[dict], out: Path) -> None:
    """Write results.jsonl, grades.csv, summary.csv and the feedback pages into ``out``."""
    from autograder.feedback import write_feedback

    out.mkdir(parents=True, exist_ok=True)
    records = sorted(records, key=sort_key)
    with open(out / "results.jsonl", "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, sort_keys=True) + "\n")
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, GRADE_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for record in records:
            for row in record["cells"]:
                writer.writerow({**row, "student_id": record["student_id"],
                                 "assignment": record["assignment"], "notebook": record["notebook"],
                                 "points": _num(row["points"]), "max_points": _num(row["max_points"])})
    with open(out / "summary.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, SUMMARY_COLUMNS)
        writer.writeheader()
        writer.writerows(summary_rows(records))
    for record in records:
        if record["status"] != "missing":
            write_feedback(record, out / "feedback")


def read_records(out: Path) -> list[dict]:
    """The records of a grading output folder (its ``results.jsonl``)."""
    path = out / "results.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{out} is not a grading output: {path.name} is missing "
                                "(run `python -m autograder grade` first)")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def summary_table(records: list[dict]) -> str:
    """A plain-text table: per assignment, students, mean score and statuses; then the
    notebooks that did not grade cleanly."""
    by_assignment: dict[str, list[dict]] = defaultdict(list)
    for row in summary_rows(records):
        by_assignment[row["assignment"]].append(row)
    header = ("assignment", "students", "mean", "max", "statuses")
    lines = [header]
    for assignment in sorted(by_assignment):
        rows = by_assignment[assignment]
        counts = Counter(r["status"] for r in rows)
        statuses = ", ".join(f"{s} {counts[s]}" for s in sorted(counts, key=_rank))
        mean = sum(float(r["points"]) for r in rows) / len(rows)
        lines.append((assignment, str(len(rows)), f"{mean:.2f}", f"{_num(float(rows[0]['max_points']))}",
                      statuses))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    problems = [r for r in sorted(records, key=sort_key) if r["status"] not in ("ok", "missing")]
    flagged = [r for r in sorted(records, key=sort_key) if r["flags"]]
    if problems:
        text.append("")
        text.append(f"{len(problems)} notebook(s) did not run cleanly:")
        for r in problems[:25]:
            text.append(f"  {r['student_id']}/{r['assignment']}/{r['notebook']}: {r['status']}"
                        f" ({_num(r['points'])}/{_num(r['max_points'])}) {r['message']}")
        if len(problems) > 25:
            text.append(f"  ... and {len(problems) - 25} more (see summary.csv)")
    if flagged:
        text.append("")
        text.append(f"{len(flagged)} notebook(s) flagged for review:")
        for r in flagged[:25]:
            text.append(f"  {r['student_id']}/{r['assignment']}/{r['notebook']}: {'; '.join(r['flags'])}")
    return "\n".join(text)


def _rank(status: str) -> int:
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


# --------------------------------------------------------------------------- the command

def run(submissions: Path, out: Path, *, jobs: int | None = None, limits: Limits | None = None,
        shard: tuple[int, int] | None = None, solutions: Path = SOLUTIONS_DIR,
        grade_fn: GradeFunction = _engine_grade_notebook, stream=None) -> list[dict]:
    """Grade ``submissions`` into ``out``; return the records. Raises ``FileNotFoundError``
    / ``ValueError`` when the grader cannot run at all (no such folder, no course)."""
    from autograder.progress import Progress

    if not submissions.is_dir():
        raise FileNotFoundError(f"submissions folder not found: {submissions}")
    course = course_notebooks(solutions)
    if not course:
        raise ValueError(f"no solution notebooks in {solutions}: nothing to grade against")
    students = [s for s in discover(submissions, course) if in_shard(s.student_id, shard)]
    stream = sys.stderr if stream is None else stream
    for student in students:
        for path in student.ignored:
            print(f"note: not a course notebook, not graded: {path}", file=stream)
    total = len(students) * len(course)
    progress = Progress(total, stream=stream, unit="notebooks")
    records = grade_class(students, course, limits or Limits(), jobs or os.cpu_count() or 1,
                          progress, grade_fn)
    progress.close()
    write_outputs(records, out)
    return records
