"""Grades back to a real LTI 1.3 platform (lti1p3platform, on loopback): a real ``grade``
of two students, ``lti push``, the scores read back from the platform's line item, one
line item on repeat, late penalties and hand scores included, a platform that is down
leaves the grades pending until a later push delivers them; ``roster --lti``."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
from autograder.intake.reports import read_ids
from autograder.lti.web import after_grading
from conftest import cli

ASSIGNMENT = "02_softmax"
PERFECT, BLANK = "lms-user-ada", "lms-user-alan"
FEEDBACK = "https://hub.example.edu/services/grader/feedback"


def _submissions(root: Path, submitted: dict[str, str] | None = None) -> Path:
    """Ada hands in the solution, Alan the notebook as released (nothing answered)."""
    subs = root / "subs"
    for student, source in ((PERFECT, SOLUTIONS_DIR), (BLANK, NOTEBOOKS_DIR)):
        folder = subs / student / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(source / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", folder)
    if submitted:
        with open(subs / "_submissions.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, ["student_id", "assignment", "notebook", "submitted_at"])
            w.writeheader()
            w.writerows({"student_id": s, "assignment": ASSIGNMENT,
                         "notebook": f"{ASSIGNMENT}.ipynb", "submitted_at": when}
                        for s, when in submitted.items())
    return subs


def _grade(root: Path, submitted: dict[str, str] | None = None) -> Path:
    out = root / "out"
    done = cli("grade", str(_submissions(root, submitted)), "--out", str(out), "--jobs", "1")
    assert done.returncode == 0, done.stderr
    return out


def _summary(out: Path) -> dict[str, dict]:
    with open(out / "summary.csv", newline="", encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


def _launched(loopback) -> None:
    assert loopback.register().returncode == 0
    for student in (PERFECT, BLANK):
        assert loopback.launch(student, ASSIGNMENT).status_code == 200


def _push(loopback, out: Path, *more: str):
    return cli("lti", "push", str(out), "--tool-dir", str(loopback.home.root),
               "--feedback-url", FEEDBACK, *more)


def test_graded_scores_reach_the_platform_and_a_repeat_updates_one_line_item(loopback, tmp_path):
    _launched(loopback)
    out = _grade(tmp_path)
    summary = _summary(out)
    assert summary[PERFECT]["points"] == summary[PERFECT]["max_points"] != "0"
    assert float(summary[BLANK]["points"]) < float(summary[BLANK]["max_points"])

    pushed = _push(loopback, out)
    assert pushed.returncode == 0, pushed.stderr
    assert "2 score(s) delivered, 0 pending" in pushed.stdout
    course = loopback.platform.course
    [(key, item)] = course.lineitems.items()
    assert item["tag"] == ASSIGNMENT and float(item["scoreMaximum"]) == \
        float(summary[PERFECT]["max_points"])
    scores = course.scores[item["id"]]
    for student in (PERFECT, BLANK):
        score = scores[student]
        assert score["userId"] == student
        assert float(score["scoreGiven"]) == float(summary[student]["points"])
        assert float(score["scoreMaximum"]) == float(summary[student]["max_points"])
        assert score["activityProgress"] == "Completed"
        assert score["gradingProgress"] == "FullyGraded"
        assert score["timestamp"]
        assert score["comment"] == f"Feedback: {FEEDBACK}/{student}/{ASSIGNMENT}"

    # again, and again from a tool folder that lost its record of the line item: the
    # platform's line item is found by its tag, never made twice
    assert _push(loopback, out).returncode == 0
    (loopback.home.path("lineitems.json")).unlink()
    assert _push(loopback, out).returncode == 0
    assert list(course.lineitems) == [key]
    assert len(course.posts) == 6
    assert set(course.scores) == {item["id"]}


def test_late_penalty_export_stored_is_what_the_lms_gets(loopback, tmp_path):
    _launched(loopback)
    deadline = "2026-10-01T23:59:00+00:00"
    out = _grade(tmp_path, {PERFECT: "2026-10-03T12:00:00+00:00",     # 2 days late
                            BLANK: "2026-10-01T10:00:00+00:00"})
    full = float(_summary(out)[PERFECT]["points"])
    exported = cli("export", str(out), "--format", "canvas", "--deadline", deadline,
                   "--late-policy", "10", "--dest", str(tmp_path / "csv"))
    assert exported.returncode == 0, exported.stderr
    assert _push(loopback, out).returncode == 0
    [item] = loopback.platform.course.lineitems.values()
    given = float(loopback.platform.course.scores[item["id"]][PERFECT]["scoreGiven"])
    assert given == pytest.approx(full * (1 - 2 * 0.10))
    with open(tmp_path / "csv" / "late.csv", newline="", encoding="utf-8") as f:
        [late] = list(csv.DictReader(f))
    assert float(late["points_after"]) == pytest.approx(given)


def test_hand_given_scores_are_pushed(loopback, tmp_path):
    from autograder.results.records import MANUAL_TEMPLATE_COLUMNS
    from autograder.run import pool
    from fake_class import fake_engine, make_class, make_course

    assert loopback.register().returncode == 0
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {PERFECT: {"01_a": "good"}})
    out = tmp_path / "out"
    pool.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    before = float(_summary(out)[PERFECT]["points"])
    scores = tmp_path / "scores.csv"
    assert cli("manual-template", str(out), "--dest", str(scores)).returncode == 0
    with open(scores, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows, "the stand-in class has a written answer"
    for row in rows:
        row["points"] = row["max_points"]
    with open(scores, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, MANUAL_TEMPLATE_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    assert cli("manual-import", str(out), str(scores)).returncode == 0
    hand = sum(float(r["max_points"]) for r in rows)
    pushed = _push(loopback, out, "--lineitems", f"{loopback.platform.url}/lineitems")
    assert pushed.returncode == 0, pushed.stderr
    [item] = loopback.platform.course.lineitems.values()
    given = float(loopback.platform.course.scores[item["id"]][PERFECT]["scoreGiven"])
    assert given == pytest.approx(before + hand)


def test_platform_down_keeps_grades_pending_and_a_later_push_delivers(loopback, tmp_path):
    _launched(loopback)
    out = _grade(tmp_path)
    loopback.platform.down = True
    pushed = _push(loopback, out)
    assert pushed.returncode == 1
    assert "0 score(s) delivered, 2 pending" in pushed.stdout
    assert f"pending {PERFECT} {ASSIGNMENT}" in pushed.stderr
    pending = [json.loads(line) for line in loopback.home.path("pending.jsonl").read_text().splitlines()]
    assert {p["user_id"] for p in pending} == {PERFECT, BLANK}
    assert loopback.platform.course.posts == []

    loopback.platform.down = False       # a later push, of nothing new, delivers them
    later = _push(loopback, out, "--assignments", "no_such_assignment")
    assert later.returncode == 0, later.stderr
    assert "2 score(s) delivered, 0 pending" in later.stdout
    assert loopback.home.path("pending.jsonl").read_text() == ""
    [item] = loopback.platform.course.lineitems.values()
    assert set(loopback.platform.course.scores[item["id"]]) == {PERFECT, BLANK}


def test_after_grading_hook_sends_one_record(loopback, tmp_path):
    _launched(loopback)
    out = _grade(tmp_path)
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()
                if json.loads(line)["student_id"] == PERFECT]
    after_grading(loopback.home, feedback_url=FEEDBACK)(record)
    [item] = loopback.platform.course.lineitems.values()
    score = loopback.platform.course.scores[item["id"]][PERFECT]
    assert float(score["scoreGiven"]) == record["points"]


def test_roster_from_the_lms_is_a_roster_collect_takes(loopback, tmp_path):
    _launched(loopback)
    dest = tmp_path / "roster.csv"
    done = cli("roster", "--lti", "--dest", str(dest), "--tool-dir", str(loopback.home.root))
    assert done.returncode == 0, done.stderr
    assert read_ids(dest) == {PERFECT, BLANK}             # learners only, by the LMS's ids
    with open(dest, newline="", encoding="utf-8") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert rows[PERFECT]["name"] == "Ada Lovelace"
    assert rows[BLANK]["email"] == "alan@example.edu"
    everyone = cli("roster", "--lti", "--everyone", "--dest", str(dest),
                   "--tool-dir", str(loopback.home.root))
    assert everyone.returncode == 0 and "lms-user-prof" in read_ids(dest)


HOSTILE_NAMES = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2", "@SUM(A1)",
                 "\x1b[2J\x1b[31mred", "bidi \u202eevil", "tab\tname", "x" * 5000]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_roster_from_a_hostile_lms_is_safe_in_a_csv(loopback, tmp_path, name):
    from platform_app import LEARNER

    loopback.platform.add_member("lms-user-eve", name, name, [LEARNER])
    loopback.platform.add_member("../../etc", "Path", "p@example.edu", [LEARNER])
    _launched(loopback)
    dest = tmp_path / "roster.csv"
    done = cli("roster", "--lti", "--dest", str(dest), "--tool-dir", str(loopback.home.root))
    assert done.returncode == 0, done.stderr
    assert "left out the member '../../etc'" in done.stderr
    assert read_ids(dest) == {PERFECT, BLANK, "lms-user-eve"}
    text = dest.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\u202e" not in text and len(text) < 2000
    with open(dest, newline="", encoding="utf-8") as f:
        eve = next(r for r in csv.DictReader(f) if r["student_id"] == "lms-user-eve")
    for cell in (eve["name"], eve["email"]):
        assert cell[:1] not in ("=", "+", "-", "@") and "\t" not in cell


def test_after_grading_hook_without_a_known_course_keeps_the_grade_pending(loopback, tmp_path):
    assert loopback.register().returncode == 0          # registered, never launched
    out = _grade(tmp_path)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    for record in records:
        after_grading(loopback.home)(record)
    pending = loopback.home.path("pending.jsonl").read_text().splitlines()
    assert {json.loads(p)["user_id"] for p in pending} == {PERFECT, BLANK}
    later = _push(loopback, out, "--assignments", "no_such_assignment",
                  "--lineitems", f"{loopback.platform.url}/lineitems")
    assert "2 score(s) delivered, 0 pending" in later.stdout, later.stderr
    [item] = loopback.platform.course.lineitems.values()
    given = {u: float(s["scoreGiven"]) for u, s in loopback.platform.course.scores[item["id"]].items()}
    assert given == {r["student_id"]: float(r["points"]) for r in records}


def test_the_services_hook_sends_a_graded_record_to_the_launched_course(loopback, tmp_path,
                                                                        monkeypatch):
    """After a launch told the tool where the course's line items are, the service's hook
    (configured by name, as `serve --after-grading` does) posts the record's score."""
    from autograder.ondemand.service.app import load_object
    from autograder.lti import web as lti_web

    _launched(loopback)
    out = _grade(tmp_path)
    [record] = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()
                if json.loads(line)["student_id"] == PERFECT]
    monkeypatch.setenv("AUTOGRADER_LTI_DIR", str(loopback.home.root))
    monkeypatch.setenv(lti_web.FEEDBACK_URL_ENV, "https://hub.example.edu/services/grader/feedback")
    hook = load_object("autograder.lti.web:service_after_grading")
    hook(record)
    [item] = loopback.platform.course.lineitems.values()
    score = loopback.platform.course.scores[item["id"]][PERFECT]
    assert float(score["scoreGiven"]) == record["points"]
    assert "hub.example.edu/services/grader/feedback" in score.get("comment", "")
