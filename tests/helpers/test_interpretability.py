"""Notebook 14's first references (helpers/interpretability.py) against independent
computations: the logit lens of the last layer is the model's own distribution, induction
scores on synthetic patterns with a known answer, ablating nothing changes nothing. Then
its pictures (helpers/plots/interpretability.py), and what its section on SmolLM2 says of
the real model (skipped without the model)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import interpretability as interp
from helpers import llama, plots, reference
from helpers.course import draw
from notebook_helpers import require_smollm2


def test_logit_lens_reads_each_layer_through_the_final_norm_and_unembedding():
    rng = np.random.default_rng(0)
    L, N, d, V = 3, 4, 6, 7
    hs = rng.normal(size=(L + 1, N, d)) * rng.uniform(0.1, 10, size=(L + 1, 1, 1))
    w, W_U = rng.normal(size=d), rng.normal(size=(V, d))
    got = interp.logit_lens(hs, w, W_U)
    for l in range(L + 1):
        for i in range(N):
            h = hs[l, i]
            normed = w * h / np.sqrt(np.mean(h ** 2) + 1e-5)
            logits = np.array([normed @ W_U[v] for v in range(V)])
            want = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
            assert np.allclose(got[l, i], want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("T", [2, 3, 7])
def test_induction_scores_of_synthetic_patterns(T):
    """Head (0, 0) attends exactly to the token after the earlier copy, head (0, 1)
    uniformly over the visible tokens, head (1, 0) to itself, head (1, 1) half and half."""
    n = 2 * T
    induction = np.zeros((n, n))
    induction[0, 0] = 1.0
    for i in range(1, n):
        induction[i, i - T + 1 if i >= T else 0] = 1.0
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    itself = np.eye(n)
    patterns = np.array([[induction, uniform], [itself, (induction + itself) / 2]])
    want = np.array([[1.0, np.mean([1 / (i + 1) for i in range(T, n)])],
                     [1.0 if T == 1 else 0.0, 0.5]])
    assert np.allclose(interp.induction_scores(patterns, T), want)


def test_ablating_no_head_gives_the_model_loss_and_ablating_changes_it():
    params = draw.seeded_lm(14, V=9, d=8, n_ctx=10, n_blocks=2, ln_f=True, e_scale=1.0)
    ids = np.array([1, 4, 2, 8, 0, 3, 3, 5])
    full = reference.cross_entropy(reference.language_model_forward(ids, params, 2)[:-1],
                                   ids[1:])
    assert np.isclose(interp.ablate_heads(ids, params, 2, []), full, rtol=1e-12)
    every = [(b, c) for b in range(2) for c in range(2)]
    zeroed = dict(params, blocks=[dict(p, W_O=np.zeros_like(p["W_O"]))
                                  for p in params["blocks"]])
    want = reference.cross_entropy(reference.language_model_forward(ids, zeroed, 2)[:-1],
                                   ids[1:])
    assert np.isclose(interp.ablate_heads(ids, params, 2, every), want, rtol=1e-12)
    assert not np.isclose(interp.ablate_heads(ids, params, 2, [(0, 1)]), full)


def test_the_pictures_of_notebook_14_draw():
    rng = np.random.default_rng(3)
    scores = rng.uniform(0, 1, size=(30, 9))
    fig = plots.induction_heads_figure(scores, top=3)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    b, c = np.unravel_index(scores.argmax(), scores.shape)
    assert len(labels) == 3 and labels[0] == f"block {b}, head {c}: {scores.max():.2f}"
    ranks = rng.integers(0, 1000, size=(31, 4))
    lens = plots.lens_ranks_figure(ranks, ["a -> b", "b -> c", "c -> d", "d -> e"])
    for figure in (fig, lens, plots.induction_heads_figure(scores[:2, :3], top=0, title="t")):
        assert plots.figure_to_png(figure).startswith(b"\x89PNG")


def test_smollm2_copies_a_repeated_run_and_finds_paris_late():
    """What notebook 14 says of SmolLM2: strong induction heads in blocks 17 and 18, a
    second copy far easier than the first, and ' Paris' after 'the city of' first at the
    top of the logit lens in the last few layers."""
    require_smollm2()
    params, config = llama.load_smollm2()
    run = np.random.default_rng(14).integers(1000, 20000, 25)     # the notebook's run
    rep = np.concatenate([run, run])
    streams, patterns = llama.forward_recorded(rep, params, config)
    scores = interp.induction_scores(patterns, 25)                # [30, 9]
    assert scores.max() > 0.8 and set(np.argwhere(scores > 0.8)[:, 0]) <= {17, 18}
    logits = llama.rms_norm(streams[-1], params["norm"], config.eps) @ params["E"].T
    first = reference.cross_entropy(logits[:24], rep[1:25])
    second = reference.cross_entropy(logits[25:-1], rep[26:])
    assert second < first / 4
    ids = llama.load_tokenizer().encode("The Eiffel Tower is in the city of Paris").ids
    streams, _ = llama.forward_recorded(ids, params, config)
    lens = interp.logit_lens(streams[:, -2:-1], params["norm"], params["E"])   # ' of'
    ranks = interp.answer_ranks(lens, ids[-1:])[:, 0]             # [31]
    top = np.flatnonzero(ranks == 0)
    assert len(top) and top[0] >= config.n_layers - 5 and ranks[config.n_layers // 2] > 100
