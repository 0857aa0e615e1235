"""The NumPy SmolLM2 of notebook 10 against transformers on the same GGUF file, side by side.
(A measurement, not a test.)

    .venv/bin/python tools/benchmark_llm.py [--threads 1] [--repeats 3] [--n-new 50]
                                            [--without-cache] [--numpy-only]

Greedy generation after the chat prompt of ``helpers.llama.REFERENCE_QUESTION`` (37
tokens), the end-of-text token not stopping either side, KV cache on:

* NumPy: ``helpers.llama.generate`` (float32 weights, loaded once);
* PyTorch: ``transformers``' ``LlamaForCausalLM`` reading the same GGUF file (float32,
  ``model.generate`` with greedy decoding and its own cache).

Both sides run in the same process, their repetitions alternating (ours, theirs, ours,
...) so that both see the same load of the machine, with the same number of threads
(NumPy's OpenBLAS through ``OPENBLAS_NUM_THREADS`` before NumPy starts, PyTorch through
``torch.set_num_threads``). Each figure is the best of ``--repeats``. Two runs per side
and repetition: 1 new token (the prompt's forward pass and one step) and ``--n-new``
tokens; the time per generated token is their difference divided by ``n_new - 1``.
``--without-cache`` also times generation without the cache (slow). Loading is not
timed. Prints whether both sides wrote the same tokens, and the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


if __name__ == "__main__":                       # before NumPy loads OpenBLAS
    from bench_common import pin_threads

    pin_threads(sys.argv[1:], default=1)

import numpy as np  # noqa: E402

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from bench_common import alternate, machine  # noqa: E402
from helpers import llama  # noqa: E402



def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for NumPy's BLAS and for PyTorch alike (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many")
    parser.add_argument("--n-new", type=int, default=50, help="tokens to generate")
    parser.add_argument("--without-cache", action="store_true",
                        help="also time generation without the KV cache")
    parser.add_argument("--numpy-only", action="store_true")
    args = parser.parse_args(argv)

    params, config = llama.load_smollm2()
    tokenizer = llama.load_tokenizer()
    prompt = np.array(tokenizer.encode(llama.chat_prompt(llama.REFERENCE_QUESTION)).ids)
    fns = {}
    for cache in (True, False) if args.without_cache else (True,):
        for n in (1, args.n_new):
            fns[("NumPy", cache, n)] = lambda n=n, cache=cache: llama.generate(
                prompt, params, config, n, use_cache=cache, stop_at_eos=False)[len(prompt):]

    torch = None
    if not args.numpy_only:
        try:
            import torch
            from transformers import GenerationConfig

            import make_smollm2_reference as tool
        except ImportError as exc:
            torch = None
            print(f"(PyTorch side skipped: {exc})")
    if torch is not None:
        torch.set_num_threads(args.threads)
        model, _ = tool.load_transformers()
        x = torch.as_tensor(prompt)[None]

        def theirs(n, cache):
            greedy = GenerationConfig(max_new_tokens=n, do_sample=False, use_cache=cache,
                                      eos_token_id=None, pad_token_id=config.eos_id)
            with torch.inference_mode():
                return model.generate(x, generation_config=greedy)[0, len(prompt):].numpy()

        for cache in (True, False) if args.without_cache else (True,):
            for n in (1, args.n_new):
                fns[("PyTorch", cache, n)] = lambda n=n, cache=cache: theirs(n, cache)

    print(f"machine: {machine()}")
    threads = f"NumPy OpenBLAS {os.environ.get('OPENBLAS_NUM_THREADS', '?')}"
    if torch is not None:
        import transformers

        threads += f", PyTorch {torch.get_num_threads()}"
        print(f"versions: numpy {np.__version__}, torch {torch.__version__}, "
              f"transformers {transformers.__version__}")
    print(f"threads: {threads}; best of {args.repeats}, alternating")
    best, out = alternate(fns, args.repeats)
    print(f"greedy generation after a {len(prompt)}-token prompt, float32 weights:")
    print(f"  {'':26s} {'1 token':>9s} {f'{args.n_new} tokens':>10s} {'per token':>10s}")
    per_token = {}
    for side, cache, n in fns:
        if n != args.n_new:
            continue
        one, many = best[(side, cache, 1)], best[(side, cache, n)]
        per_token[(side, cache)] = (many - one) / (n - 1)
        label = f"{side}, {'with' if cache else 'without'} KV cache"
        print(f"  {label:26s} {1e3 * one:6.0f} ms {many:8.2f} s "
              f"{1e3 * per_token[(side, cache)]:7.1f} ms")
    if torch is not None:
        ratio = per_token[("NumPy", True)] / per_token[("PyTorch", True)]
        print(f"per generated token with the cache, NumPy / PyTorch: {ratio:.2f}x")
    ids = {key: list(map(int, v)) for key, v in out.items() if key[2] == args.n_new}
    first = next(iter(ids.values()))
    agree = min(next((i for i, (a, b) in enumerate(zip(first, v)) if a != b), len(first))
                for v in ids.values())
    print(f"all runs wrote the same {agree} first tokens"
          + ("" if agree == len(first) else f" (of {len(first)}; then they part)"))
    print("text:", repr(tokenizer.decode(first)))
    print(f"machine after the run: {machine()}")


if __name__ == "__main__":
    main()
