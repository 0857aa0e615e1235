"""The grading engine (autograder.engine) on submissions built from the real notebooks.

Every submission here is made programmatically from what exists in ``solutions/`` and
``notebooks/``: the solution itself (full marks), the released stub (nothing), and
variants of notebooks 01 and 02 with one thing changed (a wrong answer, an answer that
calls the reference, an attack, a broken file). Expected points are read from the source
notebooks' nbgrader metadata here, independently of the engine.
"""

from __future__ import annotations

import ast
import copy
import json
import time
from pathlib import Path

import numpy as np
import pytest

import helpers
from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR, engine
from autograder.isolation import wire
from autograder.notebook import slicing, source
from autograder.notebook import cells as nbcells

pytestmark = pytest.mark.slow

SOLUTION_NOTEBOOKS = sorted(p for p in SOLUTIONS_DIR.glob("*/*.ipynb")
                            if ".ipynb_checkpoints" not in p.parts)


_nbg = nbcells.nbgrader


_source = nbcells.source_of


def test_points(nb: dict) -> dict[str, float]:
    """grade_id -> points of every autograded test cell (read from nbgrader metadata)."""
    return {_nbg(c)["grade_id"]: float(_nbg(c).get("points", 0)) for c in nb["cells"]
            if nbcells.is_test(c)}


test_points.__test__ = False   # a helper, not a test


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(nb, tmp_path: Path, assignment: str, name: str = "student") -> Path:
    path = tmp_path / name / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nb if isinstance(nb, str) else json.dumps(nb), encoding="utf-8")
    return path


def _cell(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if _nbg(c).get("grade_id") == grade_id)


def _with_answer(assignment: str, grade_id: str, code: str) -> dict:
    nb = _load(SOLUTIONS_DIR / assignment / f"{assignment}.ipynb")
    _cell(nb, grade_id)["source"] = code
    return nb


def _points(result) -> dict[str, float]:
    return {c.grade_id: c.points for c in result.cells if c.kind == "test"}


def _by_id(result):
    return {c.grade_id: c for c in result.cells}


def _grade(path: Path, assignment: str, **kw):
    return engine.grade_notebook(path, assignment, **kw)


CORRECT_DOT = ("def dot(a, b):\n"
               "    return float(sum(x * y for x, y in zip(a, b)))\n")


# ---------------------------------------------------------------------------------------
# Every released stub earns nothing (every solution earns full marks, through the real
# command: tests/autograder/engine/test_notebook_run_copy.py).
# ---------------------------------------------------------------------------------------


def test_model_notebook_grades_fully_with_an_empty_weights_cache(tmp_path: Path, monkeypatch):
    """A fresh machine has no converted-weights cache and the children see it read-only:
    the grader builds it first (a CI clone once lost test_llama_block this way)."""
    path = SOLUTIONS_DIR / "10_modern_llm" / "10_modern_llm.ipynb"
    if not path.exists():
        pytest.skip("notebook 10 is not in this course")
    cache = tmp_path / "empty-cache"
    monkeypatch.setenv("TRANSFORMERS_COURSE_CACHE", str(cache))
    monkeypatch.setattr(engine.resources, "_PREPARED", set())
    nb = _load(path)
    result = _grade(_write(nb, tmp_path, path.parent.name), path.parent.name)
    assert _points(result) == test_points(nb), [(c.grade_id, c.message) for c in result.cells]
    assert list(cache.glob("*-float32.npz")), "the grader did not build the cache"


def test_the_tokenizer_notebook_is_graded_without_loading_the_capstone_model(
        tmp_path: Path, monkeypatch):
    """Notebook 11's last demo runs SmolLM2, but no graded cell needs it: grading the
    notebook neither prepares the model's weights (``helpers.course.PREPARE``) nor
    runs that demo (issue 35: it cost 44 s of a 78 s notebook under load)."""
    path = SOLUTIONS_DIR / "11_tokenizer" / "11_tokenizer.ipynb"
    if not path.exists():
        pytest.skip("notebook 11 is not in this course")
    cache = tmp_path / "empty-cache"
    monkeypatch.setenv("TRANSFORMERS_COURSE_CACHE", str(cache))
    monkeypatch.setattr(engine.resources, "_PREPARED", set())
    nb = _load(path)
    result = _grade(_write(nb, tmp_path, path.parent.name), path.parent.name)
    assert _points(result) == test_points(nb), [(c.grade_id, c.message) for c in result.cells]
    assert not list(cache.glob("*-float32.npz")), "the capstone model was prepared"


@pytest.mark.parametrize("path", SOLUTION_NOTEBOOKS, ids=lambda p: p.parent.name)
def test_released_stub_earns_nothing(path: Path, tmp_path: Path):
    stub = NOTEBOOKS_DIR / path.parent.name / path.name
    if not stub.exists():   # not released yet: release it here
        from autograder.release.notebooks import generate

        stub = generate(tmp_path / "course", [path.parent.name]) / path.parent.name / path.name
    result = _grade(_write(_load(stub), tmp_path, path.parent.name), path.parent.name)
    assert set(_points(result)) == set(test_points(_load(path)))
    assert sum(_points(result).values()) == 0
    assert all(c.status == "failed" for c in result.cells if c.kind == "test")
    assert not [f for f in result.flags if "tamper" in f]


def test_an_output_too_large_for_the_grader_fails_its_cases_with_its_size(tmp_path: Path):
    """A function returning more array bytes than the grader takes fails each case
    with its size in words, told by the child before encoding it (not an encoded reply
    of 64 MB refused by the grader as breaking its rules)."""
    nb = _with_answer("02_softmax", "softmax",
                      "def softmax(z, axis=-1):\n    return np.zeros(5_000_000)\n")
    result = _by_id(_grade(_write(nb, tmp_path, "02_softmax"), "02_softmax"))
    cell = result["test_softmax"]
    assert cell.status == "failed" and cell.points == 0, (cell.status, cell.message)
    assert "softmax returned 38 MB of arrays" in cell.message, cell.message
    assert "at most 32 MB" in cell.message and "breaks" not in cell.message
    assert result["test_softmax_with_temperature"].points > 0     # its own answer is right
    small = [0.0] * 3
    assert wire.array_bytes([np.zeros(4), {"k": (np.float32(1), small)}], 10**9) == 36
    assert wire.array_bytes([np.zeros(10**6)] * 1000, 8 * 10**6) == 16 * 10**6   # stops


def _reference_caller(answer_source: str, name: str) -> str:
    """``def name(<same parameters>): return helpers.name(<them>)``."""
    fn = next(n for n in ast.parse(answer_source).body
              if isinstance(n, ast.FunctionDef) and n.name == name)
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    call = ", ".join(params + [f"{a.arg}={a.arg}" for a in fn.args.kwonlyargs])
    fn.body = ast.parse(f"import helpers\nreturn helpers.{name}({call})").body
    return ast.unparse(fn)


CONTRACT_ANSWERS = [
    (p, _nbg(c)["grade_id"]) for p in SOLUTION_NOTEBOOKS for c in _load(p)["cells"]
    if nbcells.is_answer(c) and _nbg(c).get("grade_id") in helpers.CONTRACT_FUNCTIONS
]


@pytest.mark.parametrize("path,name", CONTRACT_ANSWERS,
                         ids=[f"{p.parent.name}-{n}" for p, n in CONTRACT_ANSWERS])
def test_answer_that_calls_the_reference_earns_nothing_for_it(path, name, tmp_path):
    nb = _load(path)
    cell = _cell(nb, name)
    cell["source"] = _reference_caller(_source(cell), name)
    result = _grade(_write(nb, tmp_path, path.parent.name), path.parent.name)
    expected = test_points(_load(path))
    own_tests = [g for g in expected if g == f"test_{name}"]
    assert own_tests
    # only this exercise's tests lose their points: later exercises built on it are
    # graded with the course's version of it
    for gid, pts in _points(result).items():
        zero = gid in own_tests
        assert pts == (0 if zero else expected[gid]), (gid, _by_id(result)[gid].message)
    for gid in own_tests:
        assert "own implementation" in _by_id(result)[gid].message


# ---------------------------------------------------------------------------------------
# Wrong answers, tampering, attacks (notebooks 01 and 02).
# ---------------------------------------------------------------------------------------


def test_wrong_answer_loses_its_cell_and_says_why(tmp_path):
    nb = _with_answer("01_dot_products", "dot",
                      "def dot(a, b):\n    return float(np.sum(a) * np.sum(b))\n")
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    cells = _by_id(result)
    assert cells["test_dot"].points == 0 and cells["test_dot"].status == "failed"
    message, feedback = cells["test_dot"].message, cells["test_dot"].feedback
    assert "case '" in message and "expected" in message and "got" in message, message
    assert "Input:" in feedback and "Problem:" in feedback      # the full explanation
    # the solution's cosine_similarity calls dot: graded with the course's dot, it passes
    assert cells["test_cosine_similarity"].points == cells["test_cosine_similarity"].max_points
    assert cells["test_pairwise_scores"].points == cells["test_pairwise_scores"].max_points
    assert not result.flags


def test_a_syntax_error_is_named_with_the_line_of_the_learners_cell(tmp_path):
    """Issue 21, finding 6: a missing colon was reported as "name ... is not defined"."""
    nb = _with_answer("01_dot_products", "cosine_similarity",
                      "def cosine_similarity(a, b)\n    return dot(a, b)\n")
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    cell = _by_id(result)["test_cosine_similarity"]
    assert cell.points == 0
    for text in (cell.message, cell.feedback):
        assert "SyntaxError" in text and "line 1" in text, text
    assert "not defined" not in cell.message, cell.message           # the cause, not its echo
    assert "def cosine_similarity(a, b)" in cell.feedback          # the learner's own line
    assert _by_id(result)["test_dot"].points == _by_id(result)["test_dot"].max_points


def test_unstable_softmax_is_diagnosed(tmp_path):
    nb = _with_answer("02_softmax", "softmax",
                      "def softmax(z, axis=-1):\n"
                      "    e = np.exp(np.asarray(z, dtype=float))\n"
                      "    return e / e.sum(axis=axis, keepdims=True)\n")
    result = _grade(_write(nb, tmp_path, "02_softmax"), "02_softmax")
    cell = _by_id(result)["test_softmax"]
    assert cell.points == 0
    assert "stable" in cell.message or "maximum" in cell.message, cell.message


@pytest.mark.skipif(not (SOLUTIONS_DIR / "08_language_model").is_dir(), reason="notebook 08 not written yet")
def test_known_mistake_is_named_first(tmp_path):
    nb = _with_answer("08_language_model", "cross_entropy",
                      "def cross_entropy(logits, targets):\n"
                      "    z = np.asarray(logits, dtype=float)\n"
                      "    m = z.max(axis=-1, keepdims=True)\n"
                      "    logp = z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))\n"
                      "    return float(-logp[np.arange(len(targets)), targets].sum())\n")
    result = _grade(_write(nb, tmp_path, "08_language_model"), "08_language_model")
    cell = _by_id(result)["test_cross_entropy"]
    assert cell.points == 0
    assert cell.message.startswith("Likely mistake:") and "mean" in cell.message, cell.message


def test_correct_answer_written_differently_earns_full_marks(tmp_path):
    nb = _with_answer("02_softmax", "softmax",
                      "def softmax(z, axis=-1):\n"
                      "    z = np.moveaxis(np.asarray(z, dtype=float), axis, -1)\n"
                      "    out = np.empty_like(z)\n"
                      "    for idx in np.ndindex(z.shape[:-1]):\n"
                      "        row = z[idx] - max(z[idx])\n"
                      "        e = [np.exp(v) for v in row]\n"
                      "        out[idx] = np.array(e) / sum(e)\n"
                      "    return np.moveaxis(out, -1, axis)\n")
    result = _grade(_write(nb, tmp_path, "02_softmax"), "02_softmax")
    assert _by_id(result)["test_softmax"].status == "ok"
    assert _points(result) == test_points(_load(SOLUTIONS_DIR / "02_softmax" / "02_softmax.ipynb"))


def test_output_on_stderr_in_the_notebook_does_not_cost_a_correct_answer(tmp_path):
    nb = _with_answer("01_dot_products", "dot",
                      "import sys\n" + CORRECT_DOT.replace(
                          "    return", "    print('debug', file=sys.stderr)\n    return"))
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    cell = _by_id(result)["test_dot"]
    assert cell.points == cell.max_points and cell.status == "ok"
    assert "isolated check" in cell.message and "stderr" in cell.message


TAMPERING = {
    "rebound check": "check = lambda *args, **kwargs: print('dot: 5/5 checks passed')\n",
    "patched helpers.checks": (
        "import helpers.checks\n"
        "helpers.checks.check = lambda *args, **kwargs: None\n"
        "check = helpers.checks.check\n"),
    "input transformer": (
        "def _swallow(lines):\n"
        "    return ['try:\\n'] + ['    ' + l for l in lines] + ['\\nexcept BaseException:\\n    pass\\n']\n"
        "get_ipython().input_transformers_post.append(_swallow)\n"),
}


@pytest.mark.parametrize("attack", TAMPERING)
def test_tampering_scores_nothing_and_is_flagged(attack, tmp_path):
    wrong = "def dot(a, b):\n    return 0.0\n"
    nb = _with_answer("01_dot_products", "dot", TAMPERING[attack] + wrong)
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    cell = _by_id(result)["test_dot"]
    assert cell.points == 0
    assert cell.message.startswith("tampering suspected"), cell.message
    assert any("tampering suspected in test_dot" in f for f in result.flags)
    # most_similar (right, and independent of dot) is judged apart from the tampering
    most = _by_id(result)["test_most_similar"]
    assert most.points == most.max_points


NON_CONTRACT_TAMPERING = {
    "input transformer": TAMPERING["input transformer"],
    "rebound assert_close": "assert_close = lambda *args, **kwargs: None\n",
    "patched numpy": ("np.testing.assert_allclose = lambda *a, **k: None\n"
                      "np.allclose = lambda *a, **k: True\n"),
}


@pytest.mark.parametrize("attack", NON_CONTRACT_TAMPERING)
def test_tampering_with_a_test_outside_the_contract(attack, tmp_path):
    # every contract answer right; most_similar (judged by its own test cell) wrong
    nb = _with_answer("01_dot_products", "most_similar", NON_CONTRACT_TAMPERING[attack]
                      + "def most_similar(X, i):\n    return 0\n")
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    cells = _by_id(result)
    assert cells["test_most_similar"].points == 0
    for gid in ("test_dot", "test_cosine_similarity", "test_pairwise_scores"):
        assert cells[gid].points == cells[gid].max_points
    if cells["test_most_similar"].message.startswith("tampering suspected"):
        assert any("tampering suspected in test_most_similar" in f for f in result.flags)


def test_an_answer_that_uses_quiet_earns_its_points(tmp_path):
    """The notebooks import ``quiet`` with ``check`` from helpers.checks; the isolated run's
    stand-in for that module has it too, so an answer using it is judged on its values."""
    code = ("def dot(a, b):\n"
            "    with quiet():\n"
            "        return float(np.dot(np.asarray(a, float), np.asarray(b, float)))\n")
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products")
    cell = _by_id(result)["test_dot"]
    assert cell.points == cell.max_points, cell.message + cell.feedback


def test_patching_numpy_comparisons_scores_nothing(tmp_path):
    code = ("np.allclose = lambda *a, **k: True\n"
            "np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, bool)\n"
            "np.array_equal = lambda *a, **k: True\n"
            "np.testing.assert_allclose = lambda *a, **k: None\n"
            "def dot(a, b):\n    return 0.0\n")
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products")
    assert _by_id(result)["test_dot"].points == 0


def test_reading_solutions_from_disk_fails(tmp_path):
    target = SOLUTIONS_DIR / "01_dot_products" / "01_dot_products.ipynb"
    code = CORRECT_DOT.replace("    return", f"    open({str(target)!r}).read()\n    return")
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products")
    cell = _by_id(result)["test_dot"]
    assert cell.points == 0
    assert "FileNotFoundError" in cell.message, cell.message


def test_writing_outside_the_sandbox_leaves_no_file(tmp_path):
    outside = [tmp_path / "written.txt", SOLUTIONS_DIR.parent / "written-by-student.txt"]
    code = "".join(f"try:\n    open({str(p)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
                   for p in outside) + CORRECT_DOT
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products")
    assert _by_id(result)["test_dot"].status == "ok"
    assert not any(p.exists() for p in outside)


def test_infinite_loop_times_out_and_later_cells_still_count(tmp_path):
    nb = _with_answer("01_dot_products", "dot", "def dot(a, b):\n    while True:\n        pass\n")
    t0 = time.monotonic()
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products",
                    cell_timeout=1, notebook_timeout=5)
    assert time.monotonic() - t0 < 20 * engine.WALL_FACTOR   # a busy machine stretches it
    assert result.status == "timeout"
    cells = _by_id(result)
    assert cells["test_dot"].points == 0 and cells["test_dot"].status == "timeout"
    # the notebook run stopped at test_dot; the isolated verdicts still grade the rest
    assert cells["test_pairwise_scores"].points == cells["test_pairwise_scores"].max_points
    # points stand, yet the notebook run's timeout is flagged for review (summary.csv)
    assert any("the notebook run stopped (timeout)" in f for f in result.flags), result.flags


def test_loop_that_swallows_the_timer_is_killed(tmp_path):
    code = ("import signal\nsignal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
            "while True:\n    pass\n" + CORRECT_DOT)
    t0 = time.monotonic()
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products",
                    cell_timeout=1, notebook_timeout=3)
    # each run's budget is 3 s of the child's own time; the wall clock, which a busy
    # machine stretches, is bounded by the backstop
    assert time.monotonic() - t0 < engine.WALL_FACTOR * (4 * 3 + 5)
    assert result.status == "timeout"
    assert all(c.points == 0 for c in result.cells if c.grade_id == "test_dot")


def test_a_call_that_blocks_the_timer_is_stopped_at_its_limit_not_the_budgets(tmp_path):
    """A graded call that blocks SIGPROF (the child's per-call timer) and then waits
    forever is stopped by the worker once the child has been silent for the call's limit
    plus executor.STEP_GRACE, long before the notebook's budget runs out; the message
    says why, and the exercise that uses the learner's dot is judged again with the
    course's and keeps its points."""
    from autograder.isolation import executor

    code = ("def dot(a, b):\n"
            "    import helpers.checks, signal, time\n"
            "    if 'Stand-in' in (helpers.checks.__doc__ or ''):   # the isolated run\n"
            "        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})\n"
            "        time.sleep(10_000)\n"
            "    return float(sum(x * y for x, y in zip(a, b)))\n")
    budget = 600
    t0 = time.monotonic()
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products",
                    cell_timeout=1, notebook_timeout=budget)
    assert time.monotonic() - t0 < budget / 2          # stopped early (generous bound)
    cells = _by_id(result)
    assert cells["test_dot"].points == 0 and cells["test_dot"].status == "timeout"
    assert "did not stop (its timer was blocked)" in cells["test_dot"].message, \
        cells["test_dot"].message
    assert "limit of 1 s" in cells["test_dot"].message
    assert cells["test_pairwise_scores"].points == cells["test_pairwise_scores"].max_points
    assert executor.STEP_GRACE < budget / 4


def test_memory_hog_is_stopped(tmp_path):
    code = "hog = bytearray(3 * 1024 ** 3)\n" + CORRECT_DOT
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products", memory_mb=1024)
    assert result.status == "memory" and "memory" in result.message
    assert _by_id(result)["test_dot"].points == 0


@pytest.mark.parametrize("attack", [
    "import os\nos.kill(os.getppid(), 9)\n",
    "import os\nos.killpg(0, 9)\n",
    "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n",
    "import os\nos._exit(0)\n",
])
def test_killing_attacks_leave_the_grader_running(attack, tmp_path):
    nb = _with_answer("01_dot_products", "dot", attack + CORRECT_DOT)
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    assert result.status in ("ok", "crashed")
    if result.status == "crashed":
        assert "stopped unexpectedly" in result.message
    # the grader (this process) and its worker still grade the next student correctly
    solution = _load(SOLUTIONS_DIR / "01_dot_products" / "01_dot_products.ipynb")
    after = _grade(_write(solution, tmp_path, "01_dot_products", "next"), "01_dot_products")
    assert _points(after) == test_points(solution)


def test_sys_exit_in_an_answer_cell(tmp_path):
    nb = _with_answer("01_dot_products", "dot", "import sys\nsys.exit(3)\n" + CORRECT_DOT)
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    assert result.status == "ok"
    assert _by_id(result)["test_dot"].points == 0          # the def after exit never ran
    assert _by_id(result)["test_pairwise_scores"].status == "ok"


def test_output_flood_is_capped(tmp_path):
    code = "print('x' * 50_000_000)\nimport sys\nsys.stderr.write('e' * 10_000_000)\n" + CORRECT_DOT
    result = _grade(_write(_with_answer("01_dot_products", "dot", code), tmp_path,
                           "01_dot_products"), "01_dot_products")
    assert _by_id(result)["test_dot"].status == "ok"
    assert all(len(c.message) <= engine.MESSAGE_CHARS for c in result.cells)
    assert all(len(c.feedback) <= engine.FEEDBACK_CHARS + 10 for c in result.cells)


# ---------------------------------------------------------------------------------------
# Broken or edited notebooks.
# ---------------------------------------------------------------------------------------


def _solution(assignment="01_dot_products") -> dict:
    return _load(SOLUTIONS_DIR / assignment / f"{assignment}.ipynb")


def test_duplicated_answer_cell_first_copy_wins(tmp_path):
    for first_right in (True, False):
        nb = _solution()
        right = _cell(nb, "dot")
        wrong = copy.deepcopy(right)
        wrong["source"] = "def dot(a, b):\n    return 0.0\n"
        i = nb["cells"].index(right)
        nb["cells"][i:i + 1] = [right, wrong] if first_right else [wrong, right]
        result = _grade(_write(nb, tmp_path, "01_dot_products", str(first_right)),
                        "01_dot_products")
        cell = _by_id(result)["test_dot"]
        assert (cell.points == cell.max_points) == first_right
        assert any("duplicated cell 'dot'" in f for f in result.flags)


def test_deleted_test_cell_is_restored(tmp_path):
    nb = _solution()
    nb["cells"] = [c for c in nb["cells"] if _nbg(c).get("grade_id") != "test_dot"]
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    # what notebook 00 tells learners: put back, noted on the feedback page, score unchanged
    assert _points(result) == test_points(_solution())
    assert any("'test_dot' was deleted" in f for f in result.flags)
    assert "the original was restored" in _by_id(result)["test_dot"].message
    rule = (SOLUTIONS_DIR / "00_start_here" / "00_start_here.ipynb").read_text()
    assert "a deleted one is put" in rule and "back in its place" in rule


def test_edited_test_cell_is_restored(tmp_path):
    nb = _with_answer("01_dot_products", "dot", "def dot(a, b):\n    return 0.0\n")
    _cell(nb, "test_dot")["source"] = "pass\n"
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    assert _by_id(result)["test_dot"].points == 0
    assert any("'test_dot' was edited" in f for f in result.flags)


def test_stripped_metadata_matches_answers_by_def(tmp_path):
    nb = _solution()
    for cell in nb["cells"]:
        cell["metadata"] = {}
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    assert _points(result) == test_points(_solution())
    assert any("answer cell 'dot' had no nbgrader metadata" in f for f in result.flags)


def test_missing_answer_cell(tmp_path):
    nb = _solution()
    nb["cells"] = [c for c in nb["cells"] if _nbg(c).get("grade_id") != "dot"]
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    cell = _by_id(result)["test_dot"]
    assert cell.points == 0 and cell.status == "missing"
    assert "'dot' not found" in cell.message
    assert result.answers["dot"] == ""
    assert _by_id(result)["test_pairwise_scores"].status == "ok"


@pytest.mark.parametrize("content,words", [
    ("{ not json", "not valid JSON"),
    ("[1, 2, 3]", "not a Jupyter notebook"),
    ('{"nbformat": 4}', "not a Jupyter notebook"),
    ("", "not valid JSON"),
])
def test_unreadable_file_is_invalid(content, words, tmp_path):
    result = _grade(_write(content, tmp_path, "01_dot_products"), "01_dot_products")
    assert result.status == "invalid" and words in result.message
    assert set(_points(result)) == set(test_points(_solution()))
    assert all(c.points == 0 and c.status == "invalid" for c in result.cells)


def test_pathological_cells_do_not_break_the_grader(tmp_path):
    nb = _solution()
    nb["cells"][1:1] = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "(" * 100_000 + ")" * 100_000},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1\0"},
        {"cell_type": "code", "metadata": {"nbgrader": "not a dict"}, "outputs": [], "source": 5},
        {"cell_type": "code", "metadata": [], "outputs": [], "source": ["%%time\n", "y = 2"]},
        "not a cell",
    ]
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    assert _points(result) == test_points(_solution())


def test_unknown_assignment_is_invalid(tmp_path):
    result = _grade(_write(_solution(), tmp_path, "99_nope"), "99_nope")
    assert result.status == "invalid" and result.cells == []


def test_submission_is_never_modified(tmp_path):
    path = _write(_with_answer("01_dot_products", "dot", "import os\nos._exit(1)\n"),
                  tmp_path, "01_dot_products")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    _grade(path, "01_dot_products")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_feedback_never_contains_hidden_test_source(tmp_path):
    # an input transformer that prints every later cell's source verbatim
    spy = ("def _spy(lines):\n"
           "    print(''.join(lines))\n"
           "    return lines\n"
           "get_ipython().input_transformers_post.append(_spy)\n" + CORRECT_DOT)
    result = _grade(_write(_with_answer("01_dot_products", "dot", spy), tmp_path,
                           "01_dot_products"), "01_dot_products")
    tests = [c for c in source.load_source("01_dot_products").cells if c.kind == "test"]
    visible = {line.strip() for c in tests for line in source.strip_hidden(c.source).splitlines()}
    hidden = [line.strip() for c in tests for line in source.hidden_block(c.source).splitlines()
              if len(line.strip()) >= 6 and line.strip() not in visible]   # not `with quiet():`
    assert len(hidden) == len(tests)              # one hidden check() line per test cell
    shown = "\n".join(c.feedback + c.message for c in result.cells)
    assert not any(h in shown for h in hidden)


# ---------------------------------------------------------------------------------------
# A small synthetic assignment: groups, a test cell without check(), a written answer.
# ---------------------------------------------------------------------------------------


def _nb_cell(source, grade_id=None, kind="code", **nbgrader):
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(outputs=[], execution_count=None)
    if grade_id:
        cell["metadata"]["nbgrader"] = {"grade_id": grade_id, "locked": False,
                                        "schema_version": 3, "task": False, **nbgrader}
    return cell


STABLE_SOFTMAX = ("def softmax(z, axis=-1):\n"
                  "    z = np.asarray(z, dtype=float)\n"
                  "    e = np.exp(z - z.max(axis=axis, keepdims=True))\n"
                  "    return e / e.sum(axis=axis, keepdims=True)\n")


@pytest.fixture()
def tiny_course(tmp_path):
    cells = [
        _nb_cell("import numpy as np\nfrom helpers.checks import check"),
        _nb_cell(STABLE_SOFTMAX, "softmax", grade=False, solution=True),
        _nb_cell('check("softmax", softmax)\n### BEGIN HIDDEN TESTS\n'
                 'check("softmax", softmax, hidden=True)\n### END HIDDEN TESTS',
                 "test_softmax", grade=True, solution=False, points=2),
        _nb_cell('check("softmax", softmax, group="stability")\n### BEGIN HIDDEN TESTS\n'
                 'check("softmax", softmax, hidden=True, group="stability")\n'
                 '### END HIDDEN TESTS', "test_softmax_stability", grade=True, solution=False,
                 points=1),
        _nb_cell("assert softmax([0.0])[0] == 1.0", "test_softmax_plain", grade=True,
                 solution=False, points=1),
        _nb_cell("Why?", "why", kind="markdown", grade=True, solution=True, points=3),
    ]
    solutions = tmp_path / "solutions"
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (solutions / "09_tiny").mkdir(parents=True)
    (solutions / "09_tiny" / "09_tiny.ipynb").write_text(json.dumps(nb))
    return solutions, nb


def _tiny(tiny_course, tmp_path, edit=None):
    solutions, nb = tiny_course
    nb = copy.deepcopy(nb)
    if edit:
        edit(nb)
    path = _write(nb, tmp_path, "09_tiny")
    return _by_id(engine.grade_notebook(path, "09_tiny", solutions=solutions))


def test_tiny_solution(tiny_course, tmp_path):
    cells = _tiny(tiny_course, tmp_path)
    assert {g: c.points for g, c in cells.items()} == {
        "test_softmax": 2, "test_softmax_stability": 1, "test_softmax_plain": 0, "why": 0}
    assert cells["why"].status == "needs_manual_grade" and cells["why"].max_points == 3
    # a test cell that checks no exercise is the course's error, said as such
    assert cells["test_softmax_plain"].status == "invalid"
    assert "calls no check(" in cells["test_softmax_plain"].message


def test_a_check_group_selects_its_cases(tiny_course, tmp_path):
    # right along the last axis and stable, but ignores `axis`: the 'axis' cases fail,
    # the 'stability' group passes
    cells = _tiny(tiny_course, tmp_path, lambda nb: nb["cells"][1].update(
        source=STABLE_SOFTMAX.replace("axis=axis", "axis=-1")))
    assert cells["test_softmax"].points == 0
    assert cells["test_softmax_stability"].points == 1
    assert "group 'stability'" in cells["test_softmax_stability"].feedback


# ---------------------------------------------------------------------------------------
# Exercises outside the contract (notebooks 09 and 10): an answer that hands back the
# course's own version (helpers.bert / helpers.llama) earns nothing for it.
# ---------------------------------------------------------------------------------------


def _signature_call(answer_source: str, name: str) -> tuple[str, str]:
    """(``def name(<params of the solution>):`` line, the call's argument list)."""
    fn = next(n for n in ast.parse(answer_source).body
              if isinstance(n, ast.FunctionDef) and n.name == name)
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    call = ", ".join(params + [f"{a.arg}={a.arg}" for a in fn.args.kwonlyargs])
    fn.body = [ast.Pass()]
    head = ast.unparse(fn).rsplit("\n", 1)[0]       # the decorated "def ...:" line
    return head, call


def _exercise_caller(answer_source: str, name: str, module: str, style: str) -> str:
    """An answer for exercise ``name`` that returns ``helpers.<module>.<name>``'s work."""
    head, call = _signature_call(answer_source, name)
    if style == "attribute":
        return f"import helpers.{module}\n{head}\n    return helpers.{module}.{name}({call})\n"
    if style == "from-import alias":
        return f"from helpers.{module} import {name} as _theirs\n{head}\n    return _theirs({call})\n"
    if style == "reload":
        return (f"import importlib\nimport helpers.{module}\n{head}\n"
                f"    return importlib.reload(helpers.{module}).{name}({call})\n")
    if style == "source":      # the module's text, executed afresh
        return (f"import inspect\nimport helpers.{module}\n"
                f"_ns = {{'__name__': 'helpers.{module}'}}\n"
                f"exec(compile(inspect.getsource(helpers.{module}), 'm', 'exec'), _ns)\n"
                f"{head}\n    return _ns[{name!r}]({call})\n")
    raise ValueError(style)


EXERCISE_ATTACKS = [
    ("09_sentence_encoder", "bert", "gelu", "attribute"),
    ("09_sentence_encoder", "bert", "gelu", "from-import alias"),
    ("09_sentence_encoder", "bert", "gelu", "reload"),
    ("09_sentence_encoder", "bert", "gelu", "source"),
    ("09_sentence_encoder", "bert", "mean_pool", "from-import alias"),
    ("10_modern_llm", "llama", "rms_norm", "attribute"),
    ("10_modern_llm", "llama", "rms_norm", "reload"),
    ("10_modern_llm", "llama", "apply_rope", "from-import alias"),
    ("10_modern_llm", "llama", "swiglu", "reload"),
    ("10_modern_llm", "llama", "grouped_query_attention", "attribute"),
    ("10_modern_llm", "llama", "llama_block", "from-import alias"),
]


@pytest.mark.parametrize("assignment,module,name,style", EXERCISE_ATTACKS,
                         ids=[f"{n}-{s}" for _, _, n, s in EXERCISE_ATTACKS])
def test_exercise_answer_that_calls_the_course_version_earns_nothing(
        assignment, module, name, style, tmp_path):
    path = SOLUTIONS_DIR / assignment / f"{assignment}.ipynb"
    nb = _load(path)
    cell = _cell(nb, name)
    attack = _exercise_caller(_source(cell), name, module, style)
    cell["source"] = attack
    # the attack is a right answer where the full helpers are importable
    ns: dict = {}
    exec(attack, ns)
    assert callable(ns[name]) and name not in helpers.CONTRACT_FUNCTIONS
    result = _grade(_write(nb, tmp_path, assignment), assignment)
    expected = test_points(_load(path))
    assert f"test_{name}" in expected
    # only this exercise loses its points: the later exercises that use it are graded
    # with the course's version of it (a mistake is charged once)
    for gid, pts in _points(result).items():
        want = 0 if gid == f"test_{name}" else expected[gid]
        assert pts == want, (gid, _by_id(result)[gid].message)
    own = _by_id(result)[f"test_{name}"]
    assert f"{name} must be your own implementation" in own.message, own.message
    assert f"helpers.{module}." in own.message


def test_exercise_answer_through_a_listed_reference_earns_nothing(tmp_path):
    # swiglu from helpers.llama.silu (a function helpers.llama lists for the exercise)
    import numpy as np

    import helpers.llama

    attack = ("import helpers.llama\n"
              "def swiglu(x, W_gate, W_up, W_down):\n"
              "    x = np.asarray(x, dtype=float)\n"
              "    return (helpers.llama.silu(x @ W_gate) * (x @ W_up)) @ W_down\n")
    ns = {"np": np}
    exec(attack, ns)
    rng = np.random.default_rng(0)
    x, g, u, d = rng.normal(size=(3, 4)), rng.normal(size=(4, 6)), rng.normal(size=(4, 6)), \
        rng.normal(size=(6, 4))
    np.testing.assert_allclose(ns["swiglu"](x, g, u, d), helpers.llama.swiglu(x, g, u, d))
    nb = _with_answer("10_modern_llm", "swiglu", attack)
    result = _grade(_write(nb, tmp_path, "10_modern_llm"), "10_modern_llm")
    expected = test_points(_load(SOLUTIONS_DIR / "10_modern_llm" / "10_modern_llm.ipynb"))
    points = _points(result)
    assert points["test_swiglu"] == 0
    assert "helpers.llama.model.silu" in _by_id(result)["test_swiglu"].message   # the stub says where
    for gid in ("test_rms_norm", "test_apply_rope", "test_grouped_query_attention",
                "test_llama_block"):
        assert points[gid] == expected[gid], _by_id(result)[gid].message


def test_exercise_references_are_stubbed_on_disk_only_for_the_learner(tmp_path):
    from autograder.isolation import helpers_copy

    res = engine._resources()
    learner = Path(res.helpers("bert_layer")) / "helpers"
    model = (learner / "bert" / "model.py").read_text()
    for fn in ("bert_layer", "bert_attention", "bert_forward", "sentence_embeddings", "encode"):
        body = model.split(f"\ndef {fn}(", 1)[1].split("\ndef ", 1)[0].split("\n", 1)[1]
        assert helpers_copy.REFERENCE_STUB_MARK in body and "return" not in body, fn
    for fn in ("gelu", "mean_pool"):       # other exercises': stubs the grader answers
        body = model.split(f"\ndef {fn}(", 1)[1].split("\ndef ", 1)[0]
        assert helpers_copy.REFERENCE_STUB_MARK not in body and "_yours.course(" in body, fn
    body = model.split("\ndef erf(", 1)[1].split("\ndef ", 1)[0]
    assert "_yours.course(" not in body and "return" in body     # no exercise's: the code
    # the exercise modules: no hidden case, no known mistake, no case builder
    cases = (learner / "exercises" / "bert_layer.py").read_text()
    assert "minilm_layer_1" not in cases and "def cases" not in cases
    assert not (learner / "exercises" / "_variants.py").exists()
    # the notebook run's copy is a student's: no reference, no case builder
    # (tests/autograder/engine/test_notebook_run_copy.py)
    notebook = Path(res.helpers(None, "09_sentence_encoder")) / "helpers"
    body = (notebook / "bert" / "model.py").read_text().split("\ndef bert_layer(", 1)[1]
    assert "_yours.course(" in body.split("\ndef ", 1)[0]
    cases = (notebook / "exercises" / "bert_layer.py").read_text()
    assert "minilm_layer_1" not in cases and "def cases" not in cases
    assert "minilm_layer_1" in (helpers_copy.HELPERS_DIR / "exercises" / "bert_layer.py").read_text()


# ---------------------------------------------------------------------------------------
# Bounded work outside the sandbox: notebooks have size limits (slicing's worklist:
# tests/autograder/notebook/test_slicing.py).
# ---------------------------------------------------------------------------------------


def test_a_notebook_over_the_cell_limit_is_invalid_with_a_message(tmp_path):
    nb = _solution()
    extra = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": f"y{i} = {i}"} for i in range(slicing.MAX_CELLS + 1)]
    nb["cells"] = nb["cells"][:1] + extra + nb["cells"][1:]
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    assert result.status == "invalid"
    assert f"at most {slicing.MAX_CELLS}" in result.message
    assert all(c.points == 0 and c.status == "invalid" for c in result.cells)


def test_a_notebook_over_the_statement_limit_is_invalid_with_a_message(tmp_path):
    nb = _with_answer("01_dot_products", "dot", "".join(
        f"z{i} = {i}\n" for i in range(slicing.MAX_STATEMENTS + 1)) + CORRECT_DOT)
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    assert result.status == "invalid" and "top-level statements" in result.message


def test_an_error_on_a_hidden_case_does_not_carry_its_text_into_the_feedback(tmp_path):
    """The child must hold the hidden cases' inputs to call the function; an answer that
    raises with them in its message (only where the visible cases do not look) gets its
    error's type shown, never its text."""
    import numpy as np

    from helpers import course
    from helpers.course import judge

    visible = [np.ravel(np.asarray(c.args[0], dtype=float)).tolist() for c in judge.cases(course.get("dot"))]
    leak = ("import base64\n" + CORRECT_DOT +
            "_right = dot\n"
            "def dot(a, b):\n"
            f"    visible = {visible!r}\n"
            "    if np.ravel(np.asarray(a, float)).tolist() not in visible:\n"
            "        raise ValueError('LEAK' + base64.b85encode(np.asarray(a, float).tobytes()).decode())\n"
            "    return _right(a, b)\n")
    nb = _with_answer("01_dot_products", "dot", leak)
    result = _grade(_write(nb, tmp_path, "01_dot_products"), "01_dot_products")
    cell = _by_id(result)["test_dot"]
    assert cell.points == 0 and "ValueError" in cell.feedback + cell.message
    assert "LEAK" not in cell.feedback + cell.message


def test_feedback_shows_no_grader_traceback_and_each_failing_case_once(tmp_path):
    """Issue 13, finding 9: the feedback of a wrong answer is the check's own words (the
    likely mistake among them), each failing case once, and no frame of the course's or
    the grader's code."""
    wrong = ("def dot(a, b):\n"
             "    return float(np.sum(np.asarray(a, float)) * np.sum(np.asarray(b, float)))\n")
    result = _grade(_write(_with_answer("01_dot_products", "dot", wrong), tmp_path,
                           "01_dot_products"), "01_dot_products")
    feedback = _by_id(result)["test_dot"].feedback
    assert "Traceback" not in feedback and "checks.py" not in feedback
    assert "judge.py" not in feedback
    assert 'File "' not in feedback
    first = next(line for line in feedback.splitlines() if line.startswith("Case '"))
    assert feedback.count(first) == 1, feedback


def test_the_trusted_diagnosis_joins_the_notebooks_text_of_the_same_case():
    """The notebook run's check names no known mistake (its helpers hold none); the
    trusted verdict's explanation of the same case does: the feedback shows the case once,
    with the diagnosis, and a case the notebook did not show in full is added whole."""
    from autograder.engine import grading

    def scrub(text):
        return text

    shown = "softmax: 1/3 checks passed.\ncase 'big' (large logits): got nan, expected 1"
    same = "case 'big' (large logits): got nan, expected 1\n  Likely mistake: no max subtracted."
    other = "case 'rows' (a batch): got 2, expected 3\n  Likely mistake: summed over axis 0."
    text = grading._feedback({"error": {"ename": "CheckFailed", "evalue": shown}}, scrub,
                             [same, other])
    assert text.count("case 'big'") == 1 and text.count("no max subtracted") == 1, text
    assert "summed over axis 0" in text and text.index("no max") < text.index("case 'rows'")
    again = grading._feedback({"error": {"ename": "CheckFailed", "evalue": shown + same[46:]}},
                              scrub, [same])
    assert again.count("no max subtracted") == 1, again
