"""Seeded inputs shared by several exercises' cases (the same on every run)."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.exercises import random_block


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _normal(seed: int, shape, scale=1.0, decimals: int | None = None) -> np.ndarray:
    a = _rng(seed).normal(size=shape) * scale
    return np.round(a, decimals) + 0.0 if decimals is not None else a    # + 0.0: no "-0."


def _block_params(seed: int, d: int, d_ff: int) -> dict:
    return random_block(_rng(seed), d, d_ff)


def _lm_params(seed: int, V: int, d: int, n_ctx: int, n_blocks: int, ln_f: bool,
               e_scale: float = 1.0) -> dict:
    r = _rng(seed)
    params = {
        "E": r.normal(size=(V, d)) * e_scale,
        "P": r.normal(size=(n_ctx, d)) * 0.5,
        "blocks": [_block_params(seed * 100 + i + 1, d, 2 * d) for i in range(n_blocks)],
    }
    if ln_f:
        params["ln_f_gamma"] = 1.0 + 0.3 * r.normal(size=d)
        params["ln_f_beta"] = 0.2 * r.normal(size=d)
    return params


def _cat_qkv():
    return reference.project_qkv(ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V)


def _valid_mask(seed: int, n_q: int, n_k: int, p: float = 0.5) -> np.ndarray:
    """A random bool mask in which every query may attend to at least one key."""
    r = _rng(seed)
    m = r.random((n_q, n_k)) < p
    m[np.arange(n_q), r.integers(0, n_k, size=n_q)] = True
    return m


def _mha_args(seed, N, d, scale=1.0, decimals=None):
    X = _normal(seed, (N, d), scale, decimals)
    Ws = [_normal(seed + 1 + i, (d, d), 1.0 / np.sqrt(d), decimals) for i in range(4)]
    return (X, *Ws)


def _ffn_args(seed, N, d, d_ff, scale=1.0, decimals=None):
    n = _normal
    return (n(seed, (N, d), scale, decimals), n(seed + 1, (d, d_ff), 1.0, decimals),
            n(seed + 2, d_ff, 0.5, decimals), n(seed + 3, (d_ff, d), 1.0, decimals),
            n(seed + 4, d, 0.5, decimals))


#: Small language models for generate (built once; cases deep-copy them).
def _gen_models():
    return {
        "m8": _lm_params(308, V=8, d=8, n_ctx=5, n_blocks=1, ln_f=False, e_scale=0.5),
        "m4": _lm_params(272, V=6, d=4, n_ctx=4, n_blocks=2, ln_f=True),
        "ms": _lm_params(273, V=6, d=4, n_ctx=5, n_blocks=1, ln_f=True, e_scale=0.6),
    }
