"""A catalogue of answers to every exercise, for testing the grader itself.

One module per exercise (``tests/catalogue/<function>.py``: the 20 contract functions and
the notebooks' own exercises, ``EXTRA_EXERCISES``) holds the source of answer cells,
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
hidden tests removed). See ``tests/test_catalogue.py``.
"""

from __future__ import annotations

import ast
import copy
import importlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager

import helpers
from autograder import SOLUTIONS_DIR
from autograder import cells as nbcells

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


#: The notebooks' own exercises (not in the contract), catalogued the same way. Their
#: modules also hold ``CASES``, a list of ``(args, kwargs)``: the catalogue check compares
#: each entry with the solution notebook's own function on them (there is no reference in
#: helpers for most of these). Their test cells are the notebooks' own asserts, or
#: ``check_exercise`` for the capstones (09, 10).
EXTRA_EXERCISES = (
    "stack_tokens", "most_similar", "softmax_with_temperature", "simple_attention_weights",
    "find_slips", "wash_we", "causal_padding_mask", "count_block_parameters",
    "top_k_distribution",
    "gelu", "bert_layer", "mean_pool", "sentence_embeddings",
    "rms_norm", "apply_rope", "swiglu", "grouped_query_attention", "llama_block",
)


def exercises() -> list[str]:
    """Every catalogued exercise: the contract's functions, then the notebooks' own.
    ``CATALOGUE_ONLY=name,name`` (a development knob) keeps only those."""
    names = list(helpers.CONTRACT_FUNCTIONS) + list(EXTRA_EXERCISES)
    only = [n.strip() for n in os.environ.get("CATALOGUE_ONLY", "").split(",") if n.strip()]
    return [n for n in names if n in only] if only else names


def entries() -> list[Entry]:
    """Every entry of every exercise's module, in course order."""
    out = []
    for name in exercises():
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


def text(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


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


def _solution_code(source: str) -> str:
    """An answer cell's solution as a learner's cell: the marker lines removed."""
    return "".join(line for line in source.splitlines(keepends=True)
                   if line.strip() not in (BEGIN_SOLUTION, END_SOLUTION))


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
                cell["source"] = _stub_code(source) if stubs else _solution_code(source)
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


def _imports(source: str) -> ast.Module:
    """The top-level import statements of a cell (nothing else of it runs)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        body = []
    return ast.Module([n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))], [])


def defined_function(function: str, source: str | None = None):
    """``function`` as the notebook defines it: the top-level imports of its other cells
    and its answer cells run in order (the solutions; ``source`` in place of the
    function's own answer cell when given)."""
    answers = None if source is None else {function: source}
    nb = student_notebook(assignments()[function], answers)
    namespace: dict = {}
    to_python = TransformerManager().transform_cell                # IPython magics -> Python
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        code = to_python(text(cell))
        if nbcells.is_answer(cell):
            exec(code, namespace)
        elif not nbcells.is_test(cell):
            exec(compile(_imports(code), "<imports>", "exec"), namespace)
    return namespace[function]
