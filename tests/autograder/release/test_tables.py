"""The tables written from the exercise registry (autograder/release/tables.py) are up to
date in the repository: the README's "you write" column lists each solution notebook's
answer cells, and docs/contract.md has a row for every exercise. Running
``python -m autograder regenerate`` would change neither."""

from __future__ import annotations

import json
import re

import pytest

from autograder import SOLUTIONS_DIR
from autograder.notebook import cells as nbcells
from autograder.release import tables
from helpers import course


def _answer_cells() -> dict[str, list[str]]:
    """Each solution notebook's answer cells, read from the notebooks themselves."""
    out = {}
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        out[path.parent.name] = [nbcells.grade_id(c) for c in cells if nbcells.is_answer(c)]
    return out


def _you_write(readme: str) -> dict[str, list[str]]:
    start, end = readme.index(tables.BEGIN), readme.index(tables.END)
    out = {}
    for line in readme[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.match(r"`(\w+)`", cells[0]) if len(cells) >= 3 else None
        if match:
            out[match.group(1)] = re.findall(r"`(\w+)`", cells[1])
    return out


def test_the_readme_lists_every_answer_cell_of_every_notebook():
    readme = tables.README.read_text(encoding="utf-8")
    assert _you_write(readme) == {a: names for a, names in _answer_cells().items() if names}


def test_regenerate_would_not_change_the_readme_or_the_contract_table():
    readme = tables.README.read_text(encoding="utf-8")
    assert tables.readme_text(readme) == readme
    contract = tables.CONTRACT.read_text(encoding="utf-8")
    assert tables.contract_text(contract) == contract


def test_a_stale_table_is_written_anew():
    """The check above can fail: a row missing an exercise, or a missing contract row,
    is put back."""
    readme = tables.README.read_text(encoding="utf-8")
    stale = readme.replace("`softmax`, `softmax_with_temperature`", "`softmax`", 1)
    assert stale != readme and tables.readme_text(stale) == readme
    contract = tables.CONTRACT.read_text(encoding="utf-8")
    row = next(line for line in contract.splitlines(keepends=True)
               if line.startswith("|") and "`gelu(" in line)
    fixed = tables.contract_text(contract.replace(row, "", 1))
    assert "`gelu(" in fixed and fixed.count("\n") == contract.count("\n")


def test_the_contract_table_names_only_exercises_of_the_registry():
    """docs/contract.md's rows are the registry's exercises, once each (a removed or
    renamed exercise leaves no row behind)."""
    rows = tables._CONTRACT_ROW.findall(tables.CONTRACT.read_text(encoding="utf-8"))
    assert sorted(rows) == sorted(course.names())
