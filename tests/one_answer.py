"""A one-student class built from a solution notebook with some answers replaced, graded
by the real command: the tests of grading truth and of the grader's "Where it goes wrong"
share it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.notebook import cells as nbcells


def with_answer(assignment: str, answers: dict[str, str]) -> dict:
    nb = json.loads((SOLUTIONS_DIR / assignment / f"{assignment}.ipynb").read_text("utf-8"))
    for cell in nb["cells"]:
        gid = nbcells.nbgrader(cell).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    return nb


def grade_one(tmp_path: Path, assignment: str, answers: dict[str, str], *extra: str
              ) -> tuple[dict[str, dict], dict]:
    """``python -m autograder grade`` on a one-student class: (grades.csv rows by
    grade_id, the student's record of results.jsonl)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    path = subs / "student" / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(with_answer(assignment, answers)), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1", *extra], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["grade_id"]: r for r in csv.DictReader(f) if r["assignment"] == assignment}
    record = next(r for r in map(json.loads, (out / "results.jsonl").read_text("utf-8")
                                 .splitlines()) if r["assignment"] == assignment)
    return rows, record


def feedback_of(record: dict, grade_id: str) -> str:
    cell = next(c for c in record["cells"] if c["grade_id"] == grade_id)
    return f"{cell['message']}\n{cell['feedback']}"
