"""``project_qkv`` (notebook 04_queries_keys_values): cases and known mistakes."""

from __future__ import annotations


from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _f


CONTRACT = Contract(
    args={"X": Arg("[N, d]", lists=True), "W_Q": Arg("[d, d_k]", lists=True),
          "W_K": Arg("[d, d_k]", lists=True), "W_V": Arg("[d, d_v]", lists=True)},
    returns=(Arg("[N, d_k]"), Arg("[N, d_k]"), Arg("[N, d_v]")),
    serves={"X": "[..., N, d]"})

EXERCISE = Exercise('project_qkv', reference.project_qkv, contract=CONTRACT, output='tuple', parts=('Q', 'K', 'V'),
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""Each projection is one matrix product, with the tokens on the left because they are row
vectors: row $i$ of $Q$ is $\mathbf{q}_i = \mathbf{x}_i W_Q$, and likewise for $K$ and $V$.""",
        r"""Convert each argument with `np.asarray(..., dtype=float)`, then use `@`:
`[N, d] @ [d, d_k] -> [N, d_k]`. If you find yourself writing `W_Q @ X`, you are in the
column-vector convention.

```python
X = np.asarray(X, dtype=float)
Q = ___
K = ___
V = ___
return Q, K, V
```""",
    ),
)


@EXERCISE.cases
def cases():
    return [
        case("slides_cat", "X, W_Q, W_K, W_V of the slides' example 'The cat sat <end>'",
             (ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V), group="slides"),
        case("lists_dk_dv", "lists: X is 3x4, W_Q and W_K are 4x2 (d_k = 2), W_V is 4x3 (d_v = 3)",
             tuple(draw.normal(41 + i, s, decimals=1).tolist()
                   for i, s in enumerate([(3, 4), (4, 2), (4, 2), (4, 3)])), group="shapes"),
        case("square", "X is 5x3, all weights 3x3 (not symmetric)",
             tuple(draw.normal(45 + i, s) for i, s in enumerate([(5, 3), (3, 3), (3, 3), (3, 3)])),
             hidden=True),
        case("wide", "X is 2x5, d_k = 4, d_v = 2",
             tuple(draw.normal(49 + i, s) for i, s in enumerate([(2, 5), (5, 4), (5, 4), (5, 2)])),
             group="shapes", hidden=True),
        case("one_row", "a single token, d = 3, d_k = 2, d_v = 1",
             tuple(draw.normal(53 + i, s) for i, s in enumerate([(1, 3), (3, 2), (3, 2), (3, 1)])),
             group="shapes", hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("weights_transposed",
                  "multiplied by the transposed weights (X @ W.T); with row vectors it is Q = X @ W_Q")
def _qkv_transposed(X, W_Q, W_K, W_V):
    X = _f(X)
    return X @ _f(W_Q).T, X @ _f(W_K).T, X @ _f(W_V).T


@EXERCISE.mistake("q_k_swapped", "Q and K are swapped: Q = X @ W_Q, K = X @ W_K")
def _qkv_swapped(X, W_Q, W_K, W_V):
    X = _f(X)
    return X @ _f(W_K), X @ _f(W_Q), X @ _f(W_V)


@EXERCISE.mistake("k_v_swapped", "K and V are swapped: return (Q, K, V) in that order")
def _qkv_kv_swapped(X, W_Q, W_K, W_V):
    X = _f(X)
    return X @ _f(W_Q), X @ _f(W_V), X @ _f(W_K)


@EXERCISE.mistake("same_weight", "used W_Q for all three; K needs W_K and V needs W_V")
def _qkv_same(X, W_Q, W_K, W_V):
    Q = _f(X) @ _f(W_Q)
    return Q, Q, Q


@EXERCISE.mistake("elementwise",
                  "multiplied entry by entry (X * W); use the matrix product X @ W")
def _qkv_elementwise(X, W_Q, W_K, W_V):
    X = _f(X)
    return X * _f(W_Q), X * _f(W_K), X * _f(W_V)

