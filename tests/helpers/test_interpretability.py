"""Notebook 14's first references (helpers/interpretability.py) against independent
computations: the logit lens of the last layer is the model's own distribution, induction
scores on synthetic patterns with a known answer, ablating nothing changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import interpretability as interp
from helpers import reference
from helpers.course import draw


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
