"""A stopped run (SIGTERM, as Slurm and Kubernetes send; Ctrl-C) ends promptly, leaves no
process and no temporary folder behind, keeps what it graded, and ``grade --resume``
grades only the rest. Through the real command; a generous deadline of 120 s for the
stop to take effect (the requirement is 10 s; the test must not depend on timing)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR

NB = "01_dot_products"


def _class(root: Path) -> Path:
    subs = root / "submissions"
    source = SOLUTIONS_DIR / NB / f"{NB}.ipynb"
    for student in ("s1", "s2", "s3-slow", "s4", "s5"):
        dest = subs / student / NB / f"{NB}.ipynb"
        dest.parent.mkdir(parents=True)
        if student.endswith("slow"):         # an answer cell with 8 s of top-level work
            nb = json.loads(source.read_text())
            for cell in nb["cells"]:
                if cell["metadata"].get("nbgrader", {}).get("grade_id") == "dot":
                    cell["source"] = "".join(cell["source"]) + "\nimport time\ntime.sleep(8)\n"
            dest.write_text(json.dumps(nb))
        else:
            shutil.copy(source, dest)
    return subs


def _grade(subs: Path, out: Path, tmp: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                             str(out), "--jobs", "1", *extra], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigterm_stops_the_run_and_resume_grades_only_the_rest(tmp_path):
    subs, out, tmp = _class(tmp_path), tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    proc = _grade(subs, out, tmp)
    journal = out / "results.partial.jsonl"
    deadline = time.monotonic() + 600             # generous: a busy 2-core machine
    while True:                                   # wait until two notebooks are graded
        if journal.is_file() and journal.read_text().count(f'"{NB}.ipynb"') >= 2:
            break
        assert time.monotonic() < deadline, "two notebooks were not graded within 600 s"
        assert proc.poll() is None, "the run ended before it could be stopped"
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "--resume" in err
    kept = [json.loads(line) for line in journal.read_text().splitlines()]
    graded = [r for r in kept if r["assignment"] == NB]
    assert 2 <= len(graded) < 5                    # stopped in the middle of the class
    assert not list(tmp.iterdir()), list(tmp.iterdir())        # no temporary folder left
    leftover = subprocess.run(["pgrep", "-f", str(tmp)], capture_output=True, text=True)
    assert leftover.stdout.strip() == "", leftover.stdout      # no process left

    proc = _grade(subs, out, tmp, "--resume")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert f"resume: {len(kept)} notebook(s) already graded" in err
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    records = [r for r in records if r["assignment"] == NB]
    assert sorted(r["student_id"] for r in records) == ["s1", "s2", "s3-slow", "s4", "s5"]
    assert all(r["points"] == r["max_points"] for r in records if r["student_id"] != "s3-slow")
    assert not journal.exists()
