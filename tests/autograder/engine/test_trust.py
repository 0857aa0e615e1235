"""Verdicts a learner can trust, through the real ``python -m autograder grade`` (the one
run of ``tests/catalogue/run.py``):

* slow top-level work in answer cells, each under the cell limit, costs no points and
  raises no flag (each isolated run executes its own answer cell and, of the others, only
  what the graded function needs; and a
  late reply of the worker can never be taken for the next one's);
* a mistake costs points once, in its own exercise: an exercise whose earlier functions
  are wrong or unanswered, in the same notebook, is graded with the course's versions of
  them and keeps its points (one case per dependency of the registry).

The rng and the instant-check findings are catalogue entries (``generate``'s
``rng_ignored`` and ``rng_reseeded``, ``softmax``'s ``mean_shift``, ``layer_norm``'s
``eps_fixed``), graded in the same run by ``tests/autograder/engine/test_catalogue.py``.
"""

from __future__ import annotations

import pytest

from catalogue import graded_test_cells
from catalogue.run import CASCADE, SLOW, cascade_breaks
from helpers import course


def _rows(run, student, assignment):
    return run.rows[(student, assignment)]


@pytest.fixture(scope="module")
def run(catalogue_run):
    return catalogue_run


def test_a_slow_honest_notebook_earns_every_point_unflagged(run):
    rows = _rows(run, SLOW, "04_queries_keys_values")
    expected = graded_test_cells("04_queries_keys_values")
    assert {g: float(rows[g]["points"]) for g in expected} == expected, {
        g: rows[g]["message"] for g in expected}
    record = run.records[(SLOW, "04_queries_keys_values")]
    assert not record.get("flags"), record.get("flags")


CASES = [(a, dep, user) for a, breaks in cascade_breaks().items()
         for user in course.NOTEBOOKS[a] if user not in breaks
         for dep in course.get(user).uses if dep in breaks]


def test_every_dependency_within_a_notebook_is_exercised():
    pairs = {(dep, user) for _, dep, user in CASES}
    for a, names in course.NOTEBOOKS.items():
        for user in names:
            for dep in course.get(user).uses:
                if dep in names and user not in cascade_breaks()[a]:
                    assert (dep, user) in pairs


@pytest.mark.parametrize("assignment,dep,user", CASES,
                         ids=[f"{d}->{u}" for _, d, u in CASES])
def test_a_wrong_earlier_function_is_charged_once(run, assignment, dep, user):
    rows = _rows(run, CASCADE, assignment)
    points = graded_test_cells(assignment)
    assert float(rows[f"test_{dep}"]["points"]) == 0.0
    assert float(rows[f"test_{user}"]["points"]) == points[f"test_{user}"], \
        rows[f"test_{user}"]["message"]
    # the learner is sent to the cell that is wrong, not to the one that is right
    assert user not in rows[f"test_{dep}"]["message"].replace(f"test_{user}", "")
    record = run.records[(CASCADE, assignment)]
    assert not [f for f in record.get("flags", []) if "tamper" in f], record.get("flags")
