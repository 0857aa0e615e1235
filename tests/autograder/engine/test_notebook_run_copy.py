"""The notebook run's copy of ``helpers`` (issue 23, "No secret in any child";
``autograder/isolation/helpers_copy.py``, ``prepare_helpers(..., notebook_run=True)``).

* In the copy, no exercise has a hidden case or a known mistake, and every function of
  ``helpers/exercises/`` that builds cases, draws inputs or is a mistake is a stub; the
  visible cases are the same as the course's, the references stay (demos call them).
* Through the real command, the course's solution of every notebook still earns full
  marks, and no cell of any notebook run raises (the stubs break no demo, plot or check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.isolation import helpers_copy
from autograder.run import secret as hidden

_PROBE = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import helpers
from helpers import exercises, judge
assert helpers.__file__.startswith(sys.argv[1]), helpers.__file__
out = {"hidden": {}, "mistakes": {}, "visible": {}, "stubbed": {}, "softmax": None}
for name in exercises.names():
    ex = exercises.get(name)
    try:
        out["hidden"][name] = len(judge.cases(name, hidden=True))
    except Exception as exc:
        out["hidden"][name] = type(exc).__name__
    out["mistakes"][name] = len(ex.mistakes)
    out["visible"][name] = [c.name for c in judge.cases(name, hidden=False)]
import numpy as np
from helpers.exercises import _inputs, _variants, softmax as sm
for label, fn, args in (("_inputs._normal", _inputs._normal, (21, (4, 6), 3.0)),
                        ("_variants._naive_softmax", _variants._naive_softmax,
                         (np.zeros(3), -1)), ("softmax.cases", sm.cases, ())):
    try:
        fn(*args)
        out["stubbed"][label] = False
    except RuntimeError as exc:
        out["stubbed"][label] = "hidden while" in str(exc)
out["softmax"] = helpers.softmax(np.array([0.0, np.log(3.0)])).tolist()
print(json.dumps(out))
'''


def test_the_notebook_runs_copy_has_the_visible_cases_only(tmp_path):
    from helpers import exercises, judge

    dest = helpers_copy.prepare_helpers(tmp_path / "nb", notebook_run=True)
    done = subprocess.run([sys.executable, "-c", _PROBE, str(dest)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    names = exercises.names()
    assert sorted(seen["hidden"]) == sorted(names)
    assert {n: h for n, h in seen["hidden"].items() if h != 0} == {}
    assert {n: m for n, m in seen["mistakes"].items() if m} == {}
    assert sum(len(exercises.get(n).mistakes) for n in names) > 100   # the course has them
    for name in names:                     # the same visible cases as the course's
        assert seen["visible"][name] == [c.name for c in judge.cases(name, hidden=False)], name
    assert seen["stubbed"] == {"_inputs._normal": True, "_variants._naive_softmax": True,
                               "softmax.cases": True}
    assert max(abs(a - b) for a, b in zip(seen["softmax"], [0.25, 0.75])) < 1e-12
    # and nothing of the cases' source is in the copy's exercise modules
    text = (dest / "helpers" / "exercises" / "softmax.py").read_text()
    assert "rows_scales" not in text and "_naive_softmax(z, axis)" not in text


def test_every_solution_earns_full_marks_and_no_notebook_cell_raises(tmp_path):
    """One student hands in the course's solution of every notebook; the grader runs with
    its notebook run's cell lines written to a file, so that an error in any cell (a demo
    calling a stub, a check that cannot find its cases) is seen, not only the points."""
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
    logged = [json.loads(x) for x in lines.read_text().splitlines()]
    assert {x["notebook"] for x in logged} == {p.parent.name for p in notebooks}
    errors = [x for x in logged if x["error"] or (x["stderr"] or "").strip()]
    assert errors == []
