"""The solution notebook, read once: its cells (one model of a graded cell), their hidden
blocks, and which exercise cases each test cell's ``check(...)`` lines stand for."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from autograder import SOLUTIONS_DIR
from autograder.notebook import cells as cells_mod


# ---------------------------------------------------------------------------------------
# The source notebook.
# ---------------------------------------------------------------------------------------


BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"


@dataclass(frozen=True)
class SourceCell:
    cell_type: str
    kind: str                 # answer | test | manual | other
    grade_id: str | None
    points: float
    source: str

    @property
    def exercise(self) -> str | None:
        """The exercise this cell belongs to: an answer's or a written answer's own
        ``grade_id``; for a test cell, the exercise its first ``check("<name>", ...)`` line
        names (the one place that decides which test checks which answer)."""
        return self.grade_id if self.kind != "test" else checked_exercise(self.source)

    @property
    def visible(self) -> str:
        """The source without its hidden-tests block (what students were given)."""
        return strip_hidden(self.source)


@dataclass(frozen=True)
class Source:
    assignment: str
    notebook: str
    path: Path
    cells: tuple[SourceCell, ...]

    def by_id(self, kind: str) -> dict[str, SourceCell]:
        return {c.grade_id: c for c in self.cells if c.kind == kind and c.grade_id}


def _partition_hidden(text: str) -> tuple[str, str]:
    """``(visible lines, hidden lines stripped)`` of a test cell; markers dropped."""
    visible, hidden_lines, hidden = [], [], False
    for line in text.splitlines(keepends=True):
        if line.strip().startswith(BEGIN_HIDDEN):
            hidden = True
        elif line.strip().startswith(END_HIDDEN):
            hidden = False
        elif hidden:
            hidden_lines.append(line.strip() + "\n")
        else:
            visible.append(line)
    return "".join(visible), "".join(hidden_lines)


def strip_hidden(text: str) -> str:
    """A test cell without its hidden block (what the learner's notebook shows)."""
    return _partition_hidden(text)[0]


def hidden_block(text: str) -> str:
    """The hidden block's lines, stripped (what feedback must never show)."""
    return _partition_hidden(text)[1]


_nbgrader = cells_mod.nbgrader
_kind = cells_mod.kind_of


@lru_cache(maxsize=64)
def _load_source(path: Path, mtime: float) -> Source:
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for cell in (nb.get("cells") or []) if isinstance(nb, dict) else []:
        nbg = _nbgrader(cell)
        kind = _kind(cell.get("cell_type", ""), nbg)
        gid = nbg.get("grade_id") if kind != "other" else None
        cells.append(SourceCell(cell.get("cell_type", ""), kind, gid,
                                float(nbg.get("points", 0) or 0), cells_mod.source_of(cell)))
    return Source(path.parent.name, path.name, path, tuple(cells))


def source_path(assignment: str, notebook: str, solutions: Path | None = None) -> Path | None:
    """The solution notebook for a submitted ``<assignment>/<notebook>``, if any."""
    solutions = SOLUTIONS_DIR if solutions is None else Path(solutions)
    if not re.fullmatch(r"[\w.-]+", assignment) or assignment.startswith("."):
        return None
    folder = solutions / assignment
    if not folder.is_dir():
        return None
    exact = folder / notebook
    if exact.is_file():
        return exact
    candidates = sorted(folder.glob("*.ipynb"))
    return candidates[0] if len(candidates) == 1 else None


def course_notebooks(solutions: Path | None = None) -> dict[tuple[str, str], list[SourceCell]]:
    """``{(assignment, notebook file name): graded cells}`` (test and manual cells, in
    order) for every solution notebook: what is graded and how many points each cell is
    worth, from the same reading of the file as the engine's."""
    solutions = SOLUTIONS_DIR if solutions is None else Path(solutions)
    found: dict[tuple[str, str], list[SourceCell]] = {}
    if not solutions.is_dir():
        return found
    for folder in sorted(p for p in solutions.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(folder.glob("*.ipynb")):
            source = _load_source(path, path.stat().st_mtime)
            found[(folder.name, path.name)] = [c for c in source.cells
                                               if c.kind in ("test", "manual") and c.grade_id]
    return found


def load_source(assignment: str, notebook: str | None = None,
                solutions: Path | None = None) -> Source:
    path = source_path(assignment, notebook or f"{assignment}.ipynb", solutions)
    if path is None:
        raise FileNotFoundError(f"no solution notebook for {assignment}/{notebook}")
    return _load_source(path, path.stat().st_mtime)


# ---------------------------------------------------------------------------------------
# Which test cell checks which contract function, on which cases.
# ---------------------------------------------------------------------------------------


def _exercise_names() -> tuple[str, ...]:
    from helpers import course

    return course.names()


def _check_call(node) -> tuple[str, bool, str | None] | None:
    """``check("name", fn, hidden=..., group=...)`` -> (name, hidden, group)."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if fname != "check" or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    name = node.args[0].value
    if not isinstance(name, str):
        return None
    hidden, group = False, None
    for kw in node.keywords:
        if kw.arg == "hidden" and isinstance(kw.value, ast.Constant):
            hidden = bool(kw.value.value)
        elif kw.arg == "group" and isinstance(kw.value, ast.Constant):
            group = kw.value.value if isinstance(kw.value.value, str) else None
    return name, hidden, group


def checked_exercise(text: str) -> str | None:
    """The exercise named by the first ``check("<name>", ...)`` call of a test cell's
    source (hidden block included), or None."""
    try:
        tree = ast.parse(text.replace(BEGIN_HIDDEN, "").replace(END_HIDDEN, ""))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    calls = [c for c in map(_check_call, ast.walk(tree)) if c]
    return calls[0][0] if calls else None          # walk order: the first statement's


@dataclass(frozen=True)
class CaseSpec:
    """A set of check cases: those of exercise ``function`` (visible/hidden/both), maybe
    one group."""

    function: str
    hidden: bool | None       # None: visible and hidden
    group: str | None
    in_kernel: bool           # whether the notebook run executes these checks


def case_specs(cell: SourceCell, kernel_source: str) -> list[CaseSpec]:
    """The check cases a source test cell stands for: its ``check(...)`` calls (empty:
    the cell checks nothing the grader knows, an error in the course's source)."""
    functions = set(_exercise_names())
    specs = []
    try:
        tree = ast.parse(cell.source.replace(BEGIN_HIDDEN, "").replace(END_HIDDEN, ""))
        kernel_tree = ast.parse(kernel_source)
    except SyntaxError:
        return []
    in_kernel = {_check_call(n) for n in ast.walk(kernel_tree)} - {None}
    for node in ast.walk(tree):
        call = _check_call(node)
        if call and call[0] in functions:
            specs.append(CaseSpec(call[0], call[1], call[2], call in in_kernel))
    return list(dict.fromkeys(specs))


