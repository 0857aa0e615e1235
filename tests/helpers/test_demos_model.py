"""helpers.demos_model and the pictures/explorers of notebooks 05-08 (helpers.plots,
helpers.widgets): the hand-made heads really show their patterns, the per-head weights
agree with multi-head attention computed independently, the demo helpers fall back as
documented, and every picture renders."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

import helpers
from helpers import demos_model, plots, widgets
from helpers.examples import CAT_TOKENS, CAT_W_K, CAT_W_Q, CAT_W_V, CAT_X


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------
# Hand-made pattern heads
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pattern():
    layer = demos_model.pattern_heads()
    w = demos_model.head_weights(layer["X"], layer["W_Q"], layer["W_K"], layer["n_heads"])
    return layer, w


def test_pattern_heads_shapes_and_rows(pattern):
    layer, w = pattern
    n = len(layer["tokens"])
    assert layer["X"].shape == (n, 64) and layer["W_Q"].shape == (64, 64)
    assert w.shape == (4, n, n)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    assert not np.triu(w, k=1).any(), "causal: no weight above the diagonal"


def test_previous_token_head(pattern):
    _, w = pattern
    for i in range(1, w.shape[1]):
        assert np.argmax(w[0, i]) == i - 1 and w[0, i, i - 1] > 0.5


def test_delimiter_head(pattern):
    layer, w = pattern
    delims = [j for j, t in enumerate(layer["tokens"]) if t in ("<s>", ".")]
    for i in range(2, w.shape[1]):
        visible = [j for j in delims if j <= i]
        assert w[1, i, visible].sum() > 0.5, (i, w[1, i])


def test_bag_of_words_head_is_an_even_average(pattern):
    _, w = pattern
    for i in range(w.shape[1]):
        np.testing.assert_allclose(w[2, i, : i + 1], 1.0 / (i + 1))


def test_same_word_head_finds_the_earlier_the(pattern):
    layer, w = pattern
    first, second = [j for j, t in enumerate(layer["tokens"]) if t == "the"]
    assert w[3, second, first] > 0.3 and w[3, second, first] == pytest.approx(w[3, second, second])


def test_head_weights_agree_with_multi_head_attention():
    """With W_V = W_O = I, multi-head attention's output is the heads' weights applied to
    the column blocks of X: checks head_weights against the reference independently."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5, 6))
    W_Q, W_K = rng.standard_normal((2, 6, 6))
    w = demos_model.head_weights(X, W_Q, W_K, n_heads=3)                  # [3, 5, 5]
    # by hand, one head at a time
    for c in range(3):
        cols = slice(2 * c, 2 * c + 2)
        s = (X @ W_Q)[:, cols] @ (X @ W_K)[:, cols].T / np.sqrt(2)
        s = np.where(np.tril(np.ones((5, 5), bool)), s, -np.inf)
        np.testing.assert_allclose(w[c], _softmax_rows(s), rtol=1e-12)
    out = helpers.multi_head_attention(X, W_Q, W_K, np.eye(6), np.eye(6), n_heads=3)
    mixed = np.concatenate([w[c] @ X[:, 2 * c: 2 * c + 2] for c in range(3)], axis=1)
    np.testing.assert_allclose(out, mixed, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# yours_or_reference, random parameters, the demo language model
# ---------------------------------------------------------------------------------------


def test_yours_or_reference_uses_an_implemented_function():
    def softmax(z, axis=-1):
        return "mine"

    assert demos_model.yours_or_reference(softmax)([1.0, 2.0]) == "mine"


def test_yours_or_reference_falls_back_once_on_a_stub(capsys):
    calls = []

    def causal_mask(n):
        calls.append(n)
        raise NotImplementedError()

    fn = demos_model.yours_or_reference(causal_mask)
    np.testing.assert_array_equal(fn(3), np.tril(np.ones((3, 3), bool)))
    np.testing.assert_array_equal(fn(2), np.tril(np.ones((2, 2), bool)))
    assert calls == [3], "the stub is not called again once it said it is not implemented"
    assert capsys.readouterr().out.count("not implemented yet") == 1


def test_yours_or_reference_lets_other_errors_through():
    def embed(token_ids, E, P):
        raise ValueError("a bug of the learner")

    with pytest.raises(ValueError, match="a bug of the learner"):
        demos_model.yours_or_reference(embed)([0], np.eye(2), np.eye(2))


def test_yours_or_reference_with_an_explicit_fallback():
    def count_things(n):
        raise NotImplementedError

    assert demos_model.yours_or_reference(count_things, lambda n: 2 * n)(4) == 8


def test_random_block_params_shapes_and_seed():
    p = demos_model.random_block_params(d=6, d_ff=10, seed=5)
    sizes = {"d": 6, "d_ff": 10}
    assert set(p) == set(helpers.BLOCK_PARAM_SHAPES)
    for name, shape in helpers.BLOCK_PARAM_SHAPES.items():
        assert p[name].shape == tuple(sizes[s] for s in shape), name
    q = demos_model.random_block_params(d=6, d_ff=10, seed=5)
    assert all(np.array_equal(p[k], q[k]) for k in p)
    r = demos_model.random_block_params(d=6, d_ff=10, seed=6)
    assert not np.array_equal(p["W_Q"], r["W_Q"])


def test_stand_in_model_when_the_weights_are_missing(monkeypatch, capsys, tmp_path):
    import helpers.pretrained

    monkeypatch.setattr(helpers.pretrained, "CHAR_LM_PATH", tmp_path / "missing.npz")
    params, n_heads, encode, decode = demos_model.load_demo_lm()
    assert "UNTRAINED" in capsys.readouterr().out
    ids = encode("ROMEO:\nHi!")
    assert decode(ids) == "ROMEO:\nHi!"
    logits = helpers.language_model_forward(ids, params, n_heads)
    assert logits.shape == (len(ids), params["E"].shape[0]) and np.isfinite(logits).all()


def test_char_lm_head_weights_of_the_first_layer():
    pytest.importorskip("helpers.pretrained")
    try:
        model = helpers.pretrained.load_char_lm()
    except FileNotFoundError:
        pytest.skip("the pretrained model file is not installed")
    params, n_heads, encode, _ = model
    text = "To be, or not"
    w = demos_model.char_lm_head_weights(text, 0, model)
    assert w.shape == (n_heads, len(text), len(text))
    # layer 0 reads the layer-normed embeddings: recompute one head by hand
    p = params["blocks"][0]
    x = params["E"][encode(text)] + params["P"][: len(text)]
    t1 = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    t1 = p["ln1_gamma"] * t1 + p["ln1_beta"]
    d_h = params["E"].shape[1] // n_heads
    s = (t1 @ p["W_Q"])[:, :d_h] @ (t1 @ p["W_K"])[:, :d_h].T / np.sqrt(d_h)
    s = np.where(np.tril(np.ones(s.shape, bool)), s, -np.inf)
    np.testing.assert_allclose(w[0], _softmax_rows(s), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="layer must be"):
        demos_model.char_lm_head_weights(text, len(params["blocks"]), model)


def test_use_one_blas_thread_keeps_results():
    a = np.random.default_rng(0).standard_normal((200, 300))
    before = a @ a.T
    assert isinstance(demos_model.use_one_blas_thread(), bool)
    np.testing.assert_allclose(a @ a.T, before, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Pictures and explorers of notebooks 05-08
# ---------------------------------------------------------------------------------------


def test_pictures_render():
    Q, K, V = helpers.project_qkv(CAT_X, CAT_W_Q, CAT_W_K, CAT_W_V)
    _, w_full = helpers.scaled_dot_product_attention(Q, K, V)
    _, w_causal = helpers.scaled_dot_product_attention(Q, K, V, helpers.causal_mask(4))
    layer = demos_model.pattern_heads()
    w = demos_model.head_weights(layer["X"], layer["W_Q"], layer["W_K"], layer["n_heads"])
    blocks = [demos_model.random_block_params(8, 16, seed=s) for s in range(2)]
    probs = helpers.softmax(np.arange(20.0))
    figures = [
        plots.masked_vs_unmasked(w_full, w_causal, CAT_TOKENS),
        plots.masking_explorer_figure(CAT_X, CAT_W_Q, CAT_W_K, CAT_W_V, CAT_TOKENS, 2, True, 3.0),
        plots.heads_side_by_side(w, layer["tokens"], layer["head_names"], title="t"),
        plots.heads_side_by_side(w[:3], layer["tokens"]),
        plots.residual_stream_figure(np.ones((3, 8)), blocks, n_heads=2),
        plots.layer_norm_figure(np.arange(5.0), 2.0, 1.0, 1.5, -0.5),
        plots.next_token_figure(probs, [chr(65 + i) for i in range(20)], chosen=19, note="n"),
        plots.surprise_figure("abc", [0.5, 1.0, 2.0]),
    ]
    for fig in figures:
        assert isinstance(fig, Figure)
        assert plots.figure_to_png(fig).startswith(b"\x89PNG")


@pytest.mark.parametrize("name", ["masking_explorer", "heads_explorer", "layer_norm_explorer",
                                  "next_token_temperature_explorer"])
def test_explorers_draw_and_update(name):
    explorer = getattr(widgets, name)()
    first = explorer.png()
    assert first.startswith(b"\x89PNG")
    control, spec = next(iter(explorer.controls.items()))
    if isinstance(spec, widgets.Slider):
        explorer.update(**{control: spec.max})
    else:
        options = [o[1] if isinstance(o, tuple) else o for o in spec.options]
        explorer.update(**{control: options[-1]})
    assert explorer.png().startswith(b"\x89PNG") and explorer.png() != first


# ---------------------------------------------------------------------------------------
# What notebooks 07 and 08 say about the trained model (issue 14: text and picture agree)
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def char_lm():
    from helpers.pretrained import load_char_lm
    return load_char_lm()


def test_residual_stream_claims_of_07_hold_for_the_trained_model(char_lm):
    """07's plot text: the updates are long next to the stream, blocks 2 and 3 barely
    lengthen it, and the attention of blocks 3 and 4 shortens it (an open circle below
    the filled one before it)."""
    params, n_heads, encode, _ = char_lm
    x = params["E"][encode("ROMEO:\nBut soft, what light breaks?")]
    x = x + params["P"][: len(x)]
    r = plots.residual_stream_lengths(x, params["blocks"], n_heads)
    stream = r["stream"]                      # input, then (after attention, after block)
    assert r["steps"].tolist() == [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4]
    after_block, after_attention = stream[0::2], stream[1::2]
    assert after_attention[2] < after_block[2] and after_attention[3] < after_block[3]
    for block in (2, 3):                      # barely longer, though the updates are long:
        grew = after_block[block] - after_block[block - 1]     # about the text's 8 -> 8.5
        assert grew < 0.6 < 3 < r["attention"][block - 1] + r["feed_forward"][block - 1]
    assert 7 < after_block[1] < 10 and after_block[4] > after_block[3] + 3
    updates = np.concatenate([r["attention"], r["feed_forward"]])   # "from about 1.5 to 8"
    assert 1.4 < updates.min() < 2 and 8 < updates.max() < 9


def test_next_character_claims_of_08_hold_for_the_trained_model(char_lm):
    """08 explains why the model predicts "s" after "that is the ": a spread of first
    letters with "s" on top at about 12 %, "q" about half a per cent, then "u" after "q"."""
    params, n_heads, encode, decode = char_lm
    prompt = "To be, or not to be, that is the "
    probs = _softmax_rows(helpers.language_model_forward(encode(prompt), params, n_heads)[-1])
    top = np.argsort(probs)[::-1]
    assert decode([top[0]]) == "s" and 0.10 < probs[top[0]] < 0.14
    assert sorted(decode(top[:5])) == sorted("swmpc")
    assert 0.002 < probs[encode("q")[0]] < 0.01
    after_q = _softmax_rows(helpers.language_model_forward(encode(prompt + "q"), params,
                                                           n_heads)[-1])
    assert decode([int(np.argmax(after_q))]) == "u" and after_q.max() > 0.95
