"""A child's own time: what its limits count, so that a busy machine never spends them.

A child's limits per cell and per call count its CPU time (the runners' timer). Its
job's deadline counts its *own time*: the wall-clock time since it started less the
time it waited for a CPU on the kernel's run queue (``/proc/PID/schedstat``); the worker,
which keeps that deadline, also leaves out the time the child waited for its answers. Sleeping
or blocking counts (a learner's ``time.sleep`` spends it); another process holding the
CPU does not. A generous wall-clock backstop (:func:`backstop`) stops a child however
busy the machine is; stopped there with its own time not spent, the run was stopped by
load, not by the learner's code, and is not reported as a timeout.
"""

from __future__ import annotations

import time

#: The wall-clock backstop: this many times a limit, plus :data:`BACKSTOP_MARGIN` s.
BACKSTOP_FACTOR = 4
BACKSTOP_MARGIN = 30.0


def backstop(limit: float) -> float:
    """Wall-clock seconds after which a child with ``limit`` seconds of its own time is
    stopped whatever it spent."""
    return BACKSTOP_FACTOR * float(limit) + BACKSTOP_MARGIN


def queue_wait(pid: int) -> float | None:
    """Seconds process ``pid`` (its main thread) waited for a CPU so far; None when the
    kernel does not say (no such process, or no schedstat)."""
    try:
        with open(f"/proc/{int(pid)}/schedstat", "rb") as f:
            fields = f.read().split()
        return int(fields[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class OwnTime:
    """The own time of process ``pid`` since this object was made (wall clock less the
    time it waited for a CPU); the wall clock where the kernel does not say."""

    def __init__(self, pid: int):
        self.pid = pid
        self.start = time.monotonic()
        self.waited0 = queue_wait(pid) or 0.0
        self.waited = 0.0

    def wall(self) -> float:
        return time.monotonic() - self.start

    def seconds(self) -> float:
        waited = queue_wait(self.pid)
        if waited is not None:              # None once it ended: the last reading stands
            self.waited = max(0.0, waited - self.waited0)
        return max(0.0, self.wall() - self.waited)


def child_of(pid: int, wait: float = 2.0) -> int | None:
    """The first child process of ``pid`` (``/proc/PID/task/PID/children``), waiting up to
    ``wait`` seconds for it to appear; None if none does."""
    end = time.monotonic() + wait
    while True:
        try:
            with open(f"/proc/{int(pid)}/task/{int(pid)}/children", "rb") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except (OSError, ValueError):
            return None
        if time.monotonic() >= end:
            return None
        time.sleep(0.005)
