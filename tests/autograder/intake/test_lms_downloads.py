"""collect on downloads built the way the LMSs build them (tests/lms/: Canvas's
content_zipper.rb, Moodle's downloader.php, Gradescope's export as public parsers read
it), through the real command: issue 21 ("The instructor's term III") and issue 23's
finding on the Git route.

The lesson these tests keep: a Canvas or Moodle zip stamps every entry with the time of
the download, so an entry time is never an upload time there; Canvas's lateness is its
``LATE`` mark.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder import SOLUTIONS_DIR
from lms import canvas, gradescope, moodle
from lms.commands import NB, clone, report, rows, run, tag_of

DEADLINE = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)
DOWNLOADED = DEADLINE + timedelta(days=3, hours=9)     # the instructor downloads later


def nb(tag: str) -> bytes:
    return json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
                       "tag": tag}).encode()


def collect(download: Path, out: Path, tmp: Path) -> subprocess.CompletedProcess:
    return run("collect", download, "--out", out, tmp=tmp)


# --------------------------------------------------------------------------- Canvas, late

@pytest.mark.slow
def test_canvas_lateness_is_its_late_mark_not_the_entry_times(tmp_path):
    """A Canvas class downloaded three days after the deadline: every entry carries the
    download's time. collect, grade and export with a late policy told how late a
    notebook Canvas marked LATE counts (``--assume-late-days 1``: its upload time is
    unknown; without it the export is refused, tests/autograder/intake/test_lms_times.py)
    take 10 % off that one submission, and nothing off the others, whose entry time is
    also three days late."""
    source = (SOLUTIONS_DIR / NB / f"{NB}.ipynb").read_bytes()
    students = [canvas.Student(4711, "Doe, Jane", [(f"{NB}.ipynb", source)]),
                canvas.Student(4712, "Smith, Bob", [(f"{NB}.ipynb", source)], late=True),
                canvas.Student(4713, "Lee, Ann", [(f"{NB}.ipynb", source)])]
    download = canvas.download(tmp_path / "canvas.zip", students, DOWNLOADED)
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    done = collect(download, subs, tmp)
    assert "entry times are the download's, not upload times" in done.stderr
    table = {r["student_id"]: r for r in rows(subs / "_submissions.csv")}
    assert set(table) == {"4711", "4712", "4713"}
    assert [table[s]["lms_late"] for s in ("4711", "4712", "4713")] == ["", "yes", ""]
    assert {r["submitted_at"] for r in table.values()} == {""}     # not the download's
    run("grade", subs, "--out", out, "--jobs", "1", tmp=tmp)
    run("export", out, "--format", "canvas", "--assignments", NB,
        "--deadline", DEADLINE.isoformat(), "--late-policy", "10:40",
        "--assume-late-days", "1", tmp=tmp)
    grades = {r["ID"]: r for r in rows(out / "canvas_grades.csv") if r["ID"]}
    full = float(grades["4711"][NB])
    assert full > 0
    assert float(grades["4713"][NB]) == pytest.approx(full)
    assert float(grades["4712"][NB]) == pytest.approx(full * 0.9)
    late = rows(out / "late.csv")
    assert [(r["student_id"], r["days_late"]) for r in late] == [("4712", "1")]


# --------------------------------------------------------------------------- checkpoints

def zipped_folder(real: bytes, checkpoint: bytes) -> bytes:
    """What a student's "compress this folder" makes of a Jupyter folder: the notebook
    and Jupyter's autosave ``.ipynb_checkpoints/<name>-checkpoint.ipynb``, same times."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in ((f"hw1/{NB}.ipynb", real),
                           (f"hw1/.ipynb_checkpoints/{NB}-checkpoint.ipynb", checkpoint)):
            zf.writestr(zipfile.ZipInfo(name, date_time=(2026, 10, 1, 22, 0, 0)), data)
    return buf.getvalue()


def assert_checkpoints_unmatched(done, out: Path, placed: dict[str, str]) -> None:
    for student, tag in placed.items():
        assert tag_of(out / student / NB / f"{NB}.ipynb") == tag, student
    checkpoints = {k: r for k, r in report(out).items() if ".ipynb_checkpoints" in k}
    assert len(checkpoints) == len(placed), checkpoints
    for source, row in checkpoints.items():
        assert row["status"] == "unmatched", row
        assert "checkpoint" in row["reason"], row
        assert (out / row["where"]).is_file()
        assert f"{source}: " in done.stdout             # and reported


def test_canvas_checkpoints_are_never_matched(tmp_path):
    download = canvas.download(tmp_path / "canvas.zip", [
        canvas.Student(4711, "Doe, Jane", [("hw1.zip", zipped_folder(nb("jane"), nb("ckpt")))]),
    ], DOWNLOADED)
    out = tmp_path / "subs"
    done = collect(download, out, tmp_path / "tmp")
    assert_checkpoints_unmatched(done, out, {"4711": "jane"})


def test_moodle_checkpoints_are_never_matched(tmp_path):
    download = moodle.download(tmp_path / "moodle.zip", [
        moodle.Student(4411, "Jane Doe", [("hw1.zip", zipped_folder(nb("jane"), nb("ckpt")))]),
        moodle.Student(4412, "Bob Smith", [            # a folder kept in the file area
            (f"hw1/{NB}.ipynb", nb("bob")),
            (f"hw1/.ipynb_checkpoints/{NB}-checkpoint.ipynb", nb("ckpt"))]),
    ], DOWNLOADED)
    out = tmp_path / "subs"
    done = collect(download, out, tmp_path / "tmp")
    assert_checkpoints_unmatched(done, out, {"4411": "jane", "4412": "bob"})


def test_gradescope_checkpoints_are_never_matched(tmp_path):
    def who(name, sid):
        return [gradescope.Submitter(name, f"{sid}@uni.edu", sid)]
    download = gradescope.download(tmp_path / "gs.zip", [
        gradescope.Submission(1001, who("Jane Doe", "S1"), DEADLINE - timedelta(hours=3), [
            ("hw1.zip", zipped_folder(nb("jane"), nb("ckpt")))]),
        gradescope.Submission(1002, who("Bob Smith", "S2"), DEADLINE - timedelta(hours=2), [
            (f"{NB}.ipynb", nb("bob")),
            (f".ipynb_checkpoints/{NB}-checkpoint.ipynb", nb("ckpt"))]),
    ], DOWNLOADED)
    out = tmp_path / "subs"
    done = collect(download, out, tmp_path / "tmp")
    assert_checkpoints_unmatched(done, out, {"S1": "jane", "S2": "bob"})


# --------------------------------------------------------------------------- Moodle naming

@pytest.mark.parametrize("folders,blind", [(True, False), (False, False), (True, True)])
def test_moodle_download_as_moodle_names_it(tmp_path, folders, blind):
    """downloader.php's names: ``Jane Doe_4411_assignsubmission_file/<file>`` (the
    default, no trailing ``_`` since Moodle 4.1), flat ``..._file_<file>`` files, and
    ``Participant_<id>`` with blind marking. The student id is the participant id;
    online text is kept, unmatched; no upload time is taken from the entry times."""
    download = moodle.download(tmp_path / "moodle.zip", [
        moodle.Student(4411, "Jane Doe", [(f"{NB}.ipynb", nb("jane"))], onlinetext="<p>hi</p>"),
        moodle.Student(4412, "Bob_Smith", [("02_softmax.ipynb", nb("bob"))]),
    ], DOWNLOADED, folders=folders, blind=blind)
    out = tmp_path / "subs"
    done = collect(download, out, tmp_path / "tmp")
    assert tag_of(out / "4411" / NB / f"{NB}.ipynb") == "jane"
    assert tag_of(out / "4412" / "02_softmax" / "02_softmax.ipynb") == "bob"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("_")) == ["4411", "4412"]
    unmatched = [r for r in report(out).values() if r["status"] == "unmatched"]
    assert [r["reason"] for r in unmatched] == ["not a notebook"]     # the online text
    roster = {r["student_id"]: r for r in rows(out / "_roster.csv")}
    assert roster["4412"]["name"] == ("Participant" if blind else "Bob Smith")
    assert {r["submitted_at"] for r in rows(out / "_submissions.csv")} == {""}
    assert "entry times are the download's" in done.stderr
    [warning] = [r for r in rows(out / "_collect_report.csv") if r["status"] == "warning"]
    assert "entry times are the download's, not upload times" in warning["reason"]


def test_moodle_before_4_1_folders_with_a_trailing_underscore(tmp_path):
    download = tmp_path / "moodle"
    folder = download / "Jane Doe_4411_assignsubmission_file_"
    folder.mkdir(parents=True)
    (folder / f"{NB}.ipynb").write_bytes(nb("jane"))
    out = tmp_path / "subs"
    collect(download, out, tmp_path / "tmp")
    assert tag_of(out / "4411" / NB / f"{NB}.ipynb") == "jane"


# --------------------------------------------------------------------------- Canvas names

def test_canvas_anonymous_grading_download(tmp_path):
    """With anonymous grading content_zipper.rb names files ``anon_<anonymous id>_...``
    (``LATE_anon_...`` when late): each is placed under ``anon_<id>``, the late one
    flagged; the roster has no name for them."""
    students = [canvas.Student(4711, "Doe, Jane", [(f"{NB}.ipynb", nb("a"))],
                               anonymous_id="x7Qp2"),
                canvas.Student(4712, "Smith, Bob", [(f"{NB}.ipynb", nb("b"))], late=True,
                               anonymous_id="99a9Z")]
    download = canvas.download(tmp_path / "anon.zip", students, DOWNLOADED, anonymize=True)
    with zipfile.ZipFile(download) as zf:
        assert sorted(zf.namelist()) == [f"LATE_anon_99a9Z_900002_{NB}.ipynb",
                                         f"anon_x7Qp2_900001_{NB}.ipynb"]
    out = tmp_path / "subs"
    collect(download, out, tmp_path / "tmp")
    assert tag_of(out / "anon_x7Qp2" / NB / f"{NB}.ipynb") == "a"
    assert tag_of(out / "anon_99a9Z" / NB / f"{NB}.ipynb") == "b"
    table = {r["student_id"]: r["lms_late"] for r in rows(out / "_submissions.csv")}
    assert table == {"anon_x7Qp2": "", "anon_99a9Z": "yes"}
    roster = {r["student_id"]: r for r in rows(out / "_roster.csv")}
    assert roster["anon_x7Qp2"]["name"] == "" and roster["anon_x7Qp2"]["lms"] == "canvas"


def test_canvas_names_as_content_zipper_writes_them(tmp_path):
    """Sortable names with ``_``, digits, accents or no word characters at all, a display
    name with characters Canvas replaces, a text entry: every file goes to its user id.
    A name already in _roster.csv (better than Canvas's ``doejane``) is kept."""
    students = [
        canvas.Student(4711, "O_Brien, Ann", [(f"{NB}.ipynb", nb("ann"))]),
        canvas.Student(4712, "Müller 2, Jürgen", [(f"{NB}.ipynb", nb("jurgen"))]),
        canvas.Student(4713, "Doe_12_, Jane", [(f"{NB}:final?.ipynb", nb("jane"))],
                       late=True, text_entry="<p>see file</p>"),
        canvas.Student(4714, "!!!", [(f"{NB}.ipynb", nb("bang"))]),
        canvas.Student(4715, "LATE, Max", [(f"{NB}.ipynb", nb("max"))]),
    ]
    download = canvas.download(tmp_path / "c.zip", students, DOWNLOADED)
    with zipfile.ZipFile(download) as zf:
        names = zf.namelist()
    assert f"o_brienann_4711_900001_{NB}.ipynb" in names
    assert f"doe12jane_LATE_4713_900003_{NB}_final_.ipynb" in names
    assert f"_4714_900004_{NB}.ipynb" in names
    out = tmp_path / "subs"
    out.mkdir()
    (out / "_roster.csv").write_text("student_id,name,email,sid,lms\n"
                                     "4711,Ann O'Brien,ann@uni.edu,,\n")
    collect(download, out, tmp_path / "tmp")
    for uid, tag in (("4711", "ann"), ("4712", "jurgen"), ("4713", "jane"), ("4714", "bang"),
                     ("4715", "max")):
        assert tag_of(out / uid / NB / f"{NB}.ipynb") == tag, uid
    table = {r["student_id"]: r["lms_late"] for r in rows(out / "_submissions.csv")}
    assert table == {"4711": "", "4712": "", "4713": "yes", "4714": "", "4715": ""}
    roster = {r["student_id"]: r for r in rows(out / "_roster.csv")}
    assert roster["4711"]["name"] == "Ann O'Brien" and roster["4711"]["email"] == "ann@uni.edu"
    assert roster["4711"]["lms"] == "canvas"                 # filled where it was empty
    assert roster["4712"]["name"] == "müller2jürgen"         # Canvas's sortable name
    assert roster["4715"]["name"] == "latemax"
    assert report(out)["doe12jane_LATE_4713_text.html"]["status"] == "unmatched"


# --------------------------------------------------------------------------- the Git route

def test_nothing_inside_a_clone_names_another_student(tmp_path):
    """Issue 23: the student id is the clone's folder name. Alice plants, inside her own
    clone, files laid out as Bob's (folders, a nested clone), Dave's, a Moodle folder
    and a Canvas name: none is graded as anyone else's, none replaces her own work, and
    Bob's real notebook stays Bob's."""
    repos = tmp_path / "repos"
    soft = "02_softmax/02_softmax.ipynb"
    alice = clone(repos, "alice", {
        f"{NB}/{NB}.ipynb": nb("alice-1"), soft: nb("alice-2"),
        f"bob/{soft}": nb("planted"),
        f"dave/notebooks/{soft}": nb("planted"),
        "Bob Smith_4412_assignsubmission_file/02_softmax.ipynb": nb("planted"),
        "smithbob_LATE_4412_900001_02_softmax.ipynb": nb("planted"),
        "02_softmax/notes/02_softmax_final.ipynb": nb("planted"),
    })
    inner = clone(alice / "notebooks", "bob", {soft: nb("planted")})   # a clone in a clone
    assert (inner / ".git").is_dir()
    clone(repos, "bob", {soft: nb("bob-2")})
    out = tmp_path / "subs"
    done = collect(repos, out, tmp_path / "tmp")
    assert tag_of(out / "bob" / "02_softmax" / "02_softmax.ipynb") == "bob-2"
    assert tag_of(out / "alice" / "02_softmax" / "02_softmax.ipynb") == "alice-2"
    assert tag_of(out / "alice" / NB / f"{NB}.ipynb") == "alice-1"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("_")) == ["alice", "bob"]
    placed = {p.relative_to(out).as_posix() for p in out.glob("*/*/*.ipynb")
              if not p.relative_to(out).parts[0].startswith("_")}
    assert placed == {f"alice/{NB}/{NB}.ipynb", f"alice/{soft}", f"bob/{soft}"}
    planted = [r for r in report(out).values() if r["source"].startswith("alice/")
               and r["status"] == "unmatched"]
    assert all("alice's clone" in r["reason"] for r in planted), planted
    planted = [r for r in planted if r["source"].endswith(".ipynb")]
    assert len(planted) == 6, planted     # the other two: the inner clone's HEAD, README
    assert all(tag_of(out / r["where"]) == "planted" for r in planted)
    assert "4412" not in done.stdout.split("not matched")[0]


# --------------------------------------------------------------------------- hostile names

def test_names_on_the_new_routes_stay_inert(tmp_path):
    """Anything read from a file name is hostile: an anonymous Canvas upload, a Moodle
    full name and a clone's folder name that are spreadsheet formulas and terminal
    escapes come out escaped on the terminal and inert in every CSV collect writes."""
    evil = "=HYPERLINK(\"http://evil.example\")\x1b]0;pwned\x07\x1b[2J"
    download = tmp_path / "dl"
    download.mkdir()
    for name, data in canvas.member_names([canvas.Student(
            1, "x", [(f"{evil}.ipynb", nb("c")), (f"{NB}.ipynb", nb("c1"))],
            anonymous_id="x7Qp2")], anonymize=True):
        (download / name).write_bytes(data)
    moodle_name = "=SUM(1+1) \x1b]0;pwned\x07\x1b[2J"     # no \\ / : * ? " < > | (Moodle's
    for name, data in moodle.member_names([moodle.Student(4411, moodle_name, [  # clean_filename)
            (f"{NB}.ipynb", nb("m")), (f"{evil}.txt", b"x")])]):
        (download / name).parent.mkdir(parents=True, exist_ok=True)
        (download / name).write_bytes(data)
    clone(download, f"+{evil}".replace("/", " "), {f"{NB}/{NB}.ipynb": nb("g"),
                                                   f"{NB}/{evil}.ipynb": nb("x")})
    out = tmp_path / "subs"
    done = collect(download, out, tmp_path / "tmp")
    for stream in (done.stdout, done.stderr):
        assert "\x1b" not in stream and "\x07" not in stream
    assert "\\x1b]0;pwned\\x07" in done.stdout
    assert tag_of(out / "anon_x7Qp2" / NB / f"{NB}.ipynb") == "c1"
    assert tag_of(out / "4411" / NB / f"{NB}.ipynb") == "m"
    [git] = [p for p in out.iterdir() if "HYPERLINK" in p.name]
    assert tag_of(git / NB / f"{NB}.ipynb") == "g"
    cells = [c for name in ("_collect_report.csv", "_roster.csv", "_submissions.csv")
             for row in csv.reader(open(out / name, newline="", encoding="utf-8")) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")], cells
    roster = {r["student_id"]: r for r in rows(out / "_roster.csv")}
    assert roster["4411"]["name"].startswith("'=SUM")       # kept, but inert


# --------------------------------------------------------------------------- Gradescope keys

def test_gradescope_keys_name_the_folders_next_to_the_metadata(tmp_path):
    """otter-grader's GradescopeParser reads every key of submission_metadata.yml as a
    folder next to it, and its fixture (test/test-grade/gradescope-export/) has keys such
    as ``12345_empty_file``: those are submissions too, with their created_at. A folder
    of that name elsewhere (inside another submission) is not."""
    root = tmp_path / "gradescope-export"
    (root / "12345_empty_file").mkdir(parents=True)
    (root / "12345_empty_file" / f"{NB}.ipynb").write_bytes(nb("a"))
    (root / "submission_9" / "23456_empty_file").mkdir(parents=True)
    (root / "submission_9" / "23456_empty_file" / f"{NB}.ipynb").write_bytes(nb("planted"))
    (root / "submission_9" / "02_softmax.ipynb").write_bytes(nb("b"))
    (root / "submission_metadata.yml").write_text(
        "---\n12345_empty_file:\n  :submitters:\n  - :name: '12345'\n    :email: '12345'\n"
        "    :sid: '12345'\n    section_name: some-class-sem-001\n"
        "  :created_at: 2020-02-27 06:58:05.746365000 Z\n  :score: 17.5\n"
        "  :original_filename: HW_04.pdf\n"
        "submission_9:\n  :submitters:\n  - :name: Bob\n    :email: bob@uni.edu\n"
        "    :sid: '23456'\n  :created_at: 2020-02-28 07:17:49.412963000 Z\n"
        "23456_empty_file:\n  :submitters:\n  - :name: Eve\n    :sid: '99'\n")
    out = tmp_path / "subs"
    collect(root, out, tmp_path / "tmp")
    assert tag_of(out / "12345" / NB / f"{NB}.ipynb") == "a"
    assert tag_of(out / "23456" / "02_softmax" / "02_softmax.ipynb") == "b"
    assert tag_of(out / "23456" / NB / f"{NB}.ipynb") == "planted"     # Bob's own file
    assert not (out / "99").exists()
    table = {(r["student_id"], r["notebook"]): r["submitted_at"]
             for r in rows(out / "_submissions.csv")}
    assert table[("12345", f"{NB}.ipynb")] == "2020-02-27T06:58:05+00:00"
    assert table[("23456", "02_softmax.ipynb")] == "2020-02-28T07:17:49+00:00"
