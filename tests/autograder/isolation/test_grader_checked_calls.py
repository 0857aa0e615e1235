"""A grading child's calls of the earlier course functions are answered by the trusted
grader, which reads each call against the exercise's contract itself; the learner's edge
in the child (``helpers.course.edge.checked``) then checks a call only when it fails
(``course_calls.answered_by_grader``), so a sampling loop does not pay for the check
twice. What a learner sees must not change with it: for every call below (right ones,
lists and other dtypes the edge converts, and each kind of wrong one), the value or the
error (its type and words) in the child is what the course's own functions give here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from autograder.isolation import student_helpers
from sandbox_jobs import helpers_copies, run_cells

pytestmark = pytest.mark.slow

SETUP = """
import numpy as np
rng = np.random.default_rng(5)
x = rng.normal(size=(4, 6))
g, b = rng.normal(size=6), rng.normal(size=6)
W1, b1, W2, b2 = rng.normal(size=(6, 8)), rng.normal(size=8), rng.normal(size=(8, 6)), rng.normal(size=6)
WQ, WK, WV, WO = (rng.normal(size=(6, 6)) for _ in range(4))
nan_x = x.copy(); nan_x[1, 2] = np.nan
"""

#: Calls of four answered functions: right, converted at the edge, and wrong in each way.
CALLS = [
    "helpers.layer_norm(x, g, b)",
    "helpers.layer_norm(x.tolist(), list(g), list(b))",
    "helpers.layer_norm(x.astype(np.float32), g, b)",
    "helpers.layer_norm((x * 100).astype(int), g, b)",
    "helpers.layer_norm(nan_x, g, b)",
    "helpers.layer_norm(x, g[:5], b)",
    "helpers.layer_norm(x[0, 0], g, b)",
    "helpers.layer_norm('x', g, b)",
    "helpers.layer_norm(x, g)",
    "helpers.layer_norm(x, g, b, scale=2)",
    "helpers.layer_norm(x, object(), b)",
    "helpers.layer_norm(x, g, b, eps=-1.0)",
    "helpers.softmax(x)",
    "helpers.softmax(x, axis=0)",
    "helpers.softmax([1.0, float('inf')])",
    "helpers.softmax(x, axis=5)",
    "helpers.layer_norm(x * 1e200, g, b)",               # overflows in the reference
    "helpers.feed_forward(x, W1, b1, W2, b2)",
    "helpers.feed_forward(x, W1, b1, W2.T, b2)",
    "helpers.feed_forward(x, W1, b1, W2, {'b': b2})",
    "helpers.multi_head_attention(x, WQ, WK, WV, WO, 2)",
    "helpers.multi_head_attention(x, WQ, WK, WV, WO, 4)",
    "helpers.multi_head_attention(x, WQ, WK, WV, WO, 0)",
    "helpers.multi_head_attention(x, WQ, WK, WV, WO, 2, causal='yes')",
    "helpers.multi_head_attention(x, WQ, WK, WV, WO, n_heads=3, causal=True)",
]

SAY = """
import json
import helpers, helpers._yours
out = []
for call in CALLS:
    try:
        value = eval(call)
        out.append({"value": np.asarray(value, dtype=float).round(9).tolist()})
    except Exception as exc:
        out.append({"error": f"{type(exc).__name__}: {exc}"})
by_grader = [helpers._yours.answered_by_grader(getattr(helpers.reference, n))
             for n in ("layer_norm", "softmax", "feed_forward", "multi_head_attention")]
print(json.dumps({"out": out, "by_grader": by_grader}))
"""


@pytest.fixture(scope="module")
def block_copy(tmp_path_factory):
    return helpers_copies(tmp_path_factory, "checked", ("transformer_block",))


def _here() -> list[dict]:
    import helpers

    ns = {"helpers": helpers, "CALLS": CALLS}
    exec(SETUP, ns)
    out = []
    for call in CALLS:
        try:
            value = eval(call, ns)
            out.append({"value": np.asarray(value, dtype=float).round(9).tolist()})
        except Exception as exc:
            out.append({"error": f"{type(exc).__name__}: {exc}"})
    return out


def test_a_call_the_grader_answers_gives_what_the_course_gives(block_copy):
    answers = list(student_helpers.trusted_answers("transformer_block"))
    source = f"CALLS = {CALLS!r}\n" + SETUP
    _, lines = run_cells([source, SAY], block_copy, kind="notebook",
                         strip="transformer_block", answers=answers, cell_timeout=60,
                         timeout=120)
    printed = next(line["stdout"] for line in lines if line.get("stdout"))
    seen = json.loads(printed)
    assert seen["by_grader"] == [True] * 4          # the grader checks them: the fast path
    want = _here()
    errors = 0
    for call, got, expected in zip(CALLS, seen["out"], want, strict=True):
        assert got.keys() == expected.keys(), (call, got, expected)
        if "error" in got:
            errors += 1
            assert got["error"] == expected["error"], call
        else:
            np.testing.assert_allclose(got["value"], expected["value"], atol=1e-8,
                                       err_msg=call)
    assert 10 <= errors < len(CALLS)                 # the class holds both kinds
