"""The JupyterHub service's parts without a hub (autograder/ondemand/service/): the rate
limit, the size cap, the receipt time, the queue, how records join OUT, the pages, the
exchange watcher, and one real grading compared with ``python -m autograder grade``.

The real grading test grades two students (perfect, a typical mistake) of one
assignment through the service's queue and through the grade command, with the same
secret: 10 minutes at most (generous: the machine may be busy).
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import pwd
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from autograder import REPO_ROOT
from autograder.ondemand.service import jobs, pages
from autograder.ondemand.service.intake import Intake, RateLimit, Receipt, Refused
from autograder.ondemand.service.queue import GradingQueue
from autograder.ondemand.service.service import GradingService
from autograder.ondemand.service.settings import Settings
from autograder.results import late
from autograder.results.records import read_records
from graded_again import graded_by_the_command

ASSIGNMENT, NOTEBOOK = "01_dot_products", "01_dot_products.ipynb"
COURSE = {(ASSIGNMENT, NOTEBOOK)}
GRADE_DEADLINE = 600
ME = pwd.getpwuid(os.getuid()).pw_name          # who owns what this test makes


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


# --------------------------------------------------------------------------- rate limit

@given(count=st.integers(1, 6), window=st.integers(1, 10_000), students=st.integers(1, 3))
def test_rate_limit_refuses_the_submission_over_the_limit_per_student_until_the_window_ends(
        count, window, students):
    clock = Clock()
    rate = RateLimit(count, window, clock)
    for s in range(students):
        for _ in range(count):
            rate.take(f"s{s}")                   # each student has their own allowance
        with pytest.raises(Refused) as refused:
            rate.take(f"s{s}")
        assert refused.value.status == 429
        assert f"at most {count} every {window:g} seconds" in str(refused.value)
        assert "try again in" in str(refused.value)
    clock.now += window                          # the window has passed: taken again
    for s in range(students):
        rate.take(f"s{s}")


def test_a_refused_submission_does_not_count_against_the_limit(tmp_path):
    intake = Intake(tmp_path / "subs", COURSE, max_bytes=10, rate=RateLimit(1, 60, Clock()))
    with pytest.raises(Refused):
        intake.accept("ann", ASSIGNMENT, NOTEBOOK, b"x" * 11, "upload")
    intake.accept("ann", ASSIGNMENT, NOTEBOOK, b"{}", "upload")


# --------------------------------------------------------------------------- size cap

@given(size=st.integers(0, 64), cap=st.integers(1, 64))
def test_size_cap_refuses_a_notebook_over_it_with_the_limit_named(tmp_path_factory, size, cap):
    intake = Intake(tmp_path_factory.mktemp("subs"), COURSE, max_bytes=cap,
                    rate=RateLimit(100, 60))
    if size > cap:
        with pytest.raises(Refused) as refused:
            intake.accept("ann", ASSIGNMENT, NOTEBOOK, b"x" * size, "upload")
        assert refused.value.status == 413
        assert f"is {size} bytes; the limit is {cap} bytes" in str(refused.value)
        assert not (intake.submissions / "ann").exists()
    else:
        intake.accept("ann", ASSIGNMENT, NOTEBOOK, b"x" * size, "upload")
        assert (intake.submissions / "ann" / ASSIGNMENT / NOTEBOOK).stat().st_size == size


@pytest.mark.parametrize("student, assignment, notebook, status", [
    ("../etc", ASSIGNMENT, NOTEBOOK, 403), (".hidden", ASSIGNMENT, NOTEBOOK, 403),
    ("_unmatched", ASSIGNMENT, NOTEBOOK, 403), ("a/b", ASSIGNMENT, NOTEBOOK, 403),
    ("", ASSIGNMENT, NOTEBOOK, 403), ("ann", "..", NOTEBOOK, 404),
    ("ann", ASSIGNMENT, "../../x.ipynb", 404), ("ann", "02_softmax", NOTEBOOK, 404)])
def test_a_name_that_is_not_a_student_or_a_course_notebook_is_refused(
        tmp_path, student, assignment, notebook, status):
    intake = Intake(tmp_path / "subs", COURSE, max_bytes=100, rate=RateLimit(100, 60))
    with pytest.raises(Refused) as refused:
        intake.accept(student, assignment, notebook, b"{}", "upload")
    assert refused.value.status == status
    assert sorted(p.name for p in (tmp_path / "subs").iterdir()) == []


NAMES = st.one_of(st.text(max_size=30), st.sampled_from(
    ["..", ".", "/", "a/../..", "ann", ASSIGNMENT, NOTEBOOK, f"../{NOTEBOOK}", "\x00", "_x"]))


@given(student=NAMES, assignment=NAMES, notebook=NAMES)
def test_whatever_the_names_a_submission_lands_inside_submissions_or_is_refused(
        tmp_path_factory, student, assignment, notebook):
    root = tmp_path_factory.mktemp("subs")
    intake = Intake(root, COURSE, max_bytes=100, rate=RateLimit(100, 60))
    try:
        intake.accept(student, assignment, notebook, b"{}", "upload")
    except Refused as refused:
        assert refused.status in (403, 404)
        assert [p.name for p in root.iterdir()] == []
        return
    assert (assignment, notebook) in COURSE
    stored = root / student / assignment / notebook
    assert stored.resolve().is_relative_to(root.resolve()) and stored.read_bytes() == b"{}"
    assert stored.parent.parent.parent == root and not student.startswith((".", "_"))


# --------------------------------------------------------------------------- receipt time

def test_the_receipt_time_is_the_services_clock_and_lands_where_grade_reads_it(tmp_path):
    stamps = iter(["2026-03-01T10:00:00+00:00", "2026-03-02T11:30:00+00:00"])
    intake = Intake(tmp_path / "subs", COURSE, max_bytes=100, rate=RateLimit(100, 60),
                    now=lambda: next(stamps))
    first = intake.accept("ann", ASSIGNMENT, NOTEBOOK, b"{}", "upload")
    second = intake.accept("bob", ASSIGNMENT, NOTEBOOK, b"{}", "exchange")
    assert (first.received_at, second.received_at) == ("2026-03-01T10:00:00+00:00",
                                                       "2026-03-02T11:30:00+00:00")
    rows = late.read_submissions(tmp_path / "subs")
    assert rows[("ann", ASSIGNMENT, NOTEBOOK)]["submitted_at"] == first.received_at
    assert rows[("bob", ASSIGNMENT, NOTEBOOK)]["submitted_at"] == second.received_at
    assert {r["source"] for r in rows.values()} == {"jupyterhub"}


def test_an_exchange_files_own_time_is_ignored(tmp_path):
    inbound = tmp_path / "inbound"
    folder = inbound / f"{ME}+{ASSIGNMENT}+2001-01-01 00:00:00.000000 UTC+abc"
    folder.mkdir(parents=True)
    (folder / NOTEBOOK).write_text("{}")
    old = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    os.utime(folder / NOTEBOOK, (old, old))
    (folder / "timestamp.txt").write_text("2001-01-01 00:00:00.000000 UTC")
    service = _service(tmp_path, inbound=inbound, grade=lambda r: [])
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    [receipt] = service.scan_inbound()
    after = datetime.datetime.now(datetime.timezone.utc)
    assert before <= datetime.datetime.fromisoformat(receipt.received_at) <= after
    assert service.scan_inbound() == []                 # taken once
    assert _service(tmp_path, inbound=inbound, grade=lambda r: []).scan_inbound() == []


def test_an_exchange_folder_named_for_another_user_is_not_taken(tmp_path):
    inbound = tmp_path / "inbound"
    (inbound / f"nosuchuser+{ASSIGNMENT}+2026-01-01 00:00:00 UTC").mkdir(parents=True)
    (inbound / f"nosuchuser+{ASSIGNMENT}+2026-01-01 00:00:00 UTC" / NOTEBOOK).write_text("{}")
    service = _service(tmp_path, inbound=inbound, grade=lambda r: [])
    assert service.scan_inbound() == []
    assert not (tmp_path / "subs" / "nosuchuser").exists()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "other owner"])
def test_an_exchange_entry_that_is_not_the_students_own_file_is_not_read(tmp_path, kind):
    inbound = tmp_path / "inbound"
    folder = inbound / f"{ME}+{ASSIGNMENT}+2026-01-01 00:00:00 UTC"
    folder.mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("root's own")
    entry = folder / NOTEBOOK
    if kind == "symlink":
        entry.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(entry)
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root (CI runs as root)")
        entry.write_text("{}")
        os.chown(entry, 65534, 65534)
    service = _service(tmp_path, inbound=inbound, grade=lambda r: [])
    assert service.scan_inbound() == []
    assert not (tmp_path / "subs" / ME).exists()


def _service(tmp_path, grade, **kw) -> GradingService:
    settings = Settings(submissions=tmp_path / "subs", out=tmp_path / "out", workers=1, **kw)
    service = GradingService(settings)
    service.queue.stop()
    service.queue = GradingQueue(grade, 1)
    return service


# --------------------------------------------------------------------------- the queue

def test_queue_grades_with_n_workers_at_once_and_hands_each_record_to_the_hooks():
    running, most, lock, release = [0], [0], threading.Lock(), threading.Event()
    seen: list[dict] = []

    def grade(receipt):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        release.wait(60)
        with lock:
            running[0] -= 1
        if receipt.student_id == "bad":
            raise RuntimeError("engine broke")
        return [{"student_id": receipt.student_id}]

    q = GradingQueue(grade, 2, after_grading=(seen.append,))
    receipts = [Receipt(s, ASSIGNMENT, NOTEBOOK, "t", "upload") for s in ("a", "b", "c", "bad")]
    for r in receipts:
        q.put(r)
    deadline = time.monotonic() + 60
    while most[0] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert most[0] == 2
    assert sorted(q.state.values()).count("queued") == 2
    release.set()
    q.join()
    q.stop()
    assert most[0] == 2
    assert sorted(r["student_id"] for r in seen) == ["a", "b", "c"]
    assert q.state[("bad", ASSIGNMENT, NOTEBOOK)].startswith("failed: RuntimeError")
    assert q.state[("a", ASSIGNMENT, NOTEBOOK)] == "graded"


def test_a_failing_hook_does_not_stop_the_others():
    seen = []

    def broken(record):
        raise ValueError("passback down")

    q = GradingQueue(lambda r: [{"student_id": r.student_id}], 1,
                     after_grading=(broken, seen.append))
    q.put(Receipt("a", ASSIGNMENT, NOTEBOOK, "t", "upload"))
    q.join()
    q.stop()
    assert seen == [{"student_id": "a"}]


# --------------------------------------------------------------------------- joining OUT

def _record(student, assignment, points):
    return {"student_id": student, "assignment": assignment, "notebook": f"{assignment}.ipynb",
            "status": "ok", "message": "", "flags": [], "points": points, "max_points": 2.0,
            "cells": [{"grade_id": "t", "kind": "test", "exercise": "f", "points": points,
                       "max_points": 2.0, "status": "ok", "message": "", "feedback": ""}],
            "answers": {}, "seconds": 1.0}


def test_a_job_replaces_only_its_own_students_assignment_in_out(tmp_path):
    outcome = jobs.Outcome(tmp_path / "out")
    outcome.join([_record("ann", "01_a", 1.0), _record("ann", "02_b", 2.0)])
    outcome.join([_record("bob", "01_a", 0.0)])
    outcome.join([_record("ann", "01_a", 2.0)])
    got = {(r["student_id"], r["assignment"]): r["points"] for r in read_records(tmp_path / "out")}
    assert got == {("ann", "01_a"): 2.0, ("ann", "02_b"): 2.0, ("bob", "01_a"): 0.0}
    with open(tmp_path / "out" / "summary.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 3
    assert (tmp_path / "out" / "feedback" / "bob" / "01_a" / "01_a.html").is_file()


def test_a_job_of_an_earlier_submission_finishing_last_does_not_replace_a_later_one(tmp_path):
    outcome = jobs.Outcome(tmp_path / "out")
    later, earlier = _record("ann", "01_a", 2.0), _record("ann", "01_a", 0.0)
    later["submitted_at"], earlier["submitted_at"] = ("2026-03-01T10:05:00+00:00",
                                                      "2026-03-01T10:00:00+00:00")
    outcome.join([later])
    outcome.join([earlier])
    [kept] = read_records(tmp_path / "out")
    assert (kept["points"], kept["submitted_at"]) == (2.0, later["submitted_at"])


# --------------------------------------------------------------------------- pages

def test_the_page_before_release_shows_no_points_and_no_hidden_line_and_escapes():
    record = _record("ann", "01_a", 1.0)
    record["cells"][0]["feedback"] = ("<script>alert(1)</script> visible case ok\n"
                                      "a hidden case of group 'shapes' failed: SECRET")
    page = pages.visible_page(record)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "visible case ok" in page and "SECRET" not in page
    assert "1.0" not in page and "/ 2" not in page


def test_release_switches_to_grades_page(tmp_path):
    outcome = jobs.Outcome(tmp_path / "out")
    record = _record("ann", "01_a", 1.0)
    record["cells"][0]["feedback"] = "a hidden case failed: detail"
    outcome.join([record])
    releases = pages.Releases(tmp_path / "out")
    [stored] = read_records(tmp_path / "out")
    assert "detail" not in pages.notebook_page(tmp_path / "out", stored, releases.released())
    releases.release("01_a")
    shown = pages.notebook_page(tmp_path / "out", stored, releases.released())
    assert shown == (tmp_path / "out" / "feedback" / "ann" / "01_a" / "01_a.html").read_text()
    releases.release("01_a", hidden=False)
    assert releases.released() == set()


# --------------------------------------------------------------------------- real grading

@pytest.mark.slow
def test_the_service_grades_as_the_grade_command_does(tmp_path):
    from benchmark_term import notebook_texts

    texts = notebook_texts([ASSIGNMENT])
    seen: list[dict] = []
    settings = Settings(submissions=tmp_path / "subs", out=tmp_path / "out", workers=2,
                        after_grading=(seen.append,))
    service = GradingService(settings)
    try:
        for student, kind in (("ann", "perfect"), ("bob", "mistake_1")):
            service.submit(student, ASSIGNMENT, NOTEBOOK, texts[kind][ASSIGNMENT].encode())
        service.queue.join()
    finally:
        service.stop()
    assert {s for s in service.queue.state.values()} == {"graded"}, service.queue.state
    served = {r["student_id"]: r for r in read_records(settings.out)}
    assert sorted(served) == ["ann", "bob"] == sorted(r["student_id"] for r in seen)
    # the same notebooks, graded by the command with the same secret
    graded = graded_by_the_command(settings.submissions, settings.out, tmp_path, ("ann", "bob"),
                                   ASSIGNMENT, NOTEBOOK, GRADE_DEADLINE)
    for student in ("ann", "bob"):
        assert ([(c["grade_id"], c["points"], c["status"]) for c in served[student]["cells"]]
                == [(c["grade_id"], c["points"], c["status"]) for c in graded[student]["cells"]])
    assert served["ann"]["points"] == served["ann"]["max_points"] > served["bob"]["points"]
    receipts = late.read_submissions(settings.submissions)
    assert served["ann"]["submitted_at"] == receipts[("ann", ASSIGNMENT, NOTEBOOK)]["submitted_at"]
    # the batch commands read the service's OUT
    for command in (["report", str(settings.out)], ["export", str(settings.out), "--format", "gradescope",
                                                     "--dest", str(tmp_path / "export")]):
        done = subprocess.run([sys.executable, "-m", "autograder", *command], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=GRADE_DEADLINE)
        assert done.returncode == 0, (command, done.stderr[-2000:])


# --------------------------------------------------------------------------- backends

def test_every_backend_runs_the_grade_command_with_the_course_secret(tmp_path):
    settings = Settings(submissions=tmp_path / "subs", out=tmp_path / "out", workers=1,
                        backend="kubernetes", cluster_options=("course:1", "course-claim"),
                        grade_options=("--credit", "cases"))
    receipt = Receipt("ann", ASSIGNMENT, NOTEBOOK, "t", "upload")
    folders = jobs.JobFolders(tmp_path / "j", tmp_path / "j" / "s", tmp_path / "j" / "o")
    command = jobs.grade_command(settings, receipt, folders)
    assert command[1:5] == ["-m", "autograder", "grade", str(folders.submissions)]
    assert command[command.index("--secret-file") + 1] == str(tmp_path / "out"
                                                              / "grading-secret.key")
    assert command[-2:] == ["--credit", "cases"]
    manifest = jobs.kubernetes_manifest(command, folders, settings)
    [container] = manifest["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["command"]) == ("course:1", command)
    [volume] = manifest["spec"]["template"]["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == "course-claim"
    bare = Settings(submissions=tmp_path / "subs", out=tmp_path / "out", backend="kubernetes")
    with pytest.raises(ValueError, match="--cluster-option IMAGE"):
        jobs.kubernetes_manifest(command, folders, bare)
    with pytest.raises(ValueError, match="choose one of local, slurm, kubernetes"):
        Settings(submissions=tmp_path, out=tmp_path, backend="condor")
