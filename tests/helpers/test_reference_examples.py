"""The slides' worked examples, recomputed by ``helpers`` and pinned to 3 decimals.

Every expected number is derived here by hand, in plain Python (``math.exp``, sums of
products written out), from the slide's inputs in ``helpers.examples``; never by calling
the function under test. Where the slides slipped, the tests check both that the printed
number is wrong and that the right one holds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import helpers
from helpers import examples as ex


# --- plain-Python arithmetic, independent of helpers --------------------------------------
def row_times_matrix(x, W):
    """x W for a row vector x (list) and a matrix W (list of rows), by sums of products."""
    return [sum(x[k] * W[k][j] for k in range(len(x))) for j in range(len(W[0]))]


def dot_py(a, b):
    return sum(ai * bi for ai, bi in zip(a, b))


def softmax_py(scores):
    exps = [math.exp(s) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def weighted_sum(weights, rows):
    return [sum(w * row[j] for w, row in zip(weights, rows)) for j in range(len(rows[0]))]


def assert_3dp(got, expected):
    """Equal when rounded to 3 decimals (tolerance half a unit in the third decimal)."""
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float),
                               rtol=0, atol=5e-4)


X = ex.CAT_X.tolist()
THE, CAT, SAT, END = range(4)


# --- 1. "The cat sat <end>", no weights -------------------------------------------------
def test_cat_simple_scores_by_hand():
    # x_The . x_j, written out
    assert dot_py(X[THE], X[THE]) == pytest.approx(1.0 * 1.0 + 0.5 * 0.5 + 0.2 * 0.2 + 0.1 * 0.1)
    scores = [dot_py(X[THE], X[j]) for j in range(4)]
    assert scores == pytest.approx([1.30, 1.08, 0.65, 0.27])
    assert scores == pytest.approx(ex.CAT_SLIDE_SIMPLE["scores_the"])
    assert [s / math.sqrt(4) for s in scores] == pytest.approx(ex.CAT_SLIDE_SIMPLE["scaled_the"])
    np.testing.assert_allclose(helpers.pairwise_scores(ex.CAT_X)[THE], scores, atol=1e-12)


def test_cat_simple_self_attention_for_the():
    scaled = [dot_py(X[THE], X[j]) / 2.0 for j in range(4)]   # / sqrt(d) = / 2
    weights = softmax_py(scaled)
    output = weighted_sum(weights, X)
    assert_3dp(weights, [0.311, 0.279, 0.225, 0.186])
    assert_3dp(output, [0.536, 0.498, 0.389, 0.385])
    # The slide rounds each step, so its printed numbers are off by at most ~1e-3.
    np.testing.assert_allclose(ex.CAT_SLIDE_SIMPLE["weights_the"], weights, atol=1.5e-3)
    np.testing.assert_allclose(ex.CAT_SLIDE_SIMPLE["output_the"], output, atol=1.5e-3)

    got = helpers.simple_self_attention(ex.CAT_X)
    assert got.shape == (4, 4)
    np.testing.assert_allclose(got[THE], output, atol=1e-12)
    assert_3dp(got[THE], [0.536, 0.498, 0.389, 0.385])


def test_cat_simple_self_attention_all_rows():
    for i in range(4):
        weights = softmax_py([dot_py(X[i], X[j]) / 2.0 for j in range(4)])
        np.testing.assert_allclose(helpers.simple_self_attention(X)[i],
                                   weighted_sum(weights, X), atol=1e-12)


# --- 2. "The cat sat <end>" with W_Q, W_K, W_V, and the slides' slips ------------------
WQ, WK, WV = ex.CAT_W_Q.tolist(), ex.CAT_W_K.tolist(), ex.CAT_W_V.tolist()
SLIDE = ex.CAT_SLIDE_WEIGHTED


def test_cat_v_the_slip():
    # V(The) = x_The W_V: column by column
    v_the = [1.0 * 0.8 + 0.5 * 0.0 + 0.2 * 0.0 + 0.1 * 0.1,
             1.0 * 0.0 + 0.5 * 0.9 + 0.2 * 0.1 + 0.1 * 0.0,
             1.0 * 0.0 + 0.5 * 0.1 + 0.2 * 0.8 + 0.1 * 0.0,
             1.0 * 0.1 + 0.5 * 0.0 + 0.2 * 0.0 + 0.1 * 0.9]
    assert v_the == pytest.approx([0.81, 0.47, 0.21, 0.19])
    assert v_the == pytest.approx(row_times_matrix(X[THE], WV))
    assert not np.allclose(SLIDE["V_listed"][THE], v_the, atol=5e-3)     # slide: 0.82, 0.17
    _, _, V = helpers.project_qkv(ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V)
    np.testing.assert_allclose(V[THE], [0.81, 0.47, 0.21, 0.19], atol=1e-12)


def test_cat_k_end_slip():
    k_end = [0.1 * 1.0 + 0.1 * 0.2 + 0.1 * 0.0 + 1.0 * 0.0,
             0.1 * 0.2 + 0.1 * 1.0 + 0.1 * 0.0 + 1.0 * 0.0,
             0.1 * 0.0 + 0.1 * 0.0 + 0.1 * 1.0 + 1.0 * 0.3,
             0.1 * 0.0 + 0.1 * 0.0 + 0.1 * 0.3 + 1.0 * 1.0]
    assert k_end == pytest.approx([0.12, 0.12, 0.40, 1.03])
    assert SLIDE["K"][END] == pytest.approx([0.12, 0.12, 0.33, 1.03])  # the slide's slip
    assert SLIDE["K"][END][2] != pytest.approx(k_end[2], abs=0.05)
    _, K, _ = helpers.project_qkv(ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V)
    np.testing.assert_allclose(K[END], k_end, atol=1e-12)


def test_cat_listed_v_rows_repeat_k_rows():
    # The slide's V rows for cat, sat, <end> are K's rows, not x W_V.
    for j in (CAT, SAT, END):
        assert SLIDE["V_listed"][j] == SLIDE["K"][j]
        assert not np.allclose(SLIDE["V_listed"][j], row_times_matrix(X[j], WV), atol=5e-3)


def test_cat_q_k_v_match_slide_where_slide_is_right():
    Q_py = [row_times_matrix(X[i], WQ) for i in range(4)]
    K_py = [row_times_matrix(X[i], WK) for i in range(4)]
    V_py = [row_times_matrix(X[i], WV) for i in range(4)]
    np.testing.assert_allclose(Q_py, SLIDE["Q"], atol=1e-12)          # all of Q is right
    np.testing.assert_allclose(K_py[:3], SLIDE["K"][:3], atol=5e-3)    # K right but <end>
    # the V rows the final sum uses: cat and <end> right, The and sat slipped
    for j in (CAT, END):
        np.testing.assert_allclose(V_py[j], SLIDE["V_used_in_sum"][j], atol=5e-3)
    for j in (THE, SAT):
        assert not np.allclose(V_py[j], SLIDE["V_used_in_sum"][j], atol=5e-3)
    Q, K, V = helpers.project_qkv(ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V)
    np.testing.assert_allclose(Q, Q_py, atol=1e-12)
    np.testing.assert_allclose(K, K_py, atol=1e-12)
    np.testing.assert_allclose(V, V_py, atol=1e-12)


def test_cat_weighted_attention_for_the():
    q_the = row_times_matrix(X[THE], WQ)
    keys = [row_times_matrix(X[j], WK) for j in range(4)]
    values = [row_times_matrix(X[j], WV) for j in range(4)]
    scores = [dot_py(q_the, k) for k in keys]
    assert scores == pytest.approx([1.812, 1.7285, 1.602, 0.8385])
    # the slide's last score used its slipped K(<end>)
    assert SLIDE["scores_the"][END] == pytest.approx(dot_py(q_the, SLIDE["K"][END]), abs=1e-3)
    assert SLIDE["scores_the"][END] != pytest.approx(scores[END], abs=0.01)
    weights = softmax_py([s / math.sqrt(4) for s in scores])
    output = weighted_sum(weights, values)
    assert_3dp(weights, [0.288, 0.276, 0.259, 0.177])
    assert_3dp(output, [0.456, 0.482, 0.383, 0.404])
    # the slide's output is its weights times its (slipped) V rows, and it is off
    slide_output = weighted_sum(SLIDE["weights_the"], SLIDE["V_used_in_sum"])
    assert_3dp(slide_output, SLIDE["output_the"])
    assert not np.allclose(SLIDE["output_the"], output, atol=5e-3)

    Q, K, V = helpers.project_qkv(ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V)
    out, w = helpers.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(w[THE], weights, atol=1e-12)
    np.testing.assert_allclose(out[THE], output, atol=1e-12)
    assert_3dp(out[THE], [0.456, 0.482, 0.383, 0.404])


def test_cat_in_a_decoder_the_sees_only_itself():
    # With a causal mask, "The" (row 0) may only attend to itself: its output is V(The).
    Q, K, V = helpers.project_qkv(ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V)
    out, w = helpers.scaled_dot_product_attention(Q, K, V, helpers.causal_mask(4))
    np.testing.assert_allclose(w[THE], [1.0, 0.0, 0.0, 0.0], atol=0)
    np.testing.assert_allclose(out[THE], [0.81, 0.47, 0.21, 0.19], atol=1e-12)
    # "cat" mixes The and cat only, in proportion exp(score / 2)
    q_cat = row_times_matrix(X[CAT], WQ)
    s = [dot_py(q_cat, row_times_matrix(X[j], WK)) / 2.0 for j in (THE, CAT)]
    weights = softmax_py(s)
    np.testing.assert_allclose(w[CAT], weights + [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(
        out[CAT], weighted_sum(weights, [row_times_matrix(X[j], WV) for j in (THE, CAT)]),
        atol=1e-12)


# --- 3. "we wash our cats" ----------------------------------------------------------------
def test_wash_q1_k1_scores_z1():
    x1 = ex.WASH_X1.tolist()                                      # [3, 0, 1, -0.5]
    q1 = [3 * 1.5 + 0 * 3 + 1 * 1 - 0.5 * 9,
          3 * 1 + 0 * -2 + 1 * 2 - 0.5 * 4,
          3 * 2 + 0 * 5 + 1 * -2 - 0.5 * 2]
    k1 = [3 * 1 + 0 * -2 + 1 * 0.5 - 0.5 * 5,
          3 * 0.5 + 0 * 0.5 + 1 * 2 - 0.5 * 3,
          3 * 2 + 0 * 3 + 1 * -3 - 0.5 * 2]
    assert q1 == [1, 3, 3] and k1 == [1, 2, 2]
    assert row_times_matrix(x1, ex.WASH_W_Q.tolist()) == q1
    keys = [k1] + ex.WASH_K_REST.tolist()
    scores = [dot_py(q1, k) for k in keys]
    assert scores == [13, 24, 20, 12]                             # 1+6+6, 3+12+9, 5+6+9, 3+6+3
    weights = softmax_py([s / 8 for s in scores])                 # sqrt(64) = 8
    z1 = weighted_sum(weights, ex.WASH_V.tolist())
    assert_3dp(z1, [1.276, 3.151, 0.144])

    # helpers: project x1, then attend with d_k = 64 (zero-padding q and k changes no
    # dot product, and makes the scale 1/sqrt(64) = 1/8 as the activity assumes).
    # (the activity gives the values directly, so W_V here is only a placeholder)
    Q1, K1, _ = helpers.project_qkv([x1], ex.WASH_W_Q, ex.WASH_W_K, ex.WASH_W_Q)
    np.testing.assert_allclose(Q1[0], q1, atol=1e-12)
    np.testing.assert_allclose(K1[0], k1, atol=1e-12)
    pad = lambda M: np.pad(np.atleast_2d(M), ((0, 0), (0, 64 - 3)))  # noqa: E731
    out, w = helpers.scaled_dot_product_attention(pad(q1), pad(keys), ex.WASH_V)
    np.testing.assert_allclose(w[0], weights, atol=1e-12)
    np.testing.assert_allclose(out[0], z1, atol=1e-12)
    assert_3dp(out[0], [1.276, 3.151, 0.144])


def test_wash_scale_matters():
    # Scaling by sqrt(3) (the vectors' real length) would give a different, peakier z1.
    scores = [13, 24, 20, 12]
    z_sqrt3 = weighted_sum(softmax_py([s / math.sqrt(3) for s in scores]), ex.WASH_V.tolist())
    z_8 = weighted_sum(softmax_py([s / 8 for s in scores]), ex.WASH_V.tolist())
    assert not np.allclose(z_sqrt3, z_8, atol=0.05)
    keys = np.vstack([[1, 2, 2], ex.WASH_K_REST])
    out, _ = helpers.scaled_dot_product_attention([[1, 3, 3]], keys, ex.WASH_V)
    np.testing.assert_allclose(out[0], z_sqrt3, atol=1e-12)


# --- 4. "A A B A": large keys make attention peaked --------------------------------------
def test_aaba_peaked_attention():
    onehots = ex.AABA_E[ex.AABA_IDS]                              # A, A, B, A
    K = onehots @ ex.AABA_W_K                                     # 10 x one-hot
    np.testing.assert_array_equal(K, [[10, 0], [10, 0], [0, 10], [10, 0]])
    scores = [0 * k[0] + 1 * k[1] for k in K.tolist()]            # q = [0, 1]
    assert scores == [0, 0, 10, 0]

    peak_unscaled = math.exp(10) / (math.exp(10) + 3 * math.exp(0))
    assert peak_unscaled == pytest.approx(0.99986, abs=5e-6)
    assert round(peak_unscaled, 4) == 0.9999
    w = helpers.softmax(scores)
    assert w[2] == pytest.approx(peak_unscaled, rel=1e-12)
    np.testing.assert_allclose(w[[0, 1, 3]], (1 - peak_unscaled) / 3, rtol=1e-10)

    # helpers scale by 1/sqrt(d_k) = 1/sqrt(2): still peaked, a little less
    peak_scaled = math.exp(10 / math.sqrt(2)) / (math.exp(10 / math.sqrt(2)) + 3)
    assert_3dp(peak_scaled, 0.997)
    Q = np.tile(ex.AABA_QUERY, (4, 1))                            # every position asks
    V = onehots
    out, weights = helpers.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(weights[:, 2], peak_scaled, rtol=1e-12)
    np.testing.assert_allclose(out[:, 1], peak_scaled, rtol=1e-12)   # "how much B" in output
    assert peak_scaled < peak_unscaled

    # with W_K = I instead of 10 I the same query is far less sure
    flat = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 3)
    _, w_small = helpers.scaled_dot_product_attention(Q, onehots, V)
    np.testing.assert_allclose(w_small[:, 2], flat, rtol=1e-12)
    assert flat < 0.5


# --- 5. "it was too tired / too wide": static vs contextual embeddings -------------------
def test_it_static_same_contextual_different():
    words = {s: ex.IT_SENTENCES[s].split() for s in ex.IT_SENTENCES}
    assert words["tired"][:-1] == words["wide"][:-1] and words["tired"] != words["wide"]
    vocab = sorted(set(words["tired"]) | set(words["wide"]))
    E = np.random.default_rng(0).normal(size=(len(vocab), 8))
    X = {s: E[[vocab.index(w) for w in words[s]]] for s in words}
    it = words["tired"].index("it")
    np.testing.assert_array_equal(X["tired"][it], X["wide"][it])   # static: identical
    ctx = {s: helpers.simple_self_attention(X[s]) for s in X}
    assert not np.allclose(ctx["tired"][it], ctx["wide"][it])      # contextual: differ
    # ...but a causal (decoder) layer cannot see the last word from "it"
    mask = helpers.causal_mask(len(words["tired"]))
    dec = {s: helpers.scaled_dot_product_attention(X[s], X[s], X[s], mask)[0] for s in X}
    np.testing.assert_allclose(dec["tired"][it], dec["wide"][it], atol=0)
