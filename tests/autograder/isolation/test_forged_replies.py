"""Forged replies through the real command (issue 23, item 1): students whose correct
softmax first writes forged reply lines of one kind each (``attacks.boundary``'s
FORGERIES: the dtype-string bomb, a line and a value nested 200,000 deep, 1.2 million
items, an array header claiming 1.2 GB over 8 bytes, a wrong PCG64 state) are graded in
one run of ``python -m autograder grade`` next to an honest student. The grader exits 0,
each forger's softmax cells are ``invalid`` with a message naming the broken rule (never
``grader_error``), their other cells and the honest student keep full marks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attacks.boundary import FORGERIES, forging_softmax
from autograder import REPO_ROOT
from catalogue import cells_testing, graded_test_cells, student_notebook
from catalogue.run import _read_records, _read_rows

pytestmark = pytest.mark.slow

ASSIGNMENT = "02_softmax"
HONEST = "honest"
WHY = {"dtype_bomb": "bad MT19937 state", "deep_line": "nested deeper",
       "deep_value": "nested deeper", "many_items": "too many items",
       "shape_mismatch": "does not match", "wrong_rng_state": "bad PCG64 state"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("forged")
    submissions, out = base / "SUBMISSIONS", base / "OUT"
    students = {HONEST: student_notebook(ASSIGNMENT)}
    for kind in FORGERIES:
        students[f"forger-{kind}"] = student_notebook(
            ASSIGNMENT, {"softmax": forging_softmax((kind,), right=True)})
    for sid, nb in students.items():
        path = submissions / sid / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submissions),
                           "--out", str(out), "--jobs", "1", "--timeout", "60",
                           "--cell-timeout", "30"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    rows = _read_rows(out) if (out / "grades.csv").exists() else {}
    records = _read_records(out) if (out / "results.jsonl").exists() else {}
    return proc, rows, records


def test_the_grader_survives_every_forged_reply(graded):
    proc, rows, records = graded
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {r["status"] for r in records.values()} & {"grader_error"} == set()
    assert len([k for k in records if k[1] == ASSIGNMENT]) == 1 + len(FORGERIES)


def test_the_honest_student_keeps_every_point(graded):
    _, rows, _ = graded
    points = {g: float(r["points"]) for g, r in rows[(HONEST, ASSIGNMENT)].items()
              if r["kind"] == "test"}
    assert points == graded_test_cells(ASSIGNMENT)


@pytest.mark.parametrize("kind", FORGERIES)
def test_a_forged_reply_makes_the_exercise_invalid(graded, kind):
    _, rows, records = graded
    mine = rows[(f"forger-{kind}", ASSIGNMENT)]
    softmax_cells = set(cells_testing("softmax", ASSIGNMENT))
    assert softmax_cells
    for gid, row in mine.items():
        if row["kind"] != "test":
            continue
        if gid in softmax_cells:
            assert (row["status"], float(row["points"])) == ("invalid", 0.0), row
            assert "breaks the grader's rules" in row["message"], row["message"]
            assert WHY[kind] in row["message"], row["message"]
        else:                           # the forger's other answers are the solutions
            assert float(row["points"]) == graded_test_cells(ASSIGNMENT)[gid], row
    assert records[(f"forger-{kind}", ASSIGNMENT)]["status"] != "grader_error"
