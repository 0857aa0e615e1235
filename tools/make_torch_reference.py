"""PyTorch's answers on fixed inputs, stored so the tests can check ``helpers`` without torch.

Regenerate ``tests/data/torch_reference.npz`` (needs torch; run from the repository root):

    .venv/bin/python tools/make_torch_reference.py

The inputs come from NumPy's generator with the fixed seed ``SEED`` (so they do not depend
on torch); the outputs are computed by PyTorch in float64, from its own operators
(``torch.softmax``, ``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``,
``nn.LayerNorm``, ``F.layer_norm``, ``F.cross_entropy``), never by ``helpers``.
``tests/helpers/test_reference_torch.py`` checks that ``helpers`` reproduces the stored outputs
(always) and, when torch is installed, that regenerating gives the same numbers.

Weight layout: the course uses row vectors, ``Q = X @ W_Q`` with ``W_Q [d_model, d_k]``;
torch's linear layers compute ``x @ W.T``, so ``in_proj_weight = cat(W_Q.T, W_K.T, W_V.T)``
and ``out_proj.weight = W_O.T``. Torch's boolean ``attn_mask`` means "may attend" in
``F.scaled_dot_product_attention`` but "may NOT attend" in ``nn.MultiheadAttention``.

This module imports torch only inside the functions that need it, so its input builders
(``make_inputs``, ``random_lm_params``) work without torch.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

SEED = 20240917
OUT_PATH = Path(__file__).resolve().parents[1] / "tests" / "data" / "torch_reference.npz"

#: The block parameter names, in the order of the contract.
BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "W_Q", "W_K", "W_V", "W_O",
              "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")


# ---------------------------------------------------------------------------------------
# Inputs (NumPy only)
# ---------------------------------------------------------------------------------------


def random_block_params(rng: np.random.Generator, d: int, d_ff: int) -> dict:
    """One transformer block's parameters, scaled so activations stay of order 1."""
    w = lambda *shape: rng.normal(size=shape) / np.sqrt(shape[0])  # noqa: E731
    return {
        "ln1_gamma": 1.0 + 0.2 * rng.normal(size=d), "ln1_beta": 0.2 * rng.normal(size=d),
        "W_Q": w(d, d), "W_K": w(d, d), "W_V": w(d, d), "W_O": w(d, d),
        "ln2_gamma": 1.0 + 0.2 * rng.normal(size=d), "ln2_beta": 0.2 * rng.normal(size=d),
        "W1": w(d, d_ff), "b1": 0.2 * rng.normal(size=d_ff),
        "W2": w(d_ff, d), "b2": 0.2 * rng.normal(size=d),
    }


def random_lm_params(rng: np.random.Generator, V: int = 11, n_ctx: int = 8, d: int = 8,
                     d_ff: int = 12, n_blocks: int = 2, final_ln: bool = True) -> dict:
    """Parameters of a small language model in the contract's layout (see helpers)."""
    params = {
        "E": rng.normal(size=(V, d)),                            # [V, d]
        "P": 0.5 * rng.normal(size=(n_ctx, d)),                  # [n_ctx, d]
        "blocks": [random_block_params(rng, d, d_ff) for _ in range(n_blocks)],
    }
    if final_ln:
        params["ln_f_gamma"] = 1.0 + 0.2 * rng.normal(size=d)
        params["ln_f_beta"] = 0.2 * rng.normal(size=d)
    return params


def flatten_params(params: dict, prefix: str) -> dict:
    """``{"lm/E": ..., "lm/blocks/0/W_Q": ...}``: a params dict as flat npz entries."""
    flat = {}
    for key, value in params.items():
        if key == "blocks":
            for i, block in enumerate(value):
                flat.update({f"{prefix}/blocks/{i}/{k}": np.asarray(v) for k, v in block.items()})
        else:
            flat[f"{prefix}/{key}"] = np.asarray(value)
    return flat


def unflatten_params(flat, prefix: str) -> dict:
    """The inverse of :func:`flatten_params` (``flat`` may be an open npz file)."""
    params, blocks = {}, {}
    for name in flat.keys():
        if not name.startswith(prefix + "/"):
            continue
        parts = name[len(prefix) + 1:].split("/")
        if parts[0] == "blocks":
            blocks.setdefault(int(parts[1]), {})[parts[2]] = flat[name]
        else:
            params[parts[0]] = flat[name]
    params["blocks"] = [blocks[i] for i in sorted(blocks)]
    return params


def make_inputs(seed: int = SEED) -> dict:
    """Every input of the comparison, as a flat dict of float64 / int64 / bool arrays.

    Shapes are chosen to tell mistakes apart: d_k != d_v, N_q != N_k, rows at very
    different scales, more than one head and block.
    """
    rng = np.random.default_rng(seed)
    x = {}
    # softmax: rows at scales 0.1 .. 1000, one shifted by 500
    x["softmax/z"] = rng.normal(size=(4, 6)) * np.array([[0.1], [1.0], [30.0], [1000.0]])
    x["softmax/z"][1] += 500.0
    # attention: N_q = 3, N_k = 5, d_k = 4, d_v = 2; a random mask with no empty row
    x["sdpa/Q"] = rng.normal(size=(3, 4))
    x["sdpa/K"] = rng.normal(size=(5, 4))
    x["sdpa/V"] = rng.normal(size=(5, 2))
    mask = rng.random((3, 5)) < 0.5
    mask[np.arange(3), rng.integers(0, 5, size=3)] = True
    x["sdpa/mask"] = mask
    # causal attention: batch of 2, N = 5, d_k = 4, d_v = 3
    x["causal/Q"] = rng.normal(size=(2, 5, 4))
    x["causal/K"] = rng.normal(size=(2, 5, 4))
    x["causal/V"] = rng.normal(size=(2, 5, 3))
    # multi-head attention: batch of 2, N = 5, d_model = 8, 2 and 4 heads
    x["mha/X"] = rng.normal(size=(2, 5, 8))
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        x[f"mha/{name}"] = rng.normal(size=(8, 8)) / np.sqrt(8)
    # layer norm: rows at scales 1e-3 .. 1e3, offsets far from 0
    x["ln/x"] = (rng.normal(size=(4, 6)) * np.array([[1e-3], [1.0], [10.0], [1e3]])
                 + np.array([[5.0], [-2.0], [100.0], [0.0]]))
    x["ln/gamma"] = 1.0 + 0.3 * rng.normal(size=6)
    x["ln/beta"] = 0.3 * rng.normal(size=6)
    # one pre-norm block, d = 8, d_ff = 12, 2 heads
    x["block/x"] = rng.normal(size=(5, 8))
    x.update(flatten_params(random_block_params(rng, 8, 12), "block/params"))
    # a tied LM: V = 11, n_ctx = 8, d = 8, 2 blocks, 2 heads, final layer norm
    x.update(flatten_params(random_lm_params(rng), "lm/params"))
    x["lm/ids"] = rng.integers(0, 11, size=7)
    x["lm/prompt"] = rng.integers(0, 11, size=10)               # longer than n_ctx = 8
    # cross-entropy with large logits
    x["ce/logits"] = rng.normal(size=(6, 9)) * 1e4
    x["ce/targets"] = rng.integers(0, 9, size=6)
    return x


#: Settings that are not arrays.
MHA_HEADS = (2, 4)
BLOCK_HEADS = 2
LM_HEADS = 2
LM_NEW_TOKENS = 5


# ---------------------------------------------------------------------------------------
# Outputs (PyTorch)
# ---------------------------------------------------------------------------------------


def _torch_mha(X, W_Q, W_K, W_V, W_O, n_heads: int, causal: bool):
    """``nn.MultiheadAttention`` carrying the course's weights. X: torch [B, N, d]."""
    import torch
    from torch import nn

    d = X.shape[-1]
    mha = nn.MultiheadAttention(d, n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T], dim=0))  # [3d, d]
        mha.out_proj.weight.copy_(W_O.T)
    N = X.shape[-2]
    # nn.MultiheadAttention: True = "may NOT attend"
    mask = torch.triu(torch.ones(N, N, dtype=torch.bool), diagonal=1) if causal else None
    out, _ = mha(X, X, X, attn_mask=mask, need_weights=False)
    return out


def _torch_block(x, p: dict, n_heads: int):
    """The pre-norm block t1..t5 from torch operators. x: torch [B, N, d]."""
    import torch.nn.functional as F

    d = x.shape[-1]
    t1 = F.layer_norm(x, (d,), p["ln1_gamma"], p["ln1_beta"], eps=1e-5)
    t2 = _torch_mha(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)
    t3 = t2 + x
    t4 = F.layer_norm(t3, (d,), p["ln2_gamma"], p["ln2_beta"], eps=1e-5)
    t5 = F.linear(F.relu(F.linear(t4, p["W1"].T, p["b1"])), p["W2"].T, p["b2"])
    return t5 + t3


def _torch_lm(ids, params: dict, n_heads: int):
    """Logits [N, V] of the tied LM from torch operators. ids: torch int64 [N]."""
    import torch.nn.functional as F

    E, P = params["E"], params["P"]
    h = (F.embedding(ids, E) + P[: len(ids)])[None]              # [1, N, d]
    for block in params["blocks"]:
        h = _torch_block(h, block, n_heads)
    if "ln_f_gamma" in params:
        h = F.layer_norm(h, (E.shape[1],), params["ln_f_gamma"], params["ln_f_beta"], eps=1e-5)
    return F.linear(h[0], E)                                     # h E^T: [N, V]


def torch_outputs(inputs: dict) -> dict:
    """PyTorch's float64 outputs for :func:`make_inputs`' inputs (needs torch)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.use_deterministic_algorithms(True)
    t = {k: torch.from_numpy(np.asarray(v)) for k, v in inputs.items()}
    out = {}
    with torch.no_grad():
        out["softmax/rows"] = torch.softmax(t["softmax/z"], dim=-1)
        out["softmax/cols"] = torch.softmax(t["softmax/z"], dim=0)

        Q, K, V = t["sdpa/Q"], t["sdpa/K"], t["sdpa/V"]
        out["sdpa/out"] = F.scaled_dot_product_attention(Q, K, V)
        out["sdpa/weights"] = torch.softmax(Q @ K.T / 2.0, dim=-1)  # sqrt(d_k = 4) = 2
        out["sdpa/out_masked"] = F.scaled_dot_product_attention(
            Q, K, V, attn_mask=t["sdpa/mask"])                   # True = may attend
        out["causal/out"] = F.scaled_dot_product_attention(
            t["causal/Q"], t["causal/K"], t["causal/V"], is_causal=True)

        W = [t[f"mha/{n}"] for n in ("W_Q", "W_K", "W_V", "W_O")]
        for h in MHA_HEADS:
            out[f"mha/causal_h{h}"] = _torch_mha(t["mha/X"], *W, n_heads=h, causal=True)
            out[f"mha/full_h{h}"] = _torch_mha(t["mha/X"], *W, n_heads=h, causal=False)

        ln = nn.LayerNorm(6, eps=1e-5, dtype=torch.float64)
        ln.weight.copy_(t["ln/gamma"])
        ln.bias.copy_(t["ln/beta"])
        out["ln/out"] = ln(t["ln/x"])

        block = {k: t[f"block/params/{k}"] for k in BLOCK_KEYS}
        out["block/out"] = _torch_block(t["block/x"][None], block, BLOCK_HEADS)[0]

        lm = unflatten_params(t, "lm/params")
        ids = t["lm/ids"]
        logits = _torch_lm(ids, lm, LM_HEADS)
        out["lm/logits"] = logits
        out["lm/loss"] = F.cross_entropy(logits[:-1], ids[1:])   # next-token loss
        n_ctx = lm["P"].shape[0]
        gen = t["lm/prompt"].clone()
        for _ in range(LM_NEW_TOKENS):                           # greedy, cropped context
            next_id = torch.argmax(_torch_lm(gen[-n_ctx:], lm, LM_HEADS)[-1])
            gen = torch.cat([gen, next_id[None]])
        out["lm/generated"] = gen

        out["ce/loss"] = F.cross_entropy(t["ce/logits"], t["ce/targets"])
    return {k: v.numpy() for k, v in out.items()}


def main() -> int:
    inputs = make_inputs(SEED)
    outputs = torch_outputs(inputs)
    clash = set(inputs) & set(outputs)
    if clash:
        raise SystemExit(f"input and output names clash: {sorted(clash)}")
    arrays = {f"in:{k}": v for k, v in inputs.items()}
    arrays.update({f"out:{k}": v for k, v in outputs.items()})
    OUT_PATH.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT_PATH, **arrays)
    print(f"wrote {OUT_PATH} ({OUT_PATH.stat().st_size} bytes, {len(arrays)} arrays)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
