"""nbgrader's Validate button (``nbgrader validate``, what the lab extension runs) shows
a failing check's whole explanation, the likely mistake included: it cuts every line at
87 characters, so the checks wrap theirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from autograder import NOTEBOOKS_DIR
from helpers import checks
from helpers import course
from helpers.course import judge

NB = "02_softmax"
NO_MAX = ("def softmax(z, axis=-1):\n    z = np.asarray(z, dtype=float)\n"
          "    e = np.exp(z)\n    return e / e.sum(axis=axis, keepdims=True)\n")


def test_validate_shows_the_likely_mistake_uncut(tmp_path):
    nb = json.loads((NOTEBOOKS_DIR / NB / f"{NB}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "softmax":
            cell["source"] = NO_MAX
    path = tmp_path / f"{NB}.ipynb"
    path.write_text(json.dumps(nb))
    env = {**os.environ, "TMPDIR": str(tmp_path),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])}
    done = subprocess.run([sys.executable, "-m", "nbgrader", "validate", str(path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert "VALIDATION FAILED" in out or "failed" in out.lower(), out[-2000:]
    lines = [line for line in out.splitlines()]
    at = next(i for i, line in enumerate(lines) if "Likely mistake:" in line)
    said = " ".join(" ".join(lines[at:at + 4]).split())
    mistake = next(m.message for m in course.get("softmax").mistakes
                   if m.key == "no_max_shift")
    assert " ".join(mistake.split())[:60] in said, said
    assert not any(line.endswith("...") for line in lines[at:at + 4]), lines[at:at + 4]


def test_wrap_keeps_every_word_and_the_indent():
    text = "  Likely mistake: " + " ".join(f"word{i}" for i in range(40))
    wrapped = checks.wrap(text)
    assert all(len(line) <= checks.LINE for line in wrapped.splitlines())
    assert wrapped.split() == text.split()
    assert all(line.startswith("      ") for line in wrapped.splitlines()[1:])
    shown = checks.CheckFailed(text)._render_traceback_()
    assert shown[0].startswith("CheckFailed: ") and all(len(x) <= checks.LINE for x in shown)
