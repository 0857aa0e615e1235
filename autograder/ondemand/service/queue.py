"""The queue: ``Settings.workers`` threads (one per core by default), each running one
grading job at a time (the job itself runs in its own processes, or on a cluster)."""

from __future__ import annotations

import logging
import queue as stdlib_queue
import threading
from typing import Callable

from .intake import Receipt

log = logging.getLogger("autograder.service")


class GradingQueue:
    """Receipts in, records out; ``state`` says where each student's notebook is."""

    def __init__(self, grade: Callable[[Receipt], list[dict]], workers: int,
                 after_grading: tuple[Callable[[dict], None], ...] = ()):
        self._grade, self._after = grade, after_grading
        self._queue: stdlib_queue.Queue = stdlib_queue.Queue()
        self._lock = threading.Lock()
        self.state: dict[tuple[str, str, str], str] = {}
        self._threads = [threading.Thread(target=self._work, daemon=True, name=f"grader-{i}")
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def put(self, receipt: Receipt) -> None:
        self._set(receipt, "queued")
        self._queue.put(receipt)

    def join(self) -> None:
        """Wait until every receipt put so far is graded (or failed)."""
        self._queue.join()

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()

    def _set(self, receipt: Receipt, state: str) -> None:
        with self._lock:
            self.state[(receipt.student_id, receipt.assignment, receipt.notebook)] = state

    def _work(self) -> None:
        while True:
            receipt = self._queue.get()
            try:
                if receipt is None:
                    return
                self._one(receipt)
            finally:
                self._queue.task_done()

    def _one(self, receipt: Receipt) -> None:
        self._set(receipt, "grading")
        try:
            records = self._grade(receipt)
        except Exception as exc:            # the student sees that it failed, the log why
            log.exception("grading %s failed", receipt)
            self._set(receipt, f"failed: {type(exc).__name__}; the instructor has the details")
            return
        self._set(receipt, "graded")
        for record in records:
            for hook in self._after:
                try:
                    hook(record)
                except Exception:
                    log.exception("after_grading hook %r failed", hook)
