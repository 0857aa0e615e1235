"""What the tests that start a real JupyterHub share (tests/notebooks/test_jupyterhub.py,
tests/notebooks/test_grader_hub.py): free ports, the hub's own venv, local Unix users made
and removed, a REST client through the hub's proxy, and the clean-up of everything the
users still run. Such a test runs as root (it makes users; the hub starts processes as
them)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from autograder import REPO_ROOT

CONFIG_DIR = REPO_ROOT / "docs" / "jupyterhub"
SYSTEM_PYTHON = "/usr/bin/python3"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_head(hub_dir: Path) -> tuple[int, str]:
    """``(the proxy's port, the first lines of a test's hub configuration)``: the shipped
    configuration loaded as it is, then only free ports and the hub's state in ``hub_dir``
    overridden; each test appends what is its own."""
    port, hub_port, api_port = free_port(), free_port(), free_port()
    return port, f"""
load_subconfig({str(CONFIG_DIR / 'jupyterhub_config.py')!r})
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.JupyterHub.db_url = "sqlite:///{hub_dir / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = {str(hub_dir / 'cookie_secret')!r}
"""


def pin(name: str) -> str:
    for line in (REPO_ROOT / "constraints.txt").read_text().splitlines():
        if line.lower().startswith(name + "=="):
            return line.strip()
    raise AssertionError(f"{name} is not pinned in constraints.txt")


def skip_unless_root_with_tools() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: it creates local Unix users and runs a hub "
                    "that starts processes as them (CI runs as root)")
    for tool in ("useradd", "userdel", "runuser"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not available")
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} (an interpreter every user can run) is missing")


class Hub:
    def __init__(self, port: int, token: str):
        self.base = f"http://127.0.0.1:{port}"
        self.token = token

    def request(self, method: str, path: str, data: dict | None = None,
                form: dict | None = None, timeout: float = 60, token: str | None = None,
                body: bytes | None = None):
        headers = {"Authorization": f"token {token or self.token}"}
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

    def fetch(self, method: str, path: str, token: str, body: bytes | None = None,
              timeout: float = 60) -> tuple[int, str]:
        """``(status, text)`` of any answer, errors included (a refusal is an answer)."""
        headers = {"Authorization": f"token {token}"}
        if body is not None:
            headers["Content-Type"] = "application/octet-stream"
        req = urllib.request.Request(self.base + path, data=body, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

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


def processes_of(uids: set[int]) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 600)
    result = subprocess.run(cmd, **kw)
    assert result.returncode == 0, (cmd, result.stdout[-3000:], result.stderr[-3000:])
    return result


def hub_venv(venv: Path, packages: list[str], deadline: float) -> None:
    """A venv every user can run, with the hub's own PyPI packages and ``packages``."""
    run([SYSTEM_PYTHON, "-m", "venv", str(venv)], timeout=deadline)
    run([str(venv / "bin" / "pip"), "install", "-q", "--upgrade", "pip"],
        timeout=deadline)                       # Debian's is too old for the pins
    run([str(venv / "bin" / "pip"), "install", "-q", "jupyterhub==6.1.1",
         "configurable-http-proxy==0.4.0", *packages], timeout=deadline)


def add_users(base: Path, users: list[str], created: list[str]) -> dict[str, int]:
    """Local users with homes in ``base/home`` (each appended to ``created`` once made)."""
    (base / "home").mkdir(mode=0o755, exist_ok=True)
    for u in users:
        run(["useradd", "--create-home", "--home-dir", str(base / "home" / u),
             "--shell", "/bin/sh", u])
        created.append(u)
    return {u: pwd.getpwnam(u).pw_uid for u in users}


def remove_users(created: list[str]) -> None:
    """Kill whatever the users still run, then remove them."""
    uids = set()
    for u in created:
        try:
            uids.add(pwd.getpwnam(u).pw_uid)
        except KeyError:
            pass
    for pid in processes_of(uids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for u in created:
        subprocess.run(["userdel", "--force", u], capture_output=True, timeout=60)
