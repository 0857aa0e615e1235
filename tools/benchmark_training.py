"""Time one training step of the course's character model in NumPy and in PyTorch.

The step: the loss and every gradient of the model of ``tools/train_char_lm.py``
(818,432 parameters: d = 128, 4 heads, 4 layers, d_ff = 512, n_ctx = 128, 84
characters) on one batch of 32 windows of 128 characters, then clipping to global norm
1 and an AdamW update. NumPy: ``helpers.training`` (``loss_and_grads``,
``clip_by_global_norm``, ``adamw_step``); PyTorch: autograd, ``clip_grad_norm_`` and
``torch.optim.AdamW``. Both float32 on the CPU, the same initial weights and batch,
the same number of threads (``--threads``, default 1: BLAS for NumPy,
``torch.set_num_threads`` for PyTorch), timed alternately in one run (best of
``--repeats``), with the machine's load printed beside the figure::

    .venv/bin/python tools/benchmark_training.py [--threads 1] [--repeats 5]
"""

from __future__ import annotations

import sys

from bench_common import alternate, machine, pin_threads

THREADS = pin_threads(sys.argv[1:], default=1)

import argparse  # noqa: E402  (after the thread count is fixed)

import numpy as np  # noqa: E402

import train_char_lm as tool  # noqa: E402
from helpers import training  # noqa: E402

CONFIG = dict(vocab_size=84, d_model=128, n_layers=4, d_ff=512, n_ctx=128)
N_HEADS, BATCH = 4, 32


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(THREADS)
    params = training.init_params(**CONFIG, seed=0, dtype=np.float32)
    rng = np.random.default_rng(0)
    data = rng.integers(0, CONFIG["vocab_size"], 10_000)
    x, y = training.get_batch(data, CONFIG["n_ctx"], BATCH, rng)
    hp = argparse.Namespace(steps=100, lr=1e-3, warmup=10, weight_decay=0.1, clip=1.0)
    state = {"params": params, "adam": training.adamw_init(params)}

    def numpy_step():
        p, s, loss = tool.train_step(state["params"], state["adam"], x, y, N_HEADS, 50, hp)
        return loss

    model = tool.CharLM.from_arrays(training.flatten(params), N_HEADS, dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), eps=1e-8,
                            weight_decay=0.1)
    tx, ty = torch.as_tensor(x), torch.as_tensor(y).reshape(-1)

    def torch_step():
        logits = model(tx)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ty)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return float(loss.detach())

    best, results = alternate({"numpy": numpy_step, "torch": torch_step}, args.repeats)
    print(f"one training step, batch {BATCH} x {CONFIG['n_ctx']}, float32, {THREADS} "
          f"thread(s), best of {args.repeats}; {machine()}")
    print(f"  NumPy {np.__version__} (helpers.training): {best['numpy']:.3f} s "
          f"(loss {results['numpy']:.4f})")
    print(f"  PyTorch {torch.__version__} (autograd):    {best['torch']:.3f} s "
          f"(loss {results['torch']:.4f})")
    print(f"  ratio NumPy / PyTorch: {best['numpy'] / best['torch']:.2f}")


if __name__ == "__main__":
    main()
