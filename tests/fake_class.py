"""A tiny two-notebook course, a class of text-file submissions and a stand-in engine that
does what each submission's text says: the grading pipeline's tests share them
(tests/autograder/run, results and the walkthrough)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

# --------------------------------------------------------------------------- a tiny course


def _cell(cell_type, source, **nbgrader):
    cell = {"cell_type": cell_type, "metadata": {}, "source": source}
    if cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    if nbgrader:
        cell["metadata"]["nbgrader"] = {"schema_version": 3, **nbgrader}
    return cell


def _notebook(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def make_course(root: Path) -> Path:
    """Two assignments: ``01_a`` (answer ``f``, tests worth 1 and 2, a written answer worth
    1) and ``02_b`` (answer ``g``, one test worth 3)."""
    solutions = root / "solutions"
    (solutions / "01_a").mkdir(parents=True)
    (solutions / "02_b").mkdir(parents=True)
    (solutions / "01_a" / "01_a.ipynb").write_text(json.dumps(_notebook([
        _cell("code", "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION",
              grade=False, solution=True, grade_id="f"),
        _cell("code", 'check("f", f)', grade=True, solution=False, grade_id="test_f", points=1),
        _cell("code", 'check("f", f, group="two")\n### BEGIN HIDDEN TESTS\n'
                      'check("f", f, hidden=True)  # SECRET\n'
                      "### END HIDDEN TESTS", grade=True, solution=False, grade_id="test_f_hidden",
              points=2),
        _cell("markdown", "Why?", grade=True, solution=True, grade_id="why", points=1),
    ])))
    (solutions / "02_b" / "02_b.ipynb").write_text(json.dumps(_notebook([
        _cell("code", "def g():\n    pass", grade=False, solution=True, grade_id="g"),
        _cell("code", 'check("g", g)', grade=True, solution=False, grade_id="test_g", points=3),
    ])))
    return solutions


def fake_engine(submission, assignment, *, cell_timeout, notebook_timeout, memory_mb):
    """Stand-in for engine.grade_notebook: the submission's text says what happens.

    ``BAD`` -> invalid; ``KILL`` -> kills the process grading it (as a malicious notebook
    would kill its parent); ``HANG`` -> never returns; ``RAISE`` -> the engine fails;
    ``HALF`` -> the first test passes, the rest fail; otherwise every test passes.
    """
    text = Path(submission).read_text()
    Path(submission).write_text("engine scribbles on its copy")  # must not reach SUBMISSIONS
    if "KILL" in text:
        os.kill(os.getpid(), signal.SIGKILL)
    if "HANG" in text:
        time.sleep(3600)
    if "RAISE" in text:
        raise RuntimeError("engine bug")
    if "BAD" in text:
        return SimpleNamespace(status="invalid", message="not valid JSON", cells=[], answers={},
                               flags=[])
    ids = {"01_a": [("test_f", 1.0), ("test_f_hidden", 2.0)], "02_b": [("test_g", 3.0)]}[assignment]
    cells = []
    for i, (gid, pts) in enumerate(ids):
        passed = "HALF" not in text or i == 0
        cells.append(SimpleNamespace(
            grade_id=gid, kind="test", points=pts if passed else 0.0, max_points=pts,
            status="ok" if passed else "failed",
            message="" if passed else "f(2) returned 3, expected 2",
            feedback="" if passed else "f(2): expected 2, got 3 <script>alert(1)</script>"))
    if assignment == "01_a":
        cells.append(SimpleNamespace(grade_id="why", kind="manual", points=0.0, max_points=1.0,
                                     status="needs_manual_grade", message="graded by hand",
                                     feedback=""))
    answer = "def f(x):\n    return x  # <b>mine</b>" if assignment == "01_a" else "def g(): pass"
    answers = {"f": answer, "why": "Because <i>so</i>."} if assignment == "01_a" else {"g": answer}
    return SimpleNamespace(status="ok", message="", cells=cells, answers=answers,
                           flags=["duplicate answer cell f"] if "DUP" in text else [])


def make_class(root: Path, contents: dict[str, dict[str, str]]) -> Path:
    """``{student: {assignment: text}}`` -> SUBMISSIONS folder."""
    subs = root / "submissions"
    for student, notebooks in contents.items():
        for assignment, text in notebooks.items():
            path = subs / student / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return subs


def tree_digest(root: Path) -> str:
    """Names, contents, modes and times of everything under ``root`` (what grading must
    leave as it found it)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}|{st.st_mode}|{st.st_mtime_ns}|{st.st_size}".encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))

