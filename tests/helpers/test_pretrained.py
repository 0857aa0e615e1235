"""The pretrained character model (helpers/pretrained.py, helpers/data/char_lm.npz).

Always on: ``helpers`` (NumPy) reproduces what the PyTorch model that was trained by
``tools/train_char_lm.py`` computed on the shipped weights (tests/data/
char_lm_reference.npz: logits of a fixed prompt, the greedy continuation, the loss on a
held-out passage), and that continuation is English text.
With PyTorch installed: the training script's model and an independent stack of
``torch.nn.TransformerEncoderLayer``s, both rebuilt from the npz, agree with ``helpers``.
"""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers.pretrained import CHAR_LM_PATH, char_lm_metadata, load_char_lm

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE_PATH = Path(__file__).resolve().parents[2] / "tests" / "data" / "char_lm_reference.npz"
TRAIN_SCRIPT = REPO_ROOT / "tools" / "train_char_lm.py"

#: Frequent English words (and Shakespeare's thou/thee/thy), to recognise text.
COMMON_WORDS = set("""
the and of to a i you my in that is not it me with be your his this but he for have
as so will what thou thy thee her him we our shall all do no are by on at or if was
lord sir good now more then come well love let let's am would make they from there
""".split())


@pytest.fixture(scope="module")
def model():
    return load_char_lm()


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE_PATH, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------


def test_params_have_the_contract_layout(model):
    params, n_heads, _, _ = model
    V, d = params["E"].shape
    n_ctx = params["P"].shape[0]
    d_ff = params["blocks"][0]["W1"].shape[1]
    assert set(params) == {"E", "P", "blocks", "ln_f_gamma", "ln_f_beta"}
    assert params["P"].shape == (n_ctx, d) and n_ctx >= 64
    assert params["ln_f_gamma"].shape == params["ln_f_beta"].shape == (d,)
    assert len(params["blocks"]) >= 2 and n_heads >= 2 and d % n_heads == 0
    sizes = {"d": d, "d_ff": d_ff}
    for block in params["blocks"]:
        assert set(block) == set(helpers.BLOCK_PARAM_SHAPES)
        for key, shape in helpers.BLOCK_PARAM_SHAPES.items():
            assert block[key].shape == tuple(sizes[s] for s in shape), key
    arrays = [params["E"], params["P"], params["ln_f_gamma"], params["ln_f_beta"]]
    arrays += [a for block in params["blocks"] for a in block.values()]
    assert all(a.dtype == np.float64 and np.isfinite(a).all() for a in arrays)
    n_params = sum(a.size for a in arrays)
    assert n_params == char_lm_metadata()["n_params"]
    assert 0.3e6 <= n_params <= 1.5e6
    assert CHAR_LM_PATH.stat().st_size < 5e6


def test_encode_decode_round_trip(model):
    _, _, encode, decode = model
    text = "To be, or not to be, that is the question:\nWhether 'tis nobler..."
    ids = encode(text)
    assert ids.dtype.kind == "i" and ids.shape == (len(text),)
    assert decode(ids) == text
    assert decode(list(ids)) == text
    assert len(set(ids.tolist())) == len(set(text))     # one id per distinct character


def test_encode_names_unknown_characters(model):
    _, _, encode, _ = model
    with pytest.raises(ValueError, match="'é'"):
        encode("café")


def test_decode_rejects_bad_ids(model):
    params, _, _, decode = model
    with pytest.raises(ValueError, match="out of range"):
        decode([0, params["E"].shape[0]])
    with pytest.raises(ValueError, match="integer"):
        decode([0.5])


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nowhere" / "char_lm.npz"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        load_char_lm(missing)


def test_metadata_reports_training(model):
    meta = char_lm_metadata()
    params, n_heads, _, _ = model
    assert meta["config"]["n_heads"] == n_heads
    assert meta["config"]["n_layers"] == len(params["blocks"])
    assert meta["config"]["d_model"] == params["E"].shape[1]
    assert "Gutenberg" in meta["data_source"] and "shakespeare" in meta["data_source"]
    assert meta["config"]["steps"] > 0 and isinstance(meta["config"]["seed"], int)
    # far below a uniform guess over the vocabulary (log V nats per character)
    log_v = math.log(params["E"].shape[0])
    assert meta["val_loss_nats_per_char"] < 0.6 * log_v
    assert meta["train_loss_nats_per_char"] < 0.6 * log_v


def test_the_shipped_model_was_trained_by_the_courses_numpy_code():
    """Issue 25: char_lm.npz is the one tools/train_char_lm.py trained with helpers.training
    (notebook 12's backward pass and AdamW) in NumPy, as good on held-out text as the
    PyTorch-trained model it replaced (1.4862 nats/char after the same 3,000 steps)."""
    meta = char_lm_metadata()
    assert meta["trainer"] == "numpy" and "torch_version" not in meta
    assert meta["numpy_version"] and meta["training_seconds"] > 0
    assert meta["config"]["steps"] == 3000
    assert meta["val_loss_nats_per_char"] <= 1.4862


# ---------------------------------------------------------------------------------------
# helpers reproduces the PyTorch model
# ---------------------------------------------------------------------------------------


def test_forward_reproduces_torch_logits(model, reference):
    params, n_heads, encode, _ = model
    ids = encode(str(reference["prompt"]))
    logits = helpers.language_model_forward(ids, params, n_heads)           # [N, V]
    expected = reference["prompt_logits"]
    assert logits.shape == expected.shape == (len(ids), params["E"].shape[0])
    np.testing.assert_allclose(logits, expected, rtol=0, atol=1e-5)


def test_generate_reproduces_torch_greedy_continuation(model, reference):
    """Greedy decoding past the context length, so ``generate`` must crop to n_ctx."""
    params, n_heads, encode, decode = model
    prompt_ids = encode(str(reference["prompt"]))
    expected = reference["greedy_ids"]
    assert len(expected) > params["P"].shape[0]
    ids = helpers.generate(prompt_ids, params, n_heads, n_new=len(expected) - len(prompt_ids))
    np.testing.assert_array_equal(ids, expected)
    assert decode(ids) == str(reference["greedy_text"])


def assert_recognisable(text: str, min_common_words: int) -> None:
    """Mostly letters, words separated by spaces, several frequent English words."""
    words = re.findall(r"[a-z']+", text.lower())
    common = {w for w in words if w in COMMON_WORDS}
    assert " " in text, text
    assert sum(c.isalpha() for c in text) / len(text) > 0.6, text
    assert len(common) >= min_common_words, f"too few common English words in {text!r}"


def test_greedy_continuation_is_recognisable_text(reference):
    prompt = str(reference["prompt"])
    continuation = str(reference["greedy_text"])[len(prompt):]
    assert "\n" in continuation, continuation
    assert_recognisable(continuation, min_common_words=5)


def test_sampled_text_is_recognisable(model, reference):
    """What notebook 8 shows: ``generate`` with a temperature writes lines of English."""
    params, n_heads, encode, decode = model
    prompt = str(reference["prompt"])
    ids = helpers.generate(encode(prompt), params, n_heads, n_new=150, temperature=0.8,
                           rng=np.random.default_rng(0))
    text = decode(ids)[len(prompt):]
    assert "\n" in text, text
    assert_recognisable(text, min_common_words=6)


def test_loss_on_held_out_text(model, reference):
    """``cross_entropy`` of helpers' logits on a passage the model never trained on."""
    params, n_heads, encode, _ = model
    ids = encode(str(reference["held_out"]))
    logits = helpers.language_model_forward(ids[:-1], params, n_heads)      # [N-1, V]
    loss = helpers.cross_entropy(logits, ids[1:])
    assert loss == pytest.approx(float(reference["held_out_loss"]), abs=1e-6)
    assert loss < 0.6 * math.log(params["E"].shape[0])


# ---------------------------------------------------------------------------------------
# Live comparison with PyTorch, when it is installed
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def npz_arrays():
    with np.load(CHAR_LM_PATH, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def long_ids(model):
    """A random sequence of the full context length (and an ordinary one)."""
    params, _, _, _ = model
    rng = np.random.default_rng(0)
    return rng.integers(0, params["E"].shape[0], size=params["P"].shape[0])


@pytest.mark.torch
def test_training_script_model_matches_helpers(torch, model, npz_arrays, long_ids):
    spec = importlib.util.spec_from_file_location("train_char_lm", TRAIN_SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    params, n_heads, _, _ = model
    net = script.CharLM.from_arrays(npz_arrays, n_heads, dtype=torch.float64)
    with torch.no_grad():
        expected = net(torch.as_tensor(long_ids)).numpy()
    got = helpers.language_model_forward(long_ids, params, n_heads)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)


@pytest.mark.torch
def test_torch_transformer_layers_match_helpers(torch, model, npz_arrays, long_ids):
    """PyTorch's own pre-norm ``TransformerEncoderLayer`` (ReLU, no dropout, attention
    biases set to zero, weights transposed to its ``x @ W.T`` convention)."""
    params, n_heads, _, _ = model
    t = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in npz_arrays.items()
         if k not in ("vocab", "n_heads", "metadata")}
    d = t["E"].shape[1]
    d_ff = t["blocks.0.W1"].shape[1]
    layers = []
    for i in range(len(params["blocks"])):
        def w(key):
            return t[f"blocks.{i}.{key}"]
        layer = torch.nn.TransformerEncoderLayer(
            d, n_heads, d_ff, dropout=0.0, activation="relu", layer_norm_eps=1e-5,
            batch_first=True, norm_first=True, dtype=torch.float64)
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.cat([w("W_Q").T, w("W_K").T, w("W_V").T]))
            layer.self_attn.in_proj_bias.zero_()
            layer.self_attn.out_proj.weight.copy_(w("W_O").T)
            layer.self_attn.out_proj.bias.zero_()
            layer.linear1.weight.copy_(w("W1").T)
            layer.linear1.bias.copy_(w("b1"))
            layer.linear2.weight.copy_(w("W2").T)
            layer.linear2.bias.copy_(w("b2"))
            layer.norm1.weight.copy_(w("ln1_gamma"))
            layer.norm1.bias.copy_(w("ln1_beta"))
            layer.norm2.weight.copy_(w("ln2_gamma"))
            layer.norm2.bias.copy_(w("ln2_beta"))
        layers.append(layer.eval())
    N = len(long_ids)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(N, dtype=torch.float64)
    with torch.no_grad():
        x = t["E"][torch.as_tensor(long_ids)] + t["P"][:N]                 # [N, d]
        x = x[None]                                                         # [1, N, d]
        for layer in layers:
            x = layer(x, src_mask=causal, is_causal=True)
        x = torch.nn.functional.layer_norm(x, (d,), t["ln_f_gamma"], t["ln_f_beta"], 1e-5)
        expected = (x[0] @ t["E"].T).numpy()                                # [N, V]
    got = helpers.language_model_forward(long_ids, params, n_heads)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
