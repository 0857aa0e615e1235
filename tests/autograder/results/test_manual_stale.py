"""Issue 36, finding 5: a hand score belongs to the answer it graded.

Each score given by hand (``manual-import``, formgrader through ``gradebook pull``) keeps
the digest of the written answer it scored. When the answer changes (a new upload graded
again, ``grade --student``), the cell needs grading again: it counts 0, ``summary.csv``
says ``needs_manual_grade``, the template leaves ``points`` empty and shows the old score
in ``stale``, formgrader shows it in the comment with the cell to grade, and ``export``
warns while any remain. A score stored without a digest (before this) keeps counting.

The first tests grade with the engine's stand-in of tests/fake_class.py, whose written
answer is read from the submission here; the last one grades a course notebook with the
real ``python -m autograder grade``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.cli import main
from autograder.results import gradebook
from autograder.results.records import MANUAL
from autograder.run import pool as grade
from fake_class import fake_engine, make_class, make_course

AUTO_01A = 3              # the stand-in's autograded points of 01_a (all tests passing)


def engine_with_answer(submission, assignment, **limits):
    """The stand-in engine, whose written answer ``why`` is the submission's text."""
    text = Path(submission).read_text()
    result = fake_engine(submission, assignment, **limits)
    if "why" in result.answers:
        result.answers["why"] = f"Because {text}."
    return result


def _grade(subs, out, solutions, only=None):
    grade.run(subs, out, solutions=solutions, grade_fn=engine_with_answer,
              stream=io.StringIO(), only=only)


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _summary(out: Path) -> dict[str, dict]:
    return {r["student_id"]: r for r in _rows(out / "summary.csv") if r["assignment"] == "01_a"}


def _score_all(out: Path, tmp: Path, points: dict[str, str]) -> list[dict]:
    """manual-template, fill ``points`` per student, manual-import: the template's rows."""
    scores = tmp / "scores.csv"
    assert main(["manual-template", str(out), "--dest", str(scores)]) == 0
    rows = _rows(scores)
    for row in rows:
        row["points"] = points.get(row["student_id"], row["points"])
        row["comment"] = f"said {points.get(row['student_id'])}"
    with open(scores, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["manual-import", str(out), str(scores)]) == 0
    return rows


def _template(out: Path, tmp: Path) -> dict[str, dict]:
    assert main(["manual-template", str(out), "--dest", str(tmp / "now.csv")]) == 0
    return {r["student_id"]: r for r in _rows(tmp / "now.csv")}


def test_a_changed_answer_needs_grading_again_and_export_warns(tmp_path, capsys):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "mine"}, "222": {"01_a": "ours"}})
    out = tmp_path / "out"
    _grade(subs, out, solutions)
    _score_all(out, tmp_path, {"111": "1", "222": "0.5"})
    assert {s: float(r["points"]) for s, r in _summary(out).items()} == {
        "111": AUTO_01A + 1, "222": AUTO_01A + 0.5}
    stored = json.loads((out / MANUAL).read_text())
    assert all(len(v["answer"]) == 32 for v in stored.values())
    # 111 uploads a new notebook with another written answer; only 111 is graded again
    (subs / "111" / "01_a" / "01_a.ipynb").write_text("something else")
    _grade(subs, out, solutions, only=["111"])
    summary = _summary(out)
    assert (summary["111"]["status"], float(summary["111"]["points"])) == (
        "needs_manual_grade", AUTO_01A)
    assert (summary["222"]["status"], float(summary["222"]["points"])) == ("ok", AUTO_01A + 0.5)
    cells = {(r["student_id"], r["grade_id"]): r for r in _rows(out / "grades.csv")}
    assert cells[("111", "why")]["status"] == "needs_manual_grade"
    assert "answer changed since it was graded by hand (1 point(s)" in \
        cells[("111", "why")]["message"]
    rows = _template(out, tmp_path)
    assert (rows["111"]["points"], rows["111"]["answer"]) == ("", "Because something else.")
    assert "1 point(s), 'said 1'" in rows["111"]["stale"]
    assert (rows["222"]["points"], rows["222"]["stale"]) == ("0.5", "")
    capsys.readouterr()
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "x")]) == 0
    err = capsys.readouterr().err
    assert "1 written answer(s) changed since they were graded by hand" in err
    assert "111, 01_a, 01_a.ipynb, why" in err and "222" not in err
    canvas = {r[1]: r for r in csv.reader((tmp_path / "x" / "canvas_grades.csv").open())}
    assert canvas["111"][5:] == [str(AUTO_01A)]
    # graded again: counted, no longer stale, no warning
    _score_all(out, tmp_path, {"111": "0.25"})
    assert float(_summary(out)["111"]["points"]) == AUTO_01A + 0.25
    assert _template(out, tmp_path)["111"]["stale"] == ""
    capsys.readouterr()
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "x")]) == 0
    assert "graded by hand" not in capsys.readouterr().err


def test_the_same_answer_graded_again_keeps_its_score(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "mine"}})
    out = tmp_path / "out"
    _grade(subs, out, solutions)
    _score_all(out, tmp_path, {"111": "1"})
    _grade(subs, out, solutions, only=["111"])
    assert (_summary(out)["111"]["status"], float(_summary(out)["111"]["points"])) == (
        "ok", AUTO_01A + 1)


def test_scores_stored_without_a_digest_keep_counting(tmp_path, capsys):
    """manual_scores.json written before scores had a digest: each score counts for the
    answer graded now (as it did), and no export warns about it."""
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "mine"}})
    out = tmp_path / "out"
    _grade(subs, out, solutions)
    key = json.dumps(["111", "01_a", "01_a.ipynb", "why"])
    (out / MANUAL).write_text(json.dumps({key: {"points": 1.0, "comment": "old"}}))
    (subs / "111" / "01_a" / "01_a.ipynb").write_text("something else")
    _grade(subs, out, solutions, only=["111"])
    assert (_summary(out)["111"]["status"], float(_summary(out)["111"]["points"])) == (
        "ok", AUTO_01A + 1)
    capsys.readouterr()
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "x")]) == 0
    assert "graded by hand" not in capsys.readouterr().err


def _formgrader(out: Path, student: str):
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        g = gb.find_grade("why", "01_a", "01_a", student)
        comment = gb.find_comment("why", "01_a", "01_a", student).manual_comment
        return g.manual_score, g.needs_manual_grade, comment
    finally:
        gb.close()


def test_formgrader_shows_a_stale_score_as_a_cell_to_grade(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "mine"}, "222": {"01_a": "ours"}})
    out = tmp_path / "out"
    _grade(subs, out, solutions)
    _score_all(out, tmp_path, {"111": "1", "222": "0.5"})
    (subs / "111" / "01_a" / "01_a.ipynb").write_text("something else")
    _grade(subs, out, solutions, only=["111"])
    assert main(["gradebook", "push", str(out), "--solutions", str(solutions)]) == 0
    score, needs, comment = _formgrader(out, "111")
    assert (score, needs) == (None, True)
    assert "answer changed since it was graded by hand (1 point(s), 'said 1')" in comment
    assert _formgrader(out, "222") == (0.5, False, "said 0.5")
    # the instructor scores the new answer in formgrader, leaving the note: it is taken
    # for the new answer, without the note
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        g = gb.find_grade("why", "01_a", "01_a", "111")
        g.manual_score, g.needs_manual_grade = 0.75, False
        gb.db.commit()
    finally:
        gb.close()
    assert main(["gradebook", "pull", str(out)]) == 0
    assert float(_summary(out)["111"]["points"]) == AUTO_01A + 0.75
    stored = json.loads((out / MANUAL).read_text())
    assert stored[json.dumps(["111", "01_a", "01_a.ipynb", "why"])]["comment"] == ""
    assert _template(out, tmp_path)["111"]["stale"] == ""


WRITTEN = "03_simple_self_attention"


def _run(*args, tmp: Path, check: bool = True) -> subprocess.CompletedProcess:
    tmp.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)],
                          cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(tmp)},
                          capture_output=True, text=True, timeout=1200)
    if check:
        assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    return done


def _with_written_answer(nb: dict, text: str) -> dict:
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "markdown" and meta.get("solution") and meta.get("grade"):
            cell["source"] = text
    return nb


@pytest.mark.slow
def test_grade_student_after_a_new_upload_through_the_real_commands(tmp_path):
    """The course's notebook with a written answer, graded by ``python -m autograder
    grade``; the answer scored by hand; a new upload graded with ``grade --student``."""
    solution = json.loads((SOLUTIONS_DIR / WRITTEN / f"{WRITTEN}.ipynb").read_text())
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    path = subs / "alice" / WRITTEN / f"{WRITTEN}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_with_written_answer(solution, "Attention looks at every "
                                                              "token at once.")))
    _run("grade", subs, "--out", out, "--jobs", "1", tmp=tmp)
    scores = tmp_path / "scores.csv"
    _run("manual-template", out, "--dest", scores, tmp=tmp)
    [row] = _rows(scores)
    row["points"] = row["max_points"]
    with open(scores, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, list(row))
        writer.writeheader()
        writer.writerow(row)
    _run("manual-import", out, scores, tmp=tmp)
    before = {r["student_id"]: r for r in _rows(out / "summary.csv")}["alice"]
    assert before["status"] == "ok", before
    path.write_text(json.dumps(_with_written_answer(solution, "I changed my mind.")))
    _run("grade", subs, "--out", out, "--jobs", "1", "--student", "alice", tmp=tmp)
    after = {r["student_id"]: r for r in _rows(out / "summary.csv")}["alice"]
    assert after["status"] == "needs_manual_grade", after
    assert float(after["points"]) == float(before["points"]) - float(row["max_points"])
    _run("manual-template", out, "--dest", scores, tmp=tmp)
    [now] = _rows(scores)
    assert now["points"] == "" and now["answer"].strip() == "I changed my mind."
    assert f"({row['max_points']} point(s))" in now["stale"]
    done = _run("export", out, "--format", "canvas", "--dest", tmp_path / "x", tmp=tmp)
    assert "1 written answer(s) changed since they were graded by hand" in done.stderr
