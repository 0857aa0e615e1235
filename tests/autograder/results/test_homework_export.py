"""A homework is the unit of a grade (issue 21, finding 1): ``export --homework
NAME=A,B,...`` writes one column (Canvas) or file (Gradescope) per homework, points
summed over its assignments, the late policy applied per homework (as late as its
latest notebook); two columns of one name are refused. Through ``python -m autograder
export`` (autograder.cli.main), on a class graded by the engine's stand-in of
tests/fake_class.py, with upload times as collect records them."""

from __future__ import annotations

import csv
import io

from autograder.cli import main
from autograder.results import late
from autograder.run import pool as grade
from fake_class import fake_engine, make_class, make_course, read_csv


def _graded(tmp_path):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "good", "02_b": "good"},
                                 "222": {"01_a": "HALF"},
                                 "333": {"01_a": "good", "02_b": "good"}})
    uploads = [  # 111: 02_b 1 day and 1 hour late; 333: 01_a 3 h late, 02_b on time
        ("111", "01_a", "2026-10-01T10:00:00+00:00"), ("111", "02_b", "2026-10-03T00:59:00+00:00"),
        ("222", "01_a", "2026-10-01T09:00:00+00:00"),
        ("333", "01_a", "2026-10-02T02:59:00+00:00"), ("333", "02_b", "2026-10-01T08:00:00+00:00")]
    with open(subs / late.SUBMISSIONS_CSV, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(late.SUBMISSION_COLUMNS)
        for student, a, when in uploads:
            w.writerow([student, a, f"{a}.ipynb", when, "", f"x_{student}_1_{a}.ipynb"])
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    return out


def _canvas(path):
    return list(csv.reader(path.open(newline="", encoding="utf-8")))


def test_one_column_per_homework_with_the_late_policy_per_homework(tmp_path, capsys):
    out = _graded(tmp_path)
    dest = tmp_path / "canvas"
    assert main(["export", str(out), "--format", "canvas", "--dest", str(dest),
                 "--homework", "Homework 1=01_a,02_b",
                 "--deadline", "2026-10-01T23:59", "--late-policy", "10"]) == 0, \
        capsys.readouterr().err
    rows = _canvas(dest / "canvas_grades.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 1"]
    # maximum: 01_a (1 + 2 autograded + 1 written) + 02_b (3) = 7
    assert rows[1] == ["Points Possible", "", "", "", "", "7"]
    got = {r[1]: r[5] for r in rows[2:]}
    # 111: 3 + 3 = 6 points, latest notebook 1 day 1 minute late -> 2 days -> 20% off: 4.8
    # 222: 1 (half of 01_a), 02_b missing, on time: 1
    # 333: 3 + 3 = 6, latest notebook (01_a) 3 hours late -> 1 day -> 10% off: 5.4
    assert got == {"111": "4.8", "222": "1", "333": "5.4"}
    late_rows = {r["student_id"]: r for r in read_csv(dest / "late.csv")}
    assert set(late_rows) == {"111", "333"}
    assert late_rows["111"]["assignment"] == "Homework 1"
    assert late_rows["111"]["notebook"] == "02_b/02_b.ipynb"
    assert late_rows["111"]["days_late"] == "2" and late_rows["333"]["days_late"] == "1"

    gs = tmp_path / "gs"
    assert main(["export", str(out), "--format", "gradescope", "--dest", str(gs),
                 "--homework", "Homework 1=01_a", "--homework", "Homework 2=02_b"]) == 0
    assert sorted(p.name for p in gs.iterdir()) == ["gradescope_Homework 1.csv",
                                                    "gradescope_Homework 2.csv"]
    hw2 = {r["SID"]: r["Total Score"] for r in read_csv(gs / "gradescope_Homework 2.csv")}
    assert hw2 == {"111": "3", "222": "0", "333": "3"}


def test_two_columns_of_one_name_are_refused(tmp_path, capsys):
    out = _graded(tmp_path)
    dest = tmp_path / "x"
    for fmt in ("canvas", "gradescope"):
        assert main(["export", str(out), "--format", fmt, "--dest", str(dest),
                     "--rename", "01_a=Homework 2", "--rename", "02_b=Homework 2"]) == 2
        err = capsys.readouterr().err
        assert "two columns would be named 'Homework 2'" in err and "--homework" in err
    assert main(["export", str(out), "--format", "canvas", "--dest", str(dest),
                 "--homework", "H=01_a", "--homework", "H=02_b"]) == 2
    assert "given twice" in capsys.readouterr().err
    assert main(["export", str(out), "--format", "canvas", "--dest", str(dest),
                 "--homework", "H=01_a,02_b", "--homework", "I=02_b"]) == 2
    assert "02_b is in two homeworks" in capsys.readouterr().err
    assert main(["export", str(out), "--format", "canvas", "--dest", str(dest),
                 "--homework", "H=01_a,09_nope"]) == 2
    assert "09_nope" in capsys.readouterr().err
    assert not dest.exists() or not list(dest.iterdir())
