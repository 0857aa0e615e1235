"""The solution notebook read once (autograder/notebook/source.py): which test checks
which answer, decided where the ``check(...)`` line is parsed; a submission merged into it
(autograder/notebook/submission.py)."""

from __future__ import annotations

from pathlib import Path

from autograder.notebook import source


def test_a_test_cell_without_a_check_call_checks_nothing():
    no_check = source.SourceCell("code", "test", "test_softmax", 1, "assert True")
    assert source.case_specs(no_check, "assert True") == []


def test_case_specs_follow_the_check_calls():
    src = ('check("softmax", softmax)\n### BEGIN HIDDEN TESTS\n'
           'check("softmax", softmax, hidden=True, group="axis")\n### END HIDDEN TESTS')
    cell = source.SourceCell("code", "test", "test_softmax", 2, src)
    specs = source.case_specs(cell, cell.visible)
    assert specs == [source.CaseSpec("softmax", False, None, True),
                     source.CaseSpec("softmax", True, "axis", False)]


def test_a_written_answer_without_metadata_is_found_after_its_question():
    """Issue 21, finding 12: a Colab round trip strips nbgrader's metadata; the written
    answer is then the unmarked cell right after its question, never another cell."""
    from autograder.notebook.submission import merge

    cells = (source.SourceCell("markdown", "other", None, 0, "## Intro"),
             source.SourceCell("markdown", "other", None, 0, "Why divide by sqrt(d_k)?"),
             source.SourceCell("markdown", "manual", "why", 2, "The variance grows with d_k."),
             source.SourceCell("markdown", "other", None, 0, "## Recap"))
    src = source.Source("01_a", "01_a.ipynb", Path("01_a.ipynb"), cells)

    def md(text, gid=None):
        meta = {"nbgrader": {"grade_id": gid, "grade": True, "solution": True}} if gid else {}
        return {"cell_type": "markdown", "metadata": meta, "source": text}

    stripped = merge(src, [md("## Intro"), md("Why divide by sqrt(d_k)?"),
                           md("Because the dot products grow like sqrt(d_k)."), md("## Recap")])
    assert stripped.answers["why"] == "Because the dot products grow like sqrt(d_k)."
    assert any("'why' had no nbgrader metadata" in f for f in stripped.flags)
    # the question's next cell is the source's own prose: not an answer
    deleted = merge(src, [md("## Intro"), md("Why divide by sqrt(d_k)?"), md("## Recap")])
    assert deleted.answers["why"] == ""
    # with its metadata, the cell is read as before, without a flag
    kept = merge(src, [md("Why divide by sqrt(d_k)?"), md("Mine.", gid="why")])
    assert kept.answers["why"] == "Mine." and not kept.flags
