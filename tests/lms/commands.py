"""What the intake tests do with a download, as the instructor does it: run the real
command, read its CSV reports, and lay out a student's Git clone."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from autograder import REPO_ROOT

NB = "01_dot_products"


def tag_of(path: Path) -> str:
    return json.loads(path.read_text())["tag"]


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def run(*args, tmp: Path, check: bool = True) -> subprocess.CompletedProcess:
    """``python -m autograder ARGS`` from the repository, as the instructor types it."""
    tmp.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)],
                          cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(tmp)},
                          capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, (done.stdout, done.stderr)
    return done


def report(out: Path) -> dict[str, dict]:
    return {r["source"]: r for r in rows(out / "_collect_report.csv")}


def clone(repos: Path, student: str, notebooks: dict[str, bytes]) -> Path:
    """A student's clone of the bundle: ``.git``, the course's files, ``notebooks/``."""
    root = repos / student
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "README.md").write_text("homework\n")
    for rel, data in notebooks.items():
        (root / "notebooks" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "notebooks" / rel).write_bytes(data)
    return root
