"""Asking the trusted worker for more than a run may afford (issue 36, finding 1).

A child may ask the worker for an earlier course function on inputs it chooses. Before
issue 36 the call ran in the worker's own process, unbounded: a 72 KB request for
``pairwise_scores`` of a 9000x1 array took the grading process to 1.9 GB, and ``generate``
with a huge ``n_new`` held the worker until the student's deadline killed the whole
grading process, the other students waiting. Each attack is built on correct answers:
it must gain nothing, the grader must survive, and the honest students graded beside it
keep their grades (``test_honest_students_grade_as_when_graded_alone``). The function
itself stays correct, so the attacker keeps the honest points: what the oracle refused
is an error in its own calls only.
"""

from attacks import Attack

_ASK = """
import numpy as np
import helpers

def _ask(call):
    try:
        call()
    except Exception:
        pass
"""

ATTACKS = [
    Attack("oracle_pairwise_memory", "02_softmax", "softmax", _ASK + """
for rows in (9000, 12000, 20000):
    _ask(lambda: helpers.pairwise_scores(np.ones((rows, 1))))

def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
""", "asks the worker for pairwise_scores of 9000, 12000 and 20000 rows of one column "
     "(81 to 400 million pairs from requests of 72 to 160 KB), in the notebook run and in "
     "softmax's isolated run", expect="honest", answers="solutions"),
    Attack("oracle_generate_forever", "09_sentence_encoder", "mean_pool", _ASK + """
_ask(lambda: helpers.generate(np.array([1, 2]), {}, 1, 10 ** 9))
_ask(lambda: helpers.causal_mask(10 ** 6))

def mean_pool(h, key_mask):
    h = np.asarray(h, dtype=float)
    m = np.asarray(key_mask, dtype=float)[..., None]
    return (h * m).sum(axis=-2) / m.sum(axis=-2)
""", "asks the worker for generate with n_new = 10**9 and a causal mask of a million "
     "tokens", expect="honest", answers="solutions"),
]
