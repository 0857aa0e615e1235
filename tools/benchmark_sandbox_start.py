"""What it costs to start one confined child, three ways, measured in one run.

The grader runs each exercise of each notebook in its own child process. This script
measures the start-up cost of such a child (until it has NumPy and ``helpers`` imported
and exits) for:

* ``fork``: a fork of a warm process that has already imported them (the grader's
  zygote, autograder/isolation/executor.py);
* ``exec``: a fresh interpreter (what any exec-based sandbox pays at least);
* ``bwrap``: a fresh interpreter inside bubblewrap with new namespaces, a read-only root,
  a private /tmp and no network (Debian's ``bubblewrap``; skipped when not installed).

As root, also what giving each child a user of its own costs on top of a fork:

* ``nobody``: a fork that switches to ``nobody`` (every child the same user);
* ``own-user``: a fork that switches to a uid of its own and enters a new user
  namespace mapped by its parent (``confine.ChildIdentity``, what the grader does);
* ``job``: a whole confined job (fork from the zygote, namespaces, private root, the
  child's own user, seccomp, one empty cell, the reply), through the grading worker.

Alternating repetitions, median and best of N. Run: ``python tools/benchmark_sandbox_start.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMPORTS = "import numpy, helpers"


def _fork() -> float:
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return time.perf_counter() - start


def _switch(own: bool) -> float:
    from autograder.isolation import confine

    start = time.perf_counter()
    ident = confine.ChildIdentity("namespaces")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            ident.in_child()
            uid = ident.uid if own else confine.NOBODY
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if own:
                ident.enter_user_namespace()
            code = 0
        finally:
            os._exit(code)
    ident.in_parent(pid)
    os.waitpid(pid, 0)
    return time.perf_counter() - start


def _job(worker, conf) -> float:
    from autograder.isolation import confine

    start = time.perf_counter()
    reply = worker.run({"kind": "notebook", "cells": [{"index": 0, "kind": "code",
                                                      "source": "x = 1"}],
                        "cell_timeout": 10, "timeout": 30}, conf, confine.Limits())
    if reply.get("exit") != 0:
        raise RuntimeError(f"the confined job failed: {reply}")
    return time.perf_counter() - start


def _run(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=REPO)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    __import__("numpy"), __import__("helpers")        # the warm process, like the zygote
    exec_argv = [sys.executable, "-c", IMPORTS]
    ways = {"fork": _fork, "exec": lambda: _run(exec_argv)}
    bwrap = shutil.which("bwrap")
    if bwrap:
        ways["bwrap"] = lambda: _run([
            bwrap, "--unshare-all", "--die-with-parent", "--new-session",
            "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
            *exec_argv])
    worker = None
    if os.getuid() == 0:
        from autograder.isolation import client, helpers_copy

        worker = client.Worker()
        course = worker.home / "course"
        course.mkdir()
        course.chmod(0o755)
        conf = {"root_mount": str(worker.home / "root"), "data_dir": None,
                "helpers_parent": str(helpers_copy.prepare_helpers(course)),
                "fallback_work": str(worker.home / "work")}
        _job(worker, conf)                                 # start the worker first
        ways.update({"nobody": lambda: _switch(False), "own-user": lambda: _switch(True),
                     "job": lambda: _job(worker, conf)})
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, way in ways.items():
            times[name].append(way())
    print(f"start of one child with NumPy and helpers imported; {args.repeat} alternating runs, "
          f"{os.cpu_count()} cores, Python {sys.version.split()[0]}")
    if worker is not None:
        worker.close()
    for name, values in times.items():
        print(f"  {name:8s} median {statistics.median(values) * 1000:8.1f} ms   "
              f"best {min(values) * 1000:8.1f} ms")
    if not bwrap:
        print("  bwrap    not installed (Debian: apt-get install bubblewrap)")


if __name__ == "__main__":
    main()
