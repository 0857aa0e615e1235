"""Limits count the child's own time, so load never spends them (issue 36, finding 8).

Under modest load (a fresh clone's CI beside one other grading run, load 3-6 on 2
cores) wall-clock deadlines made correct answers time out. Now a cell's or call's limit
counts the child's CPU time (the runners' timer), a run's deadline its own time (the
wall clock less its wait for a CPU, :mod:`autograder.isolation.clock`), and a generous
wall-clock backstop stops a child the machine starves without calling it a timeout
(``executor.EXIT_BUSY``). The busy machine is simulated honestly: busy-loop processes
pinned to the same CPU as the measured one, each ended within seconds.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from autograder.isolation import clock, executor

pytestmark = pytest.mark.skipif(clock.queue_wait(os.getpid()) is None,
                                reason="the kernel does not report run-queue waits")


def _spinner(cpu: int, seconds: float) -> int:
    """A process busy on CPU ``cpu`` for at most ``seconds`` (it ends itself)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.sched_setaffinity(0, {cpu})
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                pass
        finally:
            os._exit(0)
    return pid


def _reap(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)


@pytest.fixture
def cpu():
    return sorted(os.sched_getaffinity(0))[0]


def test_waiting_for_a_cpu_is_not_own_time(cpu):
    """A busy process sharing its CPU with four others gets about a fifth of it: its own
    time is far below the wall clock; a sleeping process's own time is the wall clock."""
    crowd = [_spinner(cpu, 8) for _ in range(4)]
    measured = _spinner(cpu, 8)
    try:
        own = clock.OwnTime(measured)
        time.sleep(2.0)
        assert own.seconds() < 0.6 * own.wall(), (own.seconds(), own.wall())
    finally:
        _reap(crowd + [measured])
    pid = os.fork()
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    try:
        own = clock.OwnTime(pid)
        time.sleep(1.0)
        assert own.seconds() >= 0.9 * own.wall()
    finally:
        _reap([pid])


def test_a_starved_child_is_stopped_as_timed_out_only_once_it_spent_its_own_time(cpu):
    """A child that spins forever beside four busy processes on its CPU, with 1 s of own
    time: A stops it with EXIT_TIMEOUT, later on the wall clock than 1 s (the machine's
    load did not spend its limit)."""
    crowd = [_spinner(cpu, 30) for _ in range(4)]
    child = _spinner(cpu, 30)
    try:
        t0 = time.monotonic()
        status, code = executor.wait_within(child, 1.0)
        took = time.monotonic() - t0
    finally:
        _reap(crowd + [child])
    assert status is None and code == executor.EXIT_TIMEOUT
    assert took > 1.5, took


def test_the_wall_clock_backstop_is_not_a_timeout(cpu, monkeypatch):
    """Starved past the backstop before it spent its own time, a child is stopped with
    EXIT_BUSY (the grader runs it again, then reports its own error), never EXIT_TIMEOUT."""
    monkeypatch.setattr(clock, "BACKSTOP_FACTOR", 1)
    monkeypatch.setattr(clock, "BACKSTOP_MARGIN", 1.0)        # backstop: limit + 1 s
    crowd = [_spinner(cpu, 30) for _ in range(4)]
    child = _spinner(cpu, 30)
    try:
        status, code = executor.wait_within(child, 2.0)
    finally:
        _reap(crowd + [child])
    assert status is None and code == executor.EXIT_BUSY


def test_a_child_that_ends_in_time_is_waited_for(cpu):
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    status, code = executor.wait_within(pid, 5.0)
    assert os.waitstatus_to_exitcode(status) == 7 and code == 0
