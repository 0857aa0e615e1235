"""Text from files the instructor did not write (student names, e-mails, ids, folder and
file names from an LMS download or a student's zip, messages that quote a submission),
made safe where it is shown:

* :func:`terminal`: control characters (terminal escape sequences, carriage returns,
  bells, C1 controls) shown as ``\\xNN`` escapes, and bidirectional controls (U+202A-202E,
  U+2066-2069, U+200E/200F, U+061C) and zero-width characters (U+200B-200D, U+2060,
  U+FEFF) as ``\\uNNNN`` escapes, so a file name can neither rewrite the instructor's
  terminal nor be shown in another order than the one it is stored in;
* :func:`csv_cell`, :func:`writer`, :class:`DictWriter`: a text cell that a spreadsheet
  would run as a formula gets a leading ``'``, as OWASP recommends for CSV injection:
  one starting with ``= + - @`` or their full-width forms ``＝ ＋ － ＠``, with a tab, a
  carriage return or a newline, or with white space (or invisible characters) followed
  by one of those; numbers stay numbers.

HTML pages escape with :func:`html.escape` where they are built (``feedback.py``).
"""

from __future__ import annotations

import csv
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_AND_NEWLINES = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: Bidirectional controls and zero-width characters: shown escaped by :func:`terminal`.
_INVISIBLE = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060\ufeff"
_INVISIBLE_RE = re.compile(f"[{_INVISIBLE}]")
#: A cell a spreadsheet may run as a formula: white space or invisible characters, then
#: a formula character (ASCII or full-width); or a tab, carriage return or newline first.
_FORMULA = re.compile(f"[\\s\u3000{_INVISIBLE}]*[=+\\-@\uff1d\uff0b\uff0d\uff20]|[\t\r\n]")


#: The longest one-line message kept per graded cell (grades.csv, the page's headline).
MESSAGE_CHARS = 300
#: The longest feedback text kept per graded cell.
FEEDBACK_CHARS = 4_000
#: The longest answer source kept (results.jsonl, the feedback page).
ANSWER_CHARS = 20_000
#: The longest comment on a written answer kept (the manual scores, the formgrader's).
COMMENT_CHARS = 2_000
#: The longest error text a child sends (cut in the child, before it crosses the wire;
#: the records cut it again to the limits above).
CHILD_ERROR_CHARS = FEEDBACK_CHARS
#: The longest line of the item-analysis report's "common problem" column.
REPORT_CHARS = 120


def shorten(text, limit: int, *, one_line: bool = False) -> str:
    """``text`` (``None`` as empty) cut to at most ``limit`` characters, ending in ``…``
    when cut; ``one_line`` folds every run of white space into one space first. The one
    truncation of the grader: the engine's messages and the records use it alike."""
    text = "" if text is None else str(text)
    if one_line:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def terminal(text, keep_newlines: bool = False) -> str:
    """``text`` with its control characters escaped (newlines too, unless kept), and its
    bidirectional controls and zero-width characters."""
    pattern = _CONTROL if keep_newlines else _CONTROL_AND_NEWLINES
    text = pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    return _INVISIBLE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def csv_cell(value):
    """A CSV cell that no spreadsheet runs as a formula (strings only)."""
    if isinstance(value, str) and _FORMULA.match(value):
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
