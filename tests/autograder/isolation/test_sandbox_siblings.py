"""Children of the grader never share an identity (autograder/isolation/confine.py).

Each child is its own user: a root grader runs it as host uid ``CHILD_UID_BASE`` + the
pid of its supervising process, inside a user namespace of its own (a non-root grader's
children each get their own user namespace), and every child joins a new session
keyring. These tests check it with the seccomp filter turned off
(``AUTOGRADER_SECCOMP=off``), so that what they show does not rest on the filter: a key
left by one child is found by no other, a child filling its process table leaves
another's alone, and in the fallback mode (no namespaces) a child cannot signal a
sibling or read its files. Each would succeed if all children were ``nobody``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from autograder.isolation import client, confine, seccomp
from sandbox_jobs import run_cells as _run, stdout_lines as _stdout

pytestmark = pytest.mark.slow

KEY_NR = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]  # add_key, keyctl
#: Keyrings a child could leave a key in: session, user, user-session.
KEYRINGS = {"session": -3, "user": -4, "user-session": -5}

STORE = r"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
stored = {}
for name, ring in %(rings)r.items():
    r = libc.syscall(%(add_key)d, b"user", (%(desc)r + name).encode(), b"the reference", 13, ring)
    stored[name] = r > 0
print(json.dumps(stored))
"""

SEARCH = r"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = {}
for name, ring in %(rings)r.items():
    # KEYCTL_SEARCH (10) in that keyring and the keyrings it links to
    r = libc.syscall(%(keyctl)d, 10, ring, b"user", (%(desc)r + name).encode(), 0)
    found[name] = r > 0
print(json.dumps(found))
"""


@pytest.fixture
def unfiltered_worker(monkeypatch):
    monkeypatch.setenv(seccomp.DISABLE_ENV, "off")
    worker = client.Worker()
    yield worker
    worker.close()


def test_the_filter_can_be_turned_off_for_these_tests(monkeypatch):
    monkeypatch.setenv(seccomp.DISABLE_ENV, "off")
    assert seccomp.available()[0] is False and seccomp.DISABLE_ENV in seccomp.available()[1]


def test_a_key_left_by_one_child_is_found_by_no_other_even_without_seccomp(
        helper_copies, unfiltered_worker):
    """Without the filter a notebook can store keys. Were every child `nobody` with the
    grader's session keyring, the isolated re-run (or the next student) would find
    them; here each child has its own user (namespace) and session keyring."""
    desc = f"course-secret-{uuid.uuid4().hex[:12]}-"
    names = {"rings": KEYRINGS, "desc": desc, "add_key": KEY_NR[0], "keyctl": KEY_NR[1]}
    _, lines = _run([STORE % names, SEARCH % names], helper_copies, worker=unfiltered_worker)
    stored, found_by_itself = (json.loads(text) for text in _stdout(lines))
    assert stored == {name: True for name in KEYRINGS}, "the filter was not off"
    assert found_by_itself == {name: True for name in KEYRINGS}
    _, lines = _run([SEARCH % names], helper_copies, worker=unfiltered_worker)
    assert json.loads(_stdout(lines)[0]) == {name: False for name in KEYRINGS}
    # ... nor by the grader, whose session keyring the children inherited
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    for name, ring in KEYRINGS.items():
        assert libc.syscall(KEY_NR[1], 10, ring, b"user", (desc + name).encode(), 0) < 0


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rfind(")") + 2:].split()[1])
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, parent in parents.items() if parent == p]
        found += kids
        frontier += kids
    return found


def _identity(pid: int) -> tuple[int, str] | None:
    """(real uid on the host, user namespace) of a process, None if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(status.split("\nUid:")[1].split()[0]), os.readlink(f"/proc/{pid}/ns/user")
    except (OSError, IndexError):
        return None


def _learner_processes(worker: client.Worker, at_least: int = 1,
                       deadline: float = 30.0) -> dict[int, tuple[int, str]]:
    """The worker's descendants that are not the grader's own user (the learner's)."""
    mine = (os.getuid(), os.readlink("/proc/self/ns/user"))
    end = time.monotonic() + deadline
    while True:
        seen = {p: _identity(p) for p in _descendants(worker._proc.pid)}
        seen = {p: i for p, i in seen.items() if i is not None and i != mine}
        if len(seen) >= at_least or time.monotonic() > end:
            return seen
        time.sleep(0.05)


def _started(*workers: client.Worker) -> None:
    """Start each worker (a first job), so that its process exists to be looked at."""
    for worker in workers:
        worker.run({"kind": "notebook", "cells": [], "cell_timeout": 5, "timeout": 20},
                   {"root_mount": str(worker.home / "root"), "helpers_parent": str(worker.home),
                    "data_dir": None, "fallback_work": str(worker.home / "fw-start")},
                   confine.Limits())


def _in_background(fn) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_two_children_running_at_once_are_two_users(helper_copies):
    """Two workers (two students graded at once, --jobs 2): their children differ in host
    uid (root grader) and in user namespace; inside, each is `nobody`."""
    workers = [client.Worker(), client.Worker()]
    replies = {}
    try:
        _started(*workers)
        threads = [_in_background(lambda w=w: replies.setdefault(
            w, _run(["import os, time\nprint(os.getuid())\ntime.sleep(4)"], helper_copies,
                    worker=w)))
            for w in workers]
        seen = [_learner_processes(w) for w in workers]
        for thread in threads:
            thread.join(60)
    finally:
        for w in workers:
            w.close()
    assert all(seen), seen
    identities = [set(s.values()) for s in seen]
    assert all(len(i) == 1 for i in identities), identities      # one per child
    (uid_a, ns_a), (uid_b, ns_b) = identities[0].pop(), identities[1].pop()
    assert ns_a != ns_b
    if os.getuid() == 0:
        assert uid_a != uid_b
        assert {uid_a, uid_b} <= set(range(confine.CHILD_UID_BASE,
                                           confine.CHILD_UID_BASE + (1 << 22)))
        inside = {_stdout(lines)[0].strip() for _, lines in replies.values()}
        assert inside == {str(confine.NOBODY)}


FILL = r"""
import os, time
kids = []
for _ in range(80):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print(len(kids))
time.sleep(8)
"""

FORK_SOME = r"""
import os
made = 0
for _ in range(20):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    made += 1
print(made)
"""


def test_a_child_filling_its_process_limit_leaves_another_child_its_own(
        helper_copies, unfiltered_worker):
    """RLIMIT_NPROC counts a user's processes: were every child `nobody`, one student's
    63 sleeping processes would leave no fork to the student graded beside it."""
    if os.getuid() != 0:
        pytest.skip("only a root grader changes the children's uid (and sets RLIMIT_NPROC)")
    other = client.Worker()
    try:
        _started(unfiltered_worker, other)
        filling = _in_background(lambda: _run([FILL], helper_copies, worker=unfiltered_worker,
                                              timeout=60, cell_timeout=50))
        hog = _learner_processes(unfiltered_worker, at_least=60)
        assert len(hog) >= 60, len(hog)          # the first child holds its whole limit
        _, lines = _run([FORK_SOME], helper_copies, worker=other)
        assert _stdout(lines) == ["20\n"]
        filling.join(60)
    finally:
        other.close()
        unfiltered_worker.close()


# ---------------------------------------------------------------------------------------
# The fallback mode (no namespaces): a uid per child is what keeps siblings apart.
# ---------------------------------------------------------------------------------------


def _fallback_child(tmp: Path, name: str, action, report: int) -> int:
    """Fork a supervisor (A) that forks a child (B) confined in fallback mode as a root
    grader's child, which then runs ``action()`` and writes its result to ``report``.
    Returns A's pid. The forked child runs the Python already loaded here, so the test
    lets it drop root even where this interpreter is not world-readable."""
    work = tmp / f"work-{name}"
    pid = os.fork()
    if pid == 0:   # pragma: no cover - runs in the child
        code = 1
        try:
            ident = confine.ChildIdentity("fallback")
            inner = os.fork()
            if inner == 0:
                try:
                    ident.in_child()
                    confine.world_can_run_python = lambda: True
                    conf = confine.Confinement("fallback", str(tmp / "root"), str(tmp),
                                               fallback_work=str(work))
                    confine.confine_inner(conf, ident)
                    os.write(report, (json.dumps(action()) + "\n").encode())
                finally:
                    os._exit(0)
            ident.in_parent(inner)
            os.waitpid(inner, 0)
            code = 0
        finally:
            os._exit(code)
    return pid


@pytest.fixture
def open_tmp():
    """A temp folder every user may pass through (pytest's own is root-only), so that
    only the children's own permissions stand between them."""
    path = Path(tempfile.mkdtemp(prefix="agr-siblings-", dir="/tmp"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_fallback_siblings_cannot_signal_or_read_each_other(open_tmp):
    if os.getuid() != 0:
        pytest.skip("a non-root grader's fallback children keep its uid (documented)")
    tmp_path = open_tmp
    r, w = os.pipe()
    go_r, go_w = os.pipe()

    def victim():
        Path("answer.txt").write_text("another student's answer")
        os.read(go_r, 1)                   # alive until the attacker has tried
        return {"who": "victim", "pid": os.getpid(), "uid": os.getuid(), "cwd": os.getcwd()}

    a = _fallback_child(tmp_path, "victim", victim, w)
    victim_b = None
    end = time.monotonic() + 30
    while victim_b is None and time.monotonic() < end:
        kids = [p for p in _descendants(a) if (_identity(p) or (0,))[0] != 0]
        victim_b = kids[0] if kids else None
        time.sleep(0.02)
    assert victim_b, "the victim's child did not start"
    victim_work = tmp_path / "work-victim"
    while not (victim_work / "answer.txt").exists() and time.monotonic() < end:
        time.sleep(0.02)

    def attacker():
        seen = {"who": "attacker", "uid": os.getuid()}
        for what, attempt in (("signal", lambda: os.kill(victim_b, 0)),
                              ("proc", lambda: Path(f"/proc/{victim_b}/environ").read_bytes()),
                              ("file", lambda: (victim_work / "answer.txt").read_text()),
                              ("list", lambda: os.listdir(victim_work))):
            try:
                attempt()
                seen[what] = "done"
            except OSError as exc:
                seen[what] = type(exc).__name__
        return seen

    b = _fallback_child(tmp_path, "attacker", attacker, w)
    os.waitpid(b, 0)
    os.write(go_w, b"g")
    os.waitpid(a, 0)
    os.close(w)
    with os.fdopen(r) as f:
        results = {d["who"]: d for d in map(json.loads, f.read().splitlines())}
    attacker_seen, victim_seen = results["attacker"], results["victim"]
    assert attacker_seen["uid"] != victim_seen["uid"]
    assert {attacker_seen["uid"], victim_seen["uid"]}.isdisjoint({0, confine.NOBODY})
    assert {k: attacker_seen[k] for k in ("signal", "proc", "file", "list")} == {
        "signal": "PermissionError", "proc": "PermissionError", "file": "PermissionError",
        "list": "PermissionError"}, attacker_seen
