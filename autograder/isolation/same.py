"""``helpers/_same.py`` (``resolve``, ``differs``), loaded by its path.

The course and this boundary share two facts: what a ``"module:attr"`` spec names, and
whether a call changed an input. They are written once, in ``helpers/_same.py``, a
dependency-free file (NumPy and the standard library): the course imports it as
``helpers._same``; this boundary must not import the ``helpers`` package (a child's
``helpers`` is a student's copy, which the learner's code may change, and the worker
binds what a child's runner uses before any learner code runs), so it loads that one
file here, under its own name, from the repository's ``helpers`` folder: no
``helpers/__init__.py`` runs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_FILE = Path(__file__).resolve().parents[2] / "helpers" / "_same.py"
_SPEC = importlib.util.spec_from_file_location("autograder.isolation._same_file", _FILE)
_MODULE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MODULE)

resolve = _MODULE.resolve
differs = _MODULE.differs
