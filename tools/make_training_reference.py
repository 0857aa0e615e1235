"""Write ``tests/data/training_reference.npz``: gradients computed by ``torch.autograd``
in float64, for the always-on tests of ``helpers.training`` (``tests/helpers/test_training.py``).

For fixed-seed inputs of every backward of ``helpers.training`` (cross-entropy, linear,
ReLU, GELU, layer norm, causal attention, embedding with repeated ids, a transformer
block, a whole small language model with a batch), the forward is written in PyTorch
from its equation and ``torch.autograd.grad`` gives the gradients. PyTorch is needed
here only::

    .venv/bin/python tools/make_training_reference.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
OUT_PATH = REPO_ROOT / "tests" / "data" / "training_reference.npz"
BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "W_Q", "W_K", "W_V", "W_O",
              "ln2_gamma", "ln2_beta", "W1", "b1", "W2", "b2")
HEADS = 2
LN_EPS = 1e-5


def _block_params(rng, d, d_ff):
    p = {}
    for k in BLOCK_KEYS:
        shape = {"W1": (d, d_ff), "b1": (d_ff,), "W2": (d_ff, d)}.get(
            k, (d, d) if k.startswith("W") else (d,))
        p[k] = (1.0 if k.endswith("gamma") else 0.0) + 0.4 * rng.standard_normal(shape)
    return p


def inputs() -> dict[str, np.ndarray]:
    """Fixed-seed inputs, flat ``{"<piece>/<name>": array}``."""
    rng = np.random.default_rng(2025)
    x = {}
    x["ce/logits"] = 3.0 * rng.standard_normal((6, 7))
    x["ce/targets"] = np.array([0, 3, 3, 6, 1, 3])
    x["linear/x"] = rng.standard_normal((2, 3, 4))
    x["linear/W"] = rng.standard_normal((4, 5))
    x["linear/b"] = rng.standard_normal(5)
    x["linear/dy"] = rng.standard_normal((2, 3, 5))
    x["relu/z"] = rng.standard_normal((4, 6))
    x["relu/dy"] = rng.standard_normal((4, 6))
    x["gelu/z"] = 3.0 * rng.standard_normal((4, 6))
    x["gelu/dy"] = rng.standard_normal((4, 6))
    x["ln/x"] = 2.0 + 3.0 * rng.standard_normal((5, 8))
    x["ln/gamma"] = 1.0 + 0.5 * rng.standard_normal(8)
    x["ln/beta"] = 0.5 * rng.standard_normal(8)
    x["ln/dy"] = rng.standard_normal((5, 8))
    x["att/Q"] = rng.standard_normal((2, 5, 4))
    x["att/K"] = rng.standard_normal((2, 5, 4))
    x["att/V"] = rng.standard_normal((2, 5, 3))
    x["att/mask"] = np.tril(np.ones((5, 5), dtype=bool))
    x["att/dy"] = rng.standard_normal((2, 5, 3))
    x["embed/ids"] = np.array([[2, 5, 2, 2], [0, 5, 1, 2]])
    x["embed/E"] = rng.standard_normal((7, 3))
    x["embed/P"] = rng.standard_normal((6, 3))
    x["embed/dy"] = rng.standard_normal((2, 4, 3))
    x["block/x"] = rng.standard_normal((5, 8))
    for k, v in _block_params(rng, 8, 16).items():
        x[f"block/params/{k}"] = v
    x["block/dy"] = rng.standard_normal((5, 8))
    V, d, n_ctx = 9, 8, 6
    x["lm/E"] = 0.5 * rng.standard_normal((V, d))
    x["lm/P"] = 0.5 * rng.standard_normal((n_ctx, d))
    for layer in range(2):
        for k, v in _block_params(rng, d, 16).items():
            x[f"lm/blocks.{layer}.{k}"] = v
    x["lm/ln_f_gamma"] = 1.0 + 0.3 * rng.standard_normal(d)
    x["lm/ln_f_beta"] = 0.3 * rng.standard_normal(d)
    x["lm/ids"] = rng.integers(0, V, (3, 5))
    x["lm/ids"][0, :3] = 4                                        # a repeated id
    x["lm/targets"] = rng.integers(0, V, (3, 5))
    return x


def lm_params(x: dict, prefix: str = "lm/") -> dict:
    """The nested params of ``helpers.language_model_forward`` from the flat inputs."""
    flat = {k[len(prefix):]: v for k, v in x.items()
            if k.startswith(prefix) and k[len(prefix):] not in ("ids", "targets")}
    blocks: dict[int, dict] = {}
    out = {}
    for name, v in flat.items():
        if name.startswith("blocks."):
            _, i, key = name.split(".", 2)
            blocks.setdefault(int(i), {})[key] = v
        else:
            out[name] = v
    out["blocks"] = [blocks[i] for i in sorted(blocks)]
    return out


# ---------------------------------------------------------------------------------------
# The forwards in PyTorch (float64), from the equations
# ---------------------------------------------------------------------------------------


def torch_block(torch, x, p, n_heads, causal=True):
    """The pre-norm block of the course in torch: ``[..., N, d] -> [..., N, d]``."""
    F = torch.nn.functional
    d = x.shape[-1]
    d_h = d // n_heads
    t1 = F.layer_norm(x, (d,), p["ln1_gamma"], p["ln1_beta"], LN_EPS)

    def heads(W):                                   # [..., h, N, d_h]
        y = t1 @ W
        return y.reshape(*y.shape[:-1], n_heads, d_h).transpose(-2, -3)

    Q, K, V = heads(p["W_Q"]), heads(p["W_K"]), heads(p["W_V"])
    att = torch_attention(torch, Q, K, V, causal)
    merged = att.transpose(-2, -3).reshape(*x.shape)
    t3 = merged @ p["W_O"] + x
    t4 = F.layer_norm(t3, (d,), p["ln2_gamma"], p["ln2_beta"], LN_EPS)
    return torch.relu(t4 @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"] + t3


def torch_attention(torch, Q, K, V, causal):
    S = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if causal:
        n = S.shape[-1]
        S = S.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
    return torch.softmax(S, dim=-1) @ V


def torch_lm_loss(torch, params, ids, targets, n_heads):
    """Mean cross-entropy of the course's language model, in torch."""
    E, P = params["E"], params["P"]
    x = E[ids] + P[: ids.shape[-1]]
    for block in params["blocks"]:
        x = torch_block(torch, x, block, n_heads)
    if "ln_f_gamma" in params:
        x = torch.nn.functional.layer_norm(x, (x.shape[-1],), params["ln_f_gamma"],
                                           params["ln_f_beta"], LN_EPS)
    logits = x @ E.T
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             targets.reshape(-1))


def torch_outputs(x: dict) -> dict[str, np.ndarray]:
    """The gradients, by ``torch.autograd.grad`` in float64."""
    import torch

    F = torch.nn.functional

    def t(a, grad=True):
        return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)

    def grads(out, dy, *wrt):
        return [g.numpy() for g in torch.autograd.grad(out, wrt, grad_outputs=t(dy, False))]

    out = {}
    logits = t(x["ce/logits"])
    loss = F.cross_entropy(logits, torch.tensor(x["ce/targets"]))
    out["ce/dlogits"] = torch.autograd.grad(loss, logits)[0].numpy()

    xx, W, b = t(x["linear/x"]), t(x["linear/W"]), t(x["linear/b"])
    out["linear/dx"], out["linear/dW"], out["linear/db"] = grads(xx @ W + b, x["linear/dy"],
                                                                 xx, W, b)
    z = t(x["relu/z"])
    out["relu/dz"], = grads(torch.relu(z), x["relu/dy"], z)
    z = t(x["gelu/z"])
    out["gelu/dz"], = grads(F.gelu(z), x["gelu/dy"], z)

    xx, g, b = t(x["ln/x"]), t(x["ln/gamma"]), t(x["ln/beta"])
    y = F.layer_norm(xx, (xx.shape[-1],), g, b, LN_EPS)
    out["ln/dx"], out["ln/dgamma"], out["ln/dbeta"] = grads(y, x["ln/dy"], xx, g, b)

    Q, K, V = t(x["att/Q"]), t(x["att/K"]), t(x["att/V"])
    y = torch_attention(torch, Q, K, V, causal=True)
    out["att/dQ"], out["att/dK"], out["att/dV"] = grads(y, x["att/dy"], Q, K, V)

    E, P = t(x["embed/E"]), t(x["embed/P"])
    ids = torch.tensor(x["embed/ids"])
    y = E[ids] + P[: ids.shape[-1]]
    out["embed/dE"], out["embed/dP"] = grads(y, x["embed/dy"], E, P)

    xx = t(x["block/x"])
    p = {k: t(x[f"block/params/{k}"]) for k in BLOCK_KEYS}
    y = torch_block(torch, xx, p, HEADS)
    gs = grads(y, x["block/dy"], xx, *p.values())
    out["block/dx"] = gs[0]
    for k, gk in zip(BLOCK_KEYS, gs[1:]):
        out[f"block/grads/{k}"] = gk

    params = lm_params(x)
    tp = {k: ([{kk: t(vv) for kk, vv in blk.items()} for blk in v] if k == "blocks"
              else t(v)) for k, v in params.items()}
    loss = torch_lm_loss(torch, tp, torch.tensor(x["lm/ids"]), torch.tensor(x["lm/targets"]),
                         HEADS)
    names = ["E", "P", "ln_f_gamma", "ln_f_beta"]
    leaves = [tp[k] for k in names]
    for i, blk in enumerate(tp["blocks"]):
        for k in BLOCK_KEYS:
            names.append(f"blocks.{i}.{k}")
            leaves.append(blk[k])
    out["lm/loss"] = np.array(float(loss.detach()))
    for name, gk in zip(names, torch.autograd.grad(loss, leaves)):
        out[f"lm/grads/{name}"] = gk.numpy()
    return out


def main() -> None:
    import torch

    x = inputs()
    out = torch_outputs(x)
    OUT_PATH.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT_PATH, **{f"in/{k}": v for k, v in x.items()},
                        **{f"out/{k}": v for k, v in out.items()},
                        torch_version=np.array(torch.__version__))
    print(f"wrote {OUT_PATH} ({OUT_PATH.stat().st_size / 1e3:.1f} kB, torch {torch.__version__})")


if __name__ == "__main__":
    sys.exit(main())
