"""Where it goes wrong on the grader's feedback page (issue 37): the learner's function
is traced in the sandboxed child on its failing case only, the record crosses as plain
data, and the trusted process matches it against the reference's steps. Through
``python -m autograder grade`` on a one-student class built from the solution notebook
with one catalogue answer in place."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from attacks.tracing import TRICKS
from catalogue import assignments, entries
from helpers.course import trace
from one_answer import feedback_of as _feedback, grade_one

#: "your `name` (line N)": a line the learner wrote, named.
NAMED_LINE = re.compile(r"your `[^`]+` \(line \d+\)")


def _entry(entry_id: str):
    return next(e for e in entries() if e.id == entry_id)


def _graded(tmp_path, entry, *extra):
    """The feedback of the test cell of ``entry``'s function, graded by the command."""
    assignment = assignments()[entry.function]
    rows, record = grade_one(tmp_path, assignment, {entry.function: entry.source}, *extra)
    return rows[f"test_{entry.function}"], _feedback(record, f"test_{entry.function}")


def _where_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines()
                 if ln.strip().startswith(trace.MARK)), "")


@pytest.mark.slow
@pytest.mark.parametrize("entry_id", ["scaled_dot_product_attention-wrong-no_scale",
                                      "layer_norm-wrong-eps_outside_sqrt"])
def test_the_feedback_page_says_where_it_goes_wrong(tmp_path, entry_id):
    entry = _entry(entry_id)
    row, text = _graded(tmp_path, entry)
    assert float(row["points"]) == 0, row
    line = _where_line(text)
    assert NAMED_LINE.search(line), text
    # the line the feedback names is one the learner wrote that holds that variable
    name, number = re.search(r"your `([^`\[]+)[^`]*` \(line (\d+)\)", line).groups()
    assert name in entry.source.splitlines()[int(number) - 1] or name.startswith("return"), line


@pytest.mark.slow
@pytest.mark.parametrize("key", [key for key, _, _ in TRICKS])
def test_a_hostile_trace_is_refused_and_never_changes_the_verdict(tmp_path, key):
    """A learner's cell that lifts the child's caps on the record, forges its names or
    hangs when traced: grading finishes, the answer gets the verdict and named mistake
    of the same wrong answer without the trick, and no word of the record is shown."""
    code = next(code for k, code, _ in TRICKS if k == key)
    plain = _entry("layer_norm-wrong-eps_outside_sqrt")
    assert "eps_outside" in plain.id and plain.source.splitlines()[-1] in code
    row, text = _graded(tmp_path, replace(plain, source=code), "--cell-timeout", "10")
    assert float(row["points"]) == 0 and row["status"] == "failed", row
    assert "Likely mistake: eps was added outside the square root" in text, text
    assert trace.MARK not in text, text
    assert "\x1b" not in text and "<script>" not in text, text
