"""Times and identities from their source, never guessed (issue 39's findings).

Before: a Canvas download carries no upload time, so late work counted "one day late"
whatever its real lateness (a student 50 hours late lost 10 % where ``--late-policy
10:50`` asks for 30 %), a Moodle download's late work was never penalised, silently, and
an anonymous Canvas class went back to Canvas as ``anon_...`` ids its importer matches to
no one (``feedback-package`` wrote an empty zip and exited 0). Now ``collect --times``
reads the LMS's own record (Canvas's Submissions API JSON, Moodle's grading worksheet), a
late policy without one is refused (or told ``--assume-late-days``), ``--extensions``
moves a student's deadline, ``--anonymous-map`` maps anonymous Canvas ids back, ``export
--format moodle`` writes the worksheet Moodle's importer reads, and a command that would
write nothing useful exits non-zero with the reason. Through the real commands; the
downloads and records are built as the LMSs build them (tests/lms/).
"""

from __future__ import annotations

import csv
import zipfile
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import SOLUTIONS_DIR
from autograder.intake import sources
from lms import canvas, canvas_api, moodle
from lms.commands import NB, rows, run

DEADLINE = datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc)
DOWNLOADED = DEADLINE + timedelta(days=3, hours=9)
POLICY = ("--deadline", DEADLINE.isoformat(), "--late-policy", "10:50")
BERLIN = ZoneInfo("Europe/Berlin")


def _source() -> bytes:
    return (SOLUTIONS_DIR / NB / f"{NB}.ipynb").read_bytes()


def _grades(path) -> dict[str, float]:
    return {r["ID"]: float(r[NB]) for r in rows(path) if r["ID"]}


@pytest.fixture(scope="module")
def canvas_class(tmp_path_factory):
    """A Canvas class downloaded three days late: Jane on time, Bob 50 hours late (Canvas
    marks him LATE), Ann 26 hours late but with an extension of two days; collected
    without and with the Submissions API's times, graded once each."""
    base = tmp_path_factory.mktemp("canvas-times")
    tmp = base / "tmp"
    times = {4711: DEADLINE - timedelta(hours=2), 4712: DEADLINE + timedelta(hours=50),
             4713: DEADLINE + timedelta(hours=26)}
    students = [canvas.Student(4711, "Doe, Jane", [(f"{NB}.ipynb", _source())]),
                canvas.Student(4712, "Smith, Bob", [(f"{NB}.ipynb", _source())], late=True),
                canvas.Student(4713, "Lee, Ann", [(f"{NB}.ipynb", _source())])]
    download = canvas.download(base / "canvas.zip", students, DOWNLOADED)
    api = canvas_api.write(base / "submissions.json", [
        canvas_api.submission(uid, when, DEADLINE) for uid, when in times.items()])
    ext = base / "extensions.csv"
    ext.write_text(f"student_id,assignment,deadline\n4713,{NB},"
                   f"{(DEADLINE + timedelta(days=2)).isoformat()}\n")
    out = {}
    for name, extra in (("guessed", ()), ("recorded", ("--times", api))):
        subs = base / f"subs-{name}"
        done = run("collect", download, "--out", subs, *extra, tmp=tmp)
        out[name] = (subs, base / f"out-{name}", done)
        run("grade", subs, "--out", base / f"out-{name}", "--jobs", "1", tmp=tmp)
    return {"out": out, "base": base, "tmp": tmp, "extensions": ext}


@pytest.mark.slow
def test_canvas_late_policy_without_times_is_refused_not_guessed(canvas_class):
    subs, out, collected = canvas_class["out"]["guessed"]
    assert "3 notebook(s) of 3 student(s)" in collected.stderr and "--times" in collected.stderr
    done = run("export", out, "--format", "canvas", *POLICY, tmp=canvas_class["tmp"],
               check=False)
    assert done.returncode == 2, done
    assert "no upload time" in done.stderr and "--assume-late-days" in done.stderr
    assert not (out / "canvas_grades.csv").exists()
    # told how late a LATE-flagged notebook counts, the export says what it assumed
    run("export", out, "--format", "canvas", *POLICY, "--assume-late-days", "2",
        tmp=canvas_class["tmp"])
    grades = _grades(out / "canvas_grades.csv")
    assert grades["4712"] == pytest.approx(grades["4711"] * 0.8)
    assert grades["4713"] == pytest.approx(grades["4711"])


@pytest.mark.slow
def test_canvas_late_work_takes_its_days_from_the_submissions_api(canvas_class):
    """Bob, 50 hours late: 3 days, 30 % off with 10:50 (it was 10 %: "one day" for LATE);
    Ann, 26 hours late: 2 days, 20 % off; within her extension: nothing."""
    subs, out, collected = canvas_class["out"]["recorded"]
    table = {r["student_id"]: r for r in rows(subs / "_submissions.csv")}
    assert table["4712"]["submitted_at"] == (DEADLINE + timedelta(hours=50)).isoformat()
    assert table["4712"]["lms"] == "canvas" and "no upload time" not in collected.stderr
    run("export", out, "--format", "canvas", *POLICY, tmp=canvas_class["tmp"])
    grades = _grades(out / "canvas_grades.csv")
    full = grades["4711"]
    assert full > 0
    assert grades["4712"] == pytest.approx(full * 0.7)
    assert grades["4713"] == pytest.approx(full * 0.8)
    late = {r["student_id"]: r["days_late"] for r in rows(out / "late.csv")}
    assert late == {"4712": "3", "4713": "2"}
    run("export", out, "--format", "canvas", *POLICY, "--extensions",
        canvas_class["extensions"], tmp=canvas_class["tmp"])
    grades = _grades(out / "canvas_grades.csv")
    assert grades["4713"] == pytest.approx(full) and grades["4712"] == pytest.approx(full * 0.7)
    # stored with the policy, so the feedback pages and feedback-package agree
    from autograder.results import late

    assert late.load_policy(out).extensions.get("4713", NB) == DEADLINE + timedelta(days=2)


@pytest.mark.slow
def test_moodle_late_work_comes_from_the_grading_worksheet(tmp_path):
    """A Moodle class: the worksheet's "Last modified (submission)" in the downloader's
    zone (Berlin) gives Bob 26 hours late (2 days, 20 %); before, Moodle late work was
    never penalised and nothing said so."""
    students = [moodle.Student(4411, "Jane Doe", [(f"{NB}.ipynb", _source())]),
                moodle.Student(4412, "Bob Smith", [(f"{NB}.ipynb", _source())])]
    download = moodle.download(tmp_path / "moodle.zip", students, DOWNLOADED)
    sheet = moodle.worksheet(tmp_path / "worksheet.csv", [
        (students[0], DEADLINE - timedelta(hours=5)),
        (students[1], DEADLINE + timedelta(hours=26))], BERLIN)
    tmp = tmp_path / "tmp"
    refused = run("collect", download, "--out", tmp_path / "s0", "--times", sheet, tmp=tmp,
                  check=False)
    assert refused.returncode == 2 and "--times-zone" in refused.stderr
    subs, out = tmp_path / "subs", tmp_path / "out"
    run("collect", download, "--out", subs, "--times", sheet, "--times-zone",
        "Europe/Berlin", tmp=tmp)
    run("grade", subs, "--out", out, "--jobs", "1", tmp=tmp)
    run("export", out, "--format", "moodle", *POLICY, tmp=tmp)
    [sheet_back] = [p for p in out.iterdir() if p.name.startswith("moodle_")]
    with open(sheet_back, newline="", encoding="utf-8") as f:
        back = list(csv.DictReader(f))
    # the columns Moodle's importer looks up by name (importgradeslib.php)
    assert {"Identifier", "Grade", "Last modified (grade)"} <= set(back[0])
    grade = {r["Identifier"]: float(r["Grade"]) for r in back}
    assert set(grade) == {"Participant 4411", "Participant 4412"}
    assert grade["Participant 4412"] == pytest.approx(grade["Participant 4411"] * 0.8)
    assert grade["Participant 4411"] > 0


@pytest.mark.slow
def test_anonymous_canvas_goes_back_once_mapped_and_refuses_otherwise(tmp_path):
    students = [canvas.Student(4711, "Doe, Jane", [(f"{NB}.ipynb", _source())],
                               anonymous_id="x7Qp2"),
                canvas.Student(4712, "Smith, Bob", [(f"{NB}.ipynb", _source())],
                               anonymous_id="99a9Z")]
    download = canvas.download(tmp_path / "anon.zip", students, DOWNLOADED, anonymize=True)
    tmp, subs, out = tmp_path / "tmp", tmp_path / "subs", tmp_path / "out"
    run("collect", download, "--out", subs, tmp=tmp)
    run("grade", subs, "--out", out, "--jobs", "1", tmp=tmp)
    done = run("export", out, "--format", "canvas", tmp=tmp, check=False)
    assert done.returncode == 2 and "--anonymous-map" in done.stderr, done
    done = run("feedback-package", out, "--lms", "canvas", "--dest", tmp_path / "fb.zip",
               tmp=tmp, check=False)
    assert done.returncode == 2 and not (tmp_path / "fb.zip").exists(), done
    assert "--anonymous-map" in done.stderr
    # after anonymity is lifted, the API lists user ids beside anonymous ones
    api = canvas_api.write(tmp_path / "lifted.json", [
        canvas_api.submission(s.user_id, DEADLINE, DEADLINE, s.anonymous_id) for s in students])
    run("export", out, "--format", "canvas", "--anonymous-map", api, tmp=tmp)
    assert set(_grades(out / "canvas_grades.csv")) == {"4711", "4712"}
    run("feedback-package", out, "--lms", "canvas", "--dest", tmp_path / "fb.zip",
        "--anonymous-map", api, tmp=tmp)
    with zipfile.ZipFile(tmp_path / "fb.zip") as zf:
        targets = sorted(canvas.canvas_target(n) for n in zf.namelist())
    assert targets == [("4711", "900001"), ("4712", "900002")]


def test_gradescope_feedback_package_says_why_not(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    done = run("feedback-package", out, "--lms", "gradescope", "--dest", tmp_path / "f.zip",
               tmp=tmp_path / "tmp", check=False)
    assert done.returncode == 2 and "Upload scores" in done.stderr
    assert "python -m autograder gradescope" in done.stderr
    assert not (tmp_path / "f.zip").exists()


# --------------------------------------------------------------------------- the readers

def test_the_documented_canvas_submission_is_read():
    [by_user, by_anon] = sources.canvas_uploads([canvas_api.DOCUMENTED])
    assert by_user == sources.Upload("134", datetime(2012, 1, 1, 1, 0, tzinfo=timezone.utc),
                                     False, "canvas")
    assert by_anon.student_id == "anon_acJ4Q" and by_anon.submitted_at == by_user.submitted_at


@settings(max_examples=60, deadline=None)
@given(minutes=st.integers(0, 60 * 24 * 365 * 3),
       zone=st.sampled_from(["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC",
                             "Australia/Lord_Howe", "America/St_Johns"]),
       pack=st.sampled_from(sorted(moodle.DAYDATETIME)))
def test_a_worksheet_time_reads_back_to_its_minute_in_any_zone(tmp_path_factory, minutes,
                                                                zone, pack):
    """The class of Moodle times: any minute over three years (daylight-saving changes
    included), in zones with half-hour and 30/60-minute DST offsets, written as Moodle's
    userdate writes it and read back with --times-zone, is the same UTC minute (an
    ambiguous hour at a DST fall-back aside: its earlier reading is taken, as
    zoneinfo's fold=0), in the English and the US English language packs' formats."""
    when = datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=minutes)
    folder = tmp_path_factory.mktemp("sheet")
    student = moodle.Student(7, "A B")
    path = moodle.worksheet(folder / "w.csv", [(student, when)], ZoneInfo(zone), pack)
    got = sources.read_uploads(path, zone)["7"].submitted_at
    local = when.astimezone(ZoneInfo(zone))
    if local.replace(fold=1).utcoffset() != local.replace(fold=0).utcoffset():
        assert got in (when, when - (local.replace(fold=0).utcoffset()
                                     - local.replace(fold=1).utcoffset()))
    else:
        assert got == when


@pytest.mark.parametrize("text, words", [
    ("{", "not JSON"),
    ('[{"user_id": "../etc", "submitted_at": null}]', "not a Canvas or Moodle id"),
    ('[{"user_id": 1, "submitted_at": "2026-10-01T10:00:00"}]', "no zone"),
    ('[{"user_id": 1, "submitted_at": "yesterday"}]', "not an ISO 8601 time"),
    ('[{"user_id": 1, "submitted_at": "2026-10-01T10:00:00Z"},'
     ' {"user_id": 1, "submitted_at": "2026-10-02T10:00:00Z"}]', "listed twice"),
    ("Name,Time\nx,y\n", "neither a Canvas"),
    ('[{"user_id": 1, "assignment_id": 77, "submitted_at": "2026-10-01T10:00:00Z"},'
     ' {"user_id": 1, "assignment_id": "\\u001b[2J78", "submitted_at": null}]',
     "holds the submissions of 2 assignments"),
    ("Kennung,Zuletzt geändert (Abgabe)\nTeilnehmer/in 4,-\n", "with English as your language"),
    ("Identifier,Last modified (submission)\nBob,-\n", "is not 'Participant <id>'"),
    ("Identifier,Last modified (submission)\nParticipant 4,\x1b[31mnot a time\n",
     "is not a time Moodle writes"),
])
def test_a_times_file_that_is_not_what_the_lms_writes_is_refused(tmp_path, text, words):
    path = tmp_path / "times"
    path.write_text(text)
    with pytest.raises(sources.SourceError, match=words) as err:
        sources.read_uploads(path, "UTC")
    assert "\x1b" not in str(err.value)                 # escaped for the terminal


def test_a_times_file_past_its_cap_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text("[" + ",".join(['{"user_id": 1}'] * 20) + "]")
    with pytest.raises(sources.SourceError, match="more than"):
        sources.read_uploads(path)


def test_an_export_of_no_graded_notebook_writes_nothing(tmp_path):
    """An output folder with no record gave a header-only gradebook file, exit 0."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text("")
    for fmt in ("canvas", "gradescope", "moodle"):
        done = run("export", out, "--format", fmt, tmp=tmp_path / "tmp", check=False)
        assert done.returncode == 2 and "no graded notebook" in done.stderr, done
    assert [p.name for p in out.iterdir()] == ["results.jsonl"]
