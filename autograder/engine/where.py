"""Where it goes wrong, on the grader's side (issue 37, :mod:`helpers.course.trace`).

When an exercise that declares its steps fails a case, its learner's function is run
once more on that case only (the headline failing case of the visible ones, and of the
hidden ones), in a confined child like the verdict's, under the tracer: the child sends
what each of the learner's lines held as plain data (``trace.to_plain`` over
:mod:`autograder.isolation.wire`, capped), and this trusted process checks it
(``trace.from_plain``) and matches it against the reference's steps, which never reach
the child. A record that breaks the rules, a run that fails, or a match that finds
nothing adds no words: the tracer never changes a verdict and never stops grading.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from autograder.isolation import client, wire

#: Set (to anything but "" or "0") in the grader's environment, no case is traced: how
#: ``tools/benchmark_grading.py --tracer-share`` measures what tracing costs.
NO_TRACE_ENV = "AUTOGRADER_NO_TRACE"

#: The most bytes of a child's record the grader decodes: the record's own cap and the
#: wire's framing (names, line numbers, ``.npy`` headers) of its at most MAX_SEEN entries.
RECORD_WIRE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class Where:
    """The words for one failing case: ``full`` (how the step differs too) and
    ``brief`` (step names and the learner's lines only: for a hidden case's brief
    feedback)."""

    full: str
    brief: str


def traced_cases(ex, case_set, problems: list, inconclusive: list) -> list[int]:
    """The cases to trace: the headline failing case among the visible ones and among
    the hidden ones (a plain call, judged on its merits); none when ``ex`` declares no
    steps."""
    from helpers.course import judge, trace

    if os.environ.get(NO_TRACE_ENV, "") not in ("", "0") or not trace.declared(ex.name):
        return []
    out = []
    for hidden in (False, True):
        ks = [k for k, p in enumerate(problems) if p is not None and not inconclusive[k]
              and case_set.hidden[k] == hidden and not case_set.scenarios[k]]
        first = judge.headline([problems[k] for k in ks])
        if first is not None:
            out.append(ks[first])
    return out


def where_of(ex, case_set, chosen: list[int], lines: list[dict]) -> dict[int, Where]:
    """The words for each traced case of ``chosen`` from the trace run's reply
    ``lines`` (its ``k``-th case is ``chosen[k]``)."""
    from helpers.course import trace

    out: dict[int, Where] = {}
    for line in lines:
        k = line.get("case")
        if type(k) is not int or not 0 <= k < len(chosen) or chosen[k] in out:
            continue
        seen = _record(line)
        if seen is None:
            continue
        case = case_set.cases[chosen[k]]
        try:
            full = trace.explain(ex, case, seen)
            brief = trace.explain(ex, case, seen, brief=True)
        except Exception:          # words only: never a grading error
            continue
        if full and brief:
            out[chosen[k]] = Where(full, brief)
    return out


def _record(line: dict):
    """The record in a reply line, checked; None when it is missing or breaks a rule."""
    from helpers.course import trace

    try:
        value = wire.decode(wire.unb64(line.get("value"), RECORD_WIRE_BYTES),
                            max_bytes=RECORD_WIRE_BYTES)
        return trace.from_plain(value)
    except (wire.DecodeError, ValueError):
        return None


def trace_job(job: dict, case_set, chosen: list[int]) -> dict:
    """The verdict's ``job`` on the ``chosen`` cases only, traced."""
    return dict(job, cases=[case_set.payloads[k] for k in chosen],
                scenarios=[None] * len(chosen), watch=[], trace=True)


def reply_lines(reply: dict) -> list[dict]:
    """The child's lines of a trace run's reply (refused lines dropped)."""
    return client.parse_reply(reply.get("output", ""))[0]
