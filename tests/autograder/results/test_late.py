"""Late work: collect records each upload's time (when the download gives one) and the
LMS's late flag, a late resubmission in a second download replaces the first file (or
not, with --keep first), and export applies a late policy. Through the real commands,
on downloads built as the LMSs build them (tests/lms/)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.intake import collect
from autograder.results import late
from autograder.cli import main
from lms import canvas, gradescope

NB = "01_dot_products"


@pytest.fixture
def solutions(tmp_path) -> Path:
    root = tmp_path / "solutions"
    for name in (NB, "02_softmax"):
        (root / name).mkdir(parents=True)
        (root / name / f"{name}.ipynb").write_text("{}")
    return root


def nb(tag: str) -> bytes:
    return json.dumps({"cells": [], "tag": tag}).encode()


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def tag(out: Path, student: str, name: str = NB) -> str:
    return json.loads((out / student / name / f"{name}.ipynb").read_text())["tag"]


def test_a_late_resubmission_in_a_second_download_replaces_the_first(tmp_path, solutions):
    """Two Canvas downloads (tests/lms/canvas.py: every entry carries the download's
    time): the second holds Jane's current submission, a late re-upload. It replaces
    the first file (the later download holds the later file), which is kept; Canvas's
    LATE mark is recorded, and no upload time is made up from the entry times."""
    week1 = datetime(2026, 10, 2, 8, 0, tzinfo=timezone.utc)
    week2 = datetime(2026, 10, 4, 8, 0, tzinfo=timezone.utc)
    bob = canvas.Student(222, "Smith, Bob", [(f"{NB}.ipynb", nb("bob-1"))])
    first = canvas.download(tmp_path / "week1.zip", [
        canvas.Student(12345, "Doe, Jane", [(f"{NB}.ipynb", nb("jane-1"))]), bob], week1)
    second = canvas.download(tmp_path / "week2.zip", [   # Canvas marks the resubmission late
        canvas.Student(12345, "Doe, Jane", [(f"{NB}-1.ipynb", nb("jane-2"))], late=True),
        bob], week2, first_attachment_id=900_101)
    out = tmp_path / "subs"
    collect.collect(first, out, solutions)
    outcomes = collect.collect(second, out, solutions)
    assert tag(out, "12345") == "jane-2" and tag(out, "222") == "bob-1"
    replaced = list((out / collect.UNMATCHED / "replaced").rglob("*.ipynb"))
    assert [json.loads(p.read_text())["tag"] for p in replaced] == ["jane-1"]   # kept
    assert any("replaces the file of the download of 2026-10-02T08:00:00+00:00" in o.reason
               for o in outcomes)
    table = {r["student_id"]: r for r in rows(out / late.SUBMISSIONS_CSV)}
    assert table["12345"]["submitted_at"] == "" and table["222"]["submitted_at"] == ""
    assert table["12345"]["downloaded_at"] == "2026-10-04T08:00:00+00:00"
    assert table["12345"]["lms_late"] == "yes" and table["222"]["lms_late"] == ""
    reports = sorted(p.name for p in (out / collect.REPORTS).iterdir())
    assert reports == ["01_week1.zip.csv", "02_week2.zip.csv"]      # one per download
    assert rows(out / collect.REPORTS / reports[0]) != rows(out / collect.REPORT)
    assert rows(out / collect.REPORTS / reports[1]) == rows(out / collect.REPORT)
    # collected again in the wrong order, the older download does not replace the newer
    out2 = tmp_path / "subs2"
    collect.collect(second, out2, solutions)
    outcomes = collect.collect(first, out2, solutions)
    assert tag(out2, "12345") == "jane-2"
    assert any("already holds the later file" in o.reason for o in outcomes)


def test_keep_first_keeps_the_first_upload(tmp_path, solutions, capsys):
    first = canvas.download(tmp_path / "a.zip", [
        canvas.Student(12345, "Doe, Jane", [(f"{NB}.ipynb", nb("jane-1"))])],
        datetime(2026, 10, 1, 12, 0, tzinfo=timezone.utc))
    second = canvas.download(tmp_path / "b.zip", [canvas.Student(12345, "Doe, Jane", [
        (f"{NB}-1.ipynb", nb("jane-2")), (f"{NB}-2.ipynb", nb("jane-3"))])],
        datetime(2026, 10, 5, 12, 0, tzinfo=timezone.utc), first_attachment_id=900_101)
    out = tmp_path / "subs"
    for download in (first, second):         # the real command, the real course
        assert main(["collect", str(download), "--out", str(out), "--keep", "first"]) == 0
    assert tag(out, "12345") == "jane-1"
    printed = capsys.readouterr().out
    assert "later file" in printed and "already holds the earlier file" in printed
    with pytest.raises(ValueError, match="latest, first"):
        collect.collect(first, out, solutions, keep="newest")


def test_a_different_file_of_unknown_upload_time_is_never_overwritten(tmp_path, solutions):
    out = tmp_path / "subs"
    (out / "12345" / NB).mkdir(parents=True)
    (out / "12345" / NB / f"{NB}.ipynb").write_bytes(nb("placed-by-hand"))
    download = canvas.download(tmp_path / "d.zip", [
        canvas.Student(12345, "Doe, Jane", [(f"{NB}.ipynb", nb("jane-1"))])],
        datetime(2026, 10, 1, 10, 0, tzinfo=timezone.utc))
    outcomes = collect.collect(download, out, solutions)
    assert tag(out, "12345") == "placed-by-hand"
    assert any("unknown upload time" in o.reason for o in outcomes)


def test_gradescope_upload_time_comes_from_its_metadata(tmp_path, solutions):
    root = tmp_path / "gs"
    (root / "submission_77").mkdir(parents=True)
    (root / "submission_77" / f"{NB}.ipynb").write_bytes(nb("gs"))
    (root / "submission_metadata.yml").write_text(
        "submission_77:\n  :submitters:\n  - :name: Jane Doe\n    :sid: '4711'\n"
        "    :email: jane@example.edu\n  :created_at: 2026-10-02 08:15:00.123456 -0700\n")
    out = tmp_path / "subs"
    collect.collect(root, out, solutions)
    (row,) = rows(out / late.SUBMISSIONS_CSV)
    assert row["student_id"] == "4711"
    assert row["submitted_at"] == "2026-10-02T15:15:00+00:00"      # -0700 read as such


def test_policy_and_deadline_parsing():
    p = late.Policy.parse("10:40")
    assert [p.percent_off(d) for d in (0, 1, 3, 4, 9)] == [0, 10, 30, 40, 40]
    assert late.Policy.parse("zero").percent_off(1) == 100
    assert late.Policy.parse("none").percent_off(30) == 0
    for bad in ("ten", "10:400", "-5", "10:x"):
        with pytest.raises(ValueError, match="PERCENT"):
            late.Policy.parse(bad)
    d = late.parse_deadlines(["2026-10-01T23:59", "02_softmax=2026-10-08 23:59+02:00"])
    assert d[None].isoformat() == "2026-10-01T23:59:00+00:00"
    assert d["02_softmax"].isoformat() == "2026-10-08T21:59:00+00:00"
    with pytest.raises(ValueError, match="not a time"):
        late.parse_deadlines(["next friday"])


def test_export_applies_the_late_policy_end_to_end(tmp_path):
    """collect (a Gradescope export: its created_at are upload times) -> grade -> export
    --deadline --late-policy: on time full marks, 2.5 days late 30 % off, 5 days late
    capped at 40 %; without a policy: untouched. (Canvas's case, where only the LATE mark
    is known, is tests/autograder/intake/test_lms_downloads.py.)"""
    source = (SOLUTIONS_DIR / NB / f"{NB}.ipynb").read_bytes()
    at = lambda *t: datetime(*t, tzinfo=timezone.utc)  # noqa: E731
    download = gradescope.download(tmp_path / "export.zip", [
        gradescope.Submission(901, [gradescope.Submitter("On Time", "a@uni.edu", "11")],
                              at(2026, 10, 1, 20, 0), [(f"{NB}.ipynb", source)]),
        gradescope.Submission(902, [gradescope.Submitter("Two Half", "b@uni.edu", "22")],
                              at(2026, 10, 4, 11, 0), [(f"{NB}.ipynb", source)]),
        gradescope.Submission(903, [gradescope.Submitter("Very Late", "c@uni.edu", "33")],
                              at(2026, 10, 6, 23, 0), [(f"{NB}.ipynb", source)]),
    ], downloaded_at=at(2026, 10, 8, 9, 0))
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}

    def run(*args):
        done = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO_ROOT,
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done

    run("collect", str(download), "--out", str(subs))
    run("grade", str(subs), "--out", str(out), "--jobs", "1")
    records = {json.loads(line)["student_id"]: json.loads(line)
               for line in (out / "results.jsonl").read_text().splitlines()
               if json.loads(line)["assignment"] == NB}
    assert records["22"]["submitted_at"] == "2026-10-04T11:00:00+00:00"
    full = records["11"]["max_points"]
    assert all(r["points"] == full for r in records.values())
    run("export", str(out), "--format", "canvas", "--assignments", NB,
        "--deadline", f"{NB}=2026-10-01T23:59", "--late-policy", "10:40")
    grades = {r["ID"]: r for r in rows(out / "canvas_grades.csv") if r["ID"]}
    assert float(grades["11"][NB]) == pytest.approx(full)
    assert float(grades["22"][NB]) == pytest.approx(full * 0.7)
    assert float(grades["33"][NB]) == pytest.approx(full * 0.6)
    table = {r["student_id"]: r for r in rows(out / "late.csv")}
    assert set(table) == {"22", "33"}
    assert table["22"]["days_late"] == "3" and float(table["33"]["percent_off"]) == 40
    run("export", str(out), "--format", "canvas", "--assignments", NB)   # no policy: raw
    grades = {r["ID"]: r for r in rows(out / "canvas_grades.csv") if r["ID"]}
    assert float(grades["33"][NB]) == pytest.approx(full)


def test_folder_times_are_upload_times_unless_all_the_same(tmp_path, solutions, capsys):
    """A folder the instructor made: its files' times are read as upload times, unless
    every file carries the same one (a copy, an unzip of a re-zipped folder): then collect
    warns and records no upload time rather than the copy's."""
    import os as _os

    def folder(name: str, stamps: dict[str, int]) -> Path:
        root = tmp_path / name
        for student, stamp in stamps.items():
            path = root / student / NB / f"{NB}.ipynb"
            path.parent.mkdir(parents=True)
            path.write_bytes(nb(student))
            _os.utime(path, (stamp, stamp))
        return root

    day = int(datetime(2026, 10, 1, 12, 0, tzinfo=timezone.utc).timestamp())
    out = tmp_path / "a"
    assert main(["collect", str(folder("varied", {"jane": day, "bob": day + 3600})),
                 "--out", str(out)]) == 0
    table = {r["student_id"]: r["submitted_at"] for r in rows(out / late.SUBMISSIONS_CSV)}
    assert table == {"jane": "2026-10-01T12:00:00+00:00", "bob": "2026-10-01T13:00:00+00:00"}
    assert "warning" not in capsys.readouterr().err
    out = tmp_path / "b"
    assert main(["collect", str(folder("copied", {"jane": day, "bob": day})),
                 "--out", str(out)]) == 0
    table = {r["student_id"]: r["submitted_at"] for r in rows(out / late.SUBMISSIONS_CSV)}
    assert table == {"jane": "", "bob": ""}
    assert "entry times are the download's, not upload times" in capsys.readouterr().err
