"""autograder/examples/: generated from the solutions, up to date, and graded as EXPECTED.json says.

The expectations are derived from the solution notebooks by the rules of
``autograder.make_examples`` (a perfect answer earns every test's points, an unanswered or
reference-calling one earns none, a known mistake loses that function's tests and keeps
the earlier ones, a broken file gets its status); this test grades the committed
examples with the real engine and checks each one.
"""

from __future__ import annotations

import io
import json
import re

import pytest

from autograder import SOLUTIONS_DIR, grade
from autograder.make_examples import EXAMPLES_DIR, make_examples

EXPECTED = json.loads((EXAMPLES_DIR / "EXPECTED.json").read_text(encoding="utf-8"))


def test_examples_are_up_to_date(tmp_path):
    make_examples(tmp_path)
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    stored = {p.relative_to(EXAMPLES_DIR): p.read_bytes() for p in EXAMPLES_DIR.rglob("*")
              if p.is_file()}
    assert sorted(fresh) == sorted(stored), "autograder/examples/ is stale: run `make examples`"
    for rel in fresh:
        assert fresh[rel] == stored[rel], f"autograder/examples/{rel} is stale: run `make examples`"


def test_examples_cover_the_issue_list():
    assert {"perfect", "unanswered", "typical_mistakes_1", "typical_mistakes_2", "invalid_json",
            "infinite_loop", "deleted_test", "duplicated_answer", "memory_hog", "output_flood",
            "kills_kernel", "kills_parent", "stripped_metadata", "edited_tests"} <= set(EXPECTED)
    text = (EXAMPLES_DIR / "submissions" / "invalid_json").rglob("*.ipynb")
    with pytest.raises(ValueError):
        json.loads(next(text).read_text())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("graded")
    records = grade.run(EXAMPLES_DIR / "submissions", out, jobs=2, stream=io.StringIO(),
                        limits=grade.Limits(cell_timeout=10, notebook_timeout=60, memory_mb=1024))
    return out, {(r["student_id"], f"{r['assignment']}/{r['notebook']}"): r for r in records}


CASES = [(student, rel) for student, entry in EXPECTED.items() for rel in entry["notebooks"]]


@pytest.mark.slow
@pytest.mark.parametrize("student, rel", CASES, ids=[f"{s}-{r.split('/')[0]}" for s, r in CASES])
def test_example_grades_as_expected(graded, student, rel):
    _, records = graded
    expect = EXPECTED[student]["notebooks"][rel]
    record = records[(student, rel)]
    summary = f"{student}/{rel}: {record['status']} {record['message']} {record['cells']}"
    assert record["status"] in expect["status"], summary
    points = {c["grade_id"]: c for c in record["cells"]}
    for grade_id in expect["full_marks"]:
        cell = points[grade_id]
        assert cell["points"] == cell["max_points"] > 0, summary
    for grade_id in expect["no_marks"]:
        cell = points[grade_id]
        assert cell["points"] == 0, summary
        assert cell["message"], f"{student}/{rel}/{grade_id}: a lost point needs a reason"
    autograded = sum(c["points"] for c in record["cells"] if c["kind"] == "test")
    if expect["points"] is not None:
        assert autograded == expect["points"], summary
    assert sum(c["max_points"] for c in record["cells"] if c["kind"] == "test") == expect["max_points"]
    if expect["flagged"] is not None:
        assert bool(record["flags"]) == expect["flagged"], summary


def hidden_lines(assignment: str) -> list[str]:
    """The non-trivial lines of the hidden tests of an assignment's solution notebooks."""
    lines = []
    for path in (SOLUTIONS_DIR / assignment).glob("*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for block in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", source, re.S):
                lines += [line.strip() for line in block.splitlines() if len(line.strip()) > 12]
    return lines


@pytest.mark.slow
def test_feedback_pages_never_show_hidden_tests(graded):
    out, records = graded
    pages = sorted((out / "feedback").rglob("*.html"))
    assert len(pages) == sum(r["status"] != "missing" for r in records.values())
    checked = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assignment = page.parent.name
        for line in hidden_lines(assignment):
            assert line not in text and line.replace('"', "&quot;") not in text, (page, line)
            checked += 1
    assert checked > 0, "no hidden tests to check against"
