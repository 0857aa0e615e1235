"""Where it goes wrong (helpers/course/trace.py, issue 37): every wrong answer of the
catalogue to an exercise that declares its steps gets a line naming a step and the
learner's own line; the tracer records what each line of the learner's function holds."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from catalogue import entries
from catalogue import function_of as _function
from helpers import checks, course
from helpers.checks import CheckFailed
from helpers.course import trace


TRACED = [e for e in entries() if e.kind == "wrong" and trace.declared(e.function)]


def test_the_steps_are_declared_for_exercises_of_notebooks_02_to_07():
    assert {"softmax", "simple_self_attention", "scaled_dot_product_attention",
            "cross_attention", "multi_head_attention", "layer_norm", "feed_forward",
            "transformer_block"} <= {e.function for e in TRACED}


@pytest.mark.parametrize("entry", TRACED, ids=lambda e: e.id)
def test_every_traced_wrong_answer_is_told_where_it_goes_wrong(entry):
    with pytest.raises(CheckFailed) as failed:
        checks.check(entry.function, _function(entry))
    text = str(failed.value)
    line = next((ln for ln in text.splitlines() if ln.strip().startswith(trace.MARK)), "")
    if not line:      # its output's values are the right ones (changed inputs, the order
        # of what it returns, the dtype): the check names that, in the catalogue's words
        assert "Likely mistake: " in text or entry.words.lower() in text.lower(), text
        return
    assert re.search(r"your `\w+(\[\d\])?` \(line \d+\)", line), text


def test_the_steps_of_the_reference_are_all_reproduced_by_it():
    """The course's own steps, run as a learner's function, leave nothing to tell."""
    for name in ("scaled_dot_product_attention", "layer_norm"):
        ex = course.get(name)
        for case in checks.judge.cases(ex):
            if case.scenario:
                continue
            assert trace.where(ex, _reference_like(name), case) is None, (name, case.name)


def _reference_like(name):
    ns = {"np": np}
    exec({"scaled_dot_product_attention": """
def f(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2)
    scaled = scores / np.sqrt(Q.shape[-1])
    if mask is not None:
        scaled = np.where(mask, scaled, -1e9)
    e = np.exp(scaled - scaled.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    return w @ V, w
""", "layer_norm": """
def f(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    n = (x - m) / np.sqrt(v + eps)
    return np.asarray(gamma) * n + np.asarray(beta)
"""}[name], ns)
    return ns["f"]


def test_record_sees_each_line_and_the_return_value():
    ns = {"np": np}
    exec("def f(a):\n    b = a * 2\n    c = b + 1\n    return c, b\n", ns)
    seen = trace.record(ns["f"], (np.arange(3.0),), {})
    by_name = {s.name: s for s in seen}
    assert by_name["b"].line == 2 and by_name["c"].line == 3
    assert np.array_equal(by_name["c"].value, np.arange(3.0) * 2 + 1)
    assert {"return[0]", "return[1]"} <= set(by_name)


RIGHT = [e for e in entries() if e.kind == "correct" and trace.declared(e.function)]


@pytest.mark.parametrize("entry", RIGHT, ids=lambda e: e.id)
def test_a_right_answer_reproduces_every_declared_step(entry):
    """The steps are the reference's own: a right answer of the catalogue, however it is
    written, leaves nothing to tell on any visible case (a step it holds in no variable
    is passed over only when its last step, the output, is right)."""
    ex = course.get(entry.function)
    fn = _function(entry)
    for case in checks.judge.cases(ex):
        if not case.scenario:
            with warnings.catch_warnings(), np.errstate(all="ignore"):   # as the check runs it
                warnings.simplefilter("ignore")
                told = trace.where(ex, fn, case)
            assert told is None, (case.name, told)


#: A line naming the learner's mistake: a single named mistake, or where it goes wrong
#: on a line of theirs (issue 37's count; a list of candidates is not counted).
NAMES_IT = re.compile(r"^\s*Likely mistake: |^\s*Where it goes wrong: .*your `[^`]+` "
                      r"\(line \d+\)", re.M)
#: The share of the catalogue's wrong answers whose instant check names the mistake:
#: 81.2 % (276 of 340) before the steps of notebooks 02-08 and 10, 86.2 % (293) after;
#: 92.7 % (328 of 354) once candidate lists were narrowed by the other cases and the
#: mistakes of notebooks 09-10 were named; issue 37 asks for 90 %.
#: The floor is what the catalogue holds now: it may only rise.
NAMED_FLOOR = 0.92


def _instant_text(entry) -> str:
    with warnings.catch_warnings(), pytest.raises(CheckFailed) as failed:
        warnings.simplefilter("ignore")
        checks.check(entry.function, _function(entry))
    return str(failed.value)


def test_the_instant_check_names_the_mistake_of_most_wrong_answers(capsys):
    wrong = [e for e in entries() if e.kind == "wrong"]
    named = [e.id for e in wrong if NAMES_IT.search(_instant_text(e))]
    assert len(named) / len(wrong) >= NAMED_FLOOR, (len(named), len(wrong))
