"""``helpers.training``: every backward against central differences (always), against
``torch.autograd`` in float64 (stored in ``tests/data/training_reference.npz`` by
``tools/make_training_reference.py``: always; live with torch installed), AdamW against
hand-derived steps and ``torch.optim.AdamW``, the schedule and clipping by hand."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import helpers
import make_training_reference as tool
from helpers import reference as R
from helpers import training as T

TOL = dict(rtol=1e-10, atol=1e-10)


def require_torch():
    return pytest.importorskip(
        "torch", exc_type=ImportError,
        reason="PyTorch is not installed or fails to import (optional dev dependency)")


@pytest.fixture(scope="module")
def stored():
    with np.load(tool.OUT_PATH, allow_pickle=False) as data:
        x = {k[3:]: data[k] for k in data.files if k.startswith("in/")}
        out = {k[4:]: data[k] for k in data.files if k.startswith("out/")}
    return x, out


def helpers_outputs(x: dict) -> dict:
    """What ``helpers.training`` computes for each entry of ``tool.torch_outputs``."""
    out = {}
    out["ce/dlogits"] = T.cross_entropy_backward(x["ce/logits"], x["ce/targets"])
    out["linear/dx"], out["linear/dW"], out["linear/db"] = T.linear_backward(
        x["linear/x"], x["linear/W"], x["linear/dy"])
    out["relu/dz"] = T.relu_backward(x["relu/z"], x["relu/dy"])
    out["gelu/dz"] = T.gelu_backward(x["gelu/z"], x["gelu/dy"])
    out["ln/dx"], out["ln/dgamma"], out["ln/dbeta"] = T.layer_norm_backward(
        x["ln/x"], x["ln/gamma"], x["ln/dy"])
    out["att/dQ"], out["att/dK"], out["att/dV"] = T.attention_backward(
        x["att/Q"], x["att/K"], x["att/V"], x["att/mask"], x["att/dy"])
    out["embed/dE"], out["embed/dP"] = T.embed_backward(
        x["embed/ids"], x["embed/dy"], *x["embed/E"].shape[:1], x["embed/P"].shape[0])
    block = {k: x[f"block/params/{k}"] for k in tool.BLOCK_KEYS}
    out["block/dx"], g = T.transformer_block_backward(x["block/x"], block, tool.HEADS,
                                                      x["block/dy"])
    out.update({f"block/grads/{k}": v for k, v in g.items()})
    loss, g = T.loss_and_grads(tool.lm_params(x), x["lm/ids"], x["lm/targets"], tool.HEADS)
    out["lm/loss"] = np.array(loss)
    out.update({f"lm/grads/{k}": v for k, v in T.flatten(g).items()})
    return out


def test_stored_torch_gradients(stored):
    x, expected = stored
    got = helpers_outputs(x)
    assert set(got) == set(expected)
    for k in expected:
        np.testing.assert_allclose(got[k], expected[k], **TOL, err_msg=k)


def test_stored_file_regenerates(stored):
    require_torch()
    x, expected = stored
    for k, v in tool.inputs().items():
        np.testing.assert_array_equal(x[k], v, err_msg=k)
    fresh = tool.torch_outputs(x)
    for k in expected:
        np.testing.assert_allclose(fresh[k], expected[k], rtol=1e-13, atol=1e-14, err_msg=k)


def test_live_torch_on_fresh_inputs():
    """A new draw (other shapes, 3 heads, no final layer norm) against torch live."""
    torch = require_torch()
    rng = np.random.default_rng(7)
    params = T.init_params(13, 12, 3, 20, 9, seed=3, dtype=np.float64)
    params = T.tree_map(lambda a: a + 0.2 * rng.standard_normal(a.shape), params)
    del params["ln_f_gamma"], params["ln_f_beta"]
    ids, tg = rng.integers(0, 13, (4, 9)), rng.integers(0, 13, (4, 9))
    loss, grads = T.loss_and_grads(params, ids, tg, 3)
    tp = T.tree_map(lambda a: torch.tensor(a, requires_grad=True), params)
    tl = tool.torch_lm_loss(torch, tp, torch.tensor(ids), torch.tensor(tg), 3)
    flat = T.flatten(tp)
    tg_ = torch.autograd.grad(tl, list(flat.values()))
    assert loss == pytest.approx(float(tl.detach()), rel=1e-12)
    for (k, g), mine in zip(zip(flat, tg_), T.flatten(grads).values()):
        np.testing.assert_allclose(mine, g.numpy(), **TOL, err_msg=k)


# -- gradient checks (central differences), no torch needed ---------------------------


def _check(f, x, analytic, tol=1e-7):
    num = T.numerical_gradient(f, x)
    err = T.relative_error(num, analytic)
    assert err < tol, err


def test_numerical_gradient_of_known_functions():
    x = np.array([[0.5, -1.0], [2.0, 3.0]])
    np.testing.assert_allclose(T.numerical_gradient(lambda a: np.sum(a ** 3), x), 3 * x ** 2,
                               rtol=1e-9)
    g = T.numerical_gradient(lambda a: math.sin(a[0]) * a[1], np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2 * math.cos(1.0), math.sin(1.0)], rtol=1e-9)
    assert T.relative_error([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert T.relative_error([0.0], [0.0]) == 0.0
    assert T.relative_error([1.0, 0.0], [-1.0, 0.0]) == pytest.approx(1.0)


def test_backward_pieces_against_central_differences():
    rng = np.random.default_rng(3)
    # layer norm, with gamma: dx through a random projection of the output
    x, gam, bet, dy = (rng.standard_normal((3, 6)) + 1, 1 + rng.standard_normal(6),
                       rng.standard_normal(6), rng.standard_normal((3, 6)))
    dx, dg, db = T.layer_norm_backward(x, gam, dy)
    _check(lambda a: np.sum(R.layer_norm(a, gam, bet) * dy), x, dx)
    _check(lambda g: np.sum(R.layer_norm(x, g, bet) * dy), gam, dg)
    _check(lambda b: np.sum(R.layer_norm(x, gam, b) * dy), bet, db)
    # causal attention
    Q, K, V = (rng.standard_normal((4, 3)) for _ in range(3))
    mask, dO = R.causal_mask(4), rng.standard_normal((4, 3))
    dQ, dK, dV = T.attention_backward(Q, K, V, mask, dO)
    _check(lambda q: np.sum(R.scaled_dot_product_attention(q, K, V, mask)[0] * dO), Q, dQ)
    _check(lambda k: np.sum(R.scaled_dot_product_attention(Q, k, V, mask)[0] * dO), K, dK)
    _check(lambda v: np.sum(R.scaled_dot_product_attention(Q, K, v, mask)[0] * dO), V, dV)
    # cross-entropy
    logits, tg = rng.standard_normal((5, 4)), np.array([1, 1, 0, 3, 1])
    _check(lambda z: R.cross_entropy(z, tg), logits, T.cross_entropy_backward(logits, tg))
    # GELU, ReLU away from 0
    z, dz = rng.standard_normal(7), rng.standard_normal(7)
    _check(lambda a: np.sum(T.gelu(a) * dz), z, T.gelu_backward(z, dz))
    _check(lambda a: np.sum(np.maximum(a, 0) * dz), z, T.relu_backward(z, dz))
    # embedding with repeated ids
    E, P = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    ids, dX = np.array([1, 3, 1, 1]), rng.standard_normal((4, 3))
    dE, dP = T.embed_backward(ids, dX, 5, 4)
    _check(lambda e: np.sum(R.embed(ids, e, P) * dX), E, dE)
    _check(lambda p: np.sum(R.embed(ids, E, p) * dX), P, dP)
    # a block, non-causal too
    block = T.init_params(7, 6, 1, 8, 4, seed=1, dtype=np.float64)["blocks"][0]
    block = T.tree_map(lambda a: a + 0.3 * rng.standard_normal(a.shape), block)
    x, dh = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    for causal in (True, False):
        dx, g = T.transformer_block_backward(x, block, 2, dh, causal=causal)
        _check(lambda a: np.sum(R.transformer_block(a, block, 2, causal) * dh), x, dx)
        for k in ("ln1_gamma", "W_Q", "W_K", "W_O", "b1", "ln2_beta"):
            def f(w, k=k):
                return np.sum(R.transformer_block(x, {**block, k: w}, 2, causal) * dh)
            _check(f, block[k], g[k])


def test_loss_and_grads_against_central_differences():
    rng = np.random.default_rng(5)
    params = T.init_params(6, 4, 1, 8, 5, seed=2, dtype=np.float64)
    params = T.tree_map(lambda a: a + 0.3 * rng.standard_normal(a.shape), params)
    ids, tg = np.array([2, 2, 5, 0, 2]), np.array([2, 5, 0, 2, 1])
    loss, grads = T.loss_and_grads(params, ids, tg, 2)
    assert loss == pytest.approx(R.cross_entropy(R.language_model_forward(ids, params, 2), tg),
                                 rel=1e-13)
    flat, fg = T.flatten(params), T.flatten(grads)
    assert list(flat) == list(fg)
    for k in ("E", "P", "ln_f_gamma", "blocks.0.W_V", "blocks.0.ln1_beta", "blocks.0.W2"):
        def f(w, k=k):
            return R.cross_entropy(R.language_model_forward(ids, T.unflatten({**flat, k: w}), 2),
                                   tg)
        _check(f, flat[k], fg[k])


def test_tied_embedding_gets_both_gradients():
    """E's gradient is the head's plus the embedding's: either alone fails the check."""
    rng = np.random.default_rng(9)
    params = T.init_params(5, 4, 1, 8, 4, seed=4, dtype=np.float64)
    params = T.tree_map(lambda a: a + 0.3 * rng.standard_normal(a.shape), params)
    ids, tg = np.array([1, 1, 3]), np.array([1, 3, 0])
    _, g = T.loss_and_grads(params, ids, tg, 2)

    def f(E):
        return R.cross_entropy(R.language_model_forward(ids, {**params, "E": E}, 2), tg)

    num = T.numerical_gradient(f, params["E"])
    assert T.relative_error(num, g["E"]) < 1e-7
    # the embedding path alone: the gradient of the head is not zero
    h = R.layer_norm(R.transformer_block(R.embed(ids, params["E"], params["P"]),
                                         params["blocks"][0], 2),
                     params["ln_f_gamma"], params["ln_f_beta"])
    head = T.cross_entropy_backward(h @ params["E"].T, tg).T @ h
    assert T.relative_error(num, g["E"] - head) > 1e-2


def test_float32_matches_float64():
    rng = np.random.default_rng(11)
    p64 = T.init_params(8, 8, 2, 16, 6, seed=0, dtype=np.float64)
    p32 = T.tree_map(lambda a: a.astype(np.float32), p64)
    ids, tg = rng.integers(0, 8, (2, 6)), rng.integers(0, 8, (2, 6))
    l64, g64 = T.loss_and_grads(p64, ids, tg, 2)
    l32, g32 = T.loss_and_grads(p32, ids, tg, 2)
    assert l32 == pytest.approx(l64, rel=1e-5)
    for k, v in T.flatten(g32).items():
        assert v.dtype == np.float32, k
        assert T.relative_error(v, T.flatten(g64)[k]) < 1e-4, k


def test_embed_backward_repeated_ids_accumulate():
    dX = np.arange(12.0).reshape(4, 3)
    dE, dP = T.embed_backward([2, 0, 2, 2], dX, 3, 5)
    np.testing.assert_array_equal(dE, [[3, 4, 5], [0, 0, 0], [0 + 6 + 9, 1 + 7 + 10, 2 + 8 + 11]])
    np.testing.assert_array_equal(dP, np.vstack([dX, np.zeros((1, 3))]))


def test_no_warnings_on_extreme_finite_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        T.cross_entropy_backward([[1e300, -1e300, 0.0]], [1])
        dx, dg, db = T.layer_norm_backward([[1e300, -1e300, 3e299], [1e-300, 0.0, 2e-300],
                                           [5.0, 5.0, 5.0]], [1.0, 2.0, 0.5],
                                          np.ones((3, 3)))
        assert np.isfinite(dx).all() and np.isfinite(dg).all()
        T.gelu_backward([-1e300, 1e300, 0.0, -40.0], [1.0, 1.0, 1.0, 1.0])
        T.attention_backward([[1e3, 0.0]], [[1e3, 0.0], [-1e3, 0.0]], [[1.0], [2.0]], None,
                             [[1.0]])
        with pytest.raises(ValueError, match="overflows float64"):
            T.linear_backward([[1e200]], [[1e200]], [[1e200]])


# -- optimisation ---------------------------------------------------------------------


def test_adamw_first_step_by_hand():
    """t = 1: m_hat = g and v_hat = g^2, so the step is lr * g / (|g| + eps)."""
    theta, g = np.array([1.0, -2.0, 0.5]), np.array([0.3, -4.0, 0.0])
    new, m, v = T.adamw_update(theta, g, np.zeros(3), np.zeros(3), 1, lr=0.1,
                               weight_decay=0.5, eps=1e-8)
    expected = theta * (1 - 0.1 * 0.5) - 0.1 * g / (np.abs(g) + 1e-8)
    np.testing.assert_allclose(new, expected, rtol=1e-14)
    np.testing.assert_allclose(m, 0.1 * g)
    np.testing.assert_allclose(v, 0.001 * g * g)


def test_adamw_steps_against_torch():
    torch = require_torch()
    rng = np.random.default_rng(1)
    params = {"E": rng.standard_normal((4, 3)), "blocks": [{"W_Q": rng.standard_normal((3, 3)),
                                                            "b1": rng.standard_normal(3)}]}
    tp = [torch.tensor(a, requires_grad=True) for a in T.flatten(params).values()]
    names = list(T.flatten(params))
    decay = [p for n, p in zip(names, tp) if T.decays(n)]
    rest = [p for n, p in zip(names, tp) if not T.decays(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=0.01, betas=(0.9, 0.99), eps=1e-8)
    state = T.adamw_init(params)
    for step in range(5):
        grads = T.tree_map(lambda a: rng.standard_normal(a.shape), params)
        lr = T.lr_schedule(step, 5, 0.01, 2)
        for group in opt.param_groups:
            group["lr"] = lr
        for p, g in zip(tp, T.flatten(grads).values()):
            p.grad = torch.tensor(g)
        opt.step()
        params, state = T.adamw_step(params, grads, state, lr, betas=(0.9, 0.99),
                                     weight_decay=0.1)
        for n, p in zip(names, tp):
            np.testing.assert_allclose(T.flatten(params)[n], p.detach().numpy(),
                                       rtol=1e-12, atol=1e-14, err_msg=f"{n} step {step}")


def test_decays_only_block_matrices():
    assert [k for k in ("E", "P", "ln_f_gamma", "blocks.0.W_Q", "blocks.3.W2", "blocks.0.b1",
                        "blocks.1.ln2_gamma") if T.decays(k)] == ["blocks.0.W_Q", "blocks.3.W2"]


def test_lr_schedule_by_hand():
    assert T.lr_schedule(0, 100, 1.0, 10) == pytest.approx(0.1)
    assert T.lr_schedule(9, 100, 1.0, 10) == pytest.approx(1.0)
    assert T.lr_schedule(10, 100, 1.0, 10) == pytest.approx(1.0)
    assert T.lr_schedule(55, 100, 1.0, 10) == pytest.approx(0.1 + 0.9 * 0.5)
    assert T.lr_schedule(100, 100, 1.0, 10) == pytest.approx(0.1)


def test_clip_by_global_norm():
    grads = {"a": np.array([3.0, 0.0]), "b": [{"c": np.array([[4.0]])}]}
    clipped, norm = T.clip_by_global_norm(grads, 1.0)
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose(clipped["a"], [3 / (5 + 1e-6), 0.0])
    np.testing.assert_allclose(clipped["b"][0]["c"], [[4 / (5 + 1e-6)]])
    same, _ = T.clip_by_global_norm(grads, 10.0)
    np.testing.assert_array_equal(same["a"], grads["a"])
