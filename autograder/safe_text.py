"""Text from files the instructor did not write (student names, e-mails, ids, folder and
file names from an LMS download or a student's zip, messages that quote a submission),
made safe where it is shown:

* :func:`terminal`: control characters (terminal escape sequences, carriage returns,
  bells, C1 controls) shown as ``\\xNN`` escapes, so a file name cannot rewrite the
  instructor's terminal;
* :func:`csv_cell`, :func:`writer`, :class:`DictWriter`: a text cell that a spreadsheet
  would run as a formula (starting with ``= + - @``, a tab or a carriage return) gets a
  leading ``'``, as OWASP recommends for CSV injection; numbers stay numbers.

HTML pages escape with :func:`html.escape` where they are built (``feedback.py``).
"""

from __future__ import annotations

import csv
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_AND_NEWLINES = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


#: The longest one-line message kept per graded cell (grades.csv, the page's headline).
MESSAGE_CHARS = 300
#: The longest feedback text kept per graded cell.
FEEDBACK_CHARS = 4_000
#: The longest answer source kept (results.jsonl, the feedback page).
ANSWER_CHARS = 20_000


def shorten(text, limit: int, *, one_line: bool = False) -> str:
    """``text`` (``None`` as empty) cut to at most ``limit`` characters, ending in ``…``
    when cut; ``one_line`` folds every run of white space into one space first. The one
    truncation of the grader: the engine's messages and the records use it alike."""
    text = "" if text is None else str(text)
    if one_line:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def terminal(text, keep_newlines: bool = False) -> str:
    """``text`` with its control characters escaped (newlines too, unless kept)."""
    pattern = _CONTROL if keep_newlines else _CONTROL_AND_NEWLINES
    return pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def csv_cell(value):
    """A CSV cell that no spreadsheet runs as a formula (strings only)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


class _SafeWriter:
    def __init__(self, inner):
        self._inner = inner

    def writerow(self, row):
        return self._inner.writerow([csv_cell(v) for v in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def writer(f, **kwargs) -> _SafeWriter:
    """:func:`csv.writer` whose text cells are :func:`csv_cell`-safe."""
    return _SafeWriter(csv.writer(f, **kwargs))


class DictWriter(csv.DictWriter):
    """:class:`csv.DictWriter` whose text cells are :func:`csv_cell`-safe."""

    def writerow(self, rowdict):
        return super().writerow({k: csv_cell(v) for k, v in rowdict.items()})

    def writerows(self, rowdicts):
        for row in rowdicts:
            self.writerow(row)
