"""What the benchmark scripts share: the BLAS thread count, fixed before NumPy loads,
the line that says what machine a figure comes from, and the alternating best-of-N
timer."""

from __future__ import annotations

import argparse
import os
import time


def pin_threads(argv: list[str], default: int) -> int:
    """Read ``--threads N`` (default ``default``) from ``argv`` and give every BLAS library
    that many threads; call it before NumPy is imported. Also keeps the model libraries
    offline and their tokenizers single-threaded. Returns N."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--threads", type=int, default=default)
    n = parser.parse_known_args(argv)[0].threads
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return n


def machine() -> str:
    """Cores and load average, printed beside every figure."""
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"{os.cpu_count()} cores (nproc), load average {load}"


def alternate(fns: dict, repeats: int) -> tuple[dict, dict]:
    """Call each function once (warm-up), then ``repeats`` rounds of all of them in turn,
    so that both sides of a comparison see the same machine; return
    ``({name: best seconds}, {name: last result})``."""
    results = {name: fn() for name, fn in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            results[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best, results
