"""A catalogue of answers to every exercise, for testing the grader itself.

One module per exercise (``tests/catalogue/<function>.py``: every exercise of the registry,
``helpers/exercises``) holds the source of answer cells,
written as a learner would write them:

* ``WRONG = {key: (source, words)}``: the mistakes learners really make. Graded through
  the real pipeline, each must lose the points of the function's test cells, and the
  grader's message or feedback page must contain ``words`` (case-insensitive): for a
  known mistake, the words that name it ("not divided by sqrt(d_k)"). Keys starting with
  ``unknown_`` are mistakes no diagnosis knows: their feedback must show the input and
  expected against got (and ``words``, e.g. "first difference" for arrays).
* ``CORRECT = {key: source}``: right answers written differently (loops, ``einsum``,
  ``-inf`` or a large negative number, other stable forms, code that makes NumPy warn).
  Each must earn every autograded point of its notebook.

A submission is built from the function's solution notebook (``solutions/``): the
answer cell whose ``grade_id`` is the function gets the catalogue source, every other
answer cell keeps the solution's code, and test cells are what learners receive (the
hidden tests removed). See ``tests/autograder/engine/test_catalogue.py``.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


from helpers import course as registry
from autograder import SOLUTIONS_DIR
from autograder.notebook import cells as nbcells

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


@dataclass(frozen=True)
class Entry:
    """One catalogue answer: ``kind`` is "wrong" or "correct"; ``words`` for wrong ones."""

    function: str
    kind: str
    key: str
    source: str
    words: str = ""

    @property
    def id(self) -> str:
        return f"{self.function}-{self.kind}-{self.key}"


def exercises() -> list[str]:
    """Every catalogued exercise: all of the registry's (``helpers/exercises``), in course
    order. ``CATALOGUE_ONLY=name,name`` (a development knob) keeps only those."""
    names = list(registry.names())
    only = [n.strip() for n in os.environ.get("CATALOGUE_ONLY", "").split(",") if n.strip()]
    return [n for n in names if n in only] if only else names


def missing() -> list[str]:
    """The exercises of the registry without a module here (a new exercise's catalogue
    is still to write: ``tests/helpers/test_catalogue_instant.py`` fails and says so)."""
    here = Path(__file__).parent
    return [name for name in exercises() if not (here / f"{name}.py").is_file()]


def entries() -> list[Entry]:
    """Every entry of every exercise's module, in course order (those :func:`missing`
    skipped)."""
    out = []
    for name in exercises():
        if name in missing():
            continue
        module = importlib.import_module(f"catalogue.{name}")
        for key, (source, words) in module.WRONG.items():
            out.append(Entry(name, "wrong", key, source, words))
        for key, source in module.CORRECT.items():
            out.append(Entry(name, "correct", key, source))
    return out


# ---------------------------------------------------------------------------------------
# Notebooks.
# ---------------------------------------------------------------------------------------


nbgrader = nbcells.nbgrader


text = nbcells.source_of


def _without(source: str, begin: str, end: str) -> str:
    out, inside = [], False
    for line in source.splitlines(keepends=True):
        if line.strip().startswith(begin):
            inside = True
        elif line.strip().startswith(end):
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


def _stub_code(source: str) -> str:
    """An answer cell as released: the solution block replaced by NotImplementedError."""
    out, inside = [], False
    for line in source.splitlines(keepends=True):
        if line.strip() == BEGIN_SOLUTION:
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}raise NotImplementedError()\n")
        elif line.strip() == END_SOLUTION:
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


@lru_cache(maxsize=None)
def assignments() -> dict[str, str]:
    """Answer ``grade_id`` -> the assignment whose solution notebook holds that cell."""
    found = {}
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            meta = nbgrader(cell)
            if nbcells.is_answer(cell):
                found[meta["grade_id"]] = path.parent.name
    return found


def solution_path(assignment: str) -> Path:
    return SOLUTIONS_DIR / assignment / f"{assignment}.ipynb"


@lru_cache(maxsize=None)
def _solution(assignment: str) -> str:
    return solution_path(assignment).read_text(encoding="utf-8")


def student_notebook(assignment: str, answers: dict[str, str] | None = None,
                     stubs: bool = False) -> dict:
    """What a learner hands in: the released notebook with answers filled in.

    Answer cells hold the solution's code (``stubs=False``) or the released stub
    (``stubs=True``), except those named in ``answers`` (grade_id -> source). Test cells
    are the released ones: their hidden tests are not in the learner's copy.
    """
    nb = json.loads(_solution(assignment))
    answers = dict(answers or {})
    for cell in nb["cells"]:
        meta = nbgrader(cell)
        gid = meta.get("grade_id")
        cell["outputs"] = [] if cell["cell_type"] == "code" else cell.get("outputs")
        if cell["cell_type"] == "code":
            cell["execution_count"] = None
        else:
            cell.pop("outputs", None)
        if nbcells.is_answer(cell):
            if gid in answers:
                cell["source"] = answers.pop(gid)
            else:
                source = text(cell)
                cell["source"] = _stub_code(source) if stubs else nbcells.without_solution_markers(source)
        elif nbcells.is_test(cell):
            cell["source"] = _without(text(cell), BEGIN_HIDDEN, END_HIDDEN)
    if answers:
        raise KeyError(f"no answer cells {sorted(answers)} in {assignment}")
    return nb


def catalogue_notebook(entry: Entry) -> dict:
    """The submission of one catalogue entry."""
    return student_notebook(assignments()[entry.function], {entry.function: entry.source})


def graded_test_cells(assignment: str) -> dict[str, float]:
    """grade_id -> points of every autograded test cell of the solution notebook."""
    nb = json.loads(_solution(assignment))
    return {nbgrader(c)["grade_id"]: float(nbgrader(c).get("points", 0)) for c in nb["cells"]
            if nbcells.is_test(c)}


def cells_testing(function: str, assignment: str) -> list[str]:
    """The test cells about ``function`` (``test_<function>`` or ``test_<function>_...``)."""
    others = [g for g in assignments() if g != function and g.startswith(function + "_")]
    return [g for g in graded_test_cells(assignment)
            if (g == f"test_{function}" or g.startswith(f"test_{function}_"))
            and not any(g == f"test_{o}" or g.startswith(f"test_{o}_") for o in others)]


def hidden_lines(assignment: str | None = None, min_chars: int = 12) -> set[str]:
    """Every line of a hidden-test block in the solution notebook of ``assignment`` (all
    of them when None), stripped, at least ``min_chars`` long."""
    lines = set()
    for path in sorted(SOLUTIONS_DIR.glob(f"{assignment or '*'}/*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if nbgrader(cell).get("grade"):
                src = text(cell)
                kept = _without(src, BEGIN_HIDDEN, END_HIDDEN)
                hidden = set(src.splitlines()) - set(kept.splitlines())
                lines |= {h.strip() for h in hidden
                          if len(h.strip()) >= min_chars and BEGIN_HIDDEN not in h
                          and END_HIDDEN not in h}
    return lines


def deepcopy_nb(nb: dict) -> dict:
    return copy.deepcopy(nb)



def function_of(entry: Entry):
    """The entry's function, defined in a namespace like a notebook's: NumPy, the course's
    helpers (earlier exercises are the course's own, as learners call them), then the
    entry's cell."""
    import numpy as np

    ns = {"np": np, "numpy": np}
    exec("import helpers\nfrom helpers import *\nimport math\nfrom helpers.checks import check, quiet",
         ns)
    for dep in registry.get(entry.function).uses:     # earlier functions: the course's
        ns[dep] = registry.get(dep).answer
    exec(compile(entry.source, f"<{entry.id}>", "exec"), ns)
    return ns[entry.function]
