"""The grading record: what one graded notebook gives, its files and its arithmetic.

``grade`` writes one record per notebook into ``OUT/results.jsonl`` and from them
``grades.csv`` (one row per graded cell) and ``summary.csv`` (one row per student and
assignment); ``merge``, ``report``, ``export`` and the feedback pages read them. This
module owns that schema, so that none of them needs another's code.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Iterable

from autograder import safe_text
from autograder.safe_text import terminal

#: Columns of ``grades.csv`` (one row per graded cell).
GRADE_COLUMNS = ["student_id", "assignment", "notebook", "grade_id", "kind", "points",
                 "max_points", "status", "message"]
#: Columns of ``summary.csv`` (one row per student and assignment).
SUMMARY_COLUMNS = ["student_id", "assignment", "points", "max_points", "status", "notebooks",
                   "flags", "message"]
#: Notebook statuses from best to worst; an assignment's status is its worst notebook's.
STATUS_ORDER = ["ok", "needs_manual_grade", "failed", "timeout", "memory", "crashed", "invalid",
                "missing", "grader_error"]
#: Longest answer source, message and feedback text kept per cell (one place: safe_text).
MAX_ANSWER_CHARS = safe_text.ANSWER_CHARS
MAX_MESSAGE_CHARS = safe_text.MESSAGE_CHARS
MAX_FEEDBACK_CHARS = safe_text.FEEDBACK_CHARS


def _short(text, limit: int) -> str:
    return safe_text.shorten(text, limit)


def result_record(student_id: str, assignment: str, notebook: str, result,
                  cells: list, seconds: float) -> dict:
    """A JSON-ready record of one graded notebook (an engine ``NotebookResult``).

    Every graded cell of the solution gets a row: a cell the engine did not report (the
    notebook could not be read, say) scores 0 with the notebook's status and message.
    """
    status = str(getattr(result, "status", "grader_error"))
    message = _short(getattr(result, "message", ""), MAX_MESSAGE_CHARS)
    by_id = {}
    for cell in getattr(result, "cells", []) or []:
        by_id.setdefault(str(cell.grade_id), cell)
    rows = []
    for expected in cells:
        cell = by_id.pop(expected.grade_id, None)
        if cell is None:
            rows.append({"grade_id": expected.grade_id, "kind": expected.kind,
                         "exercise": expected.exercise, "points": 0.0,
                         "max_points": expected.points,
                         "status": status if status != "ok" else "missing",
                         "message": message or "not graded", "feedback": ""})
            continue
        rows.append({
            "grade_id": expected.grade_id,
            "kind": str(getattr(cell, "kind", expected.kind)),
            "exercise": expected.exercise,
            "points": min(max(float(getattr(cell, "points", 0.0) or 0.0), 0.0), expected.points),
            "max_points": expected.points,
            "status": str(getattr(cell, "status", status)),
            "message": _short(getattr(cell, "message", ""), MAX_MESSAGE_CHARS),
            "feedback": _short(getattr(cell, "feedback", ""), MAX_FEEDBACK_CHARS),
        })
    answers = getattr(result, "answers", {}) or {}
    return {
        "student_id": student_id, "assignment": assignment, "notebook": notebook,
        "status": status, "message": message,
        "flags": [_short(f, MAX_MESSAGE_CHARS) for f in getattr(result, "flags", []) or []],
        "points": sum(r["points"] for r in rows),
        "max_points": sum(r["max_points"] for r in rows),
        "cells": rows,
        "answers": {str(k): _short(v, MAX_ANSWER_CHARS) for k, v in answers.items()},
        "seconds": round(seconds, 3),
    }


def missing_record(student_id: str, assignment: str, notebook: str, cells: list,
                   status: str = "missing", message: str = "notebook not handed in") -> dict:
    """The record of a notebook that was not graded: every cell 0 with ``status``."""
    unread = SimpleNamespace(status=status, message=message, cells=[], answers={}, flags=[])
    record = result_record(student_id, assignment, notebook, unread, cells, 0.0)
    for row in record["cells"]:
        row["status"], row["message"] = status, message
    return record


def sort_key(record: dict) -> tuple:
    return (record["student_id"], record["assignment"], record["notebook"])


def worst_status(statuses: Iterable[str]) -> str:
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    return max(statuses, key=lambda s: rank.get(s, len(STATUS_ORDER)), default="missing")


def summary_rows(records: list[dict]) -> list[dict]:
    """One row per (student, assignment): points, flags, messages, and the worst status
    of its notebooks and their cells (``failed`` when a notebook ran but a test failed,
    ``needs_manual_grade`` when all tests passed and a written answer awaits grading)."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for record in sorted(records, key=sort_key):
        groups[(record["student_id"], record["assignment"])].append(record)
    rows = []
    for (student_id, assignment), group in groups.items():
        messages = [f"{r['notebook']}: {r['message']}" for r in group if r["status"] != "ok" and r["message"]]
        rows.append({
            "student_id": student_id, "assignment": assignment,
            "points": csv_number(sum(r["points"] for r in group)),
            "max_points": csv_number(sum(r["max_points"] for r in group)),
            "status": worst_status([r["status"] for r in group]
                                   + [c["status"] for r in group for c in r["cells"]]),
            "notebooks": len(group),
            "flags": "; ".join(f for r in group for f in r["flags"]),
            "message": "; ".join(messages),
        })
    return rows


def csv_number(x: float) -> float | int:
    """Points as written in the CSV files: ``2`` rather than ``2.0``, at most 4 decimals."""
    return int(x) if float(x).is_integer() else round(float(x), 4)


def points_text(x) -> str:
    """Points for people: ``2``, ``1.5``, ``0.33``."""
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.2f}".rstrip("0")


def read_records(out: Path) -> list[dict]:
    """The records of a grading output folder (its ``results.jsonl``)."""
    path = out / "results.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{out} is not a grading output: {path.name} is missing "
                                "(run `python -m autograder grade` first)")
    with open(path, encoding="utf-8") as f:
        return apply_manual([json.loads(line) for line in f if line.strip()], read_manual(out))


def summary_table(records: list[dict]) -> str:
    """A plain-text table: per assignment, students, mean score and statuses; then the
    notebooks that did not grade cleanly."""
    by_assignment: dict[str, list[dict]] = defaultdict(list)
    for row in summary_rows(records):
        by_assignment[row["assignment"]].append(row)
    header = ("assignment", "students", "mean", "max", "statuses")
    lines = [header]
    for assignment in sorted(by_assignment):
        rows = by_assignment[assignment]
        counts = Counter(r["status"] for r in rows)
        statuses = ", ".join(f"{s} {counts[s]}" for s in sorted(counts, key=_rank))
        mean = sum(float(r["points"]) for r in rows) / len(rows)
        lines.append((assignment, str(len(rows)), f"{mean:.2f}", f"{csv_number(float(rows[0]['max_points']))}",
                      statuses))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    problems = [r for r in sorted(records, key=sort_key) if r["status"] not in ("ok", "missing")]
    flagged = [r for r in sorted(records, key=sort_key) if r["flags"]]
    if problems:
        text.append("")
        text.append(f"{len(problems)} notebook(s) did not run cleanly:")
        for r in problems[:25]:
            text.append(terminal(
                f"  {r['student_id']}/{r['assignment']}/{r['notebook']}: {r['status']}"
                f" ({csv_number(r['points'])}/{csv_number(r['max_points'])}) {r['message']}"))
        if len(problems) > 25:
            text.append(f"  ... and {len(problems) - 25} more (see summary.csv)")
    if flagged:
        text.append("")
        text.append(f"{len(flagged)} notebook(s) flagged for review:")
        for r in flagged[:25]:
            more = f" (and {len(r['flags']) - 2} more)" if len(r["flags"]) > 2 else ""
            text.append(terminal(f"  {r['student_id']}/{r['assignment']}/{r['notebook']}: "
                                 f"{'; '.join(r['flags'][:2])}{more}"))
    return "\n".join(text)


def _rank(status: str) -> int:
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


# --------------------------------------------------------------------------- manual scores

#: Scores given by hand (written answers), kept apart from the grader's records so that a
#: later ``grade`` into the same OUT never loses them: ``{key: {"points", "comment",
#: "answer"}}``, ``answer`` the digest (:func:`answer_digest`) of the answer the score was
#: given to. A score belongs to that answer: once the answer changes (a new upload graded
#: again) it is *stale*, the cell needs grading again and the old score is only shown. A
#: score stored without a digest (before scores had one) counts for whatever answer is
#: graded now, as it did then.
MANUAL = "manual_scores.json"
#: What a written-answer cell whose hand score is stale says (its old points, comment).
STALE = ("the answer changed since it was graded by hand ({points} point(s){comment}): "
         "grade it again")
#: Columns of the CSV an instructor fills in (``manual-template`` / ``manual-import``).
MANUAL_COLUMNS = ["student_id", "assignment", "notebook", "grade_id", "max_points", "points",
                  "comment"]
#: The template's columns: those, then whether ``points`` was pre-filled (an untouched
#: answer scores 0) and the answer's text (read, never imported).
MANUAL_TEMPLATE_COLUMNS = MANUAL_COLUMNS + ["prefilled", "stale", "answer"]


def manual_key(student_id: str, assignment: str, notebook: str, grade_id: str) -> str:
    return json.dumps([student_id, assignment, notebook, grade_id])


def read_json_object(path: Path) -> dict:
    """The JSON object stored in ``path``; ``{}`` when there is none."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def read_manual(out: Path) -> dict[str, dict]:
    return read_json_object(Path(out) / MANUAL)


def answer_digest(text: str) -> str:
    """The digest a hand score keeps of the written answer it was given to."""
    import hashlib

    return hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def written_answer(record: dict, grade_id: str) -> str:
    """The text of written answer ``grade_id`` as graded in ``record``."""
    return str((record.get("answers") or {}).get(grade_id, ""))


def hand_score(manual: dict[str, dict], record: dict,
               grade_id: str) -> tuple[dict | None, dict | None]:
    """``(score, stale)`` of written answer ``grade_id`` of ``record``: the hand score
    that counts, or the one given to an earlier answer (shown, never counted)."""
    given = manual.get(manual_key(record["student_id"], record["assignment"],
                                  record["notebook"], grade_id))
    if given is None or given.get("answer") in (None, answer_digest(
            written_answer(record, grade_id))):
        return given, None
    return None, given


def stale_text(stale: dict) -> str:
    """:data:`STALE` for a stale score."""
    comment = str(stale.get("comment") or "")
    return STALE.format(points=csv_number(float(stale["points"])),
                        comment=f", {comment!r}" if comment else "")


def stale_scores(records: list[dict], manual: dict[str, dict]) -> list[str]:
    """``student, assignment, notebook, grade_id: why`` for every stale hand score."""
    out = []
    for record in records:
        for cell in record["cells"]:
            if cell.get("kind") == "manual" and record["status"] != "missing":
                stale = hand_score(manual, record, cell["grade_id"])[1]
                if stale is not None:
                    out.append(f"{record['student_id']}, {record['assignment']}, "
                               f"{record['notebook']}, {cell['grade_id']}: {stale_text(stale)}")
    return out


def apply_manual(records: list[dict], manual: dict[str, dict]) -> list[dict]:
    """The records with the hand-given scores of ``manual`` in their written-answer
    cells (points capped to the cell's maximum; the comment becomes the message), and
    each record's points summed again. The one place manual scores enter the results."""
    if not manual:
        return records
    out = []
    for record in records:
        record = json.loads(json.dumps(record))                # a copy
        for cell in record["cells"]:
            if cell.get("kind") != "manual":
                continue
            given, stale = hand_score(manual, record, cell["grade_id"])
            if stale is not None:          # given to an earlier answer: shown, not counted
                cell["stale"] = {"points": float(stale["points"]),
                                 "comment": str(stale.get("comment") or "")}
                cell["message"] = _short(stale_text(stale), MAX_MESSAGE_CHARS)
            if given is None:
                continue
            cell["points"] = min(max(float(given["points"]), 0.0), float(cell["max_points"]))
            cell["status"] = "ok"
            comment = str(given.get("comment") or "")
            cell["message"] = _short(f"graded by hand: {comment}" if comment else
                                     "graded by hand", MAX_MESSAGE_CHARS)
        record["points"] = sum(c["points"] for c in record["cells"])
        if record["status"] == "needs_manual_grade" and not any(
                c["status"] == "needs_manual_grade" for c in record["cells"]):
            record["status"] = "ok"
        out.append(record)
    return out


# --------------------------------------------------------------------------- provenance

def solutions_digest(solutions: Path) -> str:
    """A content hash of the solution notebooks and their data files (what decides the
    points), and of the exercise registry (the cases): equal folders, equal hashes."""
    import hashlib

    from autograder import REPO_ROOT

    h = hashlib.sha256()
    roots = [Path(solutions), REPO_ROOT / "helpers" / "exercises"]
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()
                           and "__pycache__" not in p.parts
                           and ".ipynb_checkpoints" not in p.parts):
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def credit_of(record: dict) -> str:
    """The ``grade --credit`` a record was graded with (``all`` before it was recorded)."""
    return str(record.get("credit", "all"))


def provenance(records: list[dict]) -> set[tuple[str, str, str]]:
    """The distinct ``(solutions hash, grader version, grading secret's key id)`` of
    ``records`` (the key id is empty for records graded without a secret)."""
    return {(str(r.get("solutions", "?")), str(r.get("grader", "?")),
             str(r.get("hidden_key", ""))) for r in records}
