"""Grades as CSV files an LMS gradebook imports.

* ``canvas``: one file, one row per student, one column per assignment, in the layout of
  Canvas's own gradebook export (``Student, ID, SIS User ID, SIS Login ID, Section``, then
  the assignments), with the ``Points Possible`` row Canvas writes under the header.
  Canvas matches rows on ``ID`` (the Canvas user id, which ``collect`` takes from a
  Canvas download) or on the SIS ids; a column whose name is not yet an assignment
  becomes a new assignment on import, so name the columns as the Canvas assignments are
  named (``--rename 01_dot_products="Lab 1 (4711)"``) to update existing ones.
* ``gradescope``: one file per assignment (``gradescope_<assignment>.csv``) with
  ``Name, SID, Email, Total Score``, the columns Gradescope's "Upload scores" matches on
  (email or SID).
* ``moodle``: one file per assignment (``moodle_<assignment>.csv``), the grading worksheet
  an assignment with offline grading takes back ("Upload grading worksheet"). Moodle's
  importer (``mod/assign/feedback/offline/importgradeslib.php``) finds its columns by
  their headers, ``Identifier`` (``Participant <id>``: the participant id ``collect``
  takes from a Moodle download's folder names), ``Grade`` and ``Last modified (grade)``
  (the export's time, so Moodle does not skip the row as stale), and reads ``Feedback
  comments``; ``Full name`` and ``Maximum Grade`` are for the reader. Set the Moodle
  assignment's maximum grade to the ``Maximum Grade`` written. A student whose id is not
  a Moodle participant id cannot be matched: named on stderr, and an export matching no
  one is refused.

Anonymous Canvas grading: a student collected as ``anon_<id>`` is written under their
Canvas user id once ``--anonymous-map FILE`` gives it (Canvas's Submissions API lists
``user_id`` beside ``anonymous_id`` once anonymity is lifted; or a CSV with
``anonymous_id,user_id``: :mod:`autograder.intake.sources`); without it the Canvas export
is refused (Canvas's importer matches no ``anon_`` id).

A homework is the unit of a grade: ``--homework "Homework 2=04_a,05_b,06_c"`` (repeat it)
writes one column (Canvas) or file (Gradescope) per homework, its points and maximum the
sums over its assignments; only the homeworks are exported then. A late policy applies
per homework: the homework is as late as its latest notebook (each notebook against the
homework's deadline, ``--deadline "Homework 2=WHEN"``, else its assignment's, else the
common one), and that many days' percentage comes off the homework's points.
``--weights`` and ``--rename`` name homeworks then. Two columns (or Gradescope files)
with the same name are refused.

Names, emails and SIS ids come from a roster CSV (``--roster``; ``collect`` writes
``_roster.csv`` from what the LMS download tells): columns ``student_id`` and any of
``name, email, sid, sis_user_id, sis_login_id, section``. Without a roster the student
id stands in for each of them.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

from autograder.results.records import points_text as _points
from autograder.results.records import read_records, sort_key, summary_rows, worst_status
from autograder import safe_text
from autograder.lms import MOODLE_PARTICIPANT
from autograder.results import late

FORMATS = ("canvas", "gradescope", "moodle")
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
GRADESCOPE_COLUMNS = ["Name", "SID", "Email", "Total Score"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)",
                  "Feedback comments"]


def read_roster(path: Path | None) -> dict[str, dict[str, str]]:
    if path is None:
        return {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    if rows and "student_id" not in rows[0]:
        raise ValueError(f"{path}: a roster needs a student_id column")
    return {row["student_id"]: {k: (v or "") for k, v in row.items()} for row in rows}


def score_table(records: list[dict]) -> tuple[list[str], dict[str, float], dict[str, dict[str, float]]]:
    """``(assignments, max points per assignment, {student: {assignment: points}})``.

    An assignment a student handed nothing in for scores 0 (a missing notebook is a
    record with 0 points), so every cell of the gradebook is filled.
    """
    assignments: list[str] = []
    max_points: dict[str, float] = {}
    scores: dict[str, dict[str, float]] = {}
    for row in summary_rows(records):
        if row["assignment"] not in max_points:
            assignments.append(row["assignment"])
        max_points[row["assignment"]] = float(row["max_points"])
        scores.setdefault(row["student_id"], {})[row["assignment"]] = float(row["points"])
    return sorted(assignments), max_points, scores


def parse_rename(items: list[str]) -> dict[str, str]:
    """``--rename ASSIGNMENT=NAME`` (repeatable) -> ``{assignment: name}``."""
    rename = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep:
            raise ValueError(f"--rename takes ASSIGNMENT=NAME, not {item!r}")
        rename[old] = new
    return rename


def parse_weights(text: str | None) -> dict[str, float]:
    """``--weights A=W,...`` -> ``{assignment: weight}`` (each a number, 0 or more)."""
    weights = {}
    for item in (text.split(",") if text else []):
        name, sep, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if not sep or not name.strip() or not weight >= 0:
            raise ValueError(f"--weights takes ASSIGNMENT=NUMBER,..., not {item!r}")
        weights[name.strip()] = weight
    return weights


def parse_homework(items: list[str]) -> dict[str, list[str]]:
    """``--homework NAME=A,B,...`` (repeatable) -> ``{name: [assignments]}``, in order."""
    homeworks: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for item in items:
        name, sep, members = item.rpartition("=")        # an assignment never holds "="
        name = name.strip()
        parts = [a.strip() for a in members.split(",") if a.strip()]
        if not sep or not name or not parts:
            raise ValueError(f"--homework takes NAME=ASSIGNMENT,ASSIGNMENT,..., not {item!r}")
        if name in homeworks:
            raise ValueError(f"--homework {name!r} is given twice")
        for a in parts:
            if a in seen:
                raise ValueError(f"{a} is in two homeworks: {seen[a]!r} and {name!r}")
            seen[a] = name
        homeworks[name] = parts
    return homeworks


def homework_records(records: list[dict], homeworks: dict[str, list[str]],
                     deadlines: dict | None = None, policy: "late.Policy | None" = None,
                     extensions: "late.Extensions | None" = None
                     ) -> tuple[list[dict], list[dict]]:
    """One record per student and homework (``assignment`` the homework's name), points
    and maximum summed over its assignments' notebooks, with the late policy applied per
    homework: its days late are its latest notebook's (notebooks not handed in do not
    count). Returns ``(records, one late.csv row per late homework)``."""
    known = sorted({r["assignment"] for r in records})
    unknown = [a for parts in homeworks.values() for a in parts if a not in known]
    if unknown:
        raise ValueError(f"--homework names {', '.join(unknown)}, not graded in this "
                         f"output; it has: {', '.join(known)}")
    home = {a: name for name, parts in homeworks.items() for a in parts}
    late_of = late.penalties(records, deadlines or {}, policy or late.Policy.parse("none"),
                             homeworks, extensions)
    groups: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        if record["assignment"] in home:
            groups.setdefault((record["student_id"], home[record["assignment"]]), []).append(record)
    out, late_rows = [], []
    for (student_id, name), group in sorted(groups.items()):
        points = sum(float(r["points"]) for r in group)
        found = [late_of[k] for k in map(sort_key, group) if k in late_of]
        after = round(sum(p["points_after"] for p in found)
                      + sum(float(r["points"]) for r in group if sort_key(r) not in late_of), 6)
        if found:
            p = found[0]                      # every notebook of it: the same lateness
            latest = p["latest"]
            late_rows.append({"student_id": student_id, "assignment": name,
                              "notebook": f"{latest['assignment']}/{latest['notebook']}",
                              "submitted_at": latest.get("submitted_at") or "",
                              "deadline": p["deadline"].isoformat(timespec="seconds")
                              if p["deadline"] else "",
                              "days_late": p["days"], "percent_off": p["percent_off"],
                              "points_before": round(points, 6), "points_after": after})
        out.append({"student_id": student_id, "assignment": name,
                    "notebook": ",".join(sorted({r["notebook"] for r in group})),
                    "status": worst_status(r["status"] for r in group), "message": "",
                    "flags": [], "cells": [], "points": after,
                    "max_points": sum(float(r["max_points"]) for r in group)})
    return out, late_rows


def _column_names(assignments: list[str], rename: dict[str, str]) -> list[str]:
    """The columns' names; two the same is an error (an LMS would take one for the other)."""
    names = [rename.get(a, a) for a in assignments]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"two columns would be named {', '.join(map(repr, twice))}: one "
                         f"gradebook column per name; to add assignments up into one "
                         f"column, use --homework \"NAME=A,B,...\"")
    return names


def _file_part(name: str) -> str:
    """A column name as part of a file name (no path separators or control characters)."""
    return re.sub(r"[^\w .()+-]", "_", name).strip(" .") or "_"


def _select(table, assignments: list[str] | None, weights: dict[str, float] | None,
            roster: dict):
    """The score table cut to ``assignments`` (in that order), each assignment's points
    and maximum multiplied by its weight, and every roster student present (0 where
    nothing was handed in)."""
    known, max_points, scores = table
    if assignments:
        unknown = [a for a in assignments if a not in known]
        if unknown:
            raise ValueError(f"no graded assignment {', '.join(unknown)} in this output; "
                             f"it has: {', '.join(known)}")
        known = list(assignments)
    weights = weights or {}
    bad = [a for a in weights if a not in known]
    if bad:
        raise ValueError(f"--weights names {', '.join(bad)}, not among the exported "
                         f"assignments {', '.join(known)}")
    w = {a: float(weights.get(a, 1.0)) for a in known}
    max_points = {a: max_points[a] * w[a] for a in known}
    students = set(scores) | set(roster)
    scores = {s: {a: scores.get(s, {}).get(a, 0.0) * w[a] for a in known} for s in students}
    return known, max_points, scores


def _one_file_each(prefix: str, assignments: list[str], rename: dict[str, str]) -> list[str]:
    """The file name of each exported column (two names, one file: refused too)."""
    files = [f"{prefix}_{_file_part(n)}.csv" for n in _column_names(assignments, rename)]
    _column_names(files, {})
    return files


def _write(path: Path, rows: list[list]) -> Path:
    """A gradebook CSV, every cell escaped (:func:`autograder.safe_text.writer`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        safe_text.writer(f).writerows(rows)
    return path


def export_canvas(records: list[dict], dest: Path, roster: dict | None = None,
                  rename: dict[str, str] | None = None, assignments: list[str] | None = None,
                  weights: dict[str, float] | None = None) -> list[Path]:
    roster, rename = roster or {}, rename or {}
    assignments, max_points, scores = _select(score_table(records), assignments, weights,
                                              roster)
    columns = _column_names(assignments, rename)       # refused before anything is written
    rows = [CANVAS_FIXED + columns,
            ["Points Possible", "", "", "", ""] + [_points(max_points[a]) for a in assignments]]
    for student_id in sorted(scores):
        info = roster.get(student_id, {})
        rows.append([info.get("name") or student_id, student_id, info.get("sis_user_id", ""),
                     info.get("sis_login_id", ""), info.get("section", "")]
                    + [_points(scores[student_id].get(a, 0.0)) for a in assignments])
    return [_write(dest / "canvas_grades.csv", rows)]


def export_gradescope(records: list[dict], dest: Path, roster: dict | None = None,
                      rename: dict[str, str] | None = None, assignments: list[str] | None = None,
                      weights: dict[str, float] | None = None) -> list[Path]:
    roster, rename = roster or {}, rename or {}
    assignments, _, scores = _select(score_table(records), assignments, weights, roster)
    files = _one_file_each("gradescope", assignments, rename)
    return [_write(dest / file_name, [GRADESCOPE_COLUMNS] + [
        [roster.get(s, {}).get("name") or s, roster.get(s, {}).get("sid") or s,
         roster.get(s, {}).get("email", ""), _points(scores[s].get(assignment, 0.0))]
        for s in sorted(scores)]) for assignment, file_name in zip(assignments, files)]


def export_moodle(records: list[dict], dest: Path, roster: dict | None = None,
                  rename: dict[str, str] | None = None, assignments: list[str] | None = None,
                  weights: dict[str, float] | None = None) -> list[Path]:
    from datetime import datetime, timezone

    roster, rename = roster or {}, rename or {}
    assignments, max_points, scores = _select(score_table(records), assignments, weights,
                                              roster)
    files = _one_file_each("moodle", assignments, rename)
    matched = sorted(s for s in scores if s.isdigit() and s.isascii())
    strangers = sorted(set(scores) - set(matched))
    if not matched:
        raise ValueError(f"no student id here is a Moodle participant id (the digits of a "
                         f"Moodle download's folder names; e.g. {', '.join(strangers[:3])}): "
                         f"Moodle's worksheet import would match no one. Collect the Moodle "
                         f"download, grade, then export")
    for student_id in strangers:
        print(f"export: warning: {safe_text.terminal(student_id)}: not a Moodle participant "
              f"id, left out of the Moodle files", file=sys.stderr)
    now = datetime.now(timezone.utc).strftime("%A, %d %B %Y, %I:%M %p")
    note = "Graded by the course's autograder: see your feedback page."
    return [_write(dest / file_name, [MOODLE_COLUMNS] + [
        [f"{MOODLE_PARTICIPANT}{s}", roster.get(s, {}).get("name", ""),
         _points(scores[s].get(assignment, 0.0)), _points(max_points[assignment]), now, note]
        for s in matched]) for assignment, file_name in zip(assignments, files)]


def map_anonymous(records: list[dict], mapping: dict[str, str] | None, fmt: str) -> list[dict]:
    """Records of ``anon_<id>`` students under their Canvas user id (``mapping``); a
    Canvas export of anonymous students without a map is refused."""
    anonymous = sorted({r["student_id"] for r in records
                        if str(r["student_id"]).startswith("anon_")})
    if not anonymous:
        return records
    mapping = mapping or {}
    unmapped = [a for a in anonymous if a not in mapping]
    if unmapped and fmt == "canvas":
        raise ValueError(
            f"{len(unmapped)} student(s) of an anonymously graded Canvas download "
            f"({', '.join(map(safe_text.terminal, unmapped[:3]))}...) have no Canvas user "
            f"id, and Canvas's gradebook import matches none: once anonymity is lifted in "
            f"Canvas, save the assignment's Submissions API JSON (it lists user_id beside "
            f"anonymous_id) or a CSV anonymous_id,user_id and pass it with --anonymous-map")
    return [{**r, "student_id": mapping.get(r["student_id"], r["student_id"])} for r in records]


def export(out: Path, fmt: str, dest: Path | None = None, roster: Path | None = None,
           rename: dict[str, str] | None = None, assignments: list[str] | None = None,
           weights: dict[str, float] | None = None, deadlines: dict | None = None,
           policy: "late.Policy | None" = None,
           homeworks: dict[str, list[str]] | None = None,
           extensions: "late.Extensions | None" = None,
           anonymous: dict[str, str] | None = None) -> list[Path]:
    """Write the gradebook file(s) of grading output ``out`` in format ``fmt``: the
    ``assignments`` given (all graded ones by default), each weighted by ``weights``
    (default 1), one row per student graded or on the roster. With ``deadlines`` the
    late ``policy`` (:mod:`autograder.results.late`) is applied and ``late.csv`` lists every
    late notebook. With ``homeworks`` (:func:`parse_homework`) one column per homework
    (:func:`homework_records`; ``late.csv`` then lists every late homework)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    writer = {"canvas": export_canvas, "gradescope": export_gradescope,
              "moodle": export_moodle}[fmt]
    dest = out if dest is None else dest
    records = read_records(out)
    if not records:
        raise ValueError(f"no graded notebook in {out} (no results.jsonl records): grade "
                         f"the submissions into it first")
    policy = policy or late.Policy.parse("none")
    penalised = bool(deadlines or policy.percent_per_day or extensions)
    unknown = late.require_times(records, policy) if penalised else []
    if unknown:                       # what is unknown is said, every time
        how = (f"those the LMS flagged late count {policy.assume_late_days} day(s) late "
               f"(--assume-late-days), the others on time"
               if policy.assume_late_days is not None else "none is taken as late")
        print(f"export: note: {len(unknown)} notebook(s) of a Canvas or Moodle download "
              f"have no upload time (collect --times reads the LMS's record); {how}",
              file=sys.stderr)
    rows = None
    if homeworks:
        if assignments:
            raise ValueError("--homework and --assignments do not go together: the "
                             "homeworks name what is exported")
        records, rows = homework_records(records, homeworks, deadlines, policy, extensions)
        assignments = list(homeworks)
    elif penalised:
        records, rows = late.apply(records, deadlines or {}, policy, extensions)
    records = map_anonymous(records, anonymous, fmt)
    paths = writer(records, dest, read_roster(roster), rename, assignments, weights)
    if penalised:           # after the gradebook file: a refused export writes nothing
        dest.mkdir(parents=True, exist_ok=True)
        late.write_late(rows, dest / "late.csv")
        paths.append(dest / "late.csv")
        # the students' pages show the penalty the gradebook got (feedback-package too)
        from autograder.results.outputs import write_feedback_pages

        late.save_policy(out, deadlines or {}, policy, homeworks, extensions)
        write_feedback_pages(read_records(out), out)
    return paths
