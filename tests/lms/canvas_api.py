"""Canvas's Submissions API, as ``instructure/canvas-lms`` answers it: the upload times a
Canvas download lacks.

Source: Canvas's REST API documentation, "Submissions" (``GET /api/v1/courses/:course_id/
assignments/:assignment_id/submissions``, "List assignment submissions"), whose Submission
object lists ``assignment_id``, ``attempt``, ``submitted_at`` (ISO 8601 in UTC with a
``Z``; ``null`` before anything is submitted), ``user_id``, ``late``, ``missing``,
``seconds_late``, ``workflow_state``, ``anonymous_id`` (5 base58 characters, for
anonymously graded assignments; ``lib/anonymity.rb``) and more; the JSON is built by
``lib/api/v1/submission.rb`` (``submission_json``: ``submitted_at``, ``late``,
``seconds_late`` from ``Submission#seconds_late``). :data:`DOCUMENTED` is that page's
example object, reduced to the fields a grader reads, with the page's example values.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

#: The documentation's example Submission object (its example values).
DOCUMENTED = {
    "assignment_id": 23,
    "attempt": 1,
    "body": None,
    "grade": "A-",
    "grade_matches_current_submission": True,
    "html_url": "http://example.com/courses/255/assignments/543/submissions/134",
    "preview_url": "http://example.com/courses/255/assignments/543/submissions/134?preview=1",
    "score": 13.5,
    "submission_type": "online_upload",
    "submitted_at": "2012-01-01T01:00:00Z",
    "url": None,
    "user_id": 134,
    "grader_id": 86,
    "graded_at": "2012-01-02T03:05:34Z",
    "late": False,
    "assignment_visible": True,
    "excused": True,
    "missing": True,
    "late_policy_status": "missing",
    "points_deducted": 12.3,
    "seconds_late": 300,
    "workflow_state": "submitted",
    "extra_attempts": 10,
    "anonymous_id": "acJ4Q",
    "posted_at": "2020-01-02T11:10:30Z",
    "read_status": "read",
    "redo_request": True,
}


def submission(user_id: int, submitted_at: datetime | None, due_at: datetime,
               anonymous_id: str = "", anonymize: bool = False) -> dict:
    """One Submission object as ``submission_json`` writes it: ``late`` and
    ``seconds_late`` against the due date (Canvas's own, with overrides), ``user_id``
    withheld while the assignment is anonymous (only ``anonymous_id`` is sent)."""
    late = submitted_at is not None and submitted_at > due_at
    out = {**DOCUMENTED, "user_id": user_id,
           "submitted_at": (submitted_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                            if submitted_at else None),
           "late": late, "missing": submitted_at is None,
           "late_policy_status": None,
           "seconds_late": int((submitted_at - due_at).total_seconds()) if late else 0,
           "workflow_state": "submitted" if submitted_at else "unsubmitted",
           "anonymous_id": anonymous_id or None}
    if anonymize:
        out.pop("user_id")
    return out


def write(path: Path, submissions: list[dict]) -> Path:
    """The JSON list the API returns (one page)."""
    path.write_text(json.dumps(submissions, indent=1))
    return path
