"""The service without its web front: intake, queue, releases and the exchange watcher,
usable (and tested) without a hub."""

from __future__ import annotations

import functools
import logging
import os
import threading
from pathlib import Path

from autograder import SOLUTIONS_DIR
from autograder.notebook.source import course_notebooks

from . import jobs
from .intake import Intake, RateLimit, Receipt, Refused
from .pages import Releases
from .queue import GradingQueue
from .settings import Settings

log = logging.getLogger("autograder.service")
#: The exchange folders already taken (kept across restarts: none is graded twice).
SEEN_FILE = ".exchange-taken"


class GradingService:
    def __init__(self, settings: Settings, solutions: Path = SOLUTIONS_DIR):
        self.settings = settings
        self.course = sorted(course_notebooks(solutions))
        self.intake = Intake(settings.submissions, set(self.course),
                             max_bytes=settings.max_bytes,
                             rate=RateLimit(settings.rate_count, settings.rate_window))
        self.releases = Releases(settings.out)
        jobs.ensure_secret(settings)
        grade = functools.partial(jobs.grade, settings, outcome=jobs.Outcome(settings.out))
        self.queue = GradingQueue(grade, settings.workers, settings.after_grading)
        self._seen_file = settings.submissions / SEEN_FILE
        self._seen = set(self._seen_file.read_text(encoding="utf-8").split("\n")) \
            if self._seen_file.is_file() else set()
        self._stop = threading.Event()

    def submit(self, student_id: str, assignment: str, notebook: str, data: bytes,
               via: str = "upload") -> Receipt:
        """Take and queue a notebook; :class:`Refused` says why not."""
        receipt = self.intake.accept(student_id, assignment, notebook, data, via)
        self.queue.put(receipt)
        return receipt

    def state_of(self, student_id: str) -> dict[tuple[str, str], str]:
        return {(a, n): s for (who, a, n), s in dict(self.queue.state).items()
                if who == student_id}

    # ------------------------------------------------------------------ the exchange
    def scan_inbound(self) -> list[Receipt]:
        """Queue what nbgrader's ``submit`` put in the inbound folder since the last look
        (``inbound/<user>+<assignment>+<timestamp>[+<random>]/<notebook>.ipynb``); the
        hub user who submitted is the name nbgrader wrote, checked against the folder's
        owner (a student cannot hand in as another)."""
        inbound = self.settings.inbound
        taken = []
        if inbound is None or not inbound.is_dir():
            return taken
        for folder in sorted(inbound.iterdir()):
            if folder.name in self._seen or not folder.is_dir():
                continue
            self._seen.add(folder.name)
            with open(self._seen_file, "a", encoding="utf-8") as f:
                f.write(folder.name + "\n")
            student, _, rest = folder.name.partition("+")
            assignment = rest.partition("+")[0]
            if not _owned_by(folder, student):
                log.warning("inbound %r is not owned by %r: ignored", folder.name, student)
                continue
            for path in sorted(folder.glob("*.ipynb")):
                taken += self._take_file(student, assignment, path)
        return taken

    def _take_file(self, student: str, assignment: str, path: Path) -> list[Receipt]:
        try:
            data = _read_own_file(path, student, self.settings.max_bytes)
            return [self.submit(student, assignment, path.name, data, via="exchange")]
        except (Refused, OSError) as exc:
            log.warning("inbound %s/%s refused: %s", student, path.name, exc)
            return []

    def watch(self) -> None:
        """Scan the inbound folder every ``poll_seconds`` until :meth:`stop`."""
        while not self._stop.wait(self.settings.poll_seconds):
            try:
                self.scan_inbound()
            except OSError:
                log.exception("cannot read %s", self.settings.inbound)

    def stop(self) -> None:
        self._stop.set()
        self.queue.stop()


def _read_own_file(path: Path, student: str, max_bytes: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of ``student`` (never a link: the
    service would read what the link names with its own rights), else :class:`Refused`."""
    import pwd
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or pwd.getpwuid(info.st_uid).pw_name != student:
            raise Refused(f"{path.name} is not a file of {student}'s own", 403)
        if info.st_size > max_bytes:
            raise Refused(f"{path.name} is {info.st_size} bytes; the limit is {max_bytes}", 413)
        return f.read(max_bytes + 1)


def _owned_by(folder: Path, user: str) -> bool:
    import pwd

    try:
        return pwd.getpwuid(folder.stat().st_uid).pw_name == user
    except (KeyError, OSError):
        return False
