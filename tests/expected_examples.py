"""What the example class must grade to (tests/fixtures/examples/EXPECTED.json), shared by
the example-class test and `make check`."""

from __future__ import annotations

import json

from make_examples import EXPECTED_DIR

EXPECTED = json.loads((EXPECTED_DIR / "EXPECTED.json").read_text(encoding="utf-8"))


def assert_graded_as_expected(record: dict, student: str, rel: str) -> None:
    """``record`` (one graded notebook of the example class) is what EXPECTED.json says."""
    expect = EXPECTED[student]["notebooks"][rel]
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
