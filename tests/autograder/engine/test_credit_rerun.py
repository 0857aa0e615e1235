"""Credit isolation by a second run (autograder/engine/grading.py, ``_verdict``).

An exercise is judged first with the learner's own earlier functions (no course code in
the child, few calls of the trusted worker). Only when a failing case called one of them
is it judged again with the course's, answered by the trusted worker, and that verdict
stands: a wrong ``layer_norm`` costs points in ``layer_norm`` only, and an unanswered or
self-contained wrong ``transformer_block`` is not run twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder import SOLUTIONS_DIR, engine
from autograder.engine import resources
from notebook_helpers import hand_in

ASSIGNMENT = "07_transformer_block"
WRONG_LAYER_NORM = ("import numpy as np\n\n"
                    "def layer_norm(x, gamma, beta, eps=1e-5):\n"
                    "    x = np.asarray(x, dtype=float)\n"
                    "    return gamma * (x - x.mean(axis=-1, keepdims=True)) + beta\n")
SELF_CONTAINED_WRONG_BLOCK = ("import numpy as np\n\n"
                              "def transformer_block(x, params, n_heads, causal=True):\n"
                              "    return np.asarray(x, dtype=float) * 2.0\n")
UNANSWERED_BLOCK = ("def transformer_block(x, params, n_heads, causal=True):\n"
                    "    raise NotImplementedError()\n")


def _notebook(tmp_path: Path, answers: dict[str, str]) -> Path:
    return hand_in(tmp_path, "student", ASSIGNMENT, answers)


@pytest.fixture
def runs(monkeypatch):
    """The calls jobs sent to the worker while a notebook is graded: (function, bound)."""
    res = resources._resources()
    seen: list[tuple[str, bool]] = []
    real = res.worker.run

    def run(job, conf, limits):
        if job["kind"] == "calls" and not job.get("trace"):   # a traced run only explains
            seen.append((job["function"], bool(job.get("uses"))))
        return real(job, conf, limits)

    monkeypatch.setattr(res.worker, "run", run)
    return seen


def _points(result) -> dict[str, float]:
    return {c.grade_id: c.points for c in result.cells if c.kind == "test"}


def test_a_wrong_earlier_function_is_charged_once_through_a_second_run(tmp_path, runs):
    result = engine.grade_notebook(_notebook(tmp_path, {"layer_norm": WRONG_LAYER_NORM}),
                                   ASSIGNMENT)
    points = _points(result)
    assert points["test_layer_norm"] == 0.0
    assert points["test_transformer_block"] > 0, _points(result)
    full = {c.grade_id: c.points for c in engine.grade_notebook(
        SOLUTIONS_DIR / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", ASSIGNMENT).cells}
    assert points["test_transformer_block"] == full["test_transformer_block"]
    block = [bound for fn, bound in runs if fn == "transformer_block"]
    assert block[:2] == [False, True]         # the learner's own first, then the course's


@pytest.mark.parametrize("answer", [SELF_CONTAINED_WRONG_BLOCK, UNANSWERED_BLOCK],
                         ids=["wrong_alone", "unanswered"])
def test_a_failure_that_called_no_earlier_function_is_judged_once(tmp_path, runs, answer):
    result = engine.grade_notebook(_notebook(tmp_path, {"transformer_block": answer}),
                                   ASSIGNMENT)
    assert _points(result)["test_transformer_block"] == 0.0
    assert [bound for fn, bound in runs if fn == "transformer_block"] == [False]


def test_a_right_notebook_is_judged_once_per_exercise(runs):
    engine.grade_notebook(SOLUTIONS_DIR / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", ASSIGNMENT)
    functions = [fn for fn, _ in runs]
    assert len(functions) == len(set(functions)) and not any(bound for _, bound in runs)


def _missing_earlier() -> list:
    """Every notebook whose exercises use earlier ones of the same notebook: those earlier
    answer cells left as a bare ``raise NotImplementedError()`` (the ``def`` deleted)."""
    from helpers import course

    out = []
    for assignment, names in course.NOTEBOOKS.items():
        used = sorted({dep for n in names for dep in course.get(n).uses if dep in names})
        if used:
            users = sorted(n for n in names if set(course.get(n).uses) & set(used))
            out.append(pytest.param(assignment, used, users, id=assignment))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("assignment, used, users", _missing_earlier())
def test_a_missing_earlier_function_is_judged_like_a_failing_one(tmp_path, assignment,
                                                                  used, users):
    """Issue 37: a cell that no longer defines an earlier function costs that function's
    points only; the exercises that use it are judged again with the course's."""
    path = hand_in(tmp_path, "student", assignment,
                   {dep: "raise NotImplementedError()\n" for dep in used})
    points = _points(engine.grade_notebook(path, assignment))
    full = _points(engine.grade_notebook(SOLUTIONS_DIR / assignment / f"{assignment}.ipynb",
                                         assignment))
    assert all(points[f"test_{dep}"] == 0.0 for dep in used), points
    kept = {f"test_{n}": points.get(f"test_{n}") for n in users if n not in used}
    assert kept == {g: full[g] for g in kept}, points
