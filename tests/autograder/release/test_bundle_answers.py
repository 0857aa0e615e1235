"""The student bundle holds no answer, checked by behaviour (issue 23, finding 6).

Every function of every module of the bundle's ``helpers`` (private ones and class
methods too, found by walking the modules: tests/autograder/release/_bundle_probe.py) is called, in a
process that imports the bundle's package, with the visible inputs of every exercise the
bundle leaves out, adapted to its signature when possible, every exception caught, each
call limited in time. The test fails if any call returns that exercise's answer as the
judge sees it (``helpers.judge.compare(name, case, got) is None``), unless the output
is one of the inputs returned unchanged (a case whose answer is an error is skipped,
and an answer of at most one number counts when the function answers two cases). The recorded worked examples are left out of the probed copy: they replay
the notebooks' own inputs, public by design. A syntax-tree comparison (test_bundle.py) misses
an answer written another way, such as a model's own fast path; this does not.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder.release import bundle as bundle_mod
from autograder.engine import course_calls as bundle_calls
from helpers import exercises, judge

ALL = list(exercises.NOTEBOOKS)
PROBE = Path(__file__).with_name("_bundle_probe.py")


def _left_out(bundle: Path) -> list[str]:
    import json

    revealed = set(json.loads((bundle / "bundle.json").read_text())["revealed"])
    return [n for a in ALL if a not in revealed for n in exercises.NOTEBOOKS[a]]


def answers_in(bundle: Path, names: list[str], work: Path, timeout: int = 1500) -> list[str]:
    """``"function gives <exercise>'s answer on visible case <case>"`` for every function
    of the bundle's helpers that answers one of exercises ``names``."""
    cases, index = [], {}
    for name in names:
        for i, case in enumerate(judge.cases(name)):
            if case.is_sampling or "raises" in (case.scenario or ""):
                continue                  # no one answer; any error is "the answer"
            index[(name, i)] = case
            args, kwargs = case.fresh_args()
            cases.append((name, i, args, kwargs, case.scenario, case.expected()))
    table = bundle / "helpers" / bundle_calls.TABLE_FILE
    if table.exists():
        # The recorded worked examples replay the course's outputs on the notebooks' own
        # inputs, some of which are visible cases (public by design: their expected
        # outputs are stored for the instant checks; test_bundle.py checks that no hidden
        # case's output is recorded). Probe what the code computes: a copy without them.
        copy = work / "probe-bundle"
        shutil.copytree(bundle / "helpers", copy / "helpers",
                        ignore=shutil.ignore_patterns(bundle_calls.TABLE_FILE, "__pycache__"))
        bundle = copy
    inp, outp = work / "probe-in.pkl", work / "probe-out.pkl"
    inp.write_bytes(pickle.dumps(cases))
    run = work / "probe-cwd"
    run.mkdir(exist_ok=True)
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run([sys.executable, "-I", str(PROBE), str(bundle), str(inp), str(outp)],
                            cwd=run, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    hits: dict[tuple[str, str], set[str]] = {}
    for where, name, i, got in pickle.loads(outp.read_bytes()):
        case = index[(name, i)]
        if judge.compare(name, case, got) is None:
            hits.setdefault((where, name), set()).add(case.name)
    leaks = []
    for (where, name), found in hits.items():
        # an answer of one number (a size-1 case, a scalar) is hit by chance by many a
        # function: it counts when the function answers two cases or more
        if len(found) < 2 and all(np.size(index[(name, i)].expected()) <= 1
                                  for (n, i) in index if n == name and
                                  index[(n, i)].name in found):
            continue
        leaks += [f"{where} gives {name}'s answer on visible case {c!r}" for c in sorted(found)]
    return sorted(leaks)


@pytest.mark.parametrize("assignment", ["06_multi_head_attention", "07_transformer_block"])
def test_no_function_of_a_homework_bundle_returns_a_left_out_answer(assignment, tmp_path):
    built = tmp_path / "hw"
    bundle_mod.build(built, [assignment], reveal=[a for a in ALL if a < assignment],
                     worked_examples=False)
    names = _left_out(built)
    assert set(exercises.NOTEBOOKS[assignment]) | {"layer_norm", "llama_block"} <= set(names)
    leaks = answers_in(built, names, tmp_path)
    assert not leaks, "\n".join(leaks)


def test_the_probe_finds_an_answer_left_in_the_bundle(tmp_path):
    """The check itself: a bundle with ``split_heads`` revealed has its answer."""
    built = tmp_path / "hw"
    bundle_mod.build(built, ["07_transformer_block"], reveal=["06_multi_head_attention"],
                     worked_examples=False)
    leaks = answers_in(built, ["split_heads"], tmp_path)
    assert any(leak.startswith("helpers.reference:split_heads gives") for leak in leaks), leaks


@pytest.mark.slow
def test_no_function_of_the_whole_course_bundle_returns_an_answer(whole_course_bundle,
                                                                   tmp_path):
    names = _left_out(whole_course_bundle)
    assert names == list(exercises.names())
    leaks = answers_in(whole_course_bundle, names, tmp_path, timeout=3600)
    assert not leaks, "\n".join(leaks)


# ---------------------------------------------------------------------------------------
# The grader's copy of helpers follows the same rule (autograder/isolation/helpers_copy.py
# stubs what an exercise refuses): an answer that calls a model's fast path earns nothing.
# ---------------------------------------------------------------------------------------

_FAST_PATH_ANSWERS = {
    "06_multi_head_attention": {
        "split_heads": "from helpers.llama.model import _split_heads\n\n"
                       "def split_heads(X, n_heads):\n"
                       "    X = np.asarray(X, dtype=float)\n"
                       "    return np.ascontiguousarray(_split_heads(X, n_heads))\n",
        "merge_heads": "import helpers.llama.model as _m\n\n"
                       "def merge_heads(H):\n"
                       "    return _m._merge_heads(np.asarray(H, dtype=float))\n",
    },
    "07_transformer_block": {
        "layer_norm": "from helpers.llama import model as _m\n\n"
                      "def layer_norm(x, gamma, beta, eps=1e-5):\n"
                      "    x = np.asarray(x, dtype=float)\n"
                      "    centred = x - x.mean(axis=-1, keepdims=True)\n"
                      "    return _m._rms_norm_float32(centred, np.asarray(gamma, dtype=float), eps)"
                      " + beta\n",
    },
}


@pytest.mark.slow
def test_an_answer_calling_a_models_fast_path_earns_nothing(tmp_path):
    import csv
    import json

    from autograder import REPO_ROOT, SOLUTIONS_DIR

    subs = tmp_path / "submissions"
    for assignment, answers in _FAST_PATH_ANSWERS.items():
        nb = json.loads((SOLUTIONS_DIR / assignment / f"{assignment}.ipynb").read_text())
        for cell in nb["cells"]:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if gid in answers:
                cell["source"] = answers[gid]
        path = subs / "mallory" / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb), encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cells = {(r["assignment"], r["grade_id"]): r
             for r in csv.DictReader((out / "grades.csv").open()) if r["kind"] == "test"}
    for assignment, answers in _FAST_PATH_ANSWERS.items():
        for gid in answers:
            row = cells[(assignment, f"test_{gid}")]
            assert float(row["points"]) == 0, row
            assert "must be your own implementation" in row["message"], row
    # the rest of the notebooks (the solutions' own answers) earn their points
    rest = [r for (a, gid), r in cells.items() if gid[5:] not in _FAST_PATH_ANSWERS[a]]
    assert rest and all(r["points"] == r["max_points"] for r in rest), rest
