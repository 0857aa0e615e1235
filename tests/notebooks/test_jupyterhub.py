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
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from autograder import REPO_ROOT
from autograder.release import bundle as bundle_mod
from notebook_helpers import stop_process_group

CONFIG_DIR = REPO_ROOT / "docs" / "jupyterhub"
SYSTEM_PYTHON = "/usr/bin/python3"
INSTALL_DEADLINE, HUB_DEADLINE, SERVER_DEADLINE, GRADE_DEADLINE = 1800, 180, 180, 600
COURSE = "tfc"
ASSIGNMENT = "02_softmax"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pin(name: str) -> str:
    for line in (REPO_ROOT / "constraints.txt").read_text().splitlines():
        if line.lower().startswith(name + "=="):
            return line.strip()
    raise AssertionError(f"{name} is not pinned in constraints.txt")


class Hub:
    def __init__(self, port: int, token: str):
        self.base = f"http://127.0.0.1:{port}"
        self.token = token

    def request(self, method: str, path: str, data: dict | None = None,
                form: dict | None = None, timeout: float = 60):
        body, headers = None, {"Authorization": f"token {self.token}"}
        if data is not None:
            body, headers["Content-Type"] = json.dumps(data).encode(), "application/json"
        if form is not None:
            body = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(self.base + path, data=body, headers=headers,
                                     method=method)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            text = resp.read().decode()
            return resp.status, (json.loads(text) if text.strip() else None)

    def wait(self, what: str, ok, deadline: float):
        end, last = time.monotonic() + deadline, None
        while time.monotonic() < end:
            try:
                if ok():
                    return
            except Exception as exc:          # not up yet
                last = exc
            time.sleep(1)
        raise AssertionError(f"{what}: not ready within {deadline:.0f} s (last: {last})")


def _processes_of(uids: set[int]) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def _run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 600)
    result = subprocess.run(cmd, **kw)
    assert result.returncode == 0, (cmd, result.stdout[-3000:], result.stderr[-3000:])
    return result


@pytest.mark.slow
def test_jupyterhub_with_the_nbgrader_exchange_from_release_to_grade(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: it creates three local Unix users and runs a hub "
                    "that starts servers as them (CI runs as root)")
    for tool in ("useradd", "userdel", "runuser"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not available")
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} (an interpreter every user can run) is missing")

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
        _run([SYSTEM_PYTHON, "-m", "venv", str(venv)], timeout=INSTALL_DEADLINE)
        _run([str(venv / "bin" / "pip"), "install", "-q", "--upgrade", "pip"],
             timeout=INSTALL_DEADLINE)                  # Debian's is too old for the pins
        # The hub's own packages with the course's pins of nbgrader and JupyterLab (what a
        # hub's shared environment needs; the course's whole constraints.txt is for .venv).
        _run([str(venv / "bin" / "pip"), "install", "-q", "jupyterhub==6.1.1",
              "configurable-http-proxy==0.4.0", _pin("nbgrader"), _pin("jupyterlab")],
             timeout=INSTALL_DEADLINE)
        os.chmod(base, 0o755)

        # the users, homes inside the folder
        (base / "home").mkdir(mode=0o755)
        for u in users:
            _run(["useradd", "--create-home", "--home-dir", str(base / "home" / u),
                  "--shell", "/bin/sh", u])
            created.append(u)
        uid = {u: pwd.getpwnam(u).pw_uid for u in users}

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
        port, hub_port, api_port = _free_port(), _free_port(), _free_port()
        token = secrets.token_hex(32)
        hub_dir = base / "hub"
        hub_dir.mkdir(mode=0o700)
        (hub_dir / "test_config.py").write_text(f"""
load_subconfig({str(CONFIG_DIR / 'jupyterhub_config.py')!r})
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.JupyterHub.db_url = "sqlite:///{hub_dir / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = {str(hub_dir / 'cookie_secret')!r}
c.Spawner.environment = {env_nb!r}
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
        uids = set()
        for u in created:
            try:
                uids.add(pwd.getpwnam(u).pw_uid)
            except KeyError:
                pass
        for pid in _processes_of(uids):                  # whatever our users still run
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for u in created:
            subprocess.run(["userdel", "--force", u], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)
