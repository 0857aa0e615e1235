"""The course's byte-level BPE encoder (``helpers.tokenizer.encode_smollm2``, pure
Python) against the ``tokenizers`` library (Rust) on the same text. (A measurement, not
a test.)

    .venv/bin/python tools/benchmark_tokenizer.py [--mb 1.0] [--text FILE]

One run each, cold (ours: a fresh word cache, its merge ranks built outside the timing;
theirs: the tokenizer loaded, never used before in the process), one thread each
(``TOKENIZERS_PARALLELISM=false``, ``RAYON_NUM_THREADS=1``; one ``encode`` call on the
whole text is sequential anyway). The text: ``--text FILE``, else the English of the
repository (the Shakespeare excerpt of notebook 11, README.md, docs/*.md) repeated to
``--mb`` megabytes. Prints both times, the ratio, whether the ids agree, and the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

from bench_common import machine  # noqa: E402


def english(mb: float) -> str:
    parts = [(ROOT / "helpers/data/shakespeare_hamlet_act1.txt").read_text(encoding="utf-8"),
             (ROOT / "README.md").read_text(encoding="utf-8")]
    parts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    base = "\n".join(parts)
    size = int(mb * 1_000_000)
    return (base * (size // len(base.encode("utf-8")) + 1))[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--text", type=Path, default=None)
    args = parser.parse_args()
    text = args.text.read_text(encoding="utf-8") if args.text else english(args.mb)

    from helpers import tokenizer as T
    from helpers.llama.tokenizer import load_tokenizer

    theirs_tok = load_tokenizer()
    vocab, merges = T.smollm2_vocab_and_merges()
    ours_bpe = T._FastBPE(vocab, merges)                   # fresh cache, ranks built here

    t0 = time.perf_counter()
    theirs = theirs_tok.encode(text).ids
    t_theirs = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = ours_bpe.ids_of(text)
    t_ours = time.perf_counter() - t0

    mb = len(text.encode("utf-8")) / 1e6
    print(f"text: {mb:.2f} MB, {len(theirs)} tokens "
          f"({'--text ' + str(args.text) if args.text else 'repository English, repeated'})")
    print(f"tokenizers {__import__('tokenizers').__version__} (Rust)          : {t_theirs:.3f} s")
    print(f"helpers.tokenizer.encode_smollm2      : {t_ours:.3f} s")
    print(f"ratio ours / tokenizers               : {t_ours / t_theirs:.1f}x")
    print(f"same ids                              : {ours == theirs}")
    print(f"machine                               : {machine()}")


if __name__ == "__main__":
    main()
