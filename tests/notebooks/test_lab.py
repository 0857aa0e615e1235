"""`make lab` (the README's first command) serves the course in JupyterLab."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from autograder import REPO_ROOT
from autograder.release.notebooks import assignments


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Seconds one request may take: generous, since formgrader builds its gradebook on the
#: first request and a busy 2-core machine can take many seconds for it.
REQUEST_TIMEOUT = 120


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT) as response:
        return response.status, response.read()


@pytest.mark.slow
def test_make_lab_answers_on_its_port_with_course_and_nbgrader():
    port, token = free_port(), "course-test-token"
    env = dict(os.environ, BROWSER="true")
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"PORT={port}",
         f"LAB_ARGS=--no-browser --ServerApp.ip=127.0.0.1 --IdentityProvider.token={token}"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                status, _ = get(f"{base}/api/status?token={token}")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode(errors="replace") if proc.poll() is not None else ""
                    pytest.fail(f"JupyterLab did not answer on port {port}:\n{out[-3000:]}")
                time.sleep(0.5)
        assert status == 200
        status, page = get(f"{base}/lab?token={token}")
        assert status == 200 and b"JupyterLab" in page
        # the course's first notebook is served
        status, body = get(f"{base}/api/contents/notebooks/00_start_here/00_start_here.ipynb?token={token}")
        assert status == 200 and json.loads(body)["type"] == "notebook"
        # the nbgrader extensions are enabled and see the course (formgrader lists assignments)
        status, body = get(f"{base}/formgrader/api/assignments?token={token}")
        names = {a["name"] for a in json.loads(body)}
        assert set(assignments()) <= names
        # no nbgrader exchange is used: no warning on the page (nbgrader's default
        # exchange folder does not exist here), and releasing through one says what to do
        status, page = get(f"{base}/formgrader/manage_assignments?token={token}")
        assert status == 200 and b"warning-exchange" not in page
        request = urllib.request.Request(
            f"{base}/formgrader/api/assignment/01_dot_products/release"
            f"?token={token}", data=b"{}", method="POST")
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
            result = json.loads(response.read())
        assert result["success"] is False
        assert "make bundle" in result["error"] + result.get("log", "")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    logged = proc.stdout.read().decode(errors="replace")
    # formgrader logged "Unwritable directory ... exchange" on every page before
    assert "Unwritable directory" not in logged, logged[-3000:]
