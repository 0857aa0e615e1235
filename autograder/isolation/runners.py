"""Inside a confined child (B): the job runners.

The child runs one job (:mod:`autograder.isolation.executor` forks it): the ``notebook``
job runs the merged notebook cell by cell, the ``calls`` job the authoritative calls of
one exercise (see the executor's docstring). Each cell and each call runs under a timer
of the child's own CPU time (:class:`_Timer`): a busy machine slows the child down but
never spends its budget; the worker keeps a generous wall-clock backstop outside it.
"""

from __future__ import annotations

import __future__
import functools
import json
import operator
import os
import signal
import sys
import time
from pathlib import Path

from autograder import safe_text
from autograder.isolation import wire
from autograder.isolation.same import differs, resolve

#: Frames from files under this folder (the grader's own code) are left out of tracebacks.
_OWN_CODE = str(Path(__file__).resolve().parent.parent) + os.sep     # autograder/
#: Characters of stdout/stderr kept per cell (the rest is dropped and counted).
OUTPUT_CAP = 20_000


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
    """The timeout of one cell or call, in the child's own CPU time (``ITIMER_PROF``,
    user and system time): a busy machine slows the child but never spends its limit;
    time it spends blocked (waiting for the grader's answers, sleeping) is bounded by the
    worker's watch of its own time (executor)."""

    SIGNAL, TIMER = signal.SIGPROF, signal.ITIMER_PROF

    def __init__(self):
        self.fired = False
        signal.signal(self.SIGNAL, self._fire)

    def _fire(self, signum, frame):
        self.fired = True
        raise CellTimeout()

    def start(self, seconds: float) -> None:
        self.fired = False
        signal.signal(self.SIGNAL, self._fire)
        signal.setitimer(self.TIMER, max(seconds, 0.001))

    def stop(self) -> None:
        signal.setitimer(self.TIMER, 0)


_SHELL = None
#: The compiler flags of ``from __future__ import ...`` (kept from cell to cell, as IPython
#: keeps them).
_FUTURE_FLAGS = functools.reduce(operator.or_, (
    getattr(__future__, f).compiler_flag for f in __future__.all_feature_names))


def prewarm_shell() -> None:
    """Make the IPython shell every child's runner uses (once, in the worker)."""
    global _SHELL
    _SHELL = _make_shell()


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
        self.future = 0                        # __future__ flags of the plain cells so far
        import matplotlib.pyplot as plt

        plt.show = lambda *a, **k: plt.close("all")

    def _plain(self, source: str):
        """The code of a cell that is plain Python (compiled as IPython compiles it: under
        the cell's name, with the ``__future__`` imports of earlier cells, its lines in
        ``linecache`` for tracebacks), or None when IPython must transform it first or
        would display its value (a last statement that is an expression: showing it
        runs its ``repr``, which may raise)."""
        import ast
        import linecache

        try:
            tree = compile(source, self.current, "exec", flags=self.future | ast.PyCF_ONLY_AST,
                           dont_inherit=True)
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                return None
            code = compile(tree, self.current, "exec", flags=self.future, dont_inherit=True)
        except (SyntaxError, ValueError, OverflowError):
            return None
        self.future |= code.co_flags & _FUTURE_FLAGS
        linecache.cache[self.current] = (len(source), None,
                                         [line + "\n" for line in source.splitlines()],
                                         self.current)
        return code

    def _store_exception(self, exc_tuple=None, *args, **kwargs):
        self.exc = exc_tuple or sys.exc_info()

    def run(self, index: int, source: str, timeout: float, cap: int = OUTPUT_CAP,
            plain: bool = False) -> dict:
        """Run one cell in the shell. With ``plain`` (a run whose output nobody reads), a
        cell that is plain Python is compiled and run in the shell's namespace directly
        (:meth:`_plain`): the same code, names and errors as ``run_cell`` gives it,
        without the display, history and event machinery that costs a fresh child
        milliseconds per cell; a cell IPython must transform (a magic, a shell escape,
        top-level ``await``) still goes through ``run_cell``."""
        self.current = f"<cell {index}>"
        self.exc = None
        out, err = _Capped(cap), _Capped(cap)
        sys.stdout, sys.stderr = out, err
        memory = False
        value = None
        t0 = time.perf_counter()
        try:
            code = self._plain(source) if plain else None
            self.timer.start(timeout)
            try:
                if code is not None:
                    try:
                        exec(code, self.shell.user_ns)
                    except (CellTimeout, MemoryError):
                        raise
                    except BaseException:        # what run_cell shows, kept alike
                        self._store_exception()
                else:
                    value = _number(self.shell.run_cell(source, store_history=True).result)
            finally:
                self.timer.stop()
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


def send_line(fd: int, obj: dict) -> None:
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
        send_line(fd, res)
        if res["timeout"] or res["memory"]:
            break
    send_line(fd, {"done": True, "cpu": _cpu_seconds()})


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


def observers(specs: list) -> list:
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
    drivers = observers(job.get("scenarios") or [None] * len(job["cases"]))
    traced = _tracer() if job.get("trace") else None
    _trusted_answers(job)
    encode, decode, b64, unb64, send = wire.encode, wire.decode, wire.b64, wire.unb64, send_line
    array_bytes, most = wire.array_bytes, wire.MAX_VALUE_BYTES
    _callable, _str, _isinstance = callable, str, isinstance
    runner = _Runner(job["cells"], {})
    for c in job["cells"]:
        res = runner.run(c["index"], c["source"], job["cell_timeout"], 1000, plain=True)
        send_line(fd, {"cell": c["index"], "error": res["error"], "timeout": res["timeout"],
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
        if _isinstance(drivers[k], _str):
            line["error"] = drivers[k]
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
                    if drivers[k] is not None:       # raw observations, judged outside
                        value = drivers[k](fn, *args, **kwargs)
                    elif traced is not None:         # what its lines held, matched outside
                        value = traced(fn, args, kwargs)
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
                line["value"] = b64(encode(value, short=True))
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


def _tracer():
    """``(fn, args, kwargs) -> plain record`` of what ``fn``'s lines hold on a call
    (``helpers.course.trace``), bound before any learner code runs. Only the record
    crosses: the reference's steps are matched with it in the trusted process."""
    from helpers.course import trace

    record, to_plain = trace.record, trace.to_plain
    return lambda fn, args, kwargs: to_plain(record(fn, args, kwargs))


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


def _changed_inputs(fresh: tuple, used: tuple) -> list:
    """The inputs a call changed: positions (int) of ``args``, names (str) of ``kwargs``."""
    (args0, kwargs0), (args1, kwargs1) = fresh, used
    out: list = [i for i, (a, b) in enumerate(zip(args0, args1)) if differs(a, b)]
    out += [str(k) for k in kwargs0 if differs(kwargs0[k], kwargs1.get(k))]
    return out


def _innermost_learner_function(exc: BaseException) -> str:
    """The name of the innermost function of the learner's cells in ``exc``'s traceback."""
    name, tb = "", exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<cell"):
            name = tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    return name[:100]



def run(job: dict, fd: int, arrays: str) -> None:
    """Run ``job`` in this (confined) child, its result lines written to ``fd``."""
    if job["kind"] == "notebook":
        _job_notebook(job, fd)
    else:
        _job_calls(job, fd, arrays)
