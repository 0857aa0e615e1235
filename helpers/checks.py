"""Instant checks for the exercise functions: ``check("softmax", softmax)``.

Notebooks call :func:`check` in their test cells; the grader calls :func:`cases` and
:func:`compare` to reach a verdict outside the learner's process. Both judge the same
cases against :mod:`helpers.reference` and name known mistakes (:mod:`helpers.mistakes`).

    check(name, fn)                 the visible cases; one line on stdout when all pass
    check(name, fn, hidden=True)    the hidden cases (inside ### BEGIN HIDDEN TESTS)
    check(name, fn, group="mask")   only the cases of one group
    assert_close(got, expected, what="the scores")   for exercises outside the contract
    check_against(name, fn, cases, reference, module=..., refuse=(...), mistakes=...)
                                    exercises outside the contract (notebooks 09, 10)

A failure raises :class:`CheckFailed` (an ``AssertionError``) that says which case failed
(in words, with its input), expected against got (shape first, then the first differing
entry) and, when the output is what a known mistake produces, that mistake in words.

Rules every check follows:

* values are compared as float64 with ``rtol=1e-6, atol=1e-8``: loops, ``einsum``,
  ``-inf`` or ``-1e9`` masking and every stable softmax pass; dtypes are not judged;
* warnings raised by the learner's code are silenced (a NumPy warning on stderr would
  cost an nbgrader cell); NaN or inf where a number is expected fails, with a hint;
* while the learner's function runs, the reference implementation of the same function
  is replaced by a poison (``helpers.<name>``, ``helpers.reference.<name>``, and any
  global, closure cell or default argument of the function that *is* the reference):
  calling it fails the check. Other ``helpers`` functions stay usable;
* inputs are fresh copies for every call: an answer that modifies its input in place
  cannot spoil later cases;
* cases are built from fixed seeds: the same cases on every run, picklable plain values.

``generate`` with ``temperature == 0`` (greedy) is compared exactly. Sampling cases are
judged without assuming how the random generator is consumed: the prompt is kept, the
length is right, every id is possible, and the sampled ids are as likely under
``softmax(logits / temperature)`` (the reference's logits on the answer's own context,
cropped to ``n_ctx``) as a real sample would be (a z-test of their total negative
log-likelihood over a few hundred steps, threshold ``|z| <= 5``). :func:`check` also
calls the first sampling case twice with the same seed and requires the same ids (the rng
argument must be used); :func:`repeat_problem` judges such a pair of outputs for a grader
that calls a case twice.

Groups of cases (``group=``): ``slides`` the slides' worked example; ``basic`` small
friendly inputs, lists; ``shapes`` N != d, N_q != N_k, d_k != d_v, a single row;
``scales`` rows at very different scales; ``stability`` large (up to 1e300) or very
negative values; ``axis`` softmax along another axis; ``mask`` bool masks; ``eps`` small
variances and explicit eps; ``heads`` other numbers of heads; ``causal`` causal=False and
True; ``blocks`` several blocks, final layer norm; ``greedy``, ``sampling``, ``cropping``
for generate. Per function (V = visible cases, H = hidden ones):

=============================  ===============================================================
function                       groups
=============================  ===============================================================
dot                            slides (V), basic (V H), shapes (H), scales (H)
cosine_similarity              slides (V), basic (V H), scales (H)
pairwise_scores                slides (V), shapes (V H), basic (H), scales (H)
softmax                        slides (V), basic (V H), axis (V H), stability (V H)
simple_self_attention          slides (V), shapes (V H), basic (H), stability (H)
project_qkv                    slides (V), shapes (V H), basic (H)
scaled_dot_product_attention   slides (V H), shapes (V H), mask (V H), stability (H), basic (H)
causal_mask                    slides (V), basic (V H)
cross_attention                slides (V), shapes (V H), basic (H), stability (H)
split_heads                    basic (V H), heads (H)
merge_heads                    basic (V H), heads (H)
multi_head_attention           slides (V), causal (V H), heads (H), stability (H), basic (H)
layer_norm                     slides (V), basic (V H), eps (V H), scales (H)
feed_forward                   basic (V H), shapes (H)
transformer_block              basic (V H), causal (V H), heads (H), scales (H)
embed                          slides (V), basic (V H), shapes (H)
lm_head                        slides (V), basic (V H), shapes (H)
language_model_forward         basic (V), blocks (V H), shapes (H)
cross_entropy                  basic (V H), stability (V H), scales (H)
generate                       greedy (V H), sampling (V H), cropping (H)
=============================  ===============================================================

``python -m helpers.checks`` prints the cases of every function (name, group, words).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import inspect
import pickle
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import helpers
from helpers import examples as ex
from helpers import reference
from helpers.mistakes import MISTAKES, Mistake

__all__ = ["check", "assert_close", "quiet", "CheckFailed", "Case", "cases", "compare",
           "diagnose", "repeat_problem", "groups", "RTOL", "ATOL", "check_against",
           "ExerciseCase"]

RTOL = 1e-6
ATOL = 1e-8
#: |z| above this for the negative log-likelihood of sampled ids fails a sampling case.
SAMPLING_Z_LIMIT = 5.0
#: A sampling mistake is named when the ids fit its distribution this well (|z| <= 3.5).
SAMPLING_DIAGNOSIS_Z = 3.5

#: The reference functions, captured at import: a poison in place cannot fool the checks.
_REFERENCE: dict[str, Callable] = {n: getattr(reference, n) for n in helpers.CONTRACT_FUNCTIONS}

#: Names of the elements of functions that return tuples.
_TUPLE_PARTS = {
    "project_qkv": ("Q", "K", "V"),
    "scaled_dot_product_attention": ("output", "weights"),
}
_SCALAR = {"dot", "cosine_similarity", "cross_entropy"}

_NAN_HINTS = {
    "softmax": "is the softmax stable? Subtract the maximum along the axis before exp",
    "cross_entropy": "is it stable? Compute log softmax(z)[t] = z[t] - logsumexp(z) with the "
                     "maximum subtracted, rather than log(softmax(z))",
    "layer_norm": "is eps inside the square root, (x - mean) / sqrt(var + eps)?",
    "cosine_similarity": "did a length come out as 0 or inf?",
    "dot": "did a product overflow?",
}
_ATTENTION_HINT = ("is the softmax stable (subtract each row's maximum before exp), and do "
                   "masked scores use -inf or a large negative number consistently?")


class CheckFailed(AssertionError):
    """A check of an exercise function failed; the message says why and what to fix."""


#: Reference outputs by a hash of (function, args, kwargs); the grader compares many answers.
_EXPECTED_CACHE: dict = {}


# ---------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)        # eq on arrays would be ambiguous: identity instead
class Case:
    """One input of a contract function. Plain, picklable values only.

    ``function(*args, **kwargs)`` is what gets called; :meth:`expected` is the
    reference's answer. Call :meth:`fresh_args` to get copies that a function may
    modify freely.
    """

    function: str
    name: str
    description: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    group: str = "basic"
    hidden: bool = False

    def fresh_args(self) -> tuple[tuple, dict]:
        """Deep copies of ``args`` and ``kwargs`` (a Generator restarts from its seed state)."""
        return copy.deepcopy(self.args), copy.deepcopy(self.kwargs)

    def expected(self):
        """The reference implementation's output for this case (a fresh copy each call)."""
        key = None
        if not self.is_sampling:
            key = hashlib.sha1(pickle.dumps((self.function, self.args, self.kwargs))).hexdigest()
            if key in _EXPECTED_CACHE:
                return copy.deepcopy(_EXPECTED_CACHE[key])
        args, kwargs = self.fresh_args()
        with _quiet():
            out = _REFERENCE[self.function](*args, **kwargs)
        if key is not None:
            if len(_EXPECTED_CACHE) > 2000:
                _EXPECTED_CACHE.clear()
            _EXPECTED_CACHE[key] = copy.deepcopy(out)
        return out

    @property
    def is_sampling(self) -> bool:
        return self.function == "generate" and self.kwargs.get("temperature", 0.0) > 0


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _normal(seed: int, shape, scale=1.0, decimals: int | None = None) -> np.ndarray:
    a = _rng(seed).normal(size=shape) * scale
    return np.round(a, decimals) + 0.0 if decimals is not None else a    # + 0.0: no "-0."


def _block_params(seed: int, d: int, d_ff: int) -> dict:
    r = _rng(seed)
    s = 1.0 / np.sqrt(d)
    return {
        "ln1_gamma": 1.0 + 0.3 * r.normal(size=d), "ln1_beta": 0.2 * r.normal(size=d),
        "W_Q": r.normal(size=(d, d)) * s, "W_K": r.normal(size=(d, d)) * s,
        "W_V": r.normal(size=(d, d)) * s, "W_O": r.normal(size=(d, d)) * s,
        "ln2_gamma": 1.0 + 0.3 * r.normal(size=d), "ln2_beta": 0.2 * r.normal(size=d),
        "W1": r.normal(size=(d, d_ff)) * s, "b1": 0.2 * r.normal(size=d_ff),
        "W2": r.normal(size=(d_ff, d)) / np.sqrt(d_ff), "b2": 0.2 * r.normal(size=d),
    }


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


def _cases_dot():
    return [
        ("slides_the_cat", "x_The . x_cat in the slides' example 'The cat sat <end>' (= 1.08)",
         (ex.CAT_X[0], ex.CAT_X[1]), {}, "slides", False),
        ("lists", "two plain Python lists of ints", ([1, 2, 3], [4, -5, 6]), {}, "basic", False),
        ("random", "two random vectors of length 7",
         (_normal(1, 7), _normal(2, 7)), {}, "basic", True),
        ("negative", "a dot product that comes out negative",
         ([2.0, -1.0, 0.5, 3.0], [-1.0, 4.0, 2.0, -0.5]), {}, "basic", True),
        ("length_one", "vectors of length 1", (np.array([3.0]), np.array([-2.5])), {}, "shapes",
         True),
        ("scales", "entries from 1e-3 to 1e3",
         (np.array([1e3, 2e-3, -5.0, 7e2]), np.array([3e-3, 4e2, 1.5, -2e-3])), {}, "scales",
         True),
        ("long_lists", "lists of 12 floats",
         (list(_normal(3, 12, decimals=2)), list(_normal(4, 12, decimals=2))), {}, "basic",
         True),
    ]


def _cases_cosine_similarity():
    return [
        ("slides_the_cat", "x_The and x_cat from the slides' example 'The cat sat <end>'",
         (ex.CAT_X[0], ex.CAT_X[1]), {}, "slides", False),
        ("lists", "two lists of different lengths |a| != |b|",
         ([1, 2, 2], [0, 3, 4]), {}, "basic", False),
        ("opposite", "vectors pointing in opposite directions (cos = -1)",
         ([1.0, -2.0, 0.5], [-2.0, 4.0, -1.0]), {}, "basic", True),
        ("negative", "vectors at an obtuse angle (negative cosine)",
         (np.array([1.0, 2.0, -1.0, 0.5]), np.array([-2.0, 0.5, 1.5, 0.0])), {}, "basic", True),
        ("random", "two random vectors of length 6",
         (_normal(5, 6), _normal(6, 6) * 3.0), {}, "basic", True),
        ("scales", "a long vector (entries ~1e3) and a short one (entries ~1e-2)",
         (_normal(7, 5) * 1e3, _normal(8, 5) * 1e-2), {}, "scales", True),
        ("big_and_small", "entries ~1e40 and ~1e-40",
         (_normal(9, 4) * 1e40, _normal(10, 4) * 1e-40), {}, "scales", True),
    ]


def _cases_pairwise_scores():
    X_scales = _normal(13, (4, 3)) * np.array([[1e-2], [1.0], [1e2], [1e3]])
    return [
        ("slides_cat", "the embeddings X of 'The cat sat <end>' (4 tokens, d = 4)",
         (ex.CAT_X,), {}, "slides", False),
        ("lists_3x2", "a list of 3 rows with d = 2 (N != d)", ([[1, 2], [3, -4], [5, 6]],), {},
         "shapes", False),
        ("random_5x3", "5 random rows, d = 3", (_normal(11, (5, 3)),), {}, "basic", True),
        ("wide_2x6", "2 rows, d = 6", (_normal(12, (2, 6)),), {}, "shapes", True),
        ("scales", "rows at very different scales (1e-2 to 1e3)", (X_scales,), {}, "scales", True),
        ("one_row", "a single row", (np.array([[1.5, -2.0, 0.5]]),), {}, "shapes", True),
    ]


def _cases_softmax():
    cat_scores = ex.CAT_X[0] @ ex.CAT_X.T / 2.0
    z3 = np.array([[0.0, 1.0, 2.0], [-2000.0, -1999.0, -2001.0], [1e3, 1e3 + 1, 1e3 - 2]])
    return [
        ("slides_the", "the scaled scores of 'The' in the slides' example: "
         "[0.65, 0.54, 0.325, 0.135]", (cat_scores,), {}, "slides", False),
        ("list", "a list of ints", ([1, 2, 3, 4],), {}, "basic", False),
        ("matrix", "a 3x3 matrix, softmax over each row (default axis=-1)",
         (np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [-1.0, 0.0, 4.0]]),), {}, "basic", False),
        ("axis_0", "a 3x2 matrix with axis=0 (each column sums to 1)",
         (np.array([[1.0, -1.0], [2.0, 0.5], [0.0, 3.0]]),), {"axis": 0}, "axis", False),
        ("large", "large entries [1000, 1001, 1002]", ([1000.0, 1001.0, 1002.0],), {},
         "stability", False),
        ("rows_scales", "rows at very different scales (around 0, -2000 and 1000)", (z3,), {},
         "stability", True),
        ("huge", "entries up to 1e300 in size", (np.array([[1e300, 1e299, -1e300],
                                                           [3e200, -3e200, 0.0]]),), {},
         "stability", True),
        ("very_negative", "very negative entries (-1000 and below)",
         (np.array([-1000.0, -1001.0, -1003.0, -1000.5]),), {}, "stability", True),
        ("random_4x6", "a random 4x6 matrix, default axis", (_normal(21, (4, 6), 3.0),), {},
         "basic", True),
        ("single", "a single entry", (np.array([5.0]),), {}, "basic", True),
        ("uniform", "equal entries (uniform output)", (np.full((2, 4), 2.0),), {}, "basic", True),
        ("3d_axis_1", "a 2x3x4 array with axis=1", (_normal(22, (2, 3, 4), 2.0),), {"axis": 1},
         "axis", True),
        ("3d_axis_-2", "a 2x4x3 array with axis=-2", (_normal(23, (2, 4, 3), 2.0),),
         {"axis": -2}, "axis", True),
        ("3d_axis_0_large", "a 3x2x2 array with axis=0 and entries near 800",
         (800.0 + _normal(24, (3, 2, 2), 5.0),), {"axis": 0}, "axis", True),
    ]


def _cases_simple_self_attention():
    return [
        ("slides_cat", "the embeddings X of 'The cat sat <end>' (the slides' example)",
         (ex.CAT_X,), {}, "slides", False),
        ("lists_3x2", "a list of 3 rows with d = 2 (N != d)",
         ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],), {}, "shapes", False),
        ("random_5x3", "5 random rows, d = 3", (_normal(31, (5, 3)),), {}, "basic", True),
        ("wide_2x6", "2 rows, d = 6", (_normal(32, (2, 6)),), {}, "shapes", True),
        ("large", "large embeddings (scores in the thousands)", (_normal(33, (4, 4), 25.0),), {},
         "stability", True),
        ("rows_scales", "rows at very different scales",
         (_normal(34, (4, 3)) * np.array([[0.01], [1.0], [10.0], [30.0]]),), {}, "stability",
         True),
    ]


def _cases_project_qkv():
    return [
        ("slides_cat", "X, W_Q, W_K, W_V of the slides' example 'The cat sat <end>'",
         (ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V), {}, "slides", False),
        ("lists_dk_dv", "lists: X is 3x4, W_Q and W_K are 4x2 (d_k = 2), W_V is 4x3 (d_v = 3)",
         tuple(_normal(41 + i, s, decimals=1).tolist()
               for i, s in enumerate([(3, 4), (4, 2), (4, 2), (4, 3)])), {}, "shapes", False),
        ("square", "X is 5x3, all weights 3x3 (not symmetric)",
         tuple(_normal(45 + i, s) for i, s in enumerate([(5, 3), (3, 3), (3, 3), (3, 3)])), {},
         "basic", True),
        ("wide", "X is 2x5, d_k = 4, d_v = 2",
         tuple(_normal(49 + i, s) for i, s in enumerate([(2, 5), (5, 4), (5, 4), (5, 2)])), {},
         "shapes", True),
        ("one_row", "a single token, d = 3, d_k = 2, d_v = 1",
         tuple(_normal(53 + i, s) for i, s in enumerate([(1, 3), (3, 2), (3, 2), (3, 1)])), {},
         "shapes", True),
    ]


def _cases_scaled_dot_product_attention():
    Q, K, V = _cat_qkv()
    wash_K = np.vstack([ex.WASH_X1 @ ex.WASH_W_K, ex.WASH_K_REST])
    wash_q = (ex.WASH_X1 @ ex.WASH_W_Q)[None, :]
    aaba_X = ex.AABA_E[ex.AABA_IDS]
    aaba = (np.tile(ex.AABA_QUERY, (4, 1)), aaba_X @ ex.AABA_W_K, aaba_X)
    causal3 = np.tril(np.ones((3, 3), dtype=bool))
    causal5 = np.tril(np.ones((5, 5), dtype=bool))
    one_key = np.zeros((4, 6), dtype=bool)
    one_key[np.arange(4), [2, 0, 5, 3]] = True
    one_key[1, 1] = True
    n = _normal
    return [
        ("slides_cat", "Q, K, V of 'The cat sat <end>' (from the slides' W_Q, W_K, W_V), no mask",
         (Q, K, V), {}, "slides", False),
        ("slides_wash", "'we wash our cats': the query of 'we' against 4 keys (N_q = 1, N_k = 4)",
         (wash_q, wash_K, ex.WASH_V), {}, "slides", False),
        ("dk_dv_nq_nk", "N_q = 2 queries, N_k = 4 keys, d_k = 3, d_v = 5",
         (n(61, (2, 3), decimals=1), n(62, (4, 3), decimals=1), n(63, (4, 5), decimals=1)), {},
         "shapes", False),
        ("causal_mask", "3 tokens with a causal mask (a bool array), d_k = 2, d_v = 3",
         (n(64, (3, 2), decimals=1), n(65, (3, 2), decimals=1), n(66, (3, 3), decimals=1)),
         {"mask": causal3}, "mask", False),
        ("slides_aaba", "'A A B A': every query asks for B, keys are 10x the one-hot embeddings",
         aaba, {}, "slides", True),
        ("tall_keys", "N_q = 3, N_k = 6, d_k = 2, d_v = 4",
         (n(67, (3, 2)), n(68, (6, 2)), n(69, (6, 4))), {}, "shapes", True),
        ("many_queries", "N_q = 5, N_k = 2, d_k = 4, d_v = 1",
         (n(70, (5, 4)), n(71, (2, 4)), n(72, (2, 1))), {}, "shapes", True),
        ("random_mask", "a random bool mask, N_q = 3, N_k = 5, d_k = 4, d_v = 2",
         (n(73, (3, 4)), n(74, (5, 4)), n(75, (5, 2))), {"mask": _valid_mask(76, 3, 5)}, "mask",
         True),
        ("causal_5", "a causal mask on 5 tokens, d_k = 4, d_v = 2",
         (n(77, (5, 4)), n(78, (5, 4)), n(79, (5, 2))), {"mask": causal5}, "mask", True),
        ("one_key_rows", "a mask that lets most queries see a single key",
         (n(80, (4, 3)), n(81, (6, 3)), n(82, (6, 3))), {"mask": one_key}, "mask", True),
        ("large_scores", "large queries and keys (scores in the thousands)",
         (n(83, (3, 4), 30.0), n(84, (4, 4), 30.0), n(85, (4, 2))), {}, "stability", True),
        ("rows_scales", "queries at very different scales (1e-2, 1, 30), N_k = 5, d_v = 3",
         (n(89, (3, 4)) * np.array([[1e-2], [1.0], [30.0]]), n(90, (5, 4), 3.0),
          n(91, (5, 3))), {"mask": _valid_mask(92, 3, 5)}, "stability", True),
        ("large_masked", "large scores with a causal mask",
         (n(86, (3, 4), 30.0), n(87, (3, 4), 30.0), n(88, (3, 3))), {"mask": causal3},
         "stability", True),
        ("lists", "plain lists, N_q = 2, N_k = 3, d_k = 2, d_v = 1",
         ([[1.0, 0.5], [-1.0, 2.0]], [[0.5, 0.5], [1.0, -1.0], [2.0, 0.0]],
          [[1.0], [2.0], [3.0]]), {}, "basic", True),
    ]


def _cases_causal_mask():
    return [
        ("slides_4", "n = 4 (the four tokens of 'The cat sat <end>')", (4,), {}, "slides", False),
        ("n_1", "n = 1", (1,), {}, "basic", False),
        ("n_2", "n = 2", (2,), {}, "basic", True),
        ("n_3", "n = 3", (3,), {}, "basic", True),
        ("n_6", "n = 6", (6,), {}, "basic", True),
        ("n_9", "n = 9", (9,), {}, "basic", True),
    ]


def _cases_cross_attention():
    n = _normal
    return [
        ("slides_cat", "decoder: 'The cat' (2 rows of the slides' X); encoder: all 4 rows; "
         "the slides' W_Q, W_K, W_V", (ex.CAT_X[:2], ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V),
         {}, "slides", False),
        ("shapes", "N_dec = 2, N_enc = 5, d = 3, d_enc = 4, d_k = 2, d_v = 3",
         tuple(n(91 + i, s, decimals=1) for i, s in
               enumerate([(2, 3), (5, 4), (3, 2), (4, 2), (4, 3)])), {}, "shapes", False),
        ("more_dec", "N_dec = 4 > N_enc = 3, d = 5, d_enc = 2, d_k = 3, d_v = 2",
         tuple(n(96 + i, s) for i, s in enumerate([(4, 5), (3, 2), (5, 3), (2, 3), (2, 2)])),
         {}, "shapes", True),
        ("one_query", "a single decoder token, N_enc = 6",
         tuple(n(101 + i, s) for i, s in enumerate([(1, 4), (6, 4), (4, 3), (4, 3), (4, 5)])),
         {}, "shapes", True),
        ("square", "N_dec = N_enc = 3 and d = d_enc = 3 (all weights 3x3)",
         tuple(n(106 + i, s) for i, s in enumerate([(3, 3), (3, 3), (3, 3), (3, 3), (3, 3)])),
         {}, "basic", True),
        ("large", "large inputs (scores in the thousands)",
         tuple(n(111 + i, s, sc) for i, (s, sc) in
               enumerate([((2, 4), 20.0), ((3, 4), 20.0), ((4, 4), 1.0), ((4, 4), 1.0),
                          ((4, 2), 1.0)])), {}, "stability", True),
        ("lists", "plain lists, N_dec = 2, N_enc = 2, d = d_enc = 2, d_k = d_v = 2",
         ([[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [-1.0, 0.5]], [[1.0, 0.5], [0.0, 1.0]],
          [[0.5, 0.0], [1.0, 1.0]], [[1.0, -1.0], [0.0, 2.0]]), {}, "basic", True),
    ]


def _cases_split_heads():
    return [
        ("arange_4x6_h2", "X = arange(24) as 4x6, n_heads = 2", (np.arange(24.0).reshape(4, 6), 2),
         {}, "basic", False),
        ("lists_3x4_h2", "a list of 3 rows, d = 4, n_heads = 2",
         ([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], 2), {}, "basic", False),
        ("h3", "5x6, n_heads = 3", (_normal(121, (5, 6)), 3), {}, "heads", True),
        ("h4", "3x8, n_heads = 4", (_normal(122, (3, 8)), 4), {}, "heads", True),
        ("h1", "2x4, n_heads = 1 (one head holds everything)", (_normal(123, (2, 4)), 1), {},
         "heads", True),
        ("dh1", "3x4, n_heads = 4 (d_h = 1)", (_normal(124, (3, 4)), 4), {}, "heads", True),
        ("h2_square", "2x4, n_heads = 2 (N equals n_heads)", (_normal(125, (2, 4)), 2), {},
         "basic", True),
    ]


def _cases_merge_heads():
    return [
        ("arange_2x4x3", "H = arange(24) as 2 heads x 4 tokens x 3",
         (np.arange(24.0).reshape(2, 4, 3),), {}, "basic", False),
        ("lists_2x3x2", "nested lists: 2 heads, 3 tokens, d_h = 2",
         ([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]],), {}, "basic", False),
        ("h3", "3 heads x 5 tokens x 2", (_normal(131, (3, 5, 2)),), {}, "heads", True),
        ("h1", "1 head x 3 tokens x 4", (_normal(132, (1, 3, 4)),), {}, "heads", True),
        ("h4", "4 heads x 2 tokens x 2", (_normal(133, (4, 2, 2)),), {}, "heads", True),
        ("h2_square", "2 heads x 2 tokens x 3", (_normal(134, (2, 2, 3)),), {}, "basic", True),
    ]


def _mha_args(seed, N, d, scale=1.0, decimals=None):
    X = _normal(seed, (N, d), scale, decimals)
    Ws = [_normal(seed + 1 + i, (d, d), 1.0 / np.sqrt(d), decimals) for i in range(4)]
    return (X, *Ws)


def _cases_multi_head_attention():
    W_O = _normal(141, (4, 4), 0.5, decimals=1)
    return [
        ("slides_cat", "X and W_Q, W_K, W_V of 'The cat sat <end>', a random W_O, "
         "n_heads = 2, causal", (ex.CAT_X, ex.CAT_W_Q, ex.CAT_W_K, ex.CAT_W_V, W_O, 2), {},
         "slides", False),
        ("not_causal", "3 tokens, d_model = 4, n_heads = 2, causal=False",
         (*_mha_args(142, 3, 4, decimals=1), 2), {"causal": False}, "causal", False),
        ("h3_causal", "5 tokens, d_model = 6, n_heads = 3, causal",
         (*_mha_args(147, 5, 6), 3), {}, "heads", True),
        ("h2_not_causal", "4 tokens, d_model = 6, n_heads = 2, causal=False",
         (*_mha_args(152, 4, 6), 2), {"causal": False}, "causal", True),
        ("h4", "3 tokens, d_model = 8, n_heads = 4, causal=True passed explicitly",
         (*_mha_args(157, 3, 8), 4), {"causal": True}, "heads", True),
        ("h1", "4 tokens, d_model = 4, n_heads = 1", (*_mha_args(162, 4, 4), 1), {}, "heads",
         True),
        ("large", "large inputs (scores in the hundreds), n_heads = 2",
         (*_mha_args(167, 4, 4, scale=15.0), 2), {}, "stability", True),
        ("lists", "plain lists, 2 tokens, d_model = 2, n_heads = 2",
         ([[1.0, 2.0], [0.5, -1.0]], [[1.0, 0.0], [0.5, 1.0]], [[0.5, 1.0], [1.0, 0.0]],
          [[1.0, 1.0], [0.0, 2.0]], [[1.0, -1.0], [0.5, 0.5]], 2), {}, "basic", True),
    ]


def _cases_layer_norm():
    g4, b4 = np.array([1.0, 2.0, 0.5, 1.5]), np.array([0.0, 0.1, -0.2, 1.0])
    small = 5.0 + _normal(171, (3, 6), 1e-3)
    tiny = np.array([[1.0, 1.0 + 1e-4, 1.0 - 1e-4, 1.0], [0.0, 1e-3, 2e-3, -1e-3]])
    scales = _normal(172, (3, 5)) * np.array([[1e-3], [1.0], [1e3]])
    r = _rng(173)
    g6, b6 = 1.0 + 0.3 * r.normal(size=6), 0.2 * r.normal(size=6)
    g5, b5 = 1.0 + 0.3 * r.normal(size=5), 0.2 * r.normal(size=5)
    g8, b8 = 1.0 + 0.3 * r.normal(size=8), 0.2 * r.normal(size=8)
    return [
        ("slides_cat", "the embeddings of 'The cat sat <end>', gamma = 1, beta = 0",
         (ex.CAT_X, np.ones(4), np.zeros(4)), {}, "slides", False),
        ("lists_gamma_beta", "lists, with gamma and beta that are not 1 and 0",
         ([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 9.0]], g4.tolist(), b4.tolist()), {}, "basic",
         False),
        ("small_variance", "rows whose variance (~1e-6) is smaller than eps",
         (small, g6, b6), {}, "eps", False),
        ("tiny_variance", "rows with variance ~1e-8 and ~1e-6", (tiny, g4, b4), {}, "eps", True),
        ("constant_row", "a constant row (variance 0) next to a normal one",
         (np.array([[3.0, 3.0, 3.0, 3.0], [1.0, -1.0, 2.0, 0.5]]), g4, b4), {}, "eps", True),
        ("eps_1e-3", "eps = 1e-3 given as an argument", (small[:2] * 10.0, g6, b6),
         {"eps": 1e-3}, "eps", True),
        ("eps_0.1", "eps = 0.1 given as an argument", (_normal(174, (2, 5)), g5, b5),
         {"eps": 0.1}, "eps", True),
        ("scales", "rows at very different scales (1e-3 to 1e3)", (scales, g5, b5), {},
         "scales", True),
        ("random", "5 random rows, d = 8, offset from 0",
         (3.0 + _normal(175, (5, 8), 2.0), g8, b8), {}, "basic", True),
        ("one_row", "a single row", (np.array([[0.5, -1.5, 2.0, 4.0]]), g4, b4), {}, "basic",
         True),
    ]


def _ffn_args(seed, N, d, d_ff, scale=1.0, decimals=None):
    n = _normal
    return (n(seed, (N, d), scale, decimals), n(seed + 1, (d, d_ff), 1.0, decimals),
            n(seed + 2, d_ff, 0.5, decimals), n(seed + 3, (d_ff, d), 1.0, decimals),
            n(seed + 4, d, 0.5, decimals))


def _cases_feed_forward():
    return [
        ("small", "2 tokens, d = 3, d_ff = 4 (some hidden units are cut by the ReLU)",
         _ffn_args(181, 2, 3, 4, decimals=1), {}, "basic", False),
        ("lists", "plain lists, 3 tokens, d = 2, d_ff = 3",
         tuple(a.tolist() for a in _ffn_args(186, 3, 2, 3, decimals=1)), {}, "basic", False),
        ("wide", "5 tokens, d = 4, d_ff = 6", _ffn_args(191, 5, 4, 6), {}, "shapes", True),
        ("one_token", "1 token, d = 2, d_ff = 8", _ffn_args(196, 1, 2, 8), {}, "shapes", True),
        ("large", "large inputs", _ffn_args(201, 3, 3, 5, scale=100.0), {}, "basic", True),
    ]


def _cases_transformer_block():
    n = _normal
    return [
        ("basic", "3 tokens, d = 4, d_ff = 8, n_heads = 2, causal",
         (n(211, (3, 4)), _block_params(212, 4, 8), 2), {}, "basic", False),
        ("not_causal", "4 tokens, d = 4, d_ff = 8, n_heads = 2, causal=False",
         (n(213, (4, 4)), _block_params(214, 4, 8), 2), {"causal": False}, "causal", False),
        ("h3", "5 tokens, d = 6, d_ff = 12, n_heads = 3, causal",
         (n(215, (5, 6)), _block_params(216, 6, 12), 3), {}, "heads", True),
        ("h3_not_causal", "5 tokens, d = 6, n_heads = 3, causal=False",
         (n(217, (5, 6)), _block_params(218, 6, 12), 3), {"causal": False}, "causal", True),
        ("h4", "3 tokens, d = 8, d_ff = 16, n_heads = 4, causal=True passed explicitly",
         (n(219, (3, 8)), _block_params(220, 8, 16), 4), {"causal": True}, "heads", True),
        ("h1", "4 tokens, d = 4, n_heads = 1", (n(221, (4, 4)), _block_params(222, 4, 8), 1), {},
         "heads", True),
        ("scaled_input", "inputs around 10 in size", (n(223, (3, 4), 10.0),
                                                      _block_params(224, 4, 8), 2), {},
         "scales", True),
        ("one_token", "a single token", (n(225, (1, 4)), _block_params(226, 4, 8), 2), {}, "basic",
         True),
        ("list_input", "x as a plain list, 2 tokens, d = 4, n_heads = 2",
         (n(227, (2, 4), decimals=2).tolist(), _block_params(228, 4, 8), 2), {}, "basic", True),
    ]


def _cases_embed():
    r = _rng(231)
    E5, P6 = np.round(r.normal(size=(5, 3)), 1) + 0.0, np.round(r.normal(size=(6, 3)), 1) + 0.0
    E9, P12 = r.normal(size=(9, 4)), r.normal(size=(12, 4))
    P_aaba = np.round(0.1 * np.arange(12.0).reshape(6, 2), 1)
    return [
        ("slides_aaba", "'A A B A' with one-hot token embeddings E and a small P (n_ctx = 6)",
         (ex.AABA_IDS, ex.AABA_E, P_aaba), {}, "slides", False),
        ("repeats", "ids [3, 1, 4, 1] (a repeated id), V = 5, d = 3, n_ctx = 6",
         (np.array([3, 1, 4, 1]), E5, P6), {}, "basic", False),
        ("list_ids", "ids as a list [2, 0], V = 5, n_ctx = 6", ([2, 0], E5, P6), {}, "basic",
         True),
        ("full_context", "N = n_ctx = 6", (np.array([4, 4, 0, 2, 3, 1]), E5, P6), {}, "shapes",
         True),
        ("one_token", "a single token", (np.array([2]), E9, P12), {}, "shapes", True),
        ("large_vocab", "V = 9, n_ctx = 12, ids above n_ctx/2",
         (np.array([8, 7, 5, 8, 6], dtype=np.int32), E9, P12), {}, "basic", True),
    ]


def _cases_lm_head():
    r = _rng(241)
    return [
        ("slides_aaba", "'A A B A': h is the one-hot embeddings, E the one-hot table",
         (ex.AABA_E[ex.AABA_IDS], ex.AABA_E), {}, "slides", False),
        ("small", "2 positions, d = 3, V = 5", (np.round(r.normal(size=(2, 3)), 1) + 0.0,
                                               np.round(r.normal(size=(5, 3)), 1) + 0.0), {},
         "basic", False),
        ("square", "V = d = 4 (E is square, not symmetric)", (r.normal(size=(3, 4)),
                                                              r.normal(size=(4, 4))), {},
         "shapes", True),
        ("lists", "plain lists, 2 positions, d = 2, V = 3",
         ([[1.0, 2.0], [-1.0, 0.5]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), {}, "basic", True),
        ("tall", "6 positions, d = 5, V = 9", (r.normal(size=(6, 5)), r.normal(size=(9, 5))), {},
         "shapes", True),
    ]


def _cases_language_model_forward():
    p1 = _lm_params(251, V=7, d=4, n_ctx=8, n_blocks=1, ln_f=False)
    p2 = _lm_params(252, V=7, d=4, n_ctx=8, n_blocks=2, ln_f=True)
    p3 = _lm_params(253, V=6, d=6, n_ctx=6, n_blocks=3, ln_f=True)
    p4 = _lm_params(254, V=5, d=8, n_ctx=5, n_blocks=2, ln_f=False)
    return [
        ("one_block", "V = 7, d = 4, n_ctx = 8, 1 block, n_heads = 2, no final layer norm",
         (np.array([1, 4, 2, 6, 0]), p1, 2), {}, "basic", False),
        ("two_blocks_ln_f", "ids as a list, 2 blocks, n_heads = 2, with a final layer norm",
         ([3, 3, 5], p2, 2), {}, "blocks", False),
        ("three_blocks", "V = 6, d = 6, 3 blocks, n_heads = 3, final layer norm, N = n_ctx",
         (np.array([5, 0, 1, 1, 4, 2]), p3, 3), {}, "blocks", True),
        ("h1", "2 blocks, n_heads = 1", (np.array([0, 2, 1, 6]), p2, 1), {}, "blocks", True),
        ("h4_one_token", "d = 8, n_heads = 4, a single token", (np.array([3]), p4, 4), {},
         "shapes", True),
        ("h4", "d = 8, n_heads = 4, 2 blocks, no final layer norm",
         (np.array([1, 1, 4, 0]), p4, 4), {}, "blocks", True),
    ]


def _cases_cross_entropy():
    return [
        ("small", "2 rows, V = 3", (np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]),
                                   np.array([0, 1])), {}, "basic", False),
        ("lists", "lists, 3 rows, V = 4, targets not at the largest logit",
         ([[1.0, 2.0, 0.0, -1.0], [0.0, 0.0, 3.0, 1.0], [2.0, -2.0, 1.0, 0.0]], [3, 0, 1]), {},
         "basic", False),
        ("large", "large logits (around 1000)", (np.array([[1000.0, 0.0, -1000.0],
                                                          [0.0, 1000.0, 2.0]]), np.array([1, 2])),
         {}, "stability", False),
        ("huge", "logits up to 1e300", (np.array([[1e300, 0.0, -1e300], [1e3, 1e10, 1e100]]),
                                        np.array([1, 0])), {}, "stability", True),
        ("rows_scales", "rows at very different scales (1e-3 to 1e3)",
         (_normal(261, (3, 5)) * np.array([[1e-3], [1.0], [1e3]]), np.array([4, 0, 2])), {},
         "scales", True),
        ("very_negative", "very negative logits (-1000 and below)",
         (np.array([[-1000.0, -1002.0, -1001.0]]), np.array([1])), {}, "stability", True),
        ("one_row", "a single row, V = 6", (_normal(262, (1, 6)), np.array([5])), {}, "basic",
         True),
        ("random", "6 rows, V = 10", (_normal(263, (6, 10), 2.0), _rng(264).integers(0, 10, 6)),
         {}, "basic", True),
        ("confident_right", "large logits with the target at the largest one",
         (np.array([[50.0, 0.0, -3.0], [1.0, 40.0, 2.0]]), np.array([0, 1])), {}, "stability",
         True),
    ]


#: Small language models for generate (built once; cases deep-copy them).
def _gen_models():
    return {
        "m8": _lm_params(308, V=8, d=8, n_ctx=5, n_blocks=1, ln_f=False, e_scale=0.5),
        "m4": _lm_params(272, V=6, d=4, n_ctx=4, n_blocks=2, ln_f=True),
        "ms": _lm_params(273, V=6, d=4, n_ctx=5, n_blocks=1, ln_f=True, e_scale=0.6),
    }


def _cases_generate():
    m = _gen_models()
    return [
        ("greedy", "greedy (temperature 0), prompt [1, 5], 5 new tokens, n_ctx = 5",
         (np.array([1, 5]), m["m8"], 2, 5), {}, "greedy", False),
        ("greedy_list", "greedy with temperature=0.0 given, prompt as a list [3], 3 new tokens",
         ([3], m["m8"], 2, 3), {"temperature": 0.0}, "greedy", False),
        ("sampling", "sampling at temperature 0.5 with rng = np.random.default_rng(7), "
         "prompt [2], 200 new tokens, n_ctx = 5",
         (np.array([2]), m["ms"], 2, 200), {"temperature": 0.5, "rng": _rng(7)}, "sampling",
         False),
        ("greedy_crop", "greedy, prompt of 3 tokens, 6 new tokens, n_ctx = 4 (the context "
         "must be cropped)", (np.array([0, 3, 5]), m["m4"], 2, 6), {}, "cropping", True),
        ("greedy_full", "greedy, a prompt of exactly n_ctx = 4 tokens, 3 new tokens",
         (np.array([2, 2, 1, 4]), m["m4"], 1, 3), {}, "cropping", True),
        ("zero_new", "n_new = 0 (returns the prompt)", (np.array([4, 0, 1]), m["m8"], 2, 0), {},
         "greedy", True),
        ("greedy_long", "greedy, prompt [3], 10 new tokens, n_ctx = 5, n_heads = 1",
         (np.array([3]), m["ms"], 1, 10), {}, "greedy", True),
        ("sampling_hot", "sampling at temperature 2.0 with rng = np.random.default_rng(11), "
         "prompt [0, 1], 200 new tokens, n_ctx = 5",
         (np.array([0, 1]), m["ms"], 2, 200), {"temperature": 2.0, "rng": _rng(11)}, "sampling",
         True),
        ("sampling_cold", "sampling at temperature 0.25 with rng = np.random.default_rng(12), "
         "prompt [3], 150 new tokens, n_ctx = 5",
         (np.array([3]), m["ms"], 1, 150), {"temperature": 0.25, "rng": _rng(12)}, "sampling",
         True),
        ("sampling_crop", "sampling at temperature 0.8 with rng = np.random.default_rng(13), "
         "prompt of 3 tokens, 200 new tokens, n_ctx = 4, 2 blocks",
         (np.array([1, 2, 3]), m["m4"], 2, 200), {"temperature": 0.8, "rng": _rng(13)},
         "sampling", True),
    ]


_BUILDERS: dict[str, Callable[[], list]] = {
    name: globals()[f"_cases_{name}"] for name in helpers.CONTRACT_FUNCTIONS
}


@functools.lru_cache(maxsize=None)
def _all_cases(name: str) -> tuple[Case, ...]:
    return tuple(Case(name, cname, desc, tuple(args), dict(kwargs), group, hidden)
                 for cname, desc, args, kwargs, group, hidden in _BUILDERS[name]())


def _check_name(name: str) -> None:
    if name not in _BUILDERS:
        raise ValueError(f"{name!r} is not an exercise function; choose one of: "
                         f"{', '.join(helpers.CONTRACT_FUNCTIONS)}")


def groups(name: str, hidden: bool | None = None) -> list[str]:
    """The group names of ``name``'s cases (visible, hidden, or both when None)."""
    _check_name(name)
    out = []
    for c in _all_cases(name):
        if (hidden is None or c.hidden == hidden) and c.group not in out:
            out.append(c.group)
    return out


def cases(name: str, hidden: bool = False, group: str | None = None) -> list[Case]:
    """The visible (``hidden=False``) or hidden cases of contract function ``name``.

    Fresh copies every call (nothing a caller does to them leaks into the next call).
    """
    _check_name(name)
    selected = [c for c in _all_cases(name) if c.hidden == hidden]
    if group is not None:
        selected = [c for c in selected if c.group == group]
        if not selected:
            raise ValueError(
                f"{name} has no {'hidden' if hidden else 'visible'} cases in group {group!r}; "
                f"its groups are: {', '.join(groups(name, hidden))}")
    return copy.deepcopy(selected)


# ---------------------------------------------------------------------------------------
# Running a learner's function
# ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet():
    """No warnings and no floating-point error messages from the code inside.

    Test cells call the learner's functions inside ``with quiet():``: a correct answer
    may print a NumPy warning (``0 * inf`` in a mask, say), and under plain nbgrader any
    output on stderr scores a test cell 0. The checks below use it too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield


_quiet = quiet      # for code where `quiet` is a parameter (assert_close)


def _own_implementation_message(name: str) -> str:
    return (f"{name} must be your own implementation; it called helpers.{name} "
            f"(the reference). Other helpers functions may be used, not this one.")


def _is_reference(fn, ref) -> bool:
    seen = set()
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        if fn is ref or getattr(fn, "__code__", None) is ref.__code__:
            return True
        fn = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None) or getattr(
            fn, "__func__", None)
    return False


def _functions_of(fn) -> list:
    """fn and whatever it wraps (partials, bound methods, decorators), as plain functions."""
    out, todo, seen = [], [fn], set()
    while todo:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        if inspect.isfunction(f):
            out.append(f)
        todo += [getattr(f, "__wrapped__", None), getattr(f, "func", None),
                 getattr(f, "__func__", None)]
        call = getattr(type(f), "__call__", None)
        if call is not None and inspect.isfunction(call):
            todo.append(call)
    return out


@contextlib.contextmanager
def _poisoned_references(references: dict[str, Callable], owners, fn,
                         message: Callable[[str], str]):
    """While active, each reference (attribute name -> function) raises ``CheckFailed``
    with ``message(attribute)`` wherever ``fn`` could reach it: as that attribute of each
    of ``owners`` (modules), and as a global, closure cell or default argument of ``fn``
    and of what it wraps. Yields a dict whose ``"called"`` turns True on a call."""
    state = {"called": False}
    poisons: dict[int, Callable] = {}
    originals: dict[int, Callable] = {}
    for attr, ref in references.items():
        def poison(*args, _attr=attr, **kwargs):
            state["called"] = True
            raise CheckFailed(message(_attr))

        poisons[id(ref)], originals[id(ref)] = poison, ref

    undo = []
    for obj in owners:
        for attr, ref in references.items():
            if getattr(obj, attr, None) is ref:
                undo.append(lambda o=obj, a=attr, r=ref: setattr(o, a, r))
                setattr(obj, attr, poisons[id(ref)])

    def swap(value):
        return poisons.get(id(value)) if originals.get(id(value)) is value else None

    for f in _functions_of(fn):
        g = f.__globals__
        for key, value in list(g.items()):
            if swap(value) is not None:
                undo.append(lambda g=g, k=key, v=value: g.__setitem__(k, v))
                g[key] = swap(value)
        for cell in f.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:              # an empty cell
                continue
            if swap(value) is not None:
                undo.append(lambda c=cell, v=value: setattr(c, "cell_contents", v))
                cell.cell_contents = swap(value)
        if f.__defaults__ and any(swap(d) is not None for d in f.__defaults__):
            old = f.__defaults__
            undo.append(lambda f=f, old=old: setattr(f, "__defaults__", old))
            f.__defaults__ = tuple(swap(d) or d for d in old)
        if f.__kwdefaults__ and any(swap(d) is not None for d in f.__kwdefaults__.values()):
            old_kw = dict(f.__kwdefaults__)
            undo.append(lambda f=f, old=old_kw: setattr(f, "__kwdefaults__", old))
            f.__kwdefaults__ = {k: swap(d) or d for k, d in old_kw.items()}
    try:
        yield state
    finally:
        for restore in reversed(undo):
            restore()


def _poisoned(name: str, fn):
    """Replace the reference of contract function ``name`` everywhere ``fn`` could reach
    it (``helpers.<name>``, ``helpers.reference.<name>``, fn's globals...) by a poison."""
    return _poisoned_references({name: _REFERENCE[name]}, (helpers, reference), fn,
                                lambda _: _own_implementation_message(name))


def _not_implemented_message(name: str) -> str:
    return (f"{name} is not implemented yet: replace `raise "
            f"NotImplementedError()` by your code")


@dataclass
class _Outcome:
    got: Any = None
    error: BaseException | None = None
    called_reference: bool = False


def _run(name: str, fn, case: Case) -> _Outcome:
    args, kwargs = case.fresh_args()
    out = _Outcome()
    with _quiet(), _poisoned(name, fn) as state:
        try:
            out.got = fn(*args, **kwargs)
        except Exception as exc:                      # the learner's code may raise anything
            out.error = exc
    out.called_reference = state["called"]
    return out


def _student_location(exc: BaseException) -> str:
    """'line 3 of softmax: e = np.exp(z)' for the innermost frame outside NumPy and us."""
    helpers_dir = __file__.rsplit("/", 1)[0] + "/"
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(helpers_dir) and "/numpy/" not in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    code = f" `{f.line.strip()}`" if f.line else ""
    return f" (in {f.name}, line {f.lineno}{code})"


# ---------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------


def _num(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    v = float(v)
    if np.isnan(v) or np.isinf(v):
        return str(v)
    return f"{v:.6g}"


def _fmt_array(a, limit: int = 48, indent: int = 8) -> str:
    try:
        arr = np.asarray(a)
    except Exception:
        return repr(a)
    if arr.dtype == object:
        return repr(a)[:200]
    if arr.size <= limit:
        text = np.array2string(arr, precision=6, separator=", ", max_line_width=96,
                               suppress_small=False)
        return text.replace("\n", "\n" + " " * indent)
    lo, hi = (arr.min(), arr.max()) if arr.size else (0, 0)
    return f"array of shape {arr.shape}, values from {_num(lo)} to {_num(hi)}"


def _expected_got(expected, got) -> str:
    """Two aligned lines: the expected array, then the one that was got."""
    return (f"\n    expected: {_fmt_array(expected, indent=14)}"
            f"\n    got:      {_fmt_array(got, indent=14)}")


def _fmt_value(v, indent: int = 8) -> str:
    if isinstance(v, np.random.Generator):
        return "a numpy Generator (see the case's words for its seed)"
    if isinstance(v, dict):
        parts = []
        for k, x in v.items():
            if k == "blocks":
                parts.append(f"blocks: {len(x)} block(s) with keys {', '.join(x[0])}" if x
                             else "blocks: []")
            else:
                parts.append(f"{k} {list(np.shape(x))}")
        return "dict with " + "; ".join(parts)
    if isinstance(v, (list, tuple, np.ndarray)):
        return _fmt_array(v, indent=indent)
    return repr(v)


def _describe_input(case: Case) -> str:
    params = list(inspect.signature(_REFERENCE[case.function]).parameters)
    named = [(params[i] if i < len(params) else f"arg{i}", a) for i, a in enumerate(case.args)]
    named += list(case.kwargs.items())
    return "\n".join(f"    {k} = {_fmt_value(v, indent=len(k) + 7)}" for k, v in named)


def _case_header(case: Case) -> str:
    kind = "hidden" if case.hidden else "visible"
    return (f"Case {case.name!r} ({kind}, group {case.group!r}): {case.description}.\n"
            f"  Input:\n{_describe_input(case)}")


# ---------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------


def _as_float_array(got, what: str):
    """(array, None) or (None, problem)."""
    if got is None:
        return None, f"{what} is None: is a `return` missing?"
    try:
        with _quiet():
            arr = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return None, (f"{what} could not be read as an array of numbers ({exc}); got "
                      f"{type(got).__name__}")
    return arr, None


def _close(a: np.ndarray, b: np.ndarray, equal_nan: bool = False) -> np.ndarray:
    with _quiet():
        return np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=equal_nan)


def _array_problem(name: str, expected, got, what: str = "the output") -> str | None:
    exp = np.asarray(expected, dtype=np.float64)
    if isinstance(got, tuple):
        msg = f"{what} should be one array, got a tuple of {len(got)} items"
        if got and _same_output("", got[0], exp):
            msg += " (the first item is right: return only that one)"
        return msg
    arr, problem = _as_float_array(got, what)
    if problem:
        return problem
    if arr.shape != exp.shape:
        msg = f"{what} has the wrong shape: expected {exp.shape}, got {arr.shape}"
        if arr.ndim == 2 and arr.T.shape == exp.shape and _close(arr.T, exp).all():
            msg += " (it is the transpose of the expected output)"
        elif arr.shape == () and exp.ndim:
            msg += " (a single number instead of an array)"
        elif exp.shape == () and arr.size == 1:
            msg += " (return a single number, e.g. float(...), not an array)"
        return msg
    ok = _close(arr, exp)
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    idx = tuple(int(i) for i in bad[0])
    where = f" at index {idx}" if idx else ""
    e, g = exp[idx], arr[idx]
    if exp.shape == () and np.isfinite(g):
        return f"{what}: expected {_num(e)}, got {_num(g)}"
    if not np.isfinite(g) and np.isfinite(e):
        hint = _NAN_HINTS.get(name, _ATTENTION_HINT)
        n_bad = int((~np.isfinite(arr) & np.isfinite(exp)).sum())
        return (f"{what}: got {_num(g)}{where} where {_num(e)} was expected "
                f"({n_bad} non-finite entr{'y' if n_bad == 1 else 'ies'}): {hint}")
    msg = (f"{what}: wrong values ({len(bad)} of {exp.size} entries differ); first "
           f"difference{where}: expected {_num(e)}, got {_num(g)}")
    if exp.size > 1:
        msg += _expected_got(exp, arr)
    ratio = _constant_ratio(exp, arr) if exp.size > 1 else None
    if ratio is not None:
        msg += f"\n    (every entry is {_num(ratio)} times the expected one)"
    msg += _precision_hint(got, exp, arr)
    return msg


def _precision_hint(got, exp: np.ndarray, arr: np.ndarray) -> str:
    """A hint when the answer is right up to float32 rounding."""
    dtype = getattr(got, "dtype", None)
    if dtype is None and isinstance(got, (tuple, list)) and got:
        dtype = getattr(got[0], "dtype", None)
    low = dtype in (np.float32, np.float16) if dtype is not None else False
    with _quiet():
        near = bool(np.allclose(arr, exp, rtol=1e-3, atol=1e-5))
    if low and near:
        return (f"\n    (your answer is {dtype}, and right up to its rounding: compute in "
                f"float64, e.g. np.asarray(x, dtype=np.float64))")
    return ""


def _constant_ratio(exp: np.ndarray, arr: np.ndarray):
    with _quiet():
        nz = np.abs(exp) > 1e-12
        if nz.sum() < 1 or not np.isfinite(arr).all():
            return None
        r = arr[nz] / exp[nz]
        if np.allclose(r, r[0], rtol=1e-6) and not np.isclose(r[0], 1.0) and r[0] != 0 and \
                np.allclose(arr[~nz], 0.0, atol=ATOL):
            return float(r[0])
    return None


def _mask_problem(expected, got) -> str | None:
    arr, problem = _as_float_array(got, "the mask")
    if problem:
        return problem
    exp = np.asarray(expected)
    if arr.shape != exp.shape:
        return f"the mask has the wrong shape: expected {exp.shape}, got {arr.shape}"
    if np.array_equal(arr, exp.astype(np.float64)):
        return None
    idx = tuple(int(i) for i in np.argwhere(arr != exp)[0])
    return (f"the mask has wrong entries; first at [i, j] = {list(idx)}: expected "
            f"{bool(exp[idx])}, got {_fmt_array(np.asarray(got)[idx])}"
            f"{_expected_got(exp, np.asarray(got))}")


def _ids_array(got):
    arr, problem = _as_float_array(got, "the output")
    if problem:
        return None, problem
    if arr.ndim != 1:
        return None, f"the output must be a 1-D array of ids, got shape {arr.shape}"
    if not (np.isfinite(arr).all() and np.array_equal(arr, np.round(arr))):
        return None, "the output must hold whole numbers (token ids)"
    return arr.astype(np.int64), None


def _generate_parts(case: Case):
    prompt, params, n_heads, n_new = case.args[:4]
    temperature = case.kwargs.get("temperature", 0.0)
    return np.asarray(prompt).astype(np.int64), params, n_heads, n_new, temperature


#: Reference next-token logits by (model fingerprint, n_heads, context bytes).
_LOGITS_CACHE: dict = {}


def _fingerprint(obj) -> str:
    """A hash of every number in a (nested) params dict: equal models, equal hashes."""
    h = hashlib.sha1()

    def feed(o):
        if isinstance(o, dict):
            for k in sorted(o):
                h.update(str(k).encode())
                feed(o[k])
        elif isinstance(o, (list, tuple)) and o and isinstance(o[0], dict):
            for x in o:
                feed(x)
        else:
            a = np.asarray(o, dtype=np.float64)
            h.update(str(a.shape).encode())
            h.update(a.tobytes())

    feed(obj)
    return h.hexdigest()


def _sampling_statistics(case: Case, ids: np.ndarray, samplers: list) -> list:
    """For each sampler, (z, n_impossible) of the sampled ids' negative log-likelihood.

    The per-step distribution is sampler(reference logits on the answer's own context).
    """
    prompt, params, n_heads, n_new, T = _generate_parts(case)
    n_ctx = np.shape(params["P"])[0]
    N = len(prompt)
    model = (_fingerprint(params), n_heads)
    acc = [[0.0, 0.0, 0.0, 0] for _ in samplers]          # nll, entropy, variance, impossible
    with _quiet():
        for t in range(n_new):
            ctx = ids[: N + t][-n_ctx:]
            key = (model, ctx.tobytes())
            logits = _LOGITS_CACHE.get(key)
            if logits is None:
                logits = _REFERENCE["language_model_forward"](ctx, params, n_heads)[-1]
                if len(_LOGITS_CACHE) > 20000:
                    _LOGITS_CACHE.clear()
                _LOGITS_CACHE[key] = logits
            s = int(ids[N + t])
            for a, sampler in zip(acc, samplers):
                p = sampler(logits, T)
                if p[s] < 1e-12:
                    a[3] += 1
                    continue
                logp = np.log(np.where(p > 0, p, 1.0))
                h = -(p * logp).sum()
                a[0] += -logp[s]
                a[1] += h
                a[2] += (p * logp * logp).sum() - h * h
    out = []
    for nll, ent, var, impossible in acc:
        z = (nll - ent) / np.sqrt(var) if var > 1e-12 else (0.0 if abs(nll - ent) < 1e-9
                                                            else np.inf)
        out.append((float(z), impossible))
    return out


def _correct_sampler(logits, temperature):
    z = (logits - logits.max()) / temperature
    return _REFERENCE["softmax"](z)


def _generate_problem(case: Case, expected, got) -> str | None:
    ids, problem = _ids_array(got)
    if problem:
        return problem
    prompt, params, n_heads, n_new, T = _generate_parts(case)
    V = np.shape(params["E"])[0]
    want = len(prompt) + n_new
    if len(ids) != want:
        return (f"the output has {len(ids)} ids; expected {want} (the prompt's {len(prompt)} "
                f"followed by n_new = {n_new} new ones)")
    if not np.array_equal(ids[: len(prompt)], prompt):
        return (f"the output must start with the prompt {prompt.tolist()}; it starts with "
                f"{ids[: len(prompt)].tolist()}")
    if ((ids < 0) | (ids >= V)).any():
        bad = ids[(ids < 0) | (ids >= V)][0]
        return f"id {bad} is not a token of the vocabulary (V = {V})"
    if not case.is_sampling:
        exp = np.asarray(expected)
        if np.array_equal(ids, exp):
            return None
        k = int(np.argmax(ids != exp))
        return (f"wrong ids: expected {exp.tolist()}, got {ids.tolist()} (first difference "
                f"at position {k}, new token {k - len(prompt) + 1})")
    (z, impossible), = _sampling_statistics(case, ids, [_correct_sampler])
    if impossible:
        return (f"{impossible} sampled ids have (almost) zero probability under "
                f"softmax(logits / temperature) of the last {np.shape(params['P'])[0]} tokens")
    if abs(z) > SAMPLING_Z_LIMIT:
        way = ("more likely" if z < 0 else "less likely")
        return (f"the sampled ids do not follow softmax(logits / temperature): they are "
                f"{way} than samples from it would be (z = {z:.1f} over {n_new} steps, "
                f"|z| <= {SAMPLING_Z_LIMIT:g} expected)")
    return None


def _problem(name: str, case: Case, expected, got) -> str | None:
    if name == "generate":
        return _generate_problem(case, expected, got)
    if name == "causal_mask":
        return _mask_problem(expected, got)
    if name in _TUPLE_PARTS:
        parts = _TUPLE_PARTS[name]
        if isinstance(got, np.ndarray) or not isinstance(got, (tuple, list)):
            return (f"expected a tuple ({', '.join(parts)}), got "
                    f"{'None: is a `return` missing?' if got is None else type(got).__name__}")
        if len(got) != len(parts):
            return f"expected a tuple of {len(parts)} ({', '.join(parts)}), got {len(got)} items"
        for part, e, g in zip(parts, expected, got):
            p = _array_problem(name, e, g, what=part)
            if p:
                return p
        return None
    what = "the result" if name in _SCALAR else "the output"
    return _array_problem(name, expected, got, what)


def _same_output(name: str, a, b) -> bool:
    """Whether two outputs agree (NaN where NaN), used to recognise a mistake."""
    try:
        if name in _TUPLE_PARTS:
            if not isinstance(a, (tuple, list)) or not isinstance(b, (tuple, list)) or \
                    len(a) != len(b):
                return False
            return all(_same_output("", x, y) for x, y in zip(a, b))
        with _quiet():
            x = np.asarray(a, dtype=np.float64)
            y = np.asarray(b, dtype=np.float64)
        return x.shape == y.shape and bool(_close(x, y, equal_nan=True).all())
    except (TypeError, ValueError):
        return False


def diagnose(name: str, case: Case, got=None, error: BaseException | None = None) -> list[Mistake]:
    """The known mistakes of ``name`` whose output on ``case`` is ``got``.

    With ``error``, the mistakes that raise the same exception (type and text) instead.
    Sampling cases of generate are matched by distribution (mistakes with a ``sampler``).
    """
    _check_name(name)
    found = []
    if name == "generate" and case.is_sampling and error is None:
        ids, problem = _ids_array(got)
        samplers = [m for m in MISTAKES.get(name, []) if m.sampler is not None]
        prompt = _generate_parts(case)[0]
        if problem or not samplers or len(ids) != len(prompt) + case.args[3] or \
                not np.array_equal(ids[: len(prompt)], prompt):
            return found
        V = np.shape(case.args[1]["E"])[0]
        if ((ids < 0) | (ids >= V)).any():
            return found
        stats = _sampling_statistics(case, ids, [m.sampler for m in samplers])
        return [m for m, (z, imp) in zip(samplers, stats)
                if imp == 0 and abs(z) <= SAMPLING_DIAGNOSIS_Z]
    if name == "generate" and error is not None:
        # An error of generate shows within the first n_ctx + 2 steps (the context grows
        # past n_ctx there); replaying the whole case for every mistake would be slow.
        n_ctx = np.shape(case.args[1]["P"])[0]
        args = list(case.args)
        args[3] = min(args[3], n_ctx + 2)
        case = Case(case.function, case.name, case.description, tuple(args), case.kwargs,
                    case.group, case.hidden)
    for mistake in MISTAKES.get(name, []):
        args, kwargs = case.fresh_args()
        with _quiet():
            try:
                out, err = mistake.fn(*args, **kwargs), None
            except Exception as exc:                   # a mistake may fail on some inputs
                out, err = None, exc
        if error is not None:
            if err is not None and type(err) is type(error) and str(err) == str(error):
                found.append(mistake)
        elif err is None and _same_output(name, out, got):
            found.append(mistake)
    return found


def _diagnosis_text(found: list[Mistake]) -> str:
    if not found:
        return ""
    if len(found) == 1:
        return f"\n  Likely mistake: {found[0].message}."
    return "\n  Likely mistake (one of these gives exactly this output):\n" + "\n".join(
        f"    - {m.message}." for m in found)


def compare(name: str, case: Case, got) -> str | None:
    """None when ``got`` is a right answer to ``case``; otherwise what is wrong, in words.

    The text names the case and its input, expected against got, and the known mistake
    that produces exactly ``got`` when there is one.
    """
    _check_name(name)
    expected = None if case.is_sampling else case.expected()   # samples have no one answer
    problem = _problem(name, case, expected, got)
    if problem is None:
        return None
    found = diagnose(name, case, got)
    return f"{_case_header(case)}\n  Problem: {problem}{_diagnosis_text(found)}"


def _error_text(name: str, case: Case, exc: BaseException) -> str:
    found = diagnose(name, case, error=exc)
    text = str(exc).strip().splitlines()
    short = (text[0][:300] if text else "")
    hint = ""
    if isinstance(exc, TypeError) and "argument" in short:
        params = inspect.signature(_REFERENCE[name]).parameters.values()
        sig = ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                        for p in params)
        hint = f"\n  The signature must be {name}({sig})"
    return (f"{_case_header(case)}\n  Problem: your {name} raised {type(exc).__name__}: "
            f"{short}{_student_location(exc)}{hint}{_diagnosis_text(found)}")


# ---------------------------------------------------------------------------------------
# check and assert_close
# ---------------------------------------------------------------------------------------


def repeat_problem(name: str, case: Case, first, second) -> str | None:
    """For a sampling case: None when two calls (each with ``case.fresh_args()``, so the
    same seeded rng) gave the same ids; otherwise what is wrong. A grader that can afford
    a second call per sampling case may use it; :func:`check` does, on the first one.
    """
    if not case.is_sampling or (not isinstance(second, BaseException)
                                and _same_output(name, first, second)):
        return None
    return (f"{_case_header(case)}\n  Problem: two calls with the same seeded rng gave "
            f"different ids.\n  Likely mistake: {_rng_message()}.")


def _rng_message() -> str:
    for m in MISTAKES.get("generate", []):
        if m.key == "rng_ignored":
            return m.message
    return "use the rng argument"


def check(name: str, fn, hidden: bool = False, group: str | None = None) -> None:
    """Run the visible (or hidden) cases of contract function ``name`` on ``fn``.

    Prints one line when every case passes; raises :class:`CheckFailed` otherwise, with
    the first failing case explained (and the names of the other failing ones).
    """
    _check_name(name)
    selected = cases(name, hidden=hidden, group=group)
    if not callable(fn):
        raise CheckFailed(f"check({name!r}, ...) needs your function, got {type(fn).__name__}")
    if _is_reference(fn, _REFERENCE[name]):
        raise CheckFailed(_own_implementation_message(name))
    failures = []
    determinism_checked = False
    for case in selected:
        outcome = _run(name, fn, case)
        if outcome.called_reference:
            raise CheckFailed(_own_implementation_message(name)) from None
        if isinstance(outcome.error, NotImplementedError):
            raise CheckFailed(_not_implemented_message(name)) from None
        if outcome.error is not None:
            failures.append((case, _error_text(name, case, outcome.error)))
            continue
        problem = compare(name, case, outcome.got)
        if problem is None and case.is_sampling and not determinism_checked:
            determinism_checked = True
            again = _run(name, fn, case)
            problem = repeat_problem(name, case, outcome.got,
                                     again.error if again.error is not None else again.got)
        if problem is not None:
            failures.append((case, problem))
    n = len(selected)
    passed = n - len(failures)
    label = f"{name}{' (hidden)' if hidden else ''}{f' [{group}]' if group else ''}"
    if not failures:
        print(f"{label}: {passed}/{n} checks passed")
        return
    first_case, text = failures[0]
    others = ""
    if len(failures) > 1:
        others = "\n  Also failed: " + ", ".join(repr(c.name) for c, _ in failures[1:])
    raise CheckFailed(f"{label}: {passed}/{n} checks passed.\n{text}{others}") from None


def assert_close(got, expected, what: str = "the result", rtol: float = RTOL,
                 atol: float = ATOL, quiet: bool = False) -> None:
    """Check ``got`` against ``expected`` (shapes, then values) in the style of :func:`check`.

    For exercises outside the contract. Prints one line when they match (unless
    ``quiet``); raises :class:`CheckFailed` with the first difference otherwise.
    """
    exp = np.asarray(expected, dtype=np.float64)
    arr, problem = _as_float_array(got, what)
    if problem is None:
        if arr.shape != exp.shape:
            problem = f"{what} has the wrong shape: expected {exp.shape}, got {arr.shape}"
        else:
            with _quiet():
                ok = np.isclose(arr, exp, rtol=rtol, atol=atol)
            if not ok.all():
                # booleans (masks) are shown as True/False, numbers with 6 digits
                shown_exp = np.asarray(expected) if np.asarray(expected).dtype == bool else exp
                shown_got = np.asarray(got) if np.asarray(got).dtype == bool else arr
                idx = tuple(int(i) for i in np.argwhere(~ok)[0])
                where = f" at index {idx}" if idx else ""
                problem = (f"{what}: first difference{where}: expected {_num(shown_exp[idx])}, "
                           f"got {_num(shown_got[idx])}")
                if exp.size > 1:
                    problem += _expected_got(shown_exp, shown_got)
                if not np.isfinite(arr[idx]) and np.isfinite(exp[idx]):
                    problem += "\n    (a NaN or inf: is a computation unstable?)"
    if problem is not None:
        raise CheckFailed(problem)
    if not quiet:
        print(f"{what}: correct")


# ---------------------------------------------------------------------------------------
# Exercises outside the contract (helpers.bert, helpers.llama): check_against
# ---------------------------------------------------------------------------------------


@dataclass(eq=False)
class ExerciseCase:
    """One case of an exercise outside the contract, for :func:`check_against`.

    By default the learner's ``fn`` is called as ``fn(*args, **kwargs)`` on fresh copies,
    the expected output is ``reference(*args, **kwargs)`` and the known mistakes are
    ``mistakes(args, kwargs)``. A case that needs more (a cache filled by two calls) gives
    ``run(fn) -> output``, ``expected`` and ``mistakes`` (``{message: wrong output}``).
    """

    description: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    run: Callable | None = None
    expected: Any = None
    mistakes: dict | None = None


def check_against(name: str, fn, cases, reference: Callable, *, module, refuse=(),
                  mistakes: Callable | None = None, near_miss: str | None = None,
                  rtol: float = RTOL, atol: float = ATOL) -> None:
    """Check the learner's ``fn`` for exercise ``name`` in the style of :func:`check`.

    cases: :class:`ExerciseCase` objects or ``(description, args[, kwargs])`` tuples.
    reference: ``reference(*args, **kwargs)`` is the right output of a case.
    module, refuse: the functions ``module.<attr>`` (attr in ``refuse``) that would do the
    exercise's work; ``fn`` must not be one of them, and while it runs they raise
    ``CheckFailed`` (as ``module.<attr>`` and wherever ``fn`` holds them).
    mistakes: ``mistakes(args, kwargs) -> {message: wrong output}``, the known mistakes;
    one whose output ``got`` matches is named. near_miss: a hint for an answer within
    ``rtol=1e-3, atol=1e-5`` that matches no known mistake.

    Prints ``"<name>: n/n checks passed"`` when every case passes; otherwise raises
    :class:`CheckFailed` for the first failing case (which case, expected against got, or
    the mistake in words). Warnings of the learner's code are silenced.
    """
    if not callable(fn):
        raise CheckFailed(f"{name} needs your function, got {type(fn).__name__}")
    where = module.__name__
    references = {attr: getattr(module, attr) for attr in refuse}
    for attr, ref in references.items():
        if _is_reference(fn, ref):
            raise CheckFailed(f"{name} must be your own implementation; this is {where}.{attr}")
    cases = [c if isinstance(c, ExerciseCase) else ExerciseCase(*c) for c in cases]
    hint = f"\n    (nearly right: {near_miss})" if near_miss else ""
    for case in cases:
        what = f"{name} on {case.description}"
        expected = case.expected
        if expected is None:
            expected = reference(*case.args, **case.kwargs)
        expected = np.asarray(expected, dtype=np.float64)
        run = case.run or (lambda f, c=case: f(*copy.deepcopy(c.args), **copy.deepcopy(c.kwargs)))
        with _quiet(), _poisoned_references(
                references, (module,), fn,
                lambda attr: f"{name} must be your own implementation; it called "
                             f"{where}.{attr}") as state:
            try:
                got = run(fn)
            except NotImplementedError:
                raise CheckFailed(_not_implemented_message(name)) from None
            except CheckFailed:
                raise
            except Exception as exc:                  # the learner's code may raise anything
                raise CheckFailed(f"{what} raised {type(exc).__name__}: {exc}"
                                  f"{_student_location(exc)}") from None
        if state["called"]:                           # the poison's error was caught
            raise CheckFailed(f"{name} must be your own implementation; it called a "
                              f"reference function of {where} ({', '.join(refuse)})")
        if got is None:
            raise CheckFailed(f"{what} returned None: is a `return` missing?")
        try:
            got = np.asarray(got, dtype=np.float64)
        except (TypeError, ValueError):
            raise CheckFailed(f"{what} returned {type(got).__name__}, not an array of "
                              f"numbers") from None
        same_shape = got.shape == expected.shape
        with _quiet():
            if same_shape and np.allclose(got, expected, rtol=rtol, atol=atol):
                continue
            if same_shape:
                wrong_outputs = case.mistakes
                if wrong_outputs is None:
                    wrong_outputs = mistakes(case.args, case.kwargs) if mistakes else {}
                for message, wrong in wrong_outputs.items():
                    if np.allclose(got, wrong, rtol=rtol, atol=atol):
                        raise CheckFailed(f"{what}: {message}")
            near = same_shape and np.allclose(got, expected, rtol=1e-3, atol=1e-5)
        try:
            assert_close(got, expected, what=what, rtol=rtol, atol=atol, quiet=True)
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}{hint if near else ''}") from None
        raise CheckFailed(f"{what}: wrong result{hint if near else ''}")
    print(f"{name}: {len(cases)}/{len(cases)} checks passed")


def _main() -> None:
    for name in helpers.CONTRACT_FUNCTIONS:
        print(name)
        for hidden in (False, True):
            for c in cases(name, hidden):
                print(f"  {'H' if hidden else 'V'} {c.group:10s} {c.name:22s} {c.description}")


if __name__ == "__main__":
    _main()
