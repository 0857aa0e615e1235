"""The course's graded exercises, one module each: what is asked, and how it is judged.

Every graded exercise of notebooks 00-12 has a module ``helpers/exercises/<name>.py``
that declares one :class:`Exercise`, ``EXERCISE``:

* its **reference** (the right answer: a function of ``helpers.reference``, of a model
  module such as ``helpers.llama.model``, or defined in the exercise module itself);
* its **cases** (``@EXERCISE.cases``: visible ones, which the notebook's instant check
  runs, and hidden ones, which only the grader runs), built from fixed seeds;
* its **named mistakes** (``@EXERCISE.mistake(key, message)``: a function with the
  exercise's signature that returns what an answer with exactly that mistake returns);
* ``uses``: the earlier course functions it may call. While it is graded these are the
  reference ones, so a mistake in one of them costs points once, in its own exercise;
* ``refuse``: the references (``"module:function"``) a learner must not call for it,
  besides ``reference`` itself;
* how its output is compared (``output``: ``array``, ``scalar``, ``tuple``, ``mask``,
  ``ids``, or a custom ``compare``).

:mod:`helpers.checks` judges every exercise the same way, in the notebook
(``check("softmax", softmax)``) and in the grader (``autograder``), which calls the
learner's function on the same cases in a sandbox and compares outside it.

Adding an exercise: write ``helpers/exercises/<name>.py`` (copy a neighbour), add its
name to :data:`NOTEBOOKS`, and give its notebook an answer cell (``grade_id`` = name)
and a test cell with the one line ``check("<name>", <name>)`` (plus the same call with
``hidden=True`` inside ``### BEGIN HIDDEN TESTS``). See docs/authoring.md.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

__all__ = ["Case", "Mistake", "Exercise", "NOTEBOOKS", "PREPARE", "get", "names",
           "of_notebook", "notebook_of", "case", "answer_functions", "module_file"]

#: Graded exercises per notebook (assignment), in course order.
NOTEBOOKS: dict[str, tuple[str, ...]] = {
    "00_start_here": ("stack_tokens",),
    "01_dot_products": ("dot", "cosine_similarity", "pairwise_scores", "most_similar"),
    "02_softmax": ("softmax", "softmax_with_temperature"),
    "03_simple_self_attention": ("simple_attention_weights", "simple_self_attention"),
    "04_queries_keys_values": ("project_qkv", "scaled_dot_product_attention", "find_slips",
                               "wash_we"),
    "05_masking_cross_attention": ("causal_mask", "causal_padding_mask", "cross_attention"),
    "06_multi_head_attention": ("split_heads", "merge_heads", "multi_head_attention"),
    "07_transformer_block": ("layer_norm", "feed_forward", "transformer_block",
                             "count_block_parameters"),
    "08_language_model": ("embed", "lm_head", "language_model_forward", "cross_entropy",
                          "generate", "top_k_distribution"),
    "09_sentence_encoder": ("gelu", "bert_layer", "mean_pool", "sentence_embeddings"),
    "10_modern_llm": ("rms_norm", "apply_rope", "swiglu", "grouped_query_attention",
                      "llama_block"),
    "12_training": ("numerical_gradient", "cross_entropy_backward", "linear_backward",
                    "gelu_backward", "layer_norm_backward", "attention_backward",
                    "embed_backward", "transformer_block_backward", "loss_and_grads",
                    "adamw_update", "lr_schedule", "clip_by_global_norm"),
}

#: What grading an assignment needs prepared first, by a trusted process, before any
#: learner code runs: ``"module:function"`` called with no arguments (it may write
#: caches the sandboxed runs then read, read-only).
PREPARE: dict[str, tuple[str, ...]] = {
    "10_modern_llm": ("helpers.llama.weights:prepare_cache",),
}

RTOL = 1e-6
ATOL = 1e-8


@dataclass(frozen=True, eq=False)        # eq on arrays would be ambiguous: identity instead
class Case:
    """One input of an exercise. Plain values only (they cross the sandbox's wire).

    ``function(*args, **kwargs)`` is what gets called, unless ``scenario`` names a
    function ``"module:function"`` of ``helpers``: then ``scenario(fn, *args, **kwargs)``
    runs where the learner's code runs and its return value is judged (a cache filled by
    two calls, a seeded generator used three times). ``answer``, when given, is the
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

    def fresh_args(self) -> tuple[tuple, dict]:
        """Deep copies of ``args`` and ``kwargs`` (a Generator restarts from its seed state)."""
        return copy.deepcopy(self.args), copy.deepcopy(self.kwargs)

    @property
    def is_sampling(self) -> bool:
        """A case of ``generate`` with temperature > 0: no single right output."""
        return self.function == "generate" and self.kwargs.get("temperature", 0.0) > 0

    def expected(self):
        """The right output: ``answer`` when given, else the reference's (for a sampling
        case, one sample; such cases are judged by distribution, not by equality)."""
        if self.answer is not None:
            return copy.deepcopy(self.answer)
        return self.run(get(self.function).reference)

    def run(self, fn):
        """What ``fn`` gives on this case (through the scenario, if any), on fresh inputs."""
        args, kwargs = self.fresh_args()
        if self.scenario:
            return resolve(self.scenario)(fn, *args, **kwargs)
        return fn(*args, **kwargs)


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
                 refuse: tuple[str, ...] = (), output: str = "array",
                 parts: tuple[str, ...] = (), compare: Callable | None = None,
                 nan_hint: str = "", near_miss: str = "", rtol: float = RTOL,
                 atol: float = ATOL, signature: Callable | None = None,
                 diagnose: Callable | None = None, difficulty: int = 0,
                 importance: int = 0, minutes: int = 0, hints: tuple[str, ...] = ()):
        self.name = name
        # Teaching fields (docs/authoring.md): rendered into the notebook by
        # helpers.exercises.render and copied there by `python -m autograder sync-exercises`.
        self.difficulty = difficulty    # 1 (easy) .. 3 (hard); 0: not declared yet
        self.importance = importance    # 1 (optional extra) .. 3 (essential)
        self.minutes = minutes          # expected minutes for a learner
        self.hints = tuple(hints)       # 2 or 3 markdown levels: idea, nudge, almost there
        self.reference = reference
        self.uses = tuple(uses)
        self.refuse = tuple(refuse)
        self.output = output            # array | scalar | tuple | mask | ids | custom
        self.parts = tuple(parts)       # names of the items of a tuple output
        self.custom_compare = compare   # (case, expected, got) -> problem | None
        self.custom_diagnose = diagnose  # (case, got) -> [Mistake] | None (None: the usual)
        self.nan_hint = nan_hint
        self.near_miss = near_miss
        self.rtol, self.atol = rtol, atol
        self.signature = signature or reference   # whose parameters name the inputs
        self.mistakes: list[Mistake] = []
        self._build: Callable[[], list[dict]] | None = None
        self._cases: tuple[Case, ...] | None = None

    def __repr__(self) -> str:
        return f"<Exercise {self.name}>"

    # -- declaring ----------------------------------------------------------------------

    def cases(self, build: Callable[[], list[dict]]) -> Callable:
        """Decorator: ``build()`` returns the exercise's cases (see :func:`case`)."""
        self._build = build
        return build

    def mistake(self, key: str, message: str, sampler: Callable | None = None) -> Callable:
        """Decorator: register the decorated function as known mistake ``key``."""

        def register(fn):
            self.mistakes.append(Mistake(key, message, fn, sampler))
            return fn

        return register

    # -- reading ------------------------------------------------------------------------

    def all_cases(self) -> tuple[Case, ...]:
        """Every case, visible then hidden in declaration order (built once)."""
        if self._cases is None:
            if self._build is None:
                raise ValueError(f"exercise {self.name!r} declares no cases")
            self._cases = tuple(Case(self.name, **c) for c in self._build())
        return self._cases

    @property
    def notebook(self) -> str:
        return notebook_of(self.name)

    @property
    def module(self) -> str:
        return f"{__name__}.{self.name}"


def names() -> tuple[str, ...]:
    """Every graded exercise, in course order."""
    return tuple(n for ns in NOTEBOOKS.values() for n in ns)


def notebook_of(name: str) -> str:
    for nb, ns in NOTEBOOKS.items():
        if name in ns:
            return nb
    raise KeyError(name)


@lru_cache(maxsize=None)
def get(name: str) -> Exercise:
    """The exercise ``name`` (ValueError naming the exercises when there is none)."""
    if name not in names():
        raise ValueError(f"{name!r} is not a graded exercise; the exercises are: "
                         f"{', '.join(names())}")
    module = importlib.import_module(f"{__name__}.{name}")
    return module.EXERCISE


def of_notebook(assignment: str) -> tuple[Exercise, ...]:
    return tuple(get(n) for n in NOTEBOOKS.get(assignment, ()))


def qualified(fn: Callable) -> str:
    """``"module:qualname"`` of a function (how ``refuse`` and ``uses`` name them)."""
    return f"{fn.__module__}:{fn.__qualname__}"


def answer_functions(name: str) -> dict[str, set[str]]:
    """What a learner's code must not find while exercise ``name`` is graded, or what a
    student bundle leaves out: ``{module: {function}}`` for its reference and the
    functions it ``refuse``s, by the module that defines them."""
    ex = get(name)
    out: dict[str, set[str]] = {}
    for fn in [ex.reference] + [resolve(spec) for spec in ex.refuse]:
        out.setdefault(fn.__module__, set()).add(fn.__name__)
    return out


def module_file(pkg, module: str):
    """The file of ``helpers`` module ``module`` in the copy of the package at ``pkg``."""
    from pathlib import Path

    parts = module.split(".")[1:]                  # without the leading "helpers"
    base = Path(pkg).joinpath(*parts) if parts else Path(pkg)
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def resolve(spec: str):
    """The object ``"module:attr.attr"`` names."""
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
