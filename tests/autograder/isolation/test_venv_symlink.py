"""A course whose ``.venv`` is a symbolic link (issue 23): the sandbox mounted the real
path but the child's interpreter kept the link's paths (``sys.prefix``, ``sys.path``,
modules' ``__path__``), which did not exist in its private root: every answer was "not
defined", 0 points, exit 0. The private root now holds the same links."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from catalogue import student_notebook

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def test_grading_with_a_symlinked_venv_gives_the_points(tmp_path):
    real_prefix = Path(sys.prefix)
    if not (real_prefix / "pyvenv.cfg").exists():
        pytest.skip("not running from a virtual environment")
    link = tmp_path / "links" / "venv"
    link.parent.mkdir()
    link.symlink_to(real_prefix.resolve(), target_is_directory=True)
    python = link / "bin" / Path(sys.executable).name
    probe = subprocess.run([str(python), "-c", "import sys; print(sys.prefix)"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == str(link)            # the interpreter keeps the link
    subs = tmp_path / "submissions"
    path = subs / "alice" / "01_dot_products" / "01_dot_products.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(student_notebook("01_dot_products")), encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.run([str(python), "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1"], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in
               (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    cells = [c for r in results for c in r.get("cells", []) if c.get("kind") == "test"]
    assert cells, results
    for c in cells:
        assert c["points"] == c["max_points"], (c["grade_id"], c.get("message"))
