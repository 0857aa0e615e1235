"""The exercise model: one graded exercise (:class:`Exercise`), its inputs
(:class:`Case`) and its known mistakes (:class:`Mistake`).

Every graded exercise of notebooks 00-12 has a module ``helpers/exercises/<name>.py``
that declares one :class:`Exercise`, ``EXERCISE``:

* its **reference** (the right answer: a function of ``helpers.reference``, of a model
  module such as ``helpers.llama.model``, or defined in the exercise module itself);
* its **contract** (``contract=Contract(args={...: Arg(...)}, returns=Arg(...))``,
  :mod:`helpers.course.contract`): its arguments and result as data, which validates
  every case, draws more cases, and checks a learner's calls of the reference
  (:attr:`Exercise.answer`, what ``helpers`` exports);
* its **cases** (``@EXERCISE.cases``: visible ones, which the notebook's instant check
  runs, and hidden ones, which only the grader runs), built from fixed seeds;
* its **named mistakes** (``@EXERCISE.mistake(key, message)``: a function with the
  exercise's signature that returns what an answer with exactly that mistake returns);
* ``uses``: the earlier course functions it may call. While it is graded these are the
  reference ones, so a mistake in one of them costs points once, in its own exercise;
* ``refuse``: the references (``"module:function"``) a learner must not call for it,
  besides ``reference`` itself (each computes its answer: a student bundle leaves them out
  until it is done);
* ``forbid``: functions a learner must not call for it that give nothing away, because
  the exercise builds the same result another way (``flash_attention`` without the
  full-matrix attention): refused in its check and while it is graded, never hidden;
* how its output is compared (``output``: ``array``, ``scalar``, ``tuple``, ``mask``,
  ``ids``, or a custom ``compare``) and how close a right one is: ``rtol``, ``atol``
  (default ``1e-6``, ``1e-8``) and, per part of a tuple output, ``tolerances``.

:mod:`helpers.course.judge` judges every exercise the same way, in the notebook (through
:mod:`helpers.checks`: ``check("softmax", softmax)``) and in the grader (``autograder``).
Adding an exercise: docs/authoring.md.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from helpers.course import draw
from helpers.course.contract import Contract
from helpers.course.registry import EXERCISES, decide, get, notebook_of, resolve

__all__ = ["Case", "case", "quiet", "Mistake", "Exercise", "RTOL", "ATOL", "VISIBLE_SEED",
           "HIDDEN_SEED"]

# ---------------------------------------------------------------------------------------

#: Seed of the drawn visible cases (the instant check and the grader run the same ones).
VISIBLE_SEED = 1111
#: Default seed of the drawn hidden cases (the grader may pass another: a per-student one).
HIDDEN_SEED = 2222
#: Seeds besides :data:`HIDDEN_SEED` whose cases an exercise keeps built (a grading
#: process grades one student's notebook at a time: one seed in use).
SEEDS_KEPT = 4


RTOL = 1e-6
ATOL = 1e-8


@contextlib.contextmanager
def quiet():
    """No warnings and no floating-point error messages from the code inside.

    Under plain nbgrader any output on stderr scores a test cell 0, and a correct answer
    may make NumPy warn (``0 * inf`` in a mask, say): the checks run inside it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield


@dataclass(frozen=True, eq=False)        # eq on arrays would be ambiguous: identity instead
class Case:
    """One input of an exercise. Plain values only (they cross the sandbox's wire).

    ``function(*args, **kwargs)`` is what gets called, unless ``scenario`` names a
    function ``"module:scenario_<what>"`` of ``helpers``: then ``scenario(fn, *args,
    **kwargs)`` runs where the learner's code runs and returns raw observations (a cache
    filled by two calls, a seeded generator used three times), and :func:`decide` turns
    them, in the trusted process, into the value that is judged. ``answer``, when given, is the
    right output written out independently of the reference (a worked example); else the
    reference computes it (:meth:`expected`).
    """

    function: str
    name: str
    description: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    group: str = "basic"
    hidden: bool = False
    scenario: str | None = None
    answer: Any = None
    #: the exercise the case belongs to (set by :meth:`Exercise.all_cases`; a case made
    #: elsewhere finds it by ``function`` in the registry)
    exercise: Any = field(default=None, repr=False, compare=False)

    def fresh_args(self) -> tuple[tuple, dict]:
        """Deep copies of ``args`` and ``kwargs`` (a Generator restarts from its seed state)."""
        return copy.deepcopy(self.args), copy.deepcopy(self.kwargs)

    @property
    def is_sampling(self) -> bool:
        """A case of ``generate`` with temperature > 0: no single right output."""
        return self.function == "generate" and self.kwargs.get("temperature", 0.0) > 0

    def expected(self):
        """The right output: ``answer`` when given, else the reference's (for a sampling
        case, one sample; such cases are judged by distribution, not by equality),
        computed once while the case lives (a grading process judges every student on
        the same cases), unless it is large."""
        if self.answer is not None:
            return copy.deepcopy(self.answer)
        runs = _OUTCOMES.setdefault(self, {})
        if _EXPECTED not in runs:
            out = self.run((self.exercise or get(self.function)).answer)   # raises what it raises, warns
            if _nbytes(out) > OUTCOME_BYTES:                # where warnings are errors
                return out
            runs[_EXPECTED] = out
        return copy.deepcopy(runs[_EXPECTED])

    def outcome(self, fn) -> tuple[Any, Exception | None]:
        """``(output, None)`` of the course's own ``fn`` (a named mistake) on this case,
        or ``(None, the exception it raised)``, run with warnings off: computed once per
        case and function while the case lives, unless the output is large. To be read,
        never changed."""
        runs = _OUTCOMES.setdefault(self, {})
        if fn in runs:
            return runs[fn]
        with quiet():
            try:
                result = self.run(fn), None
            except Exception as exc:
                result = None, exc.with_traceback(None)   # its type and words: no frames
        if _nbytes(result[0]) <= OUTCOME_BYTES:
            runs[fn] = result
        return result

    def run(self, fn):
        """What ``fn`` gives on this case (through the scenario, if any), on fresh inputs."""
        args, kwargs = self.fresh_args()
        if self.scenario:
            return decide(self.scenario, resolve(self.scenario)(fn, *args, **kwargs))
        return fn(*args, **kwargs)


#: What :meth:`Case.outcome` and :meth:`Case.expected` keep: case -> {function: (output,
#: error), _EXPECTED: output}, dropped with the case; an output of more than
#: OUTCOME_BYTES (a real model's logits) is not kept.
_OUTCOMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_EXPECTED = "expected"
OUTCOME_BYTES = 1 << 20


def _nbytes(x, depth: int = 0) -> int:
    """About the bytes ``x`` takes: its arrays' and 8 per item (into its lists, tuples and
    dicts, 4 levels down)."""
    if hasattr(x, "nbytes"):
        return int(x.nbytes)
    if isinstance(x, (list, tuple, dict)):
        items = x.values() if isinstance(x, dict) else x
        return 8 * len(x) + (sum(_nbytes(v, depth + 1) for v in items) if depth < 4 else 0)
    return 8


def case(name: str, description: str, args=(), kwargs=None, *, group: str = "basic",
         hidden: bool = False, scenario: str | None = None, expected=None) -> dict:
    """The fields of one :class:`Case` (an exercise's case builder returns a list of these).

    ``expected``: the right output written out by hand (a worked example), when the case
    should not take it from the reference."""
    return {"name": name, "description": description, "args": tuple(args),
            "kwargs": dict(kwargs or {}), "group": group, "hidden": hidden,
            "scenario": scenario, "answer": expected}


@dataclass(frozen=True)
class Mistake:
    """One known mistake: ``fn`` (the exercise's signature) reproduces it, ``message``
    explains it. A sampling mistake of ``generate`` also has ``sampler(logits, T) -> p``."""

    key: str
    message: str
    fn: Callable
    sampler: Callable | None = None


class Exercise:
    """One graded exercise (see the module docstring)."""

    def __init__(self, name: str, reference: Callable, *, uses: tuple[str, ...] = (),
                 refuse: tuple[str, ...] = (), forbid: tuple[str, ...] = (),
                 output: str = "array",
                 parts: tuple[str, ...] = (), compare: Callable | None = None,
                 nan_hint: str = "", near_miss: str = "", rtol: float = RTOL,
                 atol: float = ATOL, tolerances: dict[str, tuple[float, float]] | None = None,
                 signature: Callable | None = None,
                 diagnose: Callable | None = None, difficulty: int = 0,
                 importance: int = 0, minutes: int = 0, hints: tuple[str, ...] = (),
                 contract: "Contract | None" = None):
        self.name = name
        self.contract = contract        # its arguments and result as data (Contract)
        # Teaching fields (docs/authoring.md): rendered into the notebook by
        # helpers.exercises.render and copied there by `python -m autograder sync-exercises`.
        self.difficulty = difficulty    # 1 (easy) .. 3 (hard); 0: not declared yet
        self.importance = importance    # 1 (optional extra) .. 3 (essential)
        self.minutes = minutes          # expected minutes for a learner
        self.hints = tuple(hints)       # 2 or 3 markdown levels: idea, nudge, almost there
        self.reference = reference
        self.uses = tuple(uses)
        self.refuse = tuple(refuse)
        self.forbid = tuple(forbid)
        self.output = output            # array | scalar | tuple | mask | ids | custom
        self.parts = tuple(parts)       # names of the items of a tuple output
        self.custom_compare = compare   # (case, expected, got) -> problem | None
        self.custom_diagnose = diagnose  # (case, got) -> [Mistake] | None (None: the usual)
        self.nan_hint = nan_hint
        self.near_miss = near_miss
        self.rtol, self.atol = rtol, atol   # how close a right output is (np.isclose)
        # per part of a tuple output: {part: (rtol, atol)}; the others use rtol, atol
        self.tolerances = dict(tolerances or {})
        self.signature = signature or reference   # whose parameters name the inputs
        self.mistakes: list[Mistake] = []
        self.edge_check: Callable | None = None    # @EXERCISE.edge
        self._answer: Callable | None = None
        self._build: Callable[[], list[dict]] | None = None
        self._cases: dict[int, tuple[Case, ...]] = {}
        self._written: tuple | None = None     # (visible, written hidden, draws hidden)
        self._stored = False                   # a student's copy: stored cases, no drawing

    def __repr__(self) -> str:
        return f"<Exercise {self.name}>"

    def __copy__(self) -> "Exercise":
        new = object.__new__(type(self))            # a shallow copy a test may change
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo) -> "Exercise":
        return self                  # one object per exercise (a copied case keeps it)

    def __reduce__(self):
        return get, (self.name,)     # pickled as its name, found again in the registry

    # -- declaring ----------------------------------------------------------------------

    def cases(self, build: Callable[[], list[dict]]) -> Callable:
        """Decorator: ``build()`` returns the exercise's cases (see :func:`case`)."""
        self._build = build
        self._cases = {}
        self._written = None
        self._stored = False
        return build

    def stored_cases(self, load: Callable[[], list[dict]]) -> None:
        """A student's copy of ``helpers``: ``load()`` returns the stored visible cases
        (drawn ones included, with their expected outputs); nothing is drawn here."""
        self.cases(load)
        self._stored = True

    def edge(self, check: Callable) -> Callable:
        """Decorator: ``check`` (the reference's arguments, as the contract converted
        them) raises a ValueError for a learner's call the contract cannot refuse (the
        zero vector, a slice of ``-inf`` only); see :attr:`answer`."""
        self.edge_check = check
        self._answer = None
        return check

    @property
    def answer(self) -> Callable:
        """The reference as learners call it and as the cases' expected outputs are
        computed: a function of ``helpers.reference`` (the math alone, which checks
        nothing) checked at the edge by the contract and :meth:`edge`
        (:func:`helpers.course.edge.checked`); any other reference as it is (the models
        and the training code check their own arguments)."""
        if self._answer is None:
            self._answer = self.reference
            if self.contract is not None and \
                    getattr(self.reference, "__module__", "") == "helpers.reference":
                from helpers.course.edge import checked
                from helpers.course.render import docstring

                self._answer = checked(self.reference, self.contract, self.edge_check,
                                       docstring(self))
        return self._answer

    def mistake(self, key: str, message: str, sampler: Callable | None = None) -> Callable:
        """Decorator: register the decorated function as known mistake ``key``."""

        def register(fn):
            self.mistakes.append(Mistake(key, message, fn, sampler))
            return fn

        return register

    # -- reading ------------------------------------------------------------------------

    def tolerance(self, part: str | None = None) -> tuple[float, float]:
        """``(rtol, atol)`` an output (or the part ``part`` of a tuple output) is judged
        with: ``|got - expected| <= atol + rtol * |expected|`` entry by entry."""
        return self.tolerances.get(part, (self.rtol, self.atol)) if part else (self.rtol,
                                                                                 self.atol)

    def all_cases(self, hidden_seed: int | None = None) -> tuple[Case, ...]:
        """Every case, visible then hidden (built once per seed): the written ones in
        declaration order, each followed by the ones drawn from the contract (visible:
        from :data:`VISIBLE_SEED`; hidden: from ``hidden_seed``, :data:`HIDDEN_SEED` when
        None; a per-student seed gives each student other hidden inputs). The written
        cases and the drawn visible ones are the same objects for every seed (built
        once); the grader keeps the cases of the last :data:`SEEDS_KEPT` other seeds."""
        seed = HIDDEN_SEED if hidden_seed is None else int(hidden_seed)
        if seed not in self._cases:
            if self._build is None:
                raise ValueError(f"exercise {self.name!r} declares no cases")
            if self._written is None:
                written = [Case(self.name, **c, exercise=self) for c in self._build()]
                # a student's copy stores the drawn visible ones, and draws nothing
                drawn = self.contract is not None and not self._stored
                visible = [c for c in written if not c.hidden]
                if drawn:
                    visible += [Case(self.name, **c, exercise=self)
                                for c in draw.draw_cases(self, VISIBLE_SEED)]
                self._written = (tuple(visible), tuple(c for c in written if c.hidden), drawn)
            visible, hidden, drawn = self._written
            if drawn:
                hidden += tuple(Case(self.name, **c, exercise=self)
                                for c in draw.draw_cases(self, seed, hidden=True))
            others = [k for k in self._cases if k != HIDDEN_SEED]
            if seed != HIDDEN_SEED:
                for k in others[:max(0, len(others) - SEEDS_KEPT + 1)]:
                    del self._cases[k]             # oldest first: dicts keep their order
            self._cases[seed] = visible + hidden
        return self._cases[seed]

    @property
    def draws_hidden(self) -> bool:
        """Whether the hidden cases depend on the seed (a contract that draws)."""
        self.all_cases()
        return bool(self._written[2] and self.contract.draw and self.contract.args)

    @property
    def notebook(self) -> str:
        return notebook_of(self.name)

    @property
    def module(self) -> str:
        return f"{EXERCISES}.{self.name}"


