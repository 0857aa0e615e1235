"""Properties the reference implementation must have for every input (Hypothesis).

Each property is a fact about the mathematics, checked against NumPy or a hand-written
loop, not against ``helpers`` itself: softmax rows sum to 1 and ignore shifts; causal
models never look ahead; heads split and merge losslessly; attention without a mask is
permutation-equivariant; layer norm standardizes; batch dimensions equal a loop;
cross-entropy and greedy decoding equal their textbook definitions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import helpers
from make_torch_reference import random_block_params, random_lm_params

seeds = st.integers(0, 2**32 - 1)
moderate = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


def rng_of(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def naive_softmax(z, axis=-1):
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


# --- softmax ---------------------------------------------------------------------------------
@given(z=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                    elements=st.floats(-1e6, 1e6)),
       data=st.data())
def test_softmax_is_a_distribution_along_the_axis(z, data):
    axis = data.draw(st.integers(-z.ndim, z.ndim - 1), label="axis")
    p = helpers.softmax(z, axis=axis)
    assert p.shape == z.shape
    assert np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=0, atol=1e-12)
    # the largest entry of each slice gets the largest probability
    np.testing.assert_array_equal(np.take_along_axis(p, np.expand_dims(z.argmax(axis), axis),
                                                     axis),
                                  p.max(axis=axis, keepdims=True))


@given(z=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                    elements=moderate),
       shift=st.floats(-1e3, 1e3), axis=st.sampled_from([0, -1]))
def test_softmax_is_shift_invariant_and_matches_naive(z, shift, axis):
    expected = naive_softmax(z, axis)                            # fine for |z| <= 50
    np.testing.assert_allclose(helpers.softmax(z, axis), expected, rtol=1e-12, atol=1e-15)
    # shifting one slice by a constant changes nothing (up to the rounding of z + shift)
    np.testing.assert_allclose(helpers.softmax(z + shift, axis), expected, rtol=0, atol=1e-10)


# --- causality: nothing looks ahead --------------------------------------------------------
@given(seed=seeds, n=st.integers(2, 7), d_k=st.integers(1, 5), d_v=st.integers(1, 5),
       data=st.data())
def test_causal_attention_ignores_later_rows(seed, n, d_k, d_v, data):
    cut = data.draw(st.integers(1, n - 1), label="first changed row")
    rng = rng_of(seed)
    Q, K, V = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v))
    Q2, K2, V2 = Q.copy(), K.copy(), V.copy()
    for M in (Q2, K2, V2):
        M[cut:] = 100 * rng.normal(size=M[cut:].shape)
    mask = helpers.causal_mask(n)
    out, w = helpers.scaled_dot_product_attention(Q, K, V, mask)
    out2, w2 = helpers.scaled_dot_product_attention(Q2, K2, V2, mask)
    np.testing.assert_allclose(out2[:cut], out[:cut], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(w[np.triu_indices(n, 1)], 0.0)
    np.testing.assert_array_equal(mask, np.tri(n, dtype=bool))


@given(seed=seeds, n=st.integers(2, 6), n_heads=st.sampled_from([1, 2, 4]), data=st.data())
def test_transformer_block_ignores_later_rows(seed, n, n_heads, data):
    cut = data.draw(st.integers(1, n - 1), label="first changed row")
    rng = rng_of(seed)
    params = random_block_params(rng, 8, 12)
    x = rng.normal(size=(n, 8))
    x2 = x.copy()
    x2[cut:] = 10 * rng.normal(size=(n - cut, 8))
    h = helpers.transformer_block(x, params, n_heads)
    h2 = helpers.transformer_block(x2, params, n_heads)
    np.testing.assert_allclose(h2[:cut], h[:cut], rtol=1e-12, atol=1e-12)
    assert not np.allclose(h2[cut:], h[cut:])
    # without the causal mask, earlier rows do see the change
    full = helpers.transformer_block(x, params, n_heads, causal=False)
    full2 = helpers.transformer_block(x2, params, n_heads, causal=False)
    assert not np.allclose(full[:cut], full2[:cut])


@given(seed=seeds, n=st.integers(2, 8), data=st.data())
def test_language_model_ignores_later_tokens(seed, n, data):
    cut = data.draw(st.integers(1, n - 1), label="first changed token")
    rng = rng_of(seed)
    params = random_lm_params(rng, V=11, n_ctx=8, d=8, d_ff=12, n_blocks=2)
    ids = rng.integers(0, 11, size=n)
    ids2 = ids.copy()
    ids2[cut:] = (ids[cut:] + rng.integers(1, 11, size=n - cut)) % 11   # every one differs
    logits = helpers.language_model_forward(ids, params, 2)
    logits2 = helpers.language_model_forward(ids2, params, 2)
    assert logits.shape == (n, 11)
    np.testing.assert_allclose(logits2[:cut], logits[:cut], rtol=1e-12, atol=1e-12)
    assert not np.allclose(logits2[cut:], logits[cut:])
    # the logits of a prefix are the first rows of the logits of the whole
    np.testing.assert_allclose(helpers.language_model_forward(ids[:cut], params, 2),
                               logits[:cut], rtol=1e-12, atol=1e-12)


# --- heads ----------------------------------------------------------------------------------
@given(seed=seeds, batch=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
       n=st.integers(1, 5), n_heads=st.integers(1, 4), d_h=st.integers(1, 4))
def test_merge_heads_inverts_split_heads(seed, batch, n, n_heads, d_h):
    X = rng_of(seed).normal(size=(*batch, n, n_heads * d_h))
    H = helpers.split_heads(X, n_heads)
    assert H.shape == (*batch, n_heads, n, d_h)
    for c in range(n_heads):                                     # head c = column block c
        np.testing.assert_array_equal(H[..., c, :, :], X[..., c * d_h:(c + 1) * d_h])
    np.testing.assert_array_equal(helpers.merge_heads(H), X)


# --- permutation equivariance without a mask ------------------------------------------------
@given(seed=seeds, n_q=st.integers(1, 6), n_k=st.integers(1, 6), d_k=st.integers(1, 4),
       d_v=st.integers(1, 4))
def test_attention_without_mask_is_permutation_equivariant(seed, n_q, n_k, d_k, d_v):
    rng = rng_of(seed)
    Q, K, V = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v))
    pq, pk = rng.permutation(n_q), rng.permutation(n_k)
    out, w = helpers.scaled_dot_product_attention(Q, K, V)
    out_p, w_p = helpers.scaled_dot_product_attention(Q[pq], K[pk], V[pk])
    np.testing.assert_allclose(out_p, out[pq], rtol=1e-12, atol=1e-12)   # queries permute
    np.testing.assert_allclose(w_p, w[pq][:, pk], rtol=1e-12, atol=1e-15)
    # cross-attention and simple self-attention are the same unmasked attention
    np.testing.assert_allclose(helpers.simple_self_attention(K),
                               helpers.scaled_dot_product_attention(K, K, K)[0], rtol=1e-12)


@given(seed=seeds, n=st.integers(2, 6), n_heads=st.sampled_from([1, 2, 4]))
def test_non_causal_multi_head_attention_is_permutation_equivariant(seed, n, n_heads):
    rng = rng_of(seed)
    X = rng.normal(size=(n, 8))
    W = [rng.normal(size=(8, 8)) / np.sqrt(8) for _ in range(4)]
    perm = rng.permutation(n)
    out = helpers.multi_head_attention(X, *W, n_heads, causal=False)
    np.testing.assert_allclose(helpers.multi_head_attention(X[perm], *W, n_heads, causal=False),
                               out[perm], rtol=1e-10, atol=1e-12)


# --- layer norm -------------------------------------------------------------------------------
@given(x=hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(2, 9)),
                    elements=st.floats(-1e6, 1e6)))
def test_layer_norm_standardizes_rows(x):
    var = x.var(axis=-1)
    assume(np.all(var > 1e-2))                                   # var >> eps = 1e-5
    d = x.shape[-1]
    y = helpers.layer_norm(x, np.ones(d), np.zeros(d))
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-9)
    np.testing.assert_allclose(y.var(axis=-1), var / (var + 1e-5), rtol=1e-9)  # population
    np.testing.assert_allclose(y.var(axis=-1), 1.0, atol=1e-3)


@given(seed=seeds, n=st.integers(1, 5), d=st.integers(2, 8),
       scale=st.sampled_from([1e-4, 1e-2, 1.0, 1e2, 1e4]))
def test_layer_norm_matches_formula_with_gamma_beta(seed, n, d, scale):
    rng = rng_of(seed)
    x = scale * rng.normal(size=(n, d)) + rng.normal(size=(n, 1))
    gamma, beta = rng.normal(size=d), rng.normal(size=d)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    expected = gamma * (x - mu) / np.sqrt(var + 1e-5) + beta
    np.testing.assert_allclose(helpers.layer_norm(x, gamma, beta), expected,
                               rtol=1e-9, atol=1e-9)


# --- batch dimensions equal a loop ----------------------------------------------------------
@given(seed=seeds, b=st.integers(1, 3), n=st.integers(1, 5), n_heads=st.sampled_from([1, 2, 4]))
def test_batch_dimensions_equal_a_loop(seed, b, n, n_heads):
    rng = rng_of(seed)
    X = rng.normal(size=(b, n, 8))
    W = [rng.normal(size=(8, 8)) / np.sqrt(8) for _ in range(4)]
    params = random_block_params(rng, 8, 12)
    mask = helpers.causal_mask(n)
    gamma, beta = rng.normal(size=8), rng.normal(size=8)
    out, w = helpers.scaled_dot_product_attention(X, X, X, mask)
    mha = helpers.multi_head_attention(X, *W, n_heads)
    block = helpers.transformer_block(X, params, n_heads)
    ln = helpers.layer_norm(X, gamma, beta)
    for i in range(b):
        o_i, w_i = helpers.scaled_dot_product_attention(X[i], X[i], X[i], mask)
        np.testing.assert_allclose(out[i], o_i, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(w[i], w_i, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(mha[i], helpers.multi_head_attention(X[i], *W, n_heads),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(block[i], helpers.transformer_block(X[i], params, n_heads),
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ln[i], helpers.layer_norm(X[i], gamma, beta),
                                   rtol=1e-12, atol=1e-14)


@given(seed=seeds, n=st.integers(1, 5), n_heads=st.sampled_from([1, 2, 4]))
def test_multi_head_attention_equals_per_head_loop(seed, n, n_heads):
    """Head c uses column block c of W_Q, W_K, W_V, scale 1/sqrt(d_model / n_heads)."""
    rng = rng_of(seed)
    X = rng.normal(size=(n, 8))
    W_Q, W_K, W_V, W_O = (rng.normal(size=(8, 8)) for _ in range(4))
    d_h = 8 // n_heads
    heads = []
    for c in range(n_heads):
        cols = slice(c * d_h, (c + 1) * d_h)
        s = (X @ W_Q[:, cols]) @ (X @ W_K[:, cols]).T / np.sqrt(d_h)
        s = np.where(np.tri(n, dtype=bool), s, -np.inf)
        heads.append(naive_softmax(s - s.max(axis=-1, keepdims=True)) @ (X @ W_V[:, cols]))
    expected = np.concatenate(heads, axis=-1) @ W_O
    np.testing.assert_allclose(helpers.multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads),
                               expected, rtol=1e-10, atol=1e-10)


# --- cross-entropy --------------------------------------------------------------------------
@given(logits=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(2, 8)),
                         elements=st.floats(-30, 30)),
       data=st.data())
def test_cross_entropy_is_mean_negative_log_softmax(logits, data):
    n, v = logits.shape
    targets = np.array(data.draw(st.lists(st.integers(0, v - 1), min_size=n, max_size=n)))
    naive = -np.mean(np.log(naive_softmax(logits))[np.arange(n), targets])
    got = helpers.cross_entropy(logits, targets)
    assert isinstance(got, float)
    assert got == pytest.approx(naive, rel=1e-10, abs=1e-12)
    # accepts lists
    assert helpers.cross_entropy(logits.tolist(), targets.tolist()) == got


# --- generation ------------------------------------------------------------------------------
def greedy_by_hand(prompt, params, n_heads, n_new):
    """Greedy decoding written out: forward the last n_ctx ids, append the argmax."""
    n_ctx = len(params["P"])
    ids = list(prompt)
    for _ in range(n_new):
        logits = helpers.language_model_forward(ids[-n_ctx:], params, n_heads)
        ids.append(int(np.argmax(logits[-1])))
    return ids


@given(seed=seeds, prompt_len=st.integers(1, 12), n_new=st.integers(0, 6))
def test_greedy_generate_equals_argmax_loop(seed, prompt_len, n_new):
    rng = rng_of(seed)
    params = random_lm_params(rng, V=11, n_ctx=8, d=8, d_ff=12, n_blocks=2)
    prompt = rng.integers(0, 11, size=prompt_len)                # may be longer than n_ctx
    got = helpers.generate(prompt, params, 2, n_new)
    assert got.ndim == 1 and np.issubdtype(got.dtype, np.integer)
    assert len(got) == prompt_len + n_new
    np.testing.assert_array_equal(got[:prompt_len], prompt)
    assert got.tolist() == greedy_by_hand(prompt.tolist(), params, 2, n_new)


def test_generate_crops_the_context_to_n_ctx():
    rng = rng_of(5)
    params = random_lm_params(rng, V=11, n_ctx=4, d=8, d_ff=12, n_blocks=1)
    prompt = rng.integers(0, 11, size=9)                         # 9 > n_ctx = 4
    with pytest.raises(ValueError, match="N <= n_ctx does not hold"):
        helpers.language_model_forward(prompt, params, 2)
    got = helpers.generate(prompt, params, 2, 5)
    assert got.tolist() == greedy_by_hand(prompt.tolist(), params, 2, 5)
    # only the last n_ctx tokens matter: a different start gives the same continuation
    other = prompt.copy()
    other[:5] = (other[:5] + 1) % 11
    np.testing.assert_array_equal(helpers.generate(other, params, 2, 5)[9:], got[9:])


@given(seed=seeds, temperature=st.floats(0.05, 5.0), n_new=st.integers(1, 5))
def test_sampling_is_reproducible_with_a_seeded_rng(seed, temperature, n_new):
    rng = rng_of(seed)
    params = random_lm_params(rng, V=11, n_ctx=8, d=8, d_ff=12, n_blocks=1)
    prompt = [1, 2, 3]
    a = helpers.generate(prompt, params, 2, n_new, temperature, np.random.default_rng(seed))
    b = helpers.generate(prompt, params, 2, n_new, temperature, np.random.default_rng(seed))
    np.testing.assert_array_equal(a, b)
    assert a[:3].tolist() == prompt and np.all((a >= 0) & (a < 11))


def test_sampling_follows_softmax_of_logits_over_temperature():
    """With one step and many draws, the frequencies match softmax(logits / T)."""
    rng = rng_of(11)
    params = random_lm_params(rng, V=5, n_ctx=4, d=4, d_ff=6, n_blocks=1, final_ln=False)
    prompt, T, draws = [0, 3], 1.7, 4000
    probs = naive_softmax(helpers.language_model_forward(prompt, params, 2)[-1] / T)
    sampler = np.random.default_rng(2024)
    counts = np.bincount([helpers.generate(prompt, params, 2, 1, T, sampler)[-1]
                          for _ in range(draws)], minlength=5)
    # a fixed seed makes this deterministic; 4 standard errors per token
    stderr = np.sqrt(probs * (1 - probs) / draws)
    np.testing.assert_array_less(np.abs(counts / draws - probs), 4 * stderr + 1e-3)
    # near-zero temperature is greedy
    greedy = helpers.generate(prompt, params, 2, 3)
    np.testing.assert_array_equal(helpers.generate(prompt, params, 2, 3, 1e-6, sampler), greedy)
