"""Written answers graded in nbgrader's formgrader, on this grader's results.

``python -m autograder gradebook push OUT`` builds an nbgrader course folder in
``OUT/nbgrader/``:

* ``nbgrader_config.py``: the course (its root is that folder), rewritten by every push;
* ``gradebook.db``: nbgrader's gradebook, filled through nbgrader's own API
  (:class:`nbgrader.api.Gradebook`) with every graded notebook of ``OUT``: each test cell
  carries this grader's score as nbgrader's *autograde* score, each written answer is
  marked as needing manual grading (or holds the score already given; a score given to
  an earlier answer is not: the cell needs grading again, its comment shows the stale
  score);
* ``autograded/<student>/<assignment>/<notebook>.ipynb``: what formgrader shows for a
  submission (:mod:`autograder.results.formgrader_view`). It is the course's solution notebook with each answer cell replaced by the
  student's answer as the grader read it (``results.jsonl``), no outputs, and under each
  test cell one plain-text line with this grader's verdict. Nothing is executed to make
  it; the HTML a student typed into a written answer is made inert (``<``, ``>`` and
  ``&`` become entities), since formgrader renders Markdown without sanitizing it.

``submitted/<student>/<assignment>/`` holds empty folders only: formgrader counts an
assignment's submissions by them (it showed "Submissions 0"), and with no notebook in
them its "autograde" button has nothing to run (``nbgrader autograde`` would execute
student code outside the sandbox). The course's configuration also replaces nbgrader's
autograde steps with one that refuses to run, uses no nbgrader exchange (students hand
in through the LMS; nbgrader's default exchange folder logged "Unwritable directory" on
every page), and points the grading page's MathJax at the copy the server serves
(``jupyter-server-mathjax``; it came from a CDN). Each assignment's due date is the
deadline ``export`` stored, or ``push --deadline``; each submission carries its upload time
and the student's extension (``export --extensions``), so formgrader says late what
``export`` charges late.

``python -m autograder gradebook serve OUT`` starts a Jupyter server on that folder
(formgrader at ``/formgrader``; no terminals; no kernel can be started) and prints its
address. The instructor scores each written answer and writes a comment in
"Manual Grading".

``python -m autograder gradebook pull OUT`` reads those scores and comments back into
``OUT/manual_scores.json``, the same store as ``manual-import`` (applied by
:func:`autograder.results.records.apply_manual`), and rewrites ``summary.csv``, ``grades.csv``
and the feedback pages; ``export`` counts them and a later ``grade`` keeps them.

Every push pulls first, so a push after a regrade never wipes a score given in
formgrader. ``OUT/nbgrader/pushed.json`` remembers what the last push or pull left in
the gradebook: a pull takes a cell only when formgrader changed it since, so a score
given meanwhile through ``manual-import`` is not overwritten by the older one still in
the gradebook.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import sys
import warnings
from datetime import timezone
from pathlib import Path

from autograder import SOLUTIONS_DIR, safe_text
from autograder.notebook import cells as nbcells
from autograder.results import formgrader_view, late
from autograder.results.records import (MANUAL, answer_digest, csv_number, hand_score, manual_key,
                                        read_json_object, read_manual, read_records, stale_text,
                                        written_answer)

#: The course folder inside a grading output.
FOLDER = "nbgrader"
#: What the last push or pull left in the gradebook (see the module docstring).
SNAPSHOT = "pushed.json"
COURSE_ID = "course"
#: Student ids the gradebook takes: what ``collect`` makes (they become folder names
#: and appear in formgrader's pages and URLs).
STUDENT_ID = re.compile(r"^[A-Za-z0-9@+-][A-Za-z0-9._@+-]{0,99}$")
MAX_COMMENT_CHARS = safe_text.COMMENT_CHARS

CONFIG = '''\
"""nbgrader configuration of this course folder, written by
`python -m autograder gradebook push` (rewritten by every push: do not edit).

Start formgrader with `python -m autograder gradebook serve OUT`, or run Jupyter with
this folder as both working directory and server root.
"""

from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from nbgrader.exchange.abc import ExchangeList, ExchangeReleaseFeedback

HERE = Path(__file__).resolve().parent
c = get_config()  # noqa: F821  (provided by traitlets)
c.CourseDirectory.root = str(HERE)
c.CourseDirectory.course_id = "{course_id}"
c.CourseDirectory.db_url = "sqlite:///" + str(HERE / "gradebook.db")
c.CourseDirectory.autograded_directory = "autograded"
# source/ holds one empty folder per assignment (formgrader lists those); the others
# are never created: nothing here is to be released, collected or run.
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.feedback_directory = "feedback"
c.HTMLExporter.sanitize_html = True
c.FormgradeExtension.debug = False
# formgrader's grading page loads MathJax from a CDN (nbconvert's `mathjax` macro called
# with no URL): templates/formgrade/mathjax.html.j2 points it at the copy the
# jupyter-server-mathjax extension serves, so LaTeX renders offline. nbgrader's own
# template folder stays second (its formgrade template is the page).
from nbgrader.server_extensions.formgrader import handlers as _formgrader  # noqa: E402

c.HTMLExporter.extra_template_basedirs = [str(HERE / "templates"), _formgrader.template_path]


class NoExchangeList(ExchangeList):
    """No nbgrader exchange here (students hand in through the LMS, `python -m
    autograder collect` reads the download): nothing was released through one, so
    there is nothing to list, and no "unwritable exchange directory" on every page."""

    def start(self):
        return []


class NoExchangeReleaseFeedback(ExchangeReleaseFeedback):
    def start(self):
        self.fail("this course folder has no nbgrader exchange: send the feedback with "
                  "`python -m autograder feedback-package` (docs/grading.md)")


c.ExchangeFactory.list = NoExchangeList
c.ExchangeFactory.release_feedback = NoExchangeReleaseFeedback


class RefuseToRunStudentCode(Preprocessor):
    """nbgrader autograde would run student code outside the sandbox: refused."""

    def __call__(self, nb, resources):
        raise RuntimeError("this course folder is graded by `python -m autograder grade` "
                           "(sandboxed); nbgrader autograde is disabled here")


c.Autograde.sanitize_preprocessors = [RefuseToRunStudentCode]
c.Autograde.autograde_preprocessors = [RefuseToRunStudentCode]
'''


#: Copied to ``templates/formgrade/mathjax.html.j2`` of the course folder (``make lab``'s
#: configuration uses it where it is): nbconvert's ``mathjax``
#: macro with the locally served MathJax 2 (the ``jupyter-server-mathjax`` package) as its
#: default URL. formgrader's page calls the macro with no URL, so the CDN's was used. The
#: URL is relative to that page, always ``<base>/formgrader/submissions/<id>/`` (formgrader
#: redirects there), so it holds under any base URL (JupyterHub's ``/user/NAME/``). That
#: package ships only MathJax's STIX-Web fonts: asked for them first, MathJax does not ask
#: for the TeX fonts it lacks (a 404 on every page).
MATHJAX_TEMPLATE = Path(__file__).resolve().parent.parent / "nbgrader_templates" / \
    "formgrade" / "mathjax.html.j2"


class GradebookError(ValueError):
    """The gradebook cannot be pushed or pulled; the message says why. Nothing changed."""


@dataclasses.dataclass
class Outcome:
    """What a push or pull did, for the command line."""

    folder: Path
    notebooks: int = 0            # graded notebooks in the gradebook (push)
    to_grade: int = 0             # written answers still without a score (push)
    taken: int = 0                # scores taken from formgrader (pull)
    notes: list[str] = dataclasses.field(default_factory=list)


def folder(out: Path) -> Path:
    return Path(out) / FOLDER


def db_url(out: Path) -> str:
    return "sqlite:///" + str((folder(out) / "gradebook.db").resolve())


def _stem(notebook: str) -> str:
    return notebook[:-len(".ipynb")] if notebook.endswith(".ipynb") else notebook


def _read_snapshot(out: Path) -> dict[str, list]:
    return read_json_object(folder(out) / SNAPSHOT)


def _write_json(path: Path, data) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


def _open(out: Path):
    from nbgrader.api import Gradebook

    # creating a gradebook runs nbgrader's `alembic` command, installed beside this Python
    # (on PATH only when the environment is activated)
    path = os.environ.get("PATH", "")
    if shutil.which("alembic") is None:
        os.environ["PATH"] = os.pathsep.join(p for p in (str(Path(sys.executable).parent),
                                                         path) if p)
    try:
        return Gradebook(db_url(out), COURSE_ID)
    finally:
        os.environ["PATH"] = path


# --------------------------------------------------------------------------- pull


def _changes(out: Path, records: list[dict]) -> tuple[dict[str, dict], dict[str, list], list[str]]:
    """The written-answer scores formgrader changed since the last push or pull:
    ``(given, now, notes)`` with ``given`` ready for ``manual_scores.json`` and ``now``
    the gradebook's values of those cells. :class:`GradebookError` for a bad score."""
    from nbgrader.api import SubmittedAssignment

    snapshot = _read_snapshot(out)
    manual = read_manual(out)
    given: dict[str, dict] = {}
    now: dict[str, list] = {}
    notes: list[str] = []
    gb = _open(out)
    try:
        # every grade and comment of the gradebook, read at once
        grades, comments = {}, {}
        for submission in gb.db.query(SubmittedAssignment):
            for submitted in submission.notebooks:
                where = (submission.student.id, submission.assignment.name,
                         submitted.notebook.name)
                grades.update({(*where, g.cell.name): g for g in submitted.grades})
                comments.update({(*where, c.cell.name): c for c in submitted.comments})
        for record in records:
            if record["status"] == "missing":
                continue
            sid, assignment, stem = record["student_id"], record["assignment"], \
                _stem(record["notebook"])
            for cell in record["cells"]:
                gid = cell["grade_id"]
                key = manual_key(sid, assignment, record["notebook"], gid)
                where = safe_text.terminal(f"{sid}, {assignment}, {record['notebook']}, {gid}")
                grade = grades.get((sid, assignment, stem, gid))
                if grade is None:
                    continue
                if cell.get("kind") != "manual":
                    if grade.manual_score is not None or grade.extra_credit:
                        notes.append(f"{where}: a score given by hand to an autograded test "
                                     f"is not taken (regrade instead)")
                    continue
                if grade.extra_credit:
                    notes.append(f"{where}: extra credit is not taken")
                comment = getattr(comments.get((sid, assignment, stem, gid)),
                                  "manual_comment", None) or ""
                comment = safe_text.shorten(comment, MAX_COMMENT_CHARS)
                stale = hand_score(manual, record, gid)[1]
                score = grade.manual_score
                value = [None if score is None else float(score), comment]
                before = snapshot.get(key, [None, ""])
                if value == before:
                    continue
                if score is None:
                    if before[0] is not None:
                        notes.append(f"{where}: the score was cleared in formgrader; the "
                                     f"earlier {csv_number(before[0])} is kept (give 0 to "
                                     f"take it back)")
                    elif comment:
                        notes.append(f"{where}: a comment without a score is not taken "
                                     f"(give a score too)")
                    continue
                maximum = float(cell["max_points"])
                if not math.isfinite(float(score)) or not 0 <= float(score) <= maximum:
                    raise GradebookError(f"{where}: the score {csv_number(float(score))} given "
                                         f"in formgrader is outside 0 .. "
                                         f"{csv_number(maximum)}; correct it there")
                if stale is not None and comment == safe_text.shorten(
                        stale_text(stale), MAX_COMMENT_CHARS):
                    comment = ""                 # the note push wrote, not the grader's
                given[key] = {"points": float(score), "comment": comment,
                              "answer": answer_digest(written_answer(record, gid))}
                now[key] = value
    finally:
        gb.close()
    return given, now, notes


def pull(out: Path) -> Outcome:
    with warnings.catch_warnings():       # nbgrader's own add_submission warns (SAWarning)
        warnings.simplefilter("ignore")
        return _pull(out)


def _pull(out: Path) -> Outcome:
    """Take the scores and comments given in formgrader into ``OUT/manual_scores.json``
    and rewrite the outputs. All or nothing: :class:`GradebookError` changes nothing."""
    from autograder.results.outputs import write_outputs

    out = Path(out)
    if not (folder(out) / "gradebook.db").is_file():
        raise GradebookError(f"{folder(out) / 'gradebook.db'} does not exist: run "
                             f"`python -m autograder gradebook push {out}` first")
    records = read_records(out)
    given, now, notes = _changes(out, records)
    outcome = Outcome(folder(out), taken=len(given), notes=notes)
    if given:
        manual = read_manual(out)
        manual.update(given)
        _write_json(out / MANUAL, manual)
        write_outputs(records, out)
        snapshot = _read_snapshot(out)
        snapshot.update(now)
        _write_json(folder(out) / SNAPSHOT, snapshot)
    return outcome


# --------------------------------------------------------------------------- push


def _solution_cells(solution: dict) -> list[tuple[str, str, str, float]]:
    """``(grade_id, kind, cell_type, points)`` of the solution's answer, test and written
    answer cells, in order."""
    found = []
    for cell in solution.get("cells", []):
        kind, gid = nbcells.kind(cell), nbcells.grade_id(cell)
        if kind in (nbcells.ANSWER, nbcells.TEST, nbcells.MANUAL) and gid:
            points = float(nbcells.nbgrader(cell).get("points", 0) or 0)
            found.append((gid, kind, cell.get("cell_type", "code"), points))
    return found


def due_dates(out: Path, assignments, deadlines: dict | None = None) -> dict[str, object]:
    """``{assignment: deadline}`` (aware UTC datetimes) of the assignments that have one:
    from ``deadlines`` (``--deadline``, as ``export`` takes them) when given, else from the
    late policy the last ``export`` stored (``OUT/late_policy.json``). A homework's
    deadline is its assignments', as for the late policy."""

    stored = late.load_policy(out)
    homeworks = stored.homeworks if stored else {}
    if not deadlines:
        deadlines = stored.deadlines if stored else {}
    home = {a: name for name, parts in homeworks.items() for a in parts}
    found = {}
    for assignment in assignments:
        when = late.notebook_deadline({"assignment": assignment}, deadlines, home)
        if when is not None:
            found[assignment] = when
    return found


def _times(submission, record: dict, due, stored) -> None:
    """The submission's upload time (its latest notebook's, as collected) and the
    student's extension past ``due`` (``export --extensions``, stored with the late
    policy), as nbgrader keeps them (naive UTC, a timedelta): formgrader then says late
    what ``export`` charges late."""
    when = record.get("submitted_at") or ""
    if when:
        at = late.parse_time(when).astimezone(timezone.utc).replace(tzinfo=None)
        if submission.timestamp is None or at > submission.timestamp:
            submission.timestamp = at
    if due is not None and stored is not None:
        home = next((h for h, parts in stored.homeworks.items()
                     if record["assignment"] in parts), None)
        own = late.deadline_for(record["student_id"], record["assignment"], due,
                                stored.extensions, home)
        submission.extension = own - due if own is not None and own > due else None


def push(out: Path, solutions: Path = SOLUTIONS_DIR, deadlines: dict | None = None) -> Outcome:
    with warnings.catch_warnings():       # nbgrader's own add_submission warns (SAWarning)
        warnings.simplefilter("ignore")
        return _push(out, solutions, deadlines)


def _push(out: Path, solutions: Path = SOLUTIONS_DIR, deadlines: dict | None = None) -> Outcome:
    """Fill ``OUT/nbgrader/gradebook.db`` (and the shown notebooks) from ``OUT``'s
    records; pull first when a gradebook is already there. Each assignment's due date is
    set from ``deadlines`` or the stored late policy (:func:`due_dates`)."""
    from nbgrader.api import (Comment, Grade, Student, SubmittedAssignment,
                              SubmittedNotebook)

    out, solutions = Path(out), Path(solutions)
    records = read_records(out)
    bad = sorted({r["student_id"] for r in records if not STUDENT_ID.match(r["student_id"])})
    if bad:
        shown = ", ".join(safe_text.terminal(repr(b)) for b in bad[:5])
        raise GradebookError(f"student id(s) {shown} cannot go into a gradebook (letters, "
                             f"digits and . _ @ + - only, as `collect` writes them)")
    handed_in = {(r["student_id"], r["assignment"]) for r in records if r["status"] != "missing"}
    records = [r for r in records if (r["student_id"], r["assignment"]) in handed_in]
    notebooks = sorted({(r["assignment"], r["notebook"]) for r in records})
    structure = {}
    for assignment, notebook in notebooks:
        path = solutions / assignment / notebook
        if not path.is_file():
            raise GradebookError(f"{path} is missing: the gradebook is built from the "
                                 f"solution notebooks that graded {out} (--solutions)")
        structure[(assignment, notebook)] = json.loads(path.read_text(encoding="utf-8"))

    course = folder(out)
    notes: list[str] = []
    if (course / "gradebook.db").is_file():   # keep what formgrader was given since
        notes += _pull(out).notes
        records = [r for r in read_records(out)
                   if (r["student_id"], r["assignment"]) in handed_in]
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(CONFIG.format(course_id=COURSE_ID),
                                                encoding="utf-8")
    (course / "templates" / "formgrade").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MATHJAX_TEMPLATE, course / "templates" / "formgrade" / "mathjax.html.j2")
    manual = read_manual(out)
    due = due_dates(out, sorted({a for a, _ in structure}), deadlines)
    stored = late.load_policy(out)          # its extensions, by student
    snapshot: dict[str, list] = {}
    to_grade = 0
    gb = _open(out)
    try:
        # the assignments (due date: nbgrader keeps naive UTC), notebooks and graded
        # cells, as in the solutions
        for (assignment, notebook), solution in structure.items():
            stem = _stem(notebook)
            if assignment in due:
                gb.update_or_create_assignment(
                    assignment, duedate=due[assignment].astimezone(timezone.utc)
                    .replace(tzinfo=None))
            else:
                gb.update_or_create_assignment(assignment)
            nb = gb.update_or_create_notebook(stem, assignment)
            wanted_grades, wanted_solutions = set(), set()
            for gid, kind, ctype, points in _solution_cells(solution):
                if kind in (nbcells.TEST, nbcells.MANUAL):
                    gb.update_or_create_grade_cell(gid, stem, assignment, max_score=points,
                                                   cell_type=ctype)
                    wanted_grades.add(gid)
                if kind in (nbcells.ANSWER, nbcells.MANUAL):
                    gb.update_or_create_solution_cell(gid, stem, assignment)
                    wanted_solutions.add(gid)
            for cell in list(nb.grade_cells):          # cells gone from the solutions
                if cell.name not in wanted_grades:
                    for grade in list(cell.grades):
                        gb.db.delete(grade)
                    gb.db.delete(cell)
            for cell in list(nb.solution_cells):
                if cell.name not in wanted_solutions:
                    for comment in list(cell.comments):
                        gb.db.delete(comment)
                    gb.db.delete(cell)
            gb.db.commit()
        # the students' submissions and this grader's scores, in one transaction (a
        # commit per submission, as nbgrader's add_submission does, costs ~30 ms each)
        students = {s.id: s for s in gb.db.query(Student)}
        submissions = {(s.student.id, s.assignment.name): s
                       for s in gb.db.query(SubmittedAssignment)}
        for record in sorted(records, key=lambda r: (r["student_id"], r["assignment"],
                                                      r["notebook"])):
            sid, assignment, notebook = record["student_id"], record["assignment"], \
                record["notebook"]
            stem = _stem(notebook)
            if sid not in students:
                students[sid] = Student(id=sid)
                gb.db.add(students[sid])
            if (sid, assignment) not in submissions:
                submissions[(sid, assignment)] = SubmittedAssignment(
                    assignment=gb.find_assignment(assignment), student=students[sid])
                gb.db.add(submissions[(sid, assignment)])
            submission = submissions[(sid, assignment)]
            _times(submission, record, due.get(assignment), stored)
            gb.db.flush()
            submitted = next((n for n in submission.notebooks if n.notebook.name == stem), None)
            if submitted is None:
                submitted = SubmittedNotebook(notebook=gb.find_notebook(stem, assignment),
                                              assignment=submission)
                gb.db.add(submitted)
            # a Grade per grade cell, a Comment per solution cell (also for cells added
            # to the solutions since the last push)
            grades = {g.cell.name: g for g in submitted.grades}
            comments = {c.cell.name: c for c in submitted.comments}
            for cell in submitted.notebook.grade_cells:
                if cell.name not in grades:
                    grades[cell.name] = Grade(cell=cell, notebook=submitted)
                    gb.db.add(grades[cell.name])
            for cell in submitted.notebook.solution_cells:
                if cell.name not in comments:
                    comments[cell.name] = Comment(cell=cell, notebook=submitted)
                    gb.db.add(comments[cell.name])
            missing = record["status"] == "missing"
            for row in record["cells"]:
                grade = grades.get(row["grade_id"])
                if grade is None:
                    continue
                if missing or row.get("kind") != "manual":
                    grade.auto_score = float(row["points"])
                    grade.manual_score, grade.extra_credit = None, None
                    grade.needs_manual_grade = False
                    continue
                key = manual_key(sid, assignment, notebook, row["grade_id"])
                given, stale = hand_score(manual, record, row["grade_id"])
                grade.auto_score, grade.extra_credit = None, None
                grade.manual_score = None if given is None else float(given["points"])
                grade.needs_manual_grade = given is None
                to_grade += given is None
                comment = safe_text.shorten(stale_text(stale) if stale is not None else
                                            (given or {}).get("comment"), MAX_COMMENT_CHARS)
                if row["grade_id"] in comments:
                    comments[row["grade_id"]].manual_comment = comment or None
                snapshot[key] = [grade.manual_score, comment]
        gb.db.commit()
        # submissions of students no longer graded
        keep = {(r["student_id"], r["assignment"]) for r in records}
        for submission in list(gb.db.query(SubmittedAssignment)):
            if (submission.student.id, submission.assignment.name) not in keep:
                gb.remove_submission(submission.assignment.name, submission.student.id)
    finally:
        gb.close()

    # what formgrader shows: built from the records, never by running anything
    shown = course / "autograded"
    staging = course / "autograded.new"
    shutil.rmtree(staging, ignore_errors=True)
    count = 0
    for record in records:
        if record["status"] == "missing":
            continue
        path = staging / record["student_id"] / record["assignment"] / record["notebook"]
        path.parent.mkdir(parents=True, exist_ok=True)
        nb = formgrader_view.shown_notebook(
            structure[(record["assignment"], record["notebook"])], record)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
        count += 1
    staging.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(shown, ignore_errors=True)
    staging.replace(shown)
    # formgrader lists the assignments that have a source folder: empty ones suffice
    # (with no notebook in them, its "Generate" button has nothing to work on)
    shutil.rmtree(course / "source", ignore_errors=True)
    for assignment in sorted({a for a, _ in structure}):
        (course / "source" / assignment).mkdir(parents=True)
    # formgrader counts an assignment's submissions as the folders
    # submitted/<student>/<assignment>/: empty ones, so it counts right (it showed 0) and
    # nbgrader's autograde still finds no notebook to run
    shutil.rmtree(course / "submitted", ignore_errors=True)
    for sid, assignment in sorted({(r["student_id"], r["assignment"]) for r in records
                                   if r["status"] != "missing"}):
        (course / "submitted" / sid / assignment).mkdir(parents=True)
    _write_json(course / SNAPSHOT, snapshot)
    return Outcome(course, notebooks=count, to_grade=to_grade, notes=notes)


# --------------------------------------------------------------------------- serve


def serve_command(out: Path, port: int, ip: str = "127.0.0.1", open_browser: bool = True,
                  extra: list[str] | None = None) -> list[str]:
    """The Jupyter server command that serves formgrader on ``OUT/nbgrader`` (to run with
    that folder as working directory): formgrader and JupyterLab only, no terminals, and
    no kernel can start (no provisioner is available), so nothing of a student runs."""
    course = folder(out).resolve()
    command = [
        sys.executable, "-m", "jupyter_server",
        f"--ServerApp.root_dir={course}", f"--ServerApp.ip={ip}", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", "--ServerApp.terminals_enabled=False",
        "--ServerApp.default_url=/formgrader/gradebook",
        "--ServerApp.jpserver_extensions=nbgrader.server_extensions.validate_assignment=False",
        "--ServerApp.jpserver_extensions=nbgrader.server_extensions.assignment_list=False",
        "--ServerApp.jpserver_extensions=nbgrader.server_extensions.course_list=False",
        "--ServerApp.jpserver_extensions=jupyter_server_terminals=False",
        # MathJax served by this server (the grading page's LaTeX renders offline)
        "--ServerApp.jpserver_extensions=jupyter_server_mathjax=True",
        "--KernelProvisionerFactory.default_provisioner_name=autograder-no-kernels",
        "--ServerApp.open_browser=" + ("True" if open_browser else "False"),
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")          # Jupyter refuses to start as root otherwise
    return command + list(extra or [])


def serve_env() -> dict[str, str]:
    """The environment of the server: no other course's nbgrader configuration."""
    env = dict(os.environ)
    env.pop("JUPYTER_CONFIG_PATH", None)
    return env


def serve(out: Path, port: int = 8899, ip: str = "127.0.0.1", open_browser: bool = True,
          extra: list[str] | None = None) -> int:
    """Replace this process by the Jupyter server of :func:`serve_command` (Ctrl-C stops
    it). :class:`GradebookError` when nothing was pushed yet."""
    course = folder(out)
    if not (course / "gradebook.db").is_file() or not (course / "nbgrader_config.py").is_file():
        raise GradebookError(f"{course} holds no gradebook: run "
                             f"`python -m autograder gradebook push {out}` first")
    command = serve_command(out, port, ip, open_browser, extra)
    print(f"gradebook serve: formgrader on {course}: http://{ip}:{port}/formgrader/gradebook "
          f"(Jupyter prints the address with its token below; Ctrl-C stops it, then run "
          f"`python -m autograder gradebook pull {out}`)", flush=True)
    sys.stderr.flush()
    os.chdir(course)
    os.execve(command[0], command, serve_env())
    return 0  # not reached
