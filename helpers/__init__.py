"""Shared code for the course "Transformers from the dot product up", in NumPy.

* ``helpers.reference``: the reference implementation, one function per equation. Every
  exercise function of the course is re-exported here: ``from helpers import softmax``.
* ``helpers.examples``: the lecture slides' worked examples, as data.
* ``helpers.checks``: the instant checks of the notebooks' test cells.

Pretrained models, each imported on its own (``import helpers`` does not load them):

* ``helpers.bert``: all-MiniLM-L6-v2, a 6-layer BERT sentence encoder (notebook 09);
* ``helpers.llama``: SmolLM2-135M-Instruct, a Llama-style decoder (notebook 10);
* ``helpers.pretrained``: a small character-level language model trained on Shakespeare
  (notebook 08), in the layout of the course's ``language_model_forward``.
* ``helpers.tokenizer``: byte-level BPE (notebook 11): the exercises' references, and
  ``encode_smollm2``, SmolLM2's exact ids from its GGUF file's vocabulary and merges.

Run ``help(helpers.<function>)`` for the equation and the shapes of each function.
"""

from helpers.reference import (  # noqa: F401  (re-exported)
    BLOCK_PARAM_SHAPES,
    causal_mask,
    cosine_similarity,
    cross_attention,
    cross_entropy,
    dot,
    embed,
    feed_forward,
    generate,
    language_model_forward,
    layer_norm,
    lm_head,
    merge_heads,
    multi_head_attention,
    pairwise_scores,
    project_qkv,
    scaled_dot_product_attention,
    simple_self_attention,
    softmax,
    split_heads,
    transformer_block,
)

#: The exercise functions of the contract (``docs/contract.md``), in course order.
CONTRACT_FUNCTIONS = (
    "dot", "cosine_similarity", "pairwise_scores",
    "softmax",
    "simple_self_attention",
    "project_qkv", "scaled_dot_product_attention",
    "causal_mask", "cross_attention",
    "split_heads", "merge_heads", "multi_head_attention",
    "layer_norm", "feed_forward", "transformer_block",
    "embed", "lm_head", "language_model_forward", "cross_entropy", "generate",
)

__version__ = "0.1.0"
