"""What formgrader shows of a graded submission (``gradebook push`` writes it as
``autograded/<student>/<assignment>/<notebook>.ipynb``): built from the grading record,
never by running anything; a student's Markdown made inert."""

from __future__ import annotations

import copy

from autograder import safe_text
from autograder.notebook import cells as nbcells
from autograder.results.records import csv_number


def inert_markdown(text: str) -> str:
    """A student's Markdown with no HTML left in it: ``&``, ``<`` and ``>`` become
    entities (shown as the characters), so Markdown formatting and math still render
    but no tag, script or event handler reaches the grading page."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _verdict(row: dict) -> str:
    line = (f"autograder: {csv_number(row['points'])} / {csv_number(row['max_points'])} "
            f"point(s), {row['status']}")
    if row.get("message") and row["status"] != "ok":
        line += f": {row['message']}"
    return safe_text.terminal(line) + "\n"


def shown_notebook(solution: dict, record: dict) -> dict:
    """The notebook formgrader shows for ``record``: the solution notebook's cells, each
    answer cell holding the student's answer, no outputs, and this grader's verdict under
    each test cell. Only cell sources and nbgrader metadata are kept."""
    rows = {row["grade_id"]: row for row in record["cells"]}
    answers = record.get("answers") or {}
    cells = []
    for n, cell in enumerate(solution.get("cells", [])):
        kind = nbcells.kind(cell)
        gid = nbcells.grade_id(cell)
        ctype = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown") \
            else "markdown"
        source = nbcells.source_of(cell)
        new: dict = {"cell_type": ctype, "id": f"cell-{n}", "metadata": {}, "source": source}
        nbg = nbcells.nbgrader(cell)
        if nbg:
            new["metadata"]["nbgrader"] = copy.deepcopy(nbg)
        if kind in (nbcells.ANSWER, nbcells.MANUAL) and gid is not None:
            text = str(answers.get(gid, ""))
            if ctype == "markdown":
                text = inert_markdown(text) if text.strip() else "*(no answer)*"
            new["source"] = text if text.strip() else "# (no answer)"
        if ctype == "code":
            new["outputs"], new["execution_count"] = [], None
            if kind == nbcells.TEST and gid in rows:
                new["outputs"] = [{"output_type": "stream", "name": "stdout",
                                   "text": _verdict(rows[gid])}]
        cells.append(new)
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"language_info": {"name": "python"},
                         "kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}}}
