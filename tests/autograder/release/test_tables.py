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
    assert course.EDGE_TABLE.read_text(encoding="utf-8") == course.edge_table_text()


def test_the_reference_checks_its_edges_as_each_contract_says():
    """The stored edge table holds every contract's arrays as the contract states them
    (read here from the contracts themselves), and the reference refuses an argument of
    the wrong rank, a dimension that disagrees, and an id past the contract's bound."""
    import numpy as np

    from helpers import reference

    stored = json.loads(course.EDGE_TABLE.read_text(encoding="utf-8"))
    for name in course.names():
        contract = course.get(name).contract
        if contract is None:
            continue
        arrays = {a for a, arg in contract.args.items() if arg.is_array or arg.fields}
        assert set(stored[name]) == arrays, name
        for a in arrays - {a for a, arg in contract.args.items() if arg.fields}:
            assert stored[name][a]["shape"] == contract.args[a].shape, (name, a)
    with pytest.raises(ValueError, match="x"):
        reference.layer_norm(np.ones((2, 3)), np.ones(4), np.zeros(4))     # d: 3 and 4
    with pytest.raises(ValueError):
        reference.dot(np.ones((2, 2)), np.ones(2))                         # [n] only
    E, P = np.ones((5, 3)), np.ones((4, 3))
    with pytest.raises(ValueError):
        reference.embed(np.array([0, 5]), E, P)                            # ids < V = 5
    assert reference.embed(np.array([0, 4]), E, P).shape == (2, 3)


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


def test_a_contract_missing_from_the_edge_table_says_to_regenerate(monkeypatch):
    import numpy as np

    from helpers import reference

    monkeypatch.setattr(reference, "_edges", lambda: {})
    reference._edge_spec.cache_clear()
    try:
        with pytest.raises(LookupError, match="python -m autograder regenerate"):
            reference.dot(np.ones(2), np.ones(2))
    finally:
        reference._edge_spec.cache_clear()
