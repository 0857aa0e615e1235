"""Feedback reaches students (issue 21, finding 3): one index page per student, the late
penalty of export's policy on the index and the notebook pages, and ``feedback-package``
writing the zip Moodle ("upload multiple feedback files in a zip") and Canvas (comment
re-upload) take back, named as their own import code parses names (read from
moodle/moodle mod/assign/feedback/file/importziplib.php and instructure/canvas-lms
app/models/assignment.rb; mirrored by ``moodle_target`` below and ``tests/lms/canvas.py``'s ``canvas_target``).
Through the command line, on a class graded by the engine's stand-in of tests/fake_class.py."""

from __future__ import annotations

import csv
import html
import io
import re
import zipfile

from autograder.cli import main
from autograder.results import late
from autograder.run import pool as grade
from fake_class import fake_engine, make_class, make_course, read_csv
from lms.canvas import canvas_target

HOSTILE = '<script>alert(1)</script>_9_assignfeedback_file_/../x'


def moodle_target(path: str):
    """(participant id, plugin type, plugin name, file path) as Moodle's
    is_valid_filename_for_import reads a zip entry's path: each part split on '_' into
    at most 5 pieces; the first with 4 or more and a numeric second piece decides."""
    parts = path.split("/")
    while parts:
        info = parts.pop(0).split("_", 4)
        if len(info) < 4 or not info[1].isdigit():
            continue
        rest = [info[4] if len(info) > 4 else ""] + parts
        return info[1], info[2], info[3], "/".join(rest)
    return None


def _class(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"12345": {"01_a": "good", "02_b": "good"},
                                 "222": {"01_a": "HALF"}, "bob": {"01_a": "good"}})
    with open(subs / late.SUBMISSIONS_CSV, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(late.SUBMISSION_COLUMNS)
        w.writerow(["12345", "01_a", "01_a.ipynb", "2026-10-01T10:00:00+00:00", "",
                    "doejane_12345_900001_01_a.ipynb"])
        w.writerow(["12345", "02_b", "02_b.ipynb", "2026-10-02T09:00:00+00:00", "",  # 1 day late
                    "doejane_12345_900002_02_b.ipynb"])
        w.writerow(["222", "01_a", "01_a.ipynb", "2026-10-01T09:00:00+00:00", "",
                    "evil_222_700001_01_a.ipynb"])
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student_id", "name"])
        w.writerow(["12345", "Jane Doe"])
        w.writerow(["222", HOSTILE])
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    return out, roster


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_index_pages_late_penalty_and_the_lms_packages(tmp_path, capsys):
    out, roster = _class(tmp_path)
    index = (out / "feedback" / "12345" / "index.html").read_text()
    assert 'href="01_a/01_a.html"' in index and 'href="02_b/02_b.html"' in index
    text = _text(index)
    # 01_a: 1 + 2 autograded of 4 (the written answer 1 not graded yet); 02_b: 3 of 3
    assert "01_a / 01_a.ipynb ok 3 / 4" in text and "02_b / 02_b.ipynb ok 3 / 3" in text
    assert "Total 6 / 7" in text and "not graded yet (worth 1)" in text
    assert "Total 1 / 7" in _text((out / "feedback" / "222" / "index.html").read_text())
    assert "02_b / 02_b.ipynb (not handed in)" in _text(
        (out / "feedback" / "222" / "index.html").read_text())

    scores = tmp_path / "scores.csv"
    assert main(["manual-template", str(out), "--dest", str(scores)]) == 0
    rows = read_csv(scores)
    for row in rows:
        row["points"] = "1" if row["student_id"] == "12345" else ""
    with open(scores, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert main(["manual-import", str(out), str(scores)]) == 0
    text = _text((out / "feedback" / "12345" / "index.html").read_text())
    assert "Total 7 / 7" in text and "why 1 / 1" in text

    # export with a late policy per homework: 02_b 23 hours late -> the homework 1 day
    # late -> 10% off 7 = 6.3
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "e"),
                 "--homework", "HW=01_a,02_b", "--deadline", "2026-10-01T10:00",
                 "--late-policy", "10"]) == 0
    grades = list(csv.reader((tmp_path / "e" / "canvas_grades.csv").open()))
    assert {r[1]: r[5] for r in grades[2:]}["12345"] == "6.3"
    text = _text((out / "feedback" / "12345" / "index.html").read_text())
    assert "Total 7 / 7 6.3 / 7" in text
    assert "homework 'HW' was handed in 1 day after the deadline" in text
    assert "10% off the homework's points: 7 becomes 6.3" in text
    page = _text((out / "feedback" / "12345" / "01_a" / "01_a.html").read_text())
    assert "Score: 4 / 4; after the late penalty: 3.6 / 4" in page      # 4 * 0.9
    page = _text((out / "feedback" / "12345" / "02_b" / "02_b.html").read_text())
    assert "Score: 3 / 3; after the late penalty: 2.7 / 3" in page      # 3 * 0.9

    # Moodle: one folder per participant, as importziplib.php reads it
    moodle = tmp_path / "moodle.zip"
    assert main(["feedback-package", "--lms", "moodle", str(out), "--dest", str(moodle),
                 "--roster", str(roster)]) == 0
    printed = capsys.readouterr().out
    assert "bob: not a Moodle participant id" in printed
    names = zipfile.ZipFile(moodle).namelist()
    targets = {n: moodle_target(n) for n in names}
    assert all(t is not None for t in targets.values()), targets
    assert sorted(set((t[0], t[1], t[2]) for t in targets.values())) == [
        ("12345", "assignfeedback", "file"), ("222", "assignfeedback", "file")]
    # the part after the plugin name is empty: Moodle files them under "/" (its own
    # download names folders so, with the trailing "_")
    assert sorted(t[3] for t in targets.values() if t[0] == "12345") == [
        "/01_a/01_a.html", "/02_b/02_b.html", "/index.html"]
    assert "Jane Doe_12345_assignfeedback_file_/index.html" in names
    assert not any(".." in n or "<" in n for n in names)
    body = zipfile.ZipFile(moodle).read("Jane Doe_12345_assignfeedback_file_/index.html").decode()
    assert "6.3 / 7" in _text(body)                       # the stored policy

    # Canvas: one file per user, named as infer_comment_context_from_filename reads it
    canvas = tmp_path / "canvas.zip"
    assert main(["feedback-package", "--lms", "canvas", str(out), "--dest", str(canvas),
                 "--roster", str(roster)]) == 0
    assert "bob: not a Canvas user id" in capsys.readouterr().out
    zf = zipfile.ZipFile(canvas)
    got = {canvas_target(n): n for n in zf.namelist()}
    assert set(got) == {("12345", "900001"), ("222", "700001")}
    assert got[("12345", "900001")] == "janedoe_12345_900001_feedback.html"
    combined = zf.read(got[("12345", "900001")]).decode()
    assert "<b>mine</b>" not in combined and "&lt;b&gt;mine&lt;/b&gt;" in combined
    assert "<script>" not in zf.read(got[("222", "700001")]).decode()
    text = _text(combined)
    assert "Total 7 / 7 6.3 / 7" in text and "after the late penalty: 3.6 / 4" in text
    # a policy given to feedback-package wins over the stored one: 50% per day
    assert main(["feedback-package", "--lms", "canvas", str(out), "--dest", str(canvas),
                 "--homework", "HW=01_a,02_b", "--deadline", "2026-10-01T10:00",
                 "--late-policy", "50"]) == 0
    zf = zipfile.ZipFile(canvas)
    (name,) = [n for n in zf.namelist() if canvas_target(n)[0] == "12345"]
    assert "Total 7 / 7 3.5 / 7" in _text(zf.read(name).decode())


def test_the_canvas_page_names_a_file_of_the_latest_attempt(tmp_path):
    """Canvas files a re-uploaded comment only under a file of the submission's current
    attempt (assignment.rb: ``submission.attachments.where(id: attachment_id)``). 12345
    handed in 01_a and 02_b in the first download, then 02_b alone, late, in a second:
    that attempt holds only 900777, so the page must name it, not 01_a's 900001 (the
    first record in sort order)."""
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"12345": {"01_a": "good", "02_b": "good"}})
    with open(subs / late.SUBMISSIONS_CSV, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(late.SUBMISSION_COLUMNS)
        w.writerow(["12345", "01_a", "01_a.ipynb", "", "",
                    "doejane_12345_900001_01_a.ipynb", "2026-10-03T10:00:00+00:00"])
        w.writerow(["12345", "02_b", "02_b.ipynb", "", "yes",
                    "doejane_LATE_12345_900777_02_b.ipynb", "2026-10-05T10:00:00+00:00"])
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    dest = tmp_path / "canvas.zip"
    assert main(["feedback-package", "--lms", "canvas", str(out), "--dest", str(dest)]) == 0
    [name] = zipfile.ZipFile(dest).namelist()
    assert canvas_target(name) == ("12345", "900777"), name
