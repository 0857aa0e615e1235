"""The grades of a grading output folder as the scores sent to the LMS.

Read as ``export`` reads them (:mod:`autograder.results`): hand-given scores of written
answers included, and the late policy ``export`` last stored in ``OUT`` applied (with its
extensions), so the LMS gets what a CSV export would have given.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from autograder.lti.ags import Score, now
from autograder.results import late
from autograder.results.export import score_table
from autograder.results.records import read_records


def penalised_records(out: Path) -> list[dict]:
    records = read_records(out)
    stored = late.load_policy(out)
    if stored is None:
        return records
    records, _ = late.apply(records, stored.deadlines, stored.policy, stored.extensions)
    return records


def feedback_link(base_url: str, student: str, assignment: str) -> str:
    return f"{base_url.rstrip('/')}/{quote(student, safe='')}/{quote(assignment, safe='')}"


def scores_of(out: Path, feedback_url: str | None = None,
              assignments: list[str] | None = None) -> list[Score]:
    """One :class:`Score` per student and assignment of ``out`` (``student_id`` being the
    LMS's user id, as ``roster --lti`` writes it)."""
    names, maximum, table = score_table(penalised_records(Path(out)))
    stamp = now()
    scores = []
    for student, row in sorted(table.items()):
        for assignment in names:
            if assignments and assignment not in assignments:
                continue
            link = feedback_link(feedback_url, student, assignment) if feedback_url else ""
            comment = f"Feedback: {link}" if link else "Graded by the course's autograder"
            scores.append(Score(student, assignment, row.get(assignment, 0.0),
                                maximum[assignment], comment, stamp))
    return scores
