"""Grading inside an unprivileged user namespace, like a Kubernetes pod with
``hostUsers: false`` (issue 21): the grader either grades correctly (full marks for the
right answers, less for a typical mistake) with student code confined, or refuses
before any notebook runs, with a non-zero status and a message naming what is missing.
Never grading silently without confinement, never crashing every notebook.

Three namespaces, each also with ``--mount --pid --fork`` as a pod has:

* ``unshare --user --map-root-user``: root inside, one id mapped (``0 0 1``). The grader
  as root gives each child a uid of its own (``0x70000000`` + pid) or ``nobody``; none is
  mapped, so it refuses and names them (before issue 21 it said "no Linux namespaces
  here", which was wrong, and suggested the very ``unshare`` check that passes).
* root inside with 65536 ids mapped (``0 0 1; 1 100001 65535``: what a pod with
  ``hostUsers: false`` gets; written by the test, so root only): ``nobody`` is mapped but
  the children's uids are not. Before issue 21 the grader went on and every notebook
  "crashed" (exit status 0); now it refuses and names the children's uids.
* ``unshare --user --map-user=1000 --map-group=1000``: a non-root grader inside (a pod's
  ``securityContext.runAsUser: 1000``): namespace mode, and the class is graded right.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from benchmark_term import canvas_download

ASSIGNMENT = "01_dot_products"
DEADLINE_S = 900          # one grading of two small notebooks, on a loaded machine
POD = ["--mount", "--pid", "--fork"]


def userns_works() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    r = subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True,
                       text=True, timeout=60)
    return None if r.returncode == 0 else (
        f"no unprivileged user namespaces here: unshare --user --map-root-user: "
        f"{r.stderr.strip()}")


NO_USERNS = userns_works()
needs_userns = pytest.mark.skipif(bool(NO_USERNS), reason=str(NO_USERNS))


@pytest.fixture(scope="module")
def two_students(tmp_path_factory) -> Path:
    """A class of two: 4000 right answers, 4001 a typical mistake (one notebook each)."""
    root = tmp_path_factory.mktemp("userns-class")
    canvas_download(root / "download.zip", 2, [ASSIGNMENT],
                    datetime(2026, 10, 1, 23, 59, tzinfo=timezone.utc))
    r = subprocess.run([sys.executable, "-m", "autograder", "collect", "download.zip",
                        "--out", "submissions"], cwd=root, capture_output=True, text=True,
                       timeout=DEADLINE_S)
    assert r.returncode == 0, r.stderr
    return root / "submissions"


def in_namespace(prefix: list[str], args: list[str], cwd: Path,
                 id_map: str | None = None) -> subprocess.CompletedProcess:
    """``args`` run under ``prefix`` (an ``unshare`` command line). With ``id_map``,
    ``unshare --user`` without a map, then the map written from outside (as root) into
    ``/proc/PID/{uid,gid}_map`` before the command starts."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if id_map is None:
        return subprocess.run([*prefix, *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=DEADLINE_S)
    proc = subprocess.Popen([*prefix, "--", "sh", "-c", 'read go && exec "$@"', "sh", *args],
                            cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        ours = os.readlink("/proc/self/ns/user")       # "user:[inode]"
        end = time.monotonic() + 60                     # until unshare(2) is done
        while os.readlink(f"/proc/{proc.pid}/ns/user") == ours:
            assert time.monotonic() < end and proc.poll() is None, "unshare --user did not"
            time.sleep(0.05)
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{proc.pid}/{name}").write_text(id_map)
        out, err = proc.communicate("go\n", timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def grade_in(prefix: list[str], submissions: Path, out: Path, id_map: str | None = None):
    return in_namespace(prefix, [sys.executable, "-m", "autograder", "grade", str(submissions),
                                 "--out", str(out), "--jobs", "1"], submissions.parent, id_map)


def graded_right_or_refused_clearly(r: subprocess.CompletedProcess, out: Path) -> str:
    """"graded" (and right) or "refused" (and said why); anything else fails."""
    if r.returncode == 0:
        assert "STUDENT CODE RUNS AS ROOT" not in r.stderr
        with open(out / "summary.csv", newline="") as f:
            rows = {row["student_id"]: row for row in csv.DictReader(f)
                    if row["assignment"] == ASSIGNMENT}
        assert rows["4000"]["status"] == "ok", rows
        assert float(rows["4000"]["points"]) == float(rows["4000"]["max_points"]) > 0
        assert 0 < float(rows["4001"]["points"]) < float(rows["4001"]["max_points"]), rows
        return "graded"
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert not (out / "grades.csv").exists()
    message = r.stderr
    assert "refusing to grade" in message and "user namespace" in message, message
    assert "uid_map" in message and "0x70000000" in message, message   # what is missing
    assert "run the grader as a non-root user" in message, message     # and what to do
    return "refused"


@pytest.mark.slow
@needs_userns
@pytest.mark.parametrize("pod", [False, True], ids=["user", "user-mount-pid"])
def test_root_with_one_id_mapped_refuses_and_names_the_missing_ids(two_students, tmp_path,
                                                                   pod):
    prefix = ["unshare", "--user", "--map-root-user", *(POD if pod else [])]
    r = grade_in(prefix, two_students, tmp_path / "out")
    assert graded_right_or_refused_clearly(r, tmp_path / "out") == "refused"
    assert "the children's uids and 'nobody'" in r.stderr, r.stderr


@pytest.mark.slow
@needs_userns
@pytest.mark.skipif(os.getuid() != 0, reason="writing a map of 65536 ids takes root")
def test_root_with_a_pods_65536_ids_refuses_instead_of_crashing_every_notebook(
        two_students, tmp_path):
    r = grade_in(["unshare", "--user", *POD], two_students, tmp_path / "out",
                 id_map="0 0 1\n1 100001 65535\n")
    assert graded_right_or_refused_clearly(r, tmp_path / "out") == "refused"
    assert "lack the children's uids, the users" in r.stderr, r.stderr   # nobody is mapped


@pytest.mark.slow
@needs_userns
def test_non_root_grader_in_a_user_namespace_grades_confined(two_students, tmp_path):
    prefix = ["unshare", "--user", "--map-user=1000", "--map-group=1000", *POD]
    mode = in_namespace(prefix, [sys.executable, "-c", "from autograder.isolation import "
                                 "safety; print(safety.check_safe_to_grade())"],
                        two_students.parent)
    assert mode.returncode == 0 and mode.stdout.split()[-1] == "namespaces", mode
    r = grade_in(prefix, two_students, tmp_path / "out")
    assert graded_right_or_refused_clearly(r, tmp_path / "out") == "graded", r.stderr


def test_which_ids_a_root_graders_namespace_lacks(monkeypatch):
    """The check itself, on the maps above and on a host's full map (instant)."""
    from autograder.isolation import safety

    monkeypatch.setattr(safety.os, "getuid", lambda: 0)
    maps = {"0 0 4294967295": None, "0 0 1": "the children's uids and 'nobody'",
            "0 0 1\n1 100001 65535": "the children's uids,",
            "0 0 65536\n1879048192 200000 4194304": None}
    for text, missing in maps.items():
        extents = [(int(f[0]), int(f[2])) for f in map(str.split, text.splitlines())]
        monkeypatch.setattr(safety, "_id_map", lambda name, e=extents: e)
        monkeypatch.setattr(safety.Path, "read_text",
                            lambda self, t=text: "4194304" if "pid_max" in str(self) else t)
        message = safety.unmapped_child_ids()
        if missing is None:
            assert message is None, text
        else:
            assert f"lack {missing}" in message and "runAsUser" in message, message
    monkeypatch.setattr(safety.os, "getuid", lambda: 1000)
    assert safety.unmapped_child_ids() is None                 # a non-root grader
