"""Per-student feedback pages: ``feedback/<student>/<assignment>/<notebook>.html``.

A page shows the student's own code for each answer, then each graded cell with its
points, status and what went wrong, as the engine phrased it for students. It is built
only from a grading record (``autograder.results.records.result_record``), which never holds the
source of the tests, so hidden tests cannot leak through it. Everything that comes from
the submission is untrusted text and goes through :func:`html.escape`; the page has no
scripts and loads nothing.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from autograder.results.records import points_text as _points

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #1b1b1b; }
pre { background: #f5f5f5; padding: .6rem; overflow-x: auto; white-space: pre-wrap; }
.cell { border-left: .35rem solid #999; padding: .2rem .8rem; margin: .8rem 0; }
.ok { border-color: #2e7d32; } .failed, .missing { border-color: #c62828; }
.timeout, .crashed, .invalid, .memory, .grader_error { border-color: #ef6c00; }
.needs_manual_grade { border-color: #1565c0; }
.points { font-weight: bold; }
"""

_e = html.escape


def owner(row: dict, answer_ids: list[str]) -> str | None:
    """The answer a graded cell's row belongs to: a written answer's own id, else the
    exercise the row's test cell checks (``exercise``, decided by the solution's
    ``check(...)`` line, :attr:`autograder.notebook.source.SourceCell.exercise`)."""
    for candidate in (row.get("grade_id"), row.get("exercise")):
        if candidate in answer_ids:
            return candidate
    return None


def answer_order(cells: list[dict], answer_ids: list[str]) -> list[str]:
    """The answers in the notebook's order, whatever the order of ``answer_ids``: by the
    first graded cell each one owns (the cells of a record follow the solution notebook),
    answers owning none last, by name. A record read back from ``results.jsonl`` has its
    answers sorted by name (``merge`` reads records so), a record fresh from the engine in
    the notebook's order: both give the same page."""
    first: dict[str, int] = {}
    for i, row in enumerate(cells):
        answer = owner(row, answer_ids)
        if answer is not None:
            first.setdefault(answer, i)
    return sorted(answer_ids, key=lambda a: (first.get(a, len(cells)), a))


def headline(row: dict) -> str:
    """The line above a cell's feedback. The message (one line, for grades.csv) names the
    likely mistake and then, in brackets, the first failing case; when the feedback below
    shows that case whole, the page gives the mistake alone, so that no case is told
    twice. Likewise for a test that passed the isolated check while the notebook's own
    check failed: the check's words are below."""
    message, shown = str(row.get("message") or ""), str(row.get("feedback") or "")
    if not shown or message == shown:
        return message
    case = re.match(r"(?s)(?P<mistake>Likely mistake: .+?) \(case '(?P<case>[^']*)': ", message)
    if case and f"Case '{case['case']}'" in shown:
        return case["mistake"]
    case = re.match(r"case '(?P<case>[^']*)': ", message)
    if case and f"Case '{case['case']}'" in shown:
        return f"failed case '{case['case']}' (below)"
    if message.startswith("passed the isolated check (notebook run: ") and \
            "[your notebook's check]" in shown:
        return ("passed the isolated check of your function; your notebook's own check "
                "failed (below)")
    return message


def _cell_html(row: dict) -> str:
    status = row["status"] if row["status"].isidentifier() else "failed"
    parts = [f'<div class="cell {_e(status)}">',
             f'<p><code>{_e(row["grade_id"])}</code>: '
             f'<span class="points">{_points(row["points"])} / {_points(row["max_points"])}</span>'
             f' &mdash; {_e(row["status"])}</p>']
    if row.get("message"):
        parts.append(f"<p>{_e(headline(row))}</p>")
    if row.get("feedback") and row["feedback"] != row.get("message"):
        parts.append(f"<pre>{_e(row['feedback'])}</pre>")
    parts.append("</div>")
    return "\n".join(parts)


def render(record: dict) -> str:
    """The feedback page of one graded notebook, as a complete HTML document."""
    title = f"{record['assignment']} / {record['notebook']}"
    body = [f"<h1>{_e(title)}</h1>",
            f"<p>Student: <code>{_e(record['student_id'])}</code></p>",
            f'<p class="points">Score: {_points(record["points"])} / {_points(record["max_points"])}</p>']
    if record["status"] != "ok":
        body.append(f'<div class="cell {_e(record["status"])}"><p>Notebook status: '
                    f'<b>{_e(record["status"])}</b></p><p>{_e(record["message"])}</p></div>')
    answers = dict(record.get("answers") or {})
    answer_ids = answer_order(record["cells"], list(answers))
    placed: set[int] = set()
    for answer_id in answer_ids:
        body.append(f"<h2>Your answer: <code>{_e(answer_id)}</code></h2>")
        body.append(f"<pre>{_e(answers[answer_id])}</pre>")
        for i, row in enumerate(record["cells"]):
            if owner(row, answer_ids) == answer_id:
                body.append(_cell_html(row))
                placed.add(i)
    rest = [row for i, row in enumerate(record["cells"]) if i not in placed]
    if rest:
        body.append("<h2>Other graded cells</h2>" if answer_ids else "<h2>Graded cells</h2>")
        body.extend(_cell_html(row) for row in rest)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>Feedback: {_e(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def feedback_path(record: dict, root: Path) -> Path:
    stem = Path(record["notebook"]).stem
    return root / record["student_id"] / record["assignment"] / f"{stem}.html"


def write_feedback(record: dict, root: Path) -> Path:
    path = feedback_path(record, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(record), encoding="utf-8")
    return path
