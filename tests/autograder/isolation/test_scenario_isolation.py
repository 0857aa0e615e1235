"""No verdict decided in a child (issue 23, docs/threat_model.md).

A scenario case's child sends raw observations; the trusted process decides what they
mean. The child's driver is a frozen copy of the scenario, bound before the learner's
cells run: redefining ``scenario_*``, patching ``helpers.exercises`` modules or builtins
in an answer cell changes nothing. The attacks are those of ``tests/attacks/scenarios.py``
(also graded in the catalogue run of tests/autograder/isolation/test_attacks.py); here each is graded alone,
beside an honest notebook, and one through the real command.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attacks.scenarios import ATTACKS
from autograder import engine
from autograder.isolation import wire
from catalogue import student_notebook
from helpers import course
from helpers.course import judge

REPO = Path(__file__).resolve().parents[3]
BY_KEY = {a.key: a for a in ATTACKS}


def _grade(tmp_path: Path, assignment: str, answers: dict | None, name: str):
    nb = student_notebook(assignment, answers or {})
    path = tmp_path / name / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    result = engine.grade_notebook(path, assignment)
    return {c.grade_id: c for c in result.cells if c.kind == "test"}


def _decided(name: str, fn, case):
    """What the grader judges for ``case``: the observations, across the wire, decided."""
    args, kwargs = case.fresh_args()
    observed = course.resolve(case.scenario)(fn, *args, **kwargs)
    return course.decide(case.scenario, wire.decode(wire.encode(observed)))


def test_scenarios_send_observations_and_the_trusted_side_decides():
    swt = course.get("softmax_with_temperature")
    raising = next(c for c in swt.all_cases() if c.scenario)

    def checks(z, temperature):
        if temperature <= 0:
            raise ValueError("T")
        return np.asarray(z) / temperature

    def never_checks(z, temperature):
        with np.errstate(all="ignore"):
            return np.asarray(z) / temperature

    def raises_key_error(z, temperature):
        raise KeyError("T")

    observed = course.resolve(raising.scenario)(never_checks, *raising.args)
    assert isinstance(observed, dict) and observed["raised"] is None    # data, no verdict
    assert _decided("softmax_with_temperature", checks, raising) == "ValueError"
    assert "instead of raising" in _decided("softmax_with_temperature", never_checks, raising)
    assert "KeyError instead of ValueError" in _decided("softmax_with_temperature",
                                                         raises_key_error, raising)
    llama = course.get("llama_block")
    cache_case = next(c for c in llama.all_cases() if c.scenario)
    observed = course.resolve(cache_case.scenario)(llama.reference, *cache_case.args)
    assert set(observed) == {"keys", "row"}
    got = _decided("llama_block", llama.reference, cache_case)
    assert judge.compare(course.get("llama_block"), cache_case, got) is None


def test_frozen_scenario_ignores_rebound_modules_and_builtins(monkeypatch):
    """The executor's copy of a scenario keeps the names it had when it was bound."""
    import builtins

    from autograder.isolation import runners

    spec = course.get("softmax_with_temperature").all_cases()
    spec = next(c for c in spec if c.scenario).scenario
    frozen = runners.observers([spec])[0]
    import helpers.course.scenarios as scen

    monkeypatch.setattr(scen, "scenario_raises_value_error", lambda *a, **k: "ValueError")
    monkeypatch.setattr(scen, "_COURSE", "/nowhere")
    monkeypatch.setattr(builtins, "ValueError", KeyError)
    monkeypatch.setattr(builtins, "issubclass", lambda a, b: True)

    def raises_key_error(z, temperature):
        raise KeyError("T")

    observed = frozen(raises_key_error, [1.0], 0.0)
    monkeypatch.undo()
    assert observed["value_error"] is False and observed["raised"] == "KeyError"
    assert observed["course"] != "/nowhere"


@pytest.mark.slow
@pytest.mark.parametrize("key", ["scenario_redefined_no_temperature_check",
                                 "scenario_builtins_replaced"])
def test_softmax_attacks_lose_their_cell_and_nothing_else(tmp_path, key):
    attack = BY_KEY[key]
    honest = _grade(tmp_path, attack.assignment, None, "honest")
    got = _grade(tmp_path, attack.assignment, {attack.target: attack.code}, "attacker")
    for gid, cell in got.items():
        want = 0 if gid in attack.lose else honest[gid].points
        assert cell.points == want, (gid, cell.points, cell.message)
    assert all(honest[g].points == honest[g].max_points for g in honest)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["scenario_redefined_no_kv_cache",
                                 "scenario_module_attributes_patched"])
def test_llama_attacks_lose_their_cell(tmp_path, key):
    attack = BY_KEY[key]
    got = _grade(tmp_path, attack.assignment, {attack.target: attack.code}, "attacker")
    assert got["test_llama_block"].points == 0, got["test_llama_block"].message
    assert "cache" in got["test_llama_block"].message
    for gid in ("test_rms_norm", "test_apply_rope", "test_swiglu"):
        assert got[gid].points == got[gid].max_points, (gid, got[gid].message)


@pytest.mark.slow
def test_honest_llama_block_keeps_full_marks(tmp_path):
    got = _grade(tmp_path, "10_modern_llm", None, "honest")
    assert got["test_llama_block"].points == got["test_llama_block"].max_points, \
        got["test_llama_block"].message


@pytest.mark.slow
def test_redefined_scenario_through_the_real_command(tmp_path):
    """A one-student class graded by ``python -m autograder grade``: the answer cell
    that redefines the scenario scores 0 on softmax_with_temperature, full on softmax."""
    attack = BY_KEY["scenario_redefined_no_temperature_check"]
    subs = tmp_path / "submissions"
    nb = student_notebook(attack.assignment, {attack.target: attack.code})
    path = subs / "mallory" / attack.assignment / f"{attack.assignment}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1"], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in
               (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    cells = {c["grade_id"]: c for r in results for c in r.get("cells", [])}
    assert cells["test_softmax_with_temperature"]["points"] == 0, cells
    assert cells["test_softmax"]["points"] == cells["test_softmax"]["max_points"], cells
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r.get("student", r.get("student_id", "mallory")) for r in rows)


def test_frozen_same_seed_scenario_keeps_its_generator(monkeypatch):
    """Patching ``np.random.default_rng`` (or the module's ``np``) after the scenario was
    bound does not change the generators it hands to ``generate``."""
    from autograder.isolation import runners

    case = next(c for c in course.get("generate").all_cases() if c.scenario)
    frozen = runners.observers([case.scenario])[0]
    import helpers.exercises.generate as gen_module

    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: np.random.Generator(
        np.random.PCG64(0)))
    monkeypatch.setattr(gen_module, "np", None)
    seen = []

    def generate(ids, params, n_heads, n_new, temperature=0.0, rng=None):
        seen.append(int(rng.integers(1 << 30)))
        return list(ids)

    args, kwargs = case.fresh_args()
    frozen(generate, *args, **kwargs)
    monkeypatch.undo()
    first = kwargs["seed"]
    assert seen[0] == seen[1] == int(np.random.default_rng(first).integers(1 << 30))
    assert seen[2] != seen[0]
