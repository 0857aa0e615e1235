"""Isolation of student code and the forking worker (autograder/isolation/).

The worker runs jobs in confined children; these tests send it small jobs whose cells
probe the confinement (files, network, processes, privileges, limits) and report what
they saw, and check the value codec and the stripped ``helpers`` copies on their own.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.isolation import (client, clock, confine, executor, helpers_copy, runners,
                                  safety, wire)
from sandbox_jobs import run_cells as _run, stdout_lines as _stdout

pytestmark = pytest.mark.slow


# ---------------------------------------------------------------------------------------
# Value codec
# ---------------------------------------------------------------------------------------


def test_codec_round_trip_keeps_values_types_and_structure():
    rng = np.random.default_rng(5)
    value = (np.arange(6.0).reshape(2, 3), [1, 2.5, None, True, "s"],
             {"E": np.eye(2), "blocks": [{"W": np.ones((2, 2), dtype=np.float32)}]},
             np.float64(3.5), np.int64(7), 2**70, np.array([True, False]), rng,
             {("K", 1), ("V", 2)}, frozenset({3}))
    back = wire.decode(wire.encode(value))
    assert isinstance(back, tuple) and len(back) == len(value)
    np.testing.assert_array_equal(back[0], value[0])
    assert back[1] == value[1]
    np.testing.assert_array_equal(back[2]["blocks"][0]["W"], value[2]["blocks"][0]["W"])
    assert back[2]["blocks"][0]["W"].dtype == np.float32
    assert back[3] == 3.5 and back[4] == 7 and back[5] == 2**70
    assert back[6].dtype == bool
    # the generator continues exactly where the original is
    assert np.array_equal(back[7].integers(0, 1000, 20), rng.integers(0, 1000, 20))
    assert back[8] == {("K", 1), ("V", 2)} and back[9] == frozenset({3})


def test_codec_marks_objects_that_cannot_cross():
    back = wire.decode(wire.encode([len, object(), np.array([{"a": 1}], dtype=object)]))
    assert all(isinstance(v, wire.Unencodable) for v in back)


def test_decode_refuses_pickles_oversize_and_garbage():
    buf = io.BytesIO()
    np.savez(buf, __structure__=np.frombuffer(b'{"__nd__": "a0"}', dtype=np.uint8),
             a0=np.array([object()], dtype=object))
    with pytest.raises(wire.DecodeError):
        wire.decode(buf.getvalue())
    with pytest.raises(wire.DecodeError):
        wire.decode(wire.encode(np.zeros(1000)), max_bytes=1000)
    with pytest.raises(wire.DecodeError):
        wire.decode(b"not a zip file")
    # a zip whose members claim to be huge (a "zip bomb") is refused before reading
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("__structure__.npy", b"\0" * 5_000_000)
    with pytest.raises(wire.DecodeError):
        wire.decode(bomb.getvalue(), max_bytes=1_000_000)
    with pytest.raises(wire.DecodeError):
        wire.unb64("%%%")


# ---------------------------------------------------------------------------------------
# The helpers copies
# ---------------------------------------------------------------------------------------


def _run_python(code: str, path: Path) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(path)}
    return subprocess.run([sys.executable, "-I", "-c",
                           f"import sys; sys.path.insert(0, {str(path)!r})\n" + code],
                          capture_output=True, text=True, env=env, cwd=path)


def test_an_exercises_copy_is_a_students_with_its_own_function_refused(tmp_path):
    """softmax's run: every exercise's reference is gone (a stub that answers with the
    learner's own function or names the exercise), softmax's own says it is hidden while
    the learner's is graded, the course's other code stays."""
    dest = helpers_copy.prepare_helpers(tmp_path, strip="softmax")
    ref = (dest / "helpers" / "reference.py").read_text()
    original = (REPO_ROOT / "helpers" / "reference.py").read_text()
    for line in ("z_max = z.max(axis=axis, keepdims=True)", "np.sqrt(var_u + eps_u)"):
        assert line in original and line not in ref, line
    assert not (dest / "helpers" / "mistakes.py").exists()
    assert "def cases" not in (dest / "helpers" / "checks.py").read_text()
    out = _run_python(
        "import helpers\n"
        "from helpers.checks import check\n"
        "print(helpers.__file__)\n"
        "try:\n    helpers.dot([1, 2], [3, 4])\nexcept NotImplementedError as e:\n"
        "    print(str(e).splitlines()[0])\n"
        "try:\n    helpers.softmax([1.0, 2.0])\nexcept RuntimeError as e:\n    print(e)\n"
        "print(helpers.BLOCK_PARAM_SHAPES['W1'])\n",
        dest)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(str(dest))
    assert "exercise dot of notebook 01_dot_products" in lines[1]
    assert helpers_copy.REFERENCE_STUB_MARK in lines[2]
    assert lines[3] == "('d', 'd_ff')"


def test_prepare_helpers_refuses_an_unknown_function(tmp_path):
    with pytest.raises(ValueError):
        helpers_copy.prepare_helpers(tmp_path, strip="no_such_function")


# ---------------------------------------------------------------------------------------
# Jobs in the worker
# ---------------------------------------------------------------------------------------


PROBE = r"""
import json, os, socket, sys
seen = {"cwd": os.getcwd(), "uid": os.getuid(), "ppid": os.getppid(),
        "root": sorted(os.listdir("/")), "proc": os.path.exists("/proc/self")}
for name, path in [("repo", %(repo)r), ("solutions", %(solutions)r), ("home", "/root"),
                   ("work", "/work")]:
    try:
        seen[name] = sorted(os.listdir(path))[:5]
    except OSError as e:
        seen[name] = type(e).__name__
for name, path in [("write_usr", "/usr/owned"), ("write_venv", %(venv)r),
                   ("write_work", "owned.txt")]:
    try:
        open(path, "w").write("x")
        seen[name] = "written"
    except OSError as e:
        seen[name] = type(e).__name__
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    seen["network"] = "connected"
except OSError as e:
    seen["network"] = type(e).__name__
import helpers
seen["helpers"] = helpers.__file__
print(json.dumps(seen))
""" % {"repo": str(REPO_ROOT), "solutions": str(SOLUTIONS_DIR),
       "venv": str(Path(sys.prefix) / "owned.txt")}


def test_child_sees_a_private_read_only_world(helper_copies):
    worker = client.get_worker()
    reply, lines = _run([PROBE], helper_copies)
    assert reply["exit"] == 0
    seen = json.loads(_stdout(lines)[0])
    assert seen["write_usr"] != "written" and seen["write_venv"] != "written"
    assert seen["write_work"] == "written"
    assert not Path(sys.prefix, "owned.txt").exists()
    assert seen["network"] != "connected"
    if worker.mode != "namespaces":
        pytest.skip("this machine offers no namespaces: the fallback mode is tested below")
    assert seen["cwd"] == confine.WORK_PATH
    assert seen["solutions"] == "FileNotFoundError"
    assert seen["repo"] == [".venv"]                   # only the virtual environment
    assert seen["home"] in ("FileNotFoundError", "PermissionError") or \
        "autograder" not in seen["home"]
    assert "briefs" not in seen["work"]
    assert seen["ppid"] == 0 and not seen["proc"]
    # Only what the sandbox builds, plus the top folder of each read-only source (the
    # virtual environment may live anywhere: /work/..., /check/..., /tmp/...).
    mounted = {Path(src).parts[1] for src in confine._read_only_sources()}
    built = {"bin", "course", "data", "dev", "etc", "lib", "lib32", "lib64", "libx32",
             "sbin", "tmp", "work"}
    assert set(seen["root"]) <= built | mounted
    assert seen["helpers"].startswith(confine.COURSE_PATH)
    if os.getuid() == 0:
        assert seen["uid"] == confine.NOBODY


def test_killing_everything_reachable_leaves_the_worker_alive(helper_copies):
    attacks = ["import os\nos.kill(os.getppid(), 9)",
               "import os\nos.killpg(0, 9)",
               "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass",
               "import os\nos.kill(os.getpid(), 9)\nos.abort()"]
    for attack in attacks:
        reply, _ = _run([attack, "print('after')"], helper_copies)
        assert "exit" in reply
    reply, lines = _run(["print(6 * 7)"], helper_copies)
    assert _stdout(lines) == ["42\n"]


def test_cell_timeout_stops_the_notebook_run(helper_copies):
    """The cell limit counts the child's CPU time: a busy loop spends it."""
    reply, lines = _run(["while True:\n    pass", "print('never')"], helper_copies,
                        cell_timeout=0.5)
    cells = [line for line in lines if "cell" in line]
    assert len(cells) == 1 and cells[0]["timeout"] is True
    assert cells[0]["error"]["ename"] == "Timeout"


def test_job_deadline_kills_a_child_that_ignores_the_timer(helper_copies):
    code = "import signal\nsignal.signal(signal.SIGPROF, signal.SIG_IGN)\nwhile True:\n    pass"
    t0 = time.monotonic()
    reply, lines = _run([code], helper_copies, cell_timeout=0.5, timeout=2)
    assert reply["exit"] == executor.EXIT_TIMEOUT
    assert time.monotonic() - t0 < clock.backstop(2)   # 2 s of its own time: sooner idle
    assert not any(line.get("done") for line in lines)


def test_a_silent_child_is_stopped_after_its_cell_limit_and_the_grace(helper_copies):
    """A cell that blocks SIGPROF (its timer) and waits says nothing: the worker stops the
    child once it has been silent for the cell limit plus STEP_GRACE, not at the job's
    deadline, and says so in the reply; the cells before it were reported."""
    code = ("import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})\n"
            "time.sleep(10_000)")
    reply, lines = _run(["print('before')", code, "print('never')"], helper_copies,
                        cell_timeout=0.5, timeout=600)
    assert reply["exit"] == executor.EXIT_TIMEOUT
    assert reply["stalled"] == 0.5 + executor.STEP_GRACE
    assert reply["seconds"] < 300                  # not the job's deadline (generous)
    assert _stdout(lines) == ["before\n"]
    assert not any(line.get("done") for line in lines)


def test_a_child_that_reports_in_time_is_not_stalled(helper_copies):
    """Cells that each end within their limit (1 s of 2), together longer than the limit
    plus the grace: no stall, since the quiet time restarts with every line."""
    cells = ["import time\ntime.sleep(1)"] * 8
    assert 8 * 1 > 2 + executor.STEP_GRACE
    reply, lines = _run(cells, helper_copies, cell_timeout=2, timeout=300)
    assert "stalled" not in reply and any(line.get("done") for line in lines)
    assert [line.get("timeout") for line in lines if "cell" in line] == [False] * 8


def test_memory_limit(helper_copies):
    reply, lines = _run(["x = bytearray(2 * 1024 ** 3)", "print('next')"], helper_copies,
                        limits=confine.Limits(memory_mb=1024))
    cells = [line for line in lines if "cell" in line]
    assert cells[0]["memory"] is True and len(cells) == 1


def test_output_is_capped_per_cell(helper_copies):
    reply, lines = _run(["print('x' * 10_000_000)\nimport sys\nsys.stderr.write('y' * 10**7)"],
                        helper_copies)
    cell = [line for line in lines if "cell" in line][0]
    for key in ("stdout", "stderr"):
        assert runners.OUTPUT_CAP <= len(cell[key]) < runners.OUTPUT_CAP + 100
        assert "more characters of output not kept" in cell[key]


def test_fork_bomb_is_contained(helper_copies):
    code = ("import os\nn = 0\nfor _ in range(500):\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        import time\n"
            "        time.sleep(60)\n        os._exit(0)\n    n += 1\nprint(n)")
    reply, lines = _run([code], helper_copies, timeout=30)
    if os.getuid() == 0 and client.get_worker().mode == "namespaces":
        assert int(_stdout(lines)[0]) < 100       # RLIMIT_NPROC as nobody
    # and nothing the bomb started outlives the job (its PID namespace is gone)
    reply, lines = _run(["print('fine')"], helper_copies)
    assert _stdout(lines) == ["fine\n"]


def test_test_cell_tracebacks_name_the_cell_but_not_its_source(helper_copies):
    worker = client.get_worker()
    conf = {"root_mount": str(worker.home / "root"), "helpers_parent": helper_copies[None],
            "data_dir": None, "fallback_work": str(worker.home / "fw-tb")}
    job = {"kind": "notebook", "cell_timeout": 5, "timeout": 20, "cells": [
        {"index": 0, "kind": "answer", "source": "def f(x):\n    return 1 / x"},
        {"index": 1, "kind": "test", "grade_id": "test_f",
         "source": "secret_value = 0\nassert f(secret_value) == 1"}]}
    lines = client.parse_lines(worker.run(job, conf, confine.Limits())["output"])
    err = [line for line in lines if line.get("cell") == 1][0]["error"]
    assert err["ename"] == "ZeroDivisionError"
    assert "test cell test_f" in err["traceback"]
    assert "secret_value" not in err["traceback"]
    assert "return 1 / x" in err["traceback"]          # the learner's own line is shown


def test_calls_job_returns_outputs_and_hides_the_reference(helper_copies):
    cases = [((np.array([1.0, 2.0]),), {}), ((np.array([[0.0, 1.0]]),), {"axis": -1})]
    payloads = [wire.b64(wire.encode(c)) for c in cases]
    own = "import numpy as np\ndef softmax(z, axis=-1):\n    e = np.exp(z - np.max(z, axis=axis, keepdims=True))\n    return e / e.sum(axis=axis, keepdims=True)"
    reply, lines = _run([own], helper_copies, kind="calls", strip="softmax",
                        function="softmax", cases=payloads, case_timeout=2)
    got = [wire.decode(wire.unb64(line["value"])) for line in lines if "case" in line]
    np.testing.assert_allclose(got[0], np.exp([1, 2]) / np.exp([1, 2]).sum())
    cheat = "import helpers\ndef softmax(z, axis=-1):\n    return helpers.reference.softmax(z, axis)"
    reply, lines = _run([cheat], helper_copies, kind="calls", strip="softmax",
                        function="softmax", cases=payloads, case_timeout=2)
    errors = [line["error"] for line in lines if "case" in line]
    assert len(errors) == 2 and all(helpers_copy.REFERENCE_STUB_MARK in e for e in errors)


def test_parse_lines_ignores_garbage():
    text = '{"cell": 0}\nnot json\n[1, 2]\n{"done": true}\n' + "x" * 100
    assert client.parse_lines(text) == [{"cell": 0}, {"done": True}]


def test_fallback_mode_still_grades_and_hides_the_reference(helper_copies, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_ISOLATION", "fallback")
    # Trusted code only: as root where Python is not world-readable (pyenv under /root)
    # the fallback child cannot drop to nobody and refuses unless the instructor opts in.
    monkeypatch.setenv(confine.ALLOW_ROOT_FALLBACK_ENV, "1")
    worker = client.Worker()
    try:
        reply, lines = _run(["import os, helpers\nprint(os.getcwd())\nprint(helpers.__file__)\n"
                             "print(helpers.dot([1, 2], [3, 4]))"],
                            helper_copies, worker=worker)
        assert worker.mode == "fallback"
        cwd, helpers_file, value = _stdout(lines)[0].splitlines()
        assert cwd.startswith(str(worker.home)) and helpers_file.startswith(helper_copies[None])
        assert value == "11.0"
        reply, lines = _run(["import helpers\ndef softmax(z, axis=-1):\n"
                             "    return helpers.softmax(z, axis)"], helper_copies,
                            worker=worker, kind="calls", strip="softmax", function="softmax",
                            cases=[wire.b64(wire.encode(((np.ones(2),), {})))],
                            case_timeout=2)
        assert helpers_copy.REFERENCE_STUB_MARK in [line for line in lines if "case" in line][0]["error"]
        reply, lines = _run(["import os\nos.kill(os.getppid(), 9)"], helper_copies, worker=worker)
        reply, lines = _run(["print('alive')"], helper_copies, worker=worker)
        assert _stdout(lines) == ["alive\n"]
    finally:
        worker.close()
    assert not worker.home.exists()


def test_probe_mode_on_this_machine():
    """Namespaces are found where they work (as root or with user namespaces)."""
    mode = safety.probe_mode()
    works = subprocess.run(["unshare", "--mount", "--net", "--map-root-user", "true"],
                           capture_output=True).returncode == 0 if os.path.exists(
        "/usr/bin/unshare") else False
    if works:
        assert mode == "namespaces"
    else:
        assert mode in ("namespaces", "fallback")


NON_ROOT_SCRIPT = r"""
import json, os, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from autograder import engine
from autograder.isolation import client
sol = Path({solution!r})
nb = json.loads(sol.read_text())
for c in nb["cells"]:
    if c["metadata"].get("nbgrader", {{}}).get("grade_id") == "dot":
        c["source"] = ("import os\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass\n"
                       "def dot(a, b):\n    return float(sum(x * y for x, y in zip(a, b)))\n")
sub = Path({sub!r})
sub.write_text(json.dumps(nb))
r = engine.grade_notebook(sub, "01_dot_products")
print(json.dumps({{"uid": os.getuid(), "mode": client.get_worker().mode, "status": r.status,
                  "points": {{c.grade_id: c.points for c in r.cells}}}}))
"""


@pytest.mark.skipif(os.getuid() != 0 or not all(os.path.exists(p) for p in (
    "/usr/bin/unshare", "/usr/bin/setpriv")), reason="needs root to switch to an unprivileged user")
def test_an_unprivileged_grader_uses_user_namespaces():
    """Graded as `nobody`: the child enters a user namespace; kill(-1) spares the grader."""
    # pytest's tmp (and the TMPDIR it gives each test) is root-only
    tmp_path = Path(tempfile.mkdtemp(prefix="agr-nobody-", dir="/tmp"))
    try:
        _grade_as_nobody(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _grade_as_nobody(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o777)
    script = tmp_path / "grade_as_nobody.py"
    sub = tmp_path / "sub" / "01_dot_products" / "01_dot_products.ipynb"
    sub.parent.mkdir(parents=True)
    os.chmod(sub.parent, 0o777)
    os.chmod(sub.parent.parent, 0o777)
    script.write_text(NON_ROOT_SCRIPT.format(
        repo=str(REPO_ROOT), sub=str(sub),
        solution=str(SOLUTIONS_DIR / "01_dot_products" / "01_dot_products.ipynb")))
    os.chmod(script, 0o644)
    # The interpreter may live under /root (pyenv), which nobody cannot enter: in a
    # private mount namespace, show /root as an empty world-readable folder that holds
    # only the interpreter's tree.
    prefix = Path(sys.base_prefix).resolve()
    hold = tmp_path / "hold"
    hold.mkdir()
    setup = ""
    if prefix.is_relative_to("/root"):
        top = Path("/root") / prefix.relative_to("/root").parts[0]
        setup = (f"mount --bind {top} {hold} && mount -t tmpfs -o mode=755 tmpfs /root && "
                 f"mkdir -p {top} && mount --bind {hold} {top} && ")
    cmd = (setup + f"cd {tmp_path} && setpriv --reuid=65534 --regid=65534 --clear-groups "
           f"env HOME={tmp_path} TMPDIR={tmp_path} {sys.executable} {script}")
    out = subprocess.run(["unshare", "--mount", "sh", "-c", cmd], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["uid"] == confine.NOBODY and seen["mode"] == "namespaces"
    assert seen["status"] == "ok"
    solution = json.loads((SOLUTIONS_DIR / "01_dot_products" / "01_dot_products.ipynb").read_text())
    expected = {c["metadata"]["nbgrader"]["grade_id"]: float(c["metadata"]["nbgrader"].get("points", 0))
                for c in solution["cells"] if c["metadata"].get("nbgrader", {}).get("grade")
                and not c["metadata"]["nbgrader"].get("solution")}
    assert {k: v for k, v in seen["points"].items() if k in expected} == expected


def test_a_late_reply_is_dropped_never_taken_for_the_next_job(helper_copies):
    """Every request carries an id; a reply left over from a request whose reader gave
    up (here: written to the worker behind run()'s back) is read and dropped."""
    import json as _json
    from dataclasses import asdict

    worker = client.get_worker()
    conf = {"root_mount": str(worker.home / "root"), "helpers_parent": helper_copies[None],
            "data_dir": None, "fallback_work": str(worker.home / "fw-late")}

    def job(text):
        return {"kind": "notebook", "cells": [{"index": 0, "kind": "code",
                                               "source": f"print({text!r})"}],
                "cell_timeout": 20, "timeout": 60}

    worker.run(job("warm"), conf, confine.Limits())          # the worker is up
    stale = dict(job("stale"), id=-1, conf=conf, limits=asdict(confine.Limits()))
    worker._proc.stdin.write((_json.dumps(stale) + "\n").encode())
    worker._proc.stdin.flush()
    before = worker.dropped
    reply = worker.run(job("fresh"), conf, confine.Limits())
    assert "fresh" in reply["output"] and "stale" not in reply["output"]
    assert worker.dropped == before + 1


def test_only_the_listed_course_classes_cross_rebuilt_from_their_fields():
    from helpers.llama import KVCache, LlamaConfig
    import dataclasses

    config = LlamaConfig(**{f.name: (2 if f.type in ("int", int) else 1e-5)
                            for f in dataclasses.fields(LlamaConfig)})
    cache = KVCache(2)
    cache.update(0, np.ones((1, 3, 2)), np.zeros((1, 3, 2)))
    back = wire.decode(wire.encode((config, cache)))
    assert back[0] == config and type(back[1]) is KVCache and back[1].keys[1] is None
    assert back[1].keys[0].shape == (1, 3, 2) and len(back[1]) == 0     # layer -1 is empty
    # classes outside the list never cross: sent as their type's name
    class Local:
        pass
    from helpers.course import Case

    for obj in (Local(), Case("dot", "c", "d", ()), np.lib.npyio.DataSource()):
        assert isinstance(wire.decode(wire.encode(obj)), wire.Unencodable)
    # a structure naming anything else, reachable from helpers or not, does not decode
    for name in ("os:system", "helpers.reference:np.lib.npyio.DataSource",
                 "helpers.llama.weights:Path", "helpers.exercises:Case",
                 "helpers.llama.model:KVCache.__init__", "tempfile:TemporaryDirectory"):
        with pytest.raises(wire.DecodeError):
            wire.decode(_with_structure({"__obj__": name, "state": []}))
    # a listed class with other fields than its own, or a course object inside, neither
    with pytest.raises(wire.DecodeError):
        wire.decode(_with_structure({"__obj__": "helpers.llama.model:KVCache",
                                     "state": [["keys", None], ["values", None],
                                               ["_finalizer", None]]}))
    nested = {"__obj__": "helpers.llama.model:KVCache",
              "state": [["keys", {"__obj__": "helpers.llama.model:KVCache",
                                  "state": [["keys", None], ["values", None]]}],
                        ["values", None]]}
    with pytest.raises(wire.DecodeError):
        wire.decode(_with_structure(nested))


def test_a_call_that_overwrites_its_arguments_changes_only_its_own_copies():
    """Values are copied across; nothing comes back into the caller's objects, so a case
    whose expectation is computed after the call is not fooled by an answer that
    overwrites its input."""
    from autograder.isolation import executor as ex

    assert not hasattr(wire, "restore") and not hasattr(ex, "restore")
    x = np.arange(4.0)
    decoded = wire.decode(wire.encode((x,)))[0]
    decoded[:] = 0.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def _with_structure(structure: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, __structure__=np.frombuffer(json.dumps(structure).encode(), dtype=np.uint8))
    return buf.getvalue()


def _confine_as_root_in_a_child(tmp_path: Path, allow: bool) -> int:
    """Exit status of a forked child that confines itself in fallback mode as if it could
    not drop root: 7 when :func:`confine.confine_inner` refused, 0 when it returned."""
    pid = os.fork()
    if pid == 0:   # pragma: no cover - runs in the child
        code = 1
        try:
            if allow:
                os.environ[confine.ALLOW_ROOT_FALLBACK_ENV] = "1"
            else:
                os.environ.pop(confine.ALLOW_ROOT_FALLBACK_ENV, None)
            confine._drop_privileges = lambda *args: None
            os.getresuid = lambda: (0, 0, 0)
            conf = confine.Confinement("fallback", str(tmp_path / "root"), str(tmp_path),
                                       fallback_work=str(tmp_path / "work"))
            try:
                confine.confine_inner(conf)
                code = 0
            except confine.UnsafeToGrade:
                code = 7
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_fallback_child_never_hands_root_to_student_code(tmp_path):
    """Second line of defence, inside the worker's child: still root after dropping
    privileges means no student code, whatever the grader's up-front check said."""
    assert _confine_as_root_in_a_child(tmp_path, allow=False) == 7
    assert _confine_as_root_in_a_child(tmp_path, allow=True) == 0


def test_privilege_probe_matches_what_nobody_can_run():
    """Not root: nothing to drop. Root: nobody must be able to start this Python."""
    if os.getuid() != 0:
        assert safety.can_drop_privileges()
        return
    readable = confine.world_can_run_python()
    assert safety.can_drop_privileges() == (readable and subprocess.run(
        [sys.executable, "-I", "-c", "import numpy"], user=confine.NOBODY, group=confine.NOBODY,
        extra_groups=[], cwd="/", capture_output=True).returncode == 0)


def test_fallback_worker_refuses_root_without_the_opt_in(helper_copies, monkeypatch):
    """Where the grader is root and cannot drop (this repository's machine: pyenv under
    /root), a fallback child reports an isolation error instead of running the cell."""
    monkeypatch.setenv("AUTOGRADER_ISOLATION", "fallback")
    monkeypatch.delenv(confine.ALLOW_ROOT_FALLBACK_ENV, raising=False)
    worker = client.Worker()
    try:
        canary = helper_copies[None] + "-canary"
        reply, lines = _run([f"import os\nprint(os.getuid())\nopen({canary!r}, 'w').close()"],
                            helper_copies, worker=worker)
        assert worker.mode == "fallback"
        ran = _stdout(lines)
        if safety.can_drop_privileges():
            assert ran and ran[0].strip() != "0"
        else:
            assert not ran and not os.path.exists(canary)
            assert "as root" in json.dumps(lines + [reply])
    finally:
        worker.close()


# ---------------------------------------------------------------------------------------
# The seccomp deny-list (autograder/isolation/seccomp.py)
# ---------------------------------------------------------------------------------------

SYSCALLS = r"""
import ctypes, errno, json, platform
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
                 "perf_event_open": 298, "io_uring_setup": 425, "ptrace": 101,
                 "unshare": 272, "setns": 308, "process_vm_readv": 310},
      "aarch64": {"keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
                  "perf_event_open": 241, "io_uring_setup": 425, "ptrace": 117,
                  "unshare": 97, "setns": 268, "process_vm_readv": 270}}[platform.machine()]
seen = {}
for name, nr in NR.items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, 0, 0, 0, 0, 0)
    seen[name] = errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())) if r < 0 else "ran"
print(json.dumps(seen))
"""

STORE_KEY = r"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
# add_key("user", "course-secret", payload, len, KEY_SPEC_USER_KEYRING = -4)
r = libc.syscall(%d, b"user", b"course-secret", b"the reference", 13, -4)
print(json.dumps({"stored": r >= 0}))
"""

READ_KEY = r"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
# request_key("user", "course-secret", NULL, 0)
r = libc.syscall(%d, b"user", b"course-secret", None, 0)
print(json.dumps({"found": r >= 0}))
"""


def test_the_learner_child_cannot_reach_the_denied_system_calls(helper_copies):
    from autograder.isolation import seccomp

    assert seccomp.available() == (True, ""), "libseccomp2 is part of the grading machine"
    reply, lines = _run([SYSCALLS, "print('still running')"], helper_copies)
    seen = json.loads(_stdout(lines)[0])
    assert seen == {name: "EPERM" for name in seen}, seen
    assert _stdout(lines)[1].strip() == "still running"       # the notebook goes on


def test_a_key_stored_by_one_child_is_not_found_by_the_next(helper_copies):
    """Every child is `nobody` in the same user namespace: without the filter, the user
    keyring would carry the reference from the notebook run to the isolated re-run."""
    import platform

    add_key, request_key = {"x86_64": (248, 249), "aarch64": (217, 218)}[platform.machine()]
    _, lines = _run([STORE_KEY % add_key], helper_copies)
    assert json.loads(_stdout(lines)[0]) == {"stored": False}
    _, lines = _run([READ_KEY % request_key], helper_copies)
    assert json.loads(_stdout(lines)[0]) == {"found": False}


def test_the_filter_keeps_what_notebooks_need():
    """fork, threads, subprocesses and NumPy work under the filter (in a forked child of
    this test process, where it is installed alone)."""
    from autograder.isolation import seccomp

    pid = os.fork()
    if pid == 0:   # pragma: no cover - runs in the child
        code = 1
        try:
            import subprocess
            import threading

            assert seccomp.install()
            inner = os.fork()
            if inner == 0:
                os._exit(0)
            assert os.waitpid(inner, 0)[1] == 0
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()
            assert subprocess.run(["true"]).returncode == 0
            assert float(np.ones(300) @ np.ones(300)) == 300.0
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_a_machine_without_libseccomp_is_told(monkeypatch):
    import io as _io

    from autograder import engine
    from autograder.isolation import seccomp

    monkeypatch.setattr(seccomp, "available", lambda: (False, "libseccomp cannot be loaded"))
    monkeypatch.setattr(safety, "check_safe_to_grade", lambda stream=None: "namespaces")
    out = _io.StringIO()
    assert engine.check_safe_to_grade(stream=out) == "namespaces"
    assert "no seccomp filter" in out.getvalue() and "libseccomp" in out.getvalue()


# ---------------------------------------------------------------------------------------
# Clean children: forked from a zygote that never held a job
# ---------------------------------------------------------------------------------------

FRAMES = r"""
import sys
def frames(x):
    names, f = [], sys._getframe()
    while f is not None:
        names.append(f.f_code.co_name)
        f = f.f_back
    return names
"""


def test_a_called_function_finds_no_frame_of_the_worker_that_read_other_jobs(helper_copies):
    """The learner's function is called from plain Python frames: walking up them must
    reach nothing that held another job (the worker's request loop, its previous reply);
    children are forked from a zygote forked before any request, and read only their
    own job."""
    payload = wire.b64(wire.encode(((1,), {})))
    reply, lines = _run([FRAMES], helper_copies, kind="calls", function="frames",
                        cases=[payload], case_timeout=5)
    line = next(line for line in lines if line.get("case") == 0)
    frames = wire.decode(wire.unb64(line["value"]))
    assert "_zygote_loop" in frames and "_job_calls" in frames, frames
    assert not {"_serve_loop", "_run_job"} & set(frames), frames      # no request, no reply


# ---------------------------------------------------------------------------------------
# The fallback mode: writes confined by Landlock, no process outlives its job
# ---------------------------------------------------------------------------------------

ESCAPE = r"""
import os, time
target = %(target)r
for path in (target + "/written-directly", %(venv)r):
    try:
        open(path, "w").write("x")
        print("wrote", path)
    except OSError as e:
        print("refused", type(e).__name__)
if os.fork() == 0:                      # a double fork in a session of its own
    os.setsid()
    if os.fork() == 0:
        time.sleep(3)
        try:
            open(target + "/written-later", "w").write("x")
        finally:
            os._exit(0)
    os._exit(0)
print("forked")
"""


def test_fallback_children_write_only_their_folder_and_leave_nothing_running(
        helper_copies, monkeypatch, tmp_path):
    from autograder.isolation import landlock

    assert landlock.abi() > 0, "this machine's kernel has Landlock (5.13+)"
    target = tmp_path / "world-writable"
    target.mkdir()
    target.chmod(0o777)                  # writable whoever the child runs as
    monkeypatch.setenv("AUTOGRADER_ISOLATION", "fallback")
    monkeypatch.setenv(confine.ALLOW_ROOT_FALLBACK_ENV, "1")
    worker = client.Worker()
    try:
        code = ESCAPE % {"target": str(target), "venv": str(Path(sys.prefix) / "escaped")}
        reply, lines = _run([code, "print(open('mine.txt', 'w').write('ok'))"], helper_copies,
                            worker=worker)
        assert worker.mode == "fallback"
        out = "".join(_stdout(lines))
        assert out.count("refused PermissionError") == 2 and "forked" in out and "2\n" in out
        time.sleep(4)                    # past the moment the orphan would have written
        assert sorted(p.name for p in target.iterdir()) == []
        assert not (Path(sys.prefix) / "escaped").exists()
    finally:
        worker.close()


def test_large_case_arrays_go_by_file_and_only_the_child_reads_them(tmp_path):
    """A capstone's weights are named by content, written once beside the helpers copy
    and read by the child; the bytes on the wire stay small, and a reply naming a file
    (the grader's decode has no folder) does not decode."""
    rng = np.random.default_rng(0)
    big, small = rng.normal(size=(200, 300)), rng.normal(size=3)
    store: dict = {}
    data = wire.encode(((big, small, big), {}), store=store)
    assert list(store) == [wire.array_key(big)] and len(data) < 10_000   # once, not inline
    folder = tmp_path / "arrays"
    wire.write_arrays(store, folder)
    assert oct((folder / f"{wire.array_key(big)}.npy").stat().st_mode & 0o777) == "0o644"
    (a, b, c), _ = wire.decode(data, arrays=str(folder))
    np.testing.assert_array_equal(a, big)
    np.testing.assert_array_equal(b, small)
    a[0, 0] = 99.0                         # each use is the child's own copy
    assert c[0, 0] == big[0, 0]
    with pytest.raises(wire.DecodeError):   # no folder: a reply cannot name files
        wire.decode(data)
    for key in ("../../etc/passwd", "/etc/passwd", "A" * 32, 7):
        with pytest.raises(wire.DecodeError):
            wire.decode(_with_structure({"__file__": key}), arrays=str(folder))
