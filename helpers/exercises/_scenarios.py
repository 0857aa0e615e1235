"""Scenarios shared by several exercises (see ``Case.scenario``): small scripts that run
around the learner's function where it runs, in the notebook or in the grader's sandbox.

In the sandbox every function of ``helpers/exercises`` is a stub except the
``scenario_*`` ones: a scenario must not call other functions of these modules."""

from __future__ import annotations

import os


def scenario_raises_value_error(fn, *args, **kwargs) -> str:
    """``"ValueError"`` when ``fn(*args, **kwargs)`` raises one itself; otherwise what
    happened instead, in words (the case expects ``"ValueError"``). A ValueError that
    only a course function raised further down (``softmax`` refusing infinite scores)
    does not count: the answer must check its arguments."""
    try:
        got = fn(*args, **kwargs)
    except ValueError as exc:
        tb = exc.__traceback__                       # its innermost frame: whose code?
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        course = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # helpers/
        if tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(
                course + os.sep):
            return (f"the only ValueError came from the course's {tb.tb_frame.f_code.co_name} "
                    f"further down: check the argument yourself and raise it first")
        return "ValueError"
    except Exception as exc:            # the learner's code may raise anything
        return f"it raised {type(exc).__name__} instead of ValueError"
    text = repr(got)
    return f"it returned {text[:60] + '...' if len(text) > 60 else text} instead of raising"


RAISES = "helpers.exercises._scenarios:scenario_raises_value_error"
