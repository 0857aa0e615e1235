"""Where it goes wrong on the grader's feedback page (issue 37): the learner's function
is traced in the sandboxed child on its failing case only, the record crosses as plain
data, and the trusted process matches it against the reference's steps. Through
``python -m autograder grade`` on a one-student class built from the solution notebook
with one catalogue answer in place."""

from __future__ import annotations

import re

import pytest

from catalogue import assignments, entries
from helpers.course import trace
from test_grading_truth import grade_one, _feedback

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
