"""The course's graded exercises, one module each: what is asked, and how it is judged.

Every graded exercise of notebooks 00-12 has a module ``helpers/exercises/<name>.py``
that declares one :class:`Exercise`, ``EXERCISE``:

* its **reference** (the right answer: a function of ``helpers.reference``, of a model
  module such as ``helpers.llama.model``, or defined in the exercise module itself);
* its **contract** (``contract=Contract(args={...: Arg(...)}, returns=Arg(...))``): its
  arguments and result as data, which validates every case and draws more cases (visible
  ones from a fixed seed, hidden ones from a seed the grader may choose);
* its **cases** (``@EXERCISE.cases``: visible ones, which the notebook's instant check
  runs, and hidden ones, which only the grader runs), built from fixed seeds;
* its **named mistakes** (``@EXERCISE.mistake(key, message)``: a function with the
  exercise's signature that returns what an answer with exactly that mistake returns);
* ``uses``: the earlier course functions it may call. While it is graded these are the
  reference ones, so a mistake in one of them costs points once, in its own exercise;
* ``refuse``: the references (``"module:function"``) a learner must not call for it,
  besides ``reference`` itself;
* how its output is compared (``output``: ``array``, ``scalar``, ``tuple``, ``mask``,
  ``ids``, or a custom ``compare``) and how close a right one is: ``rtol``, ``atol``
  (default ``1e-6``, ``1e-8``) and, per part of a tuple output, ``tolerances``.

:mod:`helpers.judge` judges every exercise the same way, in the notebook (through
:mod:`helpers.checks`: ``check("softmax", softmax)``) and in the grader (``autograder``),
which calls the learner's function on the same cases in a sandbox and compares outside it.

Adding an exercise: write ``helpers/exercises/<name>.py`` (copy a neighbour), add its
name to :data:`NOTEBOOKS`, and give its notebook an answer cell (``grade_id`` = name)
and a test cell with the one line ``check("<name>", <name>)`` (plus the same call with
``hidden=True`` inside ``### BEGIN HIDDEN TESTS``). See docs/authoring.md.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import warnings
import weakref
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from helpers.exercises import _draw
from helpers.exercises._draw import ids_below
# (re-exported) the file edge_table() is stored in, which helpers.reference reads
from helpers.reference import EDGE_TABLE  # noqa: F401
# (re-exported) what a "module:attr" spec names: one copy, shared with the grader
from helpers._same import resolve  # noqa: F401

__all__ = ["Case", "quiet", "Mistake", "Exercise", "NOTEBOOKS", "PREPARE", "get", "names",
           "of_notebook", "notebook_of", "case", "answer_functions", "module_file", "Arg",
           "Contract", "contract_problems", "draw_cases", "VISIBLE_SEED", "HIDDEN_SEED",
           "decide", "ids_below"]

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
    "11_tokenizer": ("byte_symbols", "count_pairs", "merge_pair", "train_bpe", "encode_word",
                     "decode", "pretokenize", "encode"),
    "12_training": ("numerical_gradient", "cross_entropy_backward", "linear_backward",
                    "gelu_backward", "layer_norm_backward", "attention_backward",
                    "embed_backward", "transformer_block_backward", "loss_and_grads",
                    "adamw_update", "lr_schedule", "clip_by_global_norm"),
}

#: What grading an assignment needs prepared first, by a trusted process, before any
#: learner code runs: ``"module:function"`` called with no arguments (it may write
#: caches the sandboxed runs then read, read-only).
PREPARE: dict[str, tuple[str, ...]] = {
    "10_modern_llm": ("helpers.llama:prepare_cache",),
    # its last demo runs SmolLM2, but no graded cell needs the model: only its vocabulary
    "11_tokenizer": ("helpers.tokenizer:prepare_cache",),
}

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
            out = self.run(get(self.function).reference)   # raises what it raises, warns
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
                 refuse: tuple[str, ...] = (), output: str = "array",
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
        self._build: Callable[[], list[dict]] | None = None
        self._cases: dict[int, tuple[Case, ...]] = {}
        self._written: tuple | None = None     # (visible, written hidden, draws hidden)
        self._stored = False                   # a student's copy: stored cases, no drawing

    def __repr__(self) -> str:
        return f"<Exercise {self.name}>"

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
                written = [Case(self.name, **c) for c in self._build()]
                # a student's copy stores the drawn visible ones, and draws nothing
                drawn = self.contract is not None and not self._stored
                visible = [c for c in written if not c.hidden]
                if drawn:
                    visible += [Case(self.name, **c) for c in draw_cases(self, VISIBLE_SEED)]
                self._written = (tuple(visible), tuple(c for c in written if c.hidden), drawn)
            visible, hidden, drawn = self._written
            if drawn:
                hidden += tuple(Case(self.name, **c)
                                for c in draw_cases(self, seed, hidden=True))
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


def decide(spec: str, observed):
    """What scenario ``spec``'s observations mean: ``"module:scenario_<what>_decide"``
    applied to them (the observations themselves when the module has no such function).
    Runs in the trusted process only: the grader's sandbox sends observations back, never
    a judgement (docs/threat_model.md, "No verdict decided in a child")."""
    module, _, attr = spec.partition(":")
    decider = getattr(importlib.import_module(module), attr + "_decide", None)
    return observed if decider is None else decider(observed)


# ---------------------------------------------------------------------------------------
# The contract as data: what an exercise's arguments and result are, declared once.
# It validates every written case (tests/helpers/test_contracts.py) and draws more from a seed.
# ---------------------------------------------------------------------------------------

#: Seed of the drawn visible cases (the instant check and the grader run the same ones).
VISIBLE_SEED = 1111
#: Default seed of the drawn hidden cases (the grader may pass another: a per-student one).
HIDDEN_SEED = 2222
#: Seeds besides :data:`HIDDEN_SEED` whose cases an exercise keeps built (a grading
#: process grades one student's notebook at a time: one seed in use).
SEEDS_KEPT = 4


@dataclass(frozen=True)
class Arg:
    """One argument (or result) of an exercise.

    ``shape``: ``"[..., N, d]"`` an array with named dimensions (a dimension's name means
    the same size in every argument and the result of one call; ``...`` stands for the
    leading batch axes, as many as :attr:`Contract.batch` allows; a number is a fixed
    size); a bare name ``"n"``: an int equal to that dimension; ``int``, ``float`` or
    ``bool``: a scalar, between ``low`` and ``high`` (for an array: every entry; a bound
    of an array may name dimensions, ``high="V - 1"``); another type (``dict``, ``list``,
    a model configuration, ``str``): a value of that type, drawn by ``values``; a tuple of
    kinds ``(str, str)``: a tuple of that many values of those kinds (a pair). What a
    structure holds: ``items``, the kind of every item of a list or tuple (or of every value
    of a dict), ``keys``, the kind of a dict's keys, ``fields``, a dict's named entries
    (name -> :class:`Arg`; their dimensions bind like arguments'); a kind is a type, a
    tuple of kinds, or an :class:`Arg`. ``dtype``: the array's dtypes
    (``"float64"``, ``"float32"``, ``"int"``, ``"bool"``). ``lists``: plain (nested)
    lists are accepted in place of the array (or of the tuple). ``optional``: a keyword
    with a default, which cases may leave out (or pass as ``None`` for an array; one
    followed by a required argument is passed positionally, ``None`` when left out).
    ``values(rng, shape, dims)``: how drawn values look (default: standard normal floats,
    ints in ``[low, high]``, booleans with the first key allowed)."""

    shape: Any = float
    dtype: Any = "float64"
    lists: bool = False
    low: float | None = None
    high: float | None = None
    optional: bool = False
    values: Callable | None = None
    items: Any = None
    keys: Any = None
    fields: dict | None = None

    @property
    def is_array(self) -> bool:
        return isinstance(self.shape, str) and self.shape.startswith("[")

    @property
    def tokens(self) -> list[str]:
        return [t.strip() for t in self.shape.strip("[]").split(",") if t.strip()]

    @property
    def dtypes(self) -> tuple[str, ...]:
        return (self.dtype,) if isinstance(self.dtype, str) else tuple(self.dtype)


@dataclass(frozen=True)
class Contract:
    """An exercise's arguments and result, stated once (docs/authoring.md).

    ``args``: parameter name -> :class:`Arg` (every parameter of the signature);
    ``returns``: an :class:`Arg`, or a tuple of them for a tuple output; ``batch``: how
    many axes ``...`` may stand for; ``sizes``: the sizes drawn for a dimension (default
    2-5, and 1 in the ``size1`` draw); ``where``: conditions on the dimensions
    (``"d % n_heads == 0"``); ``dtype_judged``: whether the output's dtype is judged (it
    is for masks: booleans); ``invariants``: what else holds, in words; ``draw=False``:
    the contract validates the written cases but draws none (the models' exercises, whose
    inputs are whole models, not drawn yet); ``scenario``: the scenario every case runs
    through (its arguments are the exercise's; a drawn case runs it too, and a case of it
    has its arguments validated, not its observations)."""

    args: dict
    returns: Any
    batch: tuple[int, ...] = (0,)
    sizes: dict = field(default_factory=dict)
    where: tuple[str, ...] = ()
    dtype_judged: bool = False
    invariants: tuple[str, ...] = ()
    draw: bool = True
    scenario: str | None = None




def edge_table() -> dict:
    """Exercise -> argument -> what its edge check needs, for each array argument (and
    dict of arrays) of every contract: ``{"shape": "[..., n]", "ids": whether it holds token
    ids, "high": "V - 1" (the largest id) or None}``, or ``{"fields": {key: {"shape":
    shape or None, "optional": bool}}}``."""
    table = {}
    for name in names():
        contract = get(name).contract
        if contract is None:
            continue
        args = {}
        for arg_name, arg in contract.args.items():
            if arg.fields is not None:
                args[arg_name] = {"fields": {
                    key: {"shape": f.shape if f.is_array else None, "optional": f.optional}
                    for key, f in arg.fields.items()}}
            elif arg.is_array:
                ids = "int" in arg.dtypes
                args[arg_name] = {"shape": arg.shape, "ids": ids,
                                  "high": str(arg.high) if ids and arg.high is not None
                                  else None}
        table[name] = args
    return table


def edge_table_text() -> str:
    """:func:`edge_table` as the stored file's text."""
    import json

    return json.dumps(edge_table(), indent=1) + "\n"


def _dtype_ok(arg: Arg, arr, from_list: bool) -> bool:
    kind = arr.dtype.kind
    for want in arg.dtypes:
        if want == "bool" and kind == "b":
            return True
        if want == "int" and kind in "iu":
            return True
        if want.startswith("float") and (arr.dtype.name == want or
                                         (from_list and kind in "iuf")):
            return True
    return arr.size == 0


def dtype_problem(returns: Arg, got) -> str | None:
    """What is wrong with the dtype of output ``got`` of a contract whose dtype is judged
    (``returns``: its result), or None (not an array of numbers: the comparison says
    what is wrong)."""
    import numpy as np

    try:
        arr = np.asarray(got)
    except Exception:                        # ragged: the comparison says so
        return None
    if arr.dtype.kind not in "biuf" or _dtype_ok(returns, arr, False):
        return None
    if returns.dtypes == ("bool",):
        return (f"the mask must be boolean (dtype bool), got dtype {arr.dtype}: build it "
                f"from comparisons such as j <= i")
    return f"the output must have dtype {'/'.join(returns.dtypes)}, got dtype {arr.dtype}"


def _check_arg(name: str, arg: Arg, value, dims: dict, batches: list, contract) -> list[str]:
    """What is wrong with ``value`` as argument (or result) ``name``; binds ``dims``."""
    import numbers

    import numpy as np

    if value is None:
        return [] if arg.optional else [f"{name} is None"]
    if arg.is_array:
        from_list = isinstance(value, (list, tuple))
        if from_list and not arg.lists:
            return [f"{name} is a {type(value).__name__}; the contract wants an array"]
        if not from_list and not isinstance(value, np.ndarray):
            return [f"{name} is a {type(value).__name__}; the contract wants an array"]
        arr = np.asarray(value)
        out = [] if _dtype_ok(arg, arr, from_list) else [
            f"{name} has dtype {arr.dtype}; the contract says {'/'.join(arg.dtypes)}"]
        tokens = arg.tokens
        fixed = [t for t in tokens if t != "..."]
        n_batch = arr.ndim - len(fixed)
        if "..." not in tokens and n_batch != 0 or n_batch < 0 or \
                "..." in tokens and n_batch not in contract.batch:
            return out + [f"{name} has shape {arr.shape}; the contract says {arg.shape} "
                          f"(with ... standing for {contract.batch} axes)"]
        if "..." in tokens:
            batches.append((name, arr.shape[:n_batch]))
        for token, size in zip(fixed, arr.shape[n_batch:]):
            if token.isdigit():
                if int(token) != size:
                    out.append(f"{name} has shape {arr.shape}; the contract says {arg.shape}")
            elif dims.setdefault(token, size) != size:
                out.append(f"{name} has shape {arr.shape}: its {token} = {size}, but "
                           f"{token} = {dims[token]} elsewhere (the contract says "
                           f"{arg.shape})")
        return out
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(arg.shape, str):                      # an int equal to a dimension
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            return [f"{name} = {value!r} is not an int"]
        if dims.setdefault(arg.shape, int(value)) != int(value):
            return [f"{name} = {value} but {arg.shape} = {dims[arg.shape]} elsewhere"]
        return []
    if isinstance(arg.shape, tuple) or arg.shape not in (int, float, bool):
        return _check_structure(name, arg, value, dims, batches, contract)
    want = {int: numbers.Integral, float: numbers.Real, bool: bool}[arg.shape]
    if not isinstance(value, want) or (arg.shape is not bool and isinstance(value, bool)):
        return [f"{name} = {value!r} is not a {arg.shape.__name__}"]
    if arg.low is not None and value < arg.low or arg.high is not None and value > arg.high:
        return [f"{name} = {value!r} is outside [{arg.low}, {arg.high}]"]
    return []


def _range_problems(name: str, arg: Arg, value, dims: dict) -> list[str]:
    """What entries of array ``value`` lie outside ``[arg.low, arg.high]``."""
    import numpy as np

    arr = np.asarray(value)
    if not arr.size or arr.dtype.kind not in "iuf" or arg.low is None and arg.high is None:
        return []
    try:
        lo, hi = _draw.bound(arg.low, dims), _draw.bound(arg.high, dims)
    except NameError:                   # a dimension no argument binds: not checked
        return []
    bad = (arr < lo if lo is not None else False) | (arr > hi if hi is not None else False)
    if not np.any(bad):
        return []
    first = arr[bad].flat[0].item()
    return [f"{name} holds {first!r}, outside [{lo}, {hi}] (the contract says "
            f"{arg.low if arg.low is not None else '-inf'} <= {name} <= "
            f"{arg.high if arg.high is not None else 'inf'})"]


def _kind_name(kind) -> str:
    if isinstance(kind, Arg):
        return kind.shape if isinstance(kind.shape, str) else _kind_name(kind.shape)
    if isinstance(kind, tuple):
        return "(" + ", ".join(_kind_name(k) for k in kind) + ")"
    return kind.__name__


def _check_kind(name: str, kind, value, dims: dict, batches: list, contract,
                lists: bool = False) -> list[str]:
    """What is wrong with ``value`` as a value of ``kind`` (a type, a tuple of kinds or an
    :class:`Arg`)."""
    import numbers

    if isinstance(kind, Arg):
        return _check_arg(name, kind, value, dims, batches, contract)
    if isinstance(kind, tuple):
        if not isinstance(value, tuple) and not (lists and isinstance(value, list)):
            return [f"{name} is a {type(value).__name__}; the contract says a tuple "
                    f"{_kind_name(kind)}"]
        if len(value) != len(kind):
            return [f"{name} has {len(value)} items; the contract says {_kind_name(kind)}"]
        out = []
        for i, (k, v) in enumerate(zip(kind, value)):
            out += _check_kind(f"{name}[{i}]", k, v, dims, batches, contract, lists)
        return out
    want = {int: numbers.Integral, float: numbers.Real}.get(kind, kind)
    if not isinstance(value, want) or (kind in (int, float) and isinstance(value, bool)):
        return [f"{name} is a {type(value).__name__}; the contract says {_kind_name(kind)}"]
    return []


def _check_structure(name: str, arg: Arg, value, dims: dict, batches: list,
                     contract) -> list[str]:
    """A str, a list, a dict, a tuple of kinds or another type, and what it holds."""
    shape = arg.shape
    if isinstance(shape, tuple):
        return _check_kind(name, shape, value, dims, batches, contract, arg.lists)
    if not isinstance(value, shape) and not (arg.lists and shape is tuple and
                                             isinstance(value, list)):
        return [f"{name} is a {type(value).__name__}; the contract says {shape.__name__}"]
    out: list[str] = []
    if isinstance(value, dict):
        if arg.keys is not None:
            for k in value:
                out += _check_kind(f"a key of {name}", arg.keys, k, dims, batches, contract,
                                   arg.lists)
        if arg.items is not None:
            for k, v in value.items():
                out += _check_kind(f"{name}[{k!r}]", arg.items, v, dims, batches, contract,
                                   arg.lists)
        for k, sub in (arg.fields or {}).items():
            if k not in value:
                if not sub.optional:
                    out.append(f"{name} has no entry {k!r}")
                continue
            out += _check_arg(f"{name}[{k!r}]", sub, value[k], dims, batches, contract)
    elif isinstance(value, (list, tuple)) and arg.items is not None:
        for i, v in enumerate(value):
            out += _check_kind(f"{name}[{i}]", arg.items, v, dims, batches, contract,
                               arg.lists)
    return out[:5]


def contract_problems(ex: "Exercise", case: "Case") -> list[str]:
    """What makes ``case`` (its arguments and its expected output) fall outside ``ex``'s
    contract; [] when it is inside (or when the exercise states no contract, or the case
    runs a scenario)."""
    import inspect

    import numpy as np

    contract = ex.contract
    if contract is None or case.scenario and case.scenario != contract.scenario:
        return []
    sig = inspect.signature(ex.signature)
    try:
        bound = sig.bind(*case.args, **case.kwargs).arguments
    except TypeError as exc:
        return [f"the arguments do not fit {ex.name}'s signature: {exc}"]
    out = [f"{p} is not in the contract" for p in sig.parameters if p not in contract.args]
    dims: dict = {}
    batches: list = []
    for name, arg in contract.args.items():
        if name not in bound:
            if not arg.optional:
                out.append(f"{name} is left out but is not optional")
            continue
        out += _check_arg(name, arg, bound[name], dims, batches, contract)
    try:
        np.broadcast_shapes(*(s for _, s in batches))
    except ValueError:
        out.append(f"the batch axes ... do not broadcast: {batches}")
    for cond in contract.where:
        try:
            ok = eval(cond, {}, dict(dims))            # noqa: S307 (the author's text)
        except NameError:
            continue
        if not ok:
            out.append(f"{cond} does not hold ({dims})")
    for name, arg in contract.args.items():            # ranges: every dimension is bound
        if arg.is_array and bound.get(name) is not None and not out:
            out += _range_problems(name, arg, bound[name], dims)
    if out or case.scenario:                # a scenario's result is its observations
        return out
    expected = copy.deepcopy(case.answer) if case.answer is not None else case.run(ex.reference)
    returns = contract.returns
    if isinstance(returns, tuple):
        if not isinstance(expected, tuple) or len(expected) != len(returns):
            return [f"the expected output is not a tuple of {len(returns)}"]
        pairs = list(zip(returns, expected))
    else:
        pairs = [(returns, expected)]
    for i, (arg, value) in enumerate(pairs):
        if arg.is_array and not isinstance(value, np.ndarray):
            value = np.asarray(value)
        out += [f"the expected output: {p}" for p in
                _check_arg(f"result {i}" if len(pairs) > 1 else "result", arg, value, dims,
                           [], Contract({}, None, batch=tuple(range(8))))]
    return out


def draw_cases(ex: "Exercise", seed: int, hidden: bool = False) -> list[dict]:
    """Cases drawn from ``ex``'s contract with ``seed``: one per kind of input it allows:
    ``rank<r>`` for each number of batch axes (the rank of the first batched argument),
    ``size1`` (dimensions of size 1) (a contract with neither arrays nor dimensions, of
    strings, lists and numbers: ``draw1`` and ``draw2``, two draws of its values), ``lists`` (plain lists where array-likes are
    accepted), ``<dtype>`` for each further dtype named, ``keywords`` (every optional
    argument passed). Named ``contract_<kind>`` (hidden: ``contract_<kind>_hidden``);
    the expected outputs come from the reference."""
    import zlib

    import numpy as np

    contract = ex.contract
    if not contract.args or not contract.draw:
        return []                           # nothing to vary (wash_we()), or not drawn
    rng = _draw.rng([seed, zlib.crc32(ex.name.encode())])
    first = next((a for a in contract.args.values() if a.is_array and "..." in a.tokens),
                 next((a for a in contract.args.values() if a.is_array), None))
    base = len([t for t in first.tokens if t != "..."]) if first else 0
    if first is None and not _draw.dim_names(contract):     # no shape to vary: two draws
        kinds = [("draw1", {}), ("draw2", {})]
    else:
        kinds = [(f"rank{base + b}", {"batch": b}) for b in contract.batch]
        kinds.append(("size1", {"ones": True}))
    if any(a.lists for a in contract.args.values()):
        kinds.append(("lists", {"lists": True}))
    extra = sorted({d for a in contract.args.values() if a.is_array
                    for d in a.dtypes[1:] if d.startswith("float")})
    kinds += [(d, {"dtype": d}) for d in extra]
    if any(a.optional for a in contract.args.values()):
        kinds.append(("keywords", {"keywords": True}))
    out = []
    for kind, how in kinds:
        dims = _draw.dims(contract, rng, how.get("ones", False))
        b = how.get("batch", contract.batch[-1] if how.get("ones") else contract.batch[0])
        batch = tuple(int(rng.choice((1, 2, 3) if how.get("ones") else (2, 3)))
                      for _ in range(b))
        args, kwargs, words = [], {}, []
        arg_list = list(contract.args.items())
        for i, (name, arg) in enumerate(arg_list):
            # an optional argument before a required one goes by position (None: left out)
            positional = not arg.optional or any(not a.optional for _, a in arg_list[i + 1:])
            if arg.optional and not how.get("keywords"):
                if positional:
                    args.append(None)
                    words.append(f"{name} = None")
                continue
            dtype = arg.dtypes[0]
            if how.get("dtype") in arg.dtypes:
                dtype = how["dtype"]
            value = _draw.value(arg, rng, dims, batch, dtype)
            if how.get("lists") and arg.lists:
                value = value.tolist() if isinstance(value, np.ndarray) else list(value)
            if positional:
                args.append(value)
            else:
                kwargs[name] = value
            shape = np.shape(value) if arg.is_array else ()
            text = repr(value)
            if not arg.is_array and len(text) > 60:
                text = f"a {type(value).__name__}" + (
                    f" of {len(value)} {'entries' if isinstance(value, dict) else 'items'}"
                    if hasattr(value, "__len__") else "")
            words.append(f"{name} {list(shape)}" if arg.is_array else f"{name} = {text}")
        out.append(case(f"contract_{kind}" + ("_hidden" if hidden else ""),
                        f"drawn from the contract ({kind}): " + ", ".join(words),
                        args, kwargs, group="contract", hidden=hidden,
                        scenario=contract.scenario))
    return out
