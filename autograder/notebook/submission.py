"""A submitted notebook: read it (never trusting it), and merge it with its source."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.notebook.cells import source_of
from autograder.notebook.source import Source, SourceCell, _kind, _nbgrader


# ---------------------------------------------------------------------------------------
# Reading and merging the submission.
# ---------------------------------------------------------------------------------------


#: Submissions larger than this are not parsed.
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024


class InvalidSubmission(ValueError):
    pass


def read_submission(path: Path) -> list[dict]:
    """The cells of a submitted notebook (nbformat 4 JSON), or InvalidSubmission."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InvalidSubmission(f"cannot read the notebook ({exc.strerror})") from None
    if size > MAX_NOTEBOOK_BYTES:
        raise InvalidSubmission(f"the notebook is too large ({size // 1_000_000} MB)")
    try:
        nb = json.loads(path.read_bytes().decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise InvalidSubmission("the file is not valid JSON: it is not a readable notebook") from None
    except OSError as exc:
        raise InvalidSubmission(f"cannot read the notebook ({exc.strerror})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook (no cells)")
    return [c for c in nb["cells"] if isinstance(c, dict)]


@dataclass
class MergedCell:
    index: int
    kind: str                 # answer | test | other
    grade_id: str | None
    source: str               # what runs in the notebook
    source_cell: SourceCell | None = None


@dataclass
class Merged:
    cells: list[MergedCell]
    answers: dict[str, str]
    flags: list[str]
    missing: set[str]         # answer grade_ids not found
    notes: dict[str, str]     # grade_id -> note on how the cell was restored


def _normalized(text: str) -> str:
    """Text compared without blank lines and trailing spaces (editors differ there)."""
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def _defined_functions(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return re.findall(r"^\s*def\s+(\w+)\s*\(", code, flags=re.M)
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _written_answers_without_metadata(source: Source, student: list[dict], answers: dict,
                                      flags: list) -> None:
    """Written answers whose nbgrader metadata was stripped (a Colab round trip): the
    student's cell right after the cell that comes before the answer in the source (the
    question, found unchanged), when it is of the answer's type, carries no grade_id and
    is not another cell of the source."""
    theirs = [(c.get("cell_type"), source_of(c), bool(_nbgrader(c).get("grade_id")))
              for c in student]
    for pos, cell in enumerate(source.cells):
        if cell.kind != "manual" or not cell.grade_id or cell.grade_id in answers or pos == 0:
            continue
        question = source.cells[pos - 1]
        others = {_normalized(c.source) for c in source.cells if c is not cell}
        for i in range(len(theirs) - 1):
            if theirs[i][0] == question.cell_type and \
                    _normalized(theirs[i][1]) == _normalized(question.source):
                kind, text, has_id = theirs[i + 1]
                if kind == cell.cell_type and not has_id and _normalized(text) not in others:
                    answers[cell.grade_id] = text
                    flags.append(f"written answer {cell.grade_id!r} had no nbgrader metadata: "
                                 "found after its question")
                break


def merge(source: Source, student: list[dict]) -> Merged:
    answers_src, tests_src, manual_src = (source.by_id("answer"), source.by_id("test"),
                                          source.by_id("manual"))
    visible_tests = {_normalized(t) for c in tests_src.values() for t in (c.visible, c.source)}
    flags: list[str] = []
    notes: dict[str, str] = {}
    answers: dict[str, str] = {}
    seen: set[str] = set()
    out: list[tuple[str, str | None, str]] = []      # (kind, grade_id, source)
    for cell in student:
        ctype = cell.get("cell_type")
        text = source_of(cell)
        nbg = _nbgrader(cell)
        gid = nbg.get("grade_id") if isinstance(nbg.get("grade_id"), str) else None
        known = gid in answers_src or gid in tests_src or gid in manual_src
        if gid and known:
            if gid in seen:
                flags.append(f"duplicated cell {gid!r}: the first copy was graded, "
                             "the others ignored")
                continue
            seen.add(gid)
            if gid in tests_src:
                original = tests_src[gid]
                if _normalized(text) not in (_normalized(original.visible),
                                             _normalized(original.source)):
                    notes[gid] = "the test cell was edited; the original was restored"
                    flags.append(f"test cell {gid!r} was edited: restored from the source")
                out.append(("test", gid, ""))
            elif gid in manual_src:
                answers[gid] = text
            elif ctype == "code":
                answers[gid] = text
                out.append(("answer", gid, text))
            continue
        if _kind(ctype, nbg) == "test":
            flags.append(f"unknown test cell {gid!r} ignored")
            continue
        if ctype != "code":
            continue
        if _normalized(text) in visible_tests:
            continue                # a test cell that lost its metadata: the source runs
        out.append(("other", None, text))

    missing: set[str] = set()
    for gid, cell in answers_src.items():
        if gid in answers:
            continue
        wanted = _defined_functions(cell.source) or [gid]
        for i, (kind, _, text) in enumerate(out):
            if kind == "other" and any(
                    re.search(rf"^\s*def\s+{re.escape(fn)}\s*\(", text, flags=re.M)
                    for fn in wanted):
                out[i] = ("answer", gid, text)
                answers[gid] = text
                flags.append(f"answer cell {gid!r} had no nbgrader metadata: "
                             f"matched by 'def {wanted[0]}('")
                break
        else:
            missing.add(gid)
            answers[gid] = ""
    _written_answers_without_metadata(source, student, answers, flags)
    for gid in manual_src:
        answers.setdefault(gid, "")

    # Test cells the student deleted: insert after the nearest graded cell before them.
    present = {gid for kind, gid, _ in out if gid}
    order = [c.grade_id for c in source.cells if c.grade_id and c.kind in ("answer", "test")]
    for pos, gid in enumerate(order):
        if gid not in tests_src or gid in present:
            continue
        notes[gid] = "the test cell was missing; the original was restored"
        flags.append(f"test cell {gid!r} was deleted: restored from the source")
        anchor = next((g for g in reversed(order[:pos]) if g in present), None)
        at = len(out)
        if anchor is not None:
            at = max(i for i, (_, g, _) in enumerate(out) if g == anchor) + 1
        out.insert(at, ("test", gid, ""))
        present.add(gid)

    cells = []
    for i, (kind, gid, text) in enumerate(out):
        src_cell = tests_src.get(gid) if kind == "test" else answers_src.get(gid)
        cells.append(MergedCell(i, kind, gid, src_cell.source if kind == "test" else text,
                                src_cell))
    return Merged(cells, answers, flags, missing, notes)


