"""Per-student feedback pages: ``feedback/<student>/<assignment>/<notebook>.html``, and
one index per student, ``feedback/<student>/index.html`` (every notebook with its score
and a link, the written answers' hand-given scores, the total, and the late penalty
when ``export`` applied a late policy: :mod:`autograder.results.late`).

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
.late { border-color: #ef6c00; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: .2rem .5rem; }
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


def late_text(penalty: dict, before: float | None = None, after: float | None = None,
              whole: bool = False) -> str:
    """What a late penalty took off, in words (plain text: escape it for HTML): on a
    notebook's page its own points, with ``whole`` the points ``before`` and ``after``
    of the whole homework (or notebook) it belongs to."""
    days = penalty["days"]
    homework = penalty.get("homework")
    latest = penalty["latest"]
    what = (f"homework {homework!r}" if homework else
            f"{latest['assignment']}/{latest['notebook']}" if whole else "this notebook")
    which = (f" (its latest notebook, {latest['assignment']}/{latest['notebook']})"
             if homework else "")
    if not whole:
        before, after = penalty["points_before"], penalty["points_after"]
    scope = ("the homework's points" if homework and whole else
             "every notebook of the homework; this one's points" if homework else "points")
    return (f"Late: {what} was handed in {days} day{'' if days == 1 else 's'} after the "
            f"deadline{which}; {_points(penalty['percent_off'])}% off {scope}: "
            f"{_points(before)} becomes {_points(after)}.")


def _body(record: dict, penalty: dict | None = None, level: int = 1) -> list[str]:
    """The page of one notebook, without the document around it (``level``: its heading
    level, 1 for a page of its own)."""
    h, h2 = f"h{level}", f"h{level + 1}"
    title = f"{record['assignment']} / {record['notebook']}"
    score = f"{_points(record['points'])} / {_points(record['max_points'])}"
    body = [f"<{h}>{_e(title)}</{h}>",
            f"<p>Student: <code>{_e(record['student_id'])}</code></p>",
            f'<p class="points">Score: {score}</p>']
    if penalty:
        body[-1] = (f'<p class="points">Score: {score}; after the late penalty: '
                    f'{_points(penalty["points_after"])} / {_points(record["max_points"])}</p>')
        body.append(f'<div class="cell late"><p>{_e(late_text(penalty))}</p></div>')
    if record["status"] != "ok":
        body.append(f'<div class="cell {_e(record["status"])}"><p>Notebook status: '
                    f'<b>{_e(record["status"])}</b></p><p>{_e(record["message"])}</p></div>')
    answers = dict(record.get("answers") or {})
    answer_ids = answer_order(record["cells"], list(answers))
    placed: set[int] = set()
    for answer_id in answer_ids:
        body.append(f"<{h2}>Your answer: <code>{_e(answer_id)}</code></{h2}>")
        body.append(f"<pre>{_e(answers[answer_id])}</pre>")
        for i, row in enumerate(record["cells"]):
            if owner(row, answer_ids) == answer_id:
                body.append(_cell_html(row))
                placed.add(i)
    rest = [row for i, row in enumerate(record["cells"]) if i not in placed]
    if rest:
        body.append(f"<{h2}>Other graded cells</{h2}>" if answer_ids
                    else f"<{h2}>Graded cells</{h2}>")
        body.extend(_cell_html(row) for row in rest)
    return body


def _document(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>Feedback: {_e(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def render(record: dict, penalty: dict | None = None) -> str:
    """The feedback page of one graded notebook, as a complete HTML document; with
    ``penalty`` (:func:`autograder.results.late.penalties`) the late penalty too."""
    return _document(f"{record['assignment']} / {record['notebook']}", _body(record, penalty))


def _index_body(student_id: str, records: list[dict], penalties: dict,
                links: bool) -> list[str]:
    """The index of a student: a table of every notebook, the written answers, the total."""
    from autograder.results.records import sort_key

    records = sorted(records, key=sort_key)
    late_any = any(sort_key(r) in penalties for r in records)
    head = ["Notebook", "Status", "Score"] + (["After the late penalty"] if late_any else [])
    rows = ["<table>", "<tr>" + "".join(f"<th>{_e(c)}</th>" for c in head) + "</tr>"]
    before = after = maximum = 0.0
    written = []
    for record in records:
        penalty = penalties.get(sort_key(record))
        name = f"{record['assignment']} / {record['notebook']}"
        if record["status"] != "missing" and links:
            href = f"{record['assignment']}/{Path(record['notebook']).stem}.html"
            name_html = f'<a href="{_e(href, quote=True)}">{_e(name)}</a>'
        elif record["status"] != "missing":
            name_html = f'<a href="#{_e(_anchor(record), quote=True)}">{_e(name)}</a>'
        else:
            name_html = f"{_e(name)} (not handed in)"
        got = float(record["points"])
        late_points = penalty["points_after"] if penalty else got
        before, after, maximum = before + got, after + late_points, maximum + float(record["max_points"])
        cells = [name_html, _e(record["status"]),
                 f"{_points(got)} / {_points(record['max_points'])}"]
        if late_any:
            cells.append(_e(f"{_points(late_points)} ({_points(penalty['percent_off'])}% off, "
                            f"{penalty['days']} day(s) late)") if penalty else "")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        for cell in record["cells"]:
            if cell.get("kind") == "manual" and record["status"] != "missing":
                given = cell["status"] != "needs_manual_grade"
                written.append(f"<li>{_e(name)}: <code>{_e(cell['grade_id'])}</code> "
                               + (f"{_points(cell['points'])} / {_points(cell['max_points'])}"
                                  f" &mdash; {_e(cell.get('message') or '')}" if given else
                                  f"not graded yet (worth {_points(cell['max_points'])})")
                               + "</li>")
    total = [f"<b>Total</b>", "", f"<b>{_points(before)} / {_points(maximum)}</b>"]
    if late_any:
        total.append(f"<b>{_points(after)} / {_points(maximum)}</b>")
    rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in total) + "</tr>")
    rows.append("</table>")
    body = [f"<h1>Feedback for <code>{_e(student_id)}</code></h1>", *rows]
    if late_any:
        units: dict = {}          # a homework, or a notebook alone: its penalty and sums
        for record in records:
            penalty = penalties.get(sort_key(record))
            if penalty is None:
                continue
            unit = units.setdefault(penalty.get("homework") or sort_key(record),
                                    [penalty, 0.0, 0.0])
            unit[1] += float(penalty["points_before"])
            unit[2] += float(penalty["points_after"])
        body.append("<ul>" + "".join(f"<li>{_e(late_text(p, b, a, whole=True))}</li>"
                                     for p, b, a in units.values()) + "</ul>")
    if written:
        body.append("<h2>Written answers, graded by hand</h2>")
        body.append("<ul>" + "".join(written) + "</ul>")
    return body


def _anchor(record: dict) -> str:
    return f"nb-{record['assignment']}-{Path(record['notebook']).stem}"


def render_index(student_id: str, records: list[dict], penalties: dict | None = None) -> str:
    """``feedback/<student>/index.html``: every notebook of the student (``records``)
    with its score and a link to its page, the total, the written answers' scores, and
    with ``penalties`` the late penalty."""
    return _document(f"{student_id}", _index_body(student_id, records, penalties or {}, True))


def render_combined(student_id: str, records: list[dict], penalties: dict | None = None) -> str:
    """The index and every notebook page of a student in one document (for an LMS that
    takes each uploaded file apart, so that links between files would not work)."""
    from autograder.results.records import sort_key

    penalties = penalties or {}
    body = _index_body(student_id, records, penalties, False)
    for record in sorted(records, key=sort_key):
        if record["status"] == "missing":
            continue
        body.append(f'<section id="{_e(_anchor(record), quote=True)}"><hr>')
        body.extend(_body(record, penalties.get(sort_key(record)), level=2))
        body.append("</section>")
    return _document(student_id, body)


def feedback_path(record: dict, root: Path) -> Path:
    stem = Path(record["notebook"]).stem
    return root / record["student_id"] / record["assignment"] / f"{stem}.html"


def write_feedback(record: dict, root: Path, penalty: dict | None = None) -> Path:
    path = feedback_path(record, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(record, penalty), encoding="utf-8")
    return path


def write_index(student_id: str, records: list[dict], root: Path,
                penalties: dict | None = None) -> Path:
    path = root / student_id / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_index(student_id, records, penalties), encoding="utf-8")
    return path
