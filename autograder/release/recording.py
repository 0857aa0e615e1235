"""Recording the worked examples of a student bundle (run inside a notebook's kernel).

``autograder/release/bundle.py`` runs each handed-out notebook twice at bundle time (as released,
and with the model answers filled in, cut to what the checks need) in a kernel of the
instructor's copy, after a first
cell that calls :func:`start` with the course functions the bundle leaves out. Each of
them is then recorded: the arguments (:func:`autograder.engine.course_calls.fingerprint`), the
output and what the call changed in its arguments. Only the outermost such call is
recorded (what it calls inside is replayed with it), and none made by ``check`` itself
(its expected outputs are stored separately, and a hidden case never runs in a released
notebook): a call is recorded when a notebook cell, a course demo or the learner's own
function makes it. A last cell calls :func:`save`.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import types
from pathlib import Path

import numpy as np

from autograder.engine import course_calls
from autograder.engine import plain_data


def _plain(v, depth=0) -> bool:
    if depth > 12:
        return False
    if isinstance(v, (list, tuple)):
        return all(_plain(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x, depth + 1) for k, x in v.items())
    if isinstance(v, (np.ndarray, np.generic)):
        return np.asarray(v).dtype.kind in "biufc"
    return v is None or isinstance(v, (bool, int, float, str))


class Recorder:
    def __init__(self):
        self.table = course_calls.Table()
        self.originals: dict = {}
        self.signatures: dict = {}
        self.depth = 0
        self.paused = 0
        self.skipped: dict[str, str] = {}

    def __call__(self, spec, args, kwargs):
        fn = self.originals[spec]
        if self.depth or self.paused:
            return fn(*args, **kwargs)
        bound = self.signatures[spec].bind(*args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        try:
            key, floats = course_calls.fingerprint(a)
        except course_calls.Unfingerprintable as exc:
            self.skipped[spec] = str(exc)
            return fn(*args, **kwargs)
        snap = course_calls.snapshot(a)
        self.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        patches = course_calls.changes(a, snap)
        if _plain(out) and _plain([p[3] for p in patches]):
            self.table.add(spec, key, floats, copy.deepcopy(out), copy.deepcopy(patches))
        else:
            self.skipped[spec] = f"returns {type(out).__name__}"
        return out


RECORDER = Recorder()


def _wrap(spec: str) -> None:
    module, _, name = spec.partition(":")
    f = getattr(importlib.import_module(module), name, None)
    if not inspect.isfunction(f):
        # A class, a method or a value an exercise refuses: its stub is not answered
        # from recordings (an instance's state does not show in a call's arguments).
        RECORDER.skipped[spec] = "not a function: never recorded"
        return
    orig = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__,
                              f.__closure__)
    orig.__kwdefaults__ = f.__kwdefaults__
    RECORDER.originals[spec] = orig
    RECORDER.signatures[spec] = inspect.signature(f)
    ns: dict = {}
    exec(f"def {name}(*args, **kwargs):\n"
         f"    return __bundle_recorder__({spec!r}, args, kwargs)\n", ns)
    f.__globals__["__bundle_recorder__"] = RECORDER
    f.__signature__ = RECORDER.signatures[spec]
    f.__code__ = ns[name].__code__


def start(specs, checks_only: bool = False) -> None:
    """Record every call of the functions ``specs`` (``"module:function"``); with
    ``checks_only``, only those the learner's functions make while ``check`` runs them."""
    from helpers import checks, course

    RECORDER.paused = int(checks_only)
    for spec in specs:
        _wrap(spec)
    check, run, run_learner = checks.check, course.Case.run, checks._run

    def checking(*args, **kwargs):            # check's own calls are not recorded ...
        RECORDER.paused += 1
        try:
            return check(*args, **kwargs)
        finally:
            RECORDER.paused -= 1

    def learners(fn, call):                   # ... the learner's function's calls are
        saved = RECORDER.paused
        RECORDER.paused = 0 if getattr(fn, "__module__", None) == "__main__" else saved + 1
        try:
            return call()
        finally:
            RECORDER.paused = saved

    def running(self, fn):                    # a case run by a demo or a plot
        return learners(fn, lambda: run(self, fn))

    def running_in_check(ex, fn, case):       # a case run by check (helpers.checks._run)
        return learners(fn, lambda: run_learner(ex, fn, case))

    checking.__wrapped__ = check
    checks.check = checking
    checks._run = running_in_check
    course.Case.run = running


def save(path) -> None:
    Path(path).write_bytes(plain_data(RECORDER.table.plain()))
    Path(path).with_suffix(".json").write_text(json.dumps(RECORDER.skipped))
