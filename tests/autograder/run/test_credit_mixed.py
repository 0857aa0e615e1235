"""``grade --credit`` is one setting per class: records graded with ``--credit cases``
and ``--credit all`` are never joined, by ``grade --resume``, ``grade --student`` or
``merge`` (issue 22). Through the real commands, on two students of notebook 01 graded
in two shards with different settings."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.run.pool import shard_of

NB = "01_dot_products"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)


def _records(out: Path, name: str = "results.jsonl") -> list[dict]:
    return [json.loads(line) for line in (out / name).read_text().splitlines()]


@pytest.mark.slow
def test_resume_student_and_merge_refuse_records_of_another_credit_setting(tmp_path):
    # one student in each of two shards (the shard of an id is a hash: pick the ids)
    ids = [f"s{i}" for i in range(40)]
    first = next(s for s in ids if shard_of(s, 2) == 1)
    second = next(s for s in ids if shard_of(s, 2) == 2)
    subs = tmp_path / "submissions"
    for student in (first, second):
        dest = subs / student / NB / f"{NB}.ipynb"
        dest.parent.mkdir(parents=True)
        shutil.copy(SOLUTIONS_DIR / NB / f"{NB}.ipynb", dest)
    cases, whole = tmp_path / "out_cases", tmp_path / "out_all"
    proc = _cli("grade", str(subs), "--out", str(cases), "--jobs", "1", "--shard", "1/2",
                "--credit", "cases")
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = _cli("grade", str(subs), "--out", str(whole), "--jobs", "1", "--shard", "2/2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    [a] = _records(cases)
    [b] = _records(whole)
    assert (a["student_id"], a["credit"]) == (first, "cases")          # recorded
    assert (b["student_id"], b["credit"]) == (second, "all")
    assert a["points"] == a["max_points"] > 0 and b["points"] == b["max_points"]

    # merge: refused, also with --allow-mixed, and nothing written
    merged = tmp_path / "merged"
    for extra in ((), ("--allow-mixed",)):
        proc = _cli("merge", str(cases), str(whole), "--out", str(merged), *extra)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"{cases} was graded with --credit cases and {whole} with --credit all" \
            in proc.stderr, proc.stderr
        assert not (merged / "results.jsonl").exists()

    # --resume with another setting than the stopped run's: refused, journal kept
    journal = cases / "results.partial.jsonl"          # a stopped run's journal
    shutil.copy(cases / "results.jsonl", journal)
    before = journal.read_text()
    proc = _cli("grade", str(subs), "--out", str(cases), "--jobs", "1", "--shard", "1/2",
                "--resume")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "1 notebook(s) in the journal" in proc.stderr
    assert "were graded with --credit cases, and this run asks for --credit all" in proc.stderr
    assert journal.read_text() == before
    # ... and with the same setting it resumes: nothing is left to grade
    proc = _cli("grade", str(subs), "--out", str(cases), "--jobs", "1", "--shard", "1/2",
                "--resume", "--credit", "cases")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "resume: 1 notebook(s) already graded" in proc.stderr
    assert [r["credit"] for r in _records(cases)] == ["cases"] and not journal.exists()

    # --student into a folder whose other students were graded with another setting
    proc = _cli("grade", str(subs), "--out", str(cases), "--jobs", "1", "--student", second)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"1 notebook(s) of the other students in {cases} were graded with --credit " \
        "cases, and this run asks for --credit all" in proc.stderr
    assert [r["student_id"] for r in _records(cases)] == [first]     # left as it was
