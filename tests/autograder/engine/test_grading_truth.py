"""Grading truth III (issue 22): each finding through the learner's instant check and
through ``python -m autograder grade`` on a one-student class built from the solution
notebook with one answer replaced (as ``tests/autograder/engine/test_engine.py`` builds its submissions).

* inputs unchanged: a function that modifies its input in place is a named mistake;
* dependencies from the code: every earlier course function a solution calls is in its
  exercise's ``uses`` (so a wrong one costs points once);
* tolerances from the exercise: a loss within float64 noise of an exact 0 passes, and a
  failure states the tolerances it was judged with;
* headlines: float32 overflow is named as such; an earlier function is blamed only when
  it is wrong on the inputs it was called with.
"""

from __future__ import annotations

import ast
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import SOLUTIONS_DIR
from autograder.notebook import cells as nbcells
from helpers import course
from helpers.checks import CheckFailed, check
from catalogue.multi_head_attention import WRONG as WRONG_MHA
from catalogue.transformer_block import CORRECT as CORRECT_BLOCKS
from one_answer import feedback_of as _feedback, grade_one

REPO_ROOT = Path(__file__).resolve().parents[3]
_nbg = nbcells.nbgrader


_source = nbcells.source_of


def _define(source: str, name: str):
    import numpy as np

    ns = {"np": np}
    exec(source, ns)
    return ns[name]


def _check_text(name: str, fn) -> str:
    with pytest.raises(CheckFailed) as info:
        check(name, fn)
    return str(info.value)


# ---------------------------------------------------------------------------------------
# 3. Inputs unchanged.
# ---------------------------------------------------------------------------------------

IN_PLACE_LAYER_NORM = """def layer_norm(x, gamma, beta, eps=1e-5):
    x -= x.mean(axis=-1, keepdims=True)
    return gamma * x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) + beta
"""


def test_in_place_layer_norm_fails_its_instant_check():
    text = _check_text("layer_norm", _define(IN_PLACE_LAYER_NORM, "layer_norm"))
    assert "modified its input `x` in place" in text, text


@pytest.mark.slow
def test_in_place_layer_norm_loses_its_points_once_in_the_grader(tmp_path):
    rows, record = grade_one(tmp_path, "07_transformer_block",
                             {"layer_norm": IN_PLACE_LAYER_NORM})
    assert float(rows["test_layer_norm"]["points"]) == 0, rows["test_layer_norm"]
    assert "modified its input `x` in place" in _feedback(record, "test_layer_norm")
    others = {g: r for g, r in rows.items() if g.startswith("test_") and g != "test_layer_norm"}
    assert all(float(r["points"]) == float(r["max_points"]) for r in others.values()), others


# ---------------------------------------------------------------------------------------
# 4. Dependencies from the code.
# ---------------------------------------------------------------------------------------


def _solution_dependencies() -> dict[str, set[str]]:
    """Exercise -> the exercises (of an earlier or the same notebook) its solution answer
    cell calls or names, read with ``ast`` from ``solutions/*/*.ipynb``."""
    order = list(course.NOTEBOOKS)
    found: dict[str, set[str]] = {}
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        notebook = path.parent.name
        if notebook not in course.NOTEBOOKS or ".ipynb_checkpoints" in path.parts:
            continue
        known = {n for nb in order[:order.index(notebook) + 1] for n in course.NOTEBOOKS[nb]}
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            gid = _nbg(cell).get("grade_id")
            if not nbcells.is_answer(cell) or gid not in course.names():
                continue
            tree = ast.parse(_source(cell))
            names = {n.id for n in ast.walk(tree)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            found[gid] = (names & known) - {gid}
    return found


def test_uses_lists_every_earlier_function_a_solution_calls():
    deps = _solution_dependencies()
    assert "simple_self_attention" in deps            # the reader sees the notebooks
    missing = {name: sorted(d - set(course.get(name).uses))
               for name, d in deps.items() if d - set(course.get(name).uses)}
    assert not missing, f"add these to the exercises' `uses`: {missing}"


SQRT_N_WEIGHTS = """def simple_attention_weights(X):
    X = np.asarray(X, dtype=np.float64)
    scores = X @ X.T / np.sqrt(X.shape[0])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""


@pytest.mark.slow
def test_a_wrong_simple_attention_weights_costs_points_once(tmp_path):
    rows, record = grade_one(tmp_path, "03_simple_self_attention",
                             {"simple_attention_weights": SQRT_N_WEIGHTS})
    assert float(rows["test_simple_attention_weights"]["points"]) == 0
    full = rows["test_simple_self_attention"]
    assert float(full["points"]) == float(full["max_points"]) > 0, full


# ---------------------------------------------------------------------------------------
# 5. Tolerances from the exercise.
# ---------------------------------------------------------------------------------------

EPS_CROSS_ENTROPY = """def cross_entropy(logits, targets):
    z = np.asarray(logits, dtype=float)
    m = z.max(axis=-1, keepdims=True)
    log_sum_exp = m[:, 0] + np.log(np.exp(z - m).sum(axis=-1) + 1e-7)   # a small eps
    t = np.asarray(targets, dtype=int)
    return float((log_sum_exp - z[np.arange(len(t)), t]).mean())
"""


def test_a_loss_within_float64_noise_of_zero_passes_the_instant_check(capsys):
    fn = _define(EPS_CROSS_ENTROPY, "cross_entropy")
    check("cross_entropy", fn)
    check("cross_entropy", fn, hidden=True)       # confident_right: a loss of 0


def test_a_failure_states_the_tolerances_it_was_judged_with():
    text = _check_text("cross_entropy", lambda logits, targets: 1.5)
    assert "rtol=1e-06, atol=1e-06" in text, text
    import numpy as np

    text = _check_text("softmax", lambda z, axis=-1: np.zeros(np.shape(z)))
    assert "rtol=1e-06, atol=1e-08" in text, text


@pytest.mark.slow
def test_a_loss_within_float64_noise_of_zero_earns_the_points(tmp_path):
    rows, _ = grade_one(tmp_path, "08_language_model", {"cross_entropy": EPS_CROSS_ENTROPY})
    row = rows["test_cross_entropy"]
    assert float(row["points"]) == float(row["max_points"]) > 0, row


# ---------------------------------------------------------------------------------------
# 7. Headlines that blame the right thing.
# ---------------------------------------------------------------------------------------

FLOAT32_SOFTMAX = """def softmax(z, axis=-1):
    z = np.asarray(z, dtype=np.float32)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""


def test_a_float32_softmax_is_told_about_float32_not_the_maximum():
    text = _check_text("softmax", _define(FLOAT32_SOFTMAX, "softmax"))
    assert "your result is float32: 1e300 overflows it" in text, text
    assert "float64" in text and "maximum" not in text, text


@pytest.mark.slow
def test_a_float32_softmax_is_told_about_float32_by_the_grader(tmp_path):
    rows, record = grade_one(tmp_path, "02_softmax", {"softmax": FLOAT32_SOFTMAX})
    assert float(rows["test_softmax"]["points"]) == 0
    assert "float32: 1e300 overflows it" in rows["test_softmax"]["message"], rows["test_softmax"]


# a softmax that fails its own check (a list input, axis=0) but is right on the scores
# multi_head_attention gives it; the mistake is multi_head_attention's: causal ignored
# (the catalogue's entry)
OWN_SOFTMAX_MHA_ALWAYS_CAUSAL = "\n" + WRONG_MHA["own_softmax_always_causal"][0]


def test_an_own_softmax_right_on_its_inputs_is_not_blamed():
    fn = _define(OWN_SOFTMAX_MHA_ALWAYS_CAUSAL, "multi_head_attention")
    with pytest.raises(CheckFailed):
        check("softmax", fn.__globals__["softmax"])            # it fails its own check
    text = _check_text("multi_head_attention", fn)
    assert "fails its own check" not in text, text
    assert "causal" in text, text


# ---------------------------------------------------------------------------------------
# 8. Partial credit as an option.
# ---------------------------------------------------------------------------------------

UNSTABLE_SOFTMAX = """def softmax(z, axis=-1):
    e = np.exp(np.asarray(z, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)
"""


@pytest.mark.slow
def test_credit_cases_scores_the_fraction_of_case_groups_passed(tmp_path):
    from helpers.course import judge

    groups = judge.groups(course.get("softmax"))                 # visible and hidden
    rows, record = grade_one(tmp_path / "all", "02_softmax", {"softmax": UNSTABLE_SOFTMAX})
    assert float(rows["test_softmax"]["points"]) == 0                  # the default: all
    rows, record = grade_one(tmp_path / "cases", "02_softmax", {"softmax": UNSTABLE_SOFTMAX},
                             "--credit", "cases")
    row = rows["test_softmax"]
    points, most = float(row["points"]), float(row["max_points"])
    assert 0 < points < most, row
    fn = _define(UNSTABLE_SOFTMAX, "softmax")
    failing = set()
    for hidden in (False, True):
        for c in judge.cases(course.get("softmax"), hidden=hidden):
            with judge.quiet():
                if judge.compare(course.get("softmax"), c, c.run(fn)) is not None:
                    failing.add(c.group)
    assert failing and failing != set(groups)
    assert points == pytest.approx(round(most * (len(groups) - len(failing)) / len(groups), 4))
    assert "partial credit" in _feedback(record, "test_softmax")
    summary = {r["assignment"]: r for r in csv.DictReader(
        open(tmp_path / "cases" / "out" / "summary.csv", encoding="utf-8"))}
    assert float(summary["02_softmax"]["points"]) == pytest.approx(
        sum(float(r["points"]) for r in rows.values()))
    pages = list((tmp_path / "cases" / "out").rglob("*.html"))
    assert any("partial credit" in p.read_text("utf-8") for p in pages), pages
    # item analysis: the partial points count in the mean, not among full marks
    out = tmp_path / "cases" / "out"
    subprocess.run([sys.executable, "-m", "autograder", "report", str(out)], cwd=REPO_ROOT,
                   check=True, capture_output=True, timeout=600)
    items = {(r["assignment"], r["grade_id"]): r for r in csv.DictReader(
        open(out / "item_analysis.csv", encoding="utf-8"))}
    item = items[("02_softmax", "test_softmax")]
    assert float(item["mean_points"]) == pytest.approx(points, abs=1e-3), item
    assert float(item["full_marks_share"]) == 0, item


TRANSFORMER_BLOCK = "\n" + CORRECT_BLOCKS["slide_names"]     # a right block, from the catalogue


def test_an_in_place_layer_norm_is_blamed_by_transformer_blocks_check():
    from helpers import reference

    ns = _define(IN_PLACE_LAYER_NORM + TRANSFORMER_BLOCK, "transformer_block").__globals__
    ns.update(multi_head_attention=reference.multi_head_attention,
              feed_forward=reference.feed_forward)
    text = _check_text("transformer_block", ns["transformer_block"])
    assert "your layer_norm fails its own check: fix it first" in text, text
