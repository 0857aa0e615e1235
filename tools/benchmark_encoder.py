"""How much slower is the course's NumPy encoder than PyTorch? (A measurement, not a test.)

Times the sentence embeddings of one batch with all-MiniLM-L6-v2 on ONE thread:

* NumPy: ``helpers.bert.sentence_embeddings`` (float64, the course's reference code, with
  exact GELU through ``math.erf`` on every entry), and the share of that time spent in
  GELU's erf;
* PyTorch: transformers' ``BertModel`` (float32, ``torch.inference_mode``) plus the same
  mean pooling and normalisation.

Tokenization is done once, outside the timings. Run from the repository root (needs
torch and transformers for the second column; without them only NumPy is timed):

    .venv/bin/python tools/benchmark_encoder.py [--batch 8] [--repeats 7]

Prints the median and the best of ``repeats`` runs for each, and the largest difference
between the two sets of embeddings.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers import bert, demos_model  # noqa: E402
from helpers.examples import IT_SENTENCES  # noqa: E402

SENTENCES = [
    IT_SENTENCES["tired"], IT_SENTENCES["wide"],
    "A man is playing a guitar on the stage.",
    "The stock market fell sharply this morning after the announcement.",
    "Attention lets every word look at every other word in the sentence.",
    "Hello!",
    "Sentence embeddings make semantic search fast.",
    "A small encoder with six layers and twelve heads.",
]


def timed(fn, repeats: int) -> tuple[list[float], object]:
    fn()                                                         # warm-up
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8, help="sentences per batch")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    missing = bert.missing_requirements()
    if missing:
        sys.exit("missing:\n  " + "\n  ".join(missing))
    one_thread = demos_model.use_one_blas_thread()
    params, tokenizer = bert.load_encoder()
    sentences = (SENTENCES * (args.batch // len(SENTENCES) + 1))[:args.batch]
    batch = bert.tokenize(sentences, tokenizer)
    B, N = batch.ids.shape
    print(f"batch: {B} sentences padded to N = {N} tokens ({int(batch.mask.sum())} real); "
          f"NumPy BLAS on one thread: {one_thread}")

    np_times, ours = timed(lambda: bert.sentence_embeddings(batch.ids, batch.mask, params),
                           args.repeats)
    d_ff = params["layers"][0]["W1"].shape[1]
    z = np.random.default_rng(0).normal(size=(B, N, d_ff))       # one layer's GELU input
    erf_times, _ = timed(lambda: bert.gelu(z), args.repeats)
    erf_share = len(params["layers"]) * statistics.median(erf_times) / statistics.median(np_times)
    rows = [("NumPy float64 (helpers.bert)", np_times)]

    try:
        import torch
        from transformers import AutoModel
    except ImportError:
        torch = None
        print("(torch/transformers not installed: PyTorch not timed)")
    if torch is not None:
        torch.set_num_threads(1)
        model = AutoModel.from_pretrained(str(bert.model_dir())).eval()
        ids = torch.from_numpy(batch.ids)
        mask = torch.from_numpy(batch.mask.astype(np.int64))

        def torch_embed():
            with torch.inference_mode():
                h = model(input_ids=ids, attention_mask=mask).last_hidden_state
                m = mask.unsqueeze(-1).to(h.dtype)
                s = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(s, dim=1).numpy()

        torch_times, theirs = timed(torch_embed, args.repeats)
        rows.append((f"PyTorch {torch.__version__} float32 (transformers)", torch_times))

    print(f"{'':44s} {'median':>9s} {'best':>9s}")
    for label, times in rows:
        print(f"{label:44s} {1e3 * statistics.median(times):7.1f} ms "
              f"{1e3 * min(times):7.1f} ms")
    print(f"GELU (math.erf per entry) is about {100 * erf_share:.0f}% of the NumPy time")
    if torch is not None:
        ratio = statistics.median(np_times) / statistics.median(torch_times)
        print(f"NumPy / PyTorch: {ratio:.1f}x; largest |difference| of the embeddings: "
              f"{np.abs(ours - theirs).max():.1e}")


if __name__ == "__main__":
    main()
