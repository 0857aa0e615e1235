"""How fast is the NumPy SmolLM2 of notebook 10? Greedy generation of 20 tokens, one thread.

    .venv/bin/python tools/benchmark_llm.py [--repeats 3] [--n-new 20] [--numpy-only]

Times, for the chat prompt of ``helpers.llama.REFERENCE_QUESTION`` (37 tokens):

* NumPy (``helpers.llama.generate``, float32, one OpenBLAS thread), with and without the
  KV cache;
* PyTorch (``transformers``' ``LlamaForCausalLM`` reading the same GGUF file, float32,
  ``torch.set_num_threads(1)``), with and without its cache; skipped when torch or
  transformers is missing, or with ``--numpy-only``.

Each figure is the best of ``--repeats`` runs (the least disturbed by other work on the
machine), as wall-clock and as CPU time of the process; loading is not timed. Both must write the same 20 tokens, and the
script says whether they do. A benchmark, not a test: the numbers depend on the machine.
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
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from helpers import llama  # noqa: E402
from helpers.demos_model import use_one_blas_thread  # noqa: E402


def best_time(fn, repeats: int):
    """``((best wall-clock seconds, best CPU seconds of this process), result of the last
    call)``. On a busy machine the CPU time is the steadier figure."""
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return (best, best_cpu), result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-new", type=int, default=20)
    parser.add_argument("--numpy-only", action="store_true")
    args = parser.parse_args(argv)

    use_one_blas_thread()
    params, config = llama.load_smollm2()
    tokenizer = llama.load_tokenizer()
    prompt = np.array(tokenizer.encode(llama.chat_prompt(llama.REFERENCE_QUESTION)).ids)
    rows = []
    outputs = {}
    for use_cache in (True, False):
        seconds, ids = best_time(lambda: llama.generate(  # noqa: B023
            prompt, params, config, args.n_new, use_cache=use_cache, stop_at_eos=False),
            args.repeats)
        label = f"NumPy, {'with' if use_cache else 'without'} KV cache"
        rows.append((label, seconds))
        outputs[label] = ids[len(prompt):].tolist()

    if not args.numpy_only:
        try:
            import torch

            import make_smollm2_reference as tool
        except ImportError as exc:
            print(f"(PyTorch part skipped: {exc})")
        else:
            torch.set_num_threads(1)
            model, _ = tool.load_transformers()
            x = torch.as_tensor(prompt)[None]
            for use_cache in (True, False):
                def run():
                    with torch.no_grad():
                        return model.generate(x, max_new_tokens=args.n_new,  # noqa: B023
                                              min_new_tokens=args.n_new, do_sample=False,
                                              use_cache=use_cache)  # noqa: B023
                seconds, out = best_time(run, args.repeats)
                label = f"PyTorch, {'with' if use_cache else 'without'} KV cache"
                rows.append((label, seconds))
                outputs[label] = out[0, len(prompt):].tolist()

    print(f"greedy generation of {args.n_new} tokens after a {len(prompt)}-token prompt, "
          f"one thread, best of {args.repeats}:")
    print(f"  {'':28s} {'wall':>9s} {'CPU':>9s} {'CPU/token':>11s}")
    for label, (seconds, cpu) in rows:
        print(f"  {label:28s} {seconds:7.2f} s {cpu:7.2f} s {1000 * cpu / args.n_new:7.1f} ms")
    first = next(iter(outputs.values()))
    same = all(ids == first for ids in outputs.values())
    print("all runs wrote the same tokens:", same)
    print("text:", repr(tokenizer.decode(first)))


if __name__ == "__main__":
    main()
