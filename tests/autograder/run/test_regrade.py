"""``grade --student ID ...`` regrades some students into an existing output folder and
keeps everyone else's grades as they were. Through the real command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import REPO_ROOT, SOLUTIONS_DIR

NB = "01_dot_products"


def _write(subs: Path, student: str, dot_body: str | None = None) -> None:
    """Hand in the solution notebook; with ``dot_body``, the answer to `dot` replaced."""
    source = SOLUTIONS_DIR / NB / f"{NB}.ipynb"
    dest = subs / student / NB / f"{NB}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dot_body is None:
        shutil.copy(source, dest)
        return
    nb = json.loads(source.read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "dot":
            cell["source"] = dot_body
    dest.write_text(json.dumps(nb))


def _grade(subs: Path, out: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1", *extra], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def _records(out: Path) -> dict[str, str]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["student_id"]: line for line in lines
            if json.loads(line)["assignment"] == NB}


WRONG_DOT = "def dot(a, b):\n    return float(np.sum(a) * np.sum(b))\n"


def test_grade_student_regrades_only_the_named_students(tmp_path):
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    _write(subs, "ann")
    _write(subs, "bob", WRONG_DOT)
    _write(subs, "cy", WRONG_DOT)
    done = _grade(subs, out, tmp)
    assert done.returncode == 0, done.stderr
    before = _records(out)
    assert json.loads(before["bob"])["points"] < json.loads(before["bob"])["max_points"]

    # bob's notebook is fixed (say, a regrade request upheld); cy's too, but cy is not named
    _write(subs, "bob")
    _write(subs, "cy")
    done = _grade(subs, out, tmp, "--student", "bob")
    assert done.returncode == 0, done.stderr
    after = _records(out)
    assert set(after) == {"ann", "bob", "cy"}
    bob = json.loads(after["bob"])
    assert bob["points"] == bob["max_points"]
    assert after["ann"] == before["ann"] and after["cy"] == before["cy"]   # kept as they were
    summary = (out / "summary.csv").read_text()
    assert "ann" in summary and "cy" in summary
    for student in ("ann", "bob", "cy"):             # every student keeps a feedback page
        assert list((out / "feedback" / student).rglob("*.html")), student
    assert "bob" in (out / "grades.csv").read_text()


def test_grade_student_errors_clearly(tmp_path):
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    _write(subs, "ann")
    done = _grade(subs, out, tmp, "--student", "ann")        # no earlier run in OUT
    assert done.returncode != 0
    assert "results.jsonl" in done.stderr and "grade" in done.stderr
    assert not (out / "summary.csv").exists()
    assert _grade(subs, out, tmp).returncode == 0
    done = _grade(subs, out, tmp, "--student", "zed")
    assert done.returncode != 0
    assert "zed" in done.stderr and "no submissions" in done.stderr


SOFTMAX_WRONG_ON_4x6 = '''def softmax(z, axis=-1):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    out = e / e.sum(axis=axis, keepdims=True)
    if z.shape == (4, 6):          # wrong on one shape only, which no visible case has
        return out.T.copy().reshape(4, 6)
    return out
'''


def test_hidden_feedback_brief_hides_a_hidden_case_inputs(tmp_path):
    from helpers import course
    from helpers.course import judge

    nb_name = "02_softmax"
    (case,) = [c for c in judge.cases(course.get("softmax"), hidden=True) if c.name == "random_4x6"]
    assert (4, 6) not in {__import__("numpy").asarray(c.args[0]).shape
                          for c in judge.cases(course.get("softmax"))}    # the premise of this test
    subs, tmp = tmp_path / "subs", tmp_path / "tmp"
    tmp.mkdir()
    source = SOLUTIONS_DIR / nb_name / f"{nb_name}.ipynb"
    nb = json.loads(source.read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "softmax":
            cell["source"] = SOFTMAX_WRONG_ON_4x6
    dest = subs / "ann" / nb_name / f"{nb_name}.ipynb"
    dest.parent.mkdir(parents=True)
    dest.write_text(json.dumps(nb))

    texts = {}
    for mode, flag in (("full", ["--hidden-feedback", "full"]), ("brief", [])):  # brief: default
        out = tmp_path / mode
        done = _grade(subs, out, tmp, *flag)
        assert done.returncode == 0, done.stderr
        (record,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()
                     if json.loads(line)["assignment"] == nb_name]
        cell = next(c for c in record["cells"] if c["grade_id"] == "test_softmax")
        assert cell["points"] == 0                                 # both modes: it fails
        page = "".join(p.read_text() for p in (out / "feedback").rglob("*.html"))
        texts[mode] = cell["message"] + cell.get("feedback", "") + page
    assert "random_4x6" in texts["full"] and "Input:" in texts["full"]
    assert "failed a hidden case (group 'basic'" in texts["brief"]
    assert "random_4x6" not in texts["brief"] and "Input:" not in texts["brief"]
