"""Editing the notebook's structure: test cells, nbgrader metadata, points.

The grader takes test cells and points from solutions/, never from the submission.
"""

from attacks import WRONG_SOFTMAX, Attack


def _cell(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"]
                if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _edit_test(nb):
    _cell(nb, "test_softmax")["source"] = "print('softmax: 6/6 checks passed')\n"


def _delete_tests(nb):
    nb["cells"] = [c for c in nb["cells"]
                   if not c.get("metadata", {}).get("nbgrader", {}).get("grade")]


def _inflate_points(nb):
    for c in nb["cells"]:
        meta = c.get("metadata", {}).get("nbgrader")
        if meta and meta.get("grade"):
            meta["points"] = 100


def _bonus_cell(nb):
    nb["cells"].append({
        "cell_type": "code", "execution_count": None, "id": "bonus", "outputs": [],
        "metadata": {"nbgrader": {"grade": True, "solution": False, "locked": True,
                                  "task": False, "grade_id": "test_extra_credit",
                                  "points": 50, "schema_version": 3}},
        "source": "pass\n"})


def _answer_as_test(nb):
    meta = _cell(nb, "softmax")["metadata"]["nbgrader"]
    meta.update(grade=True, solution=False, points=10)


def _rename_test(nb):
    cell = _cell(nb, "test_softmax")
    cell["metadata"]["nbgrader"]["grade_id"] = "test_softmax_mine"
    cell["source"] = "pass\n"


def _test_to_markdown(nb):
    cell = _cell(nb, "test_softmax")
    cell["cell_type"] = "markdown"
    cell.pop("outputs", None)
    cell.pop("execution_count", None)


def _strip_test_metadata(nb):
    cell = _cell(nb, "test_softmax")
    cell["metadata"].pop("nbgrader")
    cell["source"] = "check = lambda *a, **k: None\n" + cell["source"]


def _duplicate_answer(nb):
    cell = _cell(nb, "softmax")
    index = nb["cells"].index(cell)
    wrong = "def softmax(z, axis=-1):\n    return np.full(np.shape(z), 0.5)\n"
    first = dict(cell, source=wrong, id="dup")
    nb["cells"].insert(index, first)


def _kernel_and_assignment_metadata(nb):
    nb["metadata"]["kernelspec"] = {"name": "bash", "display_name": "Bash", "language": "bash"}
    nb["metadata"]["nbgrader"] = {"total_points": 1000}
    for c in nb["cells"]:
        c.setdefault("metadata", {})["deletable"] = True


ATTACKS = [
    Attack("edit_test_cell", "02_softmax", "softmax", WRONG_SOFTMAX,
           "replaces the test cell's code by a print of the success line", edit=_edit_test,
           flagged="was edited"),
    Attack("delete_test_cells", "02_softmax", "softmax", WRONG_SOFTMAX,
           "deletes every test cell", edit=_delete_tests, flagged="was deleted"),
    Attack("inflate_points", "02_softmax", "softmax", "", answers="solutions", expect="honest",
           why="sets the points of every graded cell to 100 (correct answers otherwise)",
           edit=_inflate_points),
    Attack("extra_credit_cell", "02_softmax", "softmax", "", answers="solutions", expect="honest",
           why="adds a graded test cell of its own worth 50 points", edit=_bonus_cell,
           flagged="unknown test cell"),
    Attack("answer_marked_as_test", "02_softmax", "softmax", WRONG_SOFTMAX,
           "marks the answer cell as a graded test cell worth 10 points", edit=_answer_as_test),
    Attack("rename_test_cell", "02_softmax", "softmax", WRONG_SOFTMAX,
           "renames the test cell's grade_id and empties it", edit=_rename_test,
           flagged="unknown test cell"),
    Attack("test_cell_to_markdown", "02_softmax", "softmax", WRONG_SOFTMAX,
           "turns the test cell into a markdown cell", edit=_test_to_markdown),
    Attack("strip_test_metadata", "02_softmax", "softmax", WRONG_SOFTMAX,
           "removes the test cell's nbgrader metadata and disables check inside it",
           edit=_strip_test_metadata, flagged="was deleted"),
    Attack("duplicate_answer_cell", "02_softmax", "softmax", WRONG_SOFTMAX,
           "hands in two answer cells with the same grade_id, a wrong one first",
           edit=_duplicate_answer, flagged="duplicated cell"),
    Attack("notebook_metadata", "02_softmax", "softmax", "", answers="solutions", expect="honest",
           why="changes the kernel, the notebook's nbgrader metadata and cell flags",
           edit=_kernel_and_assignment_metadata),
]
