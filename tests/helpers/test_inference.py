"""Notebook 13's references (helpers/inference.py) against independent computations:
flash attention and the online softmax against the whole softmax, top-p against a
sorted-cumsum loop, beam search against exhaustive search on a tiny vocabulary, the KV
cache against the model without a cache."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from helpers import inference, reference
from helpers.course import draw


def _qkv(seed, n, d_k=3, d_v=2, scale=1.0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, d_k)) * scale, rng.normal(size=(n, d_k)) * scale,
            rng.normal(size=(n, d_v)))


@pytest.mark.parametrize("n", [1, 2, 5, 6, 9, 16])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_equals_whole_attention_for_every_block_size(n, causal):
    Q, K, V = _qkv(n, n)
    mask = reference.causal_mask(n) if causal else None
    want = reference.scaled_dot_product_attention(Q, K, V, mask)[0]
    for block in range(1, n + 3):                  # divides n or not, and larger than n
        assert np.allclose(inference.flash_attention(Q, K, V, block, causal), want,
                           rtol=1e-12, atol=1e-12), block


@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), block=st.integers(1, 14),
       scale=st.sampled_from([0.1, 1.0, 30.0]), causal=st.booleans())
def test_flash_attention_property(seed, n, block, scale, causal):
    Q, K, V = _qkv(seed, n, scale=scale)
    mask = reference.causal_mask(n) if causal else None
    want = reference.scaled_dot_product_attention(Q, K, V, mask)[0]
    got = inference.flash_attention(Q, K, V, block, causal)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)


def test_flash_attention_never_builds_the_whole_score_matrix():
    """Peak memory of a long input: the tiled version holds [n, block] blocks only."""
    import tracemalloc

    n, block = 2048, 64
    Q, K, V = _qkv(1, n, d_k=8, d_v=8)
    tracemalloc.start()
    inference.flash_attention(Q, K, V, block, True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < n * n * 8 / 4, peak                # a quarter of one [n, n] float64


@given(z=st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=20), block=st.integers(1, 22))
def test_online_softmax_equals_softmax(z, block):
    z = np.array(z)
    assert np.allclose(inference.online_softmax(z, block), reference.softmax(z),
                       rtol=1e-9, atol=1e-15)


def _top_p_by_loop(logits, p):
    """The nucleus by a plain loop over the sorted probabilities (equal ones in index
    order): add tokens until the mass reaches p."""
    probs = reference.softmax(np.asarray(logits, dtype=float))
    order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))
    kept, mass = [], 0.0
    for i in order:
        kept.append(i)
        mass += probs[i]
        if mass >= p:
            break
    out = np.zeros(len(probs))
    out[kept] = probs[kept] / probs[kept].sum()
    return out


@given(seed=st.integers(0, 10_000), V=st.integers(1, 12),
       p=st.sampled_from([1e-6, 0.1, 0.3, 0.5, 0.75, 0.9, 0.99, 1.0]),
       ties=st.booleans())
def test_top_p_equals_the_sorted_cumsum_loop(seed, V, p, ties):
    rng = np.random.default_rng(seed)
    logits = rng.integers(-2, 3, V).astype(float) if ties else rng.normal(size=V) * 3
    got = inference.top_p_distribution(logits, p)
    want = _top_p_by_loop(logits, p)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-15)
    kept = got > 0
    assert np.isclose(got.sum(), 1.0)
    assert reference.softmax(logits)[kept].sum() >= p - 1e-12


def test_top_p_keeps_ties_in_index_order():
    assert np.array_equal(inference.top_p_distribution(np.zeros(4), 0.5), [0.5, 0.5, 0, 0])


@given(seed=st.integers(0, 10_000), V=st.integers(1, 10), N=st.integers(0, 12),
       penalty=st.sampled_from([0.5, 1.0, 1.3, 2.0]))
def test_repetition_penalty_equals_a_loop_over_the_seen_set(seed, V, N, penalty):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=V) * 2
    logits[rng.integers(0, V)] = 0.0
    ids = rng.integers(0, V, N)
    want = list(logits)
    for t in set(ids.tolist()):
        want[t] = want[t] / penalty if want[t] > 0 else want[t] * penalty
    before = logits.copy()
    assert np.array_equal(inference.repetition_penalty(logits, ids, penalty), want)
    assert np.array_equal(logits, before)


def _log_probs(ids, params, n_heads):
    n_ctx = len(params["P"])
    u = reference.language_model_forward(np.array(ids)[-n_ctx:], params, n_heads)[-1]
    return u - np.log(np.sum(np.exp(u - u.max()))) - u.max()


def _exhaustive(prompt, params, n_heads, n_new, eos_id, alpha):
    """Every continuation: n_new ids without eos_id, or fewer ending at eos_id."""
    V = len(params["E"])
    best, best_score = None, -np.inf
    for length in range(1, n_new + 1):
        for new in itertools.product(range(V), repeat=length):
            if eos_id in new[:-1] or (length < n_new and new[-1] != eos_id):
                continue
            total = sum(_log_probs(list(prompt) + list(new[:t]), params, n_heads)[new[t]]
                        for t in range(length))
            if total / length ** alpha > best_score:
                best, best_score = new, total / length ** alpha
    return np.array(list(prompt) + list(best))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("eos_id, alpha", [(-1, 1.0), (0, 1.0), (2, 0.0), (1, 0.6)])
def test_beam_search_wide_enough_is_exhaustive_search(seed, eos_id, alpha):
    V, n_new = 3, 3
    params = draw.seeded_lm(500 + seed, V=V, d=4, n_ctx=6, n_blocks=1, ln_f=True, e_scale=2.0)
    prompt = [seed % V]
    got = inference.beam_search(prompt, params, 2, n_new, V ** n_new, eos_id, alpha)
    assert np.array_equal(got, _exhaustive(prompt, params, 2, n_new, eos_id, alpha))


def test_beam_search_of_width_one_is_greedy_generate():
    params = draw.seeded_lm(77, V=6, d=4, n_ctx=5, n_blocks=2, ln_f=True, e_scale=1.5)
    prompt = np.array([1, 4, 2])
    assert np.array_equal(inference.beam_search(prompt, params, 2, 6, 1),
                          reference.generate(prompt, params, 2, 6))


@pytest.mark.parametrize("t, d, n_heads", [(0, 4, 2), (1, 2, 1), (5, 6, 3), (7, 8, 4)])
def test_attention_with_cache_is_the_last_row_of_causal_attention(t, d, n_heads):
    rng = np.random.default_rng(t + d)
    X = rng.normal(size=(t + 1, d))
    W_Q, W_K, W_V, W_O = (rng.normal(size=(d, d)) for _ in range(4))
    y, K, V = inference.attention_with_cache(X[-1], W_Q, W_K, W_V, W_O, n_heads,
                                             X[:-1] @ W_K, X[:-1] @ W_V)
    full = reference.multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True)
    assert np.allclose(y, full[-1], rtol=1e-12, atol=1e-12)
    assert np.allclose(K, X @ W_K) and np.allclose(V, X @ W_V)


@pytest.mark.parametrize("seed, n_blocks, ln_f", [(3, 1, False), (4, 2, True), (5, 3, True)])
def test_generate_with_the_cache_gives_the_ids_of_generate_without(seed, n_blocks, ln_f):
    params = draw.seeded_lm(seed, V=7, d=8, n_ctx=12, n_blocks=n_blocks, ln_f=ln_f,
                            e_scale=1.0)
    for prompt in ([2], [0, 6, 3, 3]):
        want = reference.generate(np.array(prompt), params, 2, 12 - len(prompt))
        assert np.array_equal(inference.generate_cached(prompt, params, 2, 12 - len(prompt)),
                              want)
