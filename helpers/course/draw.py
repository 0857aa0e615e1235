"""Every random input of the exercises' cases is drawn here, and nowhere else.

A listed case asks for a generator seeded by its own number (:func:`rng`, :func:`normal`);
a case drawn from a contract gets the contract's generator
(:func:`draw_cases`, which calls :func:`value` and :func:`dims`). Both
build structured inputs with the same builders: a transformer block (:func:`block`), a
language model (:func:`lm`), an encoder layer and a small BERT (:func:`bert_layer`,
:func:`tiny_bert`), ids (:func:`ids_below`), masks (:func:`valid_mask`), text, tokens
and words (:func:`text`, :func:`tokens`, :func:`words`).

It imports nothing of the course and holds no answer: the student bundle ships it as
it is (the contracts it serves are kept there). ``tests/helpers/test_contracts.py``
checks that no module of ``helpers/exercises`` makes a generator of its own.
"""

from __future__ import annotations

import math

import numpy as np

#: Taken when this module is imported (the learner's code may patch ``np.random``).
_default_rng = np.random.default_rng


def rng(seed) -> np.random.Generator:
    """The generator of a case: ``seed`` an int, a list of ints, or None (fresh entropy);
    a generator is returned as it is."""
    return seed if isinstance(seed, np.random.Generator) else _default_rng(seed)


def normal(seed: int, shape, scale: float = 1.0, decimals: int | None = None) -> np.ndarray:
    """N(0, scale^2) of ``shape`` from generator ``seed``, rounded when ``decimals``."""
    a = rng(seed).normal(size=shape) * scale
    return np.round(a, decimals) + 0.0 if decimals is not None else a    # + 0.0: no "-0."


def valid_mask(seed: int, n_q: int, n_k: int, p: float = 0.5) -> np.ndarray:
    """A random bool mask ``[n_q, n_k]`` in which every query may attend to a key."""
    r = rng(seed)
    m = r.random((n_q, n_k)) < p
    m[np.arange(n_q), r.integers(0, n_k, size=n_q)] = True
    return m


def mha_args(seed: int, N: int, d: int, scale: float = 1.0, decimals: int | None = None):
    """``(X, W_Q, W_K, W_V, W_O)``: X [N, d] and four [d, d] weights N(0, 1/d)."""
    X = normal(seed, (N, d), scale, decimals)
    Ws = [normal(seed + 1 + i, (d, d), 1.0 / np.sqrt(d), decimals) for i in range(4)]
    return (X, *Ws)


def ffn_args(seed: int, N: int, d: int, d_ff: int, scale: float = 1.0,
             decimals: int | None = None):
    """``(X, W1, b1, W2, b2)`` of a feed-forward layer."""
    n = normal
    return (n(seed, (N, d), scale, decimals), n(seed + 1, (d, d_ff), 1.0, decimals),
            n(seed + 2, d_ff, 0.5, decimals), n(seed + 3, (d_ff, d), 1.0, decimals),
            n(seed + 4, d, 0.5, decimals))


def ids_below(dim: str):
    """``values`` for an ``Arg`` of ids: ints in ``[0, dims[dim])``, never one id along a
    whole last axis longer than 2 (no drawn case, visible or hidden, depends on the seed
    for that trait: a constant row)."""

    def draw(rng, shape, dims):
        n = int(dims[dim])
        ids = rng.integers(0, n, shape)
        if n > 1 and len(shape) and shape[-1] > 2:
            ids[..., 0] = (ids[..., -1] + 1) % n
        return np.asarray(ids)

    return draw


# -- model parameters ---------------------------------------------------------------------


def block(gen, d: int, d_ff: int) -> dict:
    """One transformer block's parameters (``gen`` a generator or a seed), in the layout
    of ``helpers.BLOCK_PARAM_SHAPES``: weights N(0, 1/fan_in), layer-norm gains near 1,
    shifts and biases near 0."""
    rng_ = rng(gen)
    s = 1.0 / math.sqrt(d)
    return {
        "ln1_gamma": 1.0 + 0.3 * rng_.normal(size=d), "ln1_beta": 0.2 * rng_.normal(size=d),
        "W_Q": rng_.normal(size=(d, d)) * s, "W_K": rng_.normal(size=(d, d)) * s,
        "W_V": rng_.normal(size=(d, d)) * s, "W_O": rng_.normal(size=(d, d)) * s,
        "ln2_gamma": 1.0 + 0.3 * rng_.normal(size=d), "ln2_beta": 0.2 * rng_.normal(size=d),
        "W1": rng_.normal(size=(d, d_ff)) * s, "b1": 0.2 * rng_.normal(size=d_ff),
        "W2": rng_.normal(size=(d_ff, d)) / math.sqrt(d_ff), "b2": 0.2 * rng_.normal(size=d),
    }


def lm(rng, V: int, d: int, n_ctx: int, blocks, ln_f: bool, e_scale: float = 1.0) -> dict:
    """A small language model's parameters (the layout ``language_model_forward``
    takes): ``E`` [V, d], ``P`` [n_ctx, d], ``blocks`` (a number of blocks drawn from
    ``rng``, or a generator per block), and with ``ln_f`` the final layer norm."""
    params = {"E": rng.normal(size=(V, d)) * e_scale, "P": rng.normal(size=(n_ctx, d)) * 0.5}
    gens = [rng] * blocks if isinstance(blocks, int) else list(blocks)
    params["blocks"] = [block(g, d, 2 * d) for g in gens]
    if ln_f:
        params["ln_f_gamma"] = 1.0 + 0.3 * rng.normal(size=d)
        params["ln_f_beta"] = 0.2 * rng.normal(size=d)
    return params


def seeded_lm(seed: int, V: int, d: int, n_ctx: int, n_blocks: int, ln_f: bool,
              e_scale: float = 1.0) -> dict:
    """A listed case's language model: :func:`lm` from generator ``seed``, block ``i``
    from generator ``seed * 100 + i + 1``."""
    return lm(rng(seed), V, d, n_ctx, [rng(seed * 100 + i + 1) for i in range(n_blocks)],
              ln_f, e_scale)


def bert_layer(rng, d: int, d_ff: int, scale: float = 1.5) -> dict:
    """One encoder layer's parameters (``helpers.bert``'s layout), activations of order 1."""
    w = lambda *s: scale * rng.normal(size=s) / np.sqrt(s[0])  # noqa: E731
    v = lambda n: 0.3 * rng.normal(size=n)  # noqa: E731
    return {"W_Q": w(d, d), "b_Q": v(d), "W_K": w(d, d), "b_K": v(d),
            "W_V": w(d, d), "b_V": v(d), "W_O": w(d, d), "b_O": v(d),
            "ln1_gamma": 1 + v(d), "ln1_beta": v(d), "W1": w(d, d_ff),
            "b1": v(d_ff), "W2": w(d_ff, d), "b2": v(d),
            "ln2_gamma": 1 + v(d), "ln2_beta": v(d)}


def tiny_bert(rng, V: int, d: int, d_ff: int, n_heads: int, n_layers: int, n_ctx: int,
              eps: float, scale: float = 1.5) -> dict:
    """A small random encoder in the layout of ``helpers.bert.load_params``."""
    return {"E": rng.normal(size=(V, d)), "P": 0.5 * rng.normal(size=(n_ctx, d)),
            "T": 0.5 * rng.normal(size=(2, d)), "ln_e_gamma": 1 + 0.2 * rng.normal(size=d),
            "ln_e_beta": 0.2 * rng.normal(size=d),
            "layers": [bert_layer(rng, d, d_ff, scale) for _ in range(n_layers)],
            "n_heads": n_heads, "eps": eps}


# -- text ---------------------------------------------------------------------------------

#: Pieces of drawn text: words, runs of spaces, tabs and newlines, punctuation, ASCII
#: digits, characters of two, three and four bytes, control tokens.
TEXT_PIECES = ("the", " cat", " sat", "Hello", " world", ",", "!", "'s", " ", "  ", "\n",
               "\t", "é", " café", "😀", "日本", "0", "7", "42", " 3", "<|endoftext|>",
               "<|im_start|>", "<|im_end|>")


def text(rng) -> str:
    """1 to 8 pieces of :data:`TEXT_PIECES`."""
    return "".join(str(p) for p in rng.choice(TEXT_PIECES, size=int(rng.integers(1, 9))))


def tokens(rng, alphabet=("a", "b", "c"), low: int = 2, high: int = 10) -> list[str]:
    """``low`` to ``high`` tokens of a small alphabet (so that pairs repeat)."""
    return [str(t) for t in rng.choice(alphabet, size=int(rng.integers(low, high + 1)))]


def words(rng) -> list[str]:
    """1 to 8 words of 1 to 6 of the letters a-d (some repeated)."""
    return ["".join(tokens(rng, ("a", "b", "c", "d"), 1, 6))
            for _ in range(int(rng.integers(1, 9)))]


# -- a contract's values ------------------------------------------------------------------


def bound(value, dims: dict):
    """An ``Arg``'s ``low`` or ``high``: a number, or an expression of the dimensions."""
    return eval(value, {}, dict(dims)) if isinstance(value, str) else value   # noqa: S307


def value(arg, rng, dims: dict, batch: tuple, dtype: str):
    """A value of ``Arg`` ``arg`` for dimensions ``dims`` and batch axes ``batch``: its
    own ``values(rng, shape, dims)`` when it has one; else bools (70 % true, the first
    of each row true), ints in ``[low, high]``, floats N(0, 1) of ``dtype``, a dimension's
    size, or a number in ``[low, high]``."""
    if arg.is_array:
        shape = []
        for t in arg.tokens:
            shape += list(batch) if t == "..." else [int(t) if t.isdigit() else dims[t]]
        shape = tuple(shape)
        if arg.values is not None:
            return np.asarray(arg.values(rng, shape, dims))
        if dtype == "bool":
            out = rng.random(shape) < 0.7
            if out.ndim:
                out[..., 0] = True
            return out
        if dtype == "int":
            lo, hi = bound(arg.low, dims), bound(arg.high, dims)
            return rng.integers(int(lo or 0), int(9 if hi is None else hi) + 1, size=shape)
        return rng.standard_normal(shape).astype(dtype)
    if isinstance(arg.shape, str):
        return int(dims[arg.shape])
    if arg.values is not None:
        return arg.values(rng, (), dims)
    if arg.shape not in (int, float, bool):
        raise ValueError(f"an Arg({arg.shape.__name__}) needs values(rng, shape, dims)")
    if arg.shape is int:
        return int(rng.integers(int(arg.low or 0), int(arg.high or 9) + 1))
    if arg.shape is bool:
        return bool(rng.integers(2))
    lo = 0.0 if arg.low is None else arg.low
    hi = lo + 1.0 if arg.high is None else arg.high
    return float(rng.uniform(lo, hi))


def dim_names(contract) -> list[str]:
    """The dimensions a contract names: its arguments' first, then those only ``sizes``
    gives (for ``values`` functions)."""
    names_ = []
    for arg in list(contract.args.values()):
        found = arg.tokens if arg.is_array else ([arg.shape] if isinstance(arg.shape, str)
                                                 else [])
        names_ += [t for t in found if t != "..." and not t.isdigit() and t not in names_]
    return names_ + [n for n in contract.sizes if n not in names_]


def dims(contract, rng, ones: bool) -> dict:
    """Sizes for every dimension of ``contract`` that satisfy its ``where``: from its
    ``sizes`` (2-5 by default); with ``ones``, as many of size 1 as fit."""
    names_ = dim_names(contract)
    for attempt in range(500):
        out = {}
        for n in names_:
            pool = contract.sizes.get(n, (2, 3, 4, 5))
            if ones and (attempt == 0 or rng.random() < 0.6):
                out[n] = 1
            else:
                out[n] = int(rng.choice(pool))
        if all(eval(c, {}, dict(out)) for c in contract.where):   # noqa: S307
            return out
    raise ValueError(f"no dimensions satisfy {contract.where}")
def draw_cases(ex, seed: int, hidden: bool = False) -> list[dict]:
    """Cases drawn from ``ex``'s contract with ``seed``: one per kind of input it allows:
    ``rank<r>`` for each number of batch axes (the rank of the first batched argument),
    ``size1`` (dimensions of size 1) (a contract with neither arrays nor dimensions, of
    strings, lists and numbers: ``draw1`` and ``draw2``, two draws of its values), ``lists`` (plain lists where array-likes are
    accepted), ``<dtype>`` for each further dtype named, ``keywords`` (every optional
    argument passed). Named ``contract_<kind>`` (hidden: ``contract_<kind>_hidden``);
    the expected outputs come from the reference."""
    import zlib


    contract = ex.contract
    if not contract.args or not contract.draw:
        return []                           # nothing to vary (wash_we()), or not drawn
    gen = rng([seed, zlib.crc32(ex.name.encode())])
    first = next((a for a in contract.args.values() if a.is_array and "..." in a.tokens),
                 next((a for a in contract.args.values() if a.is_array), None))
    base = len([t for t in first.tokens if t != "..."]) if first else 0
    if first is None and not dim_names(contract):     # no shape to vary: two draws
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
        sizes = dims(contract, gen, how.get("ones", False))
        b = how.get("batch", contract.batch[-1] if how.get("ones") else contract.batch[0])
        batch = tuple(int(gen.choice((1, 2, 3) if how.get("ones") else (2, 3)))
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
            drawn = value(arg, gen, sizes, batch, dtype)
            if how.get("lists") and arg.lists:
                drawn = drawn.tolist() if isinstance(drawn, np.ndarray) else list(drawn)
            if positional:
                args.append(drawn)
            else:
                kwargs[name] = drawn
            shape = np.shape(drawn) if arg.is_array else ()
            text = repr(drawn)
            if not arg.is_array and len(text) > 60:
                text = f"a {type(drawn).__name__}" + (
                    f" of {len(drawn)} {'entries' if isinstance(drawn, dict) else 'items'}"
                    if hasattr(drawn, "__len__") else "")
            words.append(f"{name} {list(shape)}" if arg.is_array else f"{name} = {text}")
        out.append({"name": f"contract_{kind}" + ("_hidden" if hidden else ""),
                    "description": f"drawn from the contract ({kind}): " + ", ".join(words),
                    "args": tuple(args), "kwargs": kwargs, "group": "contract",
                    "hidden": hidden, "scenario": contract.scenario})
    return out
