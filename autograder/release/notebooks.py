"""Release: generate the student notebooks in ``notebooks/`` from ``solutions/``.

Each assignment is a folder ``solutions/<NN_topic>/`` holding ``<NN_topic>.ipynb`` (and
any data files it reads). nbgrader's ``generate_assignment`` replaces the solution
blocks with stubs and removes hidden tests; we run it in a throwaway course folder, so
that releasing never leaves a gradebook or log in the repository, and store its output
in normalized form (``autograder.notebook.stored``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
from autograder.notebook import cells as nbcells
from autograder.notebook import stored as notebook_format


def assignments(solutions: Path = SOLUTIONS_DIR) -> list[str]:
    """The assignment folders of ``solutions/``, in course order."""
    return sorted(
        p.name for p in solutions.iterdir()
        if p.is_dir() and not p.name.startswith(".") and any(p.glob("*.ipynb"))
    )


def nbgrader_command(course_root: Path, *args: str) -> list[str]:
    """An ``nbgrader`` command line whose course folder and gradebook live in ``course_root``.

    Every setting is passed on the command line (nbgrader ignores ``--config``, and a
    missing config silently creates a gradebook in the working folder).
    """
    return [
        sys.executable, "-m", "nbgrader", *args,
        f"--CourseDirectory.root={course_root}",
        "--CourseDirectory.source_directory=source",
        "--CourseDirectory.release_directory=release",
        f"--CourseDirectory.db_url=sqlite:///{course_root / 'gradebook.db'}",
        "--CourseDirectory.course_id=transformers",
    ]


def nbgrader_env() -> dict[str, str]:
    """The environment for an nbgrader subprocess: this interpreter's scripts on PATH
    (nbgrader runs the ``alembic`` command it installs)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def generate(course_root: Path, names: list[str], solutions: Path = SOLUTIONS_DIR) -> Path:
    """Run ``nbgrader generate_assignment`` for ``names`` in ``course_root``.

    Leaves the gradebook (test-cell checksums and points, which grading needs) in
    ``course_root/gradebook.db`` and returns the release folder.
    """
    course_root.mkdir(parents=True, exist_ok=True)
    # An explicit (empty) config file: without one nbgrader warns on every run.
    (course_root / "nbgrader_config.py").write_text("# settings are on the command line\n")
    for name in names:
        src = course_root / "source" / name
        if src.exists():
            shutil.rmtree(src)
        shutil.copytree(solutions / name, src,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    # One nbgrader process for all of them when the source folder holds only these (its
    # assignment id is a glob; starting nbgrader takes seconds), else one per assignment.
    present = {p.name for p in (course_root / "source").iterdir()}
    for name in (["*"] if present == set(names) and names else names):
        result = subprocess.run(
            nbgrader_command(course_root, "generate_assignment", name, "--force",
                             "--log-level=WARN"),
            cwd=course_root, capture_output=True, text=True, env=nbgrader_env(),
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"nbgrader generate_assignment {name} failed:\n{result.stdout}{result.stderr}"
            )
    return course_root / "release"


def synced_exercise_cells(nb) -> list[tuple[int, str, str]]:
    """``(index, exercise, new source)`` for each exercise cell of notebook ``nb`` whose
    text differs from its module's render (heading, header, hints; see
    ``helpers.course.render``).

    An exercise's cell is the nearest markdown cell before its answer cell that starts
    with ``## Exercise``; its number is how many such cells the notebook has up to it.
    Exercises that declare no hints yet are left alone.
    """
    from helpers import course
    from helpers.course import render as _render

    cells = nb["cells"] if isinstance(nb, dict) else nb.cells

    def is_heading(c) -> bool:           # "## Exercise", "## Exercise 3: ..."
        return c["cell_type"] == "markdown" and _render.is_heading(nbcells.source_of(c).split("\n", 1)[0])

    out = []
    previous = -1                        # the cell of the answer before this one
    for index, cell in enumerate(cells):
        if not nbcells.is_answer(cell):
            continue
        name = nbcells.grade_id(cell)
        start, previous = previous, index
        if name not in course.names() or not course.get(name).hints:
            continue
        # its own cell: between the previous answer and this one (never another's)
        at = next((i for i in range(index - 1, start, -1) if is_heading(cells[i])), None)
        if at is None:
            raise ValueError(f"exercise {name}: no markdown cell starting with "
                             f"{_render.HEADING_START.rstrip()!r} between the answer before it and its answer cell")
        k = sum(1 for c in cells[:at + 1] if is_heading(c))
        text = _render.sync_cell(nbcells.source_of(cells[at]), course.get(name), k)
        if text != nbcells.source_of(cells[at]):
            out.append((at, name, text))
    return out


def sync_exercises(names: list[str] | None = None, solutions: Path = SOLUTIONS_DIR,
                   write: bool = True) -> list[tuple[Path, str]]:
    """Rewrite the exercise cells of ``solutions/<name>/<name>.ipynb`` from the exercise
    modules (``python -m autograder sync-exercises``); return ``(notebook, exercise)``
    for each cell that differed. ``write=False`` only reports."""
    names = assignments(solutions) if names is None else names
    stale: list[tuple[Path, str]] = []
    for name in names:
        path = solutions / name / f"{name}.ipynb"
        nb = notebook_format.read(path)
        changes = synced_exercise_cells(nb)
        for index, exercise, text in changes:
            nb.cells[index].source = text
            stale.append((path, exercise))
        if changes and write:
            notebook_format.write(nb, path)
    return stale


def release(dest: Path = NOTEBOOKS_DIR, names: list[str] | None = None,
            solutions: Path = SOLUTIONS_DIR, sync: bool = False) -> list[Path]:
    """Regenerate ``dest/<assignment>/`` from ``solutions/``; return the files that changed.

    With ``sync`` (what ``python -m autograder release`` does) the exercise cells of
    ``solutions/`` are first brought in line with the exercise modules
    (:func:`sync_exercises`). Files in ``dest`` that the release no
    longer produces are removed, so ``dest`` mirrors ``solutions`` exactly.
    """
    names = assignments(solutions) if names is None else names
    if sync:
        sync_exercises(names, solutions)
    changed: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        released = generate(Path(tmp), names, solutions)
        for name in names:
            produced: set[Path] = set()
            for src in sorted((released / name).rglob("*")):
                if src.is_dir():
                    continue
                rel = src.relative_to(released)
                target = dest / rel
                produced.add(target)
                if src.suffix == ".ipynb":
                    if notebook_format.write(notebook_format.read(src), target):
                        changed.append(target)
                elif not target.exists() or target.read_bytes() != src.read_bytes():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, target)
                    changed.append(target)
            for old in sorted((dest / name).rglob("*")) if (dest / name).exists() else []:
                if old.is_file() and old not in produced and ".ipynb_checkpoints" not in old.parts:
                    old.unlink()
                    changed.append(old)
    return changed
