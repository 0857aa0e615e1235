"""What a learner reads when an answer is wrong (issue 37): the known mistake wins the
headline over a crash in another case, candidates are kept as a list, and changed inputs
are named by their names (a scenario's too)."""

from __future__ import annotations

import pytest

from helpers import checks, course
from helpers.checks import CheckFailed
from helpers.course import candidates, judge


def _crash_then(outputs):
    """A learner's function whose first call raises, then returns ``outputs`` in turn
    (what a known mistake gives on each later case: computed beforehand, since a
    mistake may call the course's own functions, which a learner may not)."""
    calls = [0]

    def answer(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 1:
            raise ValueError("max() arg is an empty sequence")
        return outputs[calls[0] - 2]

    return answer


def _first_shown_later(name):
    """The first known mistake of exercise ``name`` (no scenario case: one call per case)
    that a visible case after the first names, with its outputs on those cases."""
    ex = course.get(name)
    visible = judge.cases(ex)
    if any(c.scenario for c in visible):
        return None
    for mistake in ex.mistakes:
        outcomes = [c.outcome(mistake.fn) for c in visible[1:]]
        if mistake.sampler is not None or any(err is not None for _, err in outcomes):
            continue
        if any(mistake.message in (judge.compare(ex, c, out) or "")
               for c, (out, _) in zip(visible[1:], outcomes)):
            return mistake, [out for out, _ in outcomes]
    return None


CRASH_FIRST = [pytest.param(name, id=name) for name in course.names()
               if _first_shown_later(name) is not None]


def test_the_headline_rule_covers_most_exercises():
    assert len(CRASH_FIRST) >= 40, [p.values[0] for p in CRASH_FIRST]


@pytest.mark.parametrize("name", CRASH_FIRST)
def test_a_named_mistake_wins_the_headline_over_a_crash_in_another_case(name):
    """Every exercise: its first known mistake that a later visible case names, with a
    crash on the first case, is named in the headline; the crash is among 'Also failed'."""
    ex = course.get(name)
    mistake, outputs = _first_shown_later(name)
    with pytest.raises(CheckFailed) as failed:
        checks.check(name, _crash_then(outputs))
    text = str(failed.value)
    head, _, also = text.partition("Also failed")
    assert "Likely mistake" in head and mistake.message in head, text
    assert repr(judge.cases(ex)[0].name) in also, text


def test_mistake_lines_keep_every_candidate():
    text = ("Case 'x' (visible, group 'g'): words.\n  Input:\n    a = 1\n  Problem: wrong"
            "\n  Likely mistake (one of these gives exactly this output):\n"
            "    - the first one.\n    - the second one.\n  Also: something else.")
    assert judge.mistake_lines(text) == ("Likely mistake (one of these gives exactly this "
                                          "output):\n- the first one.\n- the second one.")
    one = "Case 'x': w.\n  Problem: wrong\n  Likely mistake: the only one."
    assert judge.mistake_lines(one) == "Likely mistake: the only one."
    assert judge.mistake_lines("Case 'x': w.\n  Problem: wrong") == ""


def test_headline_prefers_the_first_named_mistake():
    named = "Case 'b'\n  Problem: p\n  Likely mistake: m."
    assert judge.headline([None, "Case 'a'\n  Problem: raised", named, named]) == 2
    assert judge.headline([None, "Case 'a'\n  Problem: raised", "Case 'c'"]) == 1
    assert judge.headline([None, None]) is None


SCENARIO_CASES = [pytest.param(name, c, id=f"{name}-{c.name}") for name in course.names()
                  for c in judge.cases(course.get(name)) if c.scenario]


@pytest.mark.parametrize("name, case", SCENARIO_CASES)
def test_a_changed_input_of_a_scenario_case_is_named_by_its_name(name, case):
    """Every scenario case: each input the scenario takes is named as the scenario names
    it, never "argument 2"."""
    ex = course.get(name)
    got = case.expected()
    for k in range(len(case.args)):
        text = judge.compare(ex, case, got, changed=[k]) or ""
        assert "argument " not in text, text
        assert "modified its input `" in text, text


def test_numerical_gradient_names_x():
    ex = course.get("numerical_gradient")
    case = judge.cases(ex)[0]
    text = judge.compare(ex, case, case.expected(), changed=[1])
    assert "modified its input `x` in place" in text, text


# ---------------------------------------------------------------------------------------
# A list of candidates narrowed by the other cases (judge.narrow): never the real one lost
# ---------------------------------------------------------------------------------------

def _explained(ex, case, mistake):
    """The explanation of ``case`` for an answer that makes ``mistake`` (None: passed)."""
    out, err = case.outcome(mistake.fn)
    if err is not None:
        return judge.error_text(ex, case, f"{type(err).__name__}: {err}", err)
    return judge.compare(ex, case, out)


@pytest.mark.parametrize("name", course.names())
def test_narrowing_keeps_the_mistake_an_answer_makes(name):
    """The class: every known mistake of every exercise, answered as it is. Wherever a
    case lists it among candidates, the list narrowed by the other cases still names it
    (alone, or among fewer); and it narrows for real somewhere in the course."""
    ex = course.get(name)
    visible = judge.cases(ex)
    for mistake in ex.mistakes:
        if mistake.sampler is not None or any(c.is_sampling for c in visible):
            continue
        problems = [_explained(ex, c, mistake) for c in visible]
        told = candidates.narrow(ex, visible, problems)
        said = f"{mistake.message}."
        for before, after in zip(problems, told):
            if before is not None and said in before:
                assert said in after, (mistake.key, before, after)
                assert after.count("\n    - ") <= before.count("\n    - ")


def test_narrowing_names_one_mistake_where_the_other_cases_tell_them_apart():
    """most_similar: on the case of equal cosines three mistakes give row 1; only
    breaking ties toward the largest j also passes every other case."""
    ex = course.get("most_similar")
    visible = judge.cases(ex)
    mistake = next(m for m in ex.mistakes if "ties go to the smallest j" in m.message)
    problems = [_explained(ex, c, mistake) for c in visible]
    listed = [p for p in problems if p and "one of these" in p]
    assert listed, problems                  # a list before narrowing
    told = [t for t in candidates.narrow(ex, visible, problems) if t]
    assert all(f"Likely mistake: {mistake.message}." in t for t in told), told
