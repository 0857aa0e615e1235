"""Submissions that try to raise their own score, or to harm the grader or other students.

Each module of this package (one per class of attack, see ``docs/threat_model.md``)
holds ``ATTACKS``, a list of :class:`Attack`. An attack is a student's notebook built
from the released notebook of ``assignment``:

* ``code`` replaces the answer cell ``target`` (a function the attack is after); every
  other answer cell holds the released stub (``raise NotImplementedError()``), or the
  solution's code when ``answers == "solutions"``;
* ``edit(nb)``, when given, changes the notebook further (metadata, test cells);
* ``@@NAME@@`` in the code is replaced by a path of the grading run (``REPO``, ``OUT``,
  ``SUBMISSIONS``, ``SOLUTIONS``, ``CANARY``), by ``MARK`` (a string that must never
  appear in a file outside OUT) or ``PORT`` (a TCP port on 127.0.0.1 that records any
  connection).

``expect`` says what the grader must give:

* ``"nothing"``: no autograded point in the notebook (an honest notebook with the same
  stubs earns nothing either, so any point would be gained by the attack);
* ``"honest"``: exactly the points of the honest student ``0-honest-first`` for that
  assignment, except the cells in ``lose`` (the attack's own wrong answer), which must
  score 0: the attack is built on correct answers and must gain nothing beyond them.

``isolation``: the attack reads or writes the machine's files, its network or other
processes; only the namespace mode contains it, so it is left out of runs in fallback mode.

``flagged``: words that must appear in the notebook's flags, where the design requires
a flag: "tampering suspected" when a test passed in the notebook but failed the isolated
re-run, and the merge's notes on edited, deleted, unknown or duplicated cells.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from typing import Callable

MODULES = ("tampering", "reference", "disk", "writes", "metadata", "processes", "values",
           "boundary", "siblings", "scenarios", "hiding", "gradients", "oracle",
           "tracing")


@dataclass(frozen=True)
class Attack:
    key: str
    assignment: str
    target: str
    code: str
    why: str
    expect: str = "nothing"           # "nothing" | "honest"
    answers: str = "stubs"            # "stubs" | "solutions"
    edit: Callable[[dict], None] | None = None
    lose: tuple[str, ...] = ()
    #: Contained only by the namespace isolation: with the documented weaker fallback
    #: (no namespaces) the attack is NOT run at all, since it could read or damage the
    #: machine running the tests (docs/threat_model.md).
    isolation: bool = False
    flagged: str = ""
    #: A precise defect of the pipeline that makes this attack succeed today (the test
    #: is then an xfail(strict=True) naming it; it flips when the defect is fixed).
    defect: str = ""

    def notebooks(self, places: dict[str, str]) -> dict[str, dict]:
        from catalogue import student_notebook

        answers = {self.target: fill(self.code, places)} if self.code else {}
        nb = student_notebook(self.assignment, answers, stubs=self.answers == "stubs")
        if self.edit is not None:
            nb = copy.deepcopy(nb)
            self.edit(nb)
        return {self.assignment: nb}


def fill(code: str, places: dict[str, str]) -> str:
    for name, value in places.items():
        code = code.replace(f"@@{name}@@", value)
    if "@@" in code:
        raise ValueError(f"unknown placeholder in attack code: {code[code.index('@@'):][:30]}")
    return code


def attacks() -> list[Attack]:
    out: list[Attack] = []
    for name in MODULES:
        out.extend(importlib.import_module(f"attacks.{name}").ATTACKS)
    keys = [a.key for a in out]
    if len(keys) != len(set(keys)):
        raise ValueError("attack keys must be unique")
    return out


# Shared pieces of attack code.

#: A wrong softmax: what the attacks in notebook 02 try to get points for.
WRONG_SOFTMAX = """
def softmax(z, axis=-1):
    return np.full(np.shape(z), 0.5)
"""
