"""Which known mistake: a list of candidates narrowed by the learner's other cases.

When several known mistakes of an exercise give exactly a learner's output on a case,
:func:`helpers.course.judge.compare` lists them all ("Likely mistake (one of these ...)").
The learner's outcomes on the other cases usually tell them apart: a candidate that
passes a case the learner fails, fails one the learner passes, or is not among those that
give the learner's output there, is not the learner's mistake. :func:`narrow` keeps the
rest; the instant check (:mod:`helpers.checks`) and the grader
(``autograder/engine/verdicts.py``) both call it on the visible cases, so they name the
same mistake.
"""

from __future__ import annotations

from helpers.course.exercise import Case, Exercise, Mistake, quiet
from helpers.course.judge import CANDIDATES, DIAGNOSIS, output_problem


def _named(text: str | None) -> set[str] | None:
    """The messages of the known mistakes a case's explanation names (one or a list);
    None when it names none."""
    if text is None or DIAGNOSIS not in text:
        return None
    rest = text.split(DIAGNOSIS, 1)[1]
    if rest.startswith(": "):
        return {rest[2:].split("\n", 1)[0]}
    return {line.strip()[2:] for line in rest.splitlines()[1:] if line.startswith("    - ")}


def _passes(ex: Exercise, case: Case, mistake: Mistake) -> bool | None:
    """Whether ``mistake`` passes ``case``; None when that cannot be said (a sampling
    case, or the mistake's code raised: it reproduces a formula, not every input form)."""
    if case.is_sampling:
        return None
    try:
        out, err = case.outcome(mistake.fn)
        if err is not None:
            return None
        with quiet():
            return output_problem(ex, case, case.expected(), out) is None
    except Exception:
        return None


def narrow(ex: Exercise, cases: list, problems: list, judged: list | None = None) -> list:
    """``problems`` (an explanation per case of ``cases``, None where it passed) with each
    list of candidate mistakes narrowed to those that give the learner's outcome on
    every other judged case (``judged[k]``: case k may be used, default all): a candidate
    that passes a case the learner fails, fails one the learner passes, or is not among
    the mistakes that give the learner's output there is dropped. One left is named
    ("Likely mistake: ..."); when none is left the list stays as it was."""
    judged = judged if judged is not None else [True] * len(cases)
    by_text = {f"{m.message}.": m for m in ex.mistakes}
    out = list(problems)
    for k, text in enumerate(problems):
        if text is None or CANDIDATES not in text:
            continue
        head, listed = text.split(CANDIDATES, 1)
        lines = listed.split("\n")
        n = next((i for i, line in enumerate(lines) if not line.startswith("    - ")),
                 len(lines))
        names = [line[6:] for line in lines[:n]]
        keep = []
        for name in names:
            mistake = by_text.get(name)
            if mistake is None:
                keep.append(name)          # not one of ours to run: it stays
                continue
            fits = True
            for j, (case, other) in enumerate(zip(cases, problems)):
                if j == k or not judged[j]:
                    continue
                if other is None:
                    fits = _passes(ex, case, mistake) is not False
                else:
                    named = _named(other)
                    fits = (named is not None and name in named) or \
                        (named is None and _passes(ex, case, mistake) is None)
                if not fits:
                    break
            if fits:
                keep.append(name)
        if not keep or len(keep) == len(names):
            continue
        rest = "\n".join(lines[n:])
        rest = f"\n{rest}" if n < len(lines) else ""
        if len(keep) == 1:
            out[k] = f"{head}\n  Likely mistake: {keep[0]}{rest}"
        else:
            out[k] = head + CANDIDATES + "\n".join(f"    - {m}" for m in keep) + rest
    return out
