"""The course's NumPy all-MiniLM-L6-v2 against sentence-transformers, side by side.
(A measurement, not a test.)

    .venv/bin/python tools/benchmark_encoder.py [--threads 2] [--repeats 5]

Two workloads, each timed end to end (tokenization included) on both sides in the same
process, the repetitions alternating (ours, theirs, ours, theirs, ...) so that both see
the same load of the machine; the figure kept is the best of ``--repeats``:

* ``short``: 8 short sentences (one batch, padded to its longest, about 16 tokens);
* ``long``: 32 texts of 120 words (up to 128 tokens each), one batch.

Ours: ``helpers.bert.encode`` (float32, the weights loaded once). Theirs:
``SentenceTransformer(...).encode`` on the same files (float32, PyTorch), with the same
batch size (32). Both sides use the same number of threads: NumPy's OpenBLAS through
``OPENBLAS_NUM_THREADS`` (set before NumPy starts) and PyTorch through
``torch.set_num_threads``. Prints the times, the ratio ours / theirs, the largest
difference between the two sets of embeddings, and the machine (cores, load average).
Needs torch and sentence-transformers (developer tools, not course dependencies):

    .venv/bin/python -m pip install torch sentence-transformers
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


if __name__ == "__main__":                       # before NumPy loads OpenBLAS
    from bench_common import pin_threads

    pin_threads(sys.argv[1:], default=2)

import numpy as np  # noqa: E402

sys.path.insert(0, str(ROOT))

from bench_common import alternate, machine  # noqa: E402
from helpers import bert  # noqa: E402
from helpers.examples import IT_SENTENCES  # noqa: E402

SHORT = [
    IT_SENTENCES["tired"], IT_SENTENCES["wide"],
    "A man is playing a guitar on the stage.",
    "The stock market fell sharply this morning after the announcement.",
    "Attention lets every word look at every other word in the sentence.",
    "Hello!",
    "Sentence embeddings make semantic search fast.",
    "A small encoder with six layers and twelve heads.",
]

_WORDS = ("the river ran past the old mill where children played every summer while "
          "their parents worked in the fields and talked about the weather the harvest "
          "and the price of bread at the market in town a model reads every word of a "
          "sentence at once and each word looks at all the others to decide what it "
          "means here attention weights say how much one word borrows from another "
          "layers stack these steps so that meaning builds up from words to phrases to "
          "whole ideas").split()


def long_sentences(n: int = 32, words: int = 120) -> list[str]:
    """``n`` different texts of ``words`` words each (seeded shuffles of one passage)."""
    rng = np.random.default_rng(15)
    texts = []
    for _ in range(n):
        picked = rng.choice(len(_WORDS), size=words)
        texts.append(" ".join(_WORDS[i] for i in picked).capitalize() + ".")
    return texts



def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2,
                        help="threads for NumPy's BLAS and for PyTorch alike (default 2)")
    parser.add_argument("--repeats", type=int, default=5, help="best of this many")
    args = parser.parse_args(argv)

    missing = bert.missing_requirements()
    if missing:
        sys.exit("missing:\n  " + "\n  ".join(missing))
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        sys.exit(f"this benchmark needs torch and sentence-transformers ({exc})")
    torch.set_num_threads(args.threads)
    params, tokenizer = bert.load_encoder()
    theirs_model = SentenceTransformer(str(bert.model_dir()), device="cpu")
    theirs_model.eval()

    print(f"machine: {machine()}")
    print(f"threads: NumPy OpenBLAS {os.environ.get('OPENBLAS_NUM_THREADS')}, "
          f"PyTorch {torch.get_num_threads()}; best of {args.repeats}, alternating")
    print(f"versions: numpy {np.__version__}, torch {torch.__version__}, "
          f"sentence-transformers {sys.modules['sentence_transformers'].__version__}")
    print(f"{'workload':34s} {'NumPy':>10s} {'PyTorch':>10s} {'ratio':>7s} {'max |diff|':>11s}")
    for name, sentences in (("8 short sentences", SHORT), ("32 long sentences", long_sentences())):
        n_tokens = bert.tokenize(sentences, tokenizer).ids.shape[1]
        best, out = alternate({
            "ours": lambda s=sentences: bert.encode(s, params, tokenizer, batch_size=32),
            "theirs": lambda s=sentences: theirs_model.encode(
                s, batch_size=32, convert_to_numpy=True, show_progress_bar=False),
        }, args.repeats)
        diff = float(np.abs(out["ours"].astype(np.float64) - out["theirs"]).max())
        label = f"{name} (padded to {n_tokens} tokens)"
        print(f"{label:34s} {1e3 * best['ours']:7.1f} ms {1e3 * best['theirs']:7.1f} ms "
              f"{best['ours'] / best['theirs']:6.2f}x {diff:11.1e}")
    print(f"machine after the run: {machine()}")


if __name__ == "__main__":
    main()
