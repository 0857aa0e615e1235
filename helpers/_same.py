"""Two facts the course and the grader's security boundary share, written once.

:func:`resolve` (what a ``"module:attr"`` spec names) and :func:`differs` (whether a
call changed an input). The course uses them in ``helpers.course.judge`` and
``helpers.exercises``; the grader's boundary (``autograder/isolation/``), which must not
import the ``helpers`` package (what a child imports is a student's copy of it, and the
trusted worker binds what it needs before any learner code runs), loads this one file by
its path (``autograder/isolation/same.py``). So it imports nothing but NumPy and the
standard library, and holds no answer of any exercise (it is shipped with every copy of
``helpers``).
"""

from __future__ import annotations

import importlib

import numpy as np


def resolve(spec: str):
    """The object ``"module:attr.attr"`` names."""
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def differs(before, after) -> bool:
    """Whether ``after`` (an input after a call) is no longer ``before`` (a fresh copy):
    values, shapes and dtypes of arrays, recursively in lists, tuples and dicts. A NumPy
    Generator is expected to advance: never a change."""
    if isinstance(before, np.random.Generator):
        return False
    if isinstance(before, np.ndarray):
        if not isinstance(after, np.ndarray) or before.shape != after.shape or \
                before.dtype != after.dtype:
            return True
        try:
            if np.array_equal(before, after):        # the usual case: one quick pass
                return False
            # NaN where it was (equal_nan: a tenth of the speed, so only when needed)
            return not np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")
        except Exception:
            return True
    if isinstance(before, dict):
        return (not isinstance(after, dict) or list(before) != list(after)
                or any(differs(before[k], after[k]) for k in before))
    if isinstance(before, (list, tuple)):
        return (type(before) is not type(after) or len(before) != len(after)
                or any(differs(x, y) for x, y in zip(before, after)))
    try:
        return bool(before != after) and not (before != before and after != after)  # NaN
    except Exception:
        return False
