"""No NaN and no NumPy warning on extreme but finite input.

Every test here runs with warnings turned into errors and with NumPy's overflow, divide
and invalid flags raising (``np.errstate``); underflow stays at NumPy's default (silent),
as in a notebook. Expected values come from NumPy-only naive formulas on inputs where
those are representable (a shift by an exact power of two, a row scaled by 10**k), or
from exact arithmetic written out.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import helpers
from make_torch_reference import random_block_params, random_lm_params

BIG = np.finfo(np.float64).max                   # 1.797e308
TINY = np.finfo(np.float64).smallest_subnormal   # 5e-324
any_finite = st.floats(allow_nan=False, allow_infinity=False)


@pytest.fixture(autouse=True)
def strict_floats():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            yield


def naive_softmax(z, axis=-1):
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def naive_layer_norm(x, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps)


def test_strict_mode_is_really_on():
    """Guard: the naive formula does fail here, so the tests below mean something."""
    with pytest.raises(FloatingPointError):
        naive_softmax(np.array([1e300, 0.0]))


# --- softmax ----------------------------------------------------------------------------------
@pytest.mark.parametrize("z, expected", [
    ([1e300, -1e300, 0.0], [1.0, 0.0, 0.0]),
    ([-1e300, -1e300, -1e300], [1 / 3, 1 / 3, 1 / 3]),
    ([1e300, 1e300], [0.5, 0.5]),
    ([BIG, -BIG, 0.0], [1.0, 0.0, 0.0]),            # the gap BIG - (-BIG) is not finite
    ([-BIG, -BIG / 2, 0.0], [0.0, 0.0, 1.0]),
    ([TINY, 0.0], [0.5, 0.5]),
])
def test_softmax_extremes(z, expected):
    np.testing.assert_allclose(helpers.softmax(z), expected, rtol=1e-15, atol=0)


def test_softmax_equals_naive_after_an_exact_shift():
    small = np.array([[0.0, 1.0, -2.0, 3.0], [5.0, 5.0, -7.0, 0.5]])
    expected = naive_softmax(small)
    for shift in (2.0**40, -(2.0**40), 2.0**45):                 # small + shift is exact
        np.testing.assert_allclose(helpers.softmax(small + shift), expected, rtol=1e-14)
    mixed = np.array([[1e300, -1e300], [0.0, 1.0], [-1e300, -1e300]])
    np.testing.assert_array_equal(helpers.softmax(mixed, axis=0), [[1, 0], [0, 1], [0, 0]])


@given(z=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=5),
                    elements=any_finite))
def test_softmax_any_finite_input(z):
    p = helpers.softmax(z)
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-12)


# --- cross-entropy ----------------------------------------------------------------------------
def test_cross_entropy_with_logits_near_1e300():
    logits = [[1e300, 0.0, -1e300]]
    assert helpers.cross_entropy(logits, [0]) == 0.0
    assert helpers.cross_entropy(logits, [1]) == pytest.approx(1e300, rel=1e-15)
    assert helpers.cross_entropy(logits, [2]) == pytest.approx(2e300, rel=1e-15)
    # mean over rows: (0 + 1e300 + 2e300) / 3
    assert helpers.cross_entropy(logits * 3, [0, 1, 2]) == pytest.approx(1e300, rel=1e-15)
    # two equal maxima: -log(1/2)
    assert helpers.cross_entropy([[1e300, 1e300, -1e300]], [1]) == pytest.approx(np.log(2))


def test_cross_entropy_equals_naive_after_an_exact_shift():
    small = np.array([[0.0, 1.0, -2.0, 3.0], [5.0, 5.0, -7.0, 0.5], [0.25, 0.0, 0.0, 0.0]])
    targets = np.array([2, 0, 3])
    naive = -np.mean(np.log(naive_softmax(small))[np.arange(3), targets])
    for shift in (2.0**40, -(2.0**40), 2.0**45):                 # small + shift is exact
        assert helpers.cross_entropy(small + shift, targets) == pytest.approx(naive, rel=1e-13)
    assert helpers.cross_entropy(np.full((3, 4), 2.0**900), targets) == pytest.approx(np.log(4))


@given(logits=hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 5)),
                         elements=any_finite),
       data=st.data())
def test_cross_entropy_any_finite_input(logits, data):
    n, v = logits.shape
    targets = data.draw(st.lists(st.integers(0, v - 1), min_size=n, max_size=n))
    loss = helpers.cross_entropy(logits, targets)
    assert not np.isnan(loss) and loss >= 0.0          # +inf only if the true loss > 1.8e308


# --- layer norm -------------------------------------------------------------------------------
ROW = np.array([1.0, 2.0, 0.0, -1.0, 0.5])


@pytest.mark.parametrize("scale", [1e200, 1e300, 1e-3, 1.0, 1e3, 1e100])
def test_layer_norm_of_scaled_rows(scale):
    """LN(s x; eps) = LN(x; eps / s^2): rows near 1e200 and 1e300 normalize like ROW
    (with eps / s^2 = 0 to double precision)."""
    expected = naive_layer_norm(ROW, eps=1e-5 / scale**2 if scale < 1e150 else 0.0)
    got = helpers.layer_norm(scale * ROW, np.ones(5), np.zeros(5))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-160, 1e-100, 1e-10])
def test_layer_norm_tiny_rows_equal_naive(scale):
    """Deviations far below sqrt(eps): the naive formula is representable (var may
    underflow to 0, which it should: var << eps)."""
    x = scale * ROW + 3.0 * scale
    got = helpers.layer_norm(x, np.ones(5), np.zeros(5))
    np.testing.assert_allclose(got, naive_layer_norm(x), rtol=1e-12, atol=0)


def test_layer_norm_tiny_variance_on_a_large_offset():
    x = np.array([[1.0, 1 + 1e-10, 1.0, 1 - 1e-10], [1e6 + 0.001, 1e6, 1e6, 1e6 - 0.001]])
    got = helpers.layer_norm(x, np.ones(4), np.zeros(4))
    np.testing.assert_allclose(got, naive_layer_norm(x), rtol=1e-5, atol=0)
    assert np.abs(got[0]).max() < 1e-7                              # eps dominates


@pytest.mark.parametrize("value", [0.0, 5.0, -7.25, 1e300, -1e300, 1e-300, TINY, BIG])
def test_layer_norm_constant_rows_give_beta(value):
    beta = np.array([0.5, -1.0, 2.0])
    got = helpers.layer_norm(np.full((2, 3), value), np.array([3.0, 4.0, 5.0]), beta)
    np.testing.assert_array_equal(got, np.tile(beta, (2, 1)))


def test_layer_norm_mixed_scales_in_one_batch():
    x = np.stack([1e-300 * ROW, ROW, 1e300 * ROW, np.full(5, 1e300), BIG * np.sign(ROW)])
    got = helpers.layer_norm(x, np.ones(5), np.zeros(5))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[1], naive_layer_norm(ROW), rtol=1e-12)
    np.testing.assert_allclose(got[2], naive_layer_norm(ROW, eps=0.0), rtol=1e-12)
    np.testing.assert_array_equal(got[3], 0.0)
    np.testing.assert_allclose(got[4], naive_layer_norm(np.sign(ROW), eps=0.0), rtol=1e-12)


@given(x=hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 6)),
                    elements=any_finite))
def test_layer_norm_any_finite_input(x):
    d = x.shape[-1]
    y = helpers.layer_norm(x, np.ones(d), np.zeros(d))
    assert np.all(np.isfinite(y))
    assert np.all(np.abs(y) <= np.sqrt(d - 1) * (1 + 1e-12))   # a z-score's bound


# --- cosine similarity ------------------------------------------------------------------------
@pytest.mark.parametrize("scale_a, scale_b", [(1e-300, 1e-300), (1e300, 1e300), (1e300, 1e-300),
                                              (BIG / 4, TINY * 8), (1.0, 1.0)])
def test_cosine_at_extreme_scales(scale_a, scale_b):
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-2.0, 0.5, 4.0])
    expected = (a @ b) / np.sqrt((a @ a) * (b @ b))                 # naive, on the unit data
    got = helpers.cosine_similarity(scale_a * a, scale_b * b)
    assert got == pytest.approx(expected, rel=1e-12)


@given(a=hnp.arrays(np.float64, 3, elements=any_finite), b=hnp.arrays(np.float64, 3,
                                                                         elements=any_finite))
def test_cosine_any_finite_input(a, b):
    if not a.any() or not b.any():
        with pytest.raises(ValueError, match="zero vector"):
            helpers.cosine_similarity(a, b)
        return
    c = helpers.cosine_similarity(a, b)
    assert -1.0 <= c <= 1.0
    assert helpers.cosine_similarity(a, a) == pytest.approx(1.0)


# --- attention on huge scores ---------------------------------------------------------------
def test_attention_with_scores_near_1e300():
    Q = [[1e150], [-1e150]]
    K = [[1e150], [-1e150], [0.0]]
    V = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    out, w = helpers.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_array_equal(w, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0]])
    out, w = helpers.scaled_dot_product_attention(Q, K[:2], V[:2], [[False, True], [True, True]])
    np.testing.assert_array_equal(w, [[0.0, 1.0], [0.0, 1.0]])
    X = 1e100 * np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert np.all(np.isfinite(helpers.simple_self_attention(X)))


# --- the language model on large embeddings, generation at extreme temperatures -----------
@pytest.fixture(scope="module")
def lm():
    params = random_lm_params(np.random.default_rng(9), V=11, n_ctx=8, d=8, d_ff=12, n_blocks=2)
    return params


def test_language_model_with_huge_embeddings(lm):
    big = {**lm, "E": 1e100 * lm["E"], "P": 1e100 * lm["P"]}
    logits = helpers.language_model_forward([1, 2, 3, 4], big, 2)
    assert np.all(np.isfinite(logits))
    assert helpers.cross_entropy(logits[:-1], [2, 3, 4]) >= 0


@pytest.mark.parametrize("temperature", [1e-300, TINY, 1e-12, 1e300, BIG])
def test_generate_at_extreme_temperatures(lm, temperature):
    prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5]                            # longer than n_ctx
    ids = helpers.generate(prompt, lm, 2, 6, temperature, np.random.default_rng(0))
    assert ids.shape == (15,) and np.all((ids >= 0) & (ids < 11))
    if temperature < 1e-10:                                          # tiny T is greedy
        np.testing.assert_array_equal(ids, helpers.generate(prompt, lm, 2, 6))


def test_generate_with_huge_temperature_is_uniform(lm):
    rng = np.random.default_rng(1)
    draws = [helpers.generate([0], lm, 2, 1, 1e300, rng)[-1] for _ in range(1100)]
    counts = np.bincount(draws, minlength=11)
    assert counts.min() > 60 and counts.max() < 140                   # 100 +- 4 sigma


# --- products whose exact value is beyond float64: a ValueError quoting the reference's line
# that overflowed, never inf or a warning ------------------------------------------------------
E200 = np.array([[1e200, 1e200]])                                     # each product is 1e400
OVERFLOWS = {
    "dot": (lambda: helpers.dot(E200[0], E200[0]), "a @ b"),
    "pairwise_scores": (lambda: helpers.pairwise_scores(E200), "X @ X.T"),
    "simple_self_attention": (lambda: helpers.simple_self_attention(E200), "X @ X.T"),
    "project_qkv": (lambda: helpers.project_qkv(E200, np.eye(2), 1e200 * np.eye(2), np.eye(2)),
                    "X @ W_K"),
    "scaled_dot_product_attention": (
        lambda: helpers.scaled_dot_product_attention(E200, E200, [[1.0]]), "Q @ np.swapaxes(K"),
    "cross_attention": (lambda: helpers.cross_attention(E200, [[1.0, 1.0]], 1e200 * np.eye(2),
                                                        np.eye(2), np.eye(2)), "X_dec @ W_Q"),
    "feed_forward": (lambda: helpers.feed_forward(E200, 1e200 * np.ones((2, 3)), np.zeros(3),
                                                  np.ones((3, 2)), np.zeros(2)), "x @ W1 + b1"),
    "embed": (lambda: helpers.embed([0], [[BIG, 0.0]], [[BIG, 0.0]]), "E[token_ids] + P"),
    "lm_head": (lambda: helpers.lm_head(E200, E200), "h @ E.T"),
}


@pytest.mark.parametrize("name", sorted(OVERFLOWS))
def test_a_product_beyond_float64_is_a_clear_error(name):
    call, quantity = OVERFLOWS[name]
    with pytest.raises(ValueError, match="overflows float64") as info:
        call()
    assert quantity in str(info.value)


def test_residuals_beyond_float64_are_a_clear_error(lm):
    block = {**lm["blocks"][0], "W_O": 1e308 * np.eye(8)}
    x = BIG * np.eye(8)[:3]
    with pytest.raises(ValueError, match="`t3 = t2 \\+ x` \\(in transformer_block\\) overflows float64"):
        helpers.transformer_block(x, block, 2)


@given(hnp.arrays(np.float64, st.integers(1, 6), elements=any_finite), st.data())
def test_dot_any_finite_input(a, data):
    """Exact result in range: float; beyond it: the ValueError. Nothing else."""
    b = data.draw(hnp.arrays(np.float64, a.shape, elements=any_finite))
    try:
        value = helpers.dot(a, b)
    except ValueError as e:
        assert "overflows float64" in str(e)
    else:
        assert np.isfinite(value)


# --- every function, inputs at every scale: a finite result or the clear overflow error -----
SCALES = [1e-300, 1e-150, 1e-20, 1.0, 1e20, 1e100, 1e150, 1e200, 1e300, BIG]


def _finite_or_overflow_error(call):
    try:
        out = call()
    except ValueError as e:
        assert "overflows float64" in str(e), e
        return None
    for a in out if isinstance(out, tuple) else (out,):
        assert np.all(np.isfinite(a)), a
    return out


@given(st.sampled_from(SCALES), st.sampled_from(SCALES), st.integers(0, 2**32 - 1))
def test_every_function_at_any_scale_is_finite_or_says_it_overflows(s_x, s_w, seed):
    """Inputs scaled by s_x, weights by s_w (each anywhere from 1e-300 to the float64
    maximum): never a NaN, an inf or a NumPy warning (the strict fixture raises those)."""
    rng = np.random.default_rng(seed)
    N, d = 4, 6

    def U(scale, *shape):                   # entries in [-scale, scale]: no overflow here
        return scale * rng.uniform(-1.0, 1.0, size=shape)

    X = U(s_x, N, d)
    W = [U(s_w, d, d) for _ in range(4)]
    calls = [
        lambda: helpers.pairwise_scores(X),
        lambda: helpers.softmax(X),
        lambda: helpers.simple_self_attention(X),
        lambda: helpers.project_qkv(X, *W[:3]),
        lambda: helpers.scaled_dot_product_attention(X, U(s_w, N, d), X, helpers.causal_mask(N)),
        lambda: helpers.cross_attention(X, U(s_w, 2, d), *W[:3]),
        lambda: helpers.multi_head_attention(X, *W, n_heads=2),
        lambda: helpers.layer_norm(X, np.ones(d), np.zeros(d)),
        lambda: helpers.feed_forward(X, W[0], np.zeros(d), W[1], np.zeros(d)),
        lambda: helpers.lm_head(X, U(s_w, 5, d)),
    ]
    for call in calls:
        _finite_or_overflow_error(call)
    block = {**random_block_params(rng, d, 5), **dict(zip(("W_Q", "W_K", "W_V", "W_O"), W)),
             "W1": U(s_w, d, 5)}
    _finite_or_overflow_error(lambda: helpers.transformer_block(X, block, 2))
    lm = random_lm_params(rng, V=7, n_ctx=6, d=d, d_ff=5, n_blocks=1)
    lm = {**lm, "E": U(s_x, 7, d), "P": U(s_x, 6, d),
          "blocks": [{**b, "W1": U(s_w, d, 5)} for b in lm["blocks"]]}
    logits = _finite_or_overflow_error(lambda: helpers.language_model_forward([1, 2, 3], lm, 2))
    if logits is not None:
        _finite_or_overflow_error(lambda: helpers.cross_entropy(logits[:-1], [2, 3]))
