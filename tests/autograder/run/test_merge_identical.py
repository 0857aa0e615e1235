"""``merge`` writes what one run over the whole class writes, byte for byte, feedback
pages included (issue 13, finding 8: the pages of a merged folder listed the exercises in
another order). Through the real commands and the real engine, on a small class
collected from a Canvas-style download."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from autograder.run.pool import shard_of
from benchmark_term import canvas_download

ASSIGNMENTS = ["01_dot_products", "03_simple_self_attention"]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # one grading secret for the class (the shards and the single run), kept outside OUT
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TMPDIR=str(cwd),
               AUTOGRADER_SECRET_FILE=str(cwd / "grading-secret.key"))
    result = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.slow
def test_merged_shards_are_byte_identical_to_one_run(tmp_path):
    deadline = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)
    canvas_download(tmp_path / "download.zip", 5, ASSIGNMENTS, deadline)
    cli(tmp_path, "collect", "download.zip", "--out", "submissions")
    students = sorted(p.name for p in (tmp_path / "submissions").iterdir()
                      if not p.name.startswith("_"))
    assert {shard_of(s, 2) for s in students} == {1, 2}      # both shards hold students
    cli(tmp_path, "grade", "submissions", "--out", "full", "--jobs", "2")
    for i in (1, 2):
        cli(tmp_path, "grade", "submissions", "--out", f"part{i}", "--jobs", "1",
            "--shard", f"{i}/2")
    # each shard graded its own students, and together all of them
    graded = []
    for i in (1, 2):
        with open(tmp_path / f"part{i}" / "summary.csv", newline="", encoding="utf-8") as f:
            graded.append({row["student_id"] for row in csv.DictReader(f)})
    assert not graded[0] & graded[1] and graded[0] | graded[1] == set(students)
    cli(tmp_path, "merge", "part1", "part2", "--out", "merged")

    full, merged = files(tmp_path / "full"), files(tmp_path / "merged")
    assert sorted(full) == sorted(merged)
    pages = [name for name in full if name.startswith("feedback/")
             and not name.endswith("/index.html")]
    assert len(pages) == 9                  # 5 students x 2 notebooks, one not handed in
    assert sum(name.endswith("/index.html") for name in full) == 5     # one per student
    for name in full:
        if name == "results.jsonl":
            continue
        assert full[name] == merged[name], name
    # results.jsonl: the same records, line for line, but for "seconds": the wall time
    # the engine took on that notebook in the run that graded it (read by
    # tools/benchmark_grading.py), a measurement of that run and never the same twice.
    # Nothing else in any output is allowed to differ.
    def lines(data: bytes) -> list[dict]:
        return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                for line in data.decode().splitlines()]

    assert lines(full["results.jsonl"]) == lines(merged["results.jsonl"])
    assert all("seconds" in json.loads(line) for line in full["results.jsonl"].decode().splitlines())
    # the exercises in the notebook's order (dot, cosine_similarity, pairwise_scores,
    # most_similar), not by name, on the merged pages as on the others
    page = merged[f"feedback/{students[0]}/01_dot_products/01_dot_products.html"].decode()
    positions = [page.index(f"Your answer: <code>{a}</code>")
                 for a in ("dot", "cosine_similarity", "pairwise_scores", "most_similar")]
    assert positions == sorted(positions)


def test_merge_keeps_the_scores_given_by_hand_and_refuses_two_different_ones(tmp_path, capsys):
    """Written answers scored in one shard's folder stay scored in the merged folder (and
    survive a later `grade --student` there); one answer scored differently in two
    inputs is refused. Through the command line, with the engine's stand-in."""
    import io

    from autograder.run import pool as grade
    from autograder.cli import main
    from fake_class import fake_engine, make_class, make_course, read_csv

    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"alice": {"01_a": "good"}, "bob": {"01_a": "good"}})
    assert grade.shard_of("alice", 2) != grade.shard_of("bob", 2)
    parts = []
    for i in (1, 2):
        parts.append(tmp_path / f"part{i}")
        grade.run(subs, parts[-1], solutions=solutions, grade_fn=fake_engine,
                  stream=io.StringIO(), shard=(i, 2))
    scores = tmp_path / "scores.csv"
    for part in parts:
        assert main(["manual-template", str(part), "--dest", str(scores)]) == 0
        rows = read_csv(scores)
        rows[0]["points"] = "1" if rows[0]["student_id"] == "alice" else "0.5"
        scores.write_text("student_id,assignment,notebook,grade_id,max_points,points,comment\n"
                          + ",".join(rows[0].values()) + "\n")
        assert main(["manual-import", str(part), str(scores)]) == 0
    merged = tmp_path / "merged"
    assert main(["merge", *map(str, parts), "--out", str(merged)]) == 0
    points = {r["student_id"]: float(r["points"]) for r in read_csv(merged / "summary.csv")
              if r["assignment"] == "01_a"}
    assert points == {"alice": 3 + 1, "bob": 3 + 0.5}
    assert len(json.loads((merged / "manual_scores.json").read_text())) == 2
    grade.run(subs, merged, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO(),
              only=["bob"])
    points = {r["student_id"]: float(r["points"]) for r in read_csv(merged / "summary.csv")
              if r["assignment"] == "01_a"}
    assert points == {"alice": 4, "bob": 3.5}
    # the same answer scored 1 in one folder and 0.5 in another: refused, nothing written
    other = tmp_path / "other"
    grade.run(subs, other, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    scores.write_text("student_id,assignment,notebook,grade_id,max_points,points,comment\n"
                      "alice,01_a,01_a.ipynb,why,1,0.5,\n")
    assert main(["manual-import", str(other), str(scores)]) == 0
    capsys.readouterr()
    assert main(["merge", str(parts[0]), str(parts[1]), str(other), "--out",
                 str(tmp_path / "m2")]) == 2
    assert "scored by hand differently" in capsys.readouterr().err
    assert not (tmp_path / "m2").exists()


def test_merging_a_student_graded_again_elsewhere_points_to_grade_student(tmp_path, capsys):
    """Issue 13, finding 6: a student graded again in a folder of their own clashes with
    their old grades; the message says how to regrade instead."""
    import io

    from autograder.run import pool as grade
    from autograder.cli import main
    from fake_class import fake_engine, make_class, make_course, read_csv

    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"alice": {"01_a": "HALF"}, "bob": {"01_a": "good"}})
    grade.run(subs, tmp_path / "out", solutions=solutions, grade_fn=fake_engine,
              stream=io.StringIO())
    (subs / "alice" / "01_a" / "01_a.ipynb").write_text("good")
    alone = make_class(tmp_path / "again", {"alice": {"01_a": "good"}})
    grade.run(alone, tmp_path / "alice", solutions=solutions, grade_fn=fake_engine,
              stream=io.StringIO())
    assert main(["merge", str(tmp_path / "out"), str(tmp_path / "alice"), "--out",
                 str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err
    assert "alice/01_a/01_a.ipynb" in err and "--student" in err
    # what the message advises: alice regraded into the class's own folder
    grade.run(subs, tmp_path / "out", solutions=solutions, grade_fn=fake_engine,
              stream=io.StringIO(), only=["alice"])
    summary = {r["student_id"]: r["points"] for r in read_csv(tmp_path / "out" / "summary.csv")
               if r["assignment"] == "01_a"}
    assert summary == {"alice": "3", "bob": "3"}
