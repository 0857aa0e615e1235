"""``tools/train_char_lm.py`` trains with the course's NumPy backward and AdamW.

With PyTorch installed: a few dozen steps in NumPy and in PyTorch (float64, autograd,
``torch.optim.AdamW``, ``clip_grad_norm_``) from the same initialisation on the same
batches give the same loss at every step, to 1e-8. Always: the NumPy training is
seeded (two runs give identical weights) and lowers the loss.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

import train_char_lm as tool
from helpers import training


def test_numpy_and_torch_training_agree_at_every_step():
    pytest.importorskip("torch", exc_type=ImportError,
                        reason="PyTorch is not installed (optional dev dependency)")
    np_losses, torch_losses = tool.torch_numpy_losses(steps=30)
    assert len(np_losses) == 30
    np.testing.assert_allclose(np_losses, torch_losses, rtol=0, atol=1e-8)
    assert np_losses[-1] < np_losses[0] - 0.05          # it did learn something


def _short_run(seed):
    args = argparse.Namespace(steps=40, lr=1e-2, warmup=5, weight_decay=0.1, clip=1.0,
                              d_model=16, n_heads=2, n_layers=2, d_ff=32, n_ctx=16,
                              batch_size=8, seed=seed, eval_every=1000)
    text = "to be or not to be that is the question " * 40
    vocab = "".join(sorted(set(text)))
    ids = np.array([vocab.index(c) for c in text])
    params, n_params, _ = tool.train(args, ids[:1200], ids[1200:], vocab, log=lambda m: None)
    loss = tool.mean_loss(params, ids[1200:], 2, 16, 8, 4, seed=0)
    return params, n_params, loss


def test_numpy_training_is_seeded_and_learns():
    a, n_params, loss = _short_run(3)
    b, _, _ = _short_run(3)
    assert n_params == sum(v.size for v in training.flatten(a).values())
    for k, v in training.flatten(a).items():
        assert v.dtype == np.float32, k
        np.testing.assert_array_equal(v, training.flatten(b)[k], err_msg=k)
    assert loss < 0.8 * np.log(15)                        # well below a uniform guess
