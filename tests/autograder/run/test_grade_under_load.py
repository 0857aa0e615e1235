"""Load never decides a grade (issue 36, finding 8).

A fresh clone's CI beside one other grading run (load 3 to 6 on 2 cores) failed 9 tests:
wrong catalogue answers of notebook 11's earlier functions made ``encode`` fail or time
out (points lost outside the changed exercise), and the example class's 08 hit its cell
limit. Here the real command grades, with the suite's own tight limits (``--timeout 40
--cell-timeout 20``, the catalogue's: now counted in the student's own CPU and own time),
while busy-loop processes run beside it, niced as a second grading run would be and each
ending itself: a perfect 08 keeps every point, and a notebook 11 whose ``byte_symbols``
is wrong loses ``byte_symbols``'s points only.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import REPO_ROOT, SOLUTIONS_DIR
from catalogue import byte_symbols, student_notebook

pytestmark = pytest.mark.slow

#: Busy processes beside the grader (two per core of this machine's two), and how long
#: each may run at most.
BUSY, BUSY_SECONDS = 4, 600


def _busy_loops(n: int, seconds: float) -> list[subprocess.Popen]:
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"
    return [subprocess.Popen(["nice", "-n", "5", sys.executable, "-c", code])
            for _ in range(n)]


def _checks_of(assignment: str, function: str) -> set[str]:
    """The test cells of ``assignment``'s solution that check ``function``."""
    nb = json.loads((SOLUTIONS_DIR / assignment / f"{assignment}.ipynb").read_text())
    return {c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"]
            if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("grade")
            and f'check("{function}"' in "".join(c["source"])}


def test_a_busy_machine_changes_no_grade(tmp_path: Path):
    subs = tmp_path / "submissions"
    wrong = byte_symbols.WRONG["latin1"][0]
    notebooks = {"08_language_model": student_notebook("08_language_model"),
                 "11_tokenizer": student_notebook("11_tokenizer", {"byte_symbols": wrong})}
    for assignment, nb in notebooks.items():
        path = subs / "loaded" / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb))
    key = tmp_path / "secret.key"
    key.write_text("load-" + "0123456789abcdef" * 3 + "\n")
    key.chmod(0o600)
    out = tmp_path / "out"
    busy = _busy_loops(BUSY, BUSY_SECONDS)
    try:
        time.sleep(1.0)
        load_before = os.getloadavg()[0]
        proc = subprocess.run(
            [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
             "--jobs", "2", "--timeout", "40", "--cell-timeout", "20",
             "--secret-file", str(key)],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "test"]
    assert rows, (load_before, proc.stdout[-2000:])
    lost = {(r["assignment"], r["grade_id"]): (r["status"], r["message"]) for r in rows
            if float(r["points"]) != float(r["max_points"])}
    expected = {("11_tokenizer", gid) for gid in _checks_of("11_tokenizer", "byte_symbols")}
    assert set(lost) == expected, lost
    assert all(status == "failed" for status, _ in lost.values()), lost
