"""``causal_mask`` (notebook 05_masking_cross_attention): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import reference
from helpers.course import Arg, Contract, Exercise, case


CONTRACT = Contract(args={"n": Arg("n")}, returns=Arg("[n, n]", dtype="bool"),
                    sizes={"n": (1, 2, 3, 4, 5, 6)}, dtype_judged=True)

EXERCISE = Exercise('causal_mask', reference.causal_mask, contract=CONTRACT, output='mask',
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""Compare positions: the entry of row $i$ (the query) and column $j$ (the key) is true when
$j \le i$. Drawn as a table, that is the lower triangle with the diagonal, as in the picture
of the intuition.""",
        r"""Broadcasting compares a column of query positions, `np.arange(n)[:, None]` of shape
`[n, 1]`, with a row of key positions, `np.arange(n)[None, :]` of shape `[1, n]`, and gives
an `[n, n]` array. (Or `np.tril` of a matrix of ones: mind the dtype, `np.tril(np.ones((n,
n)))` holds floats and the check wants booleans.)

```python
positions = np.arange(n)
return ___ <= ___          # [n, n]: key j <= query i
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("slides_4", "n = 4 (the four tokens of 'The cat sat <end>')", (4,), group="slides"),
        case("n_1", "n = 1", (1,)),
        case("n_2", "n = 2", (2,), hidden=True),
        case("n_3", "n = 3", (3,), hidden=True),
        case("n_6", "n = 6", (6,), hidden=True),
        case("n_9", "n = 9", (9,), hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("inverted",
                  "mask inverted (True above the diagonal): True means 'may attend', i.e. key j <= "
                  "query i")
def _cm_inverted(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


@EXERCISE.mistake("strict",
                  "the diagonal is False (j < i): a token may attend to itself, so use j <= i")
def _cm_strict(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


@EXERCISE.mistake("transposed",
                  "upper triangle (j >= i): row i is query i, and it may attend to keys j <= i")
def _cm_transposed(n):
    return np.triu(np.ones((n, n), dtype=bool))


@EXERCISE.mistake("all_true", "every entry is True: later keys must be masked out (False)")
def _cm_all_true(n):
    return np.ones((n, n), dtype=bool)


@EXERCISE.mistake("additive",
                  "returned an additive mask (0 and -inf); the contract wants booleans, True = may attend")
def _cm_additive(n):
    return np.where(np.tril(np.ones((n, n), dtype=bool)), 0.0, -np.inf)

