"""Wrong input raises ``ValueError`` with a message that names the problem and the shapes.

Plus: every contract function accepts nested lists as well as arrays. Warnings are errors
here: bad input must be refused before NumPy warns about it (e.g. casting NaN to int).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import helpers
from make_torch_reference import random_block_params, random_lm_params

RNG = np.random.default_rng(0)
X48 = RNG.normal(size=(4, 8))
W88 = [RNG.normal(size=(8, 8)) for _ in range(4)]
BLOCK = random_block_params(np.random.default_rng(1), 8, 12)
LM = random_lm_params(np.random.default_rng(2), V=11, n_ctx=8, d=8, d_ff=12, n_blocks=1)


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def without(params: dict, *keys: str) -> dict:
    return {k: v for k, v in params.items() if k not in keys}


def raises(message: str):
    """pytest.raises(ValueError) whose message contains ``message`` literally."""
    return pytest.raises(ValueError, match=re.escape(message))


# The messages the issue asks for, word for word ----------------------------------------------
def test_key_width_mismatch():
    with raises("K has shape (4, 3) but Q has shape (4, 4): d_k = 3 in K, 4 in Q"):
        helpers.scaled_dot_product_attention(np.ones((4, 4)), np.ones((4, 3)), np.ones((4, 2)))


def test_mask_shape_mismatch():
    with raises("mask has shape (4, 5) but K has shape (4, 2): N_k = 5 in mask, 4 in K"):
        helpers.scaled_dot_product_attention(np.ones((4, 2)), np.ones((4, 2)), np.ones((4, 2)),
                                             mask=np.ones((4, 5), dtype=bool))


def test_heads_must_divide_d_model():
    with raises("d % n_heads == 0 does not hold (d = 8, n_heads = 3)"):
        helpers.split_heads(X48, 3)
    with raises("d % n_heads == 0 does not hold (d = 8, n_heads = 3)"):
        helpers.multi_head_attention(X48, *W88, n_heads=3)
    with raises("d % n_heads == 0 does not hold (d = 8, n_heads = 3)"):
        helpers.transformer_block(X48, BLOCK, 3)


def test_token_id_out_of_range():
    in_range = "outside [0, 10] (the contract says 0 <= token_ids <= V - 1)"
    with raises(f"token_ids holds 12, {in_range}"):
        helpers.embed([1, 12, 3], LM["E"], LM["P"])
    with raises(f"token_ids holds 12, {in_range}"):
        helpers.language_model_forward([1, 12, 3], LM, 2)
    with raises(f"token_ids holds 12, {in_range}"):
        helpers.generate([12], LM, 2, 1)
    with raises(f"token_ids holds -1, {in_range}"):
        helpers.embed([-1], LM["E"], LM["P"])
    with raises(f"token_ids holds 12, {in_range}"):
        helpers.embed([1.0, 12.0], LM["E"], LM["P"])              # whole floats are ids
    with raises("token_ids holds 1e+300, far outside any range of ids"):
        helpers.embed([1e300], LM["E"], LM["P"])                  # no cast warning first
    with raises("targets must hold whole numbers, got dtype float64"):
        helpers.cross_entropy([[0.0, 1.0]], [np.nan])
    np.testing.assert_array_equal(helpers.embed([1.0, 2.0], LM["E"], LM["P"]),
                                  helpers.embed([1, 2], LM["E"], LM["P"]))


# Non-finite input ------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: helpers.softmax([1.0, np.nan]), "z contains nan at index (1,); inputs must be finite"),
    (lambda: helpers.softmax([np.inf, 1.0]), "z contains inf at index (0,)"),
    (lambda: helpers.softmax([-np.inf, -np.inf]), "every entry along the axis is -inf"),
    (lambda: helpers.dot([1, np.nan], [1, 2]), "a contains nan at index (1,)"),
    (lambda: helpers.layer_norm([[1, 2], [3, np.inf]], [1, 1], [0, 0]),
     "x contains inf at index (1, 1)"),
    (lambda: helpers.scaled_dot_product_attention([[np.nan]], [[1.0]], [[1.0]]),
     "Q contains nan at index (0, 0)"),
    (lambda: helpers.multi_head_attention(np.full((2, 8), np.nan), *W88, 2),
     "X contains nan at index (0, 0)"),
    (lambda: helpers.cross_entropy([[0.0, np.nan]], [0]), "logits contains nan at index (0, 1)"),
])
def test_non_finite_input_is_named(call, message):
    with raises(message):
        call()


# Wrong ranks and shapes --------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: helpers.dot([[1, 2]], [1, 2]), "a must be 1-D, but has shape (1, 2)"),
    (lambda: helpers.dot([1, 2, 3], [1, 2]),
     "b has shape (2,) but a has shape (3,): n = 2 in b, 3 in a"),
    (lambda: helpers.cosine_similarity([0, 0], [1, 2]), "a is the zero vector"),
    (lambda: helpers.pairwise_scores([1, 2, 3]), "X must be 2-D, but has shape (3,)"),
    (lambda: helpers.simple_self_attention(np.ones((2, 2, 2))),
     "X must be 2-D, but has shape (2, 2, 2)"),
    (lambda: helpers.softmax(3.0), "z must be at least 1-D, but has shape ()"),
    (lambda: helpers.softmax([[1, 2]], axis=2), "axis 2 is out of range for z of shape (1, 2)"),
    (lambda: helpers.project_qkv(np.ones((3, 4)), np.ones((5, 2)), np.ones((4, 2)),
                                 np.ones((4, 2))),
     "W_Q has shape (5, 2) but X has shape (3, 4): d = 5 in W_Q, 4 in X"),
    (lambda: helpers.project_qkv(np.ones((3, 4)), np.ones((4, 2)), np.ones((4, 3)),
                                 np.ones((4, 2))),
     "W_K has shape (4, 3) but W_Q has shape (4, 2): d_k = 3 in W_K, 2 in W_Q"),
    (lambda: helpers.project_qkv(np.ones((3, 4)), np.ones(4), np.ones((4, 2)), np.ones((4, 2))),
     "W_Q must be 2-D, but has shape (4,)"),
    (lambda: helpers.scaled_dot_product_attention([1.0, 2.0], [[1.0, 2.0]], [[1.0]]),
     "Q must be at least 2-D, but has shape (2,)"),
    (lambda: helpers.scaled_dot_product_attention(np.ones((2, 3)), np.ones((4, 3)),
                                                  np.ones((3, 5))),
     "V has shape (3, 5) but K has shape (4, 3): N_k = 3 in V, 4 in K"),
    (lambda: helpers.scaled_dot_product_attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)),
                                                  [[True, False], [False, False]]),
     "mask lets query (1,) attend to no key at all"),
    (lambda: helpers.scaled_dot_product_attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)),
                                                  [[2, 1], [1, 1]]),
     "mask must be boolean (True where allowed), or 0/1"),
    (lambda: helpers.causal_mask(0), "n must be an int >= 1, got 0"),
    (lambda: helpers.causal_mask(2.5), "n must be an int >= 1, got 2.5"),
    (lambda: helpers.cross_attention(np.ones((2, 4)), np.ones((3, 5)), np.ones((4, 2)),
                                     np.ones((4, 2)), np.ones((5, 3))),
     "W_K has shape (4, 2) but H_enc has shape (3, 5): d_enc = 4 in W_K, 5 in H_enc"),
    (lambda: helpers.split_heads(X48, 0), "n_heads must be an int >= 1, got 0"),
    (lambda: helpers.split_heads(X48, True), "n_heads must be an int >= 1, got True"),
    (lambda: helpers.split_heads(np.ones(8), 2), "X must be at least 2-D, but has shape (8,)"),
    (lambda: helpers.merge_heads(X48), "H must be at least 3-D, but has shape (4, 8)"),
    (lambda: helpers.multi_head_attention(X48, *W88[:3], np.ones((8, 4)), 2),
     "W_O has shape (8, 4) but X has shape (4, 8): d = 4 in W_O, 8 in X"),
    (lambda: helpers.layer_norm(np.ones((2, 4)), np.ones(3), np.zeros(4)),
     "gamma has shape (3,) but x has shape (2, 4): d = 3 in gamma, 4 in x"),
    (lambda: helpers.layer_norm(np.ones((2, 4)), np.ones(4), np.zeros(4), eps=-1.0),
     "eps must be a finite number from 0.0 to 1.0, got -1.0"),
    (lambda: helpers.layer_norm(np.ones((2, 4)), np.ones(4), np.zeros(4), eps="small"),
     "eps must be a number from 0.0 to 1.0, got 'small'"),
    (lambda: helpers.layer_norm([[2.0, 2.0]], [1, 1], [0, 0], eps=0),
     "layer norm of a constant vector with eps=0 divides by zero"),
    (lambda: helpers.feed_forward(np.ones((2, 4)), np.ones((4, 6)), np.ones(5), np.ones((6, 4)),
                                  np.ones(4)),
     "b1 has shape (5,) but W1 has shape (4, 6): d_ff = 5 in b1, 6 in W1"),
    (lambda: helpers.feed_forward(np.ones((2, 4)), np.ones((4, 6)), np.ones(6), np.ones((5, 4)),
                                  np.ones(4)),
     "W2 has shape (5, 4) but W1 has shape (4, 6): d_ff = 5 in W2, 6 in W1"),
    (lambda: helpers.lm_head(np.ones((2, 4)), np.ones((11, 8))),
     "E has shape (11, 8) but h has shape (2, 4): d = 8 in E, 4 in h"),
    (lambda: helpers.embed([0], np.ones((11, 8)), np.ones((8, 4))),
     "P has shape (8, 4) but E has shape (11, 8): d = 4 in P, 8 in E"),
    (lambda: helpers.embed([[0, 1]], LM["E"], LM["P"]),
     "token_ids must be 1-D, but has shape (1, 2)"),
    (lambda: helpers.embed([0, 1.5], LM["E"], LM["P"]), "token_ids must hold whole numbers"),
    (lambda: helpers.cross_entropy([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]], [0, 1]),
     "targets has shape (2,) but logits has shape (3, 2): N = 2 in targets, 3 in logits"),
    (lambda: helpers.cross_entropy([[0.0, 1.0]], [2]),
     "targets holds 2, outside [0, 1] (the contract says 0 <= targets <= V - 1)"),
    (lambda: helpers.cross_entropy([0.0, 1.0], [1]), "logits must be 2-D, but has shape (2,)"),
    (lambda: helpers.dot(["a", "b"], [1, 2]), "a must be an array of numbers"),
])
def test_wrong_shapes_are_named(call, message):
    with raises(message):
        call()


# Parameter dicts, context length, generation settings ------------------------------------------
def test_missing_block_params_are_listed():
    with raises("params is missing W_O"):
        helpers.transformer_block(X48, without(BLOCK, "W_O"), 2)
    with raises("params is missing ln2_gamma, b2"):
        helpers.transformer_block(X48, without(BLOCK, "ln2_gamma", "b2"), 2)
    with raises("params is a list; the contract says dict"):
        helpers.transformer_block(X48, list(BLOCK.values()), 2)


def test_missing_lm_params_are_listed():
    with raises("params is missing E"):
        helpers.language_model_forward([0, 1], without(LM, "E"), 2)
    with raises("params is missing blocks"):
        helpers.language_model_forward([0, 1], without(LM, "blocks"), 2)
    with raises("params is missing ln_f_beta"):
        helpers.language_model_forward([0, 1], without(LM, "ln_f_beta"), 2)
    with raises("params['blocks'][0] is missing W_Q"):
        helpers.language_model_forward([0, 1], {**LM, "blocks": [without(BLOCK, "W_Q")]}, 2)
    with raises("params is missing P"):
        helpers.generate([0, 1], without(LM, "P"), 2, 1)
    with raises("params['blocks'] is a dict; the contract says list"):
        helpers.language_model_forward([0, 1], {**LM, "blocks": BLOCK}, 2)
    with raises("params['E'] must be 2-D, but has shape ()"):
        helpers.generate([0, 1], {**LM, "E": 3.0}, 2, 1)


def test_empty_sequences():
    with raises("N >= 1 does not hold (N = 0)"):
        helpers.language_model_forward([], LM, 2)
    with raises("N >= 1 does not hold (N = 0)"):
        helpers.multi_head_attention(np.zeros((0, 8)), *W88, 2)
    with raises("N >= 1 does not hold (N = 0)"):
        helpers.cross_entropy(np.zeros((0, 3)), [])


def test_sequence_longer_than_context():
    with raises("N <= n_ctx does not hold (N = 9, n_ctx = 8)"):
        helpers.language_model_forward(list(range(9)), LM, 2)
    with raises("N <= n_ctx does not hold (N = 9, n_ctx = 8)"):
        helpers.embed(list(range(9)), LM["E"], LM["P"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(token_ids=[]), "N >= 1 does not hold (N = 0)"),
    (dict(n_new=-1), "n_new must be an int >= 0, got -1"),
    (dict(n_new=2.0), "n_new must be an int >= 0, got 2.0"),
    (dict(temperature=-0.5), "temperature must be a finite number >= 0.0, got -0.5"),
    (dict(temperature=float("nan")), "temperature must be a finite number >= 0.0, got nan"),
    (dict(temperature="hot"), "temperature must be a number >= 0.0, got 'hot'"),
    (dict(temperature=1.0, rng=42), "rng is a int; the contract says Generator"),
])
def test_generate_settings(kwargs, message):
    args = dict(token_ids=[1, 2], params=LM, n_heads=2, n_new=2) | kwargs
    with raises(message):
        helpers.generate(**args)


# Lists are accepted everywhere ---------------------------------------------------------------
def _lists(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lists(v) for v in value]
    return value


def _contract_calls():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=5), rng.normal(size=5)
    X = rng.normal(size=(4, 8))
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = np.ones((3, 5), dtype=bool)
    mask[0, 1:] = False
    W4 = [rng.normal(size=(8, 4)) for _ in range(3)]
    H_enc = rng.normal(size=(6, 8))
    W1, b1 = rng.normal(size=(8, 12)), rng.normal(size=12)
    W2, b2 = rng.normal(size=(12, 8)), rng.normal(size=8)
    ids = np.array([3, 1, 4, 1, 5])
    logits = rng.normal(size=(4, 11))
    return {
        "dot": (a, b), "cosine_similarity": (a, b), "pairwise_scores": (X,),
        "softmax": (X,), "simple_self_attention": (X,),
        "project_qkv": (X, *W4), "scaled_dot_product_attention": (Q, K, V, mask),
        "causal_mask": (4,), "cross_attention": (X, H_enc, *W4),
        "split_heads": (X, 2), "merge_heads": (rng.normal(size=(2, 4, 3)),),
        "multi_head_attention": (X, *W88, 2),
        "layer_norm": (X, BLOCK["ln1_gamma"], BLOCK["ln1_beta"]),
        "feed_forward": (X, W1, b1, W2, b2), "transformer_block": (X, BLOCK, 2),
        "embed": (ids, LM["E"], LM["P"]), "lm_head": (X, LM["E"]),
        "language_model_forward": (ids, LM, 2), "cross_entropy": (logits, ids[:4]),
        "generate": (ids, LM, 2, 3),
    }


def test_contract_call_table_is_complete():
    assert set(_contract_calls()) == set(helpers.CONTRACT_FUNCTIONS)


@pytest.mark.parametrize("name", helpers.CONTRACT_FUNCTIONS)
def test_every_function_accepts_lists(name):
    args = _contract_calls()[name]
    fn = getattr(helpers, name)
    from_arrays = fn(*args)
    from_lists = fn(*[_lists(arg) for arg in args])
    if isinstance(from_arrays, tuple):
        assert isinstance(from_lists, tuple) and len(from_lists) == len(from_arrays)
        for x, y in zip(from_arrays, from_lists):
            np.testing.assert_array_equal(x, y)
    else:
        np.testing.assert_array_equal(from_arrays, from_lists)
    for out in (from_arrays if isinstance(from_arrays, tuple) else (from_arrays,)):
        if isinstance(out, np.ndarray) and name not in ("causal_mask", "generate"):
            assert out.dtype == np.float64, name


@pytest.mark.parametrize("name", helpers.CONTRACT_FUNCTIONS)
def test_a_missing_argument_is_named_by_the_function_called(name):
    """Every contract function called without one of its required arguments raises the
    TypeError of a call that misses it, naming the function and that argument, never an
    inner helper of the edge (``layer_norm(x, gamma)`` once named
    ``_a_deviation_or_eps``)."""
    import inspect

    fn = getattr(helpers, name)
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    for missing in params:
        kwargs = {p.name: object() for p in params if p is not missing}
        with pytest.raises(TypeError) as caught:
            fn(**kwargs)
        assert str(caught.value).startswith(f"{name}(): "), (name, caught.value)
        assert repr(missing.name) in str(caught.value), (name, caught.value)
        assert not re.search(r"\b_\w*\(\)", str(caught.value)), (name, caught.value)
