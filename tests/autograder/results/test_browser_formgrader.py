"""A written answer graded in nbgrader's formgrader, in headless Chromium, end to end.

Two students hand in one course notebook that has a written answer (the one with the
fewest code cells): one the solution, with a written answer holding HTML that would run
script if it were rendered as is, the other the released notebook unanswered. The real
grader grades them (sandboxed), ``gradebook push`` fills the gradebook, ``gradebook
serve`` starts formgrader on a free loopback port with a token (stopped at the end).
In the real page the test opens Manual Grading, the assignment, the notebook and the
first student's submission, types a score and a comment into the written answer and
leaves the fields (formgrader saves on change), then checks that the page ran none of the
student's HTML. ``gradebook pull`` takes the score back; ``export --format canvas`` must
show the autograded points plus that score, and the feedback page the comment, escaped.
A screenshot of the graded page is saved in the test's tmp folder (path printed).

Needs Debian's ``chromium`` (``/usr/bin/chromium`` or ``$CHROMIUM``) and ``playwright``
(the ``test`` extra; it never downloads a browser here). Skips with a message when either
is missing, except under CI (``CI=true``), where that fails.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from autograder import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR
from autograder.notebook import cells as nbcells
from notebook_helpers import (CHROMIUM, CHROMIUM_ARGS, browser_requirements_missing,
                              stop_process_group,
                              wait_until)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Seconds for formgrader's server to answer (about 5 s on an idle 2-core machine).
SERVER_START_TIMEOUT = 180
#: Seconds for the page to save what was typed (one request each, well under 1 s idle).
SAVE_TIMEOUT = 60
HOSTILE = ('Attention sees every position at once, so nothing waits for a previous step. '
           '<img src="x" onerror="window.__pwned = 1"><script>window.__pwned = 2</script>')
COMMENT = 'Right idea; say why <b>parallel</b> matters & give an example.'
SCORE = 1.5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str):
    with urllib.request.urlopen(url, timeout=120) as response:     # generous: a busy machine
        return json.loads(response.read())


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{args[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _notebook_with_a_written_answer() -> tuple[str, str, str, float]:
    """``(assignment, notebook file, written answer's grade_id, its points)`` of the
    solution notebook with a written answer and the fewest code cells."""
    found = []
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        manual = [c for c in nb["cells"] if nbcells.is_manual(c) and c["cell_type"] == "markdown"]
        if manual:
            meta = nbcells.nbgrader(manual[0])
            code = sum(c["cell_type"] == "code" for c in nb["cells"])
            found.append((code, path.parent.name, path.name, meta["grade_id"],
                          float(meta["points"])))
    assert found, "no solution notebook has a written answer"
    _, assignment, notebook, grade_id, points = min(found)
    return assignment, notebook, grade_id, points


def _make_class(root: Path, assignment: str, notebook: str, grade_id: str) -> Path:
    subs = root / "submissions"
    solution = json.loads((SOLUTIONS_DIR / assignment / notebook).read_text(encoding="utf-8"))
    for cell in solution["cells"]:
        if nbcells.grade_id(cell) == grade_id:
            cell["source"] = HOSTILE
    (subs / "1001" / assignment).mkdir(parents=True)
    (subs / "1001" / assignment / notebook).write_text(json.dumps(solution), encoding="utf-8")
    (subs / "1002" / assignment).mkdir(parents=True)
    shutil.copy(NOTEBOOKS_DIR / assignment / notebook, subs / "1002" / assignment / notebook)
    return subs


def _summary_points(out: Path, student: str, assignment: str) -> float:
    with open(out / "summary.csv", newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f)
                   if r["student_id"] == student and r["assignment"] == assignment)
    return float(row["points"])


def test_a_written_answer_graded_in_formgrader_reaches_the_canvas_export(tmp_path, capsys):
    missing = browser_requirements_missing()
    if missing and os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {missing}: .ci/run installs Chromium and make test playwright")
    if missing:
        pytest.skip(f"browser test skipped: {missing}")
    from playwright.sync_api import sync_playwright

    assignment, notebook, grade_id, points = _notebook_with_a_written_answer()
    assert points >= SCORE
    stem = notebook.removesuffix(".ipynb")
    env = dict(os.environ, TMPDIR=str(tmp_path), BROWSER="true", OPENBLAS_NUM_THREADS="1",
               JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
               JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"))
    subs = _make_class(tmp_path, assignment, notebook, grade_id)
    out = tmp_path / "out"
    _cli("grade", str(subs), "--out", str(out), "--jobs", "1", "--timeout", "300",
         "--cell-timeout", "120", env=env)
    autograded = _summary_points(out, "1001", assignment)
    _cli("gradebook", "push", str(out), env=env)

    port, token = _free_port(), "formgrader-test-" + os.urandom(8).hex()
    base = f"http://127.0.0.1:{port}"
    log_path = tmp_path / "formgrader.log"
    log = log_path.open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "autograder", "gradebook", "serve", str(out), "--port", str(port),
         "--no-browser", f"--jupyter-option=--IdentityProvider.token={token}"],
        cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def started():
            try:
                return _get_json(f"{base}/api/status?token={token}")
            except OSError:
                if server.poll() is not None:
                    raise AssertionError("formgrader exited:\n"
                                         + log_path.read_text(errors="replace")[-3000:])
                return None
        wait_until(started, SERVER_START_TIMEOUT, "formgrader to start")
        [submission] = [s for s in _get_json(f"{base}/formgrader/api/submitted_notebooks/"
                                             f"{assignment}/{stem}?token={token}")
                        if s["student"] == "1001"]
        assert submission["needs_manual_grade"]

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 1200})
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                # offline, as a grader's machine may be: nothing but this server answers
                outside: list[str] = []
                failed: list[str] = []

                def only_this_server(route):
                    if route.request.url.startswith(base + "/"):
                        route.continue_()
                    else:
                        outside.append(route.request.url)
                        route.abort()
                page.route("**/*", only_this_server)
                page.on("response", lambda r: r.status >= 400 and failed.append(
                    f"{r.status} {r.url}"))
                # Manual Grading -> the assignment -> the notebook -> the submission
                page.goto(f"{base}/formgrader/gradebook?token={token}")
                page.locator(f'a[href$="/formgrader/gradebook/{assignment}"]').click()
                page.locator(f'a[href$="/formgrader/gradebook/{assignment}/{stem}"]').click()
                # (names are hidden by default: the link reads "Submission #N")
                page.locator(f'a.name-hidden[href*="/formgrader/submissions/'
                             f'{submission["id"]}"]').click()
                score = page.locator(f"#{grade_id}")
                comment = page.locator(f"#{grade_id}-comment")
                score.wait_for(timeout=60_000)
                # the page has loaded the grades (the field is bound) before we type
                page.wait_for_function("() => window.formgrader && formgrader.grades "
                                       "&& formgrader.grades.loaded && formgrader.comments "
                                       "&& formgrader.comments.loaded", timeout=60_000)
                score.fill(str(SCORE))
                score.press("Tab")
                comment.fill(COMMENT)
                page.locator("body").click(position={"x": 5, "y": 300})

                def saved():
                    grades = _get_json(f"{base}/formgrader/api/grades?submission_id="
                                       f"{submission['id']}&token={token}")
                    comments = _get_json(f"{base}/formgrader/api/comments?submission_id="
                                         f"{submission['id']}&token={token}")
                    g = next(x for x in grades if x["name"] == grade_id)
                    c = next(x for x in comments if x["name"] == grade_id)
                    return g["manual_score"] == SCORE and c["manual_comment"] == COMMENT
                wait_until(saved, SAVE_TIMEOUT, "formgrader to save the score and comment")
                # the student's HTML was shown as text, never run
                assert page.evaluate("() => window.__pwned") is None
                answer = page.locator(".nbgrader_cell", has=page.locator(f"#{grade_id}"))
                assert '<script>window.__pwned = 2</script>' in answer.inner_text()
                # the notebook's LaTeX is typeset by the MathJax this server serves
                # (jupyter-server-mathjax), with no request leaving it and none failing
                page.wait_for_function(
                    "() => window.MathJax && MathJax.Hub && MathJax.Hub.queue "
                    "&& MathJax.Hub.queue.pending === 0 "
                    "&& document.querySelectorAll('.MathJax').length > 0", timeout=120_000)
                assert page.evaluate("() => document.querySelectorAll("
                                     "'.MathJax_Error, merror').length") == 0
                assert not [u for u in outside if u.startswith("http")], outside
                assert not failed, failed
                assert not errors, errors
                answer.scroll_into_view_if_needed()
                shot = tmp_path / "formgrader.png"
                page.screenshot(path=str(shot), full_page=True)
            finally:
                browser.close()
        with capsys.disabled():
            print(f"\n  formgrader screenshot: {shot}")

        result = _cli("gradebook", "pull", str(out), env=env)
        assert "1 score(s) taken from formgrader" in result.stdout
    finally:
        stop_process_group(server, timeout=30)
        log.close()

    exports = tmp_path / "exports"
    _cli("export", str(out), "--format", "canvas", "--dest", str(exports), env=env)
    rows = list(csv.reader((exports / "canvas_grades.csv").open(encoding="utf-8")))
    column = rows[0].index(assignment)
    by_id = {row[1]: row for row in rows[2:]}
    assert float(by_id["1001"][column]) == autograded + SCORE
    assert float(by_id["1002"][column]) == _summary_points(out, "1002", assignment)
    page = (out / "feedback" / "1001" / assignment / notebook.replace(".ipynb", ".html"))
    text = page.read_text(encoding="utf-8")
    assert "say why &lt;b&gt;parallel&lt;/b&gt; matters &amp; give an example." in text
    # a later regrade keeps the score (grade reads OUT/manual_scores.json)
    _cli("grade", str(subs), "--out", str(out), "--jobs", "1", "--timeout", "300",
         "--cell-timeout", "120", env=env)
    assert _summary_points(out, "1001", assignment) == autograded + SCORE
