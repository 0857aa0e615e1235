"""notebooks/ is generated from solutions/ and both are stored without outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
from autograder.notebook import stored as notebook_format
from autograder.release.notebooks import assignments, release

ALL_NOTEBOOKS = sorted(
    p for d in (SOLUTIONS_DIR, NOTEBOOKS_DIR) for p in d.rglob("*.ipynb")
    if ".ipynb_checkpoints" not in p.parts
)


def test_layout_assignment_folder_holds_its_notebook():
    names = assignments()
    assert names, "solutions/ holds no assignment"
    for name in names:
        assert (SOLUTIONS_DIR / name / f"{name}.ipynb").is_file(), name


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_notebook_stored_without_outputs_and_normalized(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, (
                f"{path} is stored with outputs: run `python -m autograder normalize`"
            )
    assert notebook_format.is_normalized(path), (
        f"{path} has volatile metadata: run `python -m autograder normalize {path}`"
    )


@pytest.mark.slow
def test_notebooks_are_in_sync_with_solutions(tmp_path: Path):
    release(tmp_path)
    fresh = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    stored = {
        p.relative_to(NOTEBOOKS_DIR) for p in NOTEBOOKS_DIR.rglob("*")
        if p.is_file() and ".ipynb_checkpoints" not in p.parts
    }
    assert fresh == stored, "notebooks/ is stale: run `make release`"
    for rel in sorted(fresh):
        assert (tmp_path / rel).read_bytes() == (NOTEBOOKS_DIR / rel).read_bytes(), (
            f"notebooks/{rel} is stale: run `make release`"
        )


def test_stale_notebook_is_detected(tmp_path: Path):
    """The sync check above can fail: a released notebook edited by hand differs."""
    name = assignments()[0]
    release(tmp_path, [name])
    path = tmp_path / name / f"{name}.ipynb"
    nb = notebook_format.read(path)
    nb.cells[0].source += "\nedited by hand"
    notebook_format.write(nb, path)
    assert path.read_bytes() != (NOTEBOOKS_DIR / name / f"{name}.ipynb").read_bytes()
    # releasing again restores it and reports the change
    assert path in release(tmp_path, [name])


def test_release_removes_solutions_and_hidden_tests():
    for name in assignments():
        text = (NOTEBOOKS_DIR / name / f"{name}.ipynb").read_text(encoding="utf-8")
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS"):
            assert marker not in text, f"{name}: student notebook contains {marker}"
