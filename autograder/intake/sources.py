"""Upload times and identities from the LMS's own records, never guessed from a download.

A Canvas or Moodle download carries no upload time (both stamp every zip entry with the
time of the download: :mod:`autograder.intake.collect`), and an anonymous Canvas download
names ``anon_<id>`` instead of a user. The LMSs keep the facts elsewhere; ``collect
--times FILE`` and ``export/feedback-package --anonymous-map FILE`` read them:

* **Canvas, the Submissions API** (``GET /api/v1/courses/:course_id/assignments/
  :assignment_id/submissions``; the Submission object of Canvas's API documentation,
  built by ``lib/api/v1/submission.rb``): a JSON list of submissions, each with
  ``user_id``, ``submitted_at`` (ISO 8601, UTC, ``null`` when nothing was submitted),
  ``late``, ``seconds_late`` and, for an anonymously graded assignment,
  ``anonymous_id``. Saved as the API returns it (a list, or several pages' lists in one
  list). The submission's time is ``submitted_at``; a student collected as
  ``anon_<anonymous_id>`` is matched by that id, and once Canvas shows user ids beside
  anonymous ones (anonymity lifted), the same file maps ``anon_<id>`` back to the user.
* **Moodle, the grading worksheet** ("Download grading worksheet" of an assignment with
  offline grading; ``mod/assign/gradingtable.php`` in download mode): a CSV whose
  ``Identifier`` is ``Participant <id>`` (the participant id of the download's folder
  names) and whose ``Last modified (submission)`` is ``userdate()`` of the submission's
  time (``-`` when none), e.g. ``Thursday, 1 October 2026, 11:59 PM``, written in the
  downloading user's time zone, which the file does not name: ``--times-zone`` gives it.
* **An anonymous-id map** for Canvas: a CSV with ``anonymous_id`` and ``user_id``
  columns (or the Submissions API JSON above).

Each file is capped at :data:`MAX_BYTES`; what it holds is hostile (escaped where it is
shown, never used as a path).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from autograder.lms import MOODLE_PARTICIPANT
from autograder.safe_text import terminal

#: Bytes a times or map file may have (a class of thousands is a few MB).
MAX_BYTES = 32 * 1024 * 1024
#: Moodle's worksheet headers (``lang/en/assign.php``: ``recordid``, ``timesubmitted``).
MOODLE_ID, MOODLE_TIME = "Identifier", "Last modified (submission)"
#: ``userdate()``'s default, ``strftimedaydatetime``: English's (``lang/en/langconfig.php``:
#: ``%A, %d %B %Y, %I:%M %p``) and US English's (``lang/en_us``: ``%A, %B %d, %Y, %I:%M
#: %p``), each also without its weekday and in the 24-hour form some packs use.
MOODLE_FORMATS = tuple(f"{day}{date}, {clock}" for date in ("%d %B %Y", "%B %d, %Y")
                       for day in ("%A, ", "") for clock in ("%I:%M %p", "%H:%M"))


class SourceError(ValueError):
    """A times or map file that cannot be read as one of the LMSs' formats."""


@dataclasses.dataclass(frozen=True)
class Upload:
    """What the LMS recorded of one student's submission."""

    student_id: str                 # as collect names the student (user id, anon_<id>, ...)
    submitted_at: datetime | None   # aware, UTC; None: nothing submitted
    late: bool | None = None        # the LMS's own late flag, where it has one
    lms: str = ""


def _read(path: Path) -> str:
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(f"{terminal(str(path))}: cannot be read ({exc.strerror})") from None
    if size > MAX_BYTES:
        raise SourceError(f"{terminal(str(path))}: {size} bytes, more than the "
                          f"{MAX_BYTES // 2**20} MB a times file may have")
    return path.read_bytes().decode("utf-8-sig", errors="replace")


def _canvas_entries(data) -> list[dict]:
    """The submissions of an API response saved as it came (a list, or a list of pages)."""
    if isinstance(data, dict) and isinstance(data.get("submissions"), list):
        data = data["submissions"]
    if not isinstance(data, list):
        raise SourceError("a Canvas Submissions API export is a JSON list of submissions")
    out = []
    for item in data:
        out.extend(_canvas_entries(item) if isinstance(item, list) else [item])
    if not all(isinstance(e, dict) and ("user_id" in e or "anonymous_id" in e)
               for e in out):
        raise SourceError("every entry of a Canvas Submissions API export has user_id "
                          "(or anonymous_id)")
    return out


def _canvas_time(entry: dict) -> datetime | None:
    text = entry.get("submitted_at")
    if text in (None, ""):
        return None
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise SourceError(f"submitted_at {terminal(str(text))!s} is not an ISO 8601 time") \
            from None
    if when.tzinfo is None:
        raise SourceError(f"submitted_at {terminal(str(text))} has no zone (Canvas writes "
                          f"UTC with a Z)")
    return when.astimezone(timezone.utc)


def _id_text(value) -> str:
    text = str(value).strip()
    if not re.fullmatch(r"[A-Za-z0-9]{1,40}", text):
        raise SourceError(f"an id {terminal(text[:60])!s} is not a Canvas or Moodle id")
    return text


def canvas_uploads(data) -> list[Upload]:
    entries = _canvas_entries(data)
    assignments = sorted({str(e["assignment_id"])[:20] for e in entries
                          if e.get("assignment_id") not in (None, "")})
    if len(assignments) > 1:             # one download is one assignment: which one?
        shown = ", ".join(terminal(a) for a in assignments[:5])
        raise SourceError(f"holds the submissions of {len(assignments)} assignments "
                          f"(assignment_id {shown}{', ...' if len(assignments) > 5 else ''}): "
                          f"save those of the downloaded one, GET /api/v1/courses/:course_id/"
                          f"assignments/:assignment_id/submissions")
    out = []
    for entry in entries:
        when, late = _canvas_time(entry), entry.get("late")
        late = bool(late) if late is not None else None
        for key, prefix in (("user_id", ""), ("anonymous_id", "anon_")):
            if entry.get(key) not in (None, ""):
                out.append(Upload(prefix + _id_text(entry[key]), when, late, "canvas"))
    return out


def _moodle_time(text: str, zone: ZoneInfo | None) -> datetime | None:
    text = " ".join(text.split())
    if text in ("", "-"):
        return None
    try:                                           # a site that writes ISO, with its zone
        when = datetime.fromisoformat(text)
        if when.tzinfo is not None:
            return when.astimezone(timezone.utc)
    except ValueError:
        when = None
    for fmt in MOODLE_FORMATS:
        if when is not None:
            break
        try:
            when = datetime.strptime(text, fmt)
        except ValueError:
            continue
    if when is None:
        raise SourceError(f"{MOODLE_TIME!r} {terminal(text[:80])} is not a time Moodle "
                          f"writes (e.g. 'Thursday, 1 October 2026, 11:59 PM')")
    if zone is None:
        raise SourceError("Moodle writes the worksheet's times in the time zone of the user "
                          "who downloaded it (their profile's, else the site's) without "
                          "naming it: give it with --times-zone, e.g. --times-zone "
                          "Europe/Berlin")
    return when.replace(tzinfo=zone).astimezone(timezone.utc)


def moodle_uploads(text: str, zone: ZoneInfo | None) -> list[Upload]:
    rows = list(csv.DictReader(io.StringIO(text)))
    out = []
    for row in rows:
        ident = str(row.get(MOODLE_ID) or "").strip()
        if not ident.startswith(MOODLE_PARTICIPANT):
            raise SourceError(f"{MOODLE_ID} {terminal(ident[:60])} is not "
                              f"'{MOODLE_PARTICIPANT}<id>'")
        out.append(Upload(_id_text(ident[len(MOODLE_PARTICIPANT):]),
                          _moodle_time(str(row.get(MOODLE_TIME) or ""), zone), None, "moodle"))
    return out


def zone_of(name: str | None) -> ZoneInfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SourceError(f"--times-zone {terminal(name)}: not a time zone name (e.g. "
                          f"Europe/Berlin, America/New_York, UTC)") from None


def read_uploads(path: Path, zone: str | None = None) -> dict[str, Upload]:
    """``{student id: Upload}`` from a Canvas Submissions API export (JSON) or a Moodle
    grading worksheet (CSV), told apart by their content."""
    text = _read(path)
    where = terminal(str(path))
    try:
        if text.lstrip().startswith(("[", "{")):
            uploads = canvas_uploads(json.loads(text))
        else:
            header = next(csv.reader(io.StringIO(text)), [])
            if MOODLE_ID not in header or MOODLE_TIME not in header:
                raise SourceError(f"neither a Canvas Submissions API export (JSON) nor a "
                                  f"Moodle grading worksheet (CSV with {MOODLE_ID!r} and "
                                  f"{MOODLE_TIME!r} columns; Moodle translates them: "
                                  f"download the worksheet with English as your language)")
            uploads = moodle_uploads(text, zone_of(zone))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except SourceError as exc:
        raise SourceError(f"{where}: {exc}") from None
    out: dict[str, Upload] = {}
    for upload in uploads:
        known = out.get(upload.student_id)
        if known is not None and known != upload:
            raise SourceError(f"{where}: student {upload.student_id} is listed twice with "
                              f"different times")
        out[upload.student_id] = upload
    return out


def read_anonymous_map(path: Path) -> dict[str, str]:
    """``{"anon_<id>": user id}`` from a CSV (``anonymous_id``, ``user_id``) or a Canvas
    Submissions API export whose entries carry both."""
    text = _read(path)
    where = terminal(str(path))
    pairs: list[tuple[str, str]] = []
    try:
        if text.lstrip().startswith(("[", "{")):
            pairs = [(str(e["anonymous_id"]), str(e["user_id"]))
                     for e in _canvas_entries(json.loads(text))
                     if e.get("anonymous_id") not in (None, "") and
                     e.get("user_id") not in (None, "")]
        else:
            rows = list(csv.DictReader(io.StringIO(text)))
            if rows and not {"anonymous_id", "user_id"} <= set(rows[0]):
                raise SourceError("an anonymous-id map has anonymous_id and user_id columns")
            pairs = [(str(r["anonymous_id"]), str(r["user_id"])) for r in rows]
        mapping = {}
        for anon, user in pairs:
            anon = anon.strip().removeprefix("anon_")
            mapping[f"anon_{_id_text(anon)}"] = _id_text(user)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except SourceError as exc:
        raise SourceError(f"{where}: {exc}") from None
    if not mapping:
        raise SourceError(f"{where}: maps no anonymous id to a user id (Canvas's API lists "
                          f"user ids beside anonymous ones once anonymity is lifted)")
    if len(set(mapping.values())) != len(mapping):
        raise SourceError(f"{where}: two anonymous ids map to the same user")
    return mapping


def late_sources(extensions: Path | None, anonymous: Path | None):
    """``(extensions or None, anonymous-id map or None)`` of export's and
    feedback-package's ``--extensions`` and ``--anonymous-map``."""
    from autograder.results import late

    found = late.read_extensions(extensions)
    return (found if found.deadlines else None,
            read_anonymous_map(anonymous) if anonymous else None)


def unknown_times_note(submissions: Path, had_times: bool) -> str | None:
    """What ``collect`` says of the notebooks of a Canvas or Moodle download that have no
    upload time (None: every one has one)."""
    from autograder.results import late

    rows = [r for r in late.read_submissions(submissions).values() if late.time_unknown(r)]
    if not rows:
        return None
    students = len({r["student_id"] for r in rows})
    return (f"{len(rows)} notebook(s) of {students} student(s) from a Canvas or Moodle "
            f"download have no upload time"
            + (" in the --times file (not listed there)" if had_times else
               ": the download's file times are the download's. Before a late policy, "
               "collect again with --times FILE (Canvas's Submissions API JSON or Moodle's "
               "grading worksheet); docs/grading.md"))
