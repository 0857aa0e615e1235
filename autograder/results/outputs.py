"""The files a grading run leaves in OUT: results.jsonl, grades.csv, summary.csv and the
feedback pages, written in one place for grade, merge, manual-import and the gradebook."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from autograder import safe_text
from autograder.results.feedback import write_feedback, write_index
from autograder.results.records import (GRADE_COLUMNS, SUMMARY_COLUMNS, apply_manual, csv_number,
                                        read_manual, sort_key, summary_rows)


def write_outputs(records: list[dict], out: Path) -> None:
    """Write results.jsonl, grades.csv, summary.csv and the feedback pages into ``out``
    (replacing those of an earlier run: no stale page of a student not in ``records``)."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "feedback", ignore_errors=True)
    # hand-given scores of written answers survive any regrade into the same OUT
    records = sorted(apply_manual(records, read_manual(out)), key=sort_key)
    with open(out / "results.jsonl", "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, sort_keys=True) + "\n")
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, GRADE_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for record in records:
            for row in record["cells"]:
                writer.writerow({**row, "student_id": record["student_id"],
                                 "assignment": record["assignment"], "notebook": record["notebook"],
                                 "points": csv_number(row["points"]), "max_points": csv_number(row["max_points"])})
    with open(out / "summary.csv", "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, SUMMARY_COLUMNS)
        writer.writeheader()
        writer.writerows(summary_rows(records))
    write_feedback_pages(records, out)


def write_feedback_pages(records: list[dict], out: Path) -> None:
    """The feedback pages of ``records`` (with hand-given scores applied) and one index
    per student, with the late penalty of the policy ``export`` stored in ``out``."""
    from autograder.results import late

    shutil.rmtree(out / "feedback", ignore_errors=True)
    penalties = late.penalties_of(records, late.load_policy(out))
    by_student: dict[str, list[dict]] = {}
    for record in records:
        by_student.setdefault(record["student_id"], []).append(record)
        if record["status"] != "missing":
            write_feedback(record, out / "feedback", penalties.get(sort_key(record)))
    for student_id, own in by_student.items():
        write_index(student_id, own, out / "feedback", penalties)
