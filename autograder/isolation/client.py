"""The grader's side of the worker: start it, send it a job, read its reply defensively.

:class:`Worker` starts the pre-warmed worker process (:mod:`autograder.isolation.executor`)
and talks to it over a pipe, one job at a time; every request carries an id that its
reply repeats, and a reply with another id is dropped. :func:`parse_reply` reads a
child's result lines with the wire's caps (:mod:`autograder.isolation.wire`): nothing a
child wrote is trusted.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path

from autograder.isolation import confine, seccomp, wire
from autograder.isolation.executor import HOME_PREFIX, RESULT_CAP


class WorkerError(RuntimeError):
    """The worker could not run a job (not the submission's fault)."""


class Worker:
    """A pre-warmed worker process; ``run(job)`` forks a confined child for one job.

    Thread-safe (one job at a time). Restarts itself if the worker dies.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._owner = os.getpid()
        self._proc: subprocess.Popen | None = None
        self._next_id = 0
        self.dropped = 0            # late replies read and ignored (see run)
        self.mode: str | None = None
        self.home = Path(tempfile.mkdtemp(prefix=HOME_PREFIX))
        (self.home / "root").mkdir()
        # A child's own uid must be able to pass through (not list) this folder.
        os.chmod(self.home, 0o711)

    def _start(self) -> None:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(self.home / "mpl"),
            "IPYTHONDIR": str(self.home / "ipython"), "PYTHONDONTWRITEBYTECODE": "1",
        }
        for name in ("AUTOGRADER_ISOLATION", confine.ALLOW_ROOT_FALLBACK_ENV,
                     seccomp.DISABLE_ENV):
            if name in os.environ:
                env[name] = os.environ[name]
        src = str(Path(__file__).resolve().parents[2])                  # the repository
        self._proc = subprocess.Popen(
            [sys.executable, "-c",
             f"import sys; sys.path.insert(0, {src!r}); "
             "from autograder.isolation.executor import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=self.home, env=env, close_fds=True,
        )
        hello = self._proc.stdout.readline()
        try:
            self.mode = json.loads(hello)["mode"]
        except (ValueError, KeyError, TypeError):
            self._stop()
            raise WorkerError("the grading worker failed to start") from None

    def run(self, job: dict, conf: dict, limits: confine.Limits) -> dict:
        """Run ``job``; its reply. Every request carries a fresh id and only the reply
        with that id is accepted: a reply left over from an earlier request (one whose
        reader gave up) is read and dropped, never taken for this one's."""
        with self._lock:
            for attempt in range(2):
                self._next_id += 1
                request = dict(job, id=self._next_id, conf=conf, limits=asdict(limits))
                line = (json.dumps(request) + "\n").encode()
                if self._proc is None or self._proc.poll() is not None:
                    self._start()
                try:
                    self._proc.stdin.write(line)
                    self._proc.stdin.flush()
                    while True:
                        reply = self._proc.stdout.readline()
                        if not reply:
                            break
                        data = json.loads(reply)
                        if data.get("id") != self._next_id:
                            self.dropped += 1          # a late reply: not this job's
                            continue
                        if "worker_error" in data:
                            raise WorkerError(data["worker_error"])
                        data.pop("id", None)
                        data["output"] = self._output(data.pop("output_b64", ""))
                        return data
                except (BrokenPipeError, OSError, ValueError):
                    pass
                self._stop()
            raise WorkerError("the grading worker died twice on this job")

    @staticmethod
    def _output(text) -> str:
        """The child's output the worker sent in base64, as text (bad bytes replaced)."""
        try:
            data = wire.unb64(text, max_bytes=RESULT_CAP)
        except wire.DecodeError:
            return ""
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        """Stop the worker process and remove its temp folder. The worker is asked to end
        (its input closed) and killed only if it has not ended within 5 seconds, so that
        it reaps its zygote (whose CPU time then counts as the grader's)."""
        if os.getpid() == self._owner and self._proc is not None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._stop()
        if os.getpid() == self._owner:
            shutil.rmtree(self.home, ignore_errors=True)

    def _stop(self) -> None:
        if os.getpid() != self._owner:   # a forked copy of this object: not ours to stop
            self._proc = None
            return
        if self._proc is not None:
            try:
                self._proc.kill()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            for f in (self._proc.stdin, self._proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            self._proc = None


_WORKERS: dict[int, Worker] = {}


def get_worker() -> Worker:
    """The worker of this process (a forked grader process gets its own)."""
    pid = os.getpid()
    if pid not in _WORKERS:
        worker = _WORKERS[pid] = Worker()
        atexit.register(worker.close)
    return _WORKERS[pid]


#: Characters of one line of a child's results: a value of ``wire.MAX_VALUE_BYTES`` in
#: base64, and room for the rest of the line.
LINE_CAP = wire.MAX_VALUE_BYTES * 4 // 3 + 64 * 1024
#: Nesting of one line of a child's results (the runners' lines nest 2 levels deep).
LINE_DEPTH = 16
#: Separators (``,`` ``:``) in one line (the runners' lines hold about 20).
LINE_ITEMS = 1000
#: Lines of one child's results read (a notebook has at most 2,000 code cells; an
#: exercise's cases are far fewer): the rest are refused unread.
MAX_LINES = 20_000


def parse_reply(output: str) -> tuple[list[dict], list[str]]:
    """The child's JSON lines (objects), and why each complete line that was refused
    was refused. Each line is checked for length (:data:`LINE_CAP`) and nesting
    (:data:`LINE_DEPTH`) and size (:data:`LINE_ITEMS`) before it is parsed
    (``wire.loads``): a line nested 200,000 deep is refused, never a RecursionError in
    the grader; at most :data:`MAX_LINES` lines are read. A last line without its
    newline (output cut at :data:`RESULT_CAP`, a child killed mid-write) is dropped
    without being counted as refused."""
    lines, refused = [], []
    for n, match in enumerate(_LINE.finditer(output)):    # no list of all the lines
        if n >= MAX_LINES:
            refused.append(f"more than {MAX_LINES} lines")
            break
        text, complete = match.group(), match.group().endswith("\n")
        if not text.strip():
            continue
        try:
            obj = wire.loads(text, max_chars=LINE_CAP, max_depth=LINE_DEPTH,
                             max_items=LINE_ITEMS)
        except wire.DecodeError as exc:
            if complete:
                refused.append(str(exc))
            continue
        if isinstance(obj, dict):
            lines.append(obj)
        elif complete:
            refused.append("a line that is not a JSON object")
    return lines, refused


_LINE = re.compile(r"[^\n]+\n?")


def parse_lines(output: str) -> list[dict]:
    """The child's JSON lines; anything that does not parse is ignored (see
    :func:`parse_reply`)."""
    return parse_reply(output)[0]
