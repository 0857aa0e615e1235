"""Grading orchestration (autograder.run.pool, merge, feedback, report, export, progress).

These tests run the real process pool, discovery, sharding and output writing, with a
stand-in for the engine (``fake_engine`` below) so that they are fast and can simulate
what a real engine run is hard to provoke on demand: the student's grading process
being killed, hanging past every limit, or the engine itself failing. The real engine is
exercised by tests/tools/test_make_examples.py and tests/autograder/test_cli.py.
"""

from __future__ import annotations

import csv
import functools
import io
import tempfile
import time
from pathlib import Path

import pytest

from autograder.results import export
from autograder.results import feedback
from autograder.run import pool as grade
from autograder.run import merge
from autograder.run import progress
from autograder.results import report
from autograder.results import records as schema

from fake_class import (fake_engine, make_class, make_course, read_csv,  # noqa: F401
                        tree_digest)


@pytest.fixture
def course(tmp_path):
    return make_course(tmp_path)


def run(subs, out, solutions, **kw):
    return grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO(), **kw)


# --------------------------------------------------------------------------- tests

def test_course_notebooks_reads_points_from_solutions(course):
    found = grade.course_notebooks(course)
    assert list(found) == [("01_a", "01_a.ipynb"), ("02_b", "02_b.ipynb")]
    assert [(c.grade_id, c.kind, c.points) for c in found[("01_a", "01_a.ipynb")]] == [
        ("test_f", "test", 1.0), ("test_f_hidden", "test", 2.0), ("why", "manual", 1.0)]


def test_grades_every_cell_of_every_student_and_never_writes_submissions(tmp_path, course):
    subs = make_class(tmp_path, {
        "alice": {"01_a": "good", "02_b": "good"},
        "bob": {"01_a": "HALF"},                     # 02_b missing
        "carol": {"01_a": "BAD", "02_b": "good"},
    })
    (subs / "_unmatched").mkdir()                    # collect's leftovers are not a student
    (subs / "_unmatched" / "x.ipynb").write_text("{}")
    before = tree_digest(subs)
    records = run(subs, tmp_path / "out", course, jobs=2)
    assert tree_digest(subs) == before
    assert len(records) == 6                          # 3 students x 2 notebooks
    rows = read_csv(tmp_path / "out" / "grades.csv")
    assert set(rows[0]) >= {"student_id", "assignment", "notebook", "grade_id", "points",
                            "max_points", "status", "message"}
    by = {(r["student_id"], r["grade_id"]): r for r in rows}
    assert len(rows) == 3 * 4
    assert by[("alice", "test_f_hidden")]["points"] == "2"
    assert by[("bob", "test_f")]["points"] == "1"
    assert (by[("bob", "test_f_hidden")]["points"], by[("bob", "test_f_hidden")]["status"]) == ("0", "failed")
    assert by[("bob", "test_g")]["status"] == "missing" and by[("bob", "test_g")]["max_points"] == "3"
    # an invalid notebook: every cell listed with the notebook's status and message
    assert by[("carol", "test_f")]["status"] == "invalid"
    assert by[("carol", "why")]["message"] == "not valid JSON"
    summary = {(r["student_id"], r["assignment"]): r for r in read_csv(tmp_path / "out" / "summary.csv")}
    assert len(summary) == 6
    assert summary[("alice", "01_a")]["points"] == "3" and summary[("alice", "01_a")]["max_points"] == "4"
    assert summary[("bob", "01_a")]["points"] == "1"
    assert summary[("bob", "02_b")]["status"] == "missing"
    assert summary[("carol", "01_a")]["status"] == "invalid"
    assert (tmp_path / "out" / "feedback" / "alice" / "01_a" / "01_a.html").is_file()
    assert not (tmp_path / "out" / "feedback" / "bob" / "02_b").exists()


def test_a_killed_or_hung_student_process_costs_only_that_student(tmp_path, course):
    subs = make_class(tmp_path, {
        "alice": {"01_a": "good", "02_b": "KILL"},    # kills its grading process on 02_b
        "bob": {"01_a": "HANG", "02_b": "good"},      # never returns
        "carol": {"01_a": "RAISE", "02_b": "good"},   # the engine raises
        "dave": {"01_a": "good", "02_b": "good"},
    })
    limits = grade.Limits(cell_timeout=1, notebook_timeout=1, memory_mb=512)
    workdirs = set(Path(tempfile.gettempdir()).glob("autograder-grade-*"))
    start = time.monotonic()
    records = grade.grade_class(grade.discover(subs, grade.course_notebooks(course)),
                                grade.course_notebooks(course), limits, jobs=2,
                                grade_fn=fake_engine, budget_margin=1.0)
    # the private copies are gone, even those of the killed processes
    assert set(Path(tempfile.gettempdir()).glob("autograder-grade-*")) <= workdirs
    assert time.monotonic() - start < 30
    got = {(r["student_id"], r["assignment"]): r for r in records}
    assert len(got) == 8
    assert got[("alice", "01_a")]["status"] == "ok" and got[("alice", "01_a")]["points"] == 3
    assert got[("alice", "02_b")]["status"] == "crashed"
    assert "signal 9" in got[("alice", "02_b")]["message"]
    assert got[("bob", "01_a")]["status"] == "timeout"
    assert got[("carol", "01_a")]["status"] == "grader_error"
    assert "engine bug" in got[("carol", "01_a")]["message"]
    assert got[("carol", "02_b")]["status"] == "ok"
    assert got[("dave", "01_a")]["points"] == 3 and got[("dave", "02_b")]["points"] == 3


def test_shards_are_disjoint_cover_the_class_and_merge_to_the_full_run(tmp_path, course):
    students = {f"s{i:03d}": {"01_a": "HALF" if i % 3 else "good", "02_b": "good"} for i in range(12)}
    subs = make_class(tmp_path, students)
    run(subs, tmp_path / "full", course, jobs=2)
    parts = []
    for i in (1, 2, 3):
        records = run(subs, tmp_path / f"part{i}", course, jobs=1, shard=(i, 3))
        parts.append({r["student_id"] for r in records})
    assert set().union(*parts) == set(students)
    assert sum(len(p) for p in parts) == len(students)
    # deterministic: the same shard for a student whatever else is in the folder
    assert all(grade.shard_of(s, 3) == i + 1 for i, p in enumerate(parts) for s in p)
    merge.merge([tmp_path / f"part{i}" for i in (1, 2, 3)], tmp_path / "merged")
    for name in ("grades.csv", "summary.csv"):
        assert (tmp_path / "merged" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()
    full_pages = sorted(p.relative_to(tmp_path / "full") for p in (tmp_path / "full").rglob("*.html"))
    merged_pages = sorted(p.relative_to(tmp_path / "merged") for p in (tmp_path / "merged").rglob("*.html"))
    # 12 students x 2 notebook pages, and one index page per student
    assert full_pages == merged_pages and len(full_pages) == 24 + 12
    assert sum(p.name == "index.html" for p in full_pages) == 12


def test_merge_refuses_overlapping_shards_that_disagree(tmp_path, course):
    subs = make_class(tmp_path, {"alice": {"01_a": "good"}})
    run(subs, tmp_path / "a", course)
    (subs / "alice" / "01_a" / "01_a.ipynb").write_text("HALF")
    run(subs, tmp_path / "b", course)
    merge.merge([tmp_path / "a", tmp_path / "a"], tmp_path / "same")  # identical: fine
    with pytest.raises(merge.MergeConflict, match="alice/01_a"):
        merge.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m")


@pytest.mark.parametrize("text, expected", [("1/1", (1, 1)), ("2/4", (2, 4))])
def test_parse_shard(text, expected):
    assert grade.parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "3"])
def test_parse_shard_rejects(text):
    with pytest.raises(ValueError):
        grade.parse_shard(text)


def test_shards_are_balanced_for_a_large_class():
    counts = [0] * 4
    for i in range(2000):
        counts[grade.shard_of(f"student{i}", 4) - 1] += 1
    assert min(counts) > 400  # 500 each on average


def test_feedback_escapes_student_text_and_groups_tests_by_answer(tmp_path, course):
    subs = make_class(tmp_path, {"alice": {"01_a": "HALF"}})
    run(subs, tmp_path / "out", course)
    page = (tmp_path / "out" / "feedback" / "alice" / "01_a" / "01_a.html").read_text()
    assert "<b>mine</b>" not in page and "&lt;b&gt;mine&lt;/b&gt;" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "SECRET" not in page and "f(-7)" not in page   # hidden test source never shown
    assert page.index("Your answer") < page.index("test_f_hidden")
    # the written answer and its (manually graded) cell come together
    assert page.index("Because &lt;i&gt;so&lt;/i&gt;.") < page.index("<code>why</code>:")
    assert "Other graded cells" not in page
    assert "1 / 4" in page  # score


def test_a_test_belongs_to_the_exercise_its_check_line_names():
    from autograder.notebook.source import SourceCell

    def test(grade_id, text):
        return SourceCell("code", "test", grade_id, 1, text).exercise

    assert test("test_softmax", 'check("softmax", softmax)') == "softmax"
    # the grade_id's name says nothing: the check line decides
    assert test("test_stability", 'check("softmax", softmax, group="large")') == "softmax"
    assert test("test_dot_product", 'check("dot", dot)') == "dot"
    assert test("test_dot", "assert True") is None
    assert test("test_x", '### BEGIN HIDDEN TESTS\ncheck("gelu", gelu, hidden=True)\n'
                          '### END HIDDEN TESTS') == "gelu"
    assert SourceCell("code", "answer", "softmax", 0, "def softmax(z): ...").exercise == "softmax"
    rows = [{"grade_id": "test_stability", "exercise": "softmax"},
            {"grade_id": "why", "exercise": "why"}, {"grade_id": "test_other", "exercise": None}]
    assert [feedback.owner(r, ["softmax", "why"]) for r in rows] == ["softmax", "why", None]


def test_report_item_analysis(tmp_path, course):
    subs = make_class(tmp_path, {"a": {"01_a": "good"}, "b": {"01_a": "HALF"}, "c": {"01_a": "HALF"},
                                 "d": {"02_b": "good"}})
    run(subs, tmp_path / "out", course)
    csv_path, png_path = report.report(tmp_path / "out")
    rows = {r["grade_id"]: r for r in read_csv(csv_path)}
    hidden = rows["test_f_hidden"]
    assert hidden["students"] == "3" and hidden["not_handed_in"] == "1"
    assert float(hidden["mean_points"]) == pytest.approx(2 / 3, abs=1e-3)
    assert float(hidden["full_marks_share"]) == pytest.approx(1 / 3, abs=1e-3)
    assert hidden["common_failures"] == "2x f(2) returned 3, expected 2"
    assert float(rows["test_f"]["full_marks_share"]) == 1.0
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_export_canvas_and_gradescope(tmp_path, course):
    subs = make_class(tmp_path, {"111": {"01_a": "good", "02_b": "good"}, "222": {"01_a": "HALF"}})
    run(subs, tmp_path / "out", course)
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name,email,sid\n111,Doe Jane,jane@uni.edu,A1\n")
    [canvas] = export.export(tmp_path / "out", "canvas", roster=roster,
                             rename={"01_a": "Lab 1 (4711)"})
    lines = list(csv.reader(canvas.open()))
    assert lines[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 1 (4711)", "02_b"]
    assert lines[1] == ["Points Possible", "", "", "", "", "4", "3"]
    assert lines[2] == ["Doe Jane", "111", "", "", "", "3", "3"]
    assert lines[3] == ["222", "222", "", "", "", "1", "0"]          # missing notebook -> 0
    paths = export.export(tmp_path / "out", "gradescope", roster=roster)
    assert [p.name for p in paths] == ["gradescope_01_a.csv", "gradescope_02_b.csv"]
    rows = read_csv(paths[0])
    assert rows[0] == {"Name": "Doe Jane", "SID": "A1", "Email": "jane@uni.edu", "Total Score": "3"}
    with pytest.raises(ValueError):
        export.export(tmp_path / "out", "blackboard")


def test_read_records_of_a_folder_that_is_not_an_output(tmp_path):
    with pytest.raises(FileNotFoundError, match="results.jsonl"):
        schema.read_records(tmp_path)


def test_progress_quiet_when_not_a_terminal():
    stream = io.StringIO()
    bar = progress.Progress(3, stream=stream, unit="notebooks")
    for _ in range(3):
        bar.advance()
    assert stream.getvalue() == ""
    bar.close()
    assert stream.getvalue().startswith("graded 3/3 notebooks in ")
    assert stream.getvalue().count("\n") == 1


def test_progress_draws_on_a_terminal():
    now = [0.0]
    stream = io.StringIO()
    bar = progress.Progress(4, stream=stream, unit="notebooks", interactive=True, width=4,
                            clock=lambda: now[0])
    now[0] = 1.0
    bar.advance()
    assert stream.getvalue() == "\r[#...] 1/4 notebooks  25%  eta 3s\033[K"
    now[0] = 2.0
    bar.advance(failed=True)
    assert "2/4" in stream.getvalue() and "1 not ok" in stream.getvalue()
    bar.close()
    assert stream.getvalue().endswith("\ngraded 2/4 notebooks in 2s (1.00 s each), 1 not ok\n")


def test_summary_table_lists_problems(tmp_path, course):
    subs = make_class(tmp_path, {"alice": {"01_a": "BAD", "02_b": "DUP"}, "bob": {"01_a": "good"}})
    records = run(subs, tmp_path / "out", course)
    table = schema.summary_table(records)
    first = table.splitlines()[0].split()
    assert first == ["assignment", "students", "mean", "max", "statuses"]
    assert "01_a" in table and "invalid 1" in table
    assert "alice/01_a/01_a.ipynb: invalid (0/4) not valid JSON" in table
    assert "alice/02_b/02_b.ipynb: duplicate answer cell f" in table


def test_failure_reason_groups_students_with_the_same_mistake():
    a = {"status": "failed", "message": "Case 'big' (visible): scores. Input: Q = [[1, 2]] Problem: the output:"
         " wrong values (16 of 16 entries differ); first difference at index (0, 0): expected 1, got 2",
         "feedback": "...\n  Likely mistake: scores were not divided by sqrt(d_k).\n  Also failed: 'x'"}
    b = dict(a, message=a["message"].replace("[[1, 2]]", "[[3, 4]]"))
    assert report.failure_reason(a) == report.failure_reason(b) == (
        "likely mistake: scores were not divided by sqrt(d_k).")
    c = {"status": "failed", "feedback": "", "message": "Case 'small': x. Input: X = [1] Problem: the"
         " output: wrong values (3 of 4 entries differ); first difference at index (1,): expected 2"}
    d = dict(c, message=c["message"].replace("3 of 4", "2 of 4"))
    assert report.failure_reason(c) == report.failure_reason(d) == "the output: wrong values (some entries differ)"
    assert report.failure_reason({"status": "timeout", "message": "", "feedback": ""}) == "timeout"


def test_output_inside_submissions_is_refused(tmp_path, course):
    subs = make_class(tmp_path, {"alice": {"01_a": "good"}})
    with pytest.raises(ValueError, match="inside the submissions folder"):
        run(subs, subs / "out", course)
    assert sorted(p.name for p in subs.iterdir()) == ["alice"]


def test_a_new_run_leaves_no_stale_feedback(tmp_path, course):
    subs = make_class(tmp_path, {"alice": {"01_a": "good"}, "bob": {"01_a": "good"}})
    run(subs, tmp_path / "out", course)
    assert (tmp_path / "out" / "feedback" / "bob").is_dir()
    assert grade.shard_of("alice", 2) != grade.shard_of("bob", 2)
    run(subs, tmp_path / "out", course, shard=(grade.shard_of("alice", 2), 2))
    feedback = tmp_path / "out" / "feedback"
    pages = {p.relative_to(feedback).parts[0] for p in feedback.rglob("*.html")}
    assert pages == {"alice"}


def test_names_that_are_formulas_are_inert_in_every_csv_we_write(tmp_path, course):
    """A folder or roster name a spreadsheet would run as a formula gets a leading quote
    in grades.csv, summary.csv, the item analysis and the exports; numbers stay numbers."""
    evil = "=HYPERLINK(x)"
    subs = make_class(tmp_path, {evil: {"01_a": "good"}, "+1": {"01_a": "HALF"}})
    out = tmp_path / "out"
    run(subs, out, course)
    roster = tmp_path / "roster.csv"
    roster.write_text(f'student_id,name,email,sid\n"{evil}",@SUM(A1),-x@evil,=1+1\n')
    written = [out / "grades.csv", out / "summary.csv"]
    written += export.export(out, "canvas", roster=roster)
    written += export.export(out, "gradescope", roster=roster)
    report.report(out)
    written.append(out / "item_analysis.csv")
    for path in written:
        for row in csv.reader(path.open(newline="", encoding="utf-8")):
            for cell in row:
                assert cell[:1] not in ("=", "+", "-", "@"), (path.name, cell)
    rows = read_csv(out / "grades.csv")
    assert {r["student_id"] for r in rows} == {"'" + evil, "'+1"}
    assert all(float(r["points"]) >= 0 for r in rows)


def test_progress_counts_only_the_work_and_logs_plain_lines_in_a_batch_job():
    """Issue 13, finding 7: the total is the notebooks to grade (missing ones are no work),
    the time left comes from the measured rate, and a log (not a terminal) gets a plain
    line every so often instead of only a final one."""
    now = [0.0]
    stream = io.StringIO()
    bar = progress.Progress(4, stream=stream, unit="notebooks", clock=lambda: now[0],
                            every=10.0)
    now[0] = 4.0
    bar.advance()                                   # 4 s for the first notebook
    assert stream.getvalue() == ""                  # not yet 10 s since the start
    now[0] = 12.0
    bar.advance()                                   # 2 done in 12 s: 6 s each, 2 left
    assert stream.getvalue() == "graded 2/4 notebooks (50%), eta 12s\n"
    now[0] = 13.0
    bar.advance(failed=True)
    assert stream.getvalue().count("\n") == 1       # the next line waits 10 s
    bar.close()
    assert stream.getvalue().endswith("graded 3/4 notebooks in 13s (4.33 s each), 1 not ok\n")


def test_a_run_counts_only_the_notebooks_handed_in(tmp_path, course):
    subs = make_class(tmp_path, {"111": {"01_a": "good"}, "222": {"01_a": "good",
                                                                  "02_b": "good"}})
    err = io.StringIO()
    grade.run(subs, tmp_path / "out", solutions=course, grade_fn=fake_engine, stream=err)
    assert "graded 3/3 notebooks" in err.getvalue()


def test_progress_in_a_log_prints_a_line_every_five_seconds_even_while_waiting():
    """Issue 13, finding 7: a batch job's log gets a plain line every few seconds (5 by
    default), from tick() as the run waits, not only when a notebook finishes. A fake
    clock: no real time involved."""
    now = [0.0]
    stream = io.StringIO()
    bar = progress.Progress(3, stream=stream, unit="notebooks", clock=lambda: now[0])
    assert bar.every == 5.0
    now[0] = 4.9
    bar.tick()
    assert stream.getvalue() == ""
    now[0] = 5.0
    bar.tick()                                      # nothing finished yet: still a line
    assert stream.getvalue() == "graded 0/3 notebooks (0%)\n"
    now[0] = 6.0
    bar.advance()
    bar.tick()
    assert stream.getvalue().count("\n") == 1       # 1 s since the last line
    now[0] = 10.0
    bar.tick()
    assert stream.getvalue().endswith("graded 1/3 notebooks (33%), eta 20s\n")
    now[0] = 30.0
    bar.advance()
    bar.advance()                                   # done: no more plain lines
    bar.tick()
    assert stream.getvalue().count("\n") == 3
    bar.close()
    assert stream.getvalue().endswith("graded 3/3 notebooks in 30s (10.00 s each)\n")


def _engine_waiting_for_a_log_line(log: Path, submission, assignment, **limits):
    """Grades only once the run's log shows a progress line written while this notebook
    was being graded (at most 120 s, then it returns as the stand-in would anyway)."""
    deadline = time.monotonic() + 120
    while "graded 0/1" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return fake_engine(submission, assignment, **limits)


def test_the_run_logs_progress_while_a_notebook_is_still_being_graded(tmp_path, course):
    """grade_class calls tick() as it waits for results: the log moves on during one long
    notebook. The clock is fake (one second per reading); the stand-in engine waits for
    the line, so nothing here depends on how fast the machine is."""
    subs = make_class(tmp_path, {"alice": {"02_b": "good"}})
    log = tmp_path / "log.txt"
    ticks = iter(range(10**6))
    with open(log, "w", encoding="utf-8") as stream:
        bar = progress.Progress(1, stream=stream, unit="notebooks",
                                clock=lambda: float(next(ticks)))
        students = grade.discover(subs, grade.course_notebooks(course))
        records = grade.grade_class(
            students, grade.course_notebooks(course), grade.Limits(), 1,
            functools.partial(_engine_waiting_for_a_log_line, log), bar)
        bar.close()
    got = {r["assignment"]: r for r in records}
    assert got["02_b"]["status"] == "ok"
    text = log.read_text()
    assert text.startswith("graded 0/1 notebooks (0%)\n"), text
    assert "\ngraded 1/1 notebooks in " in text
