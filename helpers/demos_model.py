"""Demo models for notebooks 05-08: small, hand-made or pretrained, never graded.

* :func:`pattern_heads`: a multi-head attention layer whose four heads were set by hand
  to show the patterns that attention visualisations (BertViz) find in trained models:
  the previous token, delimiters, an even "bag of words", the same word earlier.
* :func:`head_weights`: the attention weights of every head of a multi-head layer.
* :func:`char_lm_head_weights`: the same for a layer of the pretrained character model.
* :func:`yours_or_reference`: the learner's function when it is implemented, else the
  reference one, so that demo cells run before the exercises are done.
* :func:`random_block_params`: seeded parameters of one transformer block.
* :func:`use_one_blas_thread`: run NumPy's matrix products on one thread (see there).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import helpers.reference as ref

__all__ = [
    "PATTERN_TOKENS", "PATTERN_HEAD_NAMES", "pattern_heads", "head_weights",
    "char_lm_head_weights", "yours_or_reference", "random_block_params",
    "random_lm_params", "load_demo_lm", "use_one_blas_thread",
]

#: The sentence of :func:`pattern_heads`: two short sentences after a start token.
PATTERN_TOKENS = ["<s>", "the", "cat", "sat", ".", "the", "dog", "ran", "."]
#: What each hand-made head does, in head order.
PATTERN_HEAD_NAMES = ["previous token", "delimiters", "bag of words", "same word"]
_PATTERN_VOCAB = ["<s>", ".", "the", "cat", "sat", "dog", "ran"]
_DELIMITERS = ("<s>", ".")


def pattern_heads(strength: float = 4.0) -> dict:
    """A 4-head self-attention layer with hand-set weights and its input.

    The input ``X`` of "<s> the cat sat . the dog ran ." has one-hot token features
    (7 columns) and one-hot position features (9 columns), padded with zeros to
    ``d_model = 4 * 16 = 64``. Head ``c`` owns columns ``16c : 16(c+1)`` of ``W_Q``,
    ``W_K`` (the contract's column blocks); ``strength`` scales queries and keys, so a
    matching pair scores ``strength**2 / sqrt(16)``.

    * head 0, previous token: the query of position ``i`` is position ``i-1``'s feature;
    * head 1, delimiters: every query is the same vector, only "<s>" and "." have keys;
    * head 2, bag of words: queries are zero, so every visible token weighs the same;
    * head 3, same word: queries and keys are the token features.

    Returns a dict with ``tokens, X [9, 64], W_Q, W_K, W_V, W_O [64, 64], n_heads,
    head_names``. ``W_V`` and ``W_O`` are the identity.
    """
    tokens = list(PATTERN_TOKENS)
    n_vocab, n_pos, d_h, n_heads = len(_PATTERN_VOCAB), len(tokens), 16, 4
    d_model = n_heads * d_h
    X = np.zeros((n_pos, d_model))                                # [9, 64]
    for i, tok in enumerate(tokens):
        X[i, _PATTERN_VOCAB.index(tok)] = 1.0                    # token feature
        X[i, n_vocab + i] = 1.0                                  # position feature
    W_Q = np.zeros((d_model, d_model))
    W_K = np.zeros((d_model, d_model))
    s = strength
    # head 0: query "I am position i" -> "looking for position i-1"
    off = 0 * d_h
    for i in range(1, n_pos):
        W_Q[n_vocab + i, off + i - 1] = s
    for j in range(n_pos):
        W_K[n_vocab + j, off + j] = s
    # head 1: a constant query (every token has exactly one token feature) and keys
    # only on delimiters
    off = 1 * d_h
    W_Q[:n_vocab, off] = s
    for tok in _DELIMITERS:
        W_K[_PATTERN_VOCAB.index(tok), off] = s
    # head 2: zero queries -> equal scores -> an even average (nothing to set)
    # head 3: the token's identity as query and key
    off = 3 * d_h
    for v in range(n_vocab):
        W_Q[v, off + v] = s
        W_K[v, off + v] = s
    return {"tokens": tokens, "X": X, "W_Q": W_Q, "W_K": W_K, "W_V": np.eye(d_model),
            "W_O": np.eye(d_model), "n_heads": n_heads,
            "head_names": list(PATTERN_HEAD_NAMES)}


def head_weights(X, W_Q, W_K, n_heads: int, causal: bool = True) -> np.ndarray:
    """The attention weights of each head of a multi-head layer.

    X: ``[N, d_model]`` (the layer's input, already normalised where the model does);
    W_Q, W_K: ``[d_model, d_model]``. Returns ``[n_heads, N, N]``: head ``c``'s
    ``softmax(Q_c K_c^T / sqrt(d_h))``, causal unless ``causal=False``.
    """
    X = np.asarray(X, dtype=float)
    Qh = ref.split_heads(X @ np.asarray(W_Q, dtype=float), n_heads)  # [h, N, d_h]
    Kh = ref.split_heads(X @ np.asarray(W_K, dtype=float), n_heads)  # [h, N, d_h]
    mask = ref.causal_mask(X.shape[0]) if causal else None
    _, weights = ref.scaled_dot_product_attention(Qh, Kh, Kh, mask)  # [h, N, N]
    return weights


def char_lm_head_weights(text: str, layer: int = 0, model=None) -> np.ndarray:
    """The attention weights ``[n_heads, N, N]`` of one layer of the pretrained model
    (:func:`helpers.pretrained.load_char_lm`) reading ``text`` (``N = len(text)``).

    ``model``: the tuple ``load_char_lm()`` returns (loaded when omitted).
    """
    from helpers.pretrained import load_char_lm

    use_one_blas_thread()
    params, n_heads, encode, _ = model if model is not None else load_char_lm()
    blocks = params["blocks"]
    if not 0 <= layer < len(blocks):
        raise ValueError(f"layer must be in 0..{len(blocks) - 1}, got {layer}")
    h = ref.embed(encode(text), params["E"], params["P"])       # [N, d]
    for block in blocks[:layer]:
        h = ref.transformer_block(h, block, n_heads)             # the residual stream
    p = blocks[layer]
    t1 = ref.layer_norm(h, p["ln1_gamma"], p["ln1_beta"])        # the block's MHA input
    return head_weights(t1, p["W_Q"], p["W_K"], n_heads)


def yours_or_reference(fn: Callable, reference: Callable | None = None) -> Callable:
    """``fn`` (the learner's function) if calling it does not raise
    ``NotImplementedError``, else ``reference`` (default: the reference implementation
    of the same name in :mod:`helpers.reference`).

    The returned function calls ``fn`` until ``fn`` says it is not implemented; from
    then on (after a one-line note) it calls the reference.
    """
    reference = getattr(ref, fn.__name__) if reference is None else reference
    state = {"use": fn}

    def call(*args, **kwargs):
        if state["use"] is fn:
            try:
                return fn(*args, **kwargs)
            except NotImplementedError:
                print(f"({fn.__name__} is not implemented yet: using the reference "
                      f"implementation for this demo)")
                state["use"] = reference
        return reference(*args, **kwargs)

    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


def random_block_params(d: int, d_ff: int, seed: int = 0, scale: float = 0.5) -> dict:
    """Parameters of one transformer block (``helpers.BLOCK_PARAM_SHAPES``), seeded.

    Weight matrices are Gaussian with standard deviation ``scale / sqrt(fan_in)``;
    layer-norm gains are near 1, shifts and biases near 0.
    """
    rng = np.random.default_rng(seed)
    sizes = {"d": d, "d_ff": d_ff}
    params = {}
    for name, shape in ref.BLOCK_PARAM_SHAPES.items():
        shape = tuple(sizes[s] for s in shape)
        if name.endswith("gamma"):
            params[name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif len(shape) == 1:
            params[name] = 0.1 * rng.standard_normal(shape)
        else:
            params[name] = scale * rng.standard_normal(shape) / np.sqrt(shape[0])
    return params


def random_lm_params(vocab_size: int, d: int = 32, n_ctx: int = 64, n_layers: int = 2,
                     d_ff: int | None = None, seed: int = 0) -> dict:
    """Seeded random parameters of a language model (the layout of
    ``helpers.language_model_forward``, with a final layer norm). Untrained: its text
    is gibberish."""
    rng = np.random.default_rng(seed)
    d_ff = 4 * d if d_ff is None else d_ff
    return {
        "E": 0.1 * rng.standard_normal((vocab_size, d)),                    # [V, d]
        "P": 0.1 * rng.standard_normal((n_ctx, d)),                         # [n_ctx, d]
        "blocks": [random_block_params(d, d_ff, seed=seed + 1 + i) for i in range(n_layers)],
        "ln_f_gamma": np.ones(d),
        "ln_f_beta": np.zeros(d),
    }


def load_demo_lm():
    """The pretrained character model, ``(params, n_heads, encode, decode)`` as
    :func:`helpers.pretrained.load_char_lm` returns it.

    If its weights file is missing, says so once and returns an untrained stand-in with
    the printable ASCII characters as vocabulary, so that a notebook still runs.
    """
    from helpers.pretrained import load_char_lm

    use_one_blas_thread()
    try:
        return load_char_lm()
    except (FileNotFoundError, ValueError) as exc:
        print(f"(the pretrained model could not be loaded: {exc}\n"
              f" an UNTRAINED model stands in for it: expect gibberish)")
    vocab = "\n" + "".join(chr(c) for c in range(32, 127))
    index = {c: i for i, c in enumerate(vocab)}
    params = random_lm_params(len(vocab), d=32, n_ctx=128, n_layers=2)

    def encode(text: str) -> np.ndarray:
        return np.array([index[c] for c in text], dtype=np.int64)

    def decode(ids) -> str:
        return "".join(vocab[int(i)] for i in ids)

    return params, 4, encode, decode


def use_one_blas_thread() -> bool:
    """Ask the OpenBLAS library inside NumPy to use a single thread; True if it could.

    The matrices of this course are small (at most a few hundred rows). For them,
    OpenBLAS's worker threads cost more than they save, and on a machine whose cores are
    busy (a shared server, a container with a CPU quota) they can make every product
    tens of times slower while the threads wait for a core. This is what
    ``OPENBLAS_NUM_THREADS=1`` does before NumPy starts, done from a running kernel. It
    calls OpenBLAS's own ``set_num_threads`` on the copy NumPy ships (in
    ``numpy.libs`` or ``numpy/.dylibs``) and changes nothing when NumPy uses another
    BLAS (e.g. Apple's Accelerate).
    """
    import ctypes
    from pathlib import Path

    root = Path(np.__file__).resolve().parent
    candidates = [*root.parent.glob("numpy.libs/*openblas*"), *root.glob(".dylibs/*openblas*")]
    symbols = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
               "openblas_set_num_threads64_", "openblas_set_num_threads")
    for path in candidates:
        try:
            lib = ctypes.CDLL(str(path))           # the copy NumPy already loaded
        except OSError:
            continue
        for symbol in symbols:
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter(1)
                return True
    return False
