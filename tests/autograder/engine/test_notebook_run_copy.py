"""The notebook run's copy of ``helpers`` (issue 23, "No secret in any child";
``autograder/isolation/helpers_copy.py``, ``prepare_helpers(..., notebook_run=True)``).

* The copy is what a student of the assignment has: built by the student bundle's own
  builder (``autograder/isolation/student_helpers.py``), file for file the bundle's
  ``helpers`` but for the recorded worked examples, so the bundle's behavioural scan
  (tests/autograder/release/test_bundle_answers.py) holds for it. No exercise has a
  hidden case or a known mistake, no reference answers (a stub calls the learner's own
  function, else says which exercise to finish), the private case modules are gone,
  the assignment's visible cases are the course's.
* Through the real command, the course's solution of every notebook still earns full
  marks, and no cell of any notebook run raises (the stubs break no check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.isolation import helpers_copy
from autograder.release import bundle
from autograder.run import secret as hidden

_PROBE = r'''
import json, sys, types
sys.path.insert(0, sys.argv[1])
import helpers
from helpers import course
from helpers.course import judge
assert helpers.__file__.startswith(sys.argv[1]), helpers.__file__
out = {"hidden": {}, "mistakes": {}, "visible": {}, "private": [], "softmax": None}
for name in course.names():
    ex = course.get(name)
    out["hidden"][name] = len(judge.cases(ex, hidden=True))
    out["mistakes"][name] = len(ex.mistakes)
    out["visible"][name] = [c.name for c in judge.cases(ex, hidden=False)]
import importlib
for private in ("_inputs", "_variants", "_bert_inputs"):
    try:
        importlib.import_module("helpers.exercises." + private)
        out["private"].append(private)
    except ImportError:
        pass
import numpy as np
z = np.array([0.0, np.log(3.0)])
try:
    helpers.softmax(z)
    out["softmax"] = "answered"
except NotImplementedError as exc:
    out["softmax"] = str(exc)
main = sys.modules["__main__"]
def softmax(z, axis=-1):
    return np.full(np.shape(z), 7.0)
main.softmax = softmax
out["yours"] = helpers.softmax(z).tolist()
print(json.dumps(out))
'''


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_notebook_runs_copy_is_what_a_student_of_the_assignment_has(tmp_path):
    from helpers import course
    from helpers.course import judge

    assignment = "07_transformer_block"
    dest = helpers_copy.prepare_helpers(tmp_path / "nb", notebook_run=True,
                                        assignment=assignment)
    done = subprocess.run([sys.executable, "-c", _PROBE, str(dest)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    names = course.names()
    assert sorted(seen["hidden"]) == sorted(names)
    assert {n: h for n, h in seen["hidden"].items() if h != 0} == {}
    assert {n: m for n, m in seen["mistakes"].items() if m} == {}
    assert sum(len(course.get(n).mistakes) for n in names) > 100   # the course has them
    assert seen["private"] == []
    for name in names:                     # the assignment's visible cases, the course's
        want = ([c.name for c in judge.cases(course.get(name), hidden=False)]
                if name in course.NOTEBOOKS[assignment] else [])
        assert seen["visible"][name] == want, name
    # no reference answers, even of another notebook: the learner's own, else a message
    assert "softmax" in seen["softmax"] and "02_softmax" in seen["softmax"], seen["softmax"]
    assert seen["yours"] == [7.0, 7.0]
    # the same builder as the student bundle's: the same files, but for the recordings
    built = tmp_path / "bundle"
    bundle.build(built, [assignment], worked_examples=False)
    ours, theirs = _files(dest / "helpers"), _files(built / "helpers")
    assert sorted(ours) == sorted(theirs)
    assert [f for f in ours if ours[f] != theirs[f]] == []
    text = (dest / "helpers" / "exercises" / "softmax.py").read_text()
    assert "rows_scales" not in text and "_naive_softmax(z, axis)" not in text


def test_every_solution_earns_full_marks_and_no_notebook_cell_raises(tmp_path):
    """One student hands in the course's solution of every notebook (hidden tests and all):
    every autograded point earned, unflagged, each written answer left to the grader's
    hand. The grader runs with its notebook run's cell lines written to a file, so that an
    error in any cell (a demo calling a stub, a check that cannot find its cases) is seen,
    not only the points."""
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    notebooks = sorted(p for p in SOLUTIONS_DIR.glob("*/*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts)
    assert len(notebooks) >= 13
    for path in notebooks:
        dest = subs / "sol" / path.parent.name / path.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(path.read_bytes())
    lines = tmp_path / "cell_lines.jsonl"
    script = (
        "import json, sys\n"
        "from autograder.engine import grading\n"
        "_run = grading._notebook_run\n"
        "def _logged(merged, source, *args, **kwargs):\n"
        "    run = _run(merged, source, *args, **kwargs)\n"
        f"    with open({str(lines)!r}, 'a') as fh:\n"
        "        for i, line in sorted(run.by_cell.items()):\n"
        "            fh.write(json.dumps({'notebook': source.assignment, 'cell': i,\n"
        "                                 'error': line.get('error'),\n"
        "                                 'stderr': line.get('stderr')}) + '\\n')\n"
        "    return run\n"
        "grading._notebook_run = _logged\n"
        "from autograder.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    environ = {k: v for k, v in os.environ.items() if k != hidden.ENV}
    environ.update(TMPDIR=str(tmp), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", script, "grade", str(subs), "--out", str(out),
                           "--jobs", "1", "--secret-file", str(tmp_path / "k.key")],
                          cwd=REPO_ROOT, env=environ, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["assignment"] for r in records) == sorted(p.parent.name for p in notebooks)
    for r in records:
        assert r["status"] == "ok", (r["assignment"], r.get("message"))
        assert r["flags"] == [], (r["assignment"], r["flags"])
        for c in r["cells"]:
            if c["kind"] == "test":
                assert c["points"] == c["max_points"] and c["message"] == "passed", \
                    (r["assignment"], c)
            else:                                    # a written answer: graded by hand
                assert (c["kind"], c["status"], c["points"]) == (
                    "manual", "needs_manual_grade", 0), (r["assignment"], c)
        assert any(c["kind"] == "test" for c in r["cells"]), r["assignment"]
    logged = [json.loads(x) for x in lines.read_text().splitlines()]
    assert {x["notebook"] for x in logged} == {p.parent.name for p in notebooks}
    errors = [x for x in logged if x["error"] or (x["stderr"] or "").strip()]
    assert errors == []
