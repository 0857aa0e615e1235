"""The instant check catches what the grader catches: every wrong answer of
``tests/catalogue/`` fails the VISIBLE cases of ``check(name, fn)`` in the learner's
notebook with the words the grader's feedback must hold (the mistakes learners write,
diagnosed by name), and every correct one passes them (visible and hidden)."""

from __future__ import annotations

import pytest

import helpers
from catalogue import function_of, entries, missing
from helpers import checks, course

ENTRIES = entries()


def test_every_exercise_has_its_catalogue_module():
    """A new exercise needs its wrong and correct answers (docs/authoring.md, step 4)."""
    assert missing() == [], (
        f"no catalogue module for {', '.join(missing())}: write tests/catalogue/<name>.py "
        "(WRONG: the mistakes learners make, each with the words its feedback must "
        "contain; CORRECT: right answers written other ways); see tests/catalogue/__init__.py")


_function = function_of


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.kind == "wrong"],
                         ids=lambda e: e.id)
def test_every_wrong_answer_fails_the_visible_check(entry, capsys):
    """... and says what the grader's feedback says: the catalogue's words (the named
    mistake, or the first difference) are in the instant check's message too."""
    fn = _function(entry)
    with pytest.raises(checks.CheckFailed) as failed:
        checks.check(entry.function, fn)
    assert entry.words.lower() in str(failed.value).lower(), str(failed.value)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.kind == "correct"],
                         ids=lambda e: e.id)
def test_every_correct_answer_passes_visible_and_hidden(entry, capsys):
    fn = _function(entry)
    checks.check(entry.function, fn)
    checks.check(entry.function, fn, hidden=True)


def test_the_catalogue_covers_every_exercise():
    assert {e.function for e in ENTRIES} == set(course.names())
    assert helpers is not None
