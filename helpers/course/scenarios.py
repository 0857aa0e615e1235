"""Scenarios shared by several exercises (see ``Case.scenario``): small scripts that run
around the learner's function where it runs, in the notebook or in the grader's sandbox.

A scenario is two functions (docs/threat_model.md, "No verdict decided in a child"):

* ``scenario_<what>(fn, *args, **kwargs)`` *observes*: it calls ``fn`` and returns raw
  observations only (outputs, a cache's contents, whether an exception was raised and its
  type), never a judgement. It is the only part that runs in the grader's sandbox, where
  the grader binds it before the learner's cells run (a frozen copy with its own globals
  and builtins): every name it needs must be a keyword-only default argument, a builtin or
  a global bound when its module is imported, never an attribute looked up on a module
  object at call time (``np.random.default_rng`` could be patched by the learner).
* ``scenario_<what>_decide(observed)`` *decides*: what the observations mean (the value
  the exercise's judge compares). It runs in the trusted process only
  (:func:`helpers.course.decide`); without one, the observations are the value.

In the sandbox every function of ``helpers/exercises`` is a stub except the
``scenario_*`` ones: a scenario must not call other functions of these modules."""

from __future__ import annotations

import os

#: The course's folder (``helpers/``), found when this module is imported.
_COURSE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scenario_raises_value_error(fn, *args, _course=_COURSE, _abspath=os.path.abspath,
                                _ValueError=ValueError, _Exception=Exception,
                                _issubclass=issubclass, _type=type, _repr=repr, _str=str,
                                **kwargs) -> dict:
    """Observations of ``fn(*args, **kwargs)``: whether it raised (``raised``: the
    exception type's name, ``value_error``: a ValueError or a subclass), the innermost
    frame of the traceback (``file``, ``function``) and the course's folder where it ran
    (``course``), or the start of the returned value's repr (``returned``)."""
    try:
        got = fn(*args, **kwargs)
    except _Exception as exc:           # the learner's code may raise anything
        tb = exc.__traceback__                       # its innermost frame: whose code?
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        return {"raised": _str(_type(exc).__name__)[:100],
                "value_error": _issubclass(_type(exc), _ValueError),
                "file": "" if tb is None else _abspath(_str(tb.tb_frame.f_code.co_filename)),
                "function": "" if tb is None else _str(tb.tb_frame.f_code.co_name)[:100],
                "course": _course, "returned": None}
    text = _repr(got)
    return {"raised": None, "value_error": False, "file": "", "function": "",
            "course": _course, "returned": _str(text[:61])}


def scenario_raises_value_error_decide(observed) -> str:
    """``"ValueError"`` when the function raised one itself; otherwise what happened
    instead, in words (the case expects ``"ValueError"``). A ValueError that only a course
    function raised further down (``softmax`` refusing infinite scores) does not count:
    the answer must check its arguments."""
    from helpers.course.text import shorten     # the grader's process only

    if not isinstance(observed, dict):
        return "the scenario's observations are missing"
    raised, course = observed.get("raised"), observed.get("course")
    if raised is None:
        text = str(observed.get("returned"))
        return f"it returned {shorten(text, 60)} instead of raising"
    if observed.get("value_error") is not True:
        return f"it raised {raised} instead of ValueError"
    where = str(observed.get("file") or "")
    if isinstance(course, str) and course and where.startswith(course.rstrip(os.sep) + os.sep):
        return (f"the only ValueError came from the course's {observed.get('function')} "
                f"further down: check the argument yourself and raise it first")
    return "ValueError"


RAISES = "helpers.course.scenarios:scenario_raises_value_error"
