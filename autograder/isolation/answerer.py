"""In the worker (trusted): one job's trusted answers, computed within the child's budget.

A child may ask for an earlier course function on inputs it chooses
(:mod:`autograder.isolation.answers`). The worker itself never runs such a call: it
reads the request (at most ``course_calls.MAX_CALL_BYTES``), answers it from the replies
it remembers, and else hands it to the job's *answering helper*, a process forked from
the worker (the course's functions already imported, nothing of any job read yet) on
the job's first call that is not remembered. The helper:

* runs under the child's own memory limit (``RLIMIT_AS`` = the job's ``memory_mb``,
  the limit the child itself runs under) and a CPU-time limit per call (the job's limit
  per cell or call) within the job's CPU limit (``RLIMIT_CPU``): a call the child could
  not afford itself fails there, never in the worker;
* checks each request against its budget before it runs
  (:func:`autograder.isolation.budget.check`);
* holds the arrays the child sent for later calls (``answers.MAX_BLOB_BYTES``).

A refused or failed call is an error reply to that child's call (its exercise's case
fails or errs), nothing more. A helper that breaks its CPU limit is killed by the kernel
(``SIGXCPU``), and one out of memory fails its call with ``MemoryError``; after a helper
ended, the job's later calls are refused with the reason. So the worker's own memory
holds at most :data:`WORKER_BYTES_PER_CALL` for a call, whatever a child asks, and it
waits for a call no longer than the job's deadline.
"""

from __future__ import annotations

import math
import os
import resource
import signal
import socket
import time

from autograder.isolation import answers as answering
from autograder.isolation import course_calls

#: What one call costs the worker's own memory at most: the request it reads and the
#: reply it passes on (each capped by the wire, each read into one buffer and never
#: copied), besides the replies it remembers (``answers.MEMO_BYTES``, the reply arriving
#: counted in it: :func:`answers.make_room`).
WORKER_BYTES_PER_CALL = 2 * course_calls.MAX_CALL_BYTES
#: Exit status of a helper the kernel stopped at its CPU limit.
_CPU_SIGNALS = (signal.SIGXCPU, signal.SIGKILL)


class Answerer:
    """The worker's side of one job's socket of trusted answers."""

    def __init__(self, sock: socket.socket, answers: frozenset, memory_mb: int,
                 call_seconds: float, cpu_seconds: float):
        self.sock, self.answers = sock, answers
        self.memory_mb, self.call_seconds = int(memory_mb), max(1.0, float(call_seconds))
        self.cpu_seconds = max(self.call_seconds, float(cpu_seconds))
        self.helper: socket.socket | None = None
        self.pid = 0
        self.ended = ""                 # why the helper is gone: later calls are refused
        self.requests = 0               # requests read from the child
        self.computed = 0               # of them, handed to the helper (not remembered)

    # -- the worker's side ----------------------------------------------------------------

    def serve(self, deadline: float) -> bool:
        """Answer one request of the child; False when its socket is done (closed, too
        large a request, out of time)."""
        head = answering.recv_exactly(self.sock, 8, deadline)
        if head is None:
            return False
        size = int.from_bytes(head, "big")
        if size > course_calls.MAX_CALL_BYTES:
            return False
        data = answering.recv_exactly(self.sock, size, deadline)
        if data is None:
            return False
        self.requests += 1
        key = answering.request_key(data)
        reply = answering.remembered(key, self.answers)
        if reply is None:
            reply = self._computed(data, key, deadline)
        try:
            self.sock.settimeout(max(0.1, deadline - time.monotonic()))
            answering.send_message(self.sock, len(reply).to_bytes(8, "big"), reply)
        except OSError:
            return False
        return True

    def _computed(self, data: bytes, key: bytes, deadline: float) -> bytes:
        self.computed += 1
        if self.ended:
            return answering.error_reply(self.ended)
        if self.helper is None:
            self._start()
        try:
            self.helper.settimeout(max(0.1, deadline - time.monotonic()))
            answering.send_message(self.helper, len(data).to_bytes(8, "big"), data)
            head = answering.recv_exactly(self.helper, 10, deadline)
            if head is not None:
                size, flag, spec_len = (int.from_bytes(head[:8], "big"), head[8], head[9])
                if size <= course_calls.MAX_CALL_BYTES:
                    answering.make_room(size)       # the memo and this reply: MEMO_BYTES
                    body = answering.recv_exactly(self.helper, spec_len + size, deadline)
                    if body is not None:
                        spec = body[:spec_len].decode()
                        reply = memoryview(body)[spec_len:]      # no copy of the reply
                        if flag:
                            answering.remember(key, spec, reply)
                        return reply
        except OSError:
            pass
        self.ended = self._why_ended(deadline)
        return answering.error_reply(self.ended)

    def _why_ended(self, deadline: float) -> str:
        """Stop the helper; the words for why its call got no answer."""
        status = self._stop()
        if status is not None and os.WIFSIGNALED(status) and \
                os.WTERMSIG(status) in _CPU_SIGNALS and time.monotonic() < deadline:
            return (f"RuntimeError: the course's function ran past the CPU-time limit of "
                    f"{self.call_seconds:g} s per call of your run (the grader computes "
                    f"calls within your run's own limits)")
        if time.monotonic() >= deadline:
            return "RuntimeError: your run's time was up before the course's function ended"
        return (f"MemoryError: the course's function stopped: it needed more than your "
                f"run's limits ({self.memory_mb} MB of memory, {self.call_seconds:g} s of "
                f"CPU per call)")

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for spec in self.answers:         # imported here once: the helper inherits them
            try:
                answering.preload(spec)
            except Exception:
                pass                      # the helper answers with the error
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                ours.close()
                self._helper_main(theirs)
                code = 0
            finally:
                os._exit(code)
        theirs.close()
        self.helper, self.pid = ours, pid

    def _stop(self) -> int | None:
        """End the helper (if any); its wait status, or None."""
        status = None
        if self.helper is not None:
            self.helper.close()
            self.helper = None
        if self.pid:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if not done:
                    os.kill(self.pid, signal.SIGKILL)
                    _, status = os.waitpid(self.pid, 0)
            except (ChildProcessError, ProcessLookupError):
                pass
            self.pid = 0
        return status

    def close(self) -> None:
        self._stop()
        self.sock.close()

    # -- the helper process (forked from the worker) --------------------------------------

    def _helper_main(self, sock: socket.socket) -> None:
        """Serve the worker's requests on ``sock`` under the child's limits, until it
        closes the socket."""
        import ctypes

        fd = sock.fileno()
        os.closerange(3, fd)
        os.closerange(fd + 1, 1 << 16)
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        cpu = math.ceil(self.cpu_seconds)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        memory = self.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        blobs = answering.Held()
        far = time.monotonic() + 10 ** 9
        while True:
            head = answering.recv_exactly(sock, 8, far)
            if head is None:
                return
            data = answering.recv_exactly(sock, int.from_bytes(head, "big"), far)
            if data is None:
                return
            _limit_cpu(self.call_seconds, cpu)
            reply, spec = answering.compute(data, self.answers, blobs, memory)
            name = (spec or "").encode()[:255]
            sock.settimeout(None)
            answering.send_message(sock, len(reply).to_bytes(8, "big")
                                   + bytes([spec is not None, len(name)]) + name, reply)


def _limit_cpu(seconds: float, hard: int) -> None:
    """The helper's CPU-time limit for its next call: what it used so far plus
    ``seconds`` (the kernel stops it there), never past ``hard``."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = min(hard, math.ceil(usage.ru_utime + usage.ru_stime + seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
