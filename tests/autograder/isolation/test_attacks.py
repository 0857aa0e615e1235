"""Nothing in a notebook can raise its own score, harm the grader or other students.

The attacks of ``tests/attacks/`` (one module per class, see docs/threat_model.md) are
graded in the same single run of the real command as the catalogue
(``tests/catalogue/run.py``), next to two honest students. Checked here:

* every attack earns nothing it did not earn honestly, and is flagged where the design
  says so;
* the grader survives (exit code 0, every notebook graded);
* the honest students get exactly the grades they get when graded alone;
* SUBMISSIONS is unchanged, and no file outside OUT was written: a marker string that
  the attacks write everywhere they can appears in no file of the repository or of the
  run's folders, no module or start-up file was planted in /tmp, /dev/shm, the home
  folder or on the import path, a canary file is untouched, solutions and the grader's
  code are still there, no gradebook.db appeared, and OUT holds only what the command
  writes;
* no connection reached the machine's loopback network (namespace isolation);
* feedback pages escape what the learner wrote and never show hidden tests.
"""

from __future__ import annotations

import pytest

from attacks import Attack, attacks
from autograder import SOLUTIONS_DIR
from catalogue import graded_test_cells, hidden_lines
from catalogue.run import HONEST

pytestmark = pytest.mark.slow

ATTACKS = attacks()
ASSIGNMENTS = sorted(p.parent.name for p in SOLUTIONS_DIR.glob("*/*.ipynb")
                     if ".ipynb_checkpoints" not in p.parts)


def _param(attack: Attack):
    marks = ()
    if attack.defect:
        marks = (pytest.mark.xfail(strict=True, reason=attack.defect),)
    return pytest.param(attack, id=attack.key, marks=marks)


@pytest.fixture(scope="module")
def run(catalogue_run):
    return catalogue_run


def _points(rows: dict[str, dict]) -> dict[str, float]:
    return {g: float(r["points"]) for g, r in rows.items() if r["kind"] == "test"}


@pytest.mark.parametrize("attack", [_param(a) for a in ATTACKS])
def test_attack_gains_nothing(run, attack):
    if attack.key not in run.student_of:
        assert attack.isolation and run.mode != "namespaces"
        pytest.skip("not run: only the namespace isolation contains this attack, and this "
                    f"machine grades in {run.mode} mode (docs/threat_model.md)")
    sid = run.student_of[attack.key]
    rows = run.rows.get((sid, attack.assignment))
    assert rows, f"{sid} was not graded"
    got = _points(rows)
    if attack.expect == "nothing":
        expected = {g: 0.0 for g in graded_test_cells(attack.assignment)}
    else:
        honest = _points(run.rows[(HONEST[0], attack.assignment)])
        expected = {g: 0.0 if g in attack.lose else p for g, p in honest.items()}
    assert got == expected, {g: rows[g]["message"] for g in got if got[g] != expected.get(g)}
    record = run.records[(sid, attack.assignment)]
    if attack.flagged:
        assert any(attack.flagged in f for f in record["flags"]), record["flags"]
    assert record["status"] != "grader_error"


def test_grader_survives_every_attack(run):
    assert run.returncode == 0, run.stderr[-3000:]
    statuses = {r["status"] for r in run.records.values()}
    assert "grader_error" not in statuses
    for sid, who in run.students.items():
        assignments = ([who.assignment] if isinstance(who, Attack) else
                       {r[1] for r in run.rows if r[0] == sid})
        for assignment in assignments:
            assert (sid, assignment) in run.records, f"{sid}/{assignment} not graded"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_honest_students_grade_as_when_graded_alone(run, assignment):
    alone = run.alone_rows.get((HONEST[0], assignment))
    assert alone, f"grading the honest student alone gave nothing for {assignment}"
    for sid in HONEST:
        if run.records[(sid, assignment)]["status"] == "missing":
            continue                       # the last honest student skips some notebooks
        shared = run.rows[(sid, assignment)]
        assert {g: (r["points"], r["status"], r["message"]) for g, r in shared.items()} == \
               {g: (r["points"], r["status"], r["message"]) for g, r in alone.items()}, sid
        assert run.records[(sid, assignment)]["flags"] == \
               run.alone_records[(HONEST[0], assignment)]["flags"], sid


def test_submissions_folder_is_unchanged(run):
    assert run.submissions_after == run.submissions_before


def test_nothing_written_outside_the_output(run):
    assert run.marker_hits == [], run.marker_hits
    assert run.canary_after == run.canary_before
    assert run.canary_dir_after == [run.canary.name]
    assert run.missing_after_run == [], run.missing_after_run
    assert run.new_gradebooks == [], run.new_gradebooks
    assert run.out_unexpected == [], run.out_unexpected


def test_grading_output_holds_no_forged_rows(run):
    students = set(run.students) | set(HONEST)
    assert {sid for sid, _ in run.rows} <= students
    assert {sid for sid, _ in run.records} <= students


def test_no_network_from_a_notebook(run):
    if "network_exfiltration" not in run.student_of:
        pytest.skip("fallback isolation has no network namespace (docs/threat_model.md)")
    assert run.network_hits == []


def test_feedback_escapes_html_from_the_learner(run):
    sid = run.student_of["html_injection"]
    page = run.feedback_html(sid, "02_softmax")
    assert page, "no feedback page"
    lowered = page.lower()
    assert "<script" not in lowered and "<img" not in lowered
    assert "&lt;script&gt;" in lowered           # the learner's text is shown, escaped


def test_feedback_of_a_hidden_test_thief_shows_no_hidden_test(run):
    if "search_for_hidden_tests" not in run.student_of:
        pytest.skip(f"not run in {run.mode} mode (docs/threat_model.md)")
    sid = run.student_of["search_for_hidden_tests"]
    text = run.feedback(sid, "02_softmax")
    assert text
    assert not [line for line in hidden_lines("02_softmax") if line in text]


def test_hidden_tests_do_not_leak_through_the_learners_own_output(run):
    import codecs

    sid = run.student_of["leak_hidden_tests_in_memory"]
    text = run.feedback(sid, "02_softmax")
    assert text
    leaked = [line for line in hidden_lines("02_softmax")
              if codecs.encode(line, "rot13") in text]
    assert not leaked, leaked


def test_learner_code_never_runs_as_root(run):
    import re

    sid = run.student_of["privilege_probe"]
    text = run.cell_text(sid, "02_softmax", ["test_softmax"])
    ids = re.findall(r"uid=(\d+) euid=(\d+)", text)
    assert ids, text[:500]
    assert all(uid != "0" and euid != "0" for uid, euid in ids), ids


# The evidence collectors themselves can see what they look for.


def test_listener_records_a_connection_from_outside_the_sandbox():
    import socket

    from catalogue.run import _Listener

    listener = _Listener()
    try:
        with socket.create_connection(("127.0.0.1", listener.port), timeout=2) as conn:
            conn.sendall(b"hello")
        for _ in range(50):
            if listener.hits:
                break
            import time
            time.sleep(0.05)
    finally:
        listener.close()
    assert listener.hits == [b"hello"]


def test_marker_scan_finds_names_and_contents(tmp_path):
    from catalogue.run import _scan_for_marker

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "plain.txt").write_text("nothing here")
    (tmp_path / "a" / "inside.txt").write_text("xx PWNEDtest123 yy")
    (tmp_path / "PWNEDtest123.txt").write_text("")
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "x.txt").write_text("PWNEDtest123")
    hits = _scan_for_marker([tmp_path], "PWNEDtest123", skip=[tmp_path / "skipped"])
    assert sorted(hits) == sorted([str(tmp_path / "a" / "inside.txt"),
                                   str(tmp_path / "PWNEDtest123.txt")])


def test_hidden_tests_do_not_leak_base85_encoded_through_an_error_message(run):
    """The stack and heap thief finds only its own job (its own cells, the visible case
    arguments); nothing it sends, once decoded, holds a hidden test's line."""
    import base64
    import html
    import re

    from attacks.boundary import B85_OPEN

    sid = run.student_of["hidden_tests_from_frames_base85"]
    text = html.unescape(run.feedback_html(sid, "02_softmax"))
    chunks = re.findall(re.escape(B85_OPEN) + r"([0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]+)", text)
    assert chunks, "the thief's message is not in its feedback"
    decoded = []
    for chunk in chunks:
        chunk = chunk[:len(chunk) // 5 * 5]          # messages are cut: whole groups only
        decoded.append(base64.b85decode(chunk).decode("utf-8", "replace"))
    assert any("_strings" in d for d in decoded)     # it decodes: the test can see a leak
    leaked = [line for line in hidden_lines("02_softmax") for d in decoded if line in d]
    assert not leaked, leaked


def test_no_process_of_a_learner_outlives_the_run(run):
    """A grandchild in a session of its own (double fork, setsid) is gone once the run
    is over: killed with its PID namespace, or by its subreaper in fallback mode."""
    from pathlib import Path

    from attacks.boundary import SURVIVOR_SECONDS

    assert "survivor_after_setsid" in run.student_of
    survivors = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if SURVIVOR_SECONDS.encode() in cmdline.read_bytes():
                survivors.append(cmdline.parent.name)
        except OSError:
            pass
    assert not survivors, f"processes left by a learner: {survivors}"


def test_the_keyring_holds_nothing_a_learner_stored(run):
    """The keyring smuggler's key is not in this process's user keyring after the run
    (learner code cannot reach a keyring at all: add_key and keyctl are denied)."""
    import ctypes

    assert "keyring_smuggling" in run.student_of
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    number = {"x86_64": 250, "aarch64": 219}.get(__import__("os").uname().machine)
    if number is None:
        pytest.skip("keyctl's number is known here for x86_64 and aarch64 only")
    found = libc.syscall(number, 10, -4, b"user", b"course-reference", 0)   # KEYCTL_SEARCH
    assert found < 0
