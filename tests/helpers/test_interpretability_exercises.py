"""Notebook 14's exercise units (helpers/exercises/logit_lens.py, induction_scores.py,
ablate_heads.py, answer_ranks.py, direct_logit_attribution.py):
written expected values against the reference, every named mistake caught by a visible
case, the catalogue's answers judged by the references on every case."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

NAMES = ("logit_lens", "induction_scores", "ablate_heads", "answer_ranks",
         "direct_logit_attribution")


def _exercise(name):
    return importlib.import_module(f"helpers.exercises.{name}").EXERCISE


def _catalogue(name):
    return importlib.import_module(f"tests.catalogue.{name}")


def _function(source, name):
    from helpers import reference

    ns = {"np": np, **{n: getattr(reference, n) for n in reference.__all__}}
    exec(source, ns)                                   # noqa: S102 (our own catalogue)
    return ns[name]


def _same(a, b):
    return np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_written_expected_values_are_the_reference(name):
    ex = _exercise(name)
    written = [c for c in ex.all_cases() if c.answer is not None]
    assert written
    for c in written:
        assert _same(ex.reference(*c.args), c.answer), c.name


@pytest.mark.parametrize("name", NAMES)
def test_every_case_has_a_hidden_twin_and_every_mistake_a_visible_case(name):
    ex = _exercise(name)
    cases = ex.all_cases()
    assert any(c.hidden for c in cases) and any(not c.hidden for c in cases)
    assert len(ex.hints) >= 2 and len(ex.mistakes) >= 3
    for m in ex.mistakes:
        assert any(not _same(m.fn(*c.args), ex.reference(*c.args))
                   for c in cases if not c.hidden), m.key


@pytest.mark.parametrize("name", NAMES)
def test_catalogue_answers(name):
    ex, cat = _exercise(name), _catalogue(name)
    for key, source in cat.CORRECT.items():
        f = _function(source, name)
        assert all(_same(f(*c.args), ex.reference(*c.args)) for c in ex.all_cases()), key
    messages = " ".join(m.message.lower() for m in ex.mistakes)
    for key, (source, words) in cat.WRONG.items():
        f = _function(source, name)
        assert any(not _same(f(*c.args), ex.reference(*c.args))
                   for c in ex.all_cases() if not c.hidden), key
        if not key.startswith("unknown_"):             # a mistake no diagnosis names
            assert words.lower() in messages, key


def test_induction_scores_of_a_known_pattern_derived_by_hand():
    """Period 2, 1 layer, 2 heads on 4 tokens: head 0 attends to i - 1 from the second
    copy (rows 2, 3 -> columns 1, 2: the induction positions), head 1 to itself."""
    from helpers import interpretability

    P = np.zeros((1, 2, 4, 4))
    P[0, 0] = [[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    P[0, 1] = np.eye(4)
    assert np.allclose(interpretability.induction_scores(P, 2), [[1.0, 0.0]])
    P[0, 0, 3] = [0.5, 0, 0.5, 0]                      # row 3: half on column 2
    assert np.allclose(interpretability.induction_scores(P, 2), [[0.75, 0.0]])


def test_logit_lens_last_layer_is_the_models_prediction_in_torch():
    """The last layer read out through the lens is softmax(RMSNorm(h) W_U^T) as PyTorch's
    own RMSNorm computes it."""
    torch = pytest.importorskip("torch")
    from helpers import interpretability

    rng = np.random.default_rng(14)
    h, g, W = rng.normal(size=(3, 4, 6)), 1 + 0.2 * rng.normal(size=6), rng.normal(size=(9, 6))
    norm = torch.nn.RMSNorm(6, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor(g))
        want = torch.softmax(norm(torch.tensor(h)) @ torch.tensor(W).T, dim=-1).numpy()
    assert np.allclose(interpretability.logit_lens(h, g, W), want, rtol=1e-10, atol=1e-12)


def test_ablating_a_head_is_zeroing_its_rows_of_W_O():
    """Independent of the reference's loop: the same loss from the unablated forward of a
    model whose W_O has that head's d_h rows zeroed (notebook 08's language_model_forward)."""
    import copy

    from helpers import interpretability, reference
    from helpers.course import draw

    params = draw.seeded_lm(1439, V=7, d=6, n_ctx=8, n_blocks=2, ln_f=True)
    ids = np.array([3, 0, 6, 2, 2, 5, 1])
    for heads in ([], [(0, 1)], [(1, 0), (1, 2)], [(0, 0), (1, 1)]):
        cut = copy.deepcopy(params)
        for (b, h) in heads:
            cut["blocks"][b]["W_O"][2 * h:2 * h + 2] = 0.0       # d_h = 6 / 3
        want = reference.cross_entropy(reference.language_model_forward(ids, cut, 3)[:-1],
                                       ids[1:])
        assert np.isclose(interpretability.ablate_heads(ids, params, 3, heads), want,
                          rtol=1e-12), heads


def test_answer_ranks_against_a_sort():
    """The rank is the number of distinct-probability tokens above the target in a sort
    (ties left out), on random distributions with ties drawn in."""
    from helpers import interpretability

    rng = np.random.default_rng(1446)
    for _ in range(50):
        L, N, V = rng.integers(1, 4, 3) + np.array([0, 0, 2])
        D = rng.integers(1, 5, size=(L, N, V)).astype(float)    # small ints: ties
        D /= D.sum(axis=-1, keepdims=True)
        t = rng.integers(0, V, N)
        want = [[int(np.searchsorted(np.sort(-D[l, n]), -D[l, n, t[n]], side="left"))
                 for n in range(N)] for l in range(L)]
        assert interpretability.answer_ranks(D, t).tolist() == want


def test_direct_logit_attributions_add_up_to_the_attentions_share_of_the_logit():
    """Summed over heads and layers, the attributions are the target's logit of the
    summed head outputs (the linearity the method rests on)."""
    from helpers import interpretability

    rng = np.random.default_rng(1459)
    O, W, t = rng.normal(size=(3, 4, 5, 6)), rng.normal(size=(9, 6)), rng.integers(0, 9, 5)
    logits = O.sum(axis=(0, 1)) @ W.T                            # [N, V]
    got = interpretability.direct_logit_attribution(O, W, t).sum(axis=(0, 1))
    assert np.allclose(got, logits[np.arange(5), t], rtol=1e-12)
