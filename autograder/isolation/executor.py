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
    ``sys.stdout``/``sys.stderr`` per cell (each capped), with a per-cell timer. One line
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
which the worker, trusted, computes them (:func:`autograder.isolation.answers.answer`): the child's copy of
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

from autograder import safe_text
from autograder.isolation import confine, seccomp, wire
from autograder.isolation.answers import _serve_call, resolve

#: Frames from files under this folder (the grader's own code) are left out of tracebacks.
_OWN_CODE = str(Path(__file__).resolve().parent.parent) + os.sep     # autograder/
#: Characters of stdout/stderr kept per cell (the rest is dropped and counted).
OUTPUT_CAP = 20_000
#: Bytes of result lines the worker accepts from one child.
RESULT_CAP = 64 * 1024 * 1024
#: Name prefix of a worker's private temp folder (removed when the worker ends).
HOME_PREFIX = "autograder-worker-"
#: Exit code A reports when it had to kill B at the deadline.
EXIT_TIMEOUT = 124
#: Seconds a child may go without a result line past its per-cell (or per-call) limit
#: before the worker stops it. Each cell and each call runs under the child's own timer
#: (SIGALRM), which reports the timeout in a line at once; a child that blocked that
#: signal, or spins outside any cell or call, says nothing, and without this it would
#: hold the worker until the notebook's limit. (A line is late by more than this only
#: if the child was already at its limit, or starved of CPU for seconds.)
STEP_GRACE = 5.0


# ---------------------------------------------------------------------------------------
# Inside B: the job runners.
# ---------------------------------------------------------------------------------------


class CellTimeout(BaseException):
    """Raised in B by the per-cell (or per-case) timer."""


class _Capped:
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int = OUTPUT_CAP):
        self.cap, self.parts, self.size, self.dropped = cap, [], 0, 0

    def write(self, text) -> int:
        text = str(text)
        room = self.cap - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        import io

        raise io.UnsupportedOperation("captured output has no file descriptor")

    def writable(self) -> bool:
        return True

    encoding = "utf-8"

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n[... {self.dropped} more characters of output not kept]"
        return text


class _Timer:
    """SIGALRM-based timeout for one cell or call."""

    def __init__(self):
        self.fired = False
        signal.signal(signal.SIGALRM, self._fire)

    def _fire(self, signum, frame):
        self.fired = True
        raise CellTimeout()

    def start(self, seconds: float) -> None:
        self.fired = False
        signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


_SHELL = None


def _make_shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InteractiveShell.xmode = "Plain"
    shell = InteractiveShell.instance(config=config)
    # `%matplotlib inline` and friends: the backend is fixed (Agg) in the grader.
    shell.register_magic_function(lambda line="": None, "line", "matplotlib")
    return shell


class _Runner:
    """Runs cells in the pre-made shell of B and formats errors safely."""

    def __init__(self, cells: list[dict], hidden_labels: dict[str, str]):
        self.shell = _SHELL
        self.cells = cells
        self.labels = hidden_labels            # code name -> description (test cells)
        self.current = ""
        self.exc = None
        self.shell.compile.get_code_name = lambda raw, transformed, number: self.current
        self.shell.showtraceback = self._store_exception
        self.shell.showsyntaxerror = lambda *a, **k: self._store_exception()
        self.timer = _Timer()
        import matplotlib.pyplot as plt

        plt.show = lambda *a, **k: plt.close("all")

    def _store_exception(self, exc_tuple=None, *args, **kwargs):
        self.exc = exc_tuple or sys.exc_info()

    def run(self, index: int, source: str, timeout: float, cap: int = OUTPUT_CAP) -> dict:
        self.current = f"<cell {index}>"
        self.exc = None
        out, err = _Capped(cap), _Capped(cap)
        sys.stdout, sys.stderr = out, err
        memory = False
        value = None
        t0 = time.perf_counter()
        try:
            self.timer.start(timeout)
            try:
                outcome = self.shell.run_cell(source, store_history=True)
            finally:
                self.timer.stop()
            value = _number(outcome.result)
        except CellTimeout:
            self.timer.fired = True
        except MemoryError:
            memory = True
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        error = None
        if self.exc is not None and self.exc[0] is not None:
            etype = self.exc[0]
            if issubclass(etype, CellTimeout):
                self.timer.fired = True
            elif issubclass(etype, MemoryError):
                memory = True
            else:
                error = self._format_error(*self.exc[:3])
        if self.timer.fired:
            error = {"ename": "Timeout", "evalue": f"the cell ran longer than {timeout:g} s",
                     "traceback": ""}
        elif memory:
            error = {"ename": "MemoryError", "evalue": "the memory limit was exceeded",
                     "traceback": ""}
        return {"cell": index, "stdout": out.getvalue(), "stderr": err.getvalue(),
                "error": error, "timeout": self.timer.fired, "memory": memory, "value": value,
                "seconds": round(time.perf_counter() - t0, 4)}

    def _format_error(self, etype, value, tb) -> dict:
        import traceback

        lines = []
        try:
            for fs in traceback.extract_tb(tb):
                name = fs.filename
                if name in self.labels:
                    lines.append(f"  in {self.labels[name]}, in {fs.name}")
                elif name.startswith("<cell "):
                    lines.append(f"  {name[1:-1]}, line {fs.lineno}, in {fs.name}")
                    if fs.line:
                        lines.append(f"    {fs.line.strip()}")
                elif "/IPython/" in name or name.startswith(_OWN_CODE):
                    continue      # the shell's and the grader's own frames
                else:
                    short = name.split("/site-packages/")[-1]
                    lines.append(f"  File \"{short}\", line {fs.lineno}, in {fs.name}")
                    if fs.line:
                        lines.append(f"    {fs.line.strip()}")
        except Exception:
            lines = []
        try:
            evalue = str(value)
        except Exception:
            evalue = "<unprintable exception>"
        if etype is SyntaxError or (isinstance(etype, type) and issubclass(etype, SyntaxError)):
            if isinstance(value, SyntaxError) and value.filename in self.labels:
                evalue = f"invalid syntax in {self.labels[value.filename]}"
        return {"ename": getattr(etype, "__name__", "Error"), "evalue": safe_text.shorten(evalue, safe_text.CHILD_ERROR_CHARS),
                "traceback": "\n".join(lines[-30:])}


def _number(value) -> float | None:
    """The cell's result as nbgrader's partial credit reads it: a plain number, or None."""
    import numbers

    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
        return number if number == number and abs(number) != float("inf") else None
    return None


def _send(fd: int, obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return round(usage.ru_utime + usage.ru_stime, 4)


def _trusted_answers(job: dict) -> None:
    """Before any learner code runs: the course functions the grader answers for this
    job (``helpers._yours.trusted``), on the socket it was handed."""
    fd = job.get("call_fd")
    if fd is None:
        return
    try:
        import importlib

        yours = importlib.import_module("helpers._yours")
        yours.trusted = yours.Trusted(fd, job.get("answers") or ())
    except Exception:                 # not a student's copy (the sandbox's own tests)
        os.close(fd)


def _job_notebook(job: dict, fd: int) -> None:
    _trusted_answers(job)
    cells = job["cells"]
    labels = {f"<cell {c['index']}>": f"test cell {c['grade_id']}"
              for c in cells if c.get("kind") == "test"}
    runner = _Runner(cells, labels)
    for c in cells:
        res = runner.run(c["index"], c["source"], job["cell_timeout"], job.get("cap", OUTPUT_CAP))
        _send(fd, res)
        if res["timeout"] or res["memory"]:
            break
    _send(fd, {"done": True, "cpu": _cpu_seconds()})


#: The folder, beside the helpers copy, of the cases' arrays stored by file (wire.py).
ARRAYS_FOLDER = "arrays"


def _frozen(fn):
    """A copy of scenario function ``fn`` that the learner's cells cannot rebind: its own
    globals (a copy of its module's, taken now) and builtins (a copy of ``builtins``), its
    own defaults; reachable from no module (docs/threat_model.md, "No verdict decided in a
    child")."""
    import builtins
    import types

    glob = dict(fn.__globals__)
    glob["__builtins__"] = dict(vars(builtins))
    out = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    return out


def _observers(specs: list) -> list:
    """Each case's scenario (``None``: a plain call), bound and frozen before any learner
    code runs; a scenario that cannot be imported is the error text to report."""
    out: list = []
    for spec in specs:
        try:
            out.append(_frozen(resolve(spec)) if spec else None)
        except Exception as exc:
            out.append(f"the grader's scenario {spec} could not be loaded: "
                       f"{type(exc).__name__}")
    return out


def _job_calls(job: dict, fd: int, arrays: str | None = None) -> None:
    import warnings

    import numpy as np

    # Bound before the learner's cells run, looked up by no name afterwards: the scenario
    # drivers (frozen copies), the wire and the pipe (docs/threat_model.md).
    observers = _observers(job.get("scenarios") or [None] * len(job["cases"]))
    _trusted_answers(job)
    encode, decode, b64, unb64, send = wire.encode, wire.decode, wire.b64, wire.unb64, _send
    array_bytes, most = wire.array_bytes, wire.MAX_VALUE_BYTES
    _callable, _str, _isinstance = callable, str, isinstance
    runner = _Runner(job["cells"], {})
    for c in job["cells"]:
        res = runner.run(c["index"], c["source"], job["cell_timeout"], 1000)
        _send(fd, {"cell": c["index"], "error": res["error"], "timeout": res["timeout"],
                   "memory": res["memory"]})
    ns = runner.shell.user_ns
    name = job["function"]
    fn = ns.get(name)
    # The earlier course functions this one may call are the course's own while it is
    # graded: a mistake in the learner's version is charged in its own exercise only.
    for dep, spec in (job.get("uses") or {}).items():
        if dep != name and (dep not in ns or callable(ns[dep])):
            try:
                ns[dep] = resolve(spec)
            except Exception:              # not importable in this copy: leave the name
                pass
    # The learner's own earlier functions, counted when called: a failing case that
    # called none of them is not judged again with the course's (the grader's choice,
    # from this observation; a false one only costs this learner time or a second run).
    own_calls = [0]
    for dep in job.get("watch") or ():
        if dep != name and _is_learners(ns.get(dep)):
            ns[dep] = _counted(ns[dep], own_calls)
    stopped = None
    for k, payload in enumerate(job["cases"]):
        line: dict = {"case": k}
        if stopped:
            line["error"] = stopped
            send(fd, line)
            continue
        if _isinstance(observers[k], _str):
            line["error"] = observers[k]
            send(fd, line)
            continue
        if not _callable(fn):
            line["error"] = f"{name} is not defined" if fn is None else f"{name} is not a function"
            send(fd, line)
            continue
        sink = _Capped(1000)
        sys.stdout, sys.stderr = sink, sink
        changed: list = []
        own_calls[0] = 0
        try:
            args, kwargs = decode(unb64(payload), arrays=arrays)
            runner.timer.start(job["case_timeout"])
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    if observers[k] is not None:       # raw observations, judged outside
                        value = observers[k](fn, *args, **kwargs)
                    else:
                        value = fn(*args, **kwargs)
                    # the raw observation only (which inputs differ from fresh copies);
                    # the trusted process decides what that means
                    fresh_args, fresh_kwargs = decode(unb64(payload), arrays=arrays)
                    changed = _changed_inputs((fresh_args, fresh_kwargs), (args, kwargs))
            finally:
                runner.timer.stop()
            size = array_bytes(value, most)
            if size > most:            # refused unencoded: the grader would refuse it encoded
                line["too_large"] = size
            else:
                line["value"] = b64(encode(value))
            if changed:
                line["changed"] = changed
        except CellTimeout:
            line["error"] = f"timeout: the call took longer than {job['case_timeout']:g} s"
            stopped = "timeout: not run after an earlier case timed out"
        except MemoryError:
            line["error"] = "MemoryError: the memory limit was exceeded"
        except BaseException as exc:  # the student's function may raise anything
            try:
                line["error"] = safe_text.shorten(f"{type(exc).__name__}: {exc}",
                                                  safe_text.CHILD_ERROR_CHARS)
                line["where"] = _innermost_learner_function(exc)
            except BaseException:
                line["error"] = "the function raised an unprintable exception"
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        if own_calls[0]:
            line["own_uses"] = True
        send(fd, line)
    send(fd, {"done": True, "cpu": _cpu_seconds()})


def _is_learners(fn) -> bool:
    """Whether ``fn`` is a function the learner's cells defined."""
    import types

    return isinstance(fn, types.FunctionType) and fn.__module__ == "__main__"


def _counted(fn, counter: list):
    """``fn``, counting its calls in ``counter[0]``."""
    import functools

    @functools.wraps(fn)
    def call(*args, **kwargs):
        counter[0] += 1
        return fn(*args, **kwargs)

    return call


def _differs(before, after) -> bool:
    """Whether ``after`` (an input after the call) is no longer equal to ``before`` (a
    fresh copy of it): values, shapes and dtypes of arrays, recursively in lists, tuples
    and dicts. A NumPy Generator is expected to advance: never a change."""
    import numpy as np

    if isinstance(before, np.random.Generator):
        return False
    if isinstance(before, np.ndarray):
        if not isinstance(after, np.ndarray) or before.shape != after.shape or \
                before.dtype != after.dtype:
            return True
        try:
            return not np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")
        except Exception:
            return True
    if isinstance(before, dict):
        return (not isinstance(after, dict) or list(before) != list(after)
                or any(_differs(before[k], after[k]) for k in before))
    if isinstance(before, (list, tuple)):
        return (type(before) is not type(after) or len(before) != len(after)
                or any(_differs(x, y) for x, y in zip(before, after)))
    try:
        return bool(before != after) and not (before != before and after != after)  # NaN
    except Exception:
        return False


def _changed_inputs(fresh: tuple, used: tuple) -> list:
    """The inputs a call changed: positions (int) of ``args``, names (str) of ``kwargs``."""
    (args0, kwargs0), (args1, kwargs1) = fresh, used
    out: list = [i for i, (a, b) in enumerate(zip(args0, args1)) if _differs(a, b)]
    out += [str(k) for k in kwargs0 if _differs(kwargs0[k], kwargs1.get(k))]
    return out


def _innermost_learner_function(exc: BaseException) -> str:
    """The name of the innermost function of the learner's cells in ``exc``'s traceback."""
    name, tb = "", exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<cell"):
            name = tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    return name[:100]


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
                _send(wfd, {"isolation_error": f"{type(exc).__name__}: {exc}"})
            os._exit(3)
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sys.stdin = open(os.devnull)
        if job["kind"] == "notebook":
            _job_notebook(job, wfd)
        else:
            _job_calls(job, wfd, os.path.join(confine.course_path(conf), ARRAYS_FOLDER))
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
        deadline = time.monotonic() + job["timeout"]
        pidfd = os.pidfd_open(pid)
        status = None
        while status is None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            select.select([pidfd], [], [], left)
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
        if status is None:
            if conf.mode == "fallback":
                confine.kill_quietly(-pid)
            confine.kill_quietly(pid)
            os.waitpid(pid, 0)
            code = EXIT_TIMEOUT
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
    global _SHELL
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy  # noqa: F401

    fig, ax = plt.subplots()        # loads the font cache once, here
    ax.set_title("warm")
    fig.canvas.draw()
    plt.close(fig)
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        pass
    _SHELL = _make_shell()
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
             answers: frozenset = frozenset(), step: float = 0.0) -> dict:
    """Run one job (its JSON, conf and limits included) in a fresh A forked by the
    zygote; the job reaches A through a pipe of its own. With ``answers``, the child
    gets a socket on which this (trusted) worker computes those course functions for
    it (:func:`autograder.isolation.answers._serve_call`). With ``step`` (the job's limit per cell or call), a child
    that sends nothing for ``step + STEP_GRACE`` seconds is stopped (A ends B's world
    and exits with :data:`EXIT_TIMEOUT`) and the reply says ``stalled``: the seconds it
    was given."""
    job_r, job_w = os.pipe()
    r, w = os.pipe()
    call = theirs = None
    blobs: dict = {}                # the arrays this job's child sent, by digest
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
    with os.fdopen(job_w, "wb") as f:       # A reads all of it before anything else
        try:
            f.write(job_bytes)
        except BrokenPipeError:
            pass
    chunks, size, truncated = [], 0, False
    deadline = time.monotonic() + timeout + 10
    quiet_limit = step + STEP_GRACE if step > 0 else 0.0
    heard = time.monotonic()                    # when the child last sent anything
    stalled = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            confine.kill_quietly(pid)
            break
        ready, _, _ = select.select([r, zygote] + ([call] if call else []), [], [],
                                    min(left, 1.0))
        if call is not None and call in ready:
            if not _serve_call(call, answers, deadline, blobs):
                call.close()
                call = None
        elif r in ready:
            data = os.read(r, 1 << 16)
            if not data:
                break
            heard = time.monotonic()
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
        if (quiet_limit and not stalled and time.monotonic() - heard > quiet_limit
                and not select.select([r], [], [], 0)[0]):
            stalled = True             # A takes B's world down and exits EXIT_TIMEOUT
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
    os.close(r)
    if call is not None:
        call.close()
    status = json.loads(zygote.recv(256))["status"]
    code = os.waitstatus_to_exitcode(status)
    # base64, not JSON-escaped text: the child's bytes reach the grader at 4/3 of their
    # size, where escaping control characters would make a 64 MB output a 384 MB line
    reply = {"output_b64": wire.b64(b"".join(chunks)), "truncated": truncated,
             "exit": code, "seconds": round(time.perf_counter() - t0, 4)}
    if stalled:
        reply["stalled"] = quiet_limit
    return reply


def serve(infd: int = 0, outfd: int = 1) -> None:
    """The worker's main loop: a JSON request per line in, a JSON reply per line out."""
    rin = os.fdopen(os.dup(infd), "rb")
    out = os.fdopen(os.dup(outfd), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)            # nothing printed by a library can corrupt the protocol
    _prewarm()
    mode = confine.probe_mode()
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
                             frozenset(str(a) for a in req.get("answers") or ()), step)
        except Exception as exc:
            reply = {"worker_error": f"{type(exc).__name__}: {exc}"}
        reply["id"] = job_id
        out.write((json.dumps(reply) + "\n").encode())
        out.flush()
