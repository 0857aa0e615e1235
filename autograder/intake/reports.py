"""What ``collect`` writes beside the placed notebooks: its report (every file of the
download, where it went and why), one report per download, and the roster of the names,
e-mails and ids the downloads gave; and the roster an instructor gives (``--roster``)."""

from __future__ import annotations

import csv
from pathlib import Path

from autograder import safe_text

REPORT = "_collect_report.csv"
REPORTS = "_collect_reports"
ROSTER = "_roster.csv"
ROSTER_COLUMNS = ["student_id", "name", "email", "sid", "lms"]


def read_ids(path: Path) -> frozenset[str]:
    """The student ids of a roster CSV (a ``student_id`` column, as ``export --roster``
    reads; ``_roster.csv`` is one)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        if "student_id" not in (reader.fieldnames or []):
            raise ValueError(f"{path}: a roster needs a student_id column")
        return frozenset((row["student_id"] or "").strip() for row in reader) - {""}


def download_report(out: Path, name: str) -> Path:
    """``_collect_reports/<NN>_<name>.csv``: one report per download collected (``name``
    its safe name), numbered in order (``_collect_report.csv`` is always the latest one)."""
    folder = out / REPORTS
    folder.mkdir(exist_ok=True)
    n = len(list(folder.glob("*.csv"))) + 1
    return folder / f"{n:02d}_{name or 'download'}.csv"


def write_report(outcomes: list, path: Path, warnings: list[str] = ()) -> None:
    """The report: ``source, status, where, reason`` of every outcome (``collect.Outcome``),
    the unmatched first, after the warnings about the download as a whole."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.writer(f)
        writer.writerow(["source", "status", "where", "reason"])
        for warning in warnings:                # about the download as a whole
            writer.writerow(["", "warning", "", warning])
        for o in sorted(outcomes, key=lambda o: (o.status != "unmatched", o.origin)):
            writer.writerow([o.origin, o.status, o.where, o.reason])


def write_roster(roster: dict[str, dict], path: Path) -> None:
    """Add what the download said of each student to the roster at ``path``."""
    existing = {}
    if path.exists():
        with open(path, newline="", encoding="utf-8") as f:
            existing = {row["student_id"]: row for row in csv.DictReader(f)}
    for sid, row in roster.items():   # what the roster already has stays (a name the
        kept = existing.setdefault(sid, {})   # instructor wrote is better than Canvas's)
        for column in ROSTER_COLUMNS:
            if not kept.get(column):
                kept[column] = row.get(column, "")
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, ROSTER_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(existing[k] for k in sorted(existing))
