"""Issue 36, finding 6: no silent pass outside the grader.

The student bundle holds no hidden case, so ``check(..., hidden=True)`` there has nothing
to run. It used to print "0/0 checks passed", and plain ``nbgrader autograde`` on a hub
running the bundle (docs/jupyterhub) gave such a test cell its points whatever the
answer. It raises instead, saying that the grader judges hidden cases; the real grader,
whose notebook run leaves hidden tests out (it judges them in its isolated runs), is
unaffected (tests/autograder/release/test_bundle.py grades a notebook from the bundle).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import SOLUTIONS_DIR
from autograder.notebook.source import BEGIN_HIDDEN
from autograder.release import bundle as bundle_mod
from autograder.release.notebooks import generate, nbgrader_command, nbgrader_env

ASSIGNMENT = "01_dot_products"
MESSAGE = "hidden cases are graded by `python -m autograder grade`"


def _test_cells(nb: dict) -> dict[str, dict]:
    """grade_id -> test cell (graded, not an answer) of a notebook."""
    out = {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("grade") and not meta.get("solution"):
            out[meta["grade_id"]] = cell
    return out


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _errors(cell: dict) -> str:
    return " ".join(f"{o.get('ename')}: {o.get('evalue')}" for o in cell.get("outputs", [])
                    if o.get("output_type") == "error")


@pytest.mark.slow
def test_plain_nbgrader_on_the_bundle_scores_hidden_checks_zero_with_the_reason(tmp_path):
    """The model answers, autograded by plain nbgrader with the bundle's helpers (as on
    the documented hub): every test cell without a hidden block earns its points, every
    one with a hidden block scores 0 and says that the grader judges hidden cases."""
    from nbgrader.api import Gradebook

    bundle = tmp_path / "hw"
    bundle_mod.build(bundle, [ASSIGNMENT], worked_examples=False)
    course = tmp_path / "course"
    generate(course, [ASSIGNMENT])                 # the source, with its hidden tests
    solution = SOLUTIONS_DIR / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    submitted = course / "submitted" / "alice" / ASSIGNMENT / solution.name
    submitted.parent.mkdir(parents=True)
    shutil.copyfile(solution, submitted)
    env = dict(nbgrader_env(), PYTHONPATH=str(bundle), PYTHONDONTWRITEBYTECODE="1",
               TMPDIR=str(tmp_path))
    env.pop("PYTEST_CURRENT_TEST", None)
    done = subprocess.run(nbgrader_command(course, "autograde", ASSIGNMENT, "--force",
                                           "--log-level=ERROR"),
                          cwd=course, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    source = _test_cells(json.loads(solution.read_text(encoding="utf-8")))
    with_hidden = {g for g, c in source.items() if BEGIN_HIDDEN in _source(c)}
    assert with_hidden, sorted(source)
    graded = json.loads((course / "autograded" / "alice" / ASSIGNMENT / solution.name)
                        .read_text(encoding="utf-8"))
    cells = _test_cells(graded)
    for gid in source:
        if gid in with_hidden:
            assert MESSAGE in _errors(cells[gid]), (gid, _errors(cells[gid]))
        else:
            assert not _errors(cells[gid]), (gid, _errors(cells[gid]))
    gb = Gradebook(f"sqlite:///{course / 'gradebook.db'}", "transformers")
    try:
        scores = {g.name: (g.score, g.max_score) for g in
                  gb.find_submission_notebook(solution.stem, ASSIGNMENT, "alice").grades
                  if g.name in source}
    finally:
        gb.close()
    assert {g: s for g, (s, m) in scores.items() if g in with_hidden and s != 0} == {}
    assert {g: (s, m) for g, (s, m) in scores.items()
            if g not in with_hidden and s != m} == {}


def test_the_bundles_hidden_check_raises_and_the_visible_one_runs(tmp_path):
    """In the bundle's helpers (a fresh interpreter importing nothing of the repository),
    the visible check of the model answer passes and the hidden one raises with the
    reason, whatever the function (a wrong one too)."""
    bundle = tmp_path / "hw"
    bundle_mod.build(bundle, [ASSIGNMENT], worked_examples=False)
    code = (
        "import numpy as np\n"
        "from helpers.checks import check, CheckFailed\n"
        "def dot(a, b):\n    return float(np.dot(a, b))\n"
        "check('dot', dot)\n"
        "for fn in (dot, lambda a, b: 0.0):\n"
        "    try:\n        check('dot', fn, hidden=True)\n"
        "    except CheckFailed as exc:\n        print('RAISED', exc)\n"
        "    else:\n        print('PASSED')\n")
    env = dict(os.environ, PYTHONPATH=str(bundle), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("dot: ") and "checks passed" in lines[0], lines
    assert [line.startswith("RAISED") and MESSAGE in line for line in lines[1:]] == [True, True]


@pytest.mark.slow
def test_the_grader_still_judges_the_hidden_cases(tmp_path):
    """``python -m autograder grade`` (whose notebook run leaves the hidden tests out and
    whose isolated runs judge them) gives the model answers every point of the cells with
    hidden blocks, and none to a function that is right on the visible cases only."""
    import csv

    from autograder import REPO_ROOT

    solution = json.loads((SOLUTIONS_DIR / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    subs = tmp_path / "subs"
    for student, nb in (("right", solution), ("visible_only", _visible_only_dot(solution))):
        path = subs / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=900, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        cells = {(r["student_id"], r["grade_id"]): r for r in csv.DictReader(f)}
    with_hidden = {g for g, c in _test_cells(solution).items() if BEGIN_HIDDEN in _source(c)}
    for gid in with_hidden:
        right = cells[("right", gid)]
        assert (right["status"], right["points"]) == ("ok", right["max_points"]), right
    wrong = cells[("visible_only", "test_dot")]
    assert wrong["status"] == "failed" and float(wrong["points"]) == 0, wrong


def _visible_only_dot(solution: dict) -> dict:
    """The model answers, with a ``dot`` that answers the visible cases from a table of
    their outputs and returns 0 elsewhere."""
    from helpers import course
    from helpers.course import judge

    table = {repr([list(map(float, a)) for a in c.args]): float(c.expected())
             for c in judge.cases(course.get("dot"))}
    nb = json.loads(json.dumps(solution))
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "dot":
            cell["source"] = (f"TABLE = {table!r}\n"
                              "def dot(a, b):\n"
                              "    return TABLE.get(repr([list(map(float, a)), "
                              "list(map(float, b))]), 0.0)\n")
    return nb
