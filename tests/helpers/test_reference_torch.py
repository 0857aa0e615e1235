"""``helpers`` agrees with PyTorch (float64) to 1e-10.

* Always (no torch needed): ``helpers`` reproduces the torch outputs stored in
  ``tests/data/torch_reference.npz`` by ``tools/make_torch_reference.py``.
* With torch installed: regenerating the file gives the same numbers (so it cannot
  drift), and ``helpers`` matches torch live on freshly drawn inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import helpers
import make_torch_reference as tool

NPZ = tool.OUT_PATH  # tests/data/torch_reference.npz
TOL = dict(rtol=1e-10, atol=1e-10)


def require_torch():
    """torch, or skip: it is an optional dev dependency (any ImportError skips)."""
    return pytest.importorskip(
        "torch", exc_type=ImportError,
        reason="PyTorch is not installed or fails to import (optional dev dependency)")


def helpers_outputs(x: dict) -> dict:
    """What ``helpers`` computes for each entry of ``tool.torch_outputs``."""
    out = {}
    out["softmax/rows"] = helpers.softmax(x["softmax/z"], axis=-1)
    out["softmax/cols"] = helpers.softmax(x["softmax/z"], axis=0)

    Q, K, V = x["sdpa/Q"], x["sdpa/K"], x["sdpa/V"]
    out["sdpa/out"], out["sdpa/weights"] = helpers.scaled_dot_product_attention(Q, K, V)
    out["sdpa/out_masked"], _ = helpers.scaled_dot_product_attention(Q, K, V, x["sdpa/mask"])
    n = x["causal/Q"].shape[-2]
    out["causal/out"], _ = helpers.scaled_dot_product_attention(
        x["causal/Q"], x["causal/K"], x["causal/V"], helpers.causal_mask(n))

    W = [x[f"mha/{name}"] for name in ("W_Q", "W_K", "W_V", "W_O")]
    for h in tool.MHA_HEADS:
        out[f"mha/causal_h{h}"] = helpers.multi_head_attention(x["mha/X"], *W, h, causal=True)
        out[f"mha/full_h{h}"] = helpers.multi_head_attention(x["mha/X"], *W, h, causal=False)

    out["ln/out"] = helpers.layer_norm(x["ln/x"], x["ln/gamma"], x["ln/beta"])

    block = {k: x[f"block/params/{k}"] for k in tool.BLOCK_KEYS}
    out["block/out"] = helpers.transformer_block(x["block/x"], block, tool.BLOCK_HEADS)

    lm = tool.unflatten_params(x, "lm/params")
    ids = x["lm/ids"]
    out["lm/logits"] = helpers.language_model_forward(ids, lm, tool.LM_HEADS)
    out["lm/loss"] = helpers.cross_entropy(out["lm/logits"][:-1], ids[1:])
    out["lm/generated"] = helpers.generate(x["lm/prompt"], lm, tool.LM_HEADS,
                                           tool.LM_NEW_TOKENS)
    out["ce/loss"] = helpers.cross_entropy(x["ce/logits"], x["ce/targets"])
    return out


@pytest.fixture(scope="module")
def stored():
    with np.load(NPZ) as data:
        inputs = {k[3:]: data[k] for k in data.files if k.startswith("in:")}
        outputs = {k[4:]: data[k] for k in data.files if k.startswith("out:")}
    return inputs, outputs


# --- always: the stored torch outputs ------------------------------------------------------
def test_stored_file_is_small_and_complete(stored):
    inputs, outputs = stored
    assert NPZ.stat().st_size < 200_000
    assert set(outputs) == set(helpers_outputs(inputs))
    for name, value in inputs.items():
        assert value.dtype in (np.float64, np.int64, np.bool_), name
    for name, value in outputs.items():
        assert value.dtype in (np.float64, np.int64), name


def test_stored_inputs_come_from_the_seed(stored):
    """The inputs are NumPy's, from tool.SEED: rebuilding them needs no torch."""
    inputs, _ = stored
    fresh = tool.make_inputs(tool.SEED)
    assert set(fresh) == set(inputs)
    for name in fresh:
        np.testing.assert_array_equal(
            fresh[name], inputs[name],
            err_msg=f"{name}: NumPy's random stream changed? rerun tools/make_torch_reference.py")


@pytest.mark.parametrize("name", sorted(helpers_outputs(tool.make_inputs())))
def test_helpers_reproduce_stored_torch_outputs(stored, name):
    inputs, outputs = stored
    got = helpers_outputs(inputs)[name]
    expected = outputs[name]
    assert np.shape(got) == expected.shape, name
    if expected.dtype == np.int64:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, **TOL, err_msg=name)


def test_stored_outputs_are_not_trivial(stored):
    """Guard against a degenerate reference: masks and heads change the answers."""
    _, out = stored
    assert not np.allclose(out["sdpa/out"], out["sdpa/out_masked"])
    assert not np.allclose(out["mha/causal_h2"], out["mha/full_h2"])
    assert not np.allclose(out["mha/causal_h2"], out["mha/causal_h4"])
    assert out["lm/logits"].shape == (7, 11) and out["ce/loss"] > 1.0


# --- with torch: regeneration and live comparisons -------------------------------------------
@pytest.mark.torch
def test_regenerating_gives_the_stored_numbers(stored):
    require_torch()
    inputs, outputs = stored
    fresh = tool.torch_outputs(tool.make_inputs(tool.SEED))
    assert set(fresh) == set(outputs)
    for name in fresh:
        # 1e-12, not 0: torch's float64 kernels may round differently on another CPU
        np.testing.assert_allclose(fresh[name], outputs[name], rtol=1e-12, atol=1e-12,
                                   err_msg=f"{name}: rerun tools/make_torch_reference.py?")


@pytest.mark.torch
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_helpers_match_torch_live(seed):
    require_torch()
    inputs = tool.make_inputs(seed)
    expected = tool.torch_outputs(inputs)
    got = helpers_outputs(inputs)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], **TOL, err_msg=name)


@pytest.mark.torch
@pytest.mark.parametrize("n_heads", [1, 2, 3, 6])
def test_multi_head_attention_matches_torch_module(n_heads):
    """Batch of 3, N = 7, d_model = 12: the weight layout maps onto in_proj/out_proj."""
    torch = require_torch()
    rng = np.random.default_rng(100 + n_heads)
    X = rng.normal(size=(3, 7, 12))
    W = [rng.normal(size=(12, 12)) / np.sqrt(12) for _ in range(4)]
    with torch.no_grad():
        for causal in (True, False):
            expected = tool._torch_mha(torch.from_numpy(X), *map(torch.from_numpy, W),
                                       n_heads=n_heads, causal=causal).numpy()
            got = helpers.multi_head_attention(X, *W, n_heads, causal=causal)
            np.testing.assert_allclose(got, expected, **TOL)


@pytest.mark.torch
def test_sdpa_matches_torch_with_batch_and_broadcast_mask():
    torch = require_torch()
    F = torch.nn.functional
    rng = np.random.default_rng(7)
    Q = rng.normal(size=(2, 3, 4, 5))                            # batch 2, 3 heads, N_q = 4
    K = rng.normal(size=(2, 3, 6, 5))                            # N_k = 6, d_k = 5
    V = rng.normal(size=(2, 3, 6, 2))                            # d_v = 2
    mask = rng.random((4, 6)) < 0.6
    mask[:, 0] = True
    expected = F.scaled_dot_product_attention(*map(torch.from_numpy, (Q, K, V)),
                                              attn_mask=torch.from_numpy(mask)).numpy()
    got, weights = helpers.scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_allclose(got, expected, **TOL)
    assert np.all(weights[..., ~mask] == 0)
