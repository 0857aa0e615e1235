"""The tables written from the exercise registry: the README's course table and the rows
of docs/contract.md.

The "you write" column of ``README.md``'s table (between the markers below) lists, for
each notebook, the exercises of ``helpers.course.NOTEBOOKS`` in course order: the
registry is the one list, and ``python -m autograder regenerate`` rewrites the column
(the "you see" column is prose, kept as written; a notebook new to the table gets a row
whose prose is its title, to edit).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR

README = REPO_ROOT / "README.md"
BEGIN, END = "<!-- course table: begin -->", "<!-- course table: end -->"
HEADER = "| notebook | you write | you see |\n|---|---|---|\n"


def _title(assignment: str, solutions: Path) -> str:
    """The first ``# `` heading of the notebook (the prose of a new row)."""
    path = solutions / assignment / f"{assignment}.ipynb"
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return ""
    for cell in cells:
        text = "".join(cell.get("source", "")) if cell.get("cell_type") == "markdown" else ""
        for line in text.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return ""


def course_table(old: str, notebooks: dict[str, tuple[str, ...]],
                 solutions: Path = SOLUTIONS_DIR) -> str:
    """The table for ``notebooks`` (the registry), keeping each row's prose from ``old``."""
    prose, label = {}, {}
    for line in old.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`(\w+)`(.*)", cells[0]) if len(cells) >= 3 else None
        if match:
            label[match.group(1)] = cells[0]          # `09_sentence_encoder` (capstone)
            prose[match.group(1)] = " | ".join(cells[2:])
    rows = []
    for assignment in sorted(set(notebooks) | {a for a in prose if (solutions / a).is_dir()}):
        names = notebooks.get(assignment, ())
        wrote = ", ".join(f"`{n}`" for n in names) or "—"
        rows.append(f"| {label.get(assignment, f'`{assignment}`')} | {wrote} | "
                    f"{prose.get(assignment) or _title(assignment, solutions)} |\n")
    return HEADER + "".join(rows)


def readme_text(text: str, solutions: Path = SOLUTIONS_DIR) -> str:
    """The README's text ``text`` with the table between its markers written anew."""
    from helpers.course import NOTEBOOKS

    start, end = text.index(BEGIN) + len(BEGIN) + 1, text.index(END)
    return text[:start] + course_table(text[start:end], NOTEBOOKS, solutions) + text[end:]


def write_readme(readme: Path = README, solutions: Path = SOLUTIONS_DIR) -> bool:
    """Rewrite the table between the markers of ``readme``; True when it changed."""
    text = readme.read_text(encoding="utf-8")
    new = readme_text(text, solutions)
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text


CONTRACT = REPO_ROOT / "docs" / "contract.md"
_CONTRACT_ROW = re.compile(r"^\|[^|]*\| `(\w+)\(", flags=re.M)


def _contract_row(name: str, first_of_notebook: bool) -> str:
    """A new exercise's row of docs/contract.md: its signature, the first line of its
    reference's docstring (what it returns: edit it to say so), the functions it uses."""
    import inspect

    from helpers import course

    ex = course.get(name)
    notebook = course.notebook_of(name)[:2] if first_of_notebook else ""
    params = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                       for p in inspect.signature(ex.signature).parameters.values())
    doc = (inspect.getdoc(ex.reference) or "").strip().splitlines()
    uses = ", ".join(f"`{u}`" for u in ex.uses)
    return f"| {notebook} | `{name}({params})` | {doc[0] if doc else ''} | {uses} |\n"


def contract_text(text: str) -> str:
    """docs/contract.md's text ``text`` with a row for every exercise of the registry
    missing from its table, placed after the exercise before it in course order."""
    from helpers import course

    lines = text.splitlines(keepends=True)
    names = list(course.names())
    for i, name in enumerate(names):
        listed = {m.group(1): n for n, line in enumerate(lines)
                  for m in [_CONTRACT_ROW.match(line)] if m}
        if name in listed:
            continue
        before = names[i - 1] if i else None
        at = listed[before] + 1 if before in listed else max(listed.values(), default=0) + 1
        first = before is None or course.notebook_of(before) != course.notebook_of(name)
        lines.insert(at, _contract_row(name, first))
    return "".join(lines)


def write_contract(contract: Path = CONTRACT) -> bool:
    """Give every exercise missing from docs/contract.md's table a row (:func:`contract_text`);
    True when it changed."""
    text = contract.read_text(encoding="utf-8")
    new = contract_text(text)
    if new != text:
        contract.write_text(new, encoding="utf-8")
    return new != text
