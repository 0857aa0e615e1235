"""Item analysis of a graded class: how each exercise went.

For every graded cell (assignment, grade_id): how many students were graded, the mean
points, the share of students with full marks, and the most common failure messages.
Written as ``item_analysis.csv`` and drawn as ``item_analysis.png`` (one horizontal bar
per exercise: the share of full marks, so the hardest exercises stand out). Failure
messages are counted by :func:`failure_reason`, which keeps what is common to students
who made the same mistake.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

from autograder.results.records import csv_number, read_records
from autograder import safe_text

REPORT_COLUMNS = ["assignment", "grade_id", "kind", "students", "max_points", "mean_points",
                  "mean_fraction", "full_marks_share", "not_handed_in", "common_failures"]
#: How many failure messages to list per exercise.
TOP_FAILURES = 3


def item_analysis(records: list[dict]) -> list[dict]:
    """One row per graded cell, in course order (assignment, then notebook order).

    Missing notebooks are counted in ``not_handed_in`` and left out of the means: the
    point is how hard an exercise was for those who tried it. ``max_points`` is the
    cell's worth in ``solutions/``, which every record carries, a missing notebook's
    too (so a notebook nobody handed in shows its real maximum, with no mean).
    """
    items: dict[tuple[str, str], list[dict]] = defaultdict(list)
    worth: dict[tuple[str, str], float] = {}
    kinds: dict[tuple[str, str], str] = {}
    missing: Counter = Counter()
    order: list[tuple[str, str]] = []
    for record in sorted(records, key=lambda r: (r["assignment"], r["notebook"], r["student_id"])):
        for row in record["cells"]:
            key = (record["assignment"], row["grade_id"])
            if key not in worth:
                order.append(key)
            worth[key] = max(worth.get(key, 0.0), float(row["max_points"]))
            # every record has the cell's kind, a missing notebook's too (from solutions/)
            kinds.setdefault(key, "manual" if row.get("kind") == "manual" else "test")
            if record["status"] == "missing":
                missing[key] += 1
            else:
                items[key].append(row)
    report = []
    for key in order:
        rows = items.get(key, [])
        n = len(rows)
        max_points = worth[key]
        mean = sum(float(r["points"]) for r in rows) / n if n else 0.0
        full = sum(float(r["points"]) >= float(r["max_points"]) for r in rows)
        failures = Counter(failure_reason(r) for r in rows
                           if float(r["points"]) < float(r["max_points"]))
        report.append({
            "assignment": key[0], "grade_id": key[1], "students": n,
            "kind": kinds[key],
            "max_points": csv_number(max_points), "mean_points": round(mean, 3) if n else "",
            "mean_fraction": round(mean / max_points, 3) if max_points and n else "",
            "full_marks_share": round(full / n, 3) if n else "",
            "not_handed_in": missing[key],
            "common_failures": " | ".join(f"{count}x {message}"
                                          for message, count in failures.most_common(TOP_FAILURES)),
        })
    return report


def failure_reason(row: dict) -> str:
    """What went wrong in a cell, short enough to count: the diagnosis of a known mistake
    when the checks named one ("Likely mistake: ..."), else the problem the check saw
    without the case's input, else the message (first 120 characters)."""
    text = f"{row.get('feedback', '')}\n{row.get('message', '')}"  # the feedback is not cut short
    mistake = re.search(r"Likely mistake:\s*(.+)", text)
    if mistake:
        return "likely mistake: " + safe_text.shorten(mistake.group(1).strip(),
                                                       safe_text.REPORT_CHARS)
    message = " ".join(str(row.get("message", "")).split())
    problem = re.search(r"Problem:\s*(.+)", message)
    if problem:
        message = problem.group(1)
        message = re.split(r"[;:] (?:first difference|expected|got)\b", message)[0]
    message = re.sub(r"\b\d+ of \d+\b", "some", message)
    return (safe_text.shorten(message, safe_text.REPORT_CHARS).rstrip() or row["status"])


def write_csv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = safe_text.DictWriter(f, REPORT_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def class_size(records: list[dict]) -> int:
    """Students in the class: every student with a record (one who handed in nothing
    gradable has ``missing`` records), not the rows of the analysis."""
    return len({r["student_id"] for r in records})


def chart_title(students: int) -> str:
    return f"Item analysis ({students} student{'' if students == 1 else 's'} in the class)"


#: The legend's entries, in order.
LEGEND = ("share with full marks", "mean share of points",
          "written answer (graded by hand): share with full marks",
          "written answer (graded by hand): mean share of points")


def chart_figure(rows: list[dict], students: int):
    """The matplotlib figure of :func:`write_chart`: a horizontal bar per graded cell
    handed in by someone, share of full marks and mean share of points; written answers
    (graded by hand) hatched, in the legend as such. The legend sits below the axes, so it
    never covers a bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["students"]]
    labels = [f"{r['assignment']}: {r['grade_id']}"
              + (" (written)" if r["kind"] == "manual" else "") for r in rows]
    height = max(3.0, 0.35 * len(rows) + 2.2)
    fig, ax = plt.subplots(figsize=(9, height))
    for manual, (full_label, mean_label) in ((False, LEGEND[:2]), (True, LEGEND[2:])):
        which = [i for i, r in enumerate(rows) if (r["kind"] == "manual") == manual]
        if not which:
            continue
        hatch = "//" if manual else None
        ax.barh([i + 0.2 for i in which], [float(rows[i]["full_marks_share"]) for i in which],
                height=0.4, label=full_label, color="#2e7d32", hatch=hatch,
                edgecolor="white" if manual else None)
        ax.barh([i - 0.2 for i in which], [float(rows[i]["mean_fraction"] or 0.0) for i in which],
                height=0.4, label=mean_label, color="#90caf9", hatch=hatch,
                edgecolor="white" if manual else None)
    ax.set_yticks(list(range(len(rows))), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of students / of points")
    ax.set_title(chart_title(students))
    if rows:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=8,
                  frameon=False)
    fig.tight_layout()
    return fig


def write_chart(rows: list[dict], path: Path, students: int) -> None:
    """Draw :func:`chart_figure` into ``path``; ``students``: the class size, in the
    title (also the PNG's ``Title`` text)."""
    import matplotlib.pyplot as plt

    fig = chart_figure(rows, students)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100, metadata={"Title": chart_title(students)})
    plt.close(fig)


def report(out: Path, dest: Path | None = None) -> tuple[Path, Path]:
    """Write the item analysis of grading output ``out`` (CSV and PNG) into ``dest``
    (default: ``out``); return both paths."""
    dest = out if dest is None else dest
    records = read_records(out)
    rows = item_analysis(records)
    csv_path, png_path = dest / "item_analysis.csv", dest / "item_analysis.png"
    write_csv(rows, csv_path)
    write_chart(rows, png_path, class_size(records))
    return csv_path, png_path
