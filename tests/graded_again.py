"""The notebooks a grading service graded, graded again by ``python -m autograder grade``
with the service's own secret: the tests of the service (local queue, Slurm) compare the
two."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autograder import REPO_ROOT
from autograder.results.records import read_records


def graded_by_the_command(submissions: Path, out: Path, tmp: Path, students, assignment: str,
                          notebook: str, deadline: float) -> dict[str, dict]:
    """``{student: record}`` of ``grade`` on copies of the students' notebooks that the
    service took into ``submissions``, with the secret of its ``out``."""
    plain = tmp / "plain"
    for student in students:
        (plain / student / assignment).mkdir(parents=True)
        (plain / student / assignment / notebook).write_bytes(
            (submissions / student / assignment / notebook).read_bytes())
    result = subprocess.run([sys.executable, "-m", "autograder", "grade", str(plain), "--out",
                             str(tmp / "graded"), "--secret-file",
                             str(out / "grading-secret.key")], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=deadline)
    assert result.returncode == 0, result.stderr[-3000:]
    return {r["student_id"]: r for r in read_records(tmp / "graded")}
