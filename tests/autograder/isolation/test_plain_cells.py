"""A calls job runs the kept cells of the learner's notebook with their output discarded;
a cell that is plain Python runs without IPython's display, history and event machinery
(``runners._Runner.run(plain=True)``), which costs a fresh child milliseconds per cell.
What a cell does must not change with it: for every kind of cell below, the error a
calls job reports for it is, field for field, the one the notebook run (IPython's
``run_cell``) reports, and the function the cells define answers alike."""

from __future__ import annotations

import numpy as np
import pytest

from autograder.isolation import wire
from sandbox_jobs import run_cells

pytestmark = pytest.mark.slow

#: Cells of every kind a notebook holds: plain, IPython's own syntax (run by IPython in
#: both jobs), ``__future__`` imports kept for later cells, errors of each sort.
CELLS = [
    "import numpy as np",
    "%matplotlib inline\nx_magic = 1",                       # a magic
    "from __future__ import annotations",
    "def typed(x: NotDefinedAnywhere) -> AlsoNot:\n    return x",   # needs the line above
    "def f(x):\n    return float(np.sum(np.asarray(x) * 2))",
    "def broken(x):\n    return 1 / x\nbroken(0)",              # raises, in a function
    "y = [1, 2\n",                                            # a syntax error
    "get_ipython().user_ns['from_shell'] = 5",
    "z = from_shell + x_magic\nz",                            # a trailing expression
    "raise SystemExit(3)",
    "import asyncio\nawait asyncio.sleep(0)\nawaited = True",  # top-level await
    "!true",                                                  # a shell escape
    "undefined_name + 1",
    "assert typed(3) == 3, 'annotations were evaluated'",
    "class Thing:\n    def __repr__(self):\n        raise ValueError('no repr')\nThing()",
]


def _errors(lines):
    return {line["cell"]: line.get("error") for line in lines if "cell" in line}


def test_a_calls_jobs_cells_report_what_the_notebook_run_reports(helper_copies):
    case = wire.b64(wire.encode(((np.array([1.0, 2.0]),), {})))
    _, notebook = run_cells(CELLS, helper_copies, kind="notebook")
    _, calls = run_cells(CELLS, helper_copies, kind="calls", function="f", cases=[case],
                         case_timeout=5)
    seen, wanted = _errors(calls), _errors(notebook)
    assert set(seen) == set(range(len(CELLS)))
    for index, source in enumerate(CELLS):
        assert seen[index] == wanted[index], (source, seen[index], wanted[index])
    kinds = {i: (e or {}).get("ename") for i, e in wanted.items()}
    # the class is what it says: each kind of outcome is there
    assert kinds[0] is None and kinds[3] is None and kinds[13] is None
    assert kinds[5] == "ZeroDivisionError" and "return 1 / x" in wanted[5]["traceback"]
    assert kinds[6] == "SyntaxError" and kinds[9] == "SystemExit"
    assert kinds[12] == "NameError" and kinds[10] is None
    values = [wire.decode(wire.unb64(line["value"])) for line in calls if "case" in line]
    assert values == [6.0]
