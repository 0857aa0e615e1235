"""The registry: which graded exercises there are, in which notebook, and how a name
given as text (an exercise, ``"module:function"``) becomes the object it names.

Each exercise is one module, ``helpers/exercises/<name>.py``, loaded by its name on
first use (:func:`get`); nothing here imports an exercise module by hand.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Callable

# what a "module:attr" spec names: one copy, shared with the grader's boundary
from helpers._same import resolve

__all__ = ["NOTEBOOKS", "PREPARE", "names", "notebook_of", "get", "of_notebook", "qualified",
           "answer_functions", "module_file", "resolve", "decide"]

#: The package that holds one module per exercise.
EXERCISES = "helpers.exercises"

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
    "13_inference": ("top_p_distribution", "repetition_penalty", "beam_search",
                     "attention_with_cache", "online_softmax", "flash_attention"),
    "14_interpretability": ("logit_lens", "answer_ranks", "induction_scores", "ablate_heads",
                            "direct_logit_attribution"),
}

#: What grading an assignment needs prepared first, by a trusted process, before any
#: learner code runs: ``"module:function"`` called with no arguments (it may write
#: caches the sandboxed runs then read, read-only).
PREPARE: dict[str, tuple[str, ...]] = {
    "10_modern_llm": ("helpers.llama:prepare_cache",),
    "11_tokenizer": ("helpers.tokenizer:prepare_cache",),   # SmolLM2's vocabulary only
}



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
    module = importlib.import_module(f"{EXERCISES}.{name}")
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

