"""The instant checks (helpers.checks) and the known mistakes they diagnose (helpers/exercises).

What is verified:
* the reference passes every case of every contract function, printing one line and
  nothing on stderr;
* answers written differently (loops, einsum, -inf or -1e9 masks, log-sum-exp, other
  samplers...) pass too; they are written here from the equations, not from helpers;
* every known mistake fails, and the failure names that mistake (diagnosis works);
* calling the reference of the same function fails; NotImplementedError, NaN, None,
  wrong shapes and exceptions give messages a learner can act on;
* cases are deterministic and picklable; compare() agrees with check(); expected values
  agree with PyTorch where it is installed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import math
import pickle
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers import checks, reference
from helpers.course import judge
from helpers.checks import CheckFailed, assert_close, check
from helpers import course
from helpers.exercises import generate as GEN

MISTAKES = {n: course.get(n).mistakes for n in helpers.CONTRACT_FUNCTIONS}

NAMES = helpers.CONTRACT_FUNCTIONS


def cases(name, *args, **kwargs):
    """The judge's cases of exercise ``name`` (looked up here, once per call)."""
    return judge.cases(course.get(name), *args, **kwargs)


def compare(name, case, got, changed=()):
    return judge.compare(course.get(name), case, got, changed)


def diagnose(name, case, *args, **kwargs):
    return judge.diagnose(course.get(name), case, *args, **kwargs)


def reference_copy(name):
    """The reference's code as a new function object (check rejects the reference itself),
    checked at the edge as the exported one is (the reference is the math alone)."""
    from helpers.course.edge import checked

    ref = getattr(reference, name)
    code = ref.__code__.replace(co_name=ref.__code__.co_name)
    copy_ = types.FunctionType(code, ref.__globals__, name, ref.__defaults__, ref.__closure__)
    ex = course.get(name)
    return checked(copy_, ex.contract, ex.edge_check)


def run_check(name, fn, hidden=False, group=None):
    """check() with stdout captured: (stdout text, CheckFailed or None)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            check(name, fn, hidden=hidden, group=group)
    except CheckFailed as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


# ---------------------------------------------------------------------------------------
# The reference passes, silently
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_reference_passes_visible_and_hidden_with_nothing_on_stderr(name, capfd):
    fn = reference_copy(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # any warning escaping check() fails here
        check(name, fn)
        check(name, fn, hidden=True)
    out, err = capfd.readouterr()
    n_vis, n_hid = len(cases(name)), len(cases(name, hidden=True))
    assert out.splitlines() == [f"{name}: {n_vis}/{n_vis} checks passed",
                                f"{name} (hidden): {n_hid}/{n_hid} checks passed"]
    assert err == ""


@pytest.mark.parametrize("name", NAMES)
def test_every_function_has_visible_and_more_hidden_cases(name):
    vis, hid = cases(name), cases(name, hidden=True)
    written = [c for c in vis if c.group != "contract"]     # the drawn ones come on top
    assert 2 <= len(written) <= 7                            # (issue 22: twins of hidden ones)
    assert len(hid) > len(written)
    assert len({c.name for c in vis + hid}) == len(vis + hid)
    assert all(not c.hidden for c in vis) and all(c.hidden for c in hid)


SLIDES_FIRST = ["dot", "cosine_similarity", "pairwise_scores", "softmax",
                "simple_self_attention", "project_qkv", "scaled_dot_product_attention",
                "causal_mask", "cross_attention", "multi_head_attention", "layer_norm", "embed",
                "lm_head"]


@pytest.mark.parametrize("name", SLIDES_FIRST)
def test_first_visible_case_is_the_slides_example(name):
    assert cases(name)[0].group == "slides"


def test_slides_cases_hold_the_slides_numbers():
    """The visible slides cases are the slides' examples (values derived by hand)."""
    sm = cases("softmax")[0]
    np.testing.assert_allclose(sm.args[0], [0.65, 0.54, 0.325, 0.135])
    exps = [math.exp(s) for s in (0.65, 0.54, 0.325, 0.135)]
    np.testing.assert_allclose(sm.expected(), [e / sum(exps) for e in exps])
    np.testing.assert_allclose(sm.expected(), [0.311, 0.278, 0.225, 0.186], atol=6e-4)
    out, _ = cases("scaled_dot_product_attention")[0].expected()
    np.testing.assert_allclose(out[0], [0.456, 0.482, 0.383, 0.404], atol=6e-4)
    assert cases("dot")[0].expected() == pytest.approx(1.08)


# ---------------------------------------------------------------------------------------
# Correct answers written differently pass
# ---------------------------------------------------------------------------------------


def _stable_softmax_rows(z):
    z = np.asarray(z, dtype=float)
    m = z.max(axis=-1, keepdims=True)
    e = np.exp(z - m)
    return e / e.sum(axis=-1, keepdims=True)


def dot_loop(a, b):
    return sum(float(x) * float(y) for x, y in zip(a, b))


def dot_einsum(a, b):
    return np.einsum("i,i->", np.asarray(a, float), np.asarray(b, float))


def cos_manual(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return (a @ b) / (math.sqrt((a * a).sum()) * math.sqrt((b * b).sum()))


def cos_linalg(a, b):
    return np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))


def pairwise_loops(X):
    X = np.asarray(X, float)
    N = len(X)
    return np.array([[sum(X[i] * X[j]) for j in range(N)] for i in range(N)])


def pairwise_einsum(X):
    X = np.asarray(X, float)
    return np.einsum("id,jd->ij", X, X)


def softmax_logsumexp(z, axis=-1):
    z = np.asarray(z, dtype=float)
    m = np.max(z, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))
    return np.exp(z - lse)


def softmax_moveaxis_loop(z, axis=-1):
    z = np.moveaxis(np.array(z, dtype=float), axis, -1)
    flat = z.reshape(-1, z.shape[-1])
    out = np.empty_like(flat)
    for r, row in enumerate(flat):
        e = [math.exp(v - max(row)) for v in row]
        out[r] = [v / sum(e) for v in e]
    return np.moveaxis(out.reshape(z.shape), -1, axis)


def softmax_in_place(z, axis=-1):
    z = np.asarray(z, dtype=float)
    z -= z.max(axis=axis, keepdims=True)           # modifies a float array input in place:
    # a named mistake (issue 22): the learner's later functions would get a spoilt input
    np.exp(z, out=z)
    z /= z.sum(axis=axis, keepdims=True)
    return z


def simple_loops(X):
    X = np.asarray(X, float)
    N, d = X.shape
    out = np.zeros_like(X)
    for i in range(N):
        s = np.array([X[i] @ X[j] for j in range(N)]) / math.sqrt(d)
        w = np.exp(s - s.max())
        w /= w.sum()
        out[i] = sum(w[j] * X[j] for j in range(N))
    return out


def simple_with_helpers_softmax(X):
    X = np.asarray(X, float)
    return helpers.softmax(X @ X.T / np.sqrt(X.shape[1])) @ X


def qkv_einsum(X, W_Q, W_K, W_V):
    return tuple(np.einsum("nd,dk->nk", np.asarray(X, float), np.asarray(W, float))
                 for W in (W_Q, W_K, W_V))


def qkv_list(X, W_Q, W_K, W_V):
    X = np.array(X, dtype=float)
    return [X.dot(np.array(W, dtype=float)) for W in (W_Q, W_K, W_V)]


def sdpa_neg_inf(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, float) for a in (Q, K, V))
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.copy()
        s[~np.asarray(mask, bool)] = -np.inf
    w = _stable_softmax_rows(s)
    return w @ V, w


def sdpa_large_negative(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, float) for a in (Q, K, V))
    s = np.einsum("qd,kd->qk", Q, K) / math.sqrt(Q.shape[1])
    if mask is not None:
        s = np.where(mask, s, -1e9)
    w = softmax_logsumexp(s)
    return np.einsum("qk,kv->qv", w, V), w


def sdpa_loops(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, float) for a in (Q, K, V))
    n_q, n_k = len(Q), len(K)
    w = np.zeros((n_q, n_k))
    for i in range(n_q):
        allowed = [j for j in range(n_k) if mask is None or mask[i][j]]
        s = {j: Q[i] @ K[j] / math.sqrt(Q.shape[1]) for j in allowed}
        m = max(s.values())
        total = sum(math.exp(v - m) for v in s.values())
        for j in allowed:
            w[i, j] = math.exp(s[j] - m) / total
    return w @ V, w


def sdpa_helpers_softmax(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, float) for a in (Q, K, V))
    s = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = helpers.softmax(s, axis=-1)
    return (w @ V, w)


def causal_loops(n):
    return np.array([[j <= i for j in range(n)] for i in range(n)])


def causal_tri(n):
    return np.tri(n, dtype=bool)


def causal_float(n):
    return np.tril(np.ones((n, n)))                 # 0/1 floats: the dtype of a mask is judged


def cross_own(X_dec, H_enc, W_Q, W_K, W_V):
    Q = np.asarray(X_dec, float) @ np.asarray(W_Q, float)
    K = np.asarray(H_enc, float) @ np.asarray(W_K, float)
    V = np.asarray(H_enc, float) @ np.asarray(W_V, float)
    return sdpa_loops(Q, K, V)[0]


def cross_helpers(X_dec, H_enc, W_Q, W_K, W_V):
    Q = np.asarray(X_dec, float) @ np.asarray(W_Q, float)
    K = np.asarray(H_enc, float) @ np.asarray(W_K, float)
    V = np.asarray(H_enc, float) @ np.asarray(W_V, float)
    return helpers.scaled_dot_product_attention(Q, K, V)[0]


def split_slices(X, n_heads):
    X = np.asarray(X, float)
    d_h = X.shape[1] // n_heads
    return np.stack([X[:, c * d_h:(c + 1) * d_h] for c in range(n_heads)])


def split_np_split(X, n_heads):
    return np.array(np.split(np.asarray(X, float), n_heads, axis=1))


def merge_concat(H):
    return np.concatenate(list(np.asarray(H, float)), axis=1)


def merge_transpose(H):
    H = np.asarray(H, float)
    h, N, d_h = H.shape
    return H.transpose(1, 0, 2).reshape(N, h * d_h)


def mha_loops(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, float)
    N, d = X.shape
    d_h = d // n_heads
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    heads = []
    for c in range(n_heads):
        cols = slice(c * d_h, (c + 1) * d_h)
        mask = np.tril(np.ones((N, N), bool)) if causal else None
        heads.append(sdpa_large_negative(Q[:, cols], K[:, cols], V[:, cols], mask)[0])
    return np.hstack(heads) @ np.asarray(W_O, float)


def mha_helpers(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    Q, K, V = helpers.project_qkv(X, W_Q, W_K, W_V)
    Qh, Kh, Vh = (helpers.split_heads(a, n_heads) for a in (Q, K, V))
    mask = helpers.causal_mask(len(Q)) if causal else None
    heads, _ = helpers.scaled_dot_product_attention(Qh, Kh, Vh, mask)
    return helpers.merge_heads(heads) @ W_O


def ln_np_var(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, float)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return np.asarray(gamma) * (x - mu) / np.sqrt(var + eps) + np.asarray(beta)


def ln_manual(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, float)
    rows = x.reshape(-1, x.shape[-1])               # any rank: [..., d] as rows
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        mu = sum(row) / len(row)
        var = sum((v - mu) ** 2 for v in row) / len(row)
        out[i] = [g * (v - mu) / math.sqrt(var + eps) + b for v, g, b in zip(row, gamma, beta)]
    return out.reshape(x.shape)


def ffn_where(x, W1, b1, W2, b2):
    a = np.asarray(x, float) @ np.asarray(W1, float) + np.asarray(b1, float)
    return np.where(a > 0, a, 0.0) @ np.asarray(W2, float) + np.asarray(b2, float)


def ffn_einsum(x, W1, b1, W2, b2):
    a = np.einsum("nd,df->nf", np.asarray(x, float), np.asarray(W1, float)) + b1
    return np.einsum("nf,fd->nd", a * (a > 0), np.asarray(W2, float)) + b2


def block_helpers(x, params, n_heads, causal=True):
    p = params
    x = np.asarray(x, float)
    t1 = helpers.layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    t2 = helpers.multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                                      causal=causal)
    t3 = t2 + x
    t4 = helpers.layer_norm(t3, p["ln2_gamma"], p["ln2_beta"])
    return helpers.feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"]) + t3


def block_own(x, params, n_heads, causal=True):
    p = params
    x = np.asarray(x, float)
    t3 = mha_loops(ln_np_var(x, p["ln1_gamma"], p["ln1_beta"]), p["W_Q"], p["W_K"], p["W_V"],
                   p["W_O"], n_heads, causal) + x
    return ffn_where(ln_manual(t3, p["ln2_gamma"], p["ln2_beta"]), p["W1"], p["b1"], p["W2"],
                     p["b2"]) + t3


def embed_loops(token_ids, E, P):
    return np.array([np.asarray(E[t], float) + np.asarray(P[i], float)
                     for i, t in enumerate(token_ids)])


def embed_one_hot(token_ids, E, P):
    E = np.asarray(E, float)
    ids = np.asarray(token_ids)
    one_hot = np.eye(len(E))[ids]
    return one_hot @ E + np.asarray(P, float)[: len(ids)]


def lm_head_einsum(h, E):
    return np.einsum("nd,vd->nv", np.asarray(h, float), np.asarray(E, float))


def lm_head_transposed_product(h, E):
    return (np.asarray(E, float) @ np.asarray(h, float).T).T


def lmf_helpers(token_ids, params, n_heads):
    h = helpers.embed(token_ids, params["E"], params["P"])
    for block in params["blocks"]:
        h = helpers.transformer_block(h, block, n_heads)
    if "ln_f_gamma" in params:
        h = helpers.layer_norm(h, params["ln_f_gamma"], params["ln_f_beta"])
    return helpers.lm_head(h, params["E"])


def lmf_own(token_ids, params, n_heads):
    h = embed_loops(token_ids, params["E"], params["P"])
    for block in params["blocks"]:
        h = block_own(h, block, n_heads, causal=True)
    if params.get("ln_f_gamma") is not None:
        h = ln_manual(h, params["ln_f_gamma"], params["ln_f_beta"])
    return lm_head_einsum(h, params["E"])


def ce_logsumexp(logits, targets):
    z = np.asarray(logits, float)
    m = z.max(axis=1, keepdims=True)
    logp = z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(z)), np.asarray(targets)].mean()


def ce_loops(logits, targets):
    total = 0.0
    for row, t in zip(np.asarray(logits, float), targets):
        m = max(row)
        total += m + math.log(sum(math.exp(v - m) for v in row)) - row[t]
    return total / len(targets)


def _gen_with(choose):
    def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
        ids = list(np.asarray(token_ids))
        n_ctx = len(params["P"])
        for _ in range(n_new):
            logits = helpers.language_model_forward(ids[-n_ctx:], params, n_heads)[-1]
            if temperature == 0:
                ids.append(int(np.argmax(logits)))
            else:
                ids.append(int(choose(logits / temperature, rng)))
        return np.array(ids)
    generate.__name__ = f"generate{choose.__name__}"
    return generate


def _choice(z, rng):
    return rng.choice(len(z), p=_stable_softmax_rows(z))


def _inverse_cdf(z, rng):
    c = np.cumsum(_stable_softmax_rows(z))
    return min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(z) - 1)


def _gumbel_max(z, rng):
    return np.argmax(z + rng.gumbel(size=len(z)))


def _multinomial(z, rng):
    return np.argmax(rng.multinomial(1, _stable_softmax_rows(z)))


ALTERNATIVES = {
    "dot": [dot_loop, dot_einsum],
    "cosine_similarity": [cos_manual, cos_linalg],
    "pairwise_scores": [pairwise_loops, pairwise_einsum],
    "softmax": [softmax_logsumexp, softmax_moveaxis_loop],
    "simple_self_attention": [simple_loops, simple_with_helpers_softmax],
    "project_qkv": [qkv_einsum, qkv_list],
    "scaled_dot_product_attention": [sdpa_neg_inf, sdpa_large_negative, sdpa_loops,
                                     sdpa_helpers_softmax],
    "causal_mask": [causal_loops, causal_tri],      # causal_float: wrong (issue 22, finding 6)
    "cross_attention": [cross_own, cross_helpers],
    "split_heads": [split_slices, split_np_split],
    "merge_heads": [merge_concat, merge_transpose],
    "multi_head_attention": [mha_loops, mha_helpers],
    "layer_norm": [ln_np_var, ln_manual],
    "feed_forward": [ffn_where, ffn_einsum],
    "transformer_block": [block_helpers, block_own],
    "embed": [embed_loops, embed_one_hot],
    "lm_head": [lm_head_einsum, lm_head_transposed_product],
    "language_model_forward": [lmf_helpers, lmf_own],
    "cross_entropy": [ce_logsumexp, ce_loops],
    "generate": [_gen_with(_choice), _gen_with(_inverse_cdf), _gen_with(_gumbel_max),
                 _gen_with(_multinomial)],
}


def test_alternatives_cover_every_function():
    assert set(ALTERNATIVES) == set(NAMES)


@pytest.mark.parametrize("name, fn", [(n, f) for n in NAMES for f in ALTERNATIVES[n]],
                         ids=lambda v: v if isinstance(v, str) else getattr(v, "__name__", ""))
def test_correct_alternatives_pass(name, fn, capfd):
    # the samplers of generate differ only when sampling: their greedy path is the first's
    group = "sampling" if name == "generate" and fn is not ALTERNATIVES[name][0] else None
    for hidden in (False, True):
        out, exc = run_check(name, fn, hidden=hidden, group=group)
        assert exc is None, str(exc)
    assert capfd.readouterr().err == ""


def test_a_correct_answer_that_warns_passes_silently(capfd):
    def softmax(z, axis=-1):
        z = np.asarray(z, dtype=float)
        with np.errstate(over="warn"):
            np.exp(np.array([1e3]))                 # an overflow warning, result unused
        warnings.warn("a warning from the learner", RuntimeWarning)
        return softmax_logsumexp(z, axis)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check("softmax", softmax)
    assert capfd.readouterr().err == ""


# ---------------------------------------------------------------------------------------
# Every known mistake fails, and is named
# ---------------------------------------------------------------------------------------

MISTAKE_IDS = [(n, m.key) for n in NAMES for m in MISTAKES[n]]


def test_every_function_has_mistakes():
    assert set(MISTAKES) == set(NAMES)
    assert all(len(MISTAKES[n]) >= 3 for n in NAMES)
    for n in NAMES:
        keys = [m.key for m in MISTAKES[n]]
        assert len(keys) == len(set(keys)), n
        for m in MISTAKES[n]:          # check() appends the full stop after a message
            assert 20 <= len(m.message) <= 300 and not m.message.endswith("."), (n, m.key)


@pytest.mark.parametrize("name, key", MISTAKE_IDS, ids=[f"{n}-{k}" for n, k in MISTAKE_IDS])
def test_every_mistake_fails_and_is_diagnosed(name, key):
    mistake = next(m for m in MISTAKES[name] if m.key == key)
    _, exc = run_check(name, mistake.fn)
    if exc is None:
        _, exc = run_check(name, mistake.fn, hidden=True)
    assert exc is not None, f"{name}: mistake {key!r} passes every case"
    assert mistake.message in str(exc), f"not diagnosed:\n{exc}"


@pytest.mark.parametrize("name", NAMES)
def test_no_mistake_matches_the_reference_on_every_case(name):
    """A mistake that equals the reference everywhere could never be diagnosed."""
    all_cases = cases(name) + cases(name, hidden=True)
    for m in MISTAKES[name]:
        if m.key == "rng_ignored":      # differs only in determinism (checked by check())
            continue
        differs = False
        for c in all_cases:
            args, kwargs = c.fresh_args()
            try:
                with checks._quiet():
                    got = m.fn(*args, **kwargs)
            except Exception:
                differs = True
                break
            if compare(name, c, got) is not None:
                differs = True
                break
        assert differs, f"{name}: mistake {m.key} equals the reference on every case"


@pytest.mark.parametrize("name", NAMES)
def test_no_two_mistakes_coincide_on_every_case(name):
    """Each diagnosis names one mistake somewhere: no two mistakes are the same function.

    (softmax over axis 0 and weights.T @ X in simple_self_attention are identical because
    X X^T is symmetric; helpers.mistakes keeps them as one mistake whose message says both.)
    """
    all_cases = [c for c in cases(name) + cases(name, hidden=True) if not c.is_sampling]
    outputs = {}
    for m in MISTAKES[name]:
        row = []
        for c in all_cases:
            args, kwargs = c.fresh_args()
            try:
                with checks._quiet():
                    row.append(("out", m.fn(*args, **kwargs)))
            except Exception as exc:
                row.append(("error", f"{type(exc).__name__}: {exc}"))
        outputs[m.key] = row
    # Mistakes of sampling (a sampler, or an unused rng) equal the reference when greedy:
    # they are told apart on the sampling cases, by distribution and by determinism.
    keys = [m.key for m in MISTAKES[name] if m.sampler is None and m.key != "rng_ignored"]
    for i, k1 in enumerate(keys):
        for k2 in keys[i + 1:]:
            same = all(kind1 == kind2 and (o1 == o2 if kind1 == "error" else
                                           judge.same_output(course.get(name), o1, o2))
                       for (kind1, o1), (kind2, o2) in zip(outputs[k1], outputs[k2]))
            assert not same, f"{name}: mistakes {k1} and {k2} agree on every case"


def test_sampling_mistakes_have_different_distributions():
    samplers = [m for m in MISTAKES["generate"] if m.sampler is not None]
    logits = np.array([2.0, -1.0, 0.5, 3.0, 0.0])
    probs = [GEN._correct_sampler(logits, 0.5)] + [m.sampler(logits, 0.5) for m in samplers]
    for i, p in enumerate(probs):
        np.testing.assert_allclose(p.sum(), 1.0)
        for q in probs[i + 1:]:
            assert np.abs(p - q).max() > 0.05


def test_diagnose_names_the_mistake_for_an_output():
    c = cases("scaled_dot_product_attention")[3]                    # the causal-mask case
    Q, K, V = c.args
    s = np.asarray(Q) @ np.asarray(K).T / np.sqrt(2)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w = w / w.sum(axis=1, keepdims=True) * c.kwargs["mask"]         # zeroed after softmax
    keys = [m.key for m in diagnose("scaled_dot_product_attention", c, (w @ V, w))]
    assert keys == ["mask_after_softmax"]
    # a right output matches only mistakes that coincide with the reference on this case
    # (the unstable softmax does, on small scores); diagnose() is for wrong outputs.
    assert [m.key for m in diagnose("scaled_dot_product_attention", c, c.expected())] == \
        ["unstable_softmax"]


def test_sampling_mistakes_are_diagnosed_by_distribution():
    c = next(c for c in cases("generate", group="sampling") if not c.scenario)
    args, kwargs = c.fresh_args()
    T = kwargs["temperature"]

    def choose(z, rng):                           # temperature multiplied, own sampler
        return _gumbel_max(z * T * T, rng)        # z arrives divided by T: (z/T)*T^2 = z*T

    got = _gen_with(choose)(*args, **kwargs)
    problem = compare("generate", c, got)
    assert problem is not None and "multiplied by the temperature" in problem


def test_ignoring_the_rng_fails_the_determinism_check():
    def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
        return _gen_with(_choice)(token_ids, params, n_heads, n_new, temperature,
                                  np.random.default_rng())

    _, exc = run_check("generate", generate, group="sampling")
    assert exc is not None and "same seeded rng gave different ids" in str(exc)
    assert "rng argument was not used" in str(exc)
    c = next(c for c in cases("generate") if c.scenario)    # the same seed twice, another once
    assert "rng argument was not used" in compare("generate", c, c.run(generate))
    assert compare("generate", c, c.run(_gen_with(_choice))) is None


def test_a_generator_that_ignores_the_seed_it_is_given_fails_the_scenario():
    """Same seed, same ids is not enough: another seed must give other ids."""
    def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
        return _gen_with(_choice)(token_ids, params, n_heads, n_new, temperature,
                                  np.random.default_rng(0))

    c = next(c for c in cases("generate") if c.scenario)
    problem = compare("generate", c, c.run(generate))
    assert problem is not None and "differently seeded generators gave the same ids" in problem


# ---------------------------------------------------------------------------------------
# Calling the reference is refused
# ---------------------------------------------------------------------------------------

REFUSAL = "softmax must be your own implementation; it called helpers.softmax"


def test_calling_helpers_softmax_fails():
    def softmax(z, axis=-1):
        return helpers.softmax(z, axis=axis)

    _, exc = run_check("softmax", softmax)
    assert REFUSAL in str(exc)
    assert helpers.softmax is course.get("softmax").answer     # restored afterwards
    assert helpers.softmax.__wrapped__ is reference.softmax
    assert helpers.softmax([0.0, 0.0]).tolist() == [0.5, 0.5]


def test_calling_the_reference_by_another_name_fails():
    g = {"np": np}
    exec("from helpers.reference import softmax as ref_sm\n"
         "import helpers.reference as R\n"
         "def by_alias(z, axis=-1):\n    return ref_sm(z, axis)\n"
         "def by_module(z, axis=-1):\n    return R.softmax(z, axis)\n"
         "def make():\n    f = ref_sm\n    return lambda z, axis=-1: f(z, axis)\n"
         "by_closure = make()\n"
         "def by_default(z, axis=-1, _f=ref_sm):\n    return _f(z, axis)\n"
         "def swallowing(z, axis=-1):\n    try:\n        return ref_sm(z, axis)\n"
         "    except Exception:\n        import numpy as np\n"
         "        return np.exp(z) / np.exp(z).sum()\n", g)
    for fn in ("by_alias", "by_module", "by_closure", "by_default", "swallowing"):
        _, exc = run_check("softmax", g[fn])       # the unchecked reference, or the export
        assert exc is not None and REFUSAL.removesuffix("softmax") in str(exc), fn
    assert g["ref_sm"] is reference.softmax and g["by_default"].__defaults__[1] is \
        reference.softmax
    for fn in (reference.softmax, functools.partial(reference.softmax),
               functools.wraps(reference.softmax)(lambda *a: 0), helpers.softmax,
               functools.partial(helpers.softmax)):
        _, exc = run_check("softmax", fn)
        assert exc is not None and "softmax must be your own implementation" in str(exc)


def test_other_helpers_stay_usable():
    """sdpa may use helpers.softmax; only the reference of the same function is poisoned."""
    _, exc = run_check("scaled_dot_product_attention", sdpa_helpers_softmax, hidden=True)
    assert exc is None


# ---------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------


def test_not_implemented_yet():
    def softmax(z, axis=-1):
        raise NotImplementedError()

    _, exc = run_check("softmax", softmax)
    assert str(exc).startswith("softmax is not implemented yet")


def test_nan_is_reported_with_a_stability_hint():
    def softmax(z, axis=-1):
        e = np.exp(np.asarray(z, float))
        return e / e.sum(axis=axis, keepdims=True)

    _, exc = run_check("softmax", softmax, group="stability")
    msg = str(exc)
    assert "got nan" in msg and "is the softmax stable?" in msg
    assert "Case 'large'" in msg and "[1000., 1001., 1002.]" in msg
    _, exc = run_check("cross_entropy", lambda logits, targets: float("nan"))
    assert "got nan" in str(exc) and "logsumexp" in str(exc)


def test_success_prints_one_line_and_failure_counts():
    n = len(cases("causal_mask"))
    out, exc = run_check("causal_mask", causal_tri)
    assert exc is None and out == f"causal_mask: {n}/{n} checks passed\n"
    out, exc = run_check("causal_mask", lambda n: np.tri(n, k=-1, dtype=bool))
    assert out == "" and str(exc).startswith(f"causal_mask: 0/{n} checks passed.")
    assert "Also failed: 'n_1'" in str(exc)


def test_wrong_shape_is_reported_first_with_transpose_hint():
    def sdpa(Q, K, V, mask=None):
        out, w = sdpa_neg_inf(Q, K, V, mask)
        return out.T, w

    _, exc = run_check("scaled_dot_product_attention", sdpa, group="shapes")
    msg = str(exc)
    assert "output has the wrong shape: expected (2, 5), got (5, 2)" in msg
    assert "transpose of the expected output" in msg
    assert "the output is transposed" in msg                # the known mistake


def test_a_wrong_number_and_a_constant_factor_are_reported_plainly():
    _, exc = run_check("dot", lambda a, b: 2.0 * dot_loop(a, b))
    assert "Problem: the result: expected 1.08, got 2.16" in str(exc)
    _, exc = run_check("pairwise_scores", lambda X: 3.0 * pairwise_einsum(X))
    assert "(every entry is 3 times the expected one)" in str(exc)


def test_float32_answers_get_a_precision_hint():
    """float32 rounding (relative error ~1e-7 per step) can add up past rtol=1e-6."""
    c = cases("layer_norm")[0]
    got = (c.expected() * (1 + 2e-6)).astype(np.float32)
    assert "float32, and right up to its rounding: compute in float64" in compare(
        "layer_norm", c, got)
    assert "float32" not in compare("layer_norm", c, c.expected() * (1 + 2e-6))


def test_wrong_values_report_the_first_differing_index():
    def pairwise(X):
        X = np.asarray(X, float)
        S = X @ X.T
        S[1, 2] += 1.0
        return S

    _, exc = run_check("pairwise_scores", pairwise)
    msg = str(exc)
    assert "first difference at index (1, 2)" in msg
    assert "expected:" in msg and "got:" in msg and "Input:" in msg


def test_missing_return_and_exceptions():
    def forgot_return(z, axis=-1):
        np.exp(z)

    _, exc = run_check("softmax", forgot_return)
    assert "is None: is a `return` missing?" in str(exc)

    def crashes(z, axis=-1):
        return np.asarray(z)[0, 0, 0]

    _, exc = run_check("softmax", crashes)
    assert "your softmax raised IndexError" in str(exc)
    assert "in crashes, line" in str(exc)


def test_a_wrong_signature_gets_the_contract_signature():
    _, exc = run_check("softmax", lambda z: softmax_logsumexp(z), group="axis")
    assert "unexpected keyword argument 'axis'" in str(exc)
    assert "The signature must be softmax(z, axis=-1)" in str(exc)


def test_a_tuple_where_one_array_is_expected():
    def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
        Q = np.asarray(X_dec) @ W_Q
        return sdpa_neg_inf(Q, np.asarray(H_enc) @ W_K, np.asarray(H_enc) @ W_V)

    _, exc = run_check("cross_attention", cross_attention)
    assert "should be one array, got a tuple of 2 items (the first item is right" in str(exc)


def test_expected_is_a_fresh_copy():
    c = cases("layer_norm")[0]
    first = c.expected()
    first[:] = 0.0
    assert np.abs(c.expected()).max() > 0.5


def test_tuple_results_are_checked_element_by_element():
    _, exc = run_check("project_qkv", lambda X, W_Q, W_K, W_V: np.asarray(X) @ W_Q)
    assert "expected a tuple (Q, K, V)" in str(exc)
    _, exc = run_check("scaled_dot_product_attention",
                       lambda Q, K, V, mask=None: sdpa_neg_inf(Q, K, V, mask)[:1])
    assert "expected a tuple of 2 (output, weights), got 1 items" in str(exc)


def test_scalar_results_must_be_numbers():
    _, exc = run_check("dot", lambda a, b: np.asarray(a, float) * np.asarray(b, float))
    assert "the result has the wrong shape: expected (), got (4,)" in str(exc)
    assert "were returned without adding them up" in str(exc)


def test_unknown_name_and_group():
    with pytest.raises(ValueError, match="not a graded exercise"):
        cases("softmx")
    with pytest.raises(ValueError, match="its groups are: slides, basic, axis, stability"):
        check("softmax", softmax_logsumexp, group="mask")


def test_groups_select_subsets():
    assert judge.groups(course.get("softmax"), hidden=False) == ["slides", "basic", "axis", "stability",
                                                      "contract"]
    out, exc = run_check("softmax", softmax_logsumexp, group="axis")
    assert exc is None and out == "softmax [axis]: 1/1 checks passed\n"
    for name in NAMES:
        for c in cases(name) + cases(name, hidden=True):
            assert c.group in judge.groups(course.get(name))


def test_assert_close():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert_close([1.0, 2.0], np.array([1.0, 2.0 + 1e-9]), what="the scores")
    assert out.getvalue() == "the scores: correct\n"
    with pytest.raises(CheckFailed, match=r"the scores: first difference at index \(1,\): "
                                          r"expected 3, got 2"):
        assert_close([1.0, 2.0], [1.0, 3.0], what="the scores")
    with pytest.raises(CheckFailed, match=r"wrong shape: expected \(2,\), got \(3,\)"):
        assert_close([1.0, 2.0, 3.0], [1.0, 3.0], what="x")
    with pytest.raises(CheckFailed, match="NaN or inf"):
        assert_close([np.nan], [1.0])
    with pytest.raises(CheckFailed, match=r"index \(0, 1\): expected False, got True"):
        assert_close(np.ones((2, 2), bool), np.eye(2, dtype=bool), what="mask")
    with pytest.raises(CheckFailed, match="is None: is a `return` missing"):
        assert_close(None, [1.0], what="x")
    assert issubclass(CheckFailed, AssertionError)


# ---------------------------------------------------------------------------------------
# Cases: deterministic, picklable; compare() for the grader
# ---------------------------------------------------------------------------------------


def _same(a, b):
    """Equal values, types and dtypes, all the way down."""
    if isinstance(a, np.random.Generator):
        return isinstance(b, np.random.Generator) and \
            a.bit_generator.state == b.bit_generator.state
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("name", NAMES)
def test_cases_are_deterministic_and_picklable(name):
    for hidden in (False, True):
        first, second = cases(name, hidden), cases(name, hidden)
        restored = pickle.loads(pickle.dumps(first))
        for a, b, r in zip(first, second, restored):
            for other in (b, r):
                assert (a.name, a.description, a.group, a.hidden) == \
                       (other.name, other.description, other.group, other.hidden)
                assert _same(a.args, other.args) and _same(a.kwargs, other.kwargs)


def test_cases_are_the_same_in_a_new_process():
    script = ("import hashlib, pickle, helpers; from helpers import course; from helpers.course.judge import cases as c; cases = lambda n, h: c(course.get(n), h); "
              "print(hashlib.sha1(pickle.dumps([cases(n, h) for n in helpers.CONTRACT_FUNCTIONS "
              "for h in (False, True)])).hexdigest())")
    here = hashlib.sha1(pickle.dumps([cases(n, h) for n in NAMES for h in (False, True)]))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == here.hexdigest()


def test_cases_are_fresh_copies():
    c = cases("softmax")[0]
    c.args[0][:] = 0.0
    assert cases("softmax")[0].args[0][0] == pytest.approx(0.65)


def test_compare_accepts_plain_lists_as_the_grader_returns_them():
    for name in ("scaled_dot_product_attention", "project_qkv", "layer_norm", "causal_mask",
                 "generate", "cross_entropy"):
        for c in cases(name):
            if c.is_sampling:
                continue
            exp = c.expected()
            as_lists = [np.asarray(e).tolist() for e in exp] if isinstance(exp, tuple) else \
                np.asarray(exp).tolist()
            assert compare(name, c, as_lists) is None
    c = next(c for c in cases("generate", group="sampling") if not c.scenario)
    args, kwargs = c.fresh_args()
    assert compare("generate", c, _gen_with(_gumbel_max)(*args, **kwargs).tolist()) is None


def test_compare_explains_a_wrong_answer_with_the_case():
    c = cases("layer_norm")[1]
    x, g, b = (np.asarray(a, float) for a in c.args)
    wrong = g * (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, ddof=1, keepdims=True)
                                                         + 1e-5) + b
    problem = compare("layer_norm", c, wrong)
    assert problem.startswith("Case 'lists_gamma_beta' (visible, group 'basic')")
    assert "variance with ddof=1" in problem


def test_greedy_cases_have_no_near_ties():
    """Greedy ids are compared exactly: every step's winner leads by a clear margin."""
    for c in cases("generate") + cases("generate", hidden=True):
        if c.is_sampling:
            continue
        ids = c.expected()
        prompt, params, n_heads, n_new = c.args
        n_ctx = len(params["P"])
        for t in range(len(prompt), len(ids)):
            logits = reference.language_model_forward(ids[:t][-n_ctx:], params, n_heads)[-1]
            top2 = np.sort(logits)[-2:]
            assert top2[1] - top2[0] > 1e-4, (c.name, t)


def test_reference_samples_look_like_samples():
    for c in cases("generate", group="sampling") + cases("generate", hidden=True,
                                                         group="sampling"):
        if c.scenario:                  # three outputs: judged in test_checks' rng tests
            continue
        (z, impossible), = GEN._sampling_statistics(c, c.expected(),
                                                       [GEN._correct_sampler])
        assert impossible == 0 and abs(z) < 3.0, (c.name, z)


# ---------------------------------------------------------------------------------------
# Expected values agree with PyTorch (skipped without it)
# ---------------------------------------------------------------------------------------


@pytest.mark.torch
def test_expected_values_agree_with_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    t = functools.partial(torch.tensor, dtype=torch.float64)
    for c in cases("softmax") + cases("softmax", hidden=True):
        want = torch.softmax(t(np.asarray(c.args[0], float)), dim=c.kwargs.get("axis", -1))
        np.testing.assert_allclose(c.expected(), want.numpy(), rtol=1e-9, atol=1e-12)
    for c in cases("scaled_dot_product_attention") + cases("scaled_dot_product_attention",
                                                           hidden=True):
        Q, K, V = (t(np.asarray(a, float)) for a in c.args)
        mask = c.kwargs.get("mask")
        want = F.scaled_dot_product_attention(
            Q, K, V, attn_mask=None if mask is None else torch.tensor(mask))
        np.testing.assert_allclose(c.expected()[0], want.numpy(), rtol=1e-9, atol=1e-12)
    for c in cases("layer_norm") + cases("layer_norm", hidden=True):
        x, g, b = (t(np.asarray(a, float)) for a in c.args)
        want = F.layer_norm(x, (x.shape[-1],), g, b, eps=c.kwargs.get("eps", 1e-5))
        np.testing.assert_allclose(c.expected(), want.numpy(), rtol=1e-7, atol=1e-9)
    for c in cases("cross_entropy") + cases("cross_entropy", hidden=True):
        logits, targets = np.asarray(c.args[0], float), np.asarray(c.args[1])
        want = F.cross_entropy(t(logits), torch.tensor(targets))
        assert c.expected() == pytest.approx(float(want), rel=1e-9)


def test_compare_never_raises_on_strange_answers():
    """The grader feeds compare() whatever an isolated run returned."""
    strange = [None, "abc", {"a": 1}, [1, [2, 3]], (np.zeros(2), "x"), np.array([np.nan]), [],
               3, True, np.full((4, 4), np.inf), [[1e308, -1e308]], (None, None), object()]
    for name in NAMES:
        for c in cases(name)[:1]:
            for got in strange:
                problem = compare(name, c, got)
                assert isinstance(problem, str) and problem.startswith("Case "), (name, got)


# ---------------------------------------------------------------------------------------
# The capstones' exercises (notebooks 09, 10) are judged by the same check()
# ---------------------------------------------------------------------------------------


def _erf_gelu(x):
    x = np.asarray(x, dtype=float)
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def test_a_capstone_answer_passes_and_prints_one_line(capfd):
    checks.check("gelu", _erf_gelu)
    checks.check("gelu", _erf_gelu, hidden=True)
    out, err = capfd.readouterr()
    v, h = len(cases("gelu")), len(cases("gelu", hidden=True))
    assert out == f"gelu: {v}/{v} checks passed\ngelu (hidden): {h}/{h} checks passed\n"
    assert err == ""


def test_a_capstone_mistake_is_named_and_a_near_miss_hinted():
    with pytest.raises(CheckFailed, match="Likely mistake: this is ReLU, not GELU"):
        checks.check("gelu", lambda x: np.maximum(np.asarray(x, float), 0.0))
    with pytest.raises(CheckFailed) as info:
        checks.check("gelu", lambda x: _erf_gelu(x) * (1 + 1e-4))
    assert "nearly right: is it an approximation?" in str(info.value)
    with pytest.raises(CheckFailed, match=r"wrong shape: expected \(21,\), got \(1, 21\)"):
        checks.check("gelu", lambda x: _erf_gelu(x)[None])


def test_the_hints_of_a_wrong_array_come_before_its_arrays():
    """Feedback pages cut a long message at its end: the short hints (nearly right, a
    constant ratio, the tolerance) come before the expected and got arrays."""
    with pytest.raises(CheckFailed) as info:
        checks.check("gelu", lambda x: _erf_gelu(x) * (1 + 1e-4))
    text = str(info.value)
    assert text.index("nearly right") < text.index("expected: [")
    assert text.index("every entry is") < text.index("expected: [")
    assert text.index("judged with rtol") < text.index("got:      [")


def test_a_capstone_refuses_its_references_wherever_the_answer_holds_them():
    from helpers.llama import model

    rotate_half = model.rotate_half
    own = "apply_rope must be your own implementation; it called helpers.llama.rotate_half"

    def by_closure(x, positions, theta=10000.0):
        x = np.asarray(x, float)
        a = np.asarray(positions, float)[:, None] * theta ** (-np.arange(0, x.shape[-1], 2)
                                                              / x.shape[-1])
        a = np.concatenate([a, a], axis=-1)
        return x * np.cos(a) + rotate_half(x) * np.sin(a)

    def by_default(x, positions, theta=10000.0, r=model.rotate_half):
        x = np.asarray(x, float)
        return x * 0.0 + r(x)

    def by_module(x, positions, theta=10000.0):
        from helpers import llama
        return llama.apply_rope(x, positions, theta)

    for fn in (by_closure, by_default, by_module, model.apply_rope):
        with pytest.raises(CheckFailed, match="apply_rope must be your own implementation"):
            checks.check("apply_rope", fn)
    with pytest.raises(CheckFailed, match=own):
        checks.check("apply_rope", by_closure)
    assert model.rotate_half is rotate_half and by_default.__defaults__[1] is rotate_half


def test_a_capstone_explains_stubs_errors_and_missing_returns():
    def stub(x):
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="gelu is not implemented yet: replace `raise "
                                          "NotImplementedError\\(\\)`"):
        checks.check("gelu", stub)

    def broken(x):
        return x.shape[5]

    with pytest.raises(CheckFailed, match=r"your gelu raised IndexError: .*\(in broken, line \d+"):
        checks.check("gelu", broken)
    with pytest.raises(CheckFailed, match="is None: is a `return` missing"):
        checks.check("gelu", lambda x: None)
    with pytest.raises(CheckFailed, match="could not be read as an array of numbers"):
        checks.check("gelu", lambda x: {"x": x})


def test_an_in_place_softmax_is_a_named_mistake():
    with pytest.raises(CheckFailed, match="modified its input `z` in place"):
        checks.check("softmax", softmax_in_place)


def test_a_capstone_check_silences_warnings_and_gives_fresh_inputs(capfd):
    def in_place(x):
        x = np.asarray(x, dtype=float)
        with np.errstate(all="warn"):
            np.log(np.zeros(1))                                   # a RuntimeWarning
        warnings.warn("a learner's warning")
        y = _erf_gelu(x)
        x *= 0.0                                                  # overwrites its input
        return y

    def warns(x):
        x = np.asarray(x, dtype=float)
        with np.errstate(all="warn"):
            np.log(np.zeros(1))                                   # a RuntimeWarning
        warnings.warn("a learner's warning")
        return _erf_gelu(x)

    before = [c.args[0] for c in cases("gelu")]
    checks.check("gelu", warns)
    out, err = capfd.readouterr()
    assert out == f"gelu: {len(before)}/{len(before)} checks passed\n" and err == ""
    with pytest.raises(CheckFailed, match="modified its input `x` in place"):
        checks.check("gelu", in_place)                            # a named mistake
    out, err = capfd.readouterr()
    assert err == ""
    for b, c in zip(before, cases("gelu")):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(c.args[0]))
