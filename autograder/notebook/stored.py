"""How notebooks are stored in this repository: no outputs, stable metadata.

Both ``solutions/`` and ``notebooks/`` are kept in this form so that a diff shows only
what an author changed. :func:`normalize` is idempotent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import nbformat

#: The only notebook-level metadata kept.
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
#: Cell-level metadata keys kept (everything else, e.g. ``execution`` or ``scrolled``, goes).
CELL_METADATA_KEYS = ("nbgrader", "tags", "deletable", "editable")


def _stable_id(cell: dict, index: int, taken: set[str]) -> str:
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    base = grade_id or hashlib.sha1(f"{index}:{cell.get('source', '')}".encode()).hexdigest()[:8]
    base = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in base)[:64] or "cell"
    cid, n = base, 1
    while cid in taken:
        n += 1
        cid = f"{base}-{n}"
    return cid


def normalize(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Strip outputs and volatile metadata; give every cell a stable id."""
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.metadata = nbformat.from_dict(json.loads(json.dumps(NOTEBOOK_METADATA)))
    taken: set[str] = set()
    for index, cell in enumerate(nb.cells):
        cell.metadata = nbformat.from_dict(
            {k: cell.metadata[k] for k in CELL_METADATA_KEYS if k in cell.metadata}
        )
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.pop("attachments", None) if cell.cell_type != "markdown" else None
        cid = cell.get("id")
        if not cid or cid in taken:
            cid = _stable_id(cell, index, taken)
        cell["id"] = cid
        taken.add(cid)
    return nb


def dumps(nb: nbformat.NotebookNode) -> str:
    """The stored text of a notebook: normalized, as Jupyter writes it (sources as lists
    of lines, one-space indent, sorted keys), with a final newline."""
    text = nbformat.writes(normalize(nb), version=4)
    return text if text.endswith("\n") else text + "\n"


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def write(nb: nbformat.NotebookNode, path: Path) -> bool:
    """Write ``nb`` in stored form; return True when the file changed."""
    text = dumps(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def is_normalized(path: Path) -> bool:
    return path.read_text(encoding="utf-8") == dumps(read(path))
