"""The example class: generated from the solutions on demand, graded as EXPECTED.json says.

The expectations are derived from the solution notebooks by the rules of
``tools/make_examples.py`` (a perfect answer earns every test's points, an unanswered or
reference-calling one earns none, a known mistake loses that function's tests and keeps
the earlier ones, a broken file gets its status); the committed copy of them
(``tests/fixtures/examples/``) must be up to date, and this test generates the class,
grades it with the real engine and checks each one.
"""

from __future__ import annotations

import json
import re

import pytest

from autograder import SOLUTIONS_DIR
from autograder.results.records import read_records
from make_examples import EXPECTED_DIR, make_examples
from expected_examples import EXPECTED, assert_graded_as_expected



def test_the_committed_expectations_are_up_to_date(example_class):
    for name in ("EXPECTED.json", "EXPECTED.md"):
        assert (example_class / name).read_bytes() == (EXPECTED_DIR / name).read_bytes(), \
            f"tests/fixtures/examples/{name} is stale: run `make examples`"


def test_expected_only_writes_just_the_expectations(tmp_path):
    make_examples(tmp_path, expected_only=True)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["EXPECTED.json", "EXPECTED.md"]


def test_examples_cover_the_issue_list(example_class):
    assert {"perfect", "unanswered", "typical_mistakes_1", "typical_mistakes_2", "invalid_json",
            "infinite_loop", "deleted_test", "duplicated_answer", "memory_hog", "output_flood",
            "kills_kernel", "kills_parent", "stripped_metadata", "edited_tests"} <= set(EXPECTED)
    text = (example_class / "submissions" / "invalid_json").rglob("*.ipynb")
    with pytest.raises(ValueError):
        json.loads(next(text).read_text())


@pytest.fixture(scope="module")
def graded(example_class_graded):
    """The class graded by ``python -m autograder grade`` (tests/conftest.py), its records."""
    out, result, _, _ = example_class_graded
    assert result.returncode == 0, result.stderr[-3000:]
    records = read_records(out)
    return out, {(r["student_id"], f"{r['assignment']}/{r['notebook']}"): r for r in records}


CASES = [(student, rel) for student, entry in EXPECTED.items() for rel in entry["notebooks"]]


@pytest.mark.slow
@pytest.mark.parametrize("student, rel", CASES, ids=[f"{s}-{r.split('/')[0]}" for s, r in CASES])
def test_example_grades_as_expected(graded, student, rel):
    _, records = graded
    assert_graded_as_expected(records[(student, rel)], student, rel)


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
    pages = sorted(p for p in (out / "feedback").rglob("*.html") if p.name != "index.html")
    assert len(pages) == sum(r["status"] != "missing" for r in records.values())
    indexes = sorted((out / "feedback").glob("*/index.html"))    # one per student
    assert len(indexes) == len({r["student_id"] for r in records.values()})
    checked = 0
    for page in pages + indexes:
        text = page.read_text(encoding="utf-8")
        assignments = ([page.parent.name] if page.name != "index.html" else
                       sorted({r["assignment"] for r in records.values()}))
        for line in (line for a in assignments for line in hidden_lines(a)):
            assert line not in text and line.replace('"', "&quot;") not in text, (page, line)
            checked += 1
    assert checked > 0, "no hidden tests to check against"


def test_the_commands_make_examples_runs_the_tool(tmp_path):
    """``python -m autograder make-examples`` (the name the README and older notes use)
    runs tools/make_examples.py: the same expectations, the same words."""
    import subprocess
    import sys

    from autograder import REPO_ROOT

    done = subprocess.run([sys.executable, "-m", "autograder", "make-examples",
                           "--expected-only", "--dest", str(tmp_path)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "make-examples: 2 file(s) changed" in done.stdout
    for name in ("EXPECTED.json", "EXPECTED.md"):
        assert (tmp_path / name).read_bytes() == (EXPECTED_DIR / name).read_bytes(), name
