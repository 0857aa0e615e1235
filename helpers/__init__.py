"""Shared code for the course "Transformers from the dot product up", in NumPy.

* ``helpers.reference``: the reference implementation, one function per equation. Each
  of its exercise functions is re-exported here: ``from helpers import softmax``.
* ``helpers.examples``: the lecture slides' worked examples, as data.
* ``helpers.checks``: the instant checks of the notebooks' test cells (``check``,
  ``quiet``, ``assert_close``); ``helpers.course.judge``: how they, and the grader, judge an
  output.

Pretrained models, each imported on its own (``import helpers`` does not load them):

* ``helpers.bert``: all-MiniLM-L6-v2, a 6-layer BERT sentence encoder (notebook 09);
* ``helpers.llama``: SmolLM2-135M-Instruct, a Llama-style decoder (notebook 10);
* ``helpers.pretrained``: a small character-level language model trained on Shakespeare
  (notebook 08), in the layout of the course's ``language_model_forward``.
* ``helpers.tokenizer``: byte-level BPE (notebook 11): the exercises' references, and
  ``encode_smollm2``, SmolLM2's exact ids from its GGUF file's vocabulary and merges.
* ``helpers.inference``: notebook 13's references (top-p, repetition penalty, beam search,
  the KV cache, the online softmax, flash attention), NumPy only.

Run ``help(helpers.<function>)`` for the equation and the shapes of each function.
:data:`LEARNER_API` lists what notebooks may import from ``helpers``.
"""

import importlib as _importlib

#: The learner's modules of ``helpers`` (see LEARNER_API).
_LEARNER_MODULES = (
    "checks", "examples", "plots", "widgets", "demos_model", "environment_check",
    "bert", "llama", "pretrained", "tokenizer", "training", "inference", "interpretability",
)
#: Modules of ``helpers`` that are its attributes before anyone imports them.
_SUBMODULES = ("course", "reference", "examples", "exercises")


def _derived(name: str):
    """The value of one of the names below, computed on first use.

    * ``CONTRACT_FUNCTIONS``: the exercise functions of the contract (``docs/contract.md``)
      that ``helpers`` itself re-exports, in course order: the exercises of
      ``helpers.course.NOTEBOOKS`` whose answer is a function of ``helpers.reference``
      (derived: it cannot diverge from them).
    * ``LEARNER_API``: the learner's API, the names of ``helpers`` a notebook may import
      (``from helpers import softmax``, ``from helpers.checks import check``,
      ``helpers.plots``...). Every name a notebook of ``notebooks/`` or ``solutions/``
      takes from ``helpers`` is here, and each of these stays
      (``tests/helpers/test_learner_api.py``); the rest of the package is the course's own
      and may change. The modules are imported on demand (``bert``, ``llama`` and
      ``pretrained`` load a model's code; ``import helpers`` does not load them).
    * ``__all__``: what ``from helpers import *`` gives: the contract functions, and the
      names a plain ``import *`` gave before they were looked up on first use.
    * each of CONTRACT_FUNCTIONS as learners call it: the reference checked at the edge
      by its exercise's contract.

    Looked up on first use (then kept here), so that ``import helpers`` imports neither
    the exercise framework nor any exercise: each sandboxed child of the grader imports
    a copy of ``helpers`` and most need none of them."""
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name == "BLOCK_PARAM_SHAPES":
        return _importlib.import_module(f"{__name__}.reference").BLOCK_PARAM_SHAPES
    if name == "CONTRACT_FUNCTIONS":
        course = _importlib.import_module(f"{__name__}.course")
        reference = _importlib.import_module(f"{__name__}.reference")
        return tuple(n for n in course.names() if n in reference.__all__)
    if name == "LEARNER_API":
        return __getattr__("CONTRACT_FUNCTIONS") + ("BLOCK_PARAM_SHAPES",) + _LEARNER_MODULES
    if name == "__all__":
        return [*__getattr__("CONTRACT_FUNCTIONS"), "BLOCK_PARAM_SHAPES", "CONTRACT_FUNCTIONS",
                "LEARNER_API", *_SUBMODULES]
    if name in __getattr__("CONTRACT_FUNCTIONS"):
        return _importlib.import_module(f"{__name__}.course").get(name).answer
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")


def __getattr__(name: str):
    # a private name is never derived: ``from helpers import _wire`` asks for one before
    # importing the submodule, and must not import the framework to learn that
    if name.startswith("_") and name != "__all__":
        raise AttributeError(f"module 'helpers' has no attribute {name!r}")
    value = globals()[name] = _derived(name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})


__version__ = "0.1.0"
