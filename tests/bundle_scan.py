"""The behavioural scan of a student's ``helpers`` (issue 23, finding 6; every kind of
callable since issue 36, finding 2), shared by the bundle's tests and the grading
children's: every callable of every module of the copy (functions, private ones too;
classes' methods, unbound and on instances built from the case's own inputs; compiled
patterns' methods; callable objects: ``bundle_probe.py``, run as a program inside the
copy) is called with the visible inputs of the exercises a test names, adapted to its signature when possible, every exception caught, each call
limited in time. A call that returns the exercise's answer as the judge sees it
(``helpers.course.judge.compare(course.get(name), case, got) is None``) is a leak, unless the output is one
of the inputs returned unchanged (a case whose answer is an error is skipped, and an
answer of at most one number counts when the function answers two cases). The recorded
worked examples of a bundle are left out of the probed copy: they replay the notebooks'
own inputs, public by design.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from autograder.engine import course_calls
from helpers import course
from helpers.course import judge

PROBE = Path(__file__).with_name("bundle_probe.py")

#: What an exercise hands the learner to write it with (its statement says to use it), so
#: not a leak when it alone answers a visible case: ``pretokenize`` splits between control
#: tokens and digits "by ``GPT2_PATTERN.findall``" (notebook 11 imports it), which alone
#: answers the cases with neither. Matched on the end of the probe's label.
GIVEN = {"pretokenize": (":GPT2_PATTERN.findall",)}

#: Notebooks whose exercises compute values the earlier ones already compute, by another
#: method (notebook 13: top-p of every token is the softmax, beam width 1 is greedy
#: generate, flash attention is attention block by block): there only the functions of
#: the notebook's own module (its references' home) are probed for its answers; the
#: earlier exercises' functions, revealed, give the same values by design. Refusing them
#: as "forbidden here, not hidden" is left to the framework (issue 38's closing note).
ANOTHER_METHOD = {"13_inference": "helpers.inference:"}

#: The homework bundles scanned (tests/autograder/release/test_bundle_answers.py): each
#: hands out its assignment and reveals the earlier ones. A bundle that reveals more has
#: every function that is code in one that reveals less, with more of its callees real
#: code instead of stubs that raise: a function that computes an answer in the second
#: computes it in the first (unless it did so only when a stub raised, which no course
#: code does). So an exercise that a later bundle of this list leaves out is probed in
#: that bundle only (:func:`probed_in`); the scan of a bundle takes most of a minute.
HOMEWORK = ["06_multi_head_attention", "07_transformer_block", "11_tokenizer"]


def probed_in(revealed: list[str], names: list[str]) -> list[str]:
    """Of the exercises ``names`` that a bundle revealing the assignments ``revealed``
    leaves out, those no bundle of :data:`HOMEWORK` revealing more leaves out too."""
    more = [a for a in HOMEWORK if set(revealed) < {b for b in course.NOTEBOOKS if b < a}]
    return [n for n in names if not more or course.notebook_of(n) < more[0]]


def left_out(bundle: Path) -> list[str]:
    """The exercises a bundle leaves out (those of its assignments not revealed)."""
    import json

    revealed = set(json.loads((bundle / "bundle.json").read_text())["revealed"])
    return [n for a in course.NOTEBOOKS if a not in revealed
            for n in course.NOTEBOOKS[a]]


def answers_in(bundle: Path, names: list[str], work: Path, timeout: int = 1500) -> list[str]:
    """``"function gives <exercise>'s answer on visible case <case>"`` for every function
    of the ``helpers`` in the folder ``bundle`` that answers one of exercises ``names``."""
    cases, index = [], {}
    for name in names:
        for i, case in enumerate(judge.cases(course.get(name))):
            if case.is_sampling or "raises" in (case.scenario or ""):
                continue                  # no one answer; any error is "the answer"
            index[(name, i)] = case
            args, kwargs = case.fresh_args()
            cases.append((name, i, args, kwargs, case.scenario, case.expected()))
    table = bundle / "helpers" / course_calls.TABLE_DIR
    if table.exists():
        # The recorded worked examples replay the course's outputs on the notebooks' own
        # inputs, some of which are visible cases (public by design: their expected
        # outputs are stored for the instant checks; test_bundle.py checks that no hidden
        # case's output is recorded). Probe what the code computes: a copy without them.
        copy = work / "probe-bundle"
        shutil.copytree(bundle / "helpers", copy / "helpers",
                        ignore=shutil.ignore_patterns(course_calls.TABLE_DIR, "__pycache__"))
        bundle = copy
    inp, outp = work / "probe-in.pkl", work / "probe-out.pkl"
    inp.write_bytes(pickle.dumps(cases))
    run = work / "probe-cwd"
    run.mkdir(exist_ok=True)
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run([sys.executable, "-I", str(PROBE), str(bundle), str(inp), str(outp)],
                            cwd=run, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    hits: dict[tuple[str, str], set[str]] = {}
    for where, name, i, got in pickle.loads(outp.read_bytes()):
        if where.endswith(GIVEN.get(name, ())) or (
                course.notebook_of(name) in ANOTHER_METHOD and not where.startswith(
                    ANOTHER_METHOD[course.notebook_of(name)])):
            continue
        case = index[(name, i)]
        if judge.compare(course.get(name), case, got) is None:
            hits.setdefault((where, name), set()).add(case.name)
    leaks = []
    for (where, name), found in hits.items():
        # an answer of one number (a size-1 case, a scalar) is hit by chance by many a
        # function: it counts when the function answers two cases or more
        if len(found) < 2 and all(np.size(index[(name, i)].expected()) <= 1
                                  for (n, i) in index if n == name and
                                  index[(n, i)].name in found):
            continue
        leaks += [f"{where} gives {name}'s answer on visible case {c!r}" for c in sorted(found)]
    return sorted(leaks)
