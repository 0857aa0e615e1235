"""Grade a whole class: discovery, sharding, a pool of per-student processes, outputs.

``python -m autograder grade SUBMISSIONS --out OUT`` lands here. The layout of
SUBMISSIONS is ``<student_id>/<assignment>/<notebook>.ipynb``, the same relative paths as
``notebooks/``. One notebook is graded by :func:`autograder.engine.grade_notebook`; this
module only organises the run:

* :func:`discover` lists the students and which course notebooks each one handed in;
* :func:`in_shard` splits the class into disjoint parts (deterministic by student id), so
  that several machines can each grade a part (``--shard I/N``) and
  ``python -m autograder merge`` joins their outputs;
* :func:`grade_class` grades students in parallel in ``--jobs`` grading processes, one
  student at a time each; results stream back one notebook at a time, so a grading
  process that dies or hangs costs only the unfinished notebooks of its current student
  (the engine runs each notebook in a fresh confined child of its own);
* :func:`write_outputs` writes ``OUT/results.jsonl`` (one JSON object per notebook, the
  canonical record that ``merge``, ``report`` and ``export`` read), ``OUT/grades.csv``
  (one row per graded cell), ``OUT/summary.csv`` (one row per student and assignment)
  and ``OUT/feedback/<student>/<assignment>/<notebook>.html``.

Nothing under SUBMISSIONS is written: the engine sees a private copy of each notebook.
"""

from __future__ import annotations

import dataclasses
import functools
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
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Iterable

from autograder import SOLUTIONS_DIR, safe_text
from autograder.results import late
from autograder.notebook.source import SourceCell, course_notebooks
from autograder.results.outputs import write_outputs
from autograder.results.records import (credit_of, missing_record, read_records, result_record,
                                solutions_digest, sort_key)

# --------------------------------------------------------------------------- course layout

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
    hidden_feedback: str = "full"    # or "brief" (grade --hidden-feedback)
    credit: str = "all"              # or "cases": partial credit by case group (grade --credit)


# --------------------------------------------------------------------------- the pool


def _wall_factor() -> float:
    """How many times its limits a student's grading may take on the wall clock (the
    limits count the student's own time: a busy machine stretches only the wall clock)."""
    from autograder.engine import WALL_FACTOR

    return WALL_FACTOR

GradeFunction = Callable[..., object]


def _send(conn, obj) -> None:
    conn.send_bytes(json.dumps(obj).encode("utf-8"))


def _grade_one(student_id: str, assignment: str, notebook: str, source: str, tmp: Path,
               limits: Limits, cells: list[SourceCell], grade_fn: GradeFunction,
               secret: bytes | None = None) -> dict:
    """Grade one notebook from a private copy (the engine never sees SUBMISSIONS). With
    the instructor's ``secret``, its hidden cases are drawn from the student's seed
    (:mod:`autograder.run.secret`), computed here, in the trusted grading process."""
    start = time.monotonic()
    try:
        copy = tmp / assignment / notebook
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy)
        more = {} if limits.hidden_feedback == "full" else {"hidden_feedback": limits.hidden_feedback}
        if limits.credit != "all":
            more["credit"] = limits.credit
        if secret is not None:
            from autograder.run import secret as hidden

            more["hidden_seed"] = hidden.hidden_seed(secret, student_id, assignment, notebook)
        result = grade_fn(copy, assignment, cell_timeout=limits.cell_timeout,
                          notebook_timeout=limits.notebook_timeout, memory_mb=limits.memory_mb,
                          **more)
        return result_record(student_id, assignment, notebook, result, cells,
                             time.monotonic() - start)
    except Exception as exc:  # the engine promises not to raise; if it does, say so
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return missing_record(student_id, assignment, notebook, cells, "grader_error",
                              f"the grader failed on this notebook: {last}")


def _close_engine_worker() -> None:
    """Stop this process's engine worker and remove its files (a grading process's last act)."""
    from autograder import engine

    engine.close_worker()


def _slot_main(conn, limits: Limits, course: dict, grade_fn: GradeFunction, workdir: str,
               at_exit: Callable[[], None] | None, secret: bytes | None = None) -> None:
    """Body of a grading process: grade the students it is sent, one at a time.

    The process lives for many students so that the engine's pre-warmed worker (a second
    of start-up) is paid once per process, not once per student; the students' code
    itself runs in a fresh child of that worker for every notebook. Protocol (JSON over
    ``conn``): receives ``{"student_id", "jobs": [[assignment, notebook, path], ...]}``
    or ``null`` (stop); sends one record per notebook, then ``{"done": student_id}``.
    ``at_exit`` runs when told to stop (it closes the engine's worker).
    """
    os.setpgid(0, 0)  # its own process group: a timeout kills the whole tree
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Every temporary folder of this process (the engine worker's among them) inside the
    # run's folder, which the parent removes even when it had to kill us.
    tempfile.tempdir = workdir
    while True:
        try:
            task = json.loads(conn.recv_bytes())
        except EOFError:
            return
        if task is None:
            if at_exit:
                at_exit()
            return
        with tempfile.TemporaryDirectory(prefix="student-", dir=workdir) as tmp:
            os.chdir(tmp)
            for assignment, notebook, source in task["jobs"]:
                _send(conn, _grade_one(task["student_id"], assignment, notebook, source, Path(tmp),
                                       limits, course[(assignment, notebook)], grade_fn,
                                       secret))
            os.chdir("/")
        _send(conn, {"done": task["student_id"]})


@dataclasses.dataclass
class _Slot:
    """A grading process and the student it is working on (if any)."""

    process: multiprocessing.Process
    conn: object
    student: Student | None = None
    jobs: list = dataclasses.field(default_factory=list)
    done: set = dataclasses.field(default_factory=set)
    deadline: float = 0.0


def grade_class(students: list[Student], course: dict[tuple[str, str], list[SourceCell]],
                limits: Limits, jobs: int, grade_fn: GradeFunction, progress=None,
                budget_margin: float = 30.0, at_exit: Callable[[], None] | None = None,
                done: set[tuple[str, str, str]] = frozenset(),
                on_record: Callable[[dict], None] | None = None,
                secret: bytes | None = None) -> list[dict]:
    """Grade every course notebook of every student with ``grade_fn`` (the engine's
    ``grade_notebook`` or a stand-in with its signature); return one record per notebook.

    ``jobs`` grading processes (forked) take students one at a time, so up to ``jobs``
    students are graded in parallel. A grading process that dies (killed by what it ran,
    out of memory) or overruns the student's time (every notebook's limit plus
    ``budget_margin`` seconds, times ``engine.WALL_FACTOR``) costs only that student's unfinished notebooks: they are
    recorded as ``crashed`` / ``timeout`` with zero points, a fresh process replaces it,
    and the run goes on. A notebook the student did not hand in is recorded as
    ``missing``. Notebooks in ``done`` (student, assignment, notebook) are skipped (an
    interrupted run being resumed); ``on_record`` sees every record as it is made.
    ``secret``: the instructor's grading secret (the hidden cases' per-student seeds);
    the grading processes inherit it by fork, and no child of theirs gets it.
    """
    ctx = multiprocessing.get_context("fork")
    # Private copies of the notebooks live here; removed at the end even if a grading
    # process was killed before it could clean up.
    workdir = tempfile.mkdtemp(prefix="autograder-grade-")
    os.chmod(workdir, 0o711)   # the worker's copies inside stay reachable by its children
    records = _Records(on_record)
    queue: list[tuple[Student, list]] = []
    for student in students:
        for (assignment, notebook), cells in sorted(course.items()):
            if (student.student_id, assignment, notebook) in done:
                continue
            if (assignment, notebook) not in student.notebooks:   # no work: not counted
                records.append(missing_record(student.student_id, assignment, notebook, cells))
        todo = [(a, n, str(p)) for (a, n), p in sorted(student.notebooks.items())
                if (student.student_id, a, n) not in done]
        if todo:
            queue.append((student, todo))
    queue.reverse()  # pop() from the end keeps the students in order
    slots: list[_Slot] = []

    def start_slot() -> _Slot:
        parent_end, child_end = ctx.Pipe(duplex=True)
        process = ctx.Process(target=_slot_main, name="grader",
                              args=(child_end, limits, course, grade_fn, workdir, at_exit,
                                    secret),
                              daemon=False)
        process.start()
        child_end.close()
        slot = _Slot(process, parent_end)
        slots.append(slot)
        return slot

    def give_out(slot: _Slot) -> None:
        student, todo = queue.pop()
        try:
            _send(slot.conn, {"student_id": student.student_id, "jobs": todo})
        except OSError:  # the process died while idle: replace it, student back in line
            queue.append((student, todo))
            _kill_tree(slot.process)
            slot.conn.close()
            slots.remove(slot)
            return
        slot.student, slot.jobs, slot.done = student, todo, set()
        slot.deadline = time.monotonic() + len(todo) * (
            limits.notebook_timeout + budget_margin) * _wall_factor() + budget_margin

    def lose(slot: _Slot, status: str, message: str) -> None:
        """Record the slot's unfinished notebooks as lost and retire the slot."""
        for assignment, notebook, _ in slot.jobs:
            if (assignment, notebook) not in slot.done:
                records.append(missing_record(slot.student.student_id, assignment, notebook,
                                              course[(assignment, notebook)], status, message))
                if progress:
                    progress.advance(failed=True)
        _kill_tree(slot.process)
        slot.conn.close()
        slots.remove(slot)

    try:
        while queue or any(s.student for s in slots):
            for slot in list(slots):
                if slot.student is None and queue:
                    give_out(slot)
            while queue and len(slots) < max(1, jobs):
                give_out(start_slot())
            busy = [s for s in slots if s.student]
            ready = wait([s.conn for s in busy], timeout=0.5)
            if progress:
                progress.tick()   # a log line every few seconds, even on a slow notebook
            for slot in busy:
                if slot.conn in ready:
                    try:
                        message = json.loads(slot.conn.recv_bytes())
                    except (EOFError, OSError):
                        slot.process.join(5)
                        code = slot.process.exitcode
                        how = (f"was killed by signal {-code}" if code and code < 0
                               else f"exited with code {code}")
                        lose(slot, "crashed", f"the grading process {how} while grading"
                                              " this notebook")
                        continue
                    if "done" in message:
                        slot.student = None
                        continue
                    slot.done.add((message["assignment"], message["notebook"]))
                    records.append(message)
                    if progress:
                        progress.advance(failed=message["status"] != "ok")
                elif time.monotonic() > slot.deadline:
                    lose(slot, "timeout", "grading this student's notebooks overran their time"
                                          " limits; the grading process was stopped")
    except BaseException:  # interrupted (Ctrl-C) or a bug here: stop everything now
        for slot in slots:
            _kill_tree(slot.process)
        raise
    finally:
        for slot in slots:
            try:
                _send(slot.conn, None)
            except OSError:
                pass
        for slot in slots:
            slot.process.join(10)
            if slot.process.exitcode is None:
                _kill_tree(slot.process)
            slot.conn.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return list(records)


class _Records(list):
    """The records of a run, each also handed to ``on_record`` as it is made."""

    def __init__(self, on_record: Callable[[dict], None] | None):
        super().__init__()
        self.on_record = on_record

    def append(self, record: dict) -> None:
        super().append(record)
        if self.on_record is not None:
            self.on_record(record)


def default_jobs() -> int:
    """The number of cores this process may use (a Slurm or container CPU set counts)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _kill_tree(process: multiprocessing.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.join(5)


# --------------------------------------------------------------------------- outputs

# --------------------------------------------------------------------------- the command

#: Records of notebooks graded so far by a run, one JSON line each, written as they are
#: made (``grade --resume`` continues from them); removed when the run completes.
JOURNAL = "results.partial.jsonl"


class Interrupted(RuntimeError):
    """The run was stopped (SIGTERM, SIGINT); what was graded is kept for ``--resume``."""


def _stop_on_sigterm():
    """In the main process: SIGTERM (what Slurm and Kubernetes send) stops the run like
    Ctrl-C. Returns a function that puts the previous handler back."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    if threading_is_main():
        previous = signal.signal(signal.SIGTERM, stop)
        return lambda: signal.signal(signal.SIGTERM, previous)
    return lambda: None


def threading_is_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def run(submissions: Path, out: Path, *, jobs: int | None = None, limits: Limits | None = None,
        shard: tuple[int, int] | None = None, solutions: Path = SOLUTIONS_DIR,
        grade_fn: GradeFunction | None = None, stream=None, resume: bool = False,
        only: Iterable[str] | None = None,
        assignments: Iterable[str] | None = None,
        secret_file: str | os.PathLike | None = None) -> list[dict]:
    """Grade ``submissions`` into ``out``; return the records. Raises ``FileNotFoundError``
    / ``ValueError`` when the grader cannot run at all (no such folder, no course, OUT
    inside SUBMISSIONS), and :class:`autograder.engine.UnsafeToGrade` when student code
    would run as root (:func:`autograder.engine.check_safe_to_grade`). ``grade_fn``
    defaults to :func:`autograder.engine.grade_notebook`. ``only`` (``grade --student``)
    regrades those students alone into an existing ``out``: the other students' records
    there are kept as they are.

    Only what was assigned is graded: the ``assignments`` named (``grade --assignments``),
    by default every course notebook some student of SUBMISSIONS handed in (the whole
    folder, not only this shard, so that every shard grades the same homework). A course
    notebook nobody handed in gets no record: it was not assigned, and is not "missing"
    for the whole class in the table, ``summary.csv`` or the report.

    The real engine draws every student's hidden cases from a seed derived from the
    instructor's secret (:mod:`autograder.run.secret`): ``secret_file``
    (``grade --secret-file``), else ``$AUTOGRADER_SECRET_FILE``, else
    ``out/grading-secret.key``, made on first use."""
    from autograder.run.progress import Progress

    at_exit = None
    if grade_fn is None:
        from autograder.engine import grade_notebook  # imported once here, shared by the forks

        at_exit = _close_engine_worker

        grade_fn = grade_notebook
        if Path(solutions).resolve() != SOLUTIONS_DIR.resolve():
            grade_fn = functools.partial(grade_notebook, solutions=Path(solutions))
    if not submissions.is_dir():
        raise FileNotFoundError(f"submissions folder not found: {submissions}")
    submissions = submissions.resolve()  # grading processes work in their own folders
    if Path(out).resolve().is_relative_to(submissions):
        raise ValueError(f"the output folder {out} is inside the submissions folder; "
                         "grading never writes there: choose another --out")
    course = course_notebooks(solutions)
    if not course:
        raise ValueError(f"no solution notebooks in {solutions}: nothing to grade against")
    everyone = discover(submissions, course)
    if assignments is not None:
        assignments = set(assignments)
        unknown = sorted(assignments - {a for a, _ in course})
        if unknown:
            raise ValueError("--assignments names no course notebook: "
                             + ", ".join(safe_text.terminal(u) for u in unknown))
        course = {key: cells for key, cells in course.items() if key[0] in assignments}
        for student in everyone:         # handed in but not assigned: not graded
            student.notebooks = {k: p for k, p in student.notebooks.items() if k in course}
    else:
        handed_in = {key for s in everyone for key in s.notebooks}
        course = {key: cells for key, cells in course.items() if key in handed_in}
    students = [s for s in everyone if in_shard(s.student_id, shard)]
    stream = sys.stderr if stream is None else stream
    limits = limits or Limits()
    kept: list[dict] = []
    if only is not None:
        only = set(only)
        unknown = sorted(only - {s.student_id for s in students})
        if unknown:
            raise ValueError("no submissions in " + safe_text.terminal(str(submissions))
                             + " for student(s): "
                             + ", ".join(safe_text.terminal(u) for u in unknown))
        students = [s for s in students if s.student_id in only]
        kept = [r for r in read_records(Path(out)) if r["student_id"] not in only]
        _refuse_mixed_credit(kept, limits.credit, f"of the other students in {out}",
                             "Regrade these students")
    for student in students:
        for path in student.ignored:
            print(f"note: not a course notebook, not graded: {safe_text.terminal(path)}",
                  file=stream)
    if at_exit is not None:   # the real engine: student code will run; never as root
        from autograder.engine import check_safe_to_grade

        check_safe_to_grade(stream=stream)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    journal = out / JOURNAL
    from autograder import __version__

    # which solutions/, grader and secret decided a record, and how a failing cell scores
    stamp = {"solutions": solutions_digest(solutions), "grader": __version__,
             "credit": limits.credit}
    secret = None
    if at_exit is not None:          # the real engine: hidden cases seeded per student
        from autograder.run import secret as hidden

        secret = hidden.load(hidden.location(out, secret_file),
                             warn=lambda text: print(f"warning: {text}", file=stream))
        stamp["hidden_key"] = hidden.key_id(secret)
    earlier = _read_journal(journal) if resume else []
    wanted = {(s.student_id, a, n) for s in students for (a, n) in course}
    stale = [r for r in earlier if r.get("solutions") != stamp["solutions"]
             or r.get("grader") != stamp["grader"]
             or r.get("hidden_key") != stamp.get("hidden_key")]
    older = {r["student_id"] for r in kept if r.get("solutions") != stamp["solutions"]}
    if older:
        print(f"note: {len(older)} other student(s) in {safe_text.terminal(str(out))} were "
              "graded with another solutions/ (their records are kept as they are; "
              "grade everyone again to bring them up to date)", file=stream)
    other_key = {r["student_id"] for r in kept
                 if r.get("hidden_key") != stamp.get("hidden_key")}
    if other_key and secret is not None:
        print(f"note: {len(other_key)} other student(s) in {safe_text.terminal(str(out))} "
              "were graded with another grading secret (other hidden inputs); pass their "
              "secret with --secret-file to grade with the same one", file=stream)
    if stale:
        print(f"resume: {len(stale)} notebook(s) of the journal were graded with other "
              f"solutions/, another grader version or another grading secret: graded "
              f"again", file=stream)
    stale_ids = {id(r) for r in stale}
    earlier = [r for r in earlier if sort_key(r) in wanted and id(r) not in stale_ids]
    _refuse_mixed_credit(earlier, limits.credit, f"in the journal {journal}",
                         "Resume")
    done = {sort_key(r) for r in earlier}
    if resume:
        print(f"resume: {len(done)} notebook(s) already graded in {journal.name}",
              file=stream)
    total = sum(1 for s in students for (a, n) in s.notebooks if (s.student_id, a, n) not in done)
    progress = Progress(total, stream=stream, unit="notebooks")
    with open(journal, "a" if resume else "w", encoding="utf-8") as log:

        def keep(record: dict) -> None:
            record.update(stamp)             # which solutions/ and grader decided it
            log.write(json.dumps(record, sort_keys=True) + "\n")
            log.flush()

        restore = _stop_on_sigterm()
        try:
            records = grade_class(students, course, limits, jobs or default_jobs(),
                                  grade_fn, progress, at_exit=at_exit, done=done,
                                  on_record=keep, secret=secret)
        except KeyboardInterrupt:
            progress.close()
            raise Interrupted(f"stopped: the notebooks graded so far are kept in "
                              f"{journal}; `grade --resume` grades only the rest") from None
        finally:
            restore()
    progress.close()
    records = kept + earlier + records
    uploads = late.read_submissions(submissions)   # upload times and late flags (collect)
    for record in records:
        row = uploads.get(sort_key(record))
        if row is not None:
            record.update(submitted_at=row.get("submitted_at", ""),
                          lms_late=row.get("lms_late", ""), lms=row.get("lms", ""),
                          source=row.get("source", ""),   # the LMS's file name (feedback-package)
                          downloaded_at=row.get("downloaded_at") or "")   # which download
    write_outputs(records, out)
    journal.unlink(missing_ok=True)
    return records


class MixedCredit(ValueError):
    """Records graded with another ``--credit`` would be joined with this run's."""


def _refuse_mixed_credit(records: list[dict], credit: str, where: str, how: str) -> None:
    """:class:`MixedCredit` when ``records`` (to be kept beside this run's) were graded
    with another ``--credit`` than ``credit``: one test cell's points would mean all or
    nothing for some students and a fraction of case groups for others."""
    other = sorted({credit_of(r) for r in records} - {credit})
    if other:
        n = sum(1 for r in records if credit_of(r) != credit)
        raise MixedCredit(
            f"{n} notebook(s) {where} were graded with --credit {other[0]}, and this run "
            f"asks for --credit {credit}: one class's points must mean one thing. {how} "
            f"with --credit {other[0]}, or grade everyone with --credit {credit} into a "
            f"new --out")


def _read_journal(path: Path) -> list[dict]:
    """The records of an interrupted run (a last line cut off by the stop is dropped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and {"student_id", "assignment", "notebook"} <= set(record):
            out.append(record)
    return out
