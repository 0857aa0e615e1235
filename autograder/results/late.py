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
* A notebook with no known upload time is never penalised, unless the LMS flagged it
  late: then it counts as one day late. The export's ``late.csv`` lists every late
  notebook with its days and the percentage taken off.
* ``export --homework NAME=A,B,...``: a homework is as late as its latest notebook
  (:func:`penalties`), and its percentage comes off every notebook of it, so once off
  the homework's sum.

An export with a policy stores it in ``OUT/late_policy.json`` (:func:`save_policy`), so
that the feedback pages and ``feedback-package`` show the penalty the gradebook got.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from datetime import datetime, timezone
from pathlib import Path

from autograder import safe_text

SUBMISSIONS_CSV = "_submissions.csv"
SUBMISSION_COLUMNS = ["student_id", "assignment", "notebook", "submitted_at", "lms_late",
                      "source", "downloaded_at"]
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


# --------------------------------------------------------------------------- the policy

@dataclasses.dataclass(frozen=True)
class Policy:
    percent_per_day: float = 0.0
    cap: float = 100.0

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


def days_late(record: dict, deadline: datetime | None) -> int:
    """Days or parts of a day after ``deadline`` (0: on time or unknown)."""
    when = record.get("submitted_at") or ""
    if deadline is not None and when:
        seconds = (parse_time(when) - deadline).total_seconds()
        return max(0, math.ceil(seconds / 86400))
    return 1 if record.get("lms_late") == "yes" else 0


def apply(records: list[dict], deadlines: dict[str | None, datetime],
          policy: Policy) -> tuple[list[dict], list[dict]]:
    """``(records with late points taken off, one row per late notebook)``."""
    out, late = [], []
    for record in records:
        deadline = deadlines.get(record["assignment"], deadlines.get(None))
        days = days_late(record, deadline)
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

def _deadline_for(record: dict, deadlines: dict, home: dict[str, str]) -> datetime | None:
    """A notebook's deadline: its homework's, else its assignment's, else the common one."""
    for key in (home.get(record["assignment"]), record["assignment"]):
        if key is not None and key in deadlines:
            return deadlines[key]
    return deadlines.get(None)


def penalties(records: list[dict], deadlines: dict, policy: Policy,
              homeworks: dict[str, list[str]] | None = None) -> dict[tuple, dict]:
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
        deadline = _deadline_for(record, deadlines, home)
        key = (record["student_id"], record["assignment"], record["notebook"])
        own[key] = (days_late(record, deadline), deadline, record)
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


def save_policy(out: Path, deadlines: dict, policy: Policy,
                homeworks: dict[str, list[str]] | None) -> None:
    data = {"deadlines": [[k, v.isoformat()] for k, v in deadlines.items()],
            "percent_per_day": policy.percent_per_day, "cap": policy.cap,
            "homeworks": homeworks or {}}
    tmp = out / (POLICY_FILE + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(out / POLICY_FILE)


def load_policy(out: Path) -> Stored | None:
    """The stored policy of ``out``; None when export never applied one."""
    path = Path(out) / POLICY_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return Stored({k: parse_time(v) for k, v in data.get("deadlines", [])},
                  Policy(float(data["percent_per_day"]), float(data["cap"])),
                  {str(k): list(v) for k, v in (data.get("homeworks") or {}).items()})


def penalties_of(records: list[dict], stored: Stored | None) -> dict[tuple, dict]:
    return {} if stored is None else penalties(records, stored.deadlines, stored.policy,
                                               stored.homeworks)
