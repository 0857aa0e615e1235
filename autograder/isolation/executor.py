"""Run untrusted notebook code fast: a pre-warmed worker that forks a fresh child per job.

The grader (trusted) talks to one long-lived *worker* process over a pipe (JSON lines;
the grader's side is :mod:`autograder.isolation.client`).
The worker imported NumPy, matplotlib (Agg) and IPython once and holds an IPython
``InteractiveShell``; it never runs student code itself. For each job it forks:

    worker ── A (trusted: enters new namespaces, enforces the deadline, reports)
               └── B (PID 1 of its namespaces: confines itself, then runs the job)

B confines itself (:func:`autograder.confine.confine_inner`), points file descriptors 0-2
at ``/dev/null`` and writes its results as JSON lines to a pipe. A waits for B with the
job's deadline and kills it when time is up; because B is PID 1 of a PID namespace,
killing it tears down everything it started. B runs in its own session, so
``os.kill(os.getppid(), 9)`` or ``os.killpg(0, 9)`` can reach neither A nor the worker
nor the grader. The worker caps what it reads (a flood cannot exhaust memory), and the
grader parses every line defensively: nothing from B is trusted.

Two kinds of job:

``notebook``
    Run the merged notebook cell by cell with ``InteractiveShell.run_cell``, capturing
    ``sys.stdout``/``sys.stderr`` per cell (each capped), with a per-cell timer of CPU time. One line
    per cell: stdout, stderr, error (type, message, a traceback that names test cells
    but never quotes their source), timeout/memory markers. Stops at the first timeout
    or ``MemoryError``.
``calls``
    The authoritative run of one exercise: run the cells its answer needs with output
    discarded, bind the earlier course functions it may call (``uses``, in the run the
    grader makes again when a case failed) to the course's stubs, then call the function
    on each case (arguments arrive as ``wire.encode``
    bytes; a case with a ``scenario`` runs ``scenario(fn, *args)``, e.g. two calls
    sharing a cache, bound and frozen before the cells ran) and send back each return
    value, encoded, one line per case: a scenario's value is raw observations, which the
    grader judges (no verdict is decided in the child).

Every request to the worker carries an id that its reply repeats; a reply with another
id (left over from a request whose reader gave up) is dropped.

A job may list ``answers``: the course functions its child may use (an exercise's
earlier functions, credit isolation). The child then gets one end of a socket pair on
which the worker, trusted, answers them within the child's own limits
(:mod:`autograder.isolation.answerer`): the child's copy of
``helpers`` holds no course function's code (autograder/isolation/student_helpers.py).

Cost: forking the warm worker and confining the child take a few milliseconds; the
course's notebooks need 0.02-0.13 s of CPU each to grade (0.5 s for the language-model
notebook, whose sampling checks generate ~1000 tokens), all runs included. The ``done``
line of each job reports the CPU seconds its child used.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

from autograder.isolation import clock, confine, runners, safety, seccomp, wire
from autograder.isolation.answerer import Answerer

#: Bytes of result lines the worker accepts from one child.
RESULT_CAP = 64 * 1024 * 1024
#: Name prefix of a worker's private temp folder (removed when the worker ends).
HOME_PREFIX = "autograder-worker-"
#: Exit code A reports when it had to kill B at the deadline: B spent its own time.
EXIT_TIMEOUT = 124
#: Exit code A reports when it stopped B at the wall-clock backstop (a busy machine)
#: before B spent its own time: not a timeout of the learner's code.
EXIT_BUSY = 125
#: Seconds of its own time a child may go without a result line past its per-cell (or
#: per-call) limit before the worker stops it. Each cell and each call runs under the
#: child's own CPU timer (:mod:`autograder.isolation.runners`), which reports the timeout
#: in a line at once; a child that blocked that signal, sleeps, or spins outside any cell
#: or call says nothing, and without this it would hold the worker until the notebook's
#: limit. Its own time is the wall clock less its wait for a CPU
#: (:mod:`autograder.isolation.clock`): a busy machine does not make a child late.
STEP_GRACE = 5.0



def _child_b(job: dict, conf: confine.Confinement, wfd: int,
             ident: confine.ChildIdentity) -> None:
    """Process B: confine, silence fds 0-2, run the job, exit."""
    code = 0
    try:
        try:
            import ctypes

            ctypes.CDLL(None).prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            ident.in_child()
            confine.confine_inner(conf, ident)
            seccomp.install()         # the deny-list (a no-op where libseccomp is missing)
        except BaseException as exc:
            if wfd is not None:
                runners.send_line(wfd, {"isolation_error": f"{type(exc).__name__}: {exc}"})
            os._exit(3)
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sys.stdin = open(os.devnull)
        runners.run(job, wfd, os.path.join(confine.course_path(conf), runners.ARRAYS_FOLDER))
    except BaseException:
        code = 1
    os._exit(code)


def _child_a(job: dict, conf: confine.Confinement, wfd: int) -> None:
    """Process A: enter namespaces, fork B, enforce the deadline, exit with B's fate."""
    code = 1
    try:
        if conf.mode == "namespaces":
            confine.unshare_outer()
        else:   # no PID namespace: orphans of B (a double fork, setsid) come back to A
            import ctypes

            ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        ident = confine.ChildIdentity(conf.mode)
        pid = os.fork()
        if pid == 0:
            _child_b(job, conf, wfd, ident)
        ident.in_parent(pid)

        def stop(signum, frame):      # the worker is done with us: take B's world down
            confine.kill_quietly(pid)
            if conf.mode == "fallback":
                confine.kill_quietly(-pid)
                _kill_descendants()
            os._exit(EXIT_TIMEOUT)

        signal.signal(signal.SIGTERM, stop)
        os.close(wfd)
        if job.get("call_fd") is not None:
            os.close(job["call_fd"])
        # the worker keeps the job's budget (B's own time less the time it waited for
        # the grader's answers); A stops B only at the wall-clock backstop of it
        backstop = clock.backstop(float(job["timeout"]))
        status, code = wait_within(pid, backstop, backstop)
        if status is None:
            if conf.mode == "fallback":
                confine.kill_quietly(-pid)
            confine.kill_quietly(pid)
            os.waitpid(pid, 0)
        else:
            if conf.mode == "fallback":
                confine.kill_quietly(-pid)   # whatever B left behind in its session
            if os.WIFSIGNALED(status):
                code = 128 + os.WTERMSIG(status)
            else:
                code = min(os.WEXITSTATUS(status), 120)
    finally:
        if conf.mode == "fallback":
            _kill_descendants()
        os._exit(code)


def wait_within(pid: int, limit: float, wall_limit: float | None = None
                ) -> tuple[int | None, int]:
    """Wait for B (``pid``) while its own time (:class:`clock.OwnTime`) is under
    ``limit`` and the wall clock under ``wall_limit`` (by default the backstop of
    ``limit``). Returns B's wait status (None if it must be stopped) and the exit code A
    reports when it is: :data:`EXIT_TIMEOUT` when B spent its own time,
    :data:`EXIT_BUSY` when the wall clock came first."""
    own = clock.OwnTime(pid)
    wall_limit = clock.backstop(limit) if wall_limit is None else wall_limit
    pidfd = os.pidfd_open(pid)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, 0
        if own.seconds() >= limit:
            return None, EXIT_TIMEOUT
        if own.wall() >= wall_limit:
            return None, EXIT_BUSY
        select.select([pidfd], [], [], min(0.5, max(0.01, limit - own.seconds())))


#: prctl option: orphaned descendants are re-parented to this process, not to init.
PR_SET_CHILD_SUBREAPER = 36


def _kill_descendants() -> None:
    """Kill and reap every process left below this one (as a subreaper, every orphan of
    the job is our child): nothing of a job outlives it, whatever session it made."""
    me = os.getpid()
    for _ in range(50):
        children = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read().decode("ascii", "replace")
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 1 and fields[1] == str(me):
                children.append(int(entry))
        for child in children:
            confine.kill_quietly(child)
        reaped = False
        while True:
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                break
            reaped = True
        if not children and not reaped:
            return
        time.sleep(0.01)


# ---------------------------------------------------------------------------------------
# The worker process (pre-warmed; serves jobs one at a time).
# ---------------------------------------------------------------------------------------


def _prewarm() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy  # noqa: F401
    import numpy.random  # noqa: F401  (helpers imports it: not each child's to import)

    fig, ax = plt.subplots()        # loads the font cache once, here
    ax.set_title("warm")
    fig.canvas.draw()
    plt.close(fig)
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        pass
    runners.prewarm_shell()
    try:
        seccomp.program()           # built once here; a child only loads it
    except OSError:
        pass                        # a child retries, and refuses to run if it fails


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        data = os.read(fd, 1 << 20)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def _zygote_loop(sock: socket.socket, mode: str) -> None:
    """The zygote: forked from the warm worker before any job, it never reads a job. For
    each ``fork`` message it forks an A that reads its own job from the pipe it was
    handed (so a child's memory holds the warm interpreter and its own job, nothing of
    any other job or student), then reports A's pid and, when A ends, its exit status."""
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 64, 3)
        except OSError:
            return
        if not msg or len(fds) not in (2, 3):
            for fd in fds:
                os.close(fd)
            return                                   # the worker went away
        job_r, res_w, *call = fds
        pid = os.fork()
        if pid == 0:                                 # A
            code = 1
            try:
                sock.close()
                job = json.loads(_read_all(job_r))
                os.close(job_r)
                keep = sorted({res_w, *call})
                for low, high in zip([3] + [k + 1 for k in keep], keep + [1 << 16]):
                    os.closerange(low, high)
                job["call_fd"] = call[0] if call else None
                conf = confine.Confinement(mode=mode,
                                           limits=confine.Limits(**job.pop("limits")),
                                           **job.pop("conf"))
                _child_a(job, conf, res_w)
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps({"status": status}).encode())


def _start_zygote(mode: str) -> tuple[socket.socket, int]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            ours.close()
            _zygote_loop(theirs, mode)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    theirs.close()
    return ours, pid


def _run_job(job_bytes: bytes, timeout: float, zygote: socket.socket,
             answers: frozenset = frozenset(), step: float = 0.0,
             limits: dict | None = None) -> dict:
    """Run one job (its JSON, conf and limits included) in a fresh A forked by the
    zygote; the job reaches A through a pipe of its own. With ``answers``, the child
    gets a socket on which this (trusted) worker answers those course functions for it
    within the child's ``limits`` (:class:`autograder.isolation.answerer.Answerer`). With
    ``step`` (the job's limit per cell or call), a child that sends nothing for
    ``step + STEP_GRACE`` seconds of its own time (:mod:`autograder.isolation.clock`) is
    stopped (A ends B's world and exits with :data:`EXIT_TIMEOUT`) and the reply says
    ``stalled``: the seconds it was given; one silent past the wall-clock backstop of
    that is stopped too, and the reply says ``busy``."""
    limits = limits or {}
    job_r, job_w = os.pipe()
    r, w = os.pipe()
    call = theirs = None
    if answers:
        call, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    t0 = time.perf_counter()
    try:
        socket.send_fds(zygote, [b"fork"], [job_r, w] + ([theirs.fileno()] if theirs else []))
    finally:
        os.close(job_r)
        os.close(w)
        if theirs is not None:
            theirs.close()
    pid = json.loads(zygote.recv(256))["pid"]
    answerer = None if call is None else Answerer(
        call, answers, limits.get("memory_mb", 2048), step or timeout,
        limits.get("cpu_seconds", timeout))
    with os.fdopen(job_w, "wb") as f:       # A reads all of it before anything else
        try:
            f.write(job_bytes)
        except BrokenPipeError:
            pass
    chunks, size, truncated = [], 0, False
    deadline = time.monotonic() + clock.backstop(timeout) + 10
    quiet = _Quiet(pid, step + STEP_GRACE if step > 0 else 0.0)
    budget = _Budget(pid, timeout)
    stopping = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            confine.kill_quietly(pid)
            break
        ready, _, _ = select.select([r, zygote] + ([call] if call else []), [], [],
                                    min(left, 0.5))
        if call is not None and call in ready:
            served = time.monotonic()
            alive = answerer.serve(deadline)
            budget.waited += time.monotonic() - served
            if not alive:
                answerer.close()
                call = None
            quiet.heard()           # a child waiting for an answer is not silent
        elif r in ready:
            data = os.read(r, 1 << 16)
            if not data:
                break
            quiet.heard()
            if size < RESULT_CAP:
                chunks.append(data[: RESULT_CAP - size])
            else:
                truncated = True
            size += len(data)
            continue
        elif zygote in ready:
            # A ended; grace for the last bytes (descendants may hold the pipe in
            # fallback mode)
            more, _, _ = select.select([r], [], [], 0.2)
            if not more:
                break
            continue
        why = "" if stopping else quiet.over() or ("timeout" if budget.over() else "")
        if why and not select.select([r], [], [], 0)[0]:
            stopping = True
            quiet.stopped = why if why != "timeout" else ""
            try:                       # A takes B's world down and exits EXIT_TIMEOUT
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
    os.close(r)
    if answerer is not None:
        answerer.close()
    status = json.loads(zygote.recv(256))["status"]
    code = os.waitstatus_to_exitcode(status)
    # base64, not JSON-escaped text: the child's bytes reach the grader at 4/3 of their
    # size, where escaping control characters would make a 64 MB output a 384 MB line
    reply = {"output_b64": wire.b64(b"".join(chunks)), "truncated": truncated,
             "exit": code, "seconds": round(time.perf_counter() - t0, 4)}
    if quiet.stopped:
        reply[quiet.stopped] = quiet.limit
    if answerer is not None:
        reply["answered"] = [answerer.requests, answerer.computed]
    return reply


class _Budget:
    """A job's budget of ``limit`` seconds of its child's own time (B, the child of A
    ``pid``: the wall clock less its wait for a CPU, :mod:`autograder.isolation.clock`),
    less the time it ``waited`` for the grader's answers (their cost is the answering
    helper's, under its own limits): ``over()`` once spent."""

    def __init__(self, pid: int, limit: float):
        self.a, self.limit = pid, limit
        self.own: clock.OwnTime | None = None
        self.waited = 0.0

    def over(self) -> bool:
        if self.own is None:
            b = clock.child_of(self.a, wait=0.0)
            if not b:
                return False
            self.own = clock.OwnTime(b)
        return self.own.seconds() - self.waited >= self.limit


class _Quiet:
    """How long a job's child (B, the child of A ``pid``) has said nothing, in its own
    time (wall clock less its wait for a CPU, :mod:`autograder.isolation.clock`) and on
    the wall clock; ``over()`` says ``stalled`` past ``limit`` (0: never) of the first,
    ``busy`` past the backstop of the second; ``stopped`` is set by the caller."""

    def __init__(self, pid: int, limit: float):
        self.a, self.limit, self.b = pid, limit, 0
        self.stopped = ""
        self.heard()

    def _waited(self) -> float | None:
        if not self.b:
            self.b = clock.child_of(self.a, wait=0.0) or 0
        return clock.queue_wait(self.b) if self.b else None

    def heard(self) -> None:
        self.since, self.waited = time.monotonic(), self._waited()

    def over(self) -> str:
        """Why the child must be stopped (``stalled`` or ``busy``), or ""."""
        wall = time.monotonic() - self.since
        if not self.limit or wall < self.limit:
            return ""
        waited = self._waited()
        own = wall - (waited - self.waited if waited is not None and self.waited is not None
                      else 0.0)
        if own >= self.limit:
            return "stalled"
        return "busy" if wall >= clock.backstop(self.limit) else ""


def serve(infd: int = 0, outfd: int = 1) -> None:
    """The worker's main loop: a JSON request per line in, a JSON reply per line out."""
    rin = os.fdopen(os.dup(infd), "rb")
    out = os.fdopen(os.dup(outfd), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)            # nothing printed by a library can corrupt the protocol
    _prewarm()
    mode = safety.probe_mode()
    zygote, zygote_pid = _start_zygote(mode)     # before any job: it never holds one
    out.write((json.dumps({"ready": True, "mode": mode}) + "\n").encode())
    out.flush()
    try:
        _serve_loop(rin, out, zygote)
    finally:   # the grader went away: remove the private folder it made for us
        zygote.close()
        confine.kill_quietly(zygote_pid)
        try:                # reaped: its CPU time (and its children's) is counted
            os.waitpid(zygote_pid, 0)
        except ChildProcessError:
            pass
        home = os.environ.get("HOME", "")
        if os.path.basename(home).startswith(HOME_PREFIX):
            shutil.rmtree(home, ignore_errors=True)


def _serve_loop(rin, out, zygote: socket.socket) -> None:
    for raw in rin:
        job_id = None
        try:
            req = json.loads(raw)
            job_id = req.pop("id", None)
            step = max(float(req.get("cell_timeout") or 0), float(req.get("case_timeout") or 0))
            reply = _run_job(json.dumps(req).encode(), float(req["timeout"]), zygote,
                             frozenset(str(a) for a in req.get("answers") or ()), step,
                             req.get("limits") or {})
        except Exception as exc:
            reply = {"worker_error": f"{type(exc).__name__}: {exc}"}
        reply["id"] = job_id
        out.write((json.dumps(reply) + "\n").encode())
        out.flush()
