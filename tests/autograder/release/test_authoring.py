"""docs/authoring.md, followed as an author would: in a copy of the repository, a toy
exercise is added (its module, its solution cells) and ``python -m autograder
regenerate`` is run once; then every check that guards the derived files passes in the
copy, the student notebook and the README's table show the exercise, and its instant
check judges a right and a wrong answer. Its catalogue module (step 4) is asked for by
the suite until written; then its answers pass the catalogue's checks, the real grader's
included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import REPO_ROOT

TOY = '''"""``double`` (notebook 01_dot_products): a toy exercise, added by following authoring.md."""

from __future__ import annotations

import numpy as np

from helpers.course import Arg, Contract, Exercise, case


def double(x):
    """Twice the vector x [d]."""
    return 2 * np.asarray(x, dtype=np.float64)              # [d]


EXERCISE = Exercise("double", double, difficulty=1, importance=2, minutes=2,
    contract=Contract(args={"x": Arg("[d]", lists=True)}, returns=Arg("[d]")),
    hints=(r"""Multiply by two.""", r"""`np.asarray(x)` first, then ___."""))


@EXERCISE.cases
def cases():
    return [case("small", "a short vector", ([1.0, -2.0, 0.5],)),
            case("long", "a longer vector", (np.arange(7.0),), hidden=True)]


@EXERCISE.mistake("squared", "you squared the vector; double it")
def _squared(x):
    return np.asarray(x, dtype=np.float64) ** 2
'''

CATALOGUE = r'''"""Answers to ``double``, as learners write them (the toy exercise of authoring.md)."""

WRONG = {
    "squared": ("def double(x):\n    return np.asarray(x, dtype=float) ** 2\n",
                "you squared the vector"),
    "unknown_plus_two": ("def double(x):\n    return np.asarray(x, dtype=float) + 2\n",
                         "first difference"),
}

CORRECT = {
    "sum_with_itself": "def double(x):\n    x = np.asarray(x, dtype=float)\n    return x + x\n",
    "loop": "def double(x):\n    return np.array([2.0 * v for v in x])\n",
}
'''

INSTRUCTIONS = """## Exercise

Write `double(x)`: twice the vector.

* **Inputs:** `x`, shape `[d]`.
* **Returns:** shape `[d]`, $2x$.
"""


def _cell(kind: str, source: str, grade_id: str | None = None, points: int = 0) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    if grade_id:
        test = grade_id.startswith("test_")
        cell["metadata"]["nbgrader"] = {
            "grade": test, "grade_id": grade_id, "locked": test, "schema_version": 3,
            "solution": not test, "task": False, **({"points": points} if test else {})}
    return cell


def _copy_repository(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = REPO_ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _run(args, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}      # the copy's packages, not the checkout's
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_adding_an_exercise_is_its_module_its_cells_and_one_command(tmp_path):
    repo = tmp_path / "repo"
    _copy_repository(repo)
    # 1. the module, registered in course order
    (repo / "helpers/exercises/double.py").write_text(TOY, encoding="utf-8")
    registry = repo / "helpers/course/registry.py"
    text = registry.read_text(encoding="utf-8")
    assert '"pairwise_scores", "most_similar"),' in text
    registry.write_text(text.replace('"pairwise_scores", "most_similar"),',
                                     '"pairwise_scores", "most_similar", "double"),'))
    # 2. the solution cells: instructions, answer, the one-line test
    path = repo / "solutions/01_dot_products/01_dot_products.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    at = next(i for i, c in enumerate(nb["cells"])
              if c["metadata"].get("nbgrader", {}).get("grade_id") == "test_most_similar") + 1
    nb["cells"][at:at] = [
        _cell("markdown", INSTRUCTIONS),
        _cell("code", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * np.asarray(x, dtype=float)\n"
                      "    ### END SOLUTION", "double"),
        _cell("code", 'check("double", double)\n### BEGIN HIDDEN TESTS\n'
                      'check("double", double, hidden=True)\n### END HIDDEN TESTS', "test_double", 1)]
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    # 3. one command
    done = _run(["-m", "autograder", "regenerate"], repo)
    assert done.returncode == 0, done.stdout + done.stderr

    cells = json.loads((repo / "notebooks/01_dot_products/01_dot_products.ipynb").read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells]
    assert any(s.startswith("def double(x):") for s in sources)
    assert not any("2 * np.asarray" in s for s in sources)          # the solution is gone
    headings = [s.splitlines()[0] for s in sources if s.startswith("## Exercise")]
    assert headings[-1] == "## Exercise 5: `double(x)`", headings
    assert any("Multiply by two." in s for s in sources)              # the hints, rendered
    assert "`most_similar`, `double`" in (repo / "README.md").read_text()
    assert "`double(x)`" in (repo / "docs/contract.md").read_text()

    # every guard of the derived files holds in the copy: the released notebook that
    # changed is what a release makes of its solution (the whole course's release is
    # compared by tests/autograder/release/test_release.py, on the repository itself) ...
    synced = _run(["-c", "import sys, tempfile\nfrom pathlib import Path\n"
                   "from autograder import NOTEBOOKS_DIR\n"
                   "from autograder.release.notebooks import release\n"
                   "fresh = Path(tempfile.mkdtemp()) / 'nb'\n"
                   "release(fresh, ['01_dot_products'])\n"
                   "def files(d):\n"
                   "    return {p.relative_to(d): p.read_bytes() for p in sorted(d.rglob('*'))\n"
                   "            if p.is_file() and '.ipynb_checkpoints' not in p.parts}\n"
                   "sys.exit(files(fresh / '01_dot_products') != "
                   "files(NOTEBOOKS_DIR / '01_dot_products'))\n"], repo)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    # ... and the other guards
    checks = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-n", "0",
                   "tests/autograder/release/test_release.py", "tests/helpers/test_exercise_units.py", "tests/notebooks/test_teaching.py",
                   "tests/tools/test_make_examples.py", "tests/helpers/test_contracts.py", "-k",
                   "stored or contract or told_apart or up_to_date or twin or "
                   "exercise_cells or teaching_fields or what_to_write or rhythm or hint"],
                  repo, timeout=1800)
    assert checks.returncode == 0, checks.stdout[-4000:] + checks.stderr[-2000:]
    # 4. its catalogue: without it the suite says what to write ...
    missing = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                    "tests/helpers/test_catalogue_instant.py", "-k",
                    "has_its_catalogue_module"], repo)
    assert missing.returncode == 1 and "no catalogue module for double" in missing.stdout, \
        missing.stdout[-4000:] + missing.stderr[-2000:]
    # ... with it, its answers are judged by the instant check and graded by the real
    # command; and the tables, the learner's API and the layout hold in the copy
    (repo / "tests/catalogue/double.py").write_text(CATALOGUE, encoding="utf-8")
    graded = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-rA",
         "tests/helpers/test_catalogue_instant.py", "tests/autograder/engine/test_catalogue.py",
         "tests/autograder/release/test_tables.py", "tests/helpers/test_learner_api.py",
         "tests/autograder/test_layout.py", "-k", "double or has_its_catalogue_module or "
         "wrong_and_correct or test_tables or test_learner_api or test_layout"],
        cwd=repo, env={**os.environ, "PYTHONPATH": str(repo), "CATALOGUE_ONLY": "double"},
        capture_output=True, text=True, timeout=1800)
    assert graded.returncode == 0, graded.stdout[-4000:] + graded.stderr[-2000:]
    assert "test_tables.py::test_the_readme_lists_every_answer_cell" in graded.stdout
    assert "test_layout.py::test_no_import_circles" in graded.stdout
    for key in ("squared", "unknown_plus_two", "sum_with_itself", "loop"):
        assert f"double-{'wrong' if key in ('squared', 'unknown_plus_two') else 'correct'}-{key}" \
            in graded.stdout, key
    # its instant check judges answers
    judged = _run(["-c", "import numpy as np\nfrom helpers.checks import check, CheckFailed\n"
                   "check('double', lambda x: 2 * np.asarray(x))\n"
                   "try:\n    check('double', lambda x: np.asarray(x) ** 2)\n"
                   "except CheckFailed as e:\n    print('FAILED:', e)\n"], repo)
    assert judged.returncode == 0, judged.stderr
    assert "FAILED:" in judged.stdout and "you squared the vector" in judged.stdout
