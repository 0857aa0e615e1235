"""The course's reference implementation: a transformer language model in NumPy.

One function per equation, in the order the course teaches them, with the notation of
the lecture slides (Jurafsky & Martin, *Speech and Language Processing*, ch. 9-10):

    dot products      a . b,  cos(a, b),  X X^T
    softmax           softmax(z)_i = exp(z_i) / sum_j exp(z_j)
    self-attention    softmax(X X^T / sqrt(d)) X
    Q, K, V           Q = X W_Q,  K = X W_K,  V = X W_V
    attention         softmax(Q K^T / sqrt(d_k) [masked]) V
    multi-head        (head_1 (+) ... (+) head_h) W_O
    block (pre-norm)  t1 = LN1(x); t2 = MHA(t1); t3 = t2 + x; t4 = LN2(t3);
                      t5 = FFN(t4); h = t5 + t3
    LM                X = E[ids] + P[:N]; blocks; logits = h E^T (tied weights)

Conventions (the exercise contract, ``docs/contract.md``):

* row vectors: a sequence is ``X`` of shape ``[N, d]``, one token per row;
* arrays are ``float64``; every function accepts array-likes (nested lists too);
* a boolean mask is ``True`` where query ``i`` *may* attend to key ``j``;
* the attention scale is ``1 / sqrt(d_k)`` with ``d_k = Q.shape[-1]``;
* layer norm uses the population variance, ``eps`` inside the square root.

Every function checks its input and raises ``ValueError`` naming the problem and the
shapes involved. Most do it at their edge, in one line: ``_inputs`` reads the exercise's
contract (``helpers/exercises/<name>.py``: each argument's shape with named dimensions;
their docstrings show it), as ``python -m autograder regenerate`` stores it in
``helpers/data/contract_edges.json``; what the contract does not state (an axis, ``eps``,
a mask's meaning) is checked after it.
On finite input none of them returns NaN or emits a NumPy warning:
softmax and cross-entropy subtract the maximum, layer norm and cosine similarity rescale
before squaring, masked scores become exact zeros instead of ``exp(-inf)``, and a
product whose true value exceeds float64 (``1e200 * 1e200``) is a ValueError saying so.

References: Vaswani et al. (2017) "Attention is all you need"; Radford et al. (2019),
GPT-2; Jay Mody's picoGPT (the style of one pure function per equation).
"""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path

import numpy as np

__all__ = [
    "dot",
    "cosine_similarity",
    "pairwise_scores",
    "softmax",
    "simple_self_attention",
    "project_qkv",
    "scaled_dot_product_attention",
    "causal_mask",
    "cross_attention",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "layer_norm",
    "feed_forward",
    "transformer_block",
    "embed",
    "lm_head",
    "language_model_forward",
    "cross_entropy",
    "generate",
    "BLOCK_PARAM_SHAPES",
]

# ---------------------------------------------------------------------------------------
# Input checking. Kept apart so that the functions below read like the equations.
# ---------------------------------------------------------------------------------------


_all = np.logical_and.reduce          # ndarray.all without its Python wrapper


def _array(x, name: str, ndim: int | None = None, min_ndim: int | None = None,
           allow_neg_inf: bool = False) -> np.ndarray:
    """``x`` as a float64 array, or a ValueError that says what is wrong with it."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers ({exc})") from None
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, but has shape {a.shape}")
    if min_ndim is not None and a.ndim < min_ndim:
        raise ValueError(f"{name} must be at least {min_ndim}-D, but has shape {a.shape}")
    if _all(np.isfinite(a), axis=None):                          # the usual case: one pass
        return a
    bad = np.isnan(a) | (np.isposinf(a) if allow_neg_inf else np.isinf(a))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} contains {a[where]} at index {where}; inputs must be finite")
    return a


def _token_ids(token_ids, vocab_size: int, name: str = "token_ids") -> np.ndarray:
    """A 1-D int array of ids in ``[0, vocab_size)``."""
    ids = np.asarray(token_ids)
    if ids.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of ints, but has shape {ids.shape}")
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        whole = np.issubdtype(ids.dtype, np.floating) and bool(
            (np.isfinite(ids) & (ids == np.floor(ids))).all())  # checked before any cast
        if not whole:
            raise ValueError(f"{name} must hold whole numbers, got dtype {ids.dtype}")
    out = (ids < 0) | (ids >= vocab_size)
    if out.any():
        bad = ids[out][0]
        shown = int(bad) if abs(bad) < 2**53 else f"{float(bad):g}"
        raise ValueError(f"token id {shown} is out of range for a vocabulary of {vocab_size}")
    return ids.astype(np.int64)


@contextlib.contextmanager
def _in_float64_range(what: str):
    """Products of finite numbers can exceed float64 (``1e200 * 1e200``): turn that into
    a ValueError naming the quantity, instead of ``inf``, NaN and a NumPy warning."""
    try:
        with np.errstate(over="raise", invalid="raise"):
            yield
    except FloatingPointError:
        raise ValueError(
            f"{what} overflows float64 for these inputs (a value would exceed "
            f"{np.finfo(np.float64).max:.3g}): rescale the inputs"
        ) from None


def _nonnegative(value, name: str) -> float:
    """``value`` as a float that is finite and >= 0, or a ValueError naming it."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (ok and np.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


#: What each exercise's contract says of its arrays, stored from the contracts by
#: ``python -m autograder regenerate`` (``helpers.exercises.edge_table``).
EDGE_TABLE = Path(__file__).resolve().parent / "data" / "contract_edges.json"


@functools.lru_cache(maxsize=None)
def _edges() -> dict:
    return json.loads(EDGE_TABLE.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _edge_spec(exercise: str, names: tuple[str, ...], shapes: tuple) -> tuple:
    """What :func:`_inputs` checks of the arguments ``names`` of ``exercise``, read once
    from its contract (as stored in ``helpers/data/contract_edges.json``): ``(name,
    shape, named axes, batched, id bound, fields)`` per argument (``fields``: a dict's
    entries, ``(key, shape, named axes, batched, optional)`` each, shape ``None`` for one
    that is not an array), the float arrays and dicts first (the ids' bound names their
    dimensions)."""

    def axes(shape):
        tokens = [t.strip() for t in shape.strip("[]").split(",") if t.strip()]
        return tuple(t for t in tokens if t != "..."), "..." in tokens

    if exercise not in _edges():
        raise LookupError(f"helpers/data/contract_edges.json has no entry for {exercise}: "
                          f"run `python -m autograder regenerate` after changing a contract")
    args = _edges()[exercise]
    spec = []
    for name in names:
        arg = args[name]
        if "fields" in arg:
            fields = tuple((k, f["shape"], *axes(f["shape"]), f["optional"])
                           if f["shape"] is not None else (k, None, (), False, f["optional"])
                           for k, f in arg["fields"].items())
            spec.append((name, "dict", (), False, None, fields))
            continue
        shape = dict(shapes).get(name, arg["shape"])
        high = arg["high"]
        if arg["ids"] and high is None:
            raise LookupError(f"the contract of {exercise} gives {name}'s token ids no "
                              f"bound (high=): the reference cannot check them")
        spec.append((name, shape, *axes(shape),
                     compile(high, f"<{exercise}: {name} bound>", "eval")
                     if high is not None else None, None))
    return tuple(sorted(spec, key=lambda row: row[4] is not None))


def _bind(name: str, shape: str, a: np.ndarray, fixed: tuple, dims: dict) -> None:
    """Bind the named axes ``fixed`` of array ``a`` (argument ``name`` of contract shape
    ``shape``) in ``dims``, or a ValueError naming both shapes where a size differs."""
    for token, size in zip(fixed, a.shape[a.ndim - len(fixed):]):
        if token.isdigit() and int(token) != size:
            raise ValueError(f"{name} has shape {a.shape}; it must be {shape}")
        seen, where, where_shape, seen_shape = dims.setdefault(
            token, (size, name, shape, a.shape))
        if seen != size:
            raise ValueError(
                f"{name} has shape {a.shape} but {where} has shape {seen_shape}: "
                f"{token} = {size} in {name}, {seen} in {where} ({name}: {shape}, "
                f"{where}: {where_shape})")


def _checked_dict(name: str, value, fields: tuple, dims: dict) -> dict:
    """``value``, a dict holding the array entries ``fields``, with those as float64
    arrays whose named axes are bound in ``dims`` (its other entries as they are)."""
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a dict, got {type(value).__name__}")
    missing = [k for k, *_, optional in fields if k not in value and not optional]
    if missing:
        raise ValueError(f"{name} is missing {', '.join(missing)}")
    out = dict(value)
    for key, shape, fixed, batched, _ in fields:
        if key in value and shape is not None:
            ranks = {"min_ndim": len(fixed)} if batched else {"ndim": len(fixed)}
            out[key] = _array(value[key], key, **ranks)
            _bind(f"{name}[{key!r}]", shape, out[key], fixed, dims)
    return out


def _inputs(exercise: str, neg_inf: tuple[str, ...] = (), shapes: dict | None = None,
            **values):
    """The array arguments ``values`` of ``exercise``, checked at the edge against the
    exercise's contract (``helpers/exercises/<exercise>.py``, read on first use):
    float arrays as float64 (finite; ``-inf`` too for the names in ``neg_inf``), int
    arrays as token ids below their stated bound, each of the rank its shape states
    (``...``: any number of leading axes, at least the named ones) and every named
    dimension the same size wherever it appears. ``shapes``: where the reference serves
    more than the exercise asks (a batch its callers pass), the shape it accepts instead
    (``{"X": "[..., N, d]"}`` for the contract's ``[N, d]``). Returns them in the order
    given (one value alone when one is given); a ValueError names the problem and the
    shapes."""
    spec = _edge_spec(exercise, tuple(values), tuple(sorted((shapes or {}).items())))
    dims: dict[str, tuple[int, str, str, tuple]] = {}   # dim -> (size, arg, shape, its shape)
    out = dict(values)
    for name, shape, fixed, batched, high, fields in spec:   # the ids last
        if fields is not None:
            out[name] = _checked_dict(name, values[name], fields, dims)
            continue
        if high is None:
            ranks = {"min_ndim": len(fixed)} if batched else {"ndim": len(fixed)}
            a = _array(values[name], name, allow_neg_inf=name in neg_inf, **ranks)
        else:
            vocab = eval(high, {}, {d: s[0] for d, s in dims.items()}) + 1   # noqa: S307
            a = _token_ids(values[name], vocab, name)
        _bind(name, shape, a, fixed, dims)
        out[name] = a
    return tuple(out.values()) if len(out) > 1 else next(iter(out.values()))


# ---------------------------------------------------------------------------------------
# 1. Dot products and similarity
# ---------------------------------------------------------------------------------------


def dot(a, b) -> float:
    """Dot product of two vectors: ``a . b = sum_i a_i b_i``.

    a, b: ``[n]``. Returns a Python float.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``a``: an array ``[n]`` (or nested lists)
    - ``b``: an array ``[n]`` (or nested lists)
    - returns a float
    """
    a, b = _inputs("dot", a=a, b=b)
    with _in_float64_range("a . b"):
        return float(a @ b)


def cosine_similarity(a, b) -> float:
    """Cosine of the angle between two vectors: ``a . b / (|a| |b|)``, in ``[-1, 1]``.

    a, b: ``[n]``, neither all zeros. Returns a Python float.
    Each vector is first divided by its largest absolute entry (the cosine does not
    change), so that squaring cannot overflow or underflow.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``a``: an array ``[n]`` (or nested lists)
    - ``b``: an array ``[n]`` (or nested lists)
    - returns a float from -1.0 to 1.0
    """
    a, b = _inputs("cosine_similarity", a=a, b=b)
    for name, v in (("a", a), ("b", b)):
        if not v.any():
            raise ValueError(f"cosine similarity is undefined: {name} is the zero vector")
    a = a / np.abs(a).max()                                      # [n], max |a_i| = 1
    b = b / np.abs(b).max()                                      # [n]
    cos = (a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))      # scalar
    return float(np.clip(cos, -1.0, 1.0))


def pairwise_scores(X) -> np.ndarray:
    """All dot products between the rows of ``X``: ``S = X X^T``, ``S[i, j] = x_i . x_j``.

    X: ``[N, d]``. Returns ``[N, N]``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``X``: an array ``[N, d]`` (or nested lists)
    - returns an array ``[N, N]``
    """
    X = _inputs("pairwise_scores", X=X)
    with _in_float64_range("X X^T"):
        return X @ X.T                                           # [N, d] @ [d, N] -> [N, N]


# ---------------------------------------------------------------------------------------
# 2. Softmax
# ---------------------------------------------------------------------------------------


def softmax(z, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``: ``softmax(z)_i = exp(z_i) / sum_j exp(z_j)``.

    z: any shape. Returns the same shape; entries in ``[0, 1]`` that sum to 1 along
    ``axis``. Stable for any finite input: ``softmax(z) = softmax(z - max(z))``, so the
    largest exponent is ``exp(0) = 1``. Entries of ``-inf`` get probability exactly 0
    (that is how masked scores arrive); a slice that is all ``-inf`` is an error.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``z``: an array ``[..., n]`` (or nested lists)
    - ``axis`` (optional): an int from -3 to 2
    - returns an array ``[..., n]``
    """
    z = _inputs("softmax", neg_inf=("z",), z=z)
    if not -z.ndim <= axis < z.ndim:
        raise ValueError(f"axis {axis} is out of range for z of shape {z.shape}")
    if z.shape[axis] == 0:
        raise ValueError(f"softmax over an empty axis {axis} (z has shape {z.shape})")
    z_max = z.max(axis=axis, keepdims=True)                      # [..., 1, ...]
    if np.isneginf(z_max).any():
        raise ValueError("softmax is undefined where every entry along the axis is -inf")
    with np.errstate(over="ignore"):                             # a gap wider than the
        shifted = z - z_max                                      # float range -> -inf
    e = np.exp(shifted)                                          # same shape, in [0, 1]
    return e / e.sum(axis=axis, keepdims=True)                   # sum >= 1: no 0/0


# ---------------------------------------------------------------------------------------
# 3. Simple self-attention (no weights): the slides' "bird's-eye view"
# ---------------------------------------------------------------------------------------


def simple_self_attention(X) -> np.ndarray:
    """Self-attention with no learned weights: ``softmax(X X^T / sqrt(d)) X``.

    X: ``[N, d]``. Returns ``[N, d]``: row ``i`` is the average of all rows of ``X``,
    weighted by how similar they are to ``x_i``. No mask: every token sees every token.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``X``: an array ``[N, d]`` (or nested lists)
    - returns an array ``[N, d]``
    """
    X = _inputs("simple_self_attention", X=X)
    d = X.shape[-1]
    with _in_float64_range("X X^T"):
        scores = X @ X.T / np.sqrt(d)                            # [N, N]
    weights = softmax(scores, axis=-1)                           # [N, N], rows sum to 1
    with _in_float64_range("the weighted sum of X"):
        return weights @ X                                       # [N, N] @ [N, d] -> [N, d]


# ---------------------------------------------------------------------------------------
# 4. Queries, keys, values and scaled dot-product attention
# ---------------------------------------------------------------------------------------


def project_qkv(X, W_Q, W_K, W_V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries, keys and values of a sequence: ``Q = X W_Q, K = X W_K, V = X W_V``.

    X: ``[N, d]``; W_Q, W_K: ``[d, d_k]``; W_V: ``[d, d_v]``.
    Returns ``(Q [N, d_k], K [N, d_k], V [N, d_v])``.



    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``X``: an array ``[N, d]`` (or nested lists)
    - ``W_Q``: an array ``[d, d_k]`` (or nested lists)
    - ``W_K``: an array ``[d, d_k]`` (or nested lists)
    - ``W_V``: an array ``[d, d_v]`` (or nested lists)
    - returns a tuple of 3: an array ``[N, d_k]``; an array ``[N, d_k]``; an array ``[N, d_v]``
    """
    X, W_Q, W_K, W_V = _inputs("project_qkv", shapes={"X": "[..., N, d]"},
                               X=X, W_Q=W_Q, W_K=W_K, W_V=W_V)
    with _in_float64_range("the projections X W_Q, X W_K, X W_V"):
        return X @ W_Q, X @ W_K, X @ W_V                         # [N, d_k], [N, d_k], [N, d_v]


def scaled_dot_product_attention(Q, K, V, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, optionally masked.

    Q: ``[..., N_q, d_k]``, K: ``[..., N_k, d_k]``, V: ``[..., N_k, d_v]``; leading batch
    (or head) dimensions broadcast. mask: bool, broadcastable to ``[..., N_q, N_k]``,
    ``True`` where query ``i`` may attend to key ``j``; the weights of masked pairs are
    exactly 0 and every query must be allowed at least one key.

    Returns ``(output [..., N_q, d_v], weights [..., N_q, N_k])``; each row of
    ``weights`` sums to 1.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``Q``: an array ``[..., N_q, d_k]`` (or nested lists)
    - ``K``: an array ``[..., N_k, d_k]`` (or nested lists)
    - ``V``: an array ``[..., N_k, d_v]`` (or nested lists)
    - ``mask`` (optional): an array ``[..., N_q, N_k]`` of bool (or nested lists)
    - returns a tuple of 2: an array ``[..., N_q, d_v]``; an array ``[..., N_q, N_k]``
    """
    Q, K, V = _inputs("scaled_dot_product_attention", Q=Q, K=K, V=V)
    d_k = Q.shape[-1]
    with _in_float64_range("Q K^T"):
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)       # [..., N_q, N_k]
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            if not np.isin(mask, (0, 1)).all():
                raise ValueError("mask must be boolean (True = may attend), or 0/1")
            mask = mask.astype(bool)
        try:
            mask = np.broadcast_to(mask, scores.shape)           # [..., N_q, N_k]
        except ValueError:
            raise ValueError(
                f"mask shape {mask.shape} does not match scores {scores.shape}"
            ) from None
        empty = ~mask.any(axis=-1)                               # [..., N_q]
        if empty.any():
            row = tuple(int(i) for i in np.argwhere(empty)[0])
            raise ValueError(f"mask lets query {row} attend to no key at all")
        scores = np.where(mask, scores, -np.inf)                 # masked -> -inf
    weights = softmax(scores, axis=-1)                           # [..., N_q, N_k]
    with _in_float64_range("the weighted sum of V"):
        return weights @ V, weights                              # [..., N_q, d_v]


# ---------------------------------------------------------------------------------------
# 5. Masking and cross-attention
# ---------------------------------------------------------------------------------------


def causal_mask(n: int) -> np.ndarray:
    """Left-to-right mask for a decoder: ``mask[i, j] = (j <= i)``.

    Returns bool ``[n, n]``, lower-triangular: query ``i`` may attend to itself and to
    earlier keys, never to later ones.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    return np.tril(np.ones((n, n), dtype=bool))                  # [n, n]


def cross_attention(X_dec, H_enc, W_Q, W_K, W_V) -> np.ndarray:
    """Encoder-decoder attention: queries from the decoder, keys and values from the encoder.

    ``Q = X_dec W_Q``, ``K = H_enc W_K``, ``V = H_enc W_V``,
    ``output = softmax(Q K^T / sqrt(d_k)) V``; no mask (the encoder's output is complete).

    X_dec: ``[N_dec, d]``, H_enc: ``[N_enc, d_enc]``, W_Q: ``[d, d_k]``,
    W_K: ``[d_enc, d_k]``, W_V: ``[d_enc, d_v]``. Returns ``[N_dec, d_v]``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``X_dec``: an array ``[N_dec, d_dec]`` (or nested lists)
    - ``H_enc``: an array ``[N_enc, d_enc]`` (or nested lists)
    - ``W_Q``: an array ``[d_dec, d_k]`` (or nested lists)
    - ``W_K``: an array ``[d_enc, d_k]`` (or nested lists)
    - ``W_V``: an array ``[d_enc, d_v]`` (or nested lists)
    - returns an array ``[N_dec, d_v]``
    """
    X_dec, H_enc, W_Q, W_K, W_V = _inputs("cross_attention", X_dec=X_dec, H_enc=H_enc,
                                          W_Q=W_Q, W_K=W_K, W_V=W_V)
    with _in_float64_range("the projections X_dec W_Q, H_enc W_K, H_enc W_V"):
        Q = X_dec @ W_Q                                          # [N_dec, d_k]
        K = H_enc @ W_K                                          # [N_enc, d_k]
        V = H_enc @ W_V                                          # [N_enc, d_v]
    output, _ = scaled_dot_product_attention(Q, K, V)            # [N_dec, d_v]
    return output


# ---------------------------------------------------------------------------------------
# 6. Multi-head attention
# ---------------------------------------------------------------------------------------


def split_heads(X, n_heads: int) -> np.ndarray:
    """Split the columns of ``X`` into ``n_heads`` heads of width ``d_h = d / n_heads``.

    X: ``[..., N, d]``. Returns ``[..., n_heads, N, d_h]``; head ``c`` holds columns
    ``c*d_h : (c+1)*d_h``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``X``: an array ``[N, d]`` (or nested lists)
    - ``n_heads``: an int >= 1, the size ``n_heads`` of the shapes
    - returns an array ``[n_heads, N, d_h]``
    - where ``d % n_heads == 0``
    """
    X = _inputs("split_heads", shapes={"X": "[..., N, d]"}, X=X)
    d = X.shape[-1]
    _check_heads(n_heads, d)
    d_h = d // n_heads
    H = X.reshape(*X.shape[:-1], n_heads, d_h)                   # [..., N, n_heads, d_h]
    return np.swapaxes(H, -2, -3)                                # [..., n_heads, N, d_h]


def merge_heads(H) -> np.ndarray:
    """Concatenate heads side by side: the inverse of :func:`split_heads`.

    H: ``[..., n_heads, N, d_h]``. Returns ``[..., N, n_heads * d_h]``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``H``: an array ``[n_heads, N, d_h]`` (or nested lists)
    - returns an array ``[N, d]``
    """
    H = _inputs("merge_heads", shapes={"H": "[..., n_heads, N, d_h]"}, H=H)
    X = np.swapaxes(H, -2, -3)                                   # [..., N, n_heads, d_h]
    return X.reshape(*X.shape[:-2], X.shape[-2] * X.shape[-1])   # [..., N, n_heads*d_h]


def _check_heads(n_heads, d_model: int) -> None:
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads: int, causal: bool = True) -> np.ndarray:
    """Multi-head self-attention: ``MHA(X) = (head_1 (+) ... (+) head_h) W_O``.

    ``head_c = Attention(X W_Q^c, X W_K^c, X W_V^c)`` where ``W_*^c`` is column block
    ``c`` of ``W_*`` (width ``d_h = d_model / n_heads``), scaled by ``1 / sqrt(d_h)``,
    and causal (query ``i`` sees keys ``j <= i``) unless ``causal=False``.

    X: ``[..., N, d_model]``; W_Q, W_K, W_V, W_O: ``[d_model, d_model]``.
    Returns ``[..., N, d_model]``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``X``: an array ``[N, d]`` (or nested lists)
    - ``W_Q``: an array ``[d, d]`` (or nested lists)
    - ``W_K``: an array ``[d, d]`` (or nested lists)
    - ``W_V``: an array ``[d, d]`` (or nested lists)
    - ``W_O``: an array ``[d, d]`` (or nested lists)
    - ``n_heads``: an int >= 1
    - ``causal`` (optional): a bool
    - returns an array ``[N, d]``
    - where ``d % n_heads == 0``
    """
    X, W_Q, W_K, W_V, W_O = _inputs("multi_head_attention", shapes={"X": "[..., N, d]"},
                                    X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)
    _check_heads(n_heads, X.shape[-1])
    if X.shape[-2] == 0:
        raise ValueError(f"X has shape {X.shape}: attention needs at least one token (N >= 1)")
    Q, K, V = project_qkv(X, W_Q, W_K, W_V)                      # each [..., N, d_model]
    Qh = split_heads(Q, n_heads)                                 # [..., h, N, d_h]
    Kh = split_heads(K, n_heads)                                 # [..., h, N, d_h]
    Vh = split_heads(V, n_heads)                                 # [..., h, N, d_h]
    mask = causal_mask(X.shape[-2]) if causal else None          # [N, N] or None
    heads, _ = scaled_dot_product_attention(Qh, Kh, Vh, mask)    # [..., h, N, d_h]
    with _in_float64_range("the heads times W_O"):
        return merge_heads(heads) @ W_O                          # [..., N, d_model]


# ---------------------------------------------------------------------------------------
# 7. The transformer block
# ---------------------------------------------------------------------------------------


def layer_norm(x, gamma, beta, eps: float = 1e-5) -> np.ndarray:
    """Layer norm over the last axis: ``gamma * (x - mu) / sqrt(sigma^2 + eps) + beta``.

    ``mu`` and ``sigma^2`` are the mean and the *population* variance (divide by ``d``)
    of each vector. x: ``[..., d]``; gamma, beta: ``[d]``. Returns ``[..., d]``.
    Each row is first scaled by a power of two above its largest entry (exact), then
    divided by its largest deviation from the mean (and ``eps`` by the square of both
    scales). That changes nothing mathematically but keeps every square finite and
    nonzero, for rows near 1e300 as well as rows near 1e-300.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``x``: an array ``[..., d]`` (or nested lists)
    - ``gamma``: an array ``[d]`` (or nested lists)
    - ``beta``: an array ``[d]`` (or nested lists)
    - ``eps`` (optional): a float from 0.0 to 1.0
    - returns an array ``[..., d]``
    """
    x, gamma, beta = _inputs("layer_norm", x=x, gamma=gamma, beta=beta)
    eps = _nonnegative(eps, "eps")
    _, e = np.frexp(np.abs(x).max(axis=-1, keepdims=True))       # [..., 1], |x| < 2**e
    xs = np.ldexp(x, -e)                                         # [..., d], |xs| < 1, exact
    mu = xs.mean(axis=-1, keepdims=True)                         # [..., 1]
    dev = xs - mu                                                # [..., d], |dev| < 2
    s = np.abs(dev).max(axis=-1, keepdims=True)                  # [..., 1], scale
    s = np.where(s > 0, s, 1.0)                                  # constant rows: no 0/0
    u = dev / s                                                  # [..., d], |u| <= 1
    var_u = (u * u).mean(axis=-1, keepdims=True)                 # [..., 1] = var / r^2
    with np.errstate(under="ignore", over="ignore"):             # r = s * 2**e, true scale
        eps_u = np.ldexp(eps / s / s, -2 * e)                    # [..., 1] = eps / r^2
    denom = np.sqrt(var_u + eps_u)                               # [..., 1], 0 iff u == 0
    if (denom == 0).any():
        if eps == 0:
            raise ValueError("layer norm of a constant vector with eps=0 divides by zero")
        denom = np.where(denom > 0, denom, 1.0)                  # constant rows -> beta
    y = u / denom                                                # [..., d], normalized
    if eps > 0 and (eps_u > 1).any():
        # Rows whose deviations are far below sqrt(eps), where eps_u may have overflowed:
        # in true units, y = (u r) / sqrt(var_u r^2 + eps), and r^2 < eps cannot overflow.
        e_small = np.where(eps_u > 1, e, 0)                      # [..., 1]
        with np.errstate(under="ignore"):
            y_small = (np.ldexp(u * s, e_small)                  # [..., d]
                       / np.sqrt(eps + np.ldexp(var_u * s * s, 2 * e_small)))
        y = np.where(eps_u > 1, y_small, y)                      # [..., d]
    return gamma * y + beta                                      # [..., d]


def feed_forward(x, W1, b1, W2, b2) -> np.ndarray:
    """Position-wise feed-forward network: ``FFN(x) = ReLU(x W1 + b1) W2 + b2``.

    x: ``[N, d]``; W1: ``[d, d_ff]``; b1: ``[d_ff]``; W2: ``[d_ff, d]``; b2: ``[d]``.
    Returns ``[N, d]``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``x``: an array ``[..., N, d]`` (or nested lists)
    - ``W1``: an array ``[d, d_ff]`` (or nested lists)
    - ``b1``: an array ``[d_ff]`` (or nested lists)
    - ``W2``: an array ``[d_ff, d]`` (or nested lists)
    - ``b2``: an array ``[d]`` (or nested lists)
    - returns an array ``[..., N, d]``
    """
    x, W1, b1, W2, b2 = _inputs("feed_forward", shapes={"x": "[..., d]"},
                                x=x, W1=W1, b1=b1, W2=W2, b2=b2)
    with _in_float64_range("x W1 + b1"):
        hidden = np.maximum(0.0, x @ W1 + b1)                    # [N, d_ff], ReLU
    with _in_float64_range("ReLU(x W1 + b1) W2 + b2"):
        return hidden @ W2 + b2                                  # [N, d]


#: The parameters of one transformer block, as shapes in terms of ``d`` and ``d_ff``.
BLOCK_PARAM_SHAPES = {
    "ln1_gamma": ("d",), "ln1_beta": ("d",),
    "W_Q": ("d", "d"), "W_K": ("d", "d"), "W_V": ("d", "d"), "W_O": ("d", "d"),
    "ln2_gamma": ("d",), "ln2_beta": ("d",),
    "W1": ("d", "d_ff"), "b1": ("d_ff",), "W2": ("d_ff", "d"), "b2": ("d",),
}


def _check_params(params, required, what: str) -> None:
    if not isinstance(params, dict):
        raise ValueError(f"{what} must be a dict, got {type(params).__name__}")
    missing = [k for k in required if k not in params]
    if missing:
        raise ValueError(f"{what} is missing {', '.join(missing)}")


def transformer_block(x, params, n_heads: int, causal: bool = True) -> np.ndarray:
    """One pre-norm transformer block, exactly the slides' equations:

        t1 = LayerNorm1(x)
        t2 = MultiHeadAttention(t1)
        t3 = t2 + x                 (residual)
        t4 = LayerNorm2(t3)
        t5 = FFN(t4)
        h  = t5 + t3                (residual)

    x: ``[N, d]``; params: dict with ``ln1_gamma, ln1_beta, W_Q, W_K, W_V, W_O,
    ln2_gamma, ln2_beta, W1, b1, W2, b2`` (shapes in ``BLOCK_PARAM_SHAPES``).
    Returns ``h``, ``[N, d]``.



    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``x``: an array ``[N, d]`` (or nested lists)
    - ``params``: a ``dict`` holding ``ln1_gamma`` ``[d]``, ``ln1_beta`` ``[d]``, ``W_Q`` ``[d,
      d]``, ``W_K`` ``[d, d]``, ``W_V`` ``[d, d]``, ``W_O`` ``[d, d]``, ``ln2_gamma`` ``[d]``,
      ``ln2_beta`` ``[d]``, ``W1`` ``[d, d_ff]``, ``b1`` ``[d_ff]``, ``W2`` ``[d_ff, d]``,
      ``b2`` ``[d]``
    - ``n_heads``: an int >= 1
    - ``causal`` (optional): a bool
    - returns an array ``[N, d]``
    - where ``d % n_heads == 0``
    """
    x, p = _inputs("transformer_block", shapes={"x": "[..., N, d]"}, x=x, params=params)
    t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])            # [N, d]
    t2 = multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"],
                              n_heads, causal=causal)            # [N, d]
    with _in_float64_range("the residual t3 = t2 + x"):
        t3 = t2 + x                                              # [N, d]
    t4 = layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])           # [N, d]
    t5 = feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"])    # [N, d]
    with _in_float64_range("the residual h = t5 + t3"):
        return t5 + t3                                           # [N, d]


# ---------------------------------------------------------------------------------------
# 8. Embeddings and the language-model head
# ---------------------------------------------------------------------------------------


def embed(token_ids, E, P) -> np.ndarray:
    """Token plus position embeddings: ``X = E[ids] + P[:N]``.

    token_ids: ``[N]`` ints in ``[0, V)``; E: ``[V, d]``; P: ``[n_ctx, d]`` with
    ``N <= n_ctx``. Returns ``[N, d]``: row ``i`` is ``E[ids[i]] + P[i]``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``token_ids``: an array ``[N]`` of int (or nested lists), entries from 0 to V - 1
    - ``E``: an array ``[V, d]`` (or nested lists)
    - ``P``: an array ``[n_ctx, d]`` (or nested lists)
    - returns an array ``[N, d]``
    - where ``N <= n_ctx``
    """
    ids, E, P = _inputs("embed", token_ids=token_ids, E=E, P=P)  # ids: [N] in [0, V)
    if len(ids) > P.shape[0]:
        raise ValueError(
            f"a sequence of {len(ids)} tokens is longer than the context n_ctx={P.shape[0]}"
        )
    with _in_float64_range("E[ids] + P"):
        return E[ids] + P[: len(ids)]                            # [N, d]


def lm_head(h, E) -> np.ndarray:
    """Unembedding with tied weights: ``logits = h E^T``.

    h: ``[N, d]``; E: ``[V, d]`` (the token embedding matrix). Returns ``[N, V]``:
    ``logits[i, v]`` is the dot product of position ``i``'s vector with token ``v``'s
    embedding.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``h``: an array ``[N, d]`` (or nested lists)
    - ``E``: an array ``[V, d]`` (or nested lists)
    - returns an array ``[N, V]``
    """
    h, E = _inputs("lm_head", h=h, E=E)
    with _in_float64_range("h E^T"):
        return h @ E.T                                           # [N, d] @ [d, V] -> [N, V]


def language_model_forward(token_ids, params, n_heads: int) -> np.ndarray:
    """A decoder-only transformer language model, token ids to next-token logits.

        X = E[ids] + P[:N]
        h = block_L( ... block_1(X))          (all causal)
        h = LayerNorm_f(h)                    (if ln_f_gamma / ln_f_beta are given)
        logits = h E^T

    token_ids: ``[N]``; params: dict with ``E [V, d]``, ``P [n_ctx, d]``, ``blocks``
    (a list of block parameter dicts, see :func:`transformer_block`) and optionally
    ``ln_f_gamma, ln_f_beta [d]``. Returns logits ``[N, V]``: row ``i`` scores the token
    that follows ``token_ids[: i + 1]``.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``token_ids``: an array ``[N]`` of int (or nested lists), entries from 0 to V - 1
    - ``params``: a ``dict`` holding ``E`` ``[V, d]``, ``P`` ``[n_ctx, d]``, ``blocks`` (a
      ``list``, each item a ``dict`` holding ``ln1_gamma`` ``[d]``, ``ln1_beta`` ``[d]``,
      ``W_Q`` ``[d, d]``, ``W_K`` ``[d, d]``, ``W_V`` ``[d, d]``, ``W_O`` ``[d, d]``,
      ``ln2_gamma`` ``[d]``, ``ln2_beta`` ``[d]``, ``W1`` ``[d, d_ff]``, ``b1`` ``[d_ff]``,
      ``W2`` ``[d_ff, d]``, ``b2`` ``[d]``), ``ln_f_gamma`` ``[d]`` (optional), ``ln_f_beta``
      ``[d]`` (optional)
    - ``n_heads``: an int >= 1
    - returns an array ``[N, V]``
    - where ``d % n_heads == 0``, ``N <= n_ctx``
    """
    token_ids, params = _inputs("language_model_forward", token_ids=token_ids, params=params)
    if not isinstance(params["blocks"], (list, tuple)):
        raise ValueError(
            f"params['blocks'] must be a list of block parameter dicts, "
            f"got {type(params['blocks']).__name__}"
        )
    h = embed(token_ids, params["E"], params["P"])               # [N, d]
    if len(h) == 0:
        raise ValueError("token_ids is empty: the model needs at least one token")
    for block in params["blocks"]:
        h = transformer_block(h, block, n_heads, causal=True)    # [N, d]
    if "ln_f_gamma" in params or "ln_f_beta" in params:
        _check_params(params, ("ln_f_gamma", "ln_f_beta"), "params")
        h = layer_norm(h, params["ln_f_gamma"], params["ln_f_beta"])  # [N, d]
    return lm_head(h, params["E"])                               # [N, V]


def cross_entropy(logits, targets) -> float:
    """Mean negative log-likelihood of the targets:
    ``mean_i [ -log softmax(logits[i])[targets[i]] ]``.

    ``-log softmax(z)[t] = logsumexp(z) - z[t] = log sum exp(z - m) - (z[t] - m)`` with
    ``m = max(z)``: stable for any finite logits, and ``m`` cancels exactly instead of
    being added and subtracted (``1e300 + log 2 - 1e300`` would give 0, not ``log 2``).
    logits: ``[N, V]``; targets: ``[N]`` ints in ``[0, V)``. Returns a float (nats).
    ``exp(cross_entropy)`` is the perplexity.

    Inputs and output (the exercise's contract; its arrays are checked at the edge):

    - ``logits``: an array ``[N, V]`` (or nested lists)
    - ``targets``: an array ``[N]`` of int (or nested lists), entries from 0 to V - 1
    - returns a float
    """
    logits, targets = _inputs("cross_entropy", logits=logits, targets=targets)
    N = len(logits)
    if N == 0:
        raise ValueError("cross-entropy of zero predictions is undefined")
    m = logits.max(axis=-1, keepdims=True)                       # [N, 1]
    with np.errstate(over="ignore"):                             # gaps beyond the float
        shifted = logits - m                                     # range -> -inf: [N, V]
        nll = (np.log(np.exp(shifted).sum(axis=-1))              # logsumexp(z) - m
               - shifted[np.arange(N), targets])                 # - (z_t - m): [N], >= 0
    return float(np.sum(nll / N))                                # mean; no overflow in sum


def generate(token_ids, params, n_heads: int, n_new: int, temperature: float = 0.0,
             rng=None) -> np.ndarray:
    """Extend a prompt by ``n_new`` tokens, one at a time (autoregressive decoding).

    At each step the model reads the last ``n_ctx`` tokens and scores the next one.
    ``temperature == 0``: take the argmax (greedy). Otherwise sample from
    ``softmax(logits / temperature)`` with ``rng``, a ``numpy.random.Generator``
    (a fresh unseeded one when ``None``).

    Returns a 1-D int array: the prompt followed by the ``n_new`` new ids.
    """
    _check_params(params, ("E", "P", "blocks"), "params")
    V = _array(params["E"], "E", ndim=2).shape[0]
    n_ctx = _array(params["P"], "P", ndim=2).shape[0]
    ids = _token_ids(token_ids, V)                               # [N]
    if len(ids) == 0:
        raise ValueError("generate needs a prompt of at least one token")
    if isinstance(n_new, bool) or not isinstance(n_new, (int, np.integer)) or n_new < 0:
        raise ValueError(f"n_new must be an int >= 0, got {n_new!r}")
    temperature = _nonnegative(temperature, "temperature")
    if temperature > 0 and rng is None:
        rng = np.random.default_rng()
    if temperature > 0 and not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator, e.g. np.random.default_rng(0); "
            f"got {type(rng).__name__}"
        )
    for _ in range(n_new):
        logits = language_model_forward(ids[-n_ctx:], params, n_heads)[-1]  # [V]
        if temperature == 0:
            next_id = int(np.argmax(logits))
        else:
            with np.errstate(over="ignore"):                     # tiny T: -> -inf, p=0
                scaled = (logits - logits.max()) / temperature   # [V], <= 0
            probs = softmax(scaled)                              # [V]
            next_id = int(rng.choice(V, p=probs))
        ids = np.append(ids, next_id)                            # [N + 1]
    return ids
