"""collect: LMS downloads (Canvas, Moodle, Gradescope, folders) -> submissions layout.

The LMS downloads are built by tests/lms/ the way each LMS builds them (its source cited
there); hostile zips (escapes, bombs) are made by hand. Every test also checks that no
file of the download is lost.
"""

from __future__ import annotations

import csv
import json
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from autograder.intake import archives, collect
from autograder.cli import main
from lms import canvas, gradescope, moodle

WHEN = datetime(2026, 1, 2, 9, 0, tzinfo=timezone.utc)     # when a download was made


@pytest.fixture
def solutions(tmp_path) -> Path:
    root = tmp_path / "solutions"
    for name in ("01_dot_products", "02_softmax", "10_lm"):
        (root / name).mkdir(parents=True)
        (root / name / f"{name}.ipynb").write_text("{}")
    return root


def nb(tag: str) -> bytes:
    return json.dumps({"cells": [], "tag": tag}).encode()


def make_zip(path: Path, members: dict[str, bytes], times: dict[str, tuple] | None = None) -> Path:
    times = times or {}
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=times.get(name, (2026, 1, 1, 12, 0, 0)))
            zf.writestr(info, data)
    return path


def report_rows(out: Path) -> list[dict]:
    with open(out / collect.REPORT, newline="") as f:
        return list(csv.DictReader(f))


def test_match_notebook(solutions):
    course = collect.course_notebooks(solutions)
    match = lambda name, hint=None: collect.match_notebook(name, course, hint)[0]  # noqa: E731
    assert match("01_dot_products.ipynb") == ("01_dot_products", "01_dot_products.ipynb")
    assert match("01_dot_products-2.ipynb") == ("01_dot_products", "01_dot_products.ipynb")
    assert match("01_dot_products (1).ipynb") == ("01_dot_products", "01_dot_products.ipynb")
    assert match("01 Dot-Products.ipynb") == ("01_dot_products", "01_dot_products.ipynb")
    assert match("02_softmax_jane_final.ipynb") == ("02_softmax", "02_softmax.ipynb")
    assert match("2_my_work.ipynb") == ("02_softmax", "02_softmax.ipynb")
    assert match("10.ipynb") == ("10_lm", "10_lm.ipynb")
    assert match("homework.ipynb") is None
    assert match("01_dot_products.pdf") is None
    assert collect.match_notebook("x.pdf", course)[1] == "not a notebook"
    assert "course notebooks: 01_dot_products.ipynb" in collect.match_notebook("hw.ipynb", course)[1]


def test_canvas_zip(tmp_path, solutions):
    """A Canvas download as lib/content_zipper.rb makes it (tests/lms/canvas.py): Jane's
    current submission holds two uploads of the first notebook (Canvas renamed the second
    ``-1``), Bob's a PDF and a notebook named unlike the course's, Ann's a zip; then what
    re-zipping on a Mac adds (``__MACOSX``) and a stray file."""
    download = canvas.download(tmp_path / "submissions.zip", [
        canvas.Student(12345, "Doe, Jane", [("01_dot_products.ipynb", nb("jane-1-old")),
                                            ("01_dot_products-1.ipynb", nb("jane-1-new")),
                                            ("02_softmax.ipynb", nb("jane-2"))], late=True),
        canvas.Student(222, "Smith, Bob", [("report.pdf", b"%PDF"),
                                           ("homework.ipynb", nb("bob-?"))]),
        canvas.Student(333, "Lee, Ann", [("notebooks.zip", make_zip(tmp_path / "inner.zip", {
            "work/01_dot_products.ipynb": nb("ann-1"), "work/notes.txt": b"hi"}).read_bytes())]),
    ], datetime(2026, 1, 3, 9, 0, tzinfo=timezone.utc))
    with zipfile.ZipFile(download, "a") as zf:
        zf.writestr("stray.ipynb", nb("nobody"))
        zf.writestr("__MACOSX/._doejane_LATE_12345_900003_02_softmax.ipynb", b"\x00\x05\x16\x07")
    out = tmp_path / "subs"
    outcomes = collect.collect(download, out, solutions)
    read = lambda p: json.loads((out / p).read_text())["tag"]  # noqa: E731
    assert read("12345/01_dot_products/01_dot_products.ipynb") == "jane-1-new"
    assert read("12345/02_softmax/02_softmax.ipynb") == "jane-2"
    assert read("333/01_dot_products/01_dot_products.ipynb") == "ann-1"
    placed = sorted(o.where for o in outcomes if o.status == "placed")
    assert placed == ["12345/01_dot_products/01_dot_products.ipynb",
                      "12345/02_softmax/02_softmax.ipynb", "333/01_dot_products/01_dot_products.ipynb"]
    reasons = {o.origin: o.reason for o in outcomes if o.status == "unmatched"}
    assert reasons["doejane_LATE_12345_900001_01_dot_products.ipynb"].startswith(
        "older file for 12345/")
    assert reasons["smithbob_222_900004_report.pdf"] == "not a notebook"
    assert "no course notebook is named like 'homework.ipynb'" in \
        reasons["smithbob_222_900005_homework.ipynb"]
    assert reasons["stray.ipynb"].startswith("no student")
    assert reasons["__MACOSX/._doejane_LATE_12345_900003_02_softmax.ipynb"].startswith("macOS")
    assert reasons["leeann_333_900006_notebooks.zip!work/notes.txt"] == "not a notebook"
    assert "zip" in reasons["leeann_333_900006_notebooks.zip"]
    # never lose a file: every member of the download is placed or kept in _unmatched
    with zipfile.ZipFile(download) as zf:
        members = set(zf.namelist())
    accounted = {o.origin for o in outcomes}
    assert members <= accounted
    for o in outcomes:
        assert (out / o.where).is_file(), o
    assert {r["source"] for r in report_rows(out) if r["status"] != "warning"} == accounted
    roster = {r["student_id"]: r for r in csv.DictReader(open(out / collect.ROSTER))}
    assert roster["12345"]["name"] == "doejane" and roster["12345"]["lms"] == "canvas"


def test_moodle_folder_and_flat_files(tmp_path, solutions):
    """Moodle's download (tests/lms/moodle.py), unzipped by the instructor: one folder
    per student, and the flat form (downloadasfolders off)."""
    download = tmp_path / "moodle"
    for folders, student in ((True, moodle.Student(4411, "Jane Doe", [
            ("01_dot_products.ipynb", nb("jane"))])), (False, moodle.Student(4412, "Bob Smith", [
            ("02_softmax.ipynb", nb("bob"))], onlinetext="<p>hi</p>"))):
        for name, data in moodle.member_names([student], folders=folders):
            (download / name).parent.mkdir(parents=True, exist_ok=True)
            (download / name).write_bytes(data)
    before = sorted(p.relative_to(download) for p in download.rglob("*"))
    out = tmp_path / "subs"
    outcomes = collect.collect(download, out, solutions)
    assert sorted(p.relative_to(download) for p in download.rglob("*")) == before  # input untouched
    assert json.loads((out / "4411/01_dot_products/01_dot_products.ipynb").read_text())["tag"] == "jane"
    assert json.loads((out / "4412/02_softmax/02_softmax.ipynb").read_text())["tag"] == "bob"
    unmatched = [o for o in outcomes if o.status == "unmatched"]
    assert [(o.origin, o.reason) for o in unmatched] == [
        ("Bob Smith_4412_assignsubmission_onlinetext_onlinetext.html", "not a notebook")]
    roster = {r["student_id"]: r for r in csv.DictReader(open(out / collect.ROSTER))}
    assert roster["4411"]["name"] == "Jane Doe"


def test_gradescope_export_with_group_submission(tmp_path, solutions):
    at = datetime(2026, 1, 1, 10, 0, tzinfo=timezone.utc)
    download = gradescope.download(tmp_path / "export.zip", [
        gradescope.Submission(1001, [gradescope.Submitter("Jane Doe", "jane@uni.edu", "S1")], at,
                              [("01_dot_products.ipynb", nb("jane"))]),
        gradescope.Submission(1002, [gradescope.Submitter("Bob Smith", "bob@uni.edu"),
                                     gradescope.Submitter("Ann Lee", "ann@uni.edu", "S3",
                                                          section_name="lab-2")], at,
                              [("01_dot_products.ipynb", nb("group"))]),
    ], downloaded_at=datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc))
    out = tmp_path / "subs"
    outcomes = collect.collect(download, out, solutions)
    placed = sorted(o.where for o in outcomes if o.status == "placed")
    assert placed == ["S1/01_dot_products/01_dot_products.ipynb",
                      "S3/01_dot_products/01_dot_products.ipynb",
                      "bob@uni.edu/01_dot_products/01_dot_products.ipynb"]
    assert (out / "S1/01_dot_products/01_dot_products.ipynb").is_file()
    assert json.loads((out / "S3/01_dot_products/01_dot_products.ipynb").read_text())["tag"] == "group"
    assert json.loads((out / "bob@uni.edu/01_dot_products/01_dot_products.ipynb").read_text())["tag"] == "group"
    assert [o.origin for o in outcomes if o.status == "unmatched"] == [
        "assignment_77_export/submission_metadata.yml"]
    roster = {r["student_id"]: r for r in csv.DictReader(open(out / collect.ROSTER))}
    assert roster["S1"]["email"] == "jane@uni.edu" and roster["S3"]["name"] == "Ann Lee"
    table = {r["student_id"]: r for r in csv.DictReader(open(out / "_submissions.csv"))}
    assert {r["submitted_at"] for r in table.values()} == {"2026-01-01T10:00:00+00:00"}


def test_folder_layout_and_rerun_is_idempotent_and_never_overwrites(tmp_path, solutions):
    download = tmp_path / "dl"
    (download / "jane" / "01_dot_products").mkdir(parents=True)
    (download / "jane" / "01_dot_products" / "01_dot_products.ipynb").write_bytes(nb("jane-1"))
    (download / "bob").mkdir()
    (download / "bob" / "02_softmax.ipynb").write_bytes(nb("bob-2"))
    (download / "01_dot_products").mkdir()
    (download / "01_dot_products" / "01_dot_products.ipynb").write_bytes(nb("whose?"))
    out = tmp_path / "subs"
    first = collect.collect(download, out, solutions)
    assert {o.where for o in first if o.status == "placed"} == {
        "jane/01_dot_products/01_dot_products.ipynb", "bob/02_softmax/02_softmax.ipynb"}
    assert [o.reason[:10] for o in first if o.status == "unmatched"] == ["no student"]
    second = collect.collect(download, out, solutions)
    assert {o.status for o in second if o.where.startswith(("jane", "bob"))} == {"already there"}
    (download / "bob" / "02_softmax.ipynb").write_bytes(nb("bob-2-changed"))
    third = collect.collect(download, out, solutions)
    [changed] = [o for o in third if o.origin == "bob/02_softmax.ipynb"]
    assert changed.status == "unmatched" and "not overwritten" in changed.reason
    assert json.loads((out / "bob/02_softmax/02_softmax.ipynb").read_text())["tag"] == "bob-2"
    assert json.loads((out / changed.where).read_text())["tag"] == "bob-2-changed"


def test_zip_members_cannot_escape(tmp_path, solutions):
    download = make_zip(tmp_path / "evil.zip", {
        "../../escape_12345_1_01_dot_products.ipynb": nb("evil"),
        "/abs_777_2_02_softmax.ipynb": nb("abs"),
    })
    out = tmp_path / "deep" / "subs"
    collect.collect(download, out, solutions)
    assert not (tmp_path / "escape_12345_1_01_dot_products.ipynb").exists()
    assert (out / "12345/01_dot_products/01_dot_products.ipynb").is_file()
    assert (out / "777/02_softmax/02_softmax.ipynb").is_file()


def test_collect_command(tmp_path, solutions, monkeypatch, capsys):
    monkeypatch.setattr(collect, "SOLUTIONS_DIR", solutions)
    monkeypatch.setattr(collect.collect, "__defaults__", (solutions, "latest"))
    download = canvas.download(tmp_path / "dl.zip", [canvas.Student(1, "Doe, Jane", [
        ("01_dot_products.ipynb", nb("a")), ("essay.docx", b"x")])], WHEN)
    assert main(["collect", str(download), "--out", str(tmp_path / "subs")]) == 0
    out = capsys.readouterr().out
    assert "1 notebook(s) of 1 student(s)" in out
    assert "doejane_1_900002_essay.docx: not a notebook" in out
    assert main(["collect", str(tmp_path / "nope.zip"), "--out", str(tmp_path / "x")]) == 2
    assert "download not found" in capsys.readouterr().err


def test_unmatched_files_with_the_same_name_are_all_kept(tmp_path, solutions):
    out = tmp_path / "subs"
    for text in (b"first", b"second"):
        download = make_zip(tmp_path / "dl.zip", {"notes.txt": text})
        collect.collect(download, out, solutions)
    kept = sorted(p.read_bytes() for p in (out / collect.UNMATCHED).rglob("notes*.txt"))
    assert kept == [b"first", b"second"]


def test_folder_layouts_under_a_top_folder(tmp_path, solutions):
    download = make_zip(tmp_path / "dl.zip", {
        "export/jane/01_dot_products/01_dot_products.ipynb": nb("jane-1"),
        "export/bob/02_softmax.ipynb": nb("bob-2"),
        "02_softmax/02_softmax.ipynb": nb("whose?"),
    })
    out = tmp_path / "subs"
    outcomes = collect.collect(download, out, solutions)
    assert sorted(o.where for o in outcomes if o.status == "placed") == [
        "bob/02_softmax/02_softmax.ipynb", "jane/01_dot_products/01_dot_products.ipynb"]
    [unmatched] = [o for o in outcomes if o.status == "unmatched"]
    assert unmatched.origin == "02_softmax/02_softmax.ipynb" and unmatched.reason.startswith("no student")


def test_output_inside_the_download_is_refused(tmp_path, solutions):
    (tmp_path / "dl").mkdir()
    with pytest.raises(ValueError, match="inside the download"):
        collect.collect(tmp_path / "dl", tmp_path / "dl" / "subs", solutions)


# ---------------------------------------------------------------------------------------
# Hostile downloads (issue: isolation II, finding 6): a student's own metadata file, names
# that are spreadsheet formulas or terminal escapes, zip bombs.
# ---------------------------------------------------------------------------------------

METADATA = """\
submission_1001:
  :submitters:
  - :name: "=HYPERLINK(\\"http://evil.example\\", \\"Jane\\")"
    :sid: 'S1'
    :email: jane@uni.edu
submission_1002:
  :submitters:
  - :name: Bob Smith
    :sid: 'S2'
    :email: bob@uni.edu
"""


def test_a_metadata_file_planted_in_a_submission_is_ignored(tmp_path, solutions):
    planted = """\
submission_1001:
  :submitters:
  - :name: Bob Smith
    :sid: 'S2'
submission_1002:
  :submitters:
  - :name: Jane
    :sid: 'S1'
"""
    download = make_zip(tmp_path / "export.zip", {
        "assignment_77_export/submission_metadata.yml": METADATA.encode(),
        "assignment_77_export/submission_1001/01_dot_products.ipynb": nb("jane"),
        "assignment_77_export/submission_1002/01_dot_products.ipynb": nb("bob"),
        "assignment_77_export/submission_1002/submission_metadata.yml": planted.encode(),
    })
    out = tmp_path / "subs"
    collect.collect(download, out, solutions)
    assert json.loads((out / "S1/01_dot_products/01_dot_products.ipynb").read_text())["tag"] == "jane"
    assert json.loads((out / "S2/01_dot_products/01_dot_products.ipynb").read_text())["tag"] == "bob"


def test_names_that_are_formulas_are_neutralised_in_every_csv(tmp_path, solutions):
    download = make_zip(tmp_path / "export.zip", {
        "assignment_77_export/submission_metadata.yml": METADATA.encode(),
        "assignment_77_export/submission_1001/01_dot_products.ipynb": nb("jane"),
        "=cmd|' /C calc'!A0.ipynb": nb("x"),
    })
    out = tmp_path / "subs"
    collect.collect(download, out, solutions)
    cells = [c for path in (out / collect.ROSTER, out / collect.REPORT)
             for row in csv.reader(open(path, newline="")) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")], cells
    roster = {r["student_id"]: r for r in csv.DictReader(open(out / collect.ROSTER))}
    assert roster["S1"]["name"].startswith("'=HYPERLINK")     # kept, but inert


def test_file_names_with_terminal_escapes_are_printed_escaped(tmp_path, solutions, capsys,
                                                              monkeypatch):
    monkeypatch.setattr(collect.collect, "__defaults__", (solutions, "latest"))
    download = canvas.download(tmp_path / "dl.zip", [canvas.Student(1, "Doe, Jane", [
        ("01_dot_products.ipynb", nb("a")),      # Canvas keeps control characters
        ("\x1b]0;pwned\x07\x1b[2Jnotes.txt", b"x")])], WHEN)
    assert main(["collect", str(download), "--out", str(tmp_path / "subs")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\\x1b]0;pwned\\x07" in out


def test_a_zip_bomb_inside_a_submission_is_not_unpacked(tmp_path, solutions):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros.bin", b"\0" * (64 * 1024 ** 2))        # 64 MB -> ~64 KB
    download = canvas.download(tmp_path / "dl.zip", [canvas.Student(1, "Doe, Jane", [
        ("01_dot_products.ipynb", nb("a")), ("extras.zip", bomb.read_bytes())])], WHEN)
    out = tmp_path / "subs"
    outcomes = collect.collect(download, out, solutions)
    refused = [o for o in outcomes if o.origin == "doejane_1_900002_extras.zip"]
    assert refused and refused[0].status == "unmatched"
    assert "zip bomb" in refused[0].reason and "not unpacked" in refused[0].reason
    assert not any(p.name == "zeros.bin" for p in out.rglob("*"))
    assert (out / "doejane/01_dot_products/01_dot_products.ipynb").is_file() or any(
        o.status == "placed" for o in outcomes)


def test_a_download_over_the_caps_is_refused_with_a_message(tmp_path, solutions, capsys,
                                                            monkeypatch):
    monkeypatch.setitem(archives.ZIP_CAPS, "download", (3, 10 ** 9))
    monkeypatch.setattr(collect.collect, "__defaults__", (solutions, "latest"))
    download = make_zip(tmp_path / "dl.zip", {f"doejane_1_{i}_x{i}.ipynb": nb("a")
                                              for i in range(5)})
    assert main(["collect", str(download), "--out", str(tmp_path / "subs")]) == 2
    err = capsys.readouterr().err
    assert "5 files, more than the 3" in err and "dl.zip" in err


def test_a_tie_in_upload_time_goes_to_the_larger_id_as_a_number(tmp_path, solutions):
    """Issue 13, finding 5: Canvas submission ids 99999 and 100000 at the same zip time:
    the later upload (100000) wins, not the one that sorts later as text."""
    download = canvas.download(tmp_path / "dl.zip", [canvas.Student(5, "Doe, Jane", [
        ("01_dot_products.ipynb", nb("older")), ("01_dot_products.ipynb", nb("newer"))])],
        WHEN, first_attachment_id=99999)
    with zipfile.ZipFile(download) as zf:
        assert zf.namelist() == ["doejane_5_99999_01_dot_products.ipynb",
                                 "doejane_5_100000_01_dot_products.ipynb"]
    out = tmp_path / "subs"
    collect.collect(download, out, solutions)
    [placed] = list(out.glob("*/01_dot_products/01_dot_products.ipynb"))
    assert json.loads(placed.read_text())["tag"] == "newer"


def test_students_clones_of_the_bundle_give_their_notebooks_only(tmp_path, solutions):
    """The Git route: a folder of students' clones of the bundle's repository. Each clone's
    notebooks/<assignment>/<notebook>.ipynb is placed under the clone's folder name; its
    .git and the course's own files (helpers, README) are not copied anywhere."""
    repos = tmp_path / "repos"
    for student, tag in (("alice", "a"), ("bob", "b")):
        clone = repos / student
        (clone / ".git" / "objects").mkdir(parents=True)
        (clone / ".git" / "config").write_text("[core]\n")
        (clone / "helpers").mkdir()
        (clone / "helpers" / "checks.py").write_text("# the course's\n")
        (clone / "README.md").write_text("homework\n")
        target = clone / "notebooks" / "01_dot_products" / "01_dot_products.ipynb"
        target.parent.mkdir(parents=True)
        target.write_bytes(nb(tag))
    out = tmp_path / "subs"
    collect.collect(repos, out, solutions)
    for student, tag in (("alice", "a"), ("bob", "b")):
        placed = out / student / "01_dot_products" / "01_dot_products.ipynb"
        assert json.loads(placed.read_text())["tag"] == tag
    copied = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert not [p for p in copied if p.endswith((".py", "README.md", "config"))], copied


def test_links_in_a_download_are_never_followed(tmp_path, solutions):
    """A student's clone (or any folder) may hold symbolic links: a notebook that points
    at another student's file or at the instructor's secrets is not read or copied."""
    secret = tmp_path / "secret.ipynb"
    secret.write_bytes(nb("the instructor's"))
    repos = tmp_path / "repos"
    clone = repos / "mallory"
    (clone / ".git").mkdir(parents=True)
    target = clone / "notebooks" / "01_dot_products" / "01_dot_products.ipynb"
    target.parent.mkdir(parents=True)
    target.symlink_to(secret)
    (repos / "eve" / "02_softmax").mkdir(parents=True)
    (repos / "eve" / "02_softmax" / "02_softmax.ipynb").symlink_to(secret)
    out = tmp_path / "subs"
    outcomes = collect.collect(repos, out, solutions)
    assert not [p for p in out.rglob("*.ipynb")], list(out.rglob("*"))
    assert sorted(o.status for o in outcomes) == ["skipped", "skipped"]
    assert all(o.reason == collect.LINK for o in outcomes)


APPLEDOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + b"\x00" * 64


@pytest.mark.parametrize("layout", ["folder", "zip"])
@pytest.mark.parametrize("where", ["sibling", "__MACOSX"])
def test_macos_appledouble_copies_are_never_taken_for_the_notebook(tmp_path, solutions,
                                                                   layout, where):
    """A zip made on a Mac (or a folder copied from one) holds ``._NAME`` beside or under
    ``__MACOSX/`` for every file: the notebook's name, macOS's metadata inside, and a
    newer time than the notebook. It is never placed, whichever comes first."""
    real = "export/jane/02_softmax/02_softmax.ipynb"
    fake = ("export/jane/02_softmax/._02_softmax.ipynb" if where == "sibling"
            else "__MACOSX/export/jane/02_softmax/._02_softmax.ipynb")
    members = {fake: APPLEDOUBLE, real: nb("jane-2")}
    if layout == "zip":
        download = make_zip(tmp_path / "dl.zip", members,
                            {fake: (2026, 1, 1, 13, 0, 0), real: (2026, 1, 1, 12, 0, 0)})
    else:
        download = tmp_path / "dl"
        for name, data in members.items():
            (download / name).parent.mkdir(parents=True, exist_ok=True)
            (download / name).write_bytes(data)
    out = tmp_path / "subs"
    outcomes = collect.collect(download, out, solutions)
    assert [o.where for o in outcomes if o.status == "placed"] == [
        "jane/02_softmax/02_softmax.ipynb"]
    assert json.loads((out / "jane/02_softmax/02_softmax.ipynb").read_text())["tag"] == "jane-2"
    [skipped] = [o for o in outcomes if o.origin.endswith("._02_softmax.ipynb")]
    assert skipped.status == "unmatched" and "macOS" in skipped.reason
