"""Written answers graded by hand, with a plain CSV (no formgrader needed).

``python -m autograder manual-template OUT --dest scores.csv`` writes one row per written
answer of every graded notebook in ``OUT``: ``student_id, assignment, notebook, grade_id,
max_points, points, comment, prefilled, stale, answer`` (``points`` empty, or the score already
given; ``answer`` the student's text, neutralised for spreadsheets like every cell). An
untouched answer (empty, or the stub's ``YOUR ANSWER HERE`` alone) is pre-filled with
``points`` 0 and ``prefilled`` ``yes`` (comment: why), so that only real answers are left
to read. The instructor fills ``points`` (and ``comment``) in a spreadsheet;
``python -m autograder manual-import OUT scores.csv`` checks every row first (a clear
error naming the row, and nothing applied, when one is wrong), then stores the scores in
``OUT/manual_scores.json`` and rewrites ``grades.csv``, ``summary.csv`` and the feedback
pages. Rows with ``points`` left empty change nothing; the template taken back unchanged
gives exactly its pre-filled zeros. ``prefilled``, ``stale`` and ``answer`` are not read
back. The scores survive any later ``grade`` into the same ``OUT``, and ``export`` and
``report`` count them.

A score belongs to the answer it was given to (its digest is stored with it): when a
student's answer changes (a new upload, ``grade --student``), its cell needs grading
again, the template leaves ``points`` empty and shows the old score in ``stale``, and
``export`` warns until it is graded again. A score stored before scores had a digest
counts for the answer graded now.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from autograder import safe_text
from autograder.results.records import (MANUAL, MANUAL_COLUMNS, MANUAL_TEMPLATE_COLUMNS,
                                        answer_digest, csv_number, hand_score, manual_key,
                                        read_manual, read_records, stale_text, written_answer)

#: The text of a written answer's stub in the released notebooks (nbgrader's).
STUB = "YOUR ANSWER HERE"


def untouched(answer: str) -> bool:
    """Whether a written answer was left as released: empty, or the stub alone."""
    return answer.strip() in ("", STUB)


def template(out: Path, dest: Path) -> int:
    """Write the CSV to fill; return its number of rows."""
    manual = read_manual(out)
    rows = []
    for record in read_records(out):
        if record["status"] == "missing":
            continue
        for cell in record["cells"]:
            if cell.get("kind") != "manual":
                continue
            given, stale = hand_score(manual, record, cell["grade_id"])
            given = given or {}
            answer = written_answer(record, cell["grade_id"])
            row = {"student_id": record["student_id"], "assignment": record["assignment"],
                   "notebook": record["notebook"], "grade_id": cell["grade_id"],
                   "max_points": csv_number(cell["max_points"]),
                   "points": "" if not given else csv_number(given["points"]),
                   "comment": given.get("comment", ""), "prefilled": "",
                   "stale": "" if stale is None else stale_text(stale), "answer": answer}
            if not given and untouched(answer):
                row.update(points=0, prefilled="yes",
                           comment="no answer written" if not answer.strip()
                           else f"the answer is still {STUB!r}")
            rows.append(row)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, MANUAL_TEMPLATE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


class BadScores(ValueError):
    """A row of the scores CSV is wrong; the message names it. Nothing was applied."""


def _unquote(text: str) -> str:
    """A cell as the template wrote it: the leading ``'`` that neutralised a formula goes."""
    return text[1:] if text.startswith("'") and text[1:2] in ("=", "+", "-", "@", "\t", "\r") \
        else text


def import_scores(out: Path, path: Path) -> int:
    """Take in the filled CSV; return how many scores were given. :class:`BadScores`
    (nothing applied) when a row names no written answer of ``out`` or has a bad score."""
    from autograder.results.outputs import write_outputs

    records = read_records(out)
    cells = {manual_key(r["student_id"], r["assignment"], r["notebook"], c["grade_id"]):
             float(c["max_points"]) for r in records for c in r["cells"]
             if c.get("kind") == "manual"}
    answers = {manual_key(r["student_id"], r["assignment"], r["notebook"], c["grade_id"]):
               answer_digest(written_answer(r, c["grade_id"])) for r in records
               for c in r["cells"] if c.get("kind") == "manual"}
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in MANUAL_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise BadScores(f"{path.name}: missing column(s) {', '.join(missing)}; write the "
                            f"file with `manual-template`")
        given: dict[str, dict] = {}
        for n, row in enumerate(reader, start=2):           # row 1 is the header
            where = f"{path.name}, row {n}"
            points = (row.get("points") or "").strip()
            if not points:
                continue
            key = manual_key(*(_unquote(row[c] or "") for c in
                               ("student_id", "assignment", "notebook", "grade_id")))
            if key not in cells:
                raise BadScores(f"{where}: {safe_text.terminal(', '.join(json.loads(key)))} is "
                                f"not a written answer of a graded notebook in {out}")
            try:
                value = float(points)
            except ValueError:
                raise BadScores(f"{where}: points {safe_text.terminal(points)!r} is not a "
                                f"number") from None
            if not math.isfinite(value) or not 0 <= value <= cells[key]:
                raise BadScores(f"{where}: points {points} is outside 0 .. "
                                f"{csv_number(cells[key])}")
            if key in given:
                raise BadScores(f"{where}: this answer was already scored on another row")
            given[key] = {"points": value, "comment": safe_text.shorten(
                _unquote(row.get("comment") or ""), safe_text.COMMENT_CHARS),
                "answer": answers[key]}             # the answer it scores, as graded
    manual = read_manual(out)
    manual.update(given)
    tmp = out / (MANUAL + ".tmp")
    tmp.write_text(json.dumps(manual, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(out / MANUAL)
    write_outputs(records, out)
    return len(given)
