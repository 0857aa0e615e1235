"""Written answers scored by hand through a plain CSV: ``manual-template`` writes one row
per written answer, ``manual-import`` takes the filled file in (all or nothing), and the
scores count in summary.csv, the exports and the feedback pages, and survive a regrade.
Through the command line, on a class graded by the engine's stand-in of tests/fake_class.py."""

from __future__ import annotations

import csv
import io
import json

from autograder.results import export
from autograder.run import pool as grade
from autograder.cli import main
from autograder.results.records import MANUAL_TEMPLATE_COLUMNS
from fake_class import fake_engine, make_class, make_course


def _graded(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "good", "02_b": "good"},
                                 "222": {"01_a": "good"}})
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    return subs, solutions, out


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_template_import_and_everything_counts_them(tmp_path, capsys):
    subs, solutions, out = _graded(tmp_path)
    scores = tmp_path / "scores.csv"
    assert main(["manual-template", str(out), "--dest", str(scores)]) == 0
    rows = _rows(scores)
    assert list(rows[0]) == MANUAL_TEMPLATE_COLUMNS
    assert [(r["student_id"], r["grade_id"], r["max_points"], r["points"]) for r in rows] == [
        ("111", "why", "1", ""), ("222", "why", "1", "")]
    rows[0].update(points="1", comment="clear and right")
    rows[1].update(points="0.5")
    with open(scores, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, MANUAL_TEMPLATE_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    assert main(["manual-import", str(out), str(scores)]) == 0
    summary = {(r["student_id"], r["assignment"]): r for r in _rows(out / "summary.csv")}
    before = 3                                       # the stand-in's autograded points of 01_a
    assert float(summary[("111", "01_a")]["points"]) == before + 1
    assert float(summary[("222", "01_a")]["points"]) == before + 0.5
    assert summary[("111", "01_a")]["status"] != "needs_manual_grade"
    page = (out / "feedback" / "111" / "01_a" / "01_a.html").read_text()
    assert "clear and right" in page
    [canvas] = export.export(out, "canvas")
    assert ["111", "111", "", "", "", "4", "3"] in list(csv.reader(canvas.open()))
    # a regrade into the same OUT keeps them; the template shows what was given
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    summary = {(r["student_id"], r["assignment"]): r for r in _rows(out / "summary.csv")}
    assert float(summary[("222", "01_a")]["points"]) == before + 0.5
    assert main(["manual-template", str(out), "--dest", str(scores)]) == 0
    assert [r["points"] for r in _rows(scores)] == ["1", "0.5"]


def test_a_bad_row_is_named_and_nothing_is_applied(tmp_path, capsys):
    _, _, out = _graded(tmp_path)
    scores = tmp_path / "scores.csv"
    main(["manual-template", str(out), "--dest", str(scores)])
    rows = _rows(scores)
    for bad, words in ((dict(points="7"), "row 3: points 7 is outside 0 .. 1"),
                       (dict(points="a lot"), "row 3: points 'a lot' is not a number"),
                       (dict(grade_id="test_f", points="1"), "row 3: 222, 01_a, 01_a.ipynb, "
                                                             "test_f is not a written answer")):
        rows[0]["points"] = "1"                      # row 2: fine on its own
        rows[1] = {**_rows(scores)[1], **bad}
        with open(scores, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, MANUAL_TEMPLATE_COLUMNS)
            w.writeheader()
            w.writerows(rows)
        before = (out / "summary.csv").read_text()
        assert main(["manual-import", str(out), str(scores)]) == 2
        err = capsys.readouterr().err
        assert words in err and "nothing was applied" in err, err
        assert (out / "summary.csv").read_text() == before
        assert not (out / "manual_scores.json").exists()


def test_export_chosen_assignments_weighted_with_every_roster_student(tmp_path, capsys):
    """Issue 13, findings 2 and 3: a homework of some assignments yields only their
    columns; a roster student with nothing graded appears with 0."""
    _, _, out = _graded(tmp_path)
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name\n111,Ann\n222,Bob\n333,Cy Nothing\n")
    dest = tmp_path / "exports"
    assert main(["export", str(out), "--format", "canvas", "--roster", str(roster),
                 "--dest", str(dest), "--assignments", "02_b", "--weights", "02_b=2"]) == 0
    lines = list(csv.reader((dest / "canvas_grades.csv").open()))
    assert lines[0][5:] == ["02_b"] and lines[1][5:] == ["6"]
    rows = {line[1]: line[5] for line in lines[2:]}
    assert rows == {"111": "6", "222": "0", "333": "0"}
    assert main(["export", str(out), "--format", "gradescope", "--assignments", "01_a,nope",
                 "--dest", str(dest)]) == 2
    assert "no graded assignment nope" in capsys.readouterr().err
    assert main(["export", str(out), "--format", "canvas", "--weights", "01_a=lots"]) == 2
    assert "--weights takes ASSIGNMENT=NUMBER" in capsys.readouterr().err


def test_grade_on_a_download_never_collected_says_to_collect(tmp_path, capsys):
    """Issue 13, finding 8: the flat files of an LMS download are no class layout."""
    download = tmp_path / "download"
    download.mkdir()
    (download / "doejane_5_123_01_dot_products.ipynb").write_text("{}")
    assert main(["grade", str(download), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "collect" in err and "LMS download" in err


def test_records_say_which_solutions_graded_them_and_merge_refuses_a_mix(tmp_path, capsys):
    """Issue 13, finding 6: stale grades never merge silently."""
    subs, solutions, out = _graded(tmp_path)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len({(r["solutions"], r["grader"]) for r in records}) == 1
    # the same class graded after a change to the solutions
    nb = solutions / "02_b" / "02_b.ipynb"
    nb.write_text(nb.read_text().replace('check(\\"g\\", g)', 'check(\\"g\\", g)  # v2'))
    other = tmp_path / "out2"
    grade.run(subs, other, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    merged = tmp_path / "merged"
    assert main(["merge", str(out), str(other), "--out", str(merged)]) == 2
    err = capsys.readouterr().err
    assert "graded with solutions" in err and "--allow-mixed" in err
    assert not (merged / "results.jsonl").exists()


def _engine_with_answers(submission, assignment, **kw):
    """The stand-in, with the written answer ``why`` as the submission's text says:
    ``STUB`` (left as released), ``EMPTY``, ``FORMULA`` (a spreadsheet formula)."""
    text = open(submission).read()
    result = fake_engine(submission, assignment, **kw)
    if assignment == "01_a":
        for word, answer in (("STUB", "YOUR ANSWER HERE\n"), ("EMPTY", "  "),
                             ("FORMULA", '=HYPERLINK("http://x","a, \\"b\\"\nc")')):
            if word in text:
                result.answers["why"] = answer
    return result


def test_template_carries_the_answers_and_prefills_untouched_ones(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"ann": {"01_a": "good"}, "bob": {"01_a": "STUB"},
                                 "cy": {"01_a": "EMPTY"}, "dee": {"01_a": "FORMULA"}})
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=_engine_with_answers,
              stream=io.StringIO())
    scores = tmp_path / "scores.csv"
    assert main(["manual-template", str(out), "--dest", str(scores)]) == 0
    rows = {r["student_id"]: r for r in _rows(scores)}
    assert rows["ann"]["answer"] == "Because <i>so</i>."
    assert (rows["ann"]["points"], rows["ann"]["prefilled"]) == ("", "")
    assert (rows["bob"]["points"], rows["bob"]["prefilled"]) == ("0", "yes")
    assert "YOUR ANSWER HERE" in rows["bob"]["comment"]
    assert (rows["cy"]["points"], rows["cy"]["prefilled"]) == ("0", "yes")
    # a formula is neutralised, quotes, commas and newlines survive the CSV
    assert rows["dee"]["answer"] == '\'=HYPERLINK("http://x","a, \\"b\\"\nc")'
    assert rows["dee"]["points"] == ""
    # taken back unchanged: the two pre-filled zeros, nothing else
    assert main(["manual-import", str(out), str(scores)]) == 0
    given = json.loads((out / "manual_scores.json").read_text())
    assert sorted((json.loads(k)[0], v["points"]) for k, v in given.items()) == [
        ("bob", 0.0), ("cy", 0.0)]
    summary = {r["student_id"]: r for r in _rows(out / "summary.csv")}
    assert summary["bob"]["status"] != "needs_manual_grade"          # 3 + 0 of 4
    assert float(summary["bob"]["points"]) == 3.0
    assert summary["ann"]["status"] == "needs_manual_grade"
