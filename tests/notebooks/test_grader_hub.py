"""The grading service `grader` in a real JupyterHub: an instructor and two students.

The hub runs the configuration shipped in docs/jupyterhub/ (loaded as it is; only ports,
folders, user names, the service's interpreter and course folder, and one extra admin
service for the test's own API calls are set). The test, as root (it creates three local
Unix users, removed at the end even when it fails):

1. installs JupyterHub's own PyPI packages in a venv every user can run, makes the users
   and starts the hub; the hub starts `grader` (``python -m autograder serve`` from this
   repository's venv) as its managed service;
2. gets each user a token from the hub's API, and through the hub's proxy (every request
   below goes to ``/services/grader/...`` on the proxy's port, authenticated by the hub's
   OAuth): student1 posts a perfect notebook ("Submit for grading"), student2's notebook
   arrives in nbgrader's exchange ``inbound`` folder (owned by student2, named as
   nbgrader's ``submit`` names it, its file time set to 2001);
3. reads both feedback pages once graded: visible cases only, student1's receipt time
   the service's own (between the request's start and end); student1 is refused
   student2's page (403), student2 may not release, the instructor releases and the page
   becomes ``grade``'s own; ``python -m autograder report`` reads the service's OUT;
4. the size cap (the default, 5 MB) and the rate limit (the default, 5 submissions in 10
   minutes) refuse with messages that say so.

Deadlines (generous, the machine may be busy): 30 minutes to install, 3 minutes for the
hub and its service to answer, 10 minutes for the two notebooks to be graded.
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder import REPO_ROOT
from autograder.ondemand.service import settings as service_settings
from autograder.results.records import read_records
from hub_machinery import (Hub, add_users, config_head, free_port, hub_venv,
                           remove_users, skip_unless_root_with_tools)
from notebook_helpers import stop_process_group

INSTALL_DEADLINE, HUB_DEADLINE, GRADE_DEADLINE = 1800, 180, 600
COURSE, ASSIGNMENT = "tfc", "01_dot_products"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
PREFIX = "/services/grader/"


def _start_hub(base: Path, users: list[str], admin_token: str):
    hub_dir = base / "hub"
    hub_dir.mkdir(mode=0o700)
    tmp = base / "service-tmp"
    tmp.mkdir()
    port, head = config_head(hub_dir)
    (hub_dir / "test_config.py").write_text(head + f"""grader = c.JupyterHub.services[0]
grader["url"] = "http://127.0.0.1:{free_port()}"
grader["environment"] = {{"TMPDIR": {str(tmp)!r}}}
c.JupyterHub.services.append({{"name": "course-test", "api_token": {admin_token!r}}})
c.JupyterHub.load_roles.append({{"name": "course-test", "services": ["course-test"],
    "scopes": ["admin:users", "tokens", "read:users"]}})
""")
    log = (hub_dir / "hub.log").open("w")
    proc = subprocess.Popen(
        [str(base / "venv" / "bin" / "jupyterhub"), "-f", str(hub_dir / "test_config.py")],
        cwd=hub_dir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "COURSE_USERS": " ".join(users),
             "PATH": f"{base / 'venv' / 'bin'}:/usr/bin:/bin",
             "GRADER_PYTHON": sys.executable, "GRADER_REPO": str(REPO_ROOT),
             "GRADER_COURSE": str(base / "grader"),
             "NBGRADER_EXCHANGE": str(base / "exchange"), "NBGRADER_COURSE": COURSE})
    return proc, Hub(port, admin_token), hub_dir / "hub.log"


def _token(hub: Hub, user: str) -> str:
    _, reply = hub.request("POST", f"/hub/api/users/{user}/tokens",
                           data={"note": "grader test", "expires_in": 3600})
    return reply["token"]


def _graded(hub: Hub, token: str, user: str) -> bool:
    status, _ = hub.fetch("GET", f"{PREFIX}feedback/{user}/{ASSIGNMENT}/{NOTEBOOK}", token)
    return status == 200


@pytest.mark.slow
def test_grader_service_grades_on_submit_and_shows_each_student_their_own_page():
    skip_unless_root_with_tools()
    from benchmark_term import notebook_texts

    texts = notebook_texts([ASSIGNMENT])
    base = Path(tempfile.mkdtemp(prefix="tfc-grader-", dir="/tmp"))
    os.chmod(base, 0o755)
    tag = secrets.token_hex(3)
    instructor, student1, student2 = users = [f"tfc{tag}i", f"tfc{tag}a", f"tfc{tag}b"]
    created: list[str] = []
    proc = None
    try:
        hub_venv(base / "venv", [], INSTALL_DEADLINE)
        uid = add_users(base, users, created)
        inbound = base / "exchange" / COURSE / "inbound"
        inbound.mkdir(parents=True)
        os.chmod(base / "exchange", 0o1777)
        os.chmod(inbound, 0o1777)
        proc, hub, log = _start_hub(base, users, secrets.token_hex(32))
        try:
            hub.wait("the hub", lambda: hub.request("GET", "/hub/api/")[0] == 200,
                     HUB_DEADLINE)
            token = {u: _token(hub, u) for u in users}
            hub.wait("the grader service", lambda: hub.fetch(
                "GET", PREFIX, token[student1])[0] == 200, HUB_DEADLINE)
            _exercise(base, hub, token, uid, texts, instructor, student1, student2, inbound)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- hub log ---\n{log.read_text()[-6000:]}")
    finally:
        if proc is not None and proc.poll() is None:
            stop_process_group(proc, timeout=60, after_kill=30)   # stops its service too
        remove_users(created)
        shutil.rmtree(base, ignore_errors=True)


def _exercise(base, hub, token, uid, texts, instructor, student1, student2, inbound):
    # student1: "Submit for grading"
    perfect = texts["perfect"][ASSIGNMENT].encode()
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    status, text = hub.fetch("POST", f"{PREFIX}submit?notebook={ASSIGNMENT}/{NOTEBOOK}",
                             token[student1], perfect)
    after = datetime.datetime.now(datetime.timezone.utc)
    assert status == 202, text
    received = datetime.datetime.fromisoformat(json.loads(text)["received_at"])
    assert before <= received <= after
    # student2: nbgrader's submit (a folder of the exchange's inbound, theirs, dated 2001)
    folder = inbound / f"{student2}+{ASSIGNMENT}+2001-01-01 00:00:00.000000 UTC+{secrets.token_hex(4)}"
    folder.mkdir()
    (folder / NOTEBOOK).write_text(texts["mistake_1"][ASSIGNMENT])
    old = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    os.utime(folder / NOTEBOOK, (old, old))
    for path in (folder, folder / NOTEBOOK):
        os.chown(path, uid[student2], uid[student2])

    for u in (student1, student2):
        hub.wait(f"{u}'s feedback", lambda u=u: _graded(hub, token[u], u), GRADE_DEADLINE)
    out = base / "grader" / "out"
    records = {r["student_id"]: r for r in read_records(out)}
    assert records[student1]["points"] == records[student1]["max_points"] > 0
    assert records[student2]["points"] < records[student2]["max_points"]
    assert (datetime.datetime.fromisoformat(records[student2]["submitted_at"]).year
            == datetime.datetime.now(datetime.timezone.utc).year)       # not the file's 2001
    assert datetime.datetime.fromisoformat(records[student1]["submitted_at"]) == received

    page = {u: f"{PREFIX}feedback/{u}/{ASSIGNMENT}/{NOTEBOOK}" for u in (student1, student2)}
    for u in (student1, student2):
        status, text = hub.fetch("GET", page[u], token[u])
        assert status == 200 and "Visible cases only" in text, text[:2000]
    assert hub.fetch("GET", page[student2], token[student1])[0] == 403
    assert hub.fetch("GET", page[student1], token[student2])[0] == 403
    status, text = hub.fetch("GET", PREFIX, token[student1])
    assert status == 200 and student1 in text and student2 not in text

    # release: the instructor only; the page is then grade's own
    assert hub.fetch("POST", f"{PREFIX}release?assignment={ASSIGNMENT}", token[student2],
                     b"")[0] == 403
    status, text = hub.fetch("POST", f"{PREFIX}release?assignment={ASSIGNMENT}",
                             token[instructor], b"")
    assert status == 200, text
    status, text = hub.fetch("GET", page[student1], token[student1])
    assert text == (out / "feedback" / student1 / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    report = subprocess.run([sys.executable, "-m", "autograder", "report", str(out), "--dest",
                             str(base / "report")], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=GRADE_DEADLINE)
    assert report.returncode == 0, report.stderr[-2000:]

    # the defaults' size cap and rate limit, refused with their reasons
    cap = service_settings.DEFAULT_MAX_BYTES
    status, text = hub.fetch("POST", f"{PREFIX}submit?notebook={ASSIGNMENT}/{NOTEBOOK}",
                             token[student2], b" " * (cap + 1))
    assert status == 413 and f"the limit is {cap} bytes" in text, text
    for _ in range(service_settings.DEFAULT_RATE_COUNT - 1):          # student1 sent one
        status, text = hub.fetch("POST", f"{PREFIX}submit?notebook={ASSIGNMENT}/{NOTEBOOK}",
                                 token[student1], perfect)
        assert status == 202, text
    status, text = hub.fetch("POST", f"{PREFIX}submit?notebook={ASSIGNMENT}/{NOTEBOOK}",
                             token[student1], perfect)
    assert status == 429 and "too many submissions" in text, text
    assert hub.fetch("POST", f"{PREFIX}submit?notebook={ASSIGNMENT}/{NOTEBOOK}",
                     token[student2], perfect)[0] == 202         # the limit is per student
