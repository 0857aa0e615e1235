"""Release: generate the student notebooks in ``notebooks/`` from ``solutions/``.

Each assignment is a folder ``solutions/<NN_topic>/`` holding ``<NN_topic>.ipynb`` (and
any data files it reads). nbgrader's ``generate_assignment`` replaces the solution
blocks with stubs and removes hidden tests; we run it in a throwaway course folder, so
that releasing never leaves a gradebook or log in the repository, and store its output
in normalized form (``autograder.notebook_format``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
from autograder import notebook_format


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


def release(dest: Path = NOTEBOOKS_DIR, names: list[str] | None = None,
            solutions: Path = SOLUTIONS_DIR) -> list[Path]:
    """Regenerate ``dest/<assignment>/`` from ``solutions/``; return the files that changed.

    Files in ``dest`` that the release no longer produces are removed, so ``dest``
    mirrors ``solutions`` exactly.
    """
    names = assignments(solutions) if names is None else names
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
