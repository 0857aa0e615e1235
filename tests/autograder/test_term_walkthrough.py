"""The walkthrough of docs/grading.md ("A term, step by step") runs as written.

The test takes the fenced ``bash`` blocks of that section, in order, and runs each one
with bash in a fresh folder, with ``python`` the course's interpreter and ``~`` a
folder holding two generated Canvas downloads (``~/Downloads/homework1.zip`` and
``~/Downloads/homework1-late.zip``). Between blocks it does what the text asks of a
person (fill the scores in). Then it checks what the commands wrote against numbers
worked out by hand from the class below. The real engine grades; nothing is stubbed.

The class (Canvas user ids 4711-4715, from tools/benchmark_term.py):

* 4711 right answers everywhere;
* 4712 the first typical mistakes (the catalogue's first wrong answer to each notebook's
  last exercise: 01 5/7, 03 1/4 autograded), then a corrected 01 uploaded late, in a
  second download, marked `_LATE`;
* 4713 the second typical mistakes, and two more uploads of 01 in the same download (so
  with the same entry time, as Canvas writes them), attachment ids 999999 (the mistake)
  and 1000000 (right): the later upload is 1000000;
* 4714 the released notebooks, untouched;
* 4715 right answers, but no 03.

Covers, through the real commands, issue 13's findings 1 (written answers scored and
counted), 2 and 3 (only the homework's columns, every student), 4 (a late
resubmission in a second download, a late policy), 5 (ids compared as numbers), 6
(one student regraded), 7 (progress counts what was handed in) and 8 (the item analysis
class size).
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder import REPO_ROOT
from benchmark_term import canvas_download, notebook_texts
from notebook_helpers import png_texts

SECTION = "## A term, step by step"
ASSIGNMENTS = ["01_dot_products", "03_simple_self_attention"]
DEADLINE = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)


def walkthrough_blocks() -> list[str]:
    text = (REPO_ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start:end if end >= 0 else None]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.S)


def rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def make_downloads(home: Path) -> dict:
    texts = notebook_texts(ASSIGNMENTS)
    downloads = home / "Downloads"
    downloads.mkdir(parents=True)
    first = canvas_download(downloads / "homework1.zip", 5, ASSIGNMENTS, DEADLINE,
                            late_every=0, texts=texts, first_id=4711)
    # Canvas stamps every entry of a download with the download's time (canvas_download:
    # two days after the deadline); two uploads of one notebook are told apart by their
    # attachment ids: 4713's 1000000 came after 999999 (as numbers, not as text)
    downloaded = (DEADLINE + timedelta(days=2)).timetuple()[:6]
    with zipfile.ZipFile(first, "a") as zf:
        for sub, kind in (("999999", "mistake_2"), ("1000000", "perfect")):
            zf.writestr(zipfile.ZipInfo(f"student002_4713_{sub}_01_dot_products.ipynb",
                                        date_time=downloaded), texts[kind]["01_dot_products"])
    later = (DEADLINE + timedelta(days=3)).timetuple()[:6]     # a second download
    with zipfile.ZipFile(downloads / "homework1-late.zip", "w") as zf:
        zf.writestr(zipfile.ZipInfo("student001_LATE_4712_900500_01_dot_products.ipynb",
                                    date_time=later), texts["perfect"]["01_dot_products"])
    return texts


def fill_in(scores: Path) -> None:
    """What the instructor does in the spreadsheet: full points for a written answer,
    0 for the untouched notebook (4714), a comment for 4711."""
    table = rows(scores)
    assert {r["student_id"] for r in table} == {"4711", "4712", "4713", "4714"}
    for row in table:
        row["points"] = "0" if row["student_id"] == "4714" else row["max_points"]
        row["comment"] = "clear: attention looks at all tokens at once" \
            if row["student_id"] == "4711" else ""
    with open(scores, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, list(table[0]))
        writer.writeheader()
        writer.writerows(table)


@pytest.mark.slow
def test_the_documented_term_runs_as_written(tmp_path):
    blocks = walkthrough_blocks()
    commands = [re.findall(r"python -m autograder (\S+)", block) for block in blocks]
    assert commands == [["collect"], ["grade"], ["manual-template"], ["manual-import"],
                        ["collect", "grade"], ["export"], ["report"]], commands
    home = tmp_path / "home"
    texts = make_downloads(home)
    work = tmp_path / "course"
    work.mkdir()
    env = dict(os.environ, HOME=str(home), TMPDIR=str(tmp_path), OPENBLAS_NUM_THREADS="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    outputs = []
    for block in blocks:
        done = subprocess.run(["bash", "-e", "-c", block], cwd=work, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (block, done.stdout, done.stderr)
        outputs.append(done)
        if "manual-template" in block:
            fill_in(work / "scores.csv")

    subs, out = work / "submissions", work / "grading-output"
    # collect: the later upload won (id 1000000 > 999999 as numbers), and the
    # late resubmission replaced 4712's first file, which is kept
    assert (subs / "4713" / "01_dot_products" / "01_dot_products.ipynb").read_text() == \
        texts["perfect"]["01_dot_products"]
    assert (subs / "4712" / "01_dot_products" / "01_dot_products.ipynb").read_text() == \
        texts["perfect"]["01_dot_products"]
    assert any((subs / "_unmatched" / "replaced").rglob("*01_dot_products*"))
    assert sorted(p.name for p in (subs / "_collect_reports").iterdir()) == [
        "01_homework1.zip.csv", "02_homework1-late.zip.csv"]      # one report per download
    # grade: the progress counted the 9 notebooks handed in (not 5 x 11)
    assert "graded 9/9 notebooks" in outputs[1].stderr, outputs[1].stderr
    assert "graded 2/2 notebooks" in outputs[4].stderr, outputs[4].stderr   # 4712 alone
    # the written answers count, and survived the regrade of 4712
    summary = {(r["student_id"], r["assignment"]): r for r in rows(out / "summary.csv")}
    assert summary[("4711", "03_simple_self_attention")]["points"] == "6"
    assert summary[("4712", "03_simple_self_attention")]["points"] == "3"     # 1 + 2 by hand
    assert summary[("4712", "01_dot_products")]["points"] == "7"              # regraded, late
    page = (out / "feedback" / "4711" / "03_simple_self_attention" /
            "03_simple_self_attention.html").read_text()
    assert "clear: attention looks at all tokens at once" in page
    # export: the homework's two columns, every student, 10 % off 4712's late 01 (Canvas's
    # LATE mark without an upload time counts one day begun)
    lines = list(csv.reader((out / "canvas_grades.csv").open(newline="")))
    assert lines[0][5:] == ASSIGNMENTS and lines[1][5:] == ["7", "6"]
    grades = {line[1]: line[5:] for line in lines[2:]}
    assert set(grades) == {"4711", "4712", "4713", "4714", "4715"}
    assert grades["4711"] == ["7", "6"]
    assert grades["4712"] == ["6.3", "3"]
    assert grades["4713"][0] == "7"
    assert grades["4714"] == ["0", "0"]
    assert grades["4715"] == ["7", "0"]
    [late] = rows(out / "late.csv")
    assert (late["student_id"], late["assignment"]) == ("4712", "01_dot_products")
    # report: every exercise of the two notebooks, the class of five in the title
    items = {r["grade_id"]: r for r in rows(out / "item_analysis.csv")}
    assert {"test_dot", "test_simple_self_attention", "why_no_recurrence"} <= set(items)
    assert items["test_simple_self_attention"]["not_handed_in"] == "1"       # 4715
    assert png_texts(out / "item_analysis.png")["Title"] == \
        "Item analysis (5 students in the class)"


def test_the_bookkeeping_commands_do_not_load_nbformat():
    """collect, manual-template/-import, export and report start in a fraction of a
    second: parsing the command line does not import nbformat (about 1.5 s of CPU, which
    every one of them paid before; measured in docs/grading.md, Speed)."""
    code = ("import sys\n"
            "from autograder import cli\n"
            "cli.build_parser().parse_args(['export', 'out', '--format', 'canvas'])\n"
            "import autograder.results.manual, autograder.results.export, autograder.results.report, "
            "autograder.intake.collect\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('nbformat', 'jsonschema', 'matplotlib')))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
