"""``make check``: the smoke test an instructor runs first, once the set-up is done (a few
minutes on two busy cores): the environment check, one notebook run top to bottom, and a
part of the example class graded by the real command and compared with its expected
table (tests/fixtures/examples/EXPECTED.json). ``make test`` runs these too."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autograder import SOLUTIONS_DIR
from notebook_helpers import execute, kernel_env
from expected_examples import EXPECTED, assert_graded_as_expected

pytestmark = pytest.mark.smoke

#: The students and assignments graded: a right answer, each typical mistake, nothing
#: answered, a broken file (a small, quick part of the class).
STUDENTS = ("perfect", "typical_mistakes_1", "typical_mistakes_2", "unanswered", "invalid_json")
ASSIGNMENTS = ("02_softmax", "05_masking_cross_attention")


def test_the_environment_check_finds_nothing_missing():
    done = subprocess.run([sys.executable, "-m", "helpers.environment_check"],
                          capture_output=True, text=True, timeout=300, env=kernel_env())
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_notebook_runs_top_to_bottom():
    path = SOLUTIONS_DIR / "02_softmax" / "02_softmax.ipynb"
    run = execute(path, allow_errors=False)
    assert run.failure is None, run.failure
    errors = [o for c in run.nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == []


def test_part_of_the_example_class_grades_as_its_table_says(example_class, tmp_path):
    subs = tmp_path / "submissions"
    for student in STUDENTS:
        for assignment in ASSIGNMENTS:
            src = example_class / "submissions" / student / assignment
            if src.is_dir():
                (subs / student).mkdir(parents=True, exist_ok=True)
                subprocess.run(["cp", "-r", str(src), str(subs / student / assignment)], check=True)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
                           "--cell-timeout", "10", "--timeout", "60", "--memory-mb", "1024"],
                          capture_output=True, text=True, timeout=900, env=kernel_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    graded = 0
    for record in records:
        rel = f"{record['assignment']}/{record['notebook']}"
        if record["assignment"] in ASSIGNMENTS and rel in EXPECTED[record["student_id"]]["notebooks"]:
            assert_graded_as_expected(record, record["student_id"], rel)
            graded += 1
    assert graded >= len(STUDENTS), records
