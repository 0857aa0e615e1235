"""The instructor's command line, end to end: `python -m autograder ...` with the real engine."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import NOTEBOOKS_DIR, REPO_ROOT
from autograder.notebook import stored as notebook_format
from autograder.cli import CANNOT_RUN, main
from autograder.release.notebooks import assignments

def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def graded(example_class_graded):
    """The example class graded by the real command (tests/conftest.py)."""
    return example_class_graded


@pytest.mark.slow
def test_grade_command(example_class, graded):
    out, result, before, after = graded
    assert result.returncode == 0, result.stderr
    assert after == before, "grade modified SUBMISSIONS"
    students = {p.name for p in (example_class / "submissions").iterdir() if p.is_dir()}
    # not a terminal: no redraws, one final line
    assert "\r" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("graded ")
    table = result.stdout.splitlines()
    assert table[0].split() == ["assignment", "students", "mean", "max", "statuses"]
    assert "invalid_json/" in result.stdout and ": invalid (0/" in result.stdout
    rows = read_csv(out / "grades.csv")
    assert {r["student_id"] for r in rows} == students
    perfect = [r for r in rows if r["student_id"] == "perfect" and r["kind"] == "test"
               and r["status"] != "missing"]
    assert perfect and all(r["points"] == r["max_points"] for r in perfect)
    summary = read_csv(out / "summary.csv")
    assert len(summary) == len(students) * len(assignments())
    assert (out / "feedback" / "perfect").is_dir()


@pytest.mark.slow
def test_report_and_export_commands(graded, tmp_path):
    out, _, _, _ = graded
    result = cli("report", str(out), "--dest", str(tmp_path))
    assert result.returncode == 0, result.stderr
    rows = read_csv(tmp_path / "item_analysis.csv")
    assert {r["grade_id"] for r in rows} >= {"test_dot", "test_pairwise_scores"}
    assert (tmp_path / "item_analysis.png").stat().st_size > 1000
    for fmt, name in (("canvas", "canvas_grades.csv"), ("gradescope", "gradescope_01_dot_products.csv")):
        result = cli("export", str(out), "--format", fmt, "--dest", str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert (tmp_path / name).is_file()
    canvas = {r["ID"]: r for r in read_csv(tmp_path / "canvas_grades.csv")}
    summary = {(r["student_id"], r["assignment"]): r for r in read_csv(out / "summary.csv")}
    assert canvas["perfect"]["01_dot_products"] == summary[("perfect", "01_dot_products")]["points"]
    assert canvas["invalid_json"]["01_dot_products"] == "0"


def test_grade_without_submissions_folder_says_so(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == CANNOT_RUN
    err = capsys.readouterr().err
    assert "submissions folder not found" in err and "nope" in err
    assert not (tmp_path / "out").exists()


def test_bad_arguments_are_refused(tmp_path, capsys):
    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "o"), "--shard", "3/2"]) == CANNOT_RUN
    assert "1 <= I <= N" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["grade", str(tmp_path), "--out", str(tmp_path / "o"), "--jobs", "0"])
    assert main(["report", str(tmp_path)]) == CANNOT_RUN
    assert "results.jsonl" in capsys.readouterr().err


def test_help_lists_every_command():
    result = cli("--help")
    for command in ("release", "normalize", "collect", "grade", "merge", "report", "export",
                    "make-examples"):
        assert command in result.stdout


def test_normalize_command_still_works(tmp_path, capsys):
    name = assignments()[0]
    path = tmp_path / f"{name}.ipynb"
    nb = json.loads((NOTEBOOKS_DIR / name / f"{name}.ipynb").read_text())
    nb["cells"][0].setdefault("metadata", {})["scrolled"] = True
    nb["metadata"]["widgets"] = {"x": 1}
    path.write_text(json.dumps(nb))
    assert main(["normalize", str(path)]) == 0
    assert "1 notebook(s) changed" in capsys.readouterr().out
    assert notebook_format.is_normalized(path)


@pytest.mark.slow
def test_release_command_still_works(tmp_path, capsys):
    name = assignments()[0]
    assert main(["release", name, "--dest", str(tmp_path)]) == 0
    assert "file(s) changed" in capsys.readouterr().out
    released = tmp_path / name / f"{name}.ipynb"
    assert notebook_format.is_normalized(released)
    assert "BEGIN SOLUTION" not in released.read_text() and "YOUR CODE HERE" in released.read_text()


# Student code never runs as root (docs/threat_model.md, "Fallback mode").


def _canary_class(root: Path, example_class: Path) -> tuple[Path, Path]:
    """One student whose 01_dot_products notebook creates a file outside its sandbox."""
    canary_dir = root / "canary"
    canary_dir.mkdir()
    canary_dir.chmod(0o777)          # writable whoever the student code runs as
    canary = canary_dir / "student_code_ran"
    name = "01_dot_products"
    nb = notebook_format.read(example_class / "submissions" / "perfect" / name / f"{name}.ipynb")
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "dot")
    answer.source = (f"try:\n    open({str(canary)!r}, 'w').close()\nexcept OSError:\n"
                     f"    pass\n" + answer.source)
    dest = root / "submissions" / "canary" / name / f"{name}.ipynb"
    dest.parent.mkdir(parents=True)
    notebook_format.write(nb, dest)
    return root / "submissions", canary


def test_grade_refuses_when_student_code_would_run_as_root(tmp_path, capsys, monkeypatch,
                                                          example_class):
    from autograder.isolation import confine, safety

    subs, canary = _canary_class(tmp_path, example_class)
    monkeypatch.setenv("AUTOGRADER_ISOLATION", "fallback")
    monkeypatch.delenv(confine.ALLOW_ROOT_FALLBACK_ENV, raising=False)
    monkeypatch.setattr(safety, "can_drop_privileges", lambda: False)
    out = tmp_path / "out"
    assert main(["grade", str(subs), "--out", str(out), "--jobs", "1"]) == CANNOT_RUN
    err = capsys.readouterr().err
    assert "refusing to grade" in err and "as root" in err
    for advice in ("non-root user", "namespaces", "readable", confine.ALLOW_ROOT_FALLBACK_ENV):
        assert advice in err, advice
    assert not canary.exists()       # no notebook ran
    assert not out.exists()


@pytest.mark.slow
def test_grade_as_root_in_fallback_only_with_the_unsafe_opt_in(tmp_path, capsys, monkeypatch,
                                                              example_class):
    from autograder.isolation import confine, safety

    subs, canary = _canary_class(tmp_path, example_class)
    monkeypatch.setenv("AUTOGRADER_ISOLATION", "fallback")
    monkeypatch.setenv(confine.ALLOW_ROOT_FALLBACK_ENV, "1")
    monkeypatch.setattr(safety, "can_drop_privileges", lambda: False)
    out = tmp_path / "out"
    assert main(["grade", str(subs), "--out", str(out), "--jobs", "1",
                 "--timeout", "120", "--cell-timeout", "30"]) == 0
    err = capsys.readouterr().err
    assert "STUDENT CODE RUNS AS ROOT" in err
    # root, but Landlock still confines its writes to its own folder (the canary is outside)
    assert not canary.exists()
    rows = read_csv(out / "grades.csv")
    assert {r["student_id"] for r in rows} == {"canary"}
    assert any(r["grade_id"] == "test_dot" and float(r["points"]) == 2 for r in rows)


def test_namespaces_mode_is_not_refused(monkeypatch):
    """The check never stands in the way where namespaces work, root or not."""
    from autograder.isolation import confine, safety

    monkeypatch.delenv(confine.ALLOW_ROOT_FALLBACK_ENV, raising=False)
    monkeypatch.setattr(safety, "can_drop_privileges", lambda: False)
    assert safety.check_safe_to_grade("namespaces") == "namespaces"
    with pytest.raises(confine.UnsafeToGrade, match="refusing to grade"):
        safety.check_safe_to_grade("fallback")
    monkeypatch.setattr(safety, "can_drop_privileges", lambda: True)
    assert safety.check_safe_to_grade("fallback") == "fallback"
