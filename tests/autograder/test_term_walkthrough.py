"""The walkthrough of docs/grading.md ("A term, step by step") runs as written.

The test takes the fenced ``bash`` blocks of that section, in order, and runs each one
with bash in a fresh folder, with ``python`` the course's interpreter and ``~`` a
folder holding two Canvas downloads (``~/Downloads/homework1.zip`` and
``~/Downloads/homework1-late.zip``) built by ``tests/lms/canvas.py`` as Canvas's content
zipper builds them: files named after each student's sortable name, user id and
attachment id, the late attempt marked ``LATE``, every entry stamped with the download's
time. Between blocks it does what the text asks of a person (fill the scores in). Then
it checks what the commands wrote against numbers worked out by hand from the class
below, down to the feedback package: one page per student, named as Canvas's
"Re-Upload Submissions" reads names (``canvas_target``), each with an attachment id of
that student's current attempt. The real engine grades; nothing is stubbed.

The class (Canvas user ids 4711-4715; notebooks from tools/benchmark_term.py's kinds):

* 4711 right answers everywhere;
* 4712 the first typical mistakes (the catalogue's first wrong answer to each notebook's
  last exercise: 01 5/7, 03 1/4 autograded), then a corrected 01 uploaded late, a new
  attempt holding that file only, in a second download, marked ``LATE``;
* 4713 the second typical mistakes, and two files of 01 in the attempt (so with the same
  entry time, as Canvas writes them), attachment ids 999999 (the mistake) and 1000000
  (right): the later upload is 1000000;
* 4714 the released notebooks, untouched;
* 4715 right answers, but no 03.

Covers, through the real commands, issue 13's findings 1 (written answers scored and
counted), 2 and 3 (only the homework's columns, every student), 4 (a late
resubmission in a second download, a late policy), 5 (ids compared as numbers), 6
(one student regraded), 7 (progress counts what was handed in) and 8 (the item analysis
class size), and issue 21's LMS-faithful Canvas downloads and feedback package.
"""

from __future__ import annotations

import csv
import html
import os
import re
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder import REPO_ROOT
from benchmark_term import notebook_texts
from lms import canvas, canvas_api
from lms.canvas import canvas_target
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


#: The class: Canvas user id, sortable name (Canvas names each file after it), and what
#: each hands in (tools/benchmark_term.py's kinds of notebook).
CLASS = [(4711, "Lovelace, Ada", "perfect"), (4712, "Turing, Alan", "mistake_1"),
         (4713, "Hopper, Grace", "mistake_2"), (4714, "Noether, Emmy", "unanswered"),
         (4715, "Church, Alonzo", "partial")]
#: The first attachment id of the first download: 4713's two uploads of 01 get
#: 999999 and 1000000 (Canvas numbers attachments in the order of the zip).
FIRST_ATTACHMENT = 999_995
LATE_ATTACHMENT = 900_500


def make_downloads(home: Path) -> tuple[dict, dict[str, set[str]]]:
    """The two Canvas downloads, built by tests/lms/canvas.py as Canvas's content zipper
    does (names from the sortable names, every entry stamped with the download's time).
    Returns the notebook texts and ``{user id: attachment ids of the current attempt}``
    (what Canvas's comment re-upload accepts: the files of the submission as it is)."""
    texts = notebook_texts(ASSIGNMENTS)
    downloads = home / "Downloads"
    downloads.mkdir(parents=True)
    students = []
    for uid, name, kind in CLASS:
        uploads = [(f"{a}.ipynb", texts[kind][a].encode()) for a in ASSIGNMENTS
                   if a in texts[kind]]
        if uid == 4713:     # two files for 01 in one attempt: the mistake, then the fix
            uploads.insert(1, ("01_dot_products.ipynb",
                               texts["perfect"]["01_dot_products"].encode()))
        students.append(canvas.Student(uid, name, uploads))
    first = canvas.download(downloads / "homework1.zip", students, DEADLINE + timedelta(days=2),
                            first_attachment_id=FIRST_ATTACHMENT)
    # Canvas's record of the upload times, saved from its API with each download
    canvas_api.write(downloads / "homework1-times.json", [
        canvas_api.submission(uid, DEADLINE - timedelta(hours=uid - 4700), DEADLINE)
        for uid, _, _ in CLASS])
    canvas_api.write(downloads / "homework1-late-times.json", [
        canvas_api.submission(4712, DEADLINE + timedelta(hours=20), DEADLINE)])
    current: dict[str, set[str]] = {}
    for member in zipfile.ZipFile(first).namelist():
        uid, attachment = canvas_target(member)
        current.setdefault(uid, set()).add(attachment)
    assert current["4713"] == {"999999", "1000000", "1000001"}
    # 4712's corrected 01, after the deadline: a new attempt (Canvas marks it LATE, and
    # the attempt holds only that file), in a second download, made a day later
    resubmitted = canvas.Student(4712, "Turing, Alan", [
        ("01_dot_products.ipynb", texts["perfect"]["01_dot_products"].encode())], late=True)
    canvas.download(downloads / "homework1-late.zip", [resubmitted],
                    DEADLINE + timedelta(days=3), first_attachment_id=LATE_ATTACHMENT)
    current["4712"] = {str(LATE_ATTACHMENT)}
    return texts, current


def _text(page: str) -> str:
    """A page's text: tags dropped, entities read, spaces joined."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


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
                        ["collect", "grade"], ["export"], ["feedback-package"],
                        ["report"]], commands
    home = tmp_path / "home"
    texts, current = make_downloads(home)
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
    # the names: what Canvas's file names keep of the sortable names (no roster given)
    assert {line[0] for line in lines[2:]} == {
        "lovelaceada", "turingalan", "hoppergrace", "noetheremmy", "churchalonzo"}
    # feedback-package: one page per student, named as Canvas's re-upload reads names
    # (user id, then a file of the submission's current attempt: 4712's late one)
    with zipfile.ZipFile(work / "feedback.zip") as zf:
        pages = {name: zf.read(name).decode() for name in zf.namelist()}
    assert all(re.fullmatch(r"[a-z]+_\d+_\d+_feedback\.html", name) for name in pages), pages
    targets = {canvas_target(name): name for name in pages}
    assert sorted(uid for uid, _ in targets) == ["4711", "4712", "4713", "4714", "4715"]
    for (uid, attachment), name in targets.items():
        assert attachment in current[uid], (name, current[uid])
    ada = pages[targets[next(t for t in targets if t[0] == "4711")]]
    assert "clear: attention looks at all tokens at once" in ada       # the comment
    assert "01_dot_products" in ada and "03_simple_self_attention" in ada
    alan = _text(pages[targets[("4712", str(LATE_ATTACHMENT))]])
    assert "after the late penalty: 6.3 / 7" in alan, alan[:3000]     # as the gradebook
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
