"""What a student sees at ``/services/grader/``: their own notebooks, each one's state in
the queue, and its feedback.

Until the instructor releases an assignment's hidden results, a notebook's page shows
the visible part only: each graded cell's status, and of its feedback the lines that do
not speak of hidden cases; no points (they count the hidden cases). After the release
the page is the one ``grade`` writes (``OUT/feedback/...``), late penalty included.
Everything shown comes from the student's notebook or its grading: it is escaped.
"""

from __future__ import annotations

import html
import json
import threading
from pathlib import Path

from autograder.results.feedback import feedback_path
from autograder.results.records import read_records

RELEASED_FILE = "service-released.json"
STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto}"
         "td,th{border:1px solid #ccc;padding:.3em .6em}table{border-collapse:collapse}"
         "pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}")


class Releases:
    """The assignments whose hidden results the instructor released (kept in OUT)."""

    def __init__(self, out: Path):
        self.path = Path(out) / RELEASED_FILE
        self._lock = threading.Lock()

    def released(self) -> set[str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        return {a for a in data.get("assignments", []) if isinstance(a, str)}

    def release(self, assignment: str, hidden: bool = True) -> None:
        with self._lock:
            now = self.released()
            now = now | {assignment} if hidden else now - {assignment}
            partial = self.path.with_suffix(".partial")
            partial.write_text(json.dumps({"assignments": sorted(now)}), encoding="utf-8")
            partial.replace(self.path)


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def document(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def own_records(out: Path, student_id: str) -> list[dict]:
    try:
        return [r for r in read_records(out) if r["student_id"] == student_id]
    except FileNotFoundError:
        return []


def visible_text(text: str) -> str:
    """``text`` without its lines about hidden cases."""
    return "\n".join(line for line in str(text).splitlines() if "hidden" not in line.lower())


def visible_page(record: dict) -> str:
    body = [f"<h1>{_e(record['assignment'])} / {_e(record['notebook'])}</h1>",
            "<p>Visible cases only: your points and the hidden cases' results appear "
            "when your instructor releases them.</p>",
            "<table><tr><th>cell</th><th>status</th><th>feedback</th></tr>"]
    for cell in record.get("cells", []):
        text = visible_text("\n".join(filter(None, (cell.get("message"), cell.get("feedback")))))
        body.append(f"<tr><td>{_e(cell['grade_id'])}</td><td>{_e(cell['status'])}</td>"
                    f"<td><pre>{_e(text)}</pre></td></tr>")
    body.append("</table>")
    return document(f"Feedback: {record['assignment']}", body)


def notebook_page(out: Path, record: dict, released: set[str]) -> str:
    if record["assignment"] in released:
        return feedback_path(record, Path(out) / "feedback").read_text(encoding="utf-8")
    return visible_page(record)


def index_page(student_id: str, records: list[dict], state: dict, course: list[tuple[str, str]],
               prefix: str, xsrf: str, instructor: bool) -> str:
    body = [f"<h1>Grading: {_e(student_id)}</h1>", "<h2>Your submissions</h2><ul>"]
    graded = {(r["assignment"], r["notebook"]): r for r in records}
    for (a, n), what in sorted(state.items()):
        if (a, n) not in graded:
            body.append(f"<li>{_e(a)}/{_e(n)}: {_e(what)}</li>")
    for (a, n), r in sorted(graded.items()):
        now = state.get((a, n), "graded")
        body.append(f"<li><a href=\"{_e(prefix)}feedback/{_e(student_id)}/{_e(a)}/{_e(n)}\">{_e(a)}/{_e(n)}</a>"
                    f" ({_e(now)}; received {_e(r.get('submitted_at', ''))})</li>")
    body.append("</ul><h2>Submit for grading</h2>")
    options = "".join(f"<option value=\"{_e(a)}/{_e(n)}\">{_e(a)}/{_e(n)}</option>"
                      for a, n in course)
    body.append(f"<form method=\"post\" action=\"{_e(prefix)}submit\" "
                "enctype=\"multipart/form-data\">"
                f"<input type=\"hidden\" name=\"_xsrf\" value=\"{_e(xsrf)}\">"
                f"<select name=\"notebook\">{options}</select> "
                "<input type=\"file\" name=\"file\" accept=\".ipynb\"> "
                "<button type=\"submit\">Submit for grading</button></form>")
    if instructor:
        body.append(f"<h2>Instructor</h2><form method=\"post\" action=\"{_e(prefix)}release\">"
                    f"<input type=\"hidden\" name=\"_xsrf\" value=\"{_e(xsrf)}\">"
                    "<input name=\"assignment\" placeholder=\"assignment\"> "
                    "<button type=\"submit\">Release hidden results</button></form>")
    return document("Grading", body)
