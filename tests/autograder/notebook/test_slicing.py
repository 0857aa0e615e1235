"""What a graded run executes (autograder/notebook/slicing.py): the answer and test cells
and the statements they need, in time linear in the notebook."""

from __future__ import annotations

import json

from autograder import SOLUTIONS_DIR
from autograder.notebook import slicing


def test_slicing_keeps_dependencies_and_drops_demos():
    cells = [
        slicing.CellCode(0, "import numpy as np\nimport time", False),
        slicing.CellCode(1, "SCALE = 2.0\ndemo = [expensive() for _ in range(9)]", False),
        slicing.CellCode(2, "def helper(x):\n    ids = x\n    return ids * SCALE", False),
        slicing.CellCode(3, "ids = slow_demo()\nprint(ids)", False),
        slicing.CellCode(4, "%matplotlib inline\nparams = {}\nparams['W'] = np.ones(2)", False),
        slicing.CellCode(5, "def f(x):\n    return helper(x) + params['W']", True),
    ]
    out = slicing.slice_cells(cells)
    assert "import numpy as np" in out[0] and "import time" not in out[0]
    assert "SCALE = 2.0" in out[1] and "expensive" not in out[1]
    assert 2 in out and 3 not in out            # the local `ids` does not pull the demo in
    assert "params['W'] = np.ones(2)" in out[4] and "matplotlib" not in out[4]
    assert out[5] == cells[5].source
    assert out[1].count("\n") == cells[1].source.count("\n")   # line numbers kept


def test_slicing_gives_the_same_code_whatever_it_has_analysed_before():
    """Each cell's analysis is kept by its text (a class shares the solution's cells, a
    notebook's exercises slice the same cells): slicing with every analysis kept, or
    with only the last two (as of cells longer than the cap), gives the same code; the same
    text in another role (a root, a demo) is sliced by its role."""
    nb = json.loads((SOLUTIONS_DIR / "08_language_model" / "08_language_model.ipynb")
                    .read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    roots = [k for k, src in enumerate(sources) if src.lstrip().startswith("def ")]
    cells = [slicing.CellCode(k, src, k == roots[0]) for k, src in enumerate(sources)]
    other = [slicing.CellCode(k, src, k == roots[-1]) for k, src in enumerate(sources)]
    slicing._analyse_cell_kept.cache_clear()
    slicing._global_uses_kept.cache_clear()
    first, second = slicing.slice_cells(cells), slicing.slice_cells(other)
    assert slicing._analyse_cell_kept.cache_info().currsize >= len(sources) - 2
    assert slicing.slice_cells(cells) == first and slicing.slice_cells(other) == second
    assert first != second
    cap = slicing.CACHED_CELL_CHARS
    try:
        slicing.CACHED_CELL_CHARS = 0                       # every cell long: two kept
        slicing._analyse_cell_kept.cache_clear()
        slicing._analyse_long_cell.cache_clear()
        assert slicing.slice_cells(cells) == first and slicing.slice_cells(other) == second
        assert slicing._analyse_cell_kept.cache_info().currsize == 0
        assert slicing._analyse_long_cell.cache_info().currsize == 2
    finally:
        slicing.CACHED_CELL_CHARS = cap


def test_a_long_dependency_chain_is_sliced_whole():
    n = 30_000          # the quadratic slicer of old held a grading slot for minutes here
    chain = "x0 = 1\n" + "".join(f"x{i} = x{i - 1} + 1\n" for i in range(1, n))
    cells = [slicing.CellCode(0, chain + "unrelated = 5\n", False),
             slicing.CellCode(1, f"def f():\n    return x{n - 1}\n", True)]
    out = slicing.slice_cells(cells)
    assert out[0].count("x") == chain.count("x") and "unrelated" not in out[0]


def test_a_graded_run_keeps_answers_and_tests_whole_and_what_they_need():
    """The one cut of the grader's notebook run and of the bundle's recording: answer and
    test cells whole, cells asked for whole, and of the others what those need."""
    cells = [(0, "import numpy as np\nimport time", "other"),
             (1, "W = np.ones(2)\nslow = train_for_minutes()", "other"),
             (2, "def f(x):\n    return x @ W", "answer"),
             (3, "plot_everything()", "other"),
             (4, 'check("f", f)', "test"),
             (5, "print('done')", "manual")]
    out = slicing.answers_and_tests(cells)
    assert out[2] == cells[2][1] and out[4] == cells[4][1]
    assert "W = np.ones(2)" in out[1] and "train_for_minutes" not in out[1]
    assert "import numpy as np" in out[0] and "import time" not in out[0]
    assert 3 not in out and 5 not in out
    assert slicing.answers_and_tests(cells, keep=(3,))[3] == "plot_everything()"
