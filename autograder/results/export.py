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

Names, emails and SIS ids come from a roster CSV (``--roster``; ``collect`` writes
``_roster.csv`` from what the LMS download tells): columns ``student_id`` and any of
``name, email, sid, sis_user_id, sis_login_id, section``. Without a roster the student
id stands in for each of them.
"""

from __future__ import annotations

import csv
from pathlib import Path

from autograder.results.records import points_text as _points
from autograder.results.records import read_records, summary_rows
from autograder import safe_text
from autograder.results import late

FORMATS = ("canvas", "gradescope")
CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
GRADESCOPE_COLUMNS = ["Name", "SID", "Email", "Total Score"]


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


def export_canvas(records: list[dict], dest: Path, roster: dict | None = None,
                  rename: dict[str, str] | None = None, assignments: list[str] | None = None,
                  weights: dict[str, float] | None = None) -> list[Path]:
    roster, rename = roster or {}, rename or {}
    assignments, max_points, scores = _select(score_table(records), assignments, weights,
                                              roster)
    path = dest / "canvas_grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.writer(f)
        writer.writerow(CANVAS_FIXED + [rename.get(a, a) for a in assignments])
        writer.writerow(["Points Possible", "", "", "", ""] + [_points(max_points[a]) for a in assignments])
        for student_id in sorted(scores):
            info = roster.get(student_id, {})
            writer.writerow([
                info.get("name") or student_id, student_id,
                info.get("sis_user_id", ""), info.get("sis_login_id", ""), info.get("section", ""),
            ] + [_points(scores[student_id].get(a, 0.0)) for a in assignments])
    return [path]


def export_gradescope(records: list[dict], dest: Path, roster: dict | None = None,
                      rename: dict[str, str] | None = None, assignments: list[str] | None = None,
                      weights: dict[str, float] | None = None) -> list[Path]:
    roster, rename = roster or {}, rename or {}
    assignments, _, scores = _select(score_table(records), assignments, weights, roster)
    paths = []
    for assignment in assignments:
        path = dest / f"gradescope_{rename.get(assignment, assignment)}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = safe_text.writer(f)
            writer.writerow(GRADESCOPE_COLUMNS)
            for student_id in sorted(scores):
                info = roster.get(student_id, {})
                writer.writerow([info.get("name") or student_id, info.get("sid") or student_id,
                                 info.get("email", ""), _points(scores[student_id].get(assignment, 0.0))])
        paths.append(path)
    return paths


def export(out: Path, fmt: str, dest: Path | None = None, roster: Path | None = None,
           rename: dict[str, str] | None = None, assignments: list[str] | None = None,
           weights: dict[str, float] | None = None, deadlines: dict | None = None,
           policy: "late.Policy | None" = None) -> list[Path]:
    """Write the gradebook file(s) of grading output ``out`` in format ``fmt``: the
    ``assignments`` given (all graded ones by default), each weighted by ``weights``
    (default 1), one row per student graded or on the roster. With ``deadlines`` the
    late ``policy`` (:mod:`autograder.results.late`) is applied and ``late.csv`` lists every
    late notebook."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    writer = export_canvas if fmt == "canvas" else export_gradescope
    dest = out if dest is None else dest
    records = read_records(out)
    paths = []
    if deadlines or (policy and policy.percent_per_day):
        records, rows = late.apply(records, deadlines or {}, policy or late.Policy.parse("none"))
        dest.mkdir(parents=True, exist_ok=True)
        late.write_late(rows, dest / "late.csv")
        paths.append(dest / "late.csv")
    return writer(records, dest, read_roster(roster), rename, assignments, weights) + paths
