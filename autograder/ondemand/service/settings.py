"""The service's settings, in one frozen dataclass (read from the command line)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable

#: A notebook larger than this is refused (bytes); the course's are well under 1 MB.
DEFAULT_MAX_BYTES = 5 * 1024 * 1024
#: A student may hand in this many notebooks per window ...
DEFAULT_RATE_COUNT = 5
#: ... of this many seconds.
DEFAULT_RATE_WINDOW = 600.0
#: Where a grading job runs: this machine's queue, a Slurm cluster, a Kubernetes Job.
BACKENDS = ("local", "slurm", "kubernetes")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything the service needs; the folders are the course's (see docs/grading.md)."""

    #: ``SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb`` the service keeps (its
    #: ``_submissions.csv`` holds the receipt times ``grade`` copies into each record).
    submissions: Path
    #: The course's OUT folder, as ``grade --out`` writes it.
    out: Path
    #: nbgrader's exchange folder of the course (``EXCHANGE/COURSE/inbound`` is watched).
    inbound: Path | None = None
    workers: int = dataclasses.field(default_factory=lambda: os.cpu_count() or 1)
    max_bytes: int = DEFAULT_MAX_BYTES
    rate_count: int = DEFAULT_RATE_COUNT
    rate_window: float = DEFAULT_RATE_WINDOW
    backend: str = "local"
    #: Extra ``grade`` options (``--timeout``, ``--credit`` ...), passed to every job.
    grade_options: tuple[str, ...] = ()
    #: Hub users who may release hidden results (the hub's admins may too).
    instructors: frozenset[str] = frozenset()
    #: ``sbatch`` options (``--partition=...``) or the Kubernetes image, by backend.
    cluster_options: tuple[str, ...] = ()
    #: Seconds between two looks at the exchange's inbound folder.
    poll_seconds: float = 5.0
    #: Called with each graded record, in order (LTI grade passback plugs in here).
    after_grading: tuple[Callable[[dict], None], ...] = ()

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r}: choose one of {', '.join(BACKENDS)}")
        for name in ("workers", "max_bytes", "rate_count"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
