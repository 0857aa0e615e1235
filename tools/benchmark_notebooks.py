"""Benchmark: how long each notebook takes to run top to bottom, as a learner runs it.

    .venv/bin/python tools/benchmark_notebooks.py                  # solutions, 3 repeats
    .venv/bin/python tools/benchmark_notebooks.py --repeats 1 --students

Executes every solution notebook (``--students``: the released student notebooks too;
their unanswered exercises raise NotImplementedError and the run goes on) in a
fresh ``python3`` kernel with nbclient, in a temporary copy of its folder, and prints the
wall time of each run, kernel start included: the median over ``--repeats``, and the
course total. Target (style guide): each notebook runs on a laptop CPU in seconds; the
course aims at under 10 s per notebook.

Not a test: timings depend on the machine and on what else it is doing. The tests check
that every notebook runs, not how fast.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 10.0


def run_once(path: Path) -> float:
    """Seconds to execute the notebook at ``path`` in a new kernel (errors allowed)."""
    nb = nbformat.read(path, as_version=4)
    env = dict(os.environ, MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    with tempfile.TemporaryDirectory(prefix="nbbench-") as tmp:
        work = Path(tmp) / path.parent.name
        shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        client = NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True,
                                store_widget_state=False)
        start = time.perf_counter()
        client.execute(env=env, cwd=str(work), stderr=subprocess.DEVNULL)  # kernel's log
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per notebook (median shown)")
    parser.add_argument("--students", action="store_true",
                        help="also time the released student notebooks (notebooks/)")
    args = parser.parse_args()
    folders = [("solutions", ROOT / "solutions")]
    if args.students:
        folders.append(("notebooks", ROOT / "notebooks"))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} cores; load average before: {load:.1f}; "
          f"median of {args.repeats} run(s), kernel start included")
    for label, folder in folders:
        total = 0.0
        print(f"\n{label}/")
        for path in sorted(folder.glob("*/*.ipynb")):
            times = [run_once(path) for _ in range(args.repeats)]
            median = statistics.median(times)
            total += median
            flag = "  (over the 10 s target)" if median > TARGET_SECONDS else ""
            print(f"  {path.parent.name:32s} {median:6.2f} s   "
                  f"(min {min(times):.2f}, max {max(times):.2f}){flag}", flush=True)
        print(f"  {'course total':32s} {total:6.2f} s")


if __name__ == "__main__":
    sys.exit(main())
