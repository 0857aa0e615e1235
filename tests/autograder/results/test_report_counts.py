"""Item analysis counts (issue 13, finding 8): a notebook nobody handed in shows the
points its cells are worth in solutions/ (not 0) and no mean; the chart's title gives
the number of students in the class, whoever handed in what. Through
``python -m autograder report`` (autograder.cli.main), on a class graded by the
engine's stand-in of tests/fake_class.py."""

from __future__ import annotations

import io

from autograder.run import pool as grade
from autograder.cli import main
from fake_class import fake_engine, make_class, make_course, read_csv
from notebook_helpers import png_texts


def test_a_notebook_nobody_handed_in_and_the_class_size(tmp_path, capsys):
    solutions = make_course(tmp_path)
    # four students: three hand in 01_a (one of them only half right), nobody hands in
    # 02_b, and dave hands in nothing gradable (a .py file)
    subs = make_class(tmp_path, {"ann": {"01_a": "good"}, "bob": {"01_a": "HALF"},
                                 "cy": {"01_a": "good"}})
    (subs / "dave").mkdir()
    (subs / "dave" / "homework.py").write_text("print('hi')\n")
    out = tmp_path / "out"
    # 02_b named as part of the homework (grade --assignments): by default a notebook
    # nobody handed in is not graded at all (tests/autograder/run/test_only_graded.py)
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO(),
              assignments=["01_a", "02_b"])
    assert main(["report", str(out), "--dest", str(tmp_path / "report")]) == 0
    rows = {r["grade_id"]: r for r in read_csv(tmp_path / "report" / "item_analysis.csv")}
    nobody = rows["test_g"]
    assert nobody["assignment"] == "02_b"
    assert nobody["max_points"] == "3"                  # from solutions/02_b: 3 points
    assert nobody["students"] == "0" and nobody["not_handed_in"] == "4"
    assert nobody["mean_points"] == "" and nobody["full_marks_share"] == ""
    hidden = rows["test_f_hidden"]
    assert hidden["max_points"] == "2" and hidden["students"] == "3"
    assert hidden["not_handed_in"] == "1"              # dave
    assert hidden["mean_points"] == "1.333"             # (2 + 0 + 2) / 3
    assert rows["why"]["max_points"] == "1"
    title = png_texts(tmp_path / "report" / "item_analysis.png")["Title"]
    assert title == "Item analysis (4 students in the class)"
