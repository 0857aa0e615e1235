"""``lm_head`` (notebook 08_language_model): cases and known mistakes."""

from __future__ import annotations

import numpy as np

from helpers import examples as ex
from helpers import reference
from helpers.course import Arg, Contract, Exercise, draw, case
from helpers.exercises._variants import _f


CONTRACT = Contract(args={"h": Arg("[N, d]", lists=True), "E": Arg("[V, d]", lists=True)},
                    returns=Arg("[N, V]"))

EXERCISE = Exercise(
    'lm_head', reference.lm_head, contract=CONTRACT,
    difficulty=1, importance=3, minutes=5,
    hints=(
        r"""The logit of token $v$ at position $i$ is the dot product of $\boldsymbol{h}_i$
with $v$'s own embedding, the row $E[v]$. All $N \times V$ of them at once are one matrix
product, $\boldsymbol{h} E^\top$.""",
        r"""Check the shapes before writing: `h` is `[N, d]`, `E` is `[V, d]`, and the
result must be `[N, V]`, so the right-hand factor must be `[d, V]`. `h @ E` fails, or,
when $d = V$, silently computes something else.""",
    ),
)


@EXERCISE.cases
def cases():
    r = draw.rng(241)
    return [
        case("slides_aaba", "'A A B A': h is the one-hot embeddings, E the one-hot table",
             (ex.AABA_E[ex.AABA_IDS], ex.AABA_E), group="slides"),
        case("small", "2 positions, d = 3, V = 5", (np.round(r.normal(size=(2, 3)), 1) + 0.0,
                                                   np.round(r.normal(size=(5, 3)), 1) + 0.0)),
        case("square", "V = d = 4 (E is square, not symmetric)", (r.normal(size=(3, 4)),
                                                                  r.normal(size=(4, 4))),
             group="shapes", hidden=True),
        case("lists_3", "plain lists, 1 position, d = 3, V = 2",
             ([[0.5, -1.0, 2.0]], [[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]])),
        case("lists", "plain lists, 2 positions, d = 2, V = 3",
             ([[1.0, 2.0], [-1.0, 0.5]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), hidden=True),
        case("tall", "6 positions, d = 5, V = 9", (r.normal(size=(6, 5)), r.normal(size=(9, 5))),
             group="shapes", hidden=True),
    ]


# Known mistakes

@EXERCISE.mistake("no_transpose",
                  "computed h @ E; the tied head multiplies by the transpose, logits = h @ E.T")
def _lm_no_t(h, E):
    return _f(h) @ _f(E)


@EXERCISE.mistake("logits_transposed",
                  "the logits are transposed ([V, N]): logits = h @ E.T has one row per position")
def _lm_t(h, E):
    return _f(E) @ _f(h).T


@EXERCISE.mistake("softmax_applied",
                  "a softmax was applied: lm_head returns the raw logits h @ E.T")
def _lm_softmax(h, E):
    return reference.softmax(_f(h) @ _f(E).T, axis=-1)


@EXERCISE.mistake("scaled", "the logits were divided by sqrt(d); they are just h @ E.T")
def _lm_scaled(h, E):
    return _f(h) @ _f(E).T / np.sqrt(np.shape(E)[1])

