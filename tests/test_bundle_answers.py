"""The student bundle holds no answer, checked by behaviour (issue 23, finding 6).

Every function of every module of the bundle's ``helpers`` (private ones and class
methods too, found by walking the modules: tests/_bundle_probe.py) is called, in a
process that imports the bundle's package, with the visible inputs of every exercise the
bundle leaves out, adapted to its signature when possible, every exception caught, each
call limited in time. The test fails if any call returns that exercise's answer as the
judge sees it (``helpers.judge.compare(name, case, got) is None``), unless the output
is one of the inputs returned unchanged. A syntax-tree comparison (test_bundle.py) misses
an answer written another way, such as a model's own fast path; this does not.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.release import bundle as bundle_mod
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
            if case.is_sampling:
                continue
            index[(name, i)] = case
            args, kwargs = case.fresh_args()
            cases.append((name, i, args, kwargs, case.scenario, case.expected()))
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
    leaks = []
    for where, name, i, got in pickle.loads(outp.read_bytes()):
        case = index[(name, i)]
        if judge.compare(name, case, got) is None:
            leaks.append(f"{where} gives {name}'s answer on visible case {case.name!r}")
    return sorted(set(leaks))


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
