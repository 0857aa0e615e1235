"""The course notebooks: structure (nbgrader metadata against the contract) and execution.

* Solutions (``solutions/``) run top to bottom without an error, print nothing on stderr
  in any test cell (nbgrader scores such a cell 0), not even for a correct answer that
  prints warnings. How fast they run is measured by tools/benchmark_notebooks.py.
* Student notebooks (``notebooks/``) run too: every answer is a stub that raises
  NotImplementedError, every test of an answer fails because of that (and for no other
  reason), and everything else (imports, demos, plots, explorers) works before the
  student has written a line.
* The HTML export of a notebook without widget state shows a picture for each explorer.

Tests are parametrized over the notebooks that exist, so each new notebook is covered as
it lands. Notebooks are executed in temporary copies (tests/notebook_helpers.py).
"""

from __future__ import annotations

import base64
from collections import defaultdict
from pathlib import Path

import pytest

import helpers
from autograder import REPO_ROOT
from notebook_helpers import (
    NOISY_MARK, SEEDS_DIR, bound_names, cell_label, defined_functions, errors, execute,
    executed_solution, explorer_cells, grade_id, has_hidden_tests, has_toplevel_stub, is_answer,
    is_manual, is_test,
    loaded_names, nb_id, probe_report, read, short, slide_runs, solution_notebooks, stderr_text,
    stub_functions, student_notebooks, with_stub_probes, word_runs, words,
)

SOLUTIONS = solution_notebooks()
STUDENTS = student_notebooks()
# How long each notebook takes is measured by tools/benchmark_notebooks.py, not asserted
# here: a timing depends on the machine. A cell that hangs still fails (CELL_TIMEOUT).


def rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def course_cells():
    """``(notebook path, index, cell)`` for every cell of every solution notebook."""
    for path in SOLUTIONS:
        for index, cell in enumerate(read(path).cells):
            yield path, index, cell


# ---------------------------------------------------------------------------------------
# Structure of the solutions (fast: no execution)
# ---------------------------------------------------------------------------------------


def test_course_has_notebooks():
    assert SOLUTIONS, "solutions/ holds no notebook"
    released = {p.relative_to(p.parents[1]) for p in STUDENTS}
    missing = [rel(p) for p in SOLUTIONS if p.relative_to(p.parents[1]) not in released]
    assert not missing, f"not released to notebooks/ (run `make release`): {missing}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=nb_id)
def test_grade_ids_unique_in_notebook(path: Path):
    seen: dict[str, int] = {}
    dupes = []
    for index, cell in enumerate(read(path).cells):
        gid = grade_id(cell)
        if gid is None:
            continue
        if gid in seen:
            dupes.append(f"{gid!r} in cells {seen[gid]} and {index}")
        seen[gid] = index
    assert not dupes, f"{rel(path)}: duplicate nbgrader grade_id (nbgrader rejects the notebook): {dupes}"


def test_answer_grade_ids_unique_across_course():
    where = defaultdict(list)
    for path, index, cell in course_cells():
        if is_answer(cell):
            where[grade_id(cell)].append(f"{rel(path)} cell {index}")
    dupes = {gid: places for gid, places in where.items() if len(places) > 1}
    assert not dupes, f"answer cells share a grade_id across the course: {dupes}"
    assert None not in where, f"answer cells without grade_id: {where.get(None)}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=nb_id)
def test_test_cells_have_points_and_test_prefix(path: Path):
    problems = []
    for index, cell in enumerate(read(path).cells):
        if not is_test(cell):
            continue
        gid, points = grade_id(cell) or "", cell.metadata.nbgrader.get("points")
        if not gid.startswith("test_"):
            problems.append(f"{cell_label(cell, index)}: grade_id must start with 'test_'")
        if not isinstance(points, (int, float)) or points <= 0:
            problems.append(f"{cell_label(cell, index)}: points must be > 0, is {points!r}")
        if not cell.metadata.nbgrader.get("locked"):
            problems.append(f"{cell_label(cell, index)}: test cell is not locked")
    assert not problems, f"{rel(path)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", helpers.CONTRACT_FUNCTIONS)
def test_contract_function_has_one_answer_cell(name: str):
    cells = [(path, index, cell) for path, index, cell in course_cells()
             if is_answer(cell) and grade_id(cell) == name]
    assert cells, (
        f"no answer cell with grade_id {name!r} in solutions/ "
        f"(notebooks so far: {[nb_id(p) for p in SOLUTIONS]})"
    )
    assert len(cells) == 1, f"{name}: {len(cells)} answer cells: {[(rel(p), i) for p, i, _ in cells]}"
    path, index, cell = cells[0]
    assert name in defined_functions(cell.source), (
        f"{rel(path)} cell {index} (grade_id {name!r}) does not define `def {name}(...)`"
    )


@pytest.mark.parametrize("name", helpers.CONTRACT_FUNCTIONS)
def test_contract_function_has_hidden_tests(name: str):
    answer = [(path, index) for path, index, cell in course_cells()
              if is_answer(cell) and grade_id(cell) == name]
    tests = [(path, index, cell) for path, index, cell in course_cells()
             if is_test(cell) and (grade_id(cell) or "").startswith(f"test_{name}")]
    assert tests, f"no test cell with a grade_id starting with 'test_{name}' in solutions/"
    hidden = [(path, index) for path, index, cell in tests if has_hidden_tests(cell)]
    assert hidden, (
        f"none of the test cells of {name} ({[grade_id(c) for _, _, c in tests]}) has a "
        f"'### BEGIN HIDDEN TESTS' ... '### END HIDDEN TESTS' block"
    )
    if answer:  # (its absence is reported by test_contract_function_has_one_answer_cell)
        path, index = answer[0]
        after = [(p, i) for p, i, _ in tests if p == path and i > index]
        assert after, f"{name}: no test cell after its answer cell ({rel(path)} cell {index})"


def test_manually_graded_written_answers():
    manual = [(path, index, cell) for path, index, cell in course_cells() if is_manual(cell)]
    assert len(manual) >= 2, (
        f"the course needs at least two manually graded markdown answers "
        f"(nbgrader grade: true, solution: true); found {len(manual)}"
    )
    for path, index, cell in manual:
        points = cell.metadata.nbgrader.get("points")
        assert isinstance(points, (int, float)) and points > 0, (
            f"{rel(path)} {cell_label(cell, index)}: manually graded cell needs points > 0"
        )


@pytest.mark.skipif(not SEEDS_DIR.is_dir(), reason=f"the slides' text is not here ({SEEDS_DIR})")
@pytest.mark.parametrize("path", SOLUTIONS, ids=nb_id)
def test_no_cell_copies_the_slides(path: Path):
    runs = slide_runs()
    assert runs, f"no text read from {SEEDS_DIR}"
    copied = []
    for index, cell in enumerate(read(path).cells):
        common = word_runs(cell.source) & runs
        if common:
            copied.append(f"{cell_label(cell, index)}: '{' '.join(sorted(common)[0])}'")
    assert not copied, (
        f"{rel(path)} repeats runs of 12 words from the slides (write your own sentences):\n"
        + "\n".join(copied)
    )


def test_slide_copy_check_detects_a_copied_sentence():
    """The check above can fail: a sentence lifted from a slide is found."""
    if not SEEDS_DIR.is_dir():
        pytest.skip(f"the slides' text is not here ({SEEDS_DIR})")
    text = max(sorted(SEEDS_DIR.glob("0*.txt")), key=lambda p: p.stat().st_size).read_text()
    paragraph = max(text.split("\n\n"), key=lambda p: len(words(p)))
    assert len(words(paragraph)) >= 12
    assert word_runs(f"In our words: {paragraph}") & slide_runs()
    assert not word_runs("We write every sentence of this course ourselves, in our own "
                         "words, and reuse only the numbers of the worked examples.") & slide_runs()


# ---------------------------------------------------------------------------------------
# Solutions execute cleanly and quickly
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLUTIONS, ids=nb_id)
def test_solution_runs_without_error_or_stderr_in_tests(path: Path):
    run = executed_solution(path)
    problems = [f"execution stopped: {run.failure}"] if run.failure else []
    for index, cell in enumerate(run.nb.cells):
        if cell.cell_type != "code":
            continue
        for ename, evalue in errors(cell):
            if not (run.failure and ename == "KeyboardInterrupt"):  # the interrupt after a timeout
                problems.append(f"{cell_label(cell, index)} raised {ename}: {short(evalue)}")
        if is_test(cell) and stderr_text(cell).strip():
            problems.append(
                f"test cell {grade_id(cell)!r} wrote to stderr (nbgrader scores it 0):\n"
                f"{short(stderr_text(cell))}"
            )
    assert not problems, f"{rel(path)} (ran in {run.seconds:.1f} s):\n" + "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLUTIONS, ids=nb_id)
def test_correct_answers_that_print_warnings_keep_every_test_cell_quiet(path: Path):
    """Under plain nbgrader any stderr output in a test cell scores it 0, so the test cells
    (the contract checks and the notebooks' own tests) must silence the learner's
    warnings. Every answer of the shared run is the solution plus warnings
    (:func:`executed_solution`)."""
    run = executed_solution(path)
    assert run.failure is None, run.failure
    noisy = [c for c in run.nb.cells if is_answer(c) and NOISY_MARK in c.source]
    assert noisy, "no answer cell defines a function"
    problems = []
    for index, cell in enumerate(run.nb.cells):
        if cell.cell_type != "code":
            continue
        problems += [f"{cell_label(cell, index)} raised {e}: {short(v)}" for e, v in errors(cell)]
        if is_test(cell) and stderr_text(cell).strip():
            problems.append(f"test cell {grade_id(cell)!r} printed a warning:\n"
                            f"{short(stderr_text(cell))}")
    assert not problems, rel(path) + ":\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------
# Student notebooks: stubs raise, tests fail because of them, everything else works
# ---------------------------------------------------------------------------------------


def _failure_is_the_missing_answer(ename: str, evalue: str, answer_names: set[str]) -> bool:
    if ename == "NotImplementedError" or "not implemented" in evalue.lower():
        return True
    return ename == "NameError" and any(f"'{n}'" in evalue for n in answer_names)


def student_problems(path: Path) -> tuple[list[str], float]:
    nb = read(path)
    answer_names: set[str] = set()
    for cell in nb.cells:
        if is_answer(cell):
            answer_names |= bound_names(cell.source)
    run = execute(path, with_stub_probes(nb), allow_errors=True)
    cells = run.nb.cells
    problems = [f"execution stopped: {run.failure}"] if run.failure else []
    index = -1                      # index in the student notebook (probe cells skipped)
    for position, cell in enumerate(cells):
        if cell.metadata.get("stub_probe_for"):
            continue
        index += 1
        if cell.cell_type != "code":
            continue
        label = cell_label(cell, index)
        errs = errors(cell)
        if is_answer(cell):
            stubs = stub_functions(cell.source)
            if not stubs and not has_toplevel_stub(cell.source):
                problems.append(f"answer {label} has no `raise NotImplementedError` stub: "
                                f"are the ### BEGIN/END SOLUTION markers missing?")
            if errs and errs[0][0] != "NotImplementedError":
                problems.append(f"answer {label} raised {errs[0][0]}: {short(errs[0][1])} "
                                f"(expected NotImplementedError or nothing)")
            if not errs and has_toplevel_stub(cell.source):
                problems.append(f"answer {label} ran without raising NotImplementedError")
            if stubs and not errs:
                probe = cells[position + 1] if position + 1 < len(cells) else None
                report = probe_report(probe) if probe is not None else {}
                for name in stubs:
                    outcome = report.get(name, "not probed")
                    if outcome is not None:
                        problems.append(f"answer {label}: calling the stub {name}() should raise "
                                        f"NotImplementedError, got: {outcome}")
        elif is_test(cell):
            depends = bool(loaded_names(cell.source) & answer_names)
            if errs:
                ename, evalue = errs[0]
                if not _failure_is_the_missing_answer(ename, evalue, answer_names):
                    problems.append(f"test {label} fails for a reason other than the missing "
                                    f"answer: {ename}: {short(evalue)}")
            elif depends:
                problems.append(f"test {label} passes although the answer it tests "
                                f"({sorted(loaded_names(cell.source) & answer_names)}) is a stub: "
                                f"it gives points for nothing")
        elif errs:
            ename, evalue = errs[0]
            problems.append(f"{label} (not an answer or a test) raised {ename}: {short(evalue)}; "
                            f"students run it before writing any answer")
    return problems, run.seconds


@pytest.mark.slow
@pytest.mark.parametrize("path", STUDENTS, ids=nb_id)
def test_student_notebook_runs_with_stubs(path: Path):
    problems, seconds = student_problems(path)
    assert not problems, f"{rel(path)} (ran in {seconds:.1f} s):\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------
# Static export: each explorer leaves a picture
# ---------------------------------------------------------------------------------------


EXPLORER_NOTEBOOKS = [p for p in SOLUTIONS if explorer_cells(read(p))]


def export_html(path: Path, nb) -> str:
    """``nbconvert --to html`` of the executed notebook ``nb`` (executed without widget
    state, as ``nbconvert --execute`` with store_widget_state off)."""
    from nbconvert import HTMLExporter

    assert "widgets" not in nb.metadata, "the execution stored widget state"
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(
        nb, resources={"metadata": {"name": path.stem, "path": str(path.parent)}}
    )
    return body


def is_png_data_uri(src: str) -> bool:
    prefix = "data:image/png;base64,"
    if not src.startswith(prefix):
        return False
    try:
        return base64.b64decode(src[len(prefix):], validate=True).startswith(b"\x89PNG\r\n\x1a\n")
    except ValueError:
        return False


def html_problems(path: Path, executed_nb) -> list[str]:
    """Explorer cells whose HTML export has fewer PNG pictures than explorer calls."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(export_html(path, executed_nb), "html.parser")
    problems = []
    for index, cell, calls in explorer_cells(executed_nb):
        div = soup.find(id=f"cell-id={cell.id}")
        if div is None:
            problems.append(f"{cell_label(cell, index)}: not found in the HTML export")
            continue
        images = [img for out in div.select(".jp-Cell-outputWrapper") for img in out.find_all("img")
                  if is_png_data_uri(img.get("src", ""))]
        if len(images) < len(calls):
            problems.append(
                f"{cell_label(cell, index)} calls {calls} but its exported output has "
                f"{len(images)} PNG picture(s): an explorer needs a static fallback image "
                f"(image/png in its display data) for exports without widget state"
            )
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("path", EXPLORER_NOTEBOOKS, ids=nb_id)
def test_html_export_shows_a_picture_for_each_explorer(path: Path):
    run = executed_solution(path)
    problems = [f"execution stopped: {run.failure}"] if run.failure else []
    problems += html_problems(path, run.nb)
    assert not problems, f"{rel(path)}:\n" + "\n".join(problems)


# ---------------------------------------------------------------------------------------
# The checks above can fail: synthetic notebooks with known defects
# ---------------------------------------------------------------------------------------


def write_notebook(folder: Path, cells: list[tuple[str, str, dict | None]]) -> Path:
    """A notebook ``folder/<folder name>.ipynb`` of ``(type, source, nbgrader meta)`` cells."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    for kind, source, meta in cells:
        cell = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(source)
        if meta is not None:
            cell.metadata["nbgrader"] = {"schema_version": 3, "task": False, **meta}
        nb.cells.append(cell)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{folder.name}.ipynb"
    nbformat.write(nb, str(path))
    return path


def answer(gid: str) -> dict:
    return {"grade": False, "solution": True, "locked": False, "grade_id": gid}


def graded_test(gid: str) -> dict:
    return {"grade": True, "solution": False, "locked": True, "grade_id": gid, "points": 1}


STUB = "    # YOUR CODE HERE\n    raise NotImplementedError()"


@pytest.mark.slow
def test_student_check_reports_each_kind_of_defect(tmp_path: Path):
    path = write_notebook(tmp_path / "99_defects", [
        ("code", "import numpy as np", None),
        ("code", f"def square(x):\n{STUB}", answer("square")),
        ("code", "assert square(2) == 4", graded_test("test_square")),                 # fine
        ("code", "assert callable(square)", graded_test("test_square_free")),         # free points
        ("code", "assert undefined_helper(2)", graded_test("test_square_broken")),    # broken test
        ("code", "print(square(3))", None),                                         # demo needs answer
        ("code", "def leaky(x):\n    return 2 * x", answer("leaky")),               # solution shipped
        ("code", f"def halfstub(x):\n    x = float(x)\n{STUB}", answer("halfstub")),  # stub unreachable
        ("code", "assert 1 + 1 == 2", graded_test("test_independent")),               # fine
    ])
    problems, _ = student_problems(path)
    text = "\n".join(problems)
    expected = {
        "test_square_free": "gives points for nothing",
        "test_square_broken": "for a reason other than the missing answer: NameError",
        "cell 5 (id": "(not an answer or a test) raised NotImplementedError",
        "cell 6 (leaky)": "has no `raise NotImplementedError` stub",
        "cell 7 (halfstub)": "calling the stub halfstub() should raise NotImplementedError, got: TypeError",
    }
    for where, what in expected.items():
        assert any(where in p and what in p for p in problems), f"{where}: {what!r} not in\n{text}"
    assert len(problems) == len(expected), text


@pytest.mark.slow
def test_html_check_reports_an_explorer_without_picture(tmp_path: Path):
    setup = ("from helpers import widgets\nfrom helpers.plots import new_figure\n"
             "controls = {'a': widgets.Slider('a', 0.0, 1.0, 0.1, 0.5)}\n"
             "def draw(a):\n    return new_figure()[0]")
    path = write_notebook(tmp_path / "99_explorers", [
        ("code", setup, None),
        ("code", "widgets.Explorer(draw, controls)", None),          # shown: picture exported
        ("code", "hidden = widgets.Explorer(draw, controls)", None), # not shown: no picture
    ])
    run = execute(path)
    assert not [errors(c) for c in run.nb.cells if errors(c)], "the synthetic notebook failed"
    problems = html_problems(path, run.nb)
    assert len(problems) == 1 and problems[0].startswith("cell 2 ") and "0 PNG picture" in problems[0], problems


def test_explorer_calls_are_recognised_in_every_import_style():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in [
        "from helpers.widgets import softmax_temperature_explorer as ste",
        "ste()",
        "import helpers.widgets as hw\nhw.masking_explorer()",
        "import helpers\nhelpers.widgets.heads_explorer()\nwidgets.frontend_can_interact()",
        "hw.dot_product_explorer(); hw.dot_product_explorer()",
        "from helpers import widgets\nwidgets.Slider('a', 0, 1, 0.1, 0.5)",   # a control, not shown
    ]]
    assert [(i, calls) for i, _, calls in explorer_cells(nb)] == [
        (1, ["softmax_temperature_explorer"]), (2, ["masking_explorer"]), (3, ["heads_explorer"]),
        (4, ["dot_product_explorer", "dot_product_explorer"]),
    ]
