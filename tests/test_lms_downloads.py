"""collect on downloads built the way the LMSs build them (tests/lms/: Canvas's
content_zipper.rb, Moodle's downloader.php, Gradescope's export as public parsers read
it), through the real command: issue 21 ("The instructor's term III") and issue 23's
finding on the Git route.

The lesson these tests keep: a Canvas or Moodle zip stamps every entry with the time of
the download, so an entry time is never an upload time there; Canvas's lateness is its
``LATE`` mark.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder import REPO_ROOT, SOLUTIONS_DIR
from lms import canvas, gradescope, moodle

NB = "01_dot_products"
DEADLINE = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)
DOWNLOADED = DEADLINE + timedelta(days=3, hours=9)     # the instructor downloads later


def nb(tag: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
                       "tag": tag}).encode()


def tag_of(path: Path) -> str:
    return json.loads(path.read_text())["tag"]


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def run(*args, tmp: Path, check: bool = True) -> subprocess.CompletedProcess:
    """``python -m autograder ARGS`` from the repository, as the instructor types it."""
    tmp.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)],
                          cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(tmp)},
                          capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, (done.stdout, done.stderr)
    return done


def collect(download: Path, out: Path, tmp: Path) -> subprocess.CompletedProcess:
    return run("collect", download, "--out", out, tmp=tmp)


def report(out: Path) -> dict[str, dict]:
    return {r["source"]: r for r in rows(out / "_collect_report.csv")}


# --------------------------------------------------------------------------- Canvas, late

@pytest.mark.slow
def test_canvas_lateness_is_its_late_mark_not_the_entry_times(tmp_path):
    """A Canvas class downloaded three days after the deadline: every entry carries the
    download's time. collect, grade and export with a late policy take 10 % off the one
    submission Canvas marked LATE (one day: its upload time is unknown), and nothing off
    the others, whose entry time is also three days late."""
    source = (SOLUTIONS_DIR / NB / f"{NB}.ipynb").read_bytes()
    students = [canvas.Student(4711, "Doe, Jane", [(f"{NB}.ipynb", source)]),
                canvas.Student(4712, "Smith, Bob", [(f"{NB}.ipynb", source)], late=True),
                canvas.Student(4713, "Lee, Ann", [(f"{NB}.ipynb", source)])]
    download = canvas.download(tmp_path / "canvas.zip", students, DOWNLOADED)
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    done = collect(download, subs, tmp)
    assert "entry times are the download's, not upload times" in done.stderr
    table = {r["student_id"]: r for r in rows(subs / "_submissions.csv")}
    assert set(table) == {"4711", "4712", "4713"}
    assert [table[s]["lms_late"] for s in ("4711", "4712", "4713")] == ["", "yes", ""]
    assert {r["submitted_at"] for r in table.values()} == {""}     # not the download's
    run("grade", subs, "--out", out, "--jobs", "1", tmp=tmp)
    run("export", out, "--format", "canvas", "--assignments", NB,
        "--deadline", DEADLINE.isoformat(), "--late-policy", "10:40", tmp=tmp)
    grades = {r["ID"]: r for r in rows(out / "canvas_grades.csv") if r["ID"]}
    full = float(grades["4711"][NB])
    assert full > 0
    assert float(grades["4713"][NB]) == pytest.approx(full)
    assert float(grades["4712"][NB]) == pytest.approx(full * 0.9)
    late = rows(out / "late.csv")
    assert [(r["student_id"], r["days_late"]) for r in late] == [("4712", "1")]
