"""What an nbgrader cell is, in one place: answer, test, manual or other.

nbgrader marks cells in ``metadata.nbgrader``: ``solution`` (the learner writes here),
``grade`` (it earns points), ``task`` (a graded task without a cell of its own). This
course uses three graded kinds:

* ``answer``: a code cell with ``solution`` and not ``grade``: the learner's code;
* ``test``: a code cell with ``grade`` and not ``solution``: autograded, it calls
  ``check("<exercise>", <exercise>)`` (and again with ``hidden=True`` in its hidden block);
* ``manual``: a cell with both ``grade`` and ``solution`` (a written answer), or a task:
  graded by hand.

Everything else is ``other``. Works on plain dicts and on ``nbformat`` notebook nodes.
"""

from __future__ import annotations

ANSWER, TEST, MANUAL, OTHER = "answer", "test", "manual", "other"


def nbgrader(cell) -> dict:
    """The cell's ``metadata.nbgrader`` (an empty dict when missing or malformed)."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def kind_of(cell_type: str, nbg: dict) -> str:
    """The kind of a cell of type ``cell_type`` with nbgrader metadata ``nbg``."""
    grade, solution = bool(nbg.get("grade")), bool(nbg.get("solution"))
    if (grade and solution) or nbg.get("task"):
        return MANUAL
    if grade and cell_type == "code":
        return TEST
    if solution and cell_type == "code":
        return ANSWER
    return OTHER


def kind(cell) -> str:
    """The kind of a notebook cell (see the module docstring)."""
    return kind_of(cell.get("cell_type", "") if isinstance(cell, dict) else "", nbgrader(cell))


def is_answer(cell) -> bool:
    return kind(cell) == ANSWER


def is_test(cell) -> bool:
    return kind(cell) == TEST


def is_manual(cell) -> bool:
    return kind(cell) == MANUAL


def grade_id(cell) -> str | None:
    gid = nbgrader(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


#: nbgrader's marker lines around the model answer in a solution's answer cell.
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def text_of(source) -> str:
    """A cell's ``source`` as one string (nbformat stores a string or a list of lines;
    anything else, from a hostile file, is empty)."""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def source_of(cell) -> str:
    """The source of ``cell`` as one string (:func:`text_of`)."""
    return text_of(cell.get("source", "") if isinstance(cell, dict) else "")


def without_solution_markers(source: str) -> str:
    """A solution's answer cell as a learner's cell: the model answer, its marker lines
    removed."""
    return "".join(line for line in source.splitlines(keepends=True)
                   if line.strip() not in SOLUTION_MARKERS)


def with_model_answers(released, solution, written: str | None = None):
    """A copy of the released notebook ``released`` whose answer cells hold the model
    answers of the solution notebook ``solution`` (:func:`without_solution_markers`) and,
    when ``written`` is given, whose written answers (manual cells the learner writes)
    hold it (a written answer in code: the model's). Plain dicts and ``nbformat``
    notebooks alike."""
    import copy

    nb = copy.deepcopy(released)
    answers = {grade_id(c): without_solution_markers(source_of(c))
               for c in solution["cells"] if nbgrader(c).get("solution")}
    for cell in nb["cells"]:
        if grade_id(cell) not in answers:
            continue
        if is_answer(cell):
            cell["source"] = answers[grade_id(cell)]
        elif written is not None and nbgrader(cell).get("solution"):
            cell["source"] = answers[grade_id(cell)] if cell.get("cell_type") == "code" \
                else written
    return nb
