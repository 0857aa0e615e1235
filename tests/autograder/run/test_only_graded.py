"""Only what was graded (issue 21, finding 2): a course notebook nobody in SUBMISSIONS
handed in is not part of the homework, so grade's table, summary.csv, report's
item_analysis.csv and its chart leave it out (unless ``grade --assignments`` names it);
a written answer is labelled ``manual`` in item_analysis.csv and drawn, in the legend
as such, in a chart whose legend covers no bar. With the engine's stand-in of
tests/fake_class.py; ``report`` through the real command."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

from autograder.cli import main
from autograder.results import report
from autograder.results.records import read_records, summary_table
from autograder.run import pool as grade
from fake_class import fake_engine, make_class, make_course, read_csv


def _graded(tmp_path, **kw):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"ann": {"01_a": "good"}, "bob": {"01_a": "HALF"},
                                 "cy": {"01_a": "good"}})          # nobody hands in 02_b
    out = tmp_path / "out"
    records = grade.run(subs, out, solutions=solutions, grade_fn=fake_engine,
                        stream=io.StringIO(), **kw)
    return out, records


def test_a_notebook_nobody_handed_in_is_not_graded(tmp_path):
    out, records = _graded(tmp_path)
    assert {r["assignment"] for r in records} == {"01_a"}
    summary = read_csv(out / "summary.csv")
    assert [(r["student_id"], r["assignment"]) for r in summary] == [
        ("ann", "01_a"), ("bob", "01_a"), ("cy", "01_a")]
    table = summary_table(records)
    assert "02_b" not in table and "missing" not in table
    assert main(["report", str(out)]) == 0
    rows = read_csv(out / "item_analysis.csv")
    assert {r["assignment"] for r in rows} == {"01_a"}
    kinds = {r["grade_id"]: r["kind"] for r in rows}
    assert kinds == {"test_f": "test", "test_f_hidden": "test", "why": "manual"}


def test_grade_assignments_names_the_homework(tmp_path):
    out, records = _graded(tmp_path, assignments=["01_a", "02_b"])
    summary = {(r["student_id"], r["assignment"]): r for r in read_csv(out / "summary.csv")}
    assert len(summary) == 6
    assert all(summary[(s, "02_b")]["status"] == "missing" for s in ("ann", "bob", "cy"))
    # a notebook handed in but not named is not graded
    out2, records2 = _graded(tmp_path / "again", assignments=["02_b"])
    assert {r["assignment"] for r in records2} == {"02_b"}
    assert all(r["status"] == "missing" for r in records2)


def test_chart_legend_names_the_written_answer_and_covers_no_bar(tmp_path):
    out, records = _graded(tmp_path)
    rows = report.item_analysis(read_records(out))
    fig = report.chart_figure(rows, 3)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    legend = ax.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert any("written answer" in t for t in texts), texts
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "01_a: why (written)" in labels
    box = legend.get_window_extent(renderer)
    bars = [p for p in ax.patches if p.get_width() > 0]
    assert len(bars) >= 4
    for bar in bars:
        assert not box.overlaps(bar.get_window_extent(renderer)), bar


def test_a_written_answer_nobody_handed_in_is_still_labelled_manual(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"ann": {"02_b": "good"}})          # 01_a: nobody
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO(),
              assignments=["01_a", "02_b"])
    assert main(["report", str(out)]) == 0
    rows = {r["grade_id"]: r for r in read_csv(out / "item_analysis.csv")}
    assert (rows["why"]["kind"], rows["why"]["students"]) == ("manual", "0")
    assert rows["test_f"]["kind"] == "test"


def test_the_legend_covers_no_bar_even_when_every_bar_is_full():
    rows = [{"assignment": "04_q", "grade_id": f"test_{i}", "kind": "test", "students": 47,
             "full_marks_share": 1.0, "mean_fraction": 1.0} for i in range(6)]
    rows.append({"assignment": "04_q", "grade_id": "why", "kind": "manual", "students": 47,
                 "full_marks_share": 1.0, "mean_fraction": 1.0})
    fig = report.chart_figure(rows, 47)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    box = ax.get_legend().get_window_extent(renderer)
    bars = [p for p in ax.patches if p.get_width() > 0]
    assert len(bars) == 14
    assert not any(box.overlaps(bar.get_window_extent(renderer)) for bar in bars)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(texts) == 4 and sum("written answer" in t for t in texts) == 2
