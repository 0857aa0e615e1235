"""Late work: when each notebook was handed in, and what a late policy takes off.

``collect`` writes ``SUBMISSIONS/_submissions.csv``: one row per placed notebook with the
time the LMS gives for its upload (``submitted_at``, ISO 8601, UTC; empty when the
download gives none), the LMS's own late flag (``lms_late``: ``yes`` for Canvas's
``LATE``, else empty) and, for Canvas and Moodle, the download's time (``downloaded_at``:
which of two downloads is the later). Upload times come from Gradescope's
``submission_metadata.yml`` (``created_at``, with its zone), from a folder's or zip's
file times in the plain folder layout (a zip time has no zone and is taken as UTC), or
from the clone's time in the Git route. Canvas and Moodle zips give none: both stamp
every entry with the time of the download (see ``autograder.intake.collect``).
``grade`` copies ``submitted_at`` and ``lms_late`` into each record; ``export --deadline
... --late-policy ...`` applies the policy:

* ``--deadline WHEN`` for every assignment, or ``--deadline ASSIGNMENT=WHEN`` (repeat it);
  ``WHEN`` is ISO 8601 (``2026-10-01T23:59``, ``2026-10-01 23:59+02:00``); without a zone
  it is UTC.
* ``--late-policy PERCENT[:CAP]``: ``PERCENT`` of the notebook's points off per day or
  part of a day after the deadline, at most ``CAP`` percent (default 100). ``none`` (the
  default) takes nothing off; ``zero`` gives late work 0.
* Canvas and Moodle downloads carry no upload time: ``collect --times FILE`` takes each
  notebook's from the LMS's own record (:mod:`autograder.intake.sources`; the ``lms``
  column says which LMS a row came from). A policy that takes points off refuses the
  notebooks of such a download that have no time (:func:`require_times`) unless
  ``--assume-late-days N`` says how late one the LMS flagged late counts; a penalty is
  never guessed. A notebook from elsewhere without a time and flagged late counts one
  day. The export's ``late.csv`` lists every late notebook with its days and the
  percentage taken off.
* ``--extensions FILE``: a student's own deadline for an assignment or a homework
  (:func:`deadline_for`, below).
* ``export --homework NAME=A,B,...``: a homework is as late as its latest notebook
  (:func:`penalties`), and its percentage comes off every notebook of it, so once off
  the homework's sum.

An export with a policy stores it in ``OUT/late_policy.json`` (:func:`save_policy`), so
that the feedback pages and ``feedback-package`` show the penalty the gradebook got.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from datetime import datetime, timezone
from pathlib import Path

from autograder import safe_text
from autograder.safe_text import terminal

SUBMISSIONS_CSV = "_submissions.csv"
SUBMISSION_COLUMNS = ["student_id", "assignment", "notebook", "submitted_at", "lms_late",
                      "source", "downloaded_at", "lms"]
#: The LMSs whose downloads carry no upload time (every zip entry has the download's
#: time): their notebooks' times come from ``collect --times`` or are unknown.
NO_UPLOAD_TIMES = ("canvas", "moodle")
LATE_COLUMNS = ["student_id", "assignment", "notebook", "submitted_at", "deadline",
                "days_late", "percent_off", "points_before", "points_after"]


def parse_time(text: str) -> datetime:
    """An ISO 8601 time as an aware UTC datetime (no zone: UTC)."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (write it as 2026-10-01T23:59, "
                         "optionally with a zone such as +02:00)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- the table

def read_submissions(submissions: Path) -> dict[tuple[str, str, str], dict]:
    """``{(student, assignment, notebook): row}`` of ``_submissions.csv`` (empty if none)."""
    path = submissions / SUBMISSIONS_CSV
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        return {(r["student_id"], r["assignment"], r["notebook"]): r for r in csv.DictReader(f)}


def write_submissions(submissions: Path, rows: dict[tuple[str, str, str], dict]) -> None:
    with open(submissions / SUBMISSIONS_CSV, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, SUBMISSION_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows[k] for k in sorted(rows))


# --------------------------------------------------------------------------- extensions

# Per-student extensions: a student's own deadline for an assignment or a homework.
#
# ``--extensions FILE`` (``export``, ``feedback-package``; stored with the late policy in
# ``OUT/late_policy.json``, so the feedback pages agree) is a CSV with the columns
# ``student_id``, ``assignment`` (an assignment such as ``04_queries_keys_values``, or a
# homework's name as ``--homework`` gives it) and ``deadline`` (ISO 8601; no zone: UTC)::
#
#    student_id,assignment,deadline
#    4712,Homework 2,2026-10-08T23:59
#    s1234,04_queries_keys_values,2026-10-05 12:00+02:00
#
# The late policy judges that student's notebooks of that assignment or homework against
# the new deadline (a homework's extension covers its assignments; an assignment's own
# extension wins over its homework's). :func:`deadline_for` is the one rule, used
# everywhere a deadline is looked up.

EXTENSION_COLUMNS = ("student_id", "assignment", "deadline")
#: Bytes an extensions file may have.
MAX_EXTENSION_BYTES = 8 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Extensions:
    """``{(student, assignment or homework): deadline}`` (aware datetimes, UTC)."""

    deadlines: tuple[tuple[tuple[str, str], datetime], ...] = ()

    def get(self, student: str, name: str | None) -> datetime | None:
        if name is None:
            return None
        return dict(self.deadlines).get((student, name))

    def to_json(self) -> list[list[str]]:
        return [[s, a, when.isoformat()] for (s, a), when in self.deadlines]

    @classmethod
    def from_json(cls, rows) -> "Extensions":
        return cls(tuple(((str(s), str(a)), parse_time(str(w))) for s, a, w in rows or []))


def deadline_for(student: str, assignment: str, default: datetime | None,
                 extensions: Extensions | None = None, homework: str | None = None
                 ) -> datetime | None:
    """The deadline ``student``'s notebooks of ``assignment`` are judged against: their own
    extension of the assignment, else of its ``homework``, else ``default``."""
    if extensions is not None:
        for name in (assignment, homework):
            when = extensions.get(student, name)
            if when is not None:
                return when
    return default


def read_extensions(path: Path | None) -> Extensions:
    """The extensions of a CSV file (see the module docstring); empty without one."""
    if path is None:
        return Extensions()
    where = terminal(str(path))
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"--extensions {where}: cannot be read ({exc.strerror})") from None
    if len(data) > MAX_EXTENSION_BYTES:
        raise ValueError(f"--extensions {where}: larger than {MAX_EXTENSION_BYTES // 2**20} MB")
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig", errors="replace"))))
    if rows and not set(EXTENSION_COLUMNS) <= set(rows[0]):
        raise ValueError(f"--extensions {where}: needs the columns {', '.join(EXTENSION_COLUMNS)}")
    seen: dict[tuple[str, str], datetime] = {}
    for n, row in enumerate(rows, start=2):
        key = (str(row["student_id"] or "").strip(), str(row["assignment"] or "").strip())
        if not all(key):
            raise ValueError(f"--extensions {where}, line {n}: a student_id and an "
                             f"assignment are needed")
        try:
            when = parse_time(str(row["deadline"] or ""))
        except ValueError as exc:
            raise ValueError(f"--extensions {where}, line {n}: {terminal(str(exc))}") from None
        if key in seen and seen[key] != when:
            raise ValueError(f"--extensions {where}, line {n}: {terminal(key[0])} has two "
                             f"deadlines for {terminal(key[1])}")
        seen[key] = when
    return Extensions(tuple(sorted(seen.items())))


# --------------------------------------------------------------------------- the policy

@dataclasses.dataclass(frozen=True)
class Policy:
    percent_per_day: float = 0.0
    cap: float = 100.0
    #: ``--assume-late-days N``: the days late of a notebook the LMS flagged late whose
    #: upload time it did not give (a Canvas download without ``collect --times``); None:
    #: a policy that takes points off refuses such notebooks (:func:`require_times`).
    assume_late_days: int | None = None

    def assuming(self, days: int | None) -> "Policy":
        if days is not None and not (isinstance(days, int) and 0 <= days <= 3650):
            raise ValueError(f"--assume-late-days takes a whole number of days (0 or more), "
                             f"not {days!r}")
        return dataclasses.replace(self, assume_late_days=days)

    @classmethod
    def parse(cls, text: str | None) -> "Policy":
        text = (text or "none").strip().lower()
        if text == "none":
            return cls(0.0, 0.0)
        if text == "zero":
            return cls(100.0, 100.0)
        per_day, _, cap = text.partition(":")
        try:
            policy = cls(float(per_day.rstrip("%")), float(cap.rstrip("%")) if cap else 100.0)
        except ValueError:
            policy = None
        if policy is None or not (0 <= policy.percent_per_day <= 100 and 0 <= policy.cap <= 100):
            raise ValueError(f"--late-policy takes PERCENT[:CAP] (percent off per day late, "
                             f"at most CAP percent; both 0-100), none or zero; not {text!r}")
        return policy

    def percent_off(self, days: int) -> float:
        return min(self.cap, self.percent_per_day * days) if days > 0 else 0.0


def parse_deadlines(items: list[str]) -> dict[str | None, datetime]:
    """``--deadline WHEN`` (key ``None``: every assignment) or ``ASSIGNMENT=WHEN``."""
    deadlines: dict[str | None, datetime] = {}
    for item in items:
        name, sep, when = item.partition("=")       # a time never holds "="
        if sep and not name.strip():
            raise ValueError(f"--deadline takes WHEN or ASSIGNMENT=WHEN, not {item!r}")
        deadlines[name.strip() if sep else None] = parse_time(when if sep else item)
    return deadlines


def time_unknown(record: dict) -> bool:
    """A notebook of a Canvas or Moodle download whose upload time no source gave."""
    return (record.get("lms") in NO_UPLOAD_TIMES and not record.get("submitted_at")
            and record.get("status") != "missing")


def days_late(record: dict, deadline: datetime | None, policy: "Policy | None" = None) -> int:
    """Days or parts of a day after ``deadline`` (0: on time). A notebook without an upload
    time: from a Canvas or Moodle download, the policy's ``assume_late_days`` when the LMS
    flagged it late, else 0 (:func:`require_times` refuses a penalty on such a guess); from
    elsewhere, one day when the LMS flagged it late."""
    when = record.get("submitted_at") or ""
    if deadline is not None and when:
        seconds = (parse_time(when) - deadline).total_seconds()
        return max(0, math.ceil(seconds / 86400))
    if record.get("lms_late") != "yes":
        return 0
    if record.get("lms") in NO_UPLOAD_TIMES:
        assumed = policy.assume_late_days if policy is not None else None
        return assumed or 0
    return 1


def require_times(records: list[dict], policy: "Policy") -> list[dict]:
    """The notebooks whose upload time is unknown (:func:`time_unknown`). Raises when the
    policy takes points off for lateness and neither ``collect --times`` nor
    ``--assume-late-days`` said how late they are: a penalty is never guessed."""
    unknown = [r for r in records if time_unknown(r)]
    if unknown and policy.percent_per_day > 0 and policy.assume_late_days is None:
        lms = sorted({str(r.get("lms")) for r in unknown})
        flagged = sum(1 for r in unknown if r.get("lms_late") == "yes")
        raise ValueError(
            f"{len(unknown)} notebook(s) of a {' and '.join(lms).title()} download have no "
            f"upload time ({flagged} of them flagged late by the LMS): the download's file "
            f"times are the download's, not the uploads'. Give the LMS's record of the "
            f"times to collect (`collect DOWNLOAD --times FILE`: Canvas's Submissions API "
            f"JSON, or Moodle's grading worksheet with --times-zone; docs/grading.md), "
            f"then grade again; or say how late a notebook the LMS flagged late counts "
            f"with --assume-late-days N (Moodle flags none)")
    return unknown


def apply(records: list[dict], deadlines: dict[str | None, datetime],
          policy: Policy, extensions: Extensions | None = None
          ) -> tuple[list[dict], list[dict]]:
    """``(records with late points taken off, one row per late notebook)``."""
    out, late = [], []
    for record in records:
        deadline = deadline_for(record["student_id"], record["assignment"],
                                deadlines.get(record["assignment"], deadlines.get(None)),
                                extensions)
        days = days_late(record, deadline, policy)
        if days == 0 or record["status"] == "missing":
            out.append(record)
            continue
        off = policy.percent_off(days)
        points = record["points"] * (1 - off / 100)
        late.append({"student_id": record["student_id"], "assignment": record["assignment"],
                     "notebook": record["notebook"],
                     "submitted_at": record.get("submitted_at") or "",
                     "deadline": deadline.isoformat(timespec="seconds") if deadline else "",
                     "days_late": days, "percent_off": off,
                     "points_before": record["points"], "points_after": round(points, 6)})
        out.append({**record, "points": round(points, 6)})
    return out, late


def write_late(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, LATE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


# --------------------------------------------------------------------------- per homework

def notebook_deadline(record: dict, deadlines: dict, home: dict[str, str],
                      extensions: Extensions | None = None) -> datetime | None:
    """A notebook's deadline: the student's extension (:func:`deadline_for`), else its
    homework's, else its assignment's, else the common one."""
    common = deadlines.get(None)
    for key in (home.get(record["assignment"]), record["assignment"]):
        if key is not None and key in deadlines:
            common = deadlines[key]
            break
    return deadline_for(record.get("student_id", ""), record["assignment"], common, extensions,
                        home.get(record["assignment"]))


def penalties(records: list[dict], deadlines: dict, policy: Policy,
              homeworks: dict[str, list[str]] | None = None,
              extensions: Extensions | None = None) -> dict[tuple, dict]:
    """``{(student, assignment, notebook): penalty}`` for every late notebook handed in.

    A notebook outside any homework is judged alone (as :func:`apply`). A notebook of a
    homework takes the homework's lateness, that of its latest notebook: every notebook
    of the homework loses the same percentage, so the homework loses it once. A penalty
    says ``days``, ``percent_off``, ``deadline`` (of the latest notebook), ``latest`` (its
    record), ``homework`` (or None), ``points_before`` and ``points_after`` (this
    notebook's)."""
    home = {a: name for name, parts in (homeworks or {}).items() for a in parts}
    own: dict[tuple, tuple[int, datetime | None, dict]] = {}
    worst: dict[tuple, tuple[int, datetime | None, dict]] = {}
    for record in records:
        if record["status"] == "missing":
            continue
        deadline = notebook_deadline(record, deadlines, home, extensions)
        key = (record["student_id"], record["assignment"], record["notebook"])
        own[key] = (days_late(record, deadline, policy), deadline, record)
        unit = _unit(record, home)
        if unit not in worst or own[key][0] > worst[unit][0]:
            worst[unit] = own[key]
    out = {}
    for key, (_, _, record) in own.items():
        days, deadline, latest = worst[_unit(record, home)]
        if not days:
            continue
        off = policy.percent_off(days)
        out[key] = {"days": days, "percent_off": off, "deadline": deadline, "latest": latest,
                    "homework": home.get(record["assignment"]),
                    "points_before": record["points"],
                    "points_after": round(record["points"] * (1 - off / 100), 6)}
    return out


def _unit(record: dict, home: dict[str, str]) -> tuple:
    if record["assignment"] in home:
        return (record["student_id"], "homework", home[record["assignment"]])
    return (record["student_id"], record["assignment"], record["notebook"])


# --------------------------------------------------------------------------- stored policy

#: The late policy of the last ``export`` that had one, in OUT: the feedback pages and
#: ``feedback-package`` show the same penalty as the gradebook.
POLICY_FILE = "late_policy.json"


@dataclasses.dataclass
class Stored:
    deadlines: dict
    policy: Policy
    homeworks: dict[str, list[str]]
    extensions: Extensions = dataclasses.field(default_factory=Extensions)


def save_policy(out: Path, deadlines: dict, policy: Policy,
                homeworks: dict[str, list[str]] | None,
                extensions: Extensions | None = None) -> None:
    data = {"deadlines": [[k, v.isoformat()] for k, v in deadlines.items()],
            "percent_per_day": policy.percent_per_day, "cap": policy.cap,
            "assume_late_days": policy.assume_late_days,
            "homeworks": homeworks or {},
            "extensions": (extensions or Extensions()).to_json()}
    tmp = out / (POLICY_FILE + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(out / POLICY_FILE)


def load_policy(out: Path) -> Stored | None:
    """The stored policy of ``out``; None when export never applied one."""
    path = Path(out) / POLICY_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    assumed = data.get("assume_late_days")
    return Stored({k: parse_time(v) for k, v in data.get("deadlines", [])},
                  Policy(float(data["percent_per_day"]), float(data["cap"]),
                         int(assumed) if assumed is not None else None),
                  {str(k): list(v) for k, v in (data.get("homeworks") or {}).items()},
                  Extensions.from_json(data.get("extensions")))


def penalties_of(records: list[dict], stored: Stored | None) -> dict[tuple, dict]:
    return {} if stored is None else penalties(records, stored.deadlines, stored.policy,
                                               stored.homeworks, stored.extensions)
