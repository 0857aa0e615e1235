"""JupyterHub with nbgrader's exchange on one machine: an instructor and two students.

The configuration tried is the one shipped in docs/jupyterhub/ (loaded as it is; only
ports, folders and user names are overridden). The test, as root (it creates three local
Unix users, removed at the end even when it fails):

1. installs JupyterHub's own PyPI packages (``jupyterhub``, the Python
   ``configurable-http-proxy``) and nbgrader in a venv every user can run (the course's
   interpreter lives under /root, which other users cannot enter);
2. starts the hub (PAM authenticator, local process spawner) and each user's server
   through the hub's REST API, and checks that each server runs as its user, in its home;
3. the instructor releases the student bundle's notebook with ``nbgrader
   release_assignment``; each student fetches it and submits it **through their own
   server** (nbgrader's Assignments endpoints, what the Assignments tab calls), after
   writing an answer into it through the server's contents API (student1 right,
   student2 the released stub);
4. the instructor runs ``nbgrader collect`` and ``python -m autograder grade`` reads what
   nbgrader collected: student1 gets every point of the answered exercise.

Deadlines (generous, the machine may be busy): 30 minutes to install, 3 minutes for the
hub to answer, 3 minutes for each user's server, 10 minutes to grade.
"""

from __future__ import annotations

import csv
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder import REPO_ROOT
from autograder.release import bundle as bundle_mod
from hub_machinery import (CONFIG_DIR, Hub, add_users, config_head, hub_venv,
                           pin as _pin, remove_users, run as _run,
                           skip_unless_root_with_tools)
from notebook_helpers import stop_process_group

INSTALL_DEADLINE, HUB_DEADLINE, SERVER_DEADLINE, GRADE_DEADLINE = 1800, 180, 180, 600
COURSE = "tfc"
ASSIGNMENT = "02_softmax"


@pytest.mark.slow
def test_jupyterhub_with_the_nbgrader_exchange_from_release_to_grade(tmp_path):
    skip_unless_root_with_tools()

    # Other users must enter this folder: pytest's own (under a 0700 folder) cannot be used.
    base = Path(tempfile.mkdtemp(prefix="tfc-hub-", dir="/tmp"))
    os.chmod(base, 0o755)
    tag = secrets.token_hex(3)
    instructor, student1, student2 = users = [f"tfc{tag}i", f"tfc{tag}a", f"tfc{tag}b"]
    created: list[str] = []
    hub_proc = None
    try:
        # 1. a venv every user can run
        venv = base / "venv"
        # The hub's own packages with the course's pins of nbgrader and JupyterLab (what a
        # hub's shared environment needs; the course's whole constraints.txt is for .venv).
        hub_venv(venv, [_pin("nbgrader"), _pin("jupyterlab")], INSTALL_DEADLINE)
        os.chmod(base, 0o755)

        # the users, homes inside the folder
        uid = add_users(base, users, created)

        # nbgrader's exchange and the shipped nbgrader config (for every user)
        exchange = base / "exchange"
        exchange.mkdir()
        os.chmod(exchange, 0o1777)
        env_nb = {"NBGRADER_COURSE": COURSE, "NBGRADER_EXCHANGE": str(exchange)}
        for u in users:
            jdir = base / "home" / u / ".jupyter"
            jdir.mkdir(exist_ok=True)
            shutil.copyfile(CONFIG_DIR / "nbgrader_config.py", jdir / "nbgrader_config.py")
            _run(["chown", "-R", f"{u}:{u}", str(jdir)])

        # the instructor's course folder: the bundle's notebook in release/
        course = base / "home" / instructor / "course"
        bundle = base / "bundle"
        bundle_mod.build(bundle, [ASSIGNMENT], worked_examples=False)
        shutil.copytree(bundle / "notebooks" / ASSIGNMENT, course / "release" / ASSIGNMENT)
        shutil.copyfile(CONFIG_DIR / "nbgrader_config.py", course / "nbgrader_config.py")
        _run(["chown", "-R", f"{instructor}:{instructor}", str(course)])

        def as_user(u, *cmd, cwd):
            env = ["env", f"HOME={base / 'home' / u}", f"PATH={venv / 'bin'}:/usr/bin:/bin",
                   *[f"{k}={v}" for k, v in env_nb.items()]]
            return _run(["runuser", "-u", u, "--", *env, *cmd], cwd=cwd)

        as_user(instructor, str(venv / "bin" / "nbgrader"), "release_assignment", ASSIGNMENT,
                cwd=course)
        assert (exchange / COURSE / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()

        # 2. the hub, with the shipped configuration
        token = secrets.token_hex(32)
        hub_dir = base / "hub"
        hub_dir.mkdir(mode=0o700)
        port, head = config_head(hub_dir)
        (hub_dir / "test_config.py").write_text(head + f"""c.Spawner.environment = {env_nb!r}
c.Spawner.start_timeout = {SERVER_DEADLINE}
c.Spawner.http_timeout = {SERVER_DEADLINE}
c.JupyterHub.services = [{{"name": "course-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "course-test", "services": ["course-test"],
    "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"]}}]
""")
        log = (hub_dir / "hub.log").open("w")
        hub_proc = subprocess.Popen(
            [str(venv / "bin" / "jupyterhub"), "-f", str(hub_dir / "test_config.py")],
            cwd=hub_dir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "COURSE_USERS": " ".join(users),
                 "PATH": f"{venv / 'bin'}:/usr/bin:/bin"})
        hub = Hub(port, token)
        try:
            hub.wait("the hub", lambda: hub.request("GET", "/hub/api/")[0] == 200, HUB_DEADLINE)
            for u in users:
                status, _ = hub.request("POST", f"/hub/api/users/{u}/server", data={})
                assert status in (201, 202), (u, status)
            for u in users:
                hub.wait(f"{u}'s server", lambda u=u: hub.request(
                    "GET", f"/hub/api/users/{u}")[1]["servers"][""]["ready"], SERVER_DEADLINE)
                hub.wait(f"{u}'s server through the proxy", lambda u=u: hub.request(
                    "GET", f"/user/{u}/api/status")[0] == 200, SERVER_DEADLINE)
                # each server runs as its user, in its home
                hub.request("PUT", f"/user/{u}/api/contents/probe.txt",
                            data={"type": "file", "format": "text", "content": u})
                probe = base / "home" / u / "probe.txt"
                assert probe.read_text() == u and probe.stat().st_uid == uid[u], u

            # 3. students fetch, answer and submit through their own servers
            solved = bundle_mod._variant(ASSIGNMENT, answered=True)
            right = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in solved["cells"]
                     if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
            for u in (student1, student2):
                hub.request("POST", f"/user/{u}/assignments/fetch",
                            form={"course_id": COURSE, "assignment_id": ASSIGNMENT})
                rel = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
                assert (base / "home" / u / rel).stat().st_uid == uid[u]
                _, model = hub.request("GET", f"/user/{u}/api/contents/{rel}?content=1")
                nb = model["content"]
                if u == student1:
                    for cell in nb["cells"]:
                        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                        if gid in right:
                            cell["source"] = right[gid]
                hub.request("PUT", f"/user/{u}/api/contents/{rel}",
                            data={"type": "notebook", "format": "json", "content": nb})
                _, listing = hub.request("POST", f"/user/{u}/assignments/submit",
                                         form={"course_id": COURSE,
                                               "assignment_id": ASSIGNMENT})
                assert listing.get("success", True), listing
            inbound = sorted(p.name for p in (exchange / COURSE / "inbound").iterdir())
            assert [n.split("+")[0] for n in inbound] == sorted([student1, student2]), inbound
        except AssertionError:
            log.flush()
            raise AssertionError((hub_dir / "hub.log").read_text()[-6000:])

        # 4. the instructor collects; the autograder grades what nbgrader collected
        as_user(instructor, str(venv / "bin" / "nbgrader"), "collect", ASSIGNMENT, cwd=course)
        submitted = course / "submitted"
        assert sorted(p.name for p in submitted.iterdir()) == sorted([student1, student2])
        out = tmp_path / "graded"
        result = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submitted),
                                 "--out", str(out)], cwd=REPO_ROOT, capture_output=True,
                                text=True, timeout=GRADE_DEADLINE)
        assert result.returncode == 0, result.stderr[-3000:]
        rows = {r["student_id"] if "student_id" in r else r["student"]: r
                for r in csv.DictReader((out / "summary.csv").open())
                if r["assignment"] == ASSIGNMENT}
        assert set(rows) == {student1, student2}, rows
        assert rows[student1]["points"] == rows[student1]["max_points"] != "0", rows
        assert float(rows[student2]["points"]) == 0, rows
    finally:
        if hub_proc is not None and hub_proc.poll() is None:
            stop_process_group(hub_proc, timeout=60, after_kill=30)          # the hub stops every server
        remove_users(created)
        shutil.rmtree(base, ignore_errors=True)
