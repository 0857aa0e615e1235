"""Taking a submission in: the size cap, the per-student rate limit, the receipt time.

The receipt time is the service's clock when the bytes arrived, never a file's time
(a student controls those). It is written to ``SUBMISSIONS/_submissions.csv`` as
``submitted_at`` with ``source`` ``jupyterhub``, the file ``grade`` copies into each
record and the late policy of ``export`` reads.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import os
import re
import threading
import time
from pathlib import Path
from typing import Callable

from autograder import safe_text
from autograder.results import late

#: Hub user names the service takes as student ids (the hub's own rule is looser: a name
#: that could not be a folder of SUBMISSIONS is refused rather than rewritten).
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9@.+-]{0,99}")
SOURCE = "jupyterhub"


class Refused(ValueError):
    """A submission the service does not take; ``str()`` says why, for the student."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class Receipt:
    student_id: str
    assignment: str
    notebook: str
    #: ISO 8601, UTC, from the service's clock.
    received_at: str
    via: str


class RateLimit:
    """At most ``count`` submissions per student in any ``window`` seconds."""

    def __init__(self, count: int, window: float, clock: Callable[[], float] = time.monotonic):
        self.count, self.window, self.clock = count, window, clock
        self._seen: dict[str, collections.deque] = {}
        self._lock = threading.Lock()

    def take(self, student_id: str) -> None:
        """Count one submission of ``student_id``, or raise :class:`Refused` (429)."""
        with self._lock:
            now = self.clock()
            seen = self._seen.setdefault(student_id, collections.deque())
            while seen and now - seen[0] >= self.window:
                seen.popleft()
            if len(seen) >= self.count:
                wait = int(seen[0] + self.window - now) + 1
                raise Refused(f"too many submissions: at most {self.count} every "
                              f"{self.window:g} seconds; try again in {wait} seconds", 429)
            seen.append(now)


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Intake:
    """Checks a submission and files it under SUBMISSIONS with its receipt time."""

    def __init__(self, submissions: Path, course: set[tuple[str, str]], *, max_bytes: int,
                 rate: RateLimit, now: Callable[[], str] = utc_now):
        self.submissions, self.course, self.max_bytes = Path(submissions), course, max_bytes
        self.rate, self.now = rate, now
        self._lock = threading.Lock()
        self.submissions.mkdir(parents=True, exist_ok=True)

    def check(self, student_id: str, assignment: str, notebook: str, size: int) -> None:
        """Raise :class:`Refused` unless the submission may be taken (before reading it)."""
        if not STUDENT_ID.fullmatch(student_id or ""):
            raise Refused(f"user name {safe_text.terminal(student_id)!s} cannot be graded "
                          "(letters, digits and @.+- only)", 403)
        if (assignment, notebook) not in self.course:
            raise Refused(f"{safe_text.terminal(assignment)}/{safe_text.terminal(notebook)} "
                          "is not a notebook of this course", 404)
        if size > self.max_bytes:
            raise Refused(f"the notebook is {size} bytes; the limit is {self.max_bytes} "
                          "bytes: clear its outputs (Edit > Clear Outputs of All Cells), "
                          "save and submit again", 413)

    def accept(self, student_id: str, assignment: str, notebook: str, data: bytes,
               via: str) -> Receipt:
        """File ``data`` as the student's notebook; the rate limit counts it."""
        self.check(student_id, assignment, notebook, len(data))
        self.rate.take(student_id)
        received = self.now()
        folder = self.submissions / student_id / assignment
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{notebook}.partial"
        partial.write_bytes(data)
        os.replace(partial, folder / notebook)
        with self._lock:
            rows = late.read_submissions(self.submissions)
            rows[(student_id, assignment, notebook)] = {
                "student_id": student_id, "assignment": assignment, "notebook": notebook,
                "submitted_at": received, "lms_late": "", "source": SOURCE,
                "downloaded_at": "", "lms": ""}
            late.write_submissions(self.submissions, rows)
        return Receipt(student_id, assignment, notebook, received, via)
