"""Written answers graded in nbgrader's formgrader: ``gradebook push`` fills an nbgrader
gradebook from a graded OUT, ``gradebook pull`` brings the scores and comments given
there back into OUT (summary, exports, feedback), and they survive a regrade and a
second push. The formgrader's own writes are made here with nbgrader's Gradebook API
(what its web page does on "save"); tests/autograder/results/test_browser_formgrader.py drives the real
page. Classes are graded with the engine's stand-in of tests/fake_class.py (fast)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from nbgrader.api import Gradebook

from autograder.results import export
from autograder.run import pool as grade
from autograder.results import formgrader_view, gradebook
from autograder.cli import main
from autograder.results.records import MANUAL_TEMPLATE_COLUMNS
from notebook_helpers import stop_process_group
from fake_class import fake_engine, make_class, make_course

#: The stand-in engine's autograded points of 01_a (tests worth 1 and 2, all passing).
AUTO_01A = 3


def _graded(tmp_path, students=None):
    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, students or {"111": {"01_a": "good", "02_b": "good"},
                                             "222": {"01_a": "good"}})
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    return subs, solutions, out


def _push(out, solutions):
    assert main(["gradebook", "push", str(out), "--solutions", str(solutions)]) == 0


def _give(out, student, score, comment=None, grade_id="why", notebook="01_a",
          assignment="01_a", extra_credit=None):
    """What formgrader does when the instructor types a score and a comment."""
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        grade_row = gb.find_grade(grade_id, notebook, assignment, student)
        grade_row.manual_score = score
        grade_row.extra_credit = extra_credit
        grade_row.needs_manual_grade = score is None and grade_row.auto_score is None
        if comment is not None:
            gb.find_comment(grade_id, notebook, assignment, student).manual_comment = comment
        gb.db.commit()
    finally:
        gb.close()


def _in_gradebook(out, student, grade_id="why", notebook="01_a", assignment="01_a"):
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        g = gb.find_grade(grade_id, notebook, assignment, student)
        try:
            comment = gb.find_comment(grade_id, notebook, assignment, student).manual_comment
        except Exception:
            comment = None
        return g.auto_score, g.manual_score, g.needs_manual_grade, comment
    finally:
        gb.close()


def _summary(out):
    with open(out / "summary.csv", newline="", encoding="utf-8") as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def _canvas(out):
    [path] = export.export(out, "canvas")
    return {row[1]: row for row in csv.reader(path.open(encoding="utf-8"))}


def test_push_fills_the_gradebook_with_autograde_scores_and_written_answers_to_grade(tmp_path):
    _, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    course = out / "nbgrader"
    assert (course / "gradebook.db").is_file() and (course / "nbgrader_config.py").is_file()
    # this grader's scores as nbgrader's autograde scores; the written answer to grade
    assert _in_gradebook(out, "111", "test_f_hidden") == (2.0, None, False, None)
    assert _in_gradebook(out, "111", "test_g", "02_b", "02_b")[:3] == (3.0, None, False)
    assert _in_gradebook(out, "111") == (None, None, True, None)
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        assert gb.find_grade_cell("why", "01_a", "01_a").max_score == 1.0
        assert gb.find_grade_cell("why", "01_a", "01_a").cell_type == "markdown"
        assert {s.id for s in gb.students} == {"111", "222"}
        # 222 handed in nothing of 02_b: no submission to grade there
        assert [s.student.id for s in gb.assignment_submissions("02_b")] == ["111"]
        assert gb.find_submission_notebook("01_a", "01_a", "222").needs_manual_grade
    finally:
        gb.close()
    # what formgrader shows: the course notebook with the student's answers, built
    # without running anything; submitted/ holds an empty folder per submission
    # (formgrader counts those) and nothing nbgrader could autograde
    shown = json.loads((course / "autograded" / "111" / "01_a" / "01_a.ipynb").read_text())
    by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): c for c in shown["cells"]}
    assert by_id["f"]["source"] == "def f(x):\n    return x  # <b>mine</b>"
    assert by_id["why"]["source"] == "Because &lt;i&gt;so&lt;/i&gt;."     # inert HTML
    assert by_id["test_f"]["outputs"][0]["text"] == "autograder: 1 / 1 point(s), ok\n"
    assert sorted(str(p.relative_to(course / "submitted"))
                  for p in (course / "submitted").rglob("*")) == [
        "111", "111/01_a", "111/02_b", "222", "222/01_a"]
    assert not (course / "autograded" / "222" / "02_b").exists()
    assert sorted(p.name for p in (course / "source").iterdir()) == ["01_a", "02_b"]
    assert not any((course / "source").rglob("*.ipynb"))


def test_pull_brings_score_and_comment_into_summary_exports_and_feedback(tmp_path, capsys):
    subs, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    hostile = '=HYPERLINK("http://x") <script>alert(1)</script> & "quoted"'
    _give(out, "111", 0.5, hostile)
    assert main(["gradebook", "pull", str(out)]) == 0
    assert "1 score(s) taken from formgrader" in capsys.readouterr().out
    stored = json.loads((out / "manual_scores.json").read_text())
    answer = hashlib.sha256("Because <i>so</i>.".encode()).hexdigest()[:32]   # the one it scored
    assert stored == {json.dumps(["111", "01_a", "01_a.ipynb", "why"]):
                      {"points": 0.5, "comment": hostile, "answer": answer}}
    summary = _summary(out)
    assert float(summary[("111", "01_a")]["points"]) == AUTO_01A + 0.5
    assert summary[("111", "01_a")]["status"] == "ok"
    assert summary[("222", "01_a")]["status"] == "needs_manual_grade"
    assert _canvas(out)["111"][5:] == ["3.5", "3"]
    page = (out / "feedback" / "111" / "01_a" / "01_a.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;" in page
    assert "<script>" not in page
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        why = next(r for r in csv.DictReader(f) if r["student_id"] == "111"
                   and r["grade_id"] == "why")
    assert why["points"] == "0.5" and "<script>alert(1)</script>" in why["message"]
    # the comment never starts a CSV cell as a formula (manual-template's CSV)
    scores = tmp_path / "scores.csv"
    assert main(["manual-template", str(out), "--dest", str(scores)]) == 0
    row = next(csv.DictReader(scores.open(encoding="utf-8")))
    assert row["comment"] == "'" + hostile and row["points"] == "0.5"
    # pulling again changes nothing
    before = (out / "summary.csv").read_text()
    assert main(["gradebook", "pull", str(out)]) == 0
    assert "0 score(s) taken" in capsys.readouterr().out
    assert (out / "summary.csv").read_text() == before


def test_scores_survive_a_regrade_and_a_second_push(tmp_path):
    subs, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    _give(out, "111", 1.0, "clear")
    gradebook.pull(out)
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    assert float(_summary(out)[("111", "01_a")]["points"]) == AUTO_01A + 1
    _push(out, solutions)
    assert _in_gradebook(out, "111") == (None, 1.0, False, "clear")
    assert _in_gradebook(out, "222") == (None, None, True, None)


def test_a_push_after_a_regrade_keeps_scores_given_but_never_pulled(tmp_path):
    """The instructor grades in formgrader, forgets to pull, regrades, pushes again."""
    subs, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    _give(out, "222", 0.25, "partly")
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    assert _summary(out)[("222", "01_a")]["points"] == str(AUTO_01A)   # not pulled yet
    _push(out, solutions)
    assert _in_gradebook(out, "222") == (None, 0.25, False, "partly")
    assert float(_summary(out)[("222", "01_a")]["points"]) == AUTO_01A + 0.25
    assert _canvas(out)["222"][5] == "3.25"


def test_a_score_imported_from_csv_after_a_push_is_not_undone_by_the_next_push(tmp_path):
    subs, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    _give(out, "111", 0.5, "from formgrader")
    gradebook.pull(out)
    scores = tmp_path / "scores.csv"
    main(["manual-template", str(out), "--dest", str(scores)])
    rows = list(csv.DictReader(scores.open(encoding="utf-8")))
    rows[0].update(points="1", comment="from the spreadsheet")
    with open(scores, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, MANUAL_TEMPLATE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    assert main(["manual-import", str(out), str(scores)]) == 0
    _push(out, solutions)        # the gradebook still says 0.5, unchanged since the pull
    assert _in_gradebook(out, "111") == (None, 1.0, False, "from the spreadsheet")
    assert float(_summary(out)[("111", "01_a")]["points"]) == AUTO_01A + 1


def test_a_score_outside_the_cell_is_refused_and_nothing_changes(tmp_path, capsys):
    _, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    _give(out, "111", 0.5)
    _give(out, "222", 7)
    before = (out / "summary.csv").read_text()
    assert main(["gradebook", "pull", str(out)]) == 2
    err = capsys.readouterr().err
    assert "222, 01_a, 01_a.ipynb, why: the score 7 given in formgrader is outside 0 .. 1" in err
    assert "nothing was changed" in err
    assert (out / "summary.csv").read_text() == before
    assert not (out / "manual_scores.json").exists()


def test_what_is_not_taken_is_said(tmp_path, capsys):
    _, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    _give(out, "111", 1.0, "good", extra_credit=2)
    _give(out, "222", None, "a comment but no score yet")
    _give(out, "111", 0.0, grade_id="test_f")         # overriding an autograded test
    assert main(["gradebook", "pull", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "111, 01_a, 01_a.ipynb, why: extra credit is not taken" in printed
    assert "222, 01_a, 01_a.ipynb, why: a comment without a score is not taken" in printed
    assert "111, 01_a, 01_a.ipynb, test_f: a score given by hand to an autograded test" \
        in printed
    summary = _summary(out)
    assert float(summary[("111", "01_a")]["points"]) == AUTO_01A + 1   # the test kept 1
    # a score cleared in formgrader: the earlier one is kept, and said so
    _give(out, "111", None)
    assert main(["gradebook", "pull", str(out)]) == 0
    assert "the score was cleared in formgrader; the earlier 1 is kept" in capsys.readouterr().out
    assert float(_summary(out)[("111", "01_a")]["points"]) == AUTO_01A + 1


def test_hostile_student_ids_are_refused_and_no_gradebook_is_made(tmp_path, capsys):
    _, solutions, out = _graded(tmp_path, {'x"><img src=x onerror=alert(1)>': {"01_a": "good"},
                                           "111": {"01_a": "good"}})
    assert main(["gradebook", "push", str(out), "--solutions", str(solutions)]) == 2
    err = capsys.readouterr().err
    assert "cannot go into a gradebook" in err and "nothing was changed" in err
    assert not (out / "nbgrader").exists()


def test_pull_and_serve_before_a_push_say_to_push(tmp_path, capsys):
    _, _, out = _graded(tmp_path)
    for action in ("pull", "serve"):
        assert main(["gradebook", action, str(out)]) == 2
        assert f"gradebook push {out}` first" in capsys.readouterr().err


def test_the_served_notebook_turns_a_written_answers_html_inert():
    solution = {"cells": [
        {"cell_type": "markdown", "metadata": {"nbgrader": {
            "grade": True, "solution": True, "grade_id": "why", "points": 2}}, "source": "x"}]}
    record = {"cells": [], "answers": {"why": '<img src=x onerror="alert(1)"> a & b $x<y$'}}
    [cell] = formgrader_view.shown_notebook(solution, record)["cells"]
    assert cell["source"] == '&lt;img src=x onerror="alert(1)"&gt; a &amp; b $x&lt;y$'
    record["answers"] = {"why": "  "}
    assert formgrader_view.shown_notebook(solution, record)["cells"][0]["source"] == "*(no answer)*"


# --------------------------------------------------------------------------- the server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


#: Seconds the formgrader server gets to answer (it starts in about 5 s when idle).
SERVER_START_TIMEOUT = 120


def _due(out, assignment):
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        return gb.find_assignment(assignment).duedate
    finally:
        gb.close()


def test_push_takes_the_due_dates_from_the_stored_late_policy_or_deadline(tmp_path):
    from datetime import datetime
    _, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    assert _due(out, "01_a") is None and _due(out, "02_b") is None   # none known yet
    # the deadlines export stored (late_policy.json); nbgrader keeps naive UTC times
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "x"),
                 "--deadline", "2026-10-01T23:59+02:00", "--deadline", "02_b=2026-10-08T12:00",
                 "--late-policy", "10"]) == 0
    _push(out, solutions)
    assert _due(out, "01_a") == datetime(2026, 10, 1, 21, 59)
    assert _due(out, "02_b") == datetime(2026, 10, 8, 12, 0)
    # --deadline given to push wins; a homework's deadline is its notebooks'
    assert main(["gradebook", "push", str(out), "--solutions", str(solutions),
                 "--deadline", "01_a=2026-11-01T08:00"]) == 0
    assert _due(out, "01_a") == datetime(2026, 11, 1, 8, 0)
    assert _due(out, "02_b") == datetime(2026, 10, 8, 12, 0)      # kept, not cleared
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "x"),
                 "--homework", "HW 1=01_a,02_b", "--deadline", "HW 1=2026-12-24T18:00",
                 "--late-policy", "10"]) == 0
    _push(out, solutions)
    assert _due(out, "01_a") == _due(out, "02_b") == datetime(2026, 12, 24, 18, 0)


def test_push_refuses_a_deadline_that_is_not_a_time(tmp_path, capsys):
    _, solutions, out = _graded(tmp_path)
    assert main(["gradebook", "push", str(out), "--solutions", str(solutions),
                 "--deadline", "01_a=soon"]) != 0
    assert "not a time" in capsys.readouterr().err
    assert not (out / "nbgrader").exists()


@pytest.mark.slow
def test_serve_starts_formgrader_where_no_kernel_or_terminal_can_start(tmp_path):
    _, solutions, out = _graded(tmp_path)
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "x"),
                 "--deadline", "2026-10-01T23:59", "--late-policy", "10"]) == 0
    _push(out, solutions)
    port, token = _free_port(), "gradebook-test-" + os.urandom(8).hex()
    env = dict(os.environ, TMPDIR=str(tmp_path), BROWSER="true",
               JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"))
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "autograder", "gradebook", "serve", str(out), "--port", str(port),
         "--no-browser", f"--jupyter-option=--IdentityProvider.token={token}"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                status, body = _request(f"{base}/formgrader/api/assignments?token={token}")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("formgrader did not start:\n"
                                + (tmp_path / "serve.log").read_text(errors="replace")[-3000:])
                time.sleep(0.5)
        assert status == 200
        assignments = json.loads(body)
        assert [a["name"] for a in assignments] == ["01_a", "02_b"]
        # the overview: submissions counted (it showed 0), the due date export stored
        # (it showed None), and no exchange (nbgrader's default one is not writable here)
        assert [a["num_submissions"] for a in assignments] == [2, 1]
        assert [a["display_duedate"] for a in assignments] == ["2026-10-01 23:59:00 UTC"] * 2
        status, page = _request(f"{base}/formgrader/manage_assignments?token={token}")
        assert status == 200 and b"warning-exchange" not in page
        status, body = _request(f"{base}/formgrader/api/submitted_notebooks/01_a/01_a"
                                f"?token={token}")
        rows = json.loads(body)
        assert sorted(r["student"] for r in rows) == ["111", "222"]
        assert all(r["needs_manual_grade"] for r in rows)
        page_url = f"{base}/formgrader/submissions/{rows[0]['id']}/"
        status, page = _request(f"{page_url}?token={token}")
        assert status == 200 and b'id="why-comment"' in page
        assert b"Because &lt;i&gt;so" in page and b"<i>so</i>" not in page
        # MathJax comes from this server (jupyter-server-mathjax), not from a CDN
        scripts = re.findall(r'<script src="([^"]*)"', page.decode())
        mathjax = [src for src in scripts if "mathjax" in src.lower()]
        assert len(mathjax) == 1 and "://" not in mathjax[0], scripts
        src = urllib.parse.urljoin(page_url, mathjax[0])
        assert src.startswith(f"{base}/static/jupyter_server_mathjax/MathJax.js"), src
        status, script = _request(f"{src}&token={token}")
        assert status == 200 and b"MathJax" in script
        # nothing of a student can run from this server
        status, _ = _request(f"{base}/api/kernels?token={token}", "POST",
                             json.dumps({"name": "python3"}).encode())
        assert status >= 400
        status, _ = _request(f"{base}/api/terminals?token={token}", "POST", b"{}")
        assert status == 404
        # nbgrader autograde is refused, even on a submitted/ folder put there by hand
        submitted = out / "nbgrader" / "submitted" / "111" / "01_a"
        submitted.mkdir(parents=True, exist_ok=True)
        (submitted / "01_a.ipynb").write_bytes(
            (out / "nbgrader" / "autograded" / "111" / "01_a" / "01_a.ipynb").read_bytes())
        status, body = _request(f"{base}/formgrader/api/submission/01_a/111/autograde"
                                f"?token={token}", "POST", b"{}")
        result = json.loads(body)
        assert result["success"] is False
        assert "nbgrader autograde is disabled here" in result["error"] + result.get("log", "")
        # releasing feedback through an exchange says where feedback goes instead
        status, body = _request(f"{base}/formgrader/api/assignment/01_a/111/release_feedback"
                                f"?token={token}", "POST", b"{}")
        result = json.loads(body)
        assert result["success"] is False
        assert "feedback-package" in result["error"] + result.get("log", "")
    finally:
        stop_process_group(proc, timeout=30)
        log.close()
    # no page logged nbgrader's "Unwritable directory ... exchange" (every page did)
    logged = (tmp_path / "serve.log").read_text(errors="replace")
    assert "Unwritable directory" not in logged and "exchange" not in logged.lower().replace(
        "no nbgrader exchange", ""), logged[-3000:]


def test_a_push_follows_the_solutions_cells_added_and_removed(tmp_path):
    subs, solutions, out = _graded(tmp_path)
    _push(out, solutions)
    _give(out, "111", 1.0, "kept")
    path = solutions / "01_a" / "01_a.ipynb"
    nb = json.loads(path.read_text())
    why = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "why")
    nb["cells"].remove(why)
    nb["cells"].append({"cell_type": "markdown", "source": "How?", "metadata": {"nbgrader": {
        "schema_version": 3, "grade": True, "solution": True, "grade_id": "how", "points": 2}}})
    path.write_text(json.dumps(nb))
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    _push(out, solutions)
    assert _in_gradebook(out, "111", "how") == (None, None, True, None)
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        assert {c.name for c in gb.find_notebook("01_a", "01_a").grade_cells} == {
            "test_f", "test_f_hidden", "how"}
        assert "why" not in [c.name for c in gb.find_notebook("01_a", "01_a").solution_cells]
    finally:
        gb.close()
    _give(out, "222", 1.5, grade_id="how")
    gradebook.pull(out)
    assert float(_summary(out)[("222", "01_a")]["points"]) == AUTO_01A + 1.5


def test_help_names_the_gradebook_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert "gradebook" in listed and "formgrader" in listed


def _submitted(out, student, assignment):
    gb = Gradebook(gradebook.db_url(out), gradebook.COURSE_ID)
    try:
        s = gb.find_submission(assignment, student)
        return s.timestamp, s.extension
    finally:
        gb.close()


def test_push_gives_formgrader_the_upload_times_and_each_students_extension(tmp_path):
    """Issue 39: formgrader says late what `export` charges late: the upload time
    `collect` recorded, and the extension `export --extensions` stored, per student."""
    from datetime import datetime, timedelta

    from autograder.results import late

    solutions = make_course(tmp_path)
    subs = make_class(tmp_path, {"111": {"01_a": "good"}, "222": {"01_a": "good"}})
    with open(subs / "_submissions.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=late.SUBMISSION_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for sid, when in (("111", "2026-10-02T09:30:00+00:00"),
                          ("222", "2026-10-03T10:00:00+02:00")):
            writer.writerow({"student_id": sid, "assignment": "01_a",
                             "notebook": "01_a.ipynb", "submitted_at": when})
    out = tmp_path / "out"
    grade.run(subs, out, solutions=solutions, grade_fn=fake_engine, stream=io.StringIO())
    extensions = tmp_path / "extensions.csv"
    extensions.write_text("student_id,assignment,deadline\n222,01_a,2026-10-04T00:00Z\n")
    assert main(["export", str(out), "--format", "canvas", "--dest", str(tmp_path / "x"),
                 "--deadline", "2026-10-01T23:59Z", "--late-policy", "10",
                 "--extensions", str(extensions)]) == 0
    _push(out, solutions)
    assert _submitted(out, "111", "01_a") == (datetime(2026, 10, 2, 9, 30), None)
    at, extension = _submitted(out, "222", "01_a")
    assert at == datetime(2026, 10, 3, 8, 0)                     # naive UTC, as nbgrader keeps
    assert extension == timedelta(days=2, minutes=1)             # to 2026-10-04 00:00 UTC
