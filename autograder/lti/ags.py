"""Grades back into the LMS (LTI Assignment and Grade Services), through pylti1p3.

One line item per assignment, found again by its ``tag`` (the assignment's name) and
``resourceLinkId`` before one is made, so repeated pushes update one column. Each score
carries ``scoreGiven``/``scoreMaximum``, ``activityProgress: Completed``,
``gradingProgress: FullyGraded``, a ``timestamp``, the LMS's ``userId`` and a comment with
the feedback page's address. A score the platform did not take is kept in
``pending.jsonl`` of the tool's folder, retried by the next push, and reported: never lost.
"""

from __future__ import annotations

import fcntl
import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.service_connector import ServiceConnector

from autograder.lti.store import Platform, ToolHome

SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score"]
PENDING = "pending.jsonl"
#: Seconds a request to the platform may take.
TIMEOUT = 30


@dataclass(frozen=True)
class Score:
    """One student's grade of one assignment, as it goes to the LMS."""
    user_id: str
    assignment: str
    given: float
    maximum: float
    comment: str
    timestamp: str


@dataclass(frozen=True)
class PushReport:
    delivered: tuple[Score, ...]
    pending: tuple[tuple[Score, str], ...]     # each with the reason it was not taken


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class TimeoutSession(requests.Session):
    """Every request to the platform with a time limit."""

    def request(self, *args, **kwargs):
        kwargs.setdefault("timeout", TIMEOUT)
        return super().request(*args, **kwargs)


def service(home: ToolHome, platform: Platform, lineitems_url: str) -> AssignmentsGradesService:
    registration = home.tool_conf().find_registration_by_issuer(platform.issuer)
    connector = ServiceConnector(registration, requests_session=TimeoutSession())
    return AssignmentsGradesService(connector, {"scope": SCOPES, "lineitems": lineitems_url})


def line_item(ags: AssignmentsGradesService, home: ToolHome, platform: Platform,
              assignment: str, maximum: float, resource_link_id: str | None) -> LineItem:
    """The assignment's line item: the one the tool made (kept in ``lineitems.json``), else
    one the platform lists with its tag, else a new one."""
    known = home.read_json("lineitems.json", {})
    key = f"{platform.issuer} {assignment}"
    if key in known:
        found = ags.find_lineitem_by_id(known[key])
        if found:
            return found
    wanted = (LineItem().set_tag(assignment).set_label(assignment)
              .set_score_maximum(maximum).set_resource_id(assignment))
    if resource_link_id:
        wanted.set_resource_link_id(resource_link_id)
    item = ags.find_or_create_lineitem(wanted, find_by="tag")
    known[key] = item.get_id()
    home.write_json("lineitems.json", known)
    return item


def post(ags: AssignmentsGradesService, item: LineItem, score: Score) -> None:
    grade = (Grade().set_score_given(score.given).set_score_maximum(score.maximum)
             .set_timestamp(score.timestamp).set_activity_progress("Completed")
             .set_grading_progress("FullyGraded").set_user_id(score.user_id)
             .set_comment(score.comment))
    ags.put_grade(grade, item)


def read_pending(home: ToolHome) -> list[Score]:
    path = home.path(PENDING)
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as f:
        return [Score(**json.loads(line)) for line in f if line.strip()]


def write_pending(home: ToolHome, scores: list[Score]) -> None:
    home.root.mkdir(parents=True, exist_ok=True)
    tmp = home.path(PENDING + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(asdict(s), sort_keys=True) + "\n" for s in scores)
    tmp.replace(home.path(PENDING))


@contextmanager
def _locked(home: ToolHome):
    """One push at a time per tool folder (the service's hook and ``lti push`` may meet)."""
    home.root.mkdir(parents=True, exist_ok=True)
    with open(home.path("pending.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def keep_pending(home: ToolHome, scores: list[Score]) -> None:
    """Add ``scores`` to the pending ones without posting (no line items URL known yet:
    the next ``lti push`` sends them)."""
    with _locked(home):
        todo = {(s.user_id, s.assignment): s for s in read_pending(home)}
        todo.update({(s.user_id, s.assignment): s for s in scores})
        write_pending(home, list(todo.values()))


def push(home: ToolHome, platform: Platform, lineitems_url: str, scores: list[Score],
         resource_links: dict[str, str] | None = None) -> PushReport:
    """Post ``scores`` and every score still pending; what fails stays pending."""
    with _locked(home):
        return _push(home, platform, lineitems_url, scores, resource_links)


def _push(home: ToolHome, platform: Platform, lineitems_url: str, scores: list[Score],
          resource_links: dict[str, str] | None) -> PushReport:
    todo: dict[tuple[str, str], Score] = {(s.user_id, s.assignment): s for s in read_pending(home)}
    todo.update({(s.user_id, s.assignment): s for s in scores})   # the newest grade wins
    write_pending(home, list(todo.values()))       # nothing is lost if this run dies
    ags = service(home, platform, lineitems_url)
    delivered, failed = [], []
    items: dict[str, LineItem] = {}
    for score in todo.values():
        try:
            if score.assignment not in items:
                items[score.assignment] = line_item(ags, home, platform, score.assignment,
                                                    score.maximum,
                                                    (resource_links or {}).get(score.assignment))
            post(ags, items[score.assignment], score)
            delivered.append(score)
        except (LtiException, requests.RequestException, OSError, ValueError) as exc:
            failed.append((score, f"{type(exc).__name__}: {exc}"))
    write_pending(home, [s for s, _ in failed])
    return PushReport(tuple(delivered), tuple(failed))
