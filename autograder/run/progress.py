"""A plain-text progress bar for long runs (no dependency).

On a terminal it redraws one line on stderr (at most a few times a second); when stderr
is not a terminal (a batch job's log under Slurm or Kubernetes, CI) it prints a plain
line every ``every`` seconds (default 5) while the run lasts, even while one slow
notebook is being graded (the run calls :meth:`Progress.tick` as it waits), and a final
line, so a log shows the run moving without being filled with redraws. The total is the work to do (notebooks handed
in and not graded yet), and the time left is estimated from the measured rate.
"""

from __future__ import annotations

import sys
import time


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Count work items; draw ``[#####.....] 120/2400 notebooks  5%  2 failed  eta 3m10s``.

    ``advance()`` records one item done; ``worked=False`` for an item that needed no work
    (a missing notebook: it counts towards the total but not towards the speed).
    """

    def __init__(self, total: int, stream=None, unit: str = "items", width: int = 30,
                 interactive: bool | None = None, clock=time.monotonic, every: float = 5.0):
        self.total, self.unit, self.width = total, unit, width
        self.stream = sys.stderr if stream is None else stream
        if interactive is None:
            isatty = getattr(self.stream, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self.clock = clock
        self.start = clock()
        self.done = 0          # items finished, with or without work
        self.worked = 0        # items that took work (for the rate)
        self.failed = 0
        self._last_draw = -1.0
        self.every = every
        self._last_plain = self.start
        self._closed = False

    def advance(self, failed: bool = False, worked: bool = True) -> None:
        self.done += 1
        self.worked += bool(worked)
        self.failed += bool(failed)
        if self.interactive and (self.clock() - self._last_draw >= 0.2 or self.done >= self.total):
            self._draw()
        else:
            self.tick()

    def tick(self) -> None:
        """Called as the run waits: in a log, a plain line when ``every`` seconds have
        passed since the last one (or the start); on a terminal, the bar redrawn once a
        second (its time left moves on)."""
        if self._closed or self.done >= self.total:
            return
        now = self.clock()
        if self.interactive:
            if now - self._last_draw >= 1.0:
                self._draw()
        elif now - self._last_plain >= self.every:
            self._last_plain = now
            self.stream.write(self.plain_line() + "\n")
            self.stream.flush()

    def plain_line(self) -> str:
        """One line for a log: ``graded 120/2400 notebooks (5%), 2 not ok, eta 3m10s``."""
        fraction = self.done / self.total if self.total else 1.0
        text = f"graded {self.done}/{self.total} {self.unit} ({fraction:.0%})"
        if self.failed:
            text += f", {self.failed} not ok"
        if 0 < self.worked and self.done < self.total:
            text += f", eta {format_duration(self._left())}"
        return text

    def _left(self) -> float:
        """Seconds left at the measured rate (time per item that took work)."""
        return (self.clock() - self.start) / max(self.worked, 1) * (self.total - self.done)

    def line(self) -> str:
        fraction = self.done / self.total if self.total else 1.0
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        text = f"[{bar}] {self.done}/{self.total} {self.unit} {fraction:4.0%}"
        if self.failed:
            text += f"  {self.failed} not ok"
        if 0 < self.done < self.total and self.worked:
            text += f"  eta {format_duration(self._left())}"
        return text

    def _draw(self) -> None:
        self._last_draw = self.clock()
        self.stream.write("\r" + self.line() + "\033[K")
        self.stream.flush()

    def final_line(self) -> str:
        elapsed = self.clock() - self.start
        text = f"graded {self.done}/{self.total} {self.unit} in {format_duration(elapsed)}"
        if self.worked:
            text += f" ({elapsed / self.worked:.2f} s each)"
        if self.failed:
            text += f", {self.failed} not ok"
        return text

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.interactive:
            self._draw()
            self.stream.write("\n")
        self.stream.write(self.final_line() + "\n")
        self.stream.flush()
