"""Backward passes are judged as analytic ones (issue 36, finding 7): central differences
of the forward pass, with any reasonable step, fail the visible checks of notebook 12's
backward exercises, and the right analytic answers (the reference and the catalogue's
correct ones) pass every case, visible and hidden, of several students' draws.

The answers built here are what a learner who skips the derivative writes: the course's
``numerical_gradient`` (central differences) of ``sum(d_out * forward(...))``, for every
input, the forward pass being the course's own (the grader's worker answers it; ``x @ W``
for the linear layer), and,
for the pointwise GELU, the same entry by entry. The steps are generated: 29 from 1e-8
to 1e-1 spaced evenly in log scale, and every power of two in that range (a step that is
a power of two moves ``x`` exactly).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from catalogue import entries
from helpers import checks, course, training
from helpers.course import judge
from helpers.bert.model import gelu
from helpers.reference import layer_norm, scaled_dot_product_attention

STEPS = sorted(set(np.logspace(-8, -1, 29).tolist()
                   + [2.0 ** -k for k in range(4, 27)]))
#: Students whose drawn hidden cases the right answers must pass.
SEEDS = (None, 5, 77, 2024)


def _central(f, x, h):
    return training.numerical_gradient(f, x, h)


def _gelu_backward(h, pointwise=False):
    def answer(z, d_out):
        z, dy = np.asarray(z, dtype=float), np.asarray(d_out, dtype=float)
        if pointwise:
            return dy * (gelu(z + h) - gelu(z - h)) / (2 * h)
        return _central(lambda x: np.sum(dy * gelu(x)), z, h)
    return answer


def _layer_norm_backward(h):
    def answer(x, gamma, d_out, eps=1e-5):
        x, gamma, dy = (np.asarray(a, dtype=float) for a in (x, gamma, d_out))
        beta = np.zeros_like(gamma)
        loss = lambda x_, g_: np.sum(dy * layer_norm(x_, g_, beta, eps))    # noqa: E731
        return (_central(lambda x_: loss(x_, gamma), x, h),
                _central(lambda g_: loss(x, g_), gamma, h),
                dy.reshape(-1, x.shape[-1]).sum(axis=0))
    return answer


def _attention_backward(h):
    def answer(Q, K, V, mask, d_out):
        Q, K, V, dy = (np.asarray(a, dtype=float) for a in (Q, K, V, d_out))
        loss = lambda q, k, v: np.sum(dy * scaled_dot_product_attention(q, k, v, mask)[0])  # noqa: E731
        return (_central(lambda q: loss(q, K, V), Q, h), _central(lambda k: loss(Q, k, V), K, h),
                _central(lambda v: loss(Q, K, v), V, h))
    return answer


def _linear_backward(h):
    def answer(x, W, d_out):
        x, W, dy = (np.asarray(a, dtype=float) for a in (x, W, d_out))
        loss = lambda x_, W_: np.sum(dy * (x_ @ W_))                          # noqa: E731
        return (_central(lambda x_: loss(x_, W), x, h), _central(lambda W_: loss(x, W_), W, h),
                dy.reshape(-1, dy.shape[-1]).sum(axis=0))
    return answer


NUMERICAL = {
    "linear_backward": [_linear_backward],
    "gelu_backward": [_gelu_backward, lambda h: _gelu_backward(h, pointwise=True)],
    "layer_norm_backward": [_layer_norm_backward],
    "attention_backward": [_attention_backward],
}


@pytest.mark.parametrize("name", sorted(NUMERICAL))
def test_central_differences_fail_the_visible_check_for_every_step(name):
    said = {}
    for i, make in enumerate(NUMERICAL[name]):
        for h in STEPS:
            with pytest.raises(checks.CheckFailed) as caught:
                checks.check(name, make(h))
            said[(i, h)] = str(caught.value)
    # with the course's own step (numerical_gradient's default) the check names the mistake
    assert 1e-5 in STEPS and "numerical, not analytic, gradient" in said[(0, 1e-5)]
    case = _case(name, "mixed_scales")
    found = judge.diagnose(course.get(name), case, NUMERICAL[name][0](1e-5)(*case.fresh_args()[0]))
    assert [m.key for m in found] == ["numerical_gradient"]


def _case(name, key):
    return next(c for c in course.get(name).all_cases() if c.name == key)


@pytest.mark.parametrize("name", sorted(NUMERICAL))
def test_the_case_that_stops_them_is_visible(name):
    """A learner sees the failure in the instant check: the case is a visible one."""
    assert not _case(name, "mixed_scales").hidden


@pytest.mark.parametrize("name", sorted(NUMERICAL))
def test_right_analytic_answers_pass_every_case_of_every_draw(name):
    ns = {"np": np, "math": math}
    exec("from helpers import *\nfrom helpers.bert import erf", ns)
    answers = {"reference": course.get(name).reference}
    for entry in entries():
        if entry.function == name and entry.kind == "correct":
            exec(compile(entry.source, entry.id, "exec"), ns)
            answers[entry.key] = ns[name]
    assert len(answers) >= 3
    problems = []
    for seed in SEEDS:
        for case in course.get(name).all_cases(seed):
            for key, fn in answers.items():
                args, kwargs = case.fresh_args()
                problem = judge.compare(course.get(name), case, fn(*args, **kwargs))
                if problem:
                    problems.append(f"{key} on {case.name} (seed {seed}): {problem}")
    assert not problems, problems
