"""nbgrader's exchange, replaced by none: this course hands notebooks out and takes them
in through the LMS (student bundles, ``python -m autograder collect``) and sends feedback
back with ``python -m autograder feedback-package``.

nbgrader's default exchange is a shared folder (``/usr/local/share/nbgrader/exchange``)
that nothing here creates: formgrader listed it on every page, logging "Unwritable
directory" each time and showing a warning. With these classes (set in
``autograder/nbgrader_config.py``, which ``make lab`` uses), listing finds nothing, and
releasing or collecting through the exchange stops with a message saying what to do
instead. ``gradebook push`` writes the same classes into its own course folder's
configuration (``autograder/results/gradebook.py``; kept self-contained there).
"""

from __future__ import annotations

from nbgrader.exchange.abc import (ExchangeCollect, ExchangeList, ExchangeReleaseAssignment,
                                   ExchangeReleaseFeedback)

NO_EXCHANGE = "this course uses no nbgrader exchange"


class NoExchangeList(ExchangeList):
    """Nothing was released through an exchange: nothing to list, and no error."""

    def start(self):
        return []


class NoExchangeReleaseAssignment(ExchangeReleaseAssignment):
    def start(self):
        self.fail(f"{NO_EXCHANGE}: hand the notebooks out as a student bundle "
                  f"(`make bundle`, docs/homework.md) through your LMS")


class NoExchangeCollect(ExchangeCollect):
    def start(self):
        self.fail(f"{NO_EXCHANGE}: collect the LMS's download with "
                  f"`python -m autograder collect` (docs/grading.md)")


class NoExchangeReleaseFeedback(ExchangeReleaseFeedback):
    def start(self):
        self.fail(f"{NO_EXCHANGE}: send the feedback with "
                  f"`python -m autograder feedback-package` (docs/grading.md)")


def configure(c) -> None:
    """Set the classes above as nbgrader's exchange in the config ``c``."""
    c.ExchangeFactory.list = NoExchangeList
    c.ExchangeFactory.release_assignment = NoExchangeReleaseAssignment
    c.ExchangeFactory.collect = NoExchangeCollect
    c.ExchangeFactory.release_feedback = NoExchangeReleaseFeedback
