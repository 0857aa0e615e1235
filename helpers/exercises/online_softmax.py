"""``online_softmax`` (notebook 13_inference): softmax with a running max and sum."""

from __future__ import annotations

import numpy as np

from helpers import inference
from helpers.course import Arg, Contract, Exercise, draw, case


def _block(rng, shape, dims):
    return int(rng.integers(1, dims["n"] + 2))


CONTRACT = Contract(
    args={"z": Arg("[n]", lists=True), "block_size": Arg(int, low=1, values=_block)},
    returns=Arg("[n]"),
    invariants=("block_size need not divide n: the last block is shorter",
                "finite for large z"))

EXERCISE = Exercise(
    "online_softmax", inference.online_softmax, contract=CONTRACT,
    nan_hint="is the running sum rescaled? Keep every exponent <= 0: subtract the running "
    "max, and multiply the old sum by exp(m_old - m_new) when the max grows",
    difficulty=2, importance=3, minutes=15,
    hints=(
        r"""Read $\boldsymbol{z}$ block by block, keeping two numbers: the largest entry so
far $m$ and the sum $\ell = \sum e^{z_j - m}$ of what was read. When a block brings a larger
max $m'$, the old sum was computed against the old max: multiply it by $e^{m - m'}$ before
adding the block's $\sum e^{z_j - m'}$. At the end, $\operatorname{softmax}(z)_i = e^{z_i - m}/\ell$.""",
        r"""Start with `m = -np.inf` and `l = 0.0` ($e^{-\infty} = 0$ rescales the empty
sum). `range(0, len(z), block_size)` visits every block, the last one shorter when
`block_size` does not divide `len(z)`.

```python
z = np.asarray(z, dtype=float)
m, l = -np.inf, 0.0
for start in range(0, len(z), block_size):
    block = z[start:start + block_size]
    m_new = ___
    l = ___                       # the old sum, rescaled, plus the block's
    m = m_new
return ___                        # [n]
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("growing", "z = [0, 1, 2, 3, 4, 5] in blocks of 2 (the max grows every block)",
             ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 2)),
        case("uneven", "5 values in blocks of 2 (the last block has one value)",
             (np.array([0.5, -1.0, 2.0, 0.0, 3.0]), 2)),
        case("one_block", "block_size larger than n: one block", (np.array([1.0, 2.0, 3.0]), 8)),
        case("large", "z near 1000 in blocks of 2", (np.array([1000.0, 999.0, 1001.0]), 2),
             group="stability"),
        case("single", "block_size 1: one value at a time", ([3.0, -2.0, 0.0, 4.0], 1)),
        case("random", "30 random values in blocks of 7", (draw.normal(1321, (30,), 3.0), 7),
             hidden=True),
        case("huge", "values near -1e4 in blocks of 3", (-1e4 + draw.normal(1322, (8,)), 3),
             group="stability", hidden=True),
    ]


def _z(z):
    return np.asarray(z, dtype=np.float64)


@EXERCISE.mistake("sum_not_rescaled", "the running sum was not rescaled when the max grew: "
                  "multiply the old sum by exp(m_old - m_new) before adding the block")
def _not_rescaled(z, block_size):
    z = _z(z)
    m, l = -np.inf, 0.0
    for start in range(0, len(z), block_size):
        block = z[start:start + block_size]
        m = max(m, block.max())
        l = l + np.exp(block - m).sum()
    return np.exp(z - m) / l


@EXERCISE.mistake("rescaled_upside_down", "the old sum was multiplied by exp(m_new - m_old); "
                  "the factor is exp(m_old - m_new) (at most 1)")
def _upside_down(z, block_size):
    z = _z(z)
    m, l = None, 0.0
    for start in range(0, len(z), block_size):
        block = z[start:start + block_size]
        m_new = block.max() if m is None else max(m, block.max())
        l = (0.0 if m is None else l * np.exp(m_new - m)) + np.exp(block - m_new).sum()
        m = m_new
    return np.exp(z - m) / l


@EXERCISE.mistake("last_block_dropped", "the last, shorter block was never read: loop over "
                  "range(0, len(z), block_size)")
def _last_dropped(z, block_size):
    z = _z(z)
    m, l = -np.inf, 0.0
    for start in range(0, max(len(z) - block_size + 1, 1), block_size):
        block = z[start:start + block_size]
        m_new = max(m, block.max())
        l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()
        m = m_new
    return np.exp(z - m) / l
