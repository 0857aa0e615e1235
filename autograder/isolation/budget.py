"""What a request for a course function may cost, checked before it runs (in the worker).

A child may ask the trusted worker for an earlier course function on inputs it chooses
(:mod:`autograder.isolation.answers`). Before the call runs, :func:`check` estimates what
it would build from the shapes and counts of its arguments and refuses, with a message
naming the limit, a call past the run's own budget; every call that passes then runs in
a helper process under the child's memory limit and a CPU-time limit per call
(:mod:`autograder.isolation.answerer`), so an estimate that is too low costs that run's
call, never the worker.

The estimate, for the course's functions (every one of them works on arrays whose rows
are tokens, or builds one from a count):

* each array argument: its rows against its rows (attention scores, pairwise scores,
  a mask), ``batch * rows * rows`` entries, where ``rows`` is the second-to-last axis
  (the only one of a vector) and ``batch`` the axes before it; arrays held in a dict or
  a list (a model's weights) are inputs already sent, not counted again;
* each size argument (:data:`SIZES`: ``n`` of ``causal_mask``, ``vocab_size``, ...):
  a square of it;
* each repetition count (:data:`REPEATS`: ``n_new`` of ``generate``, ``n_merges`` of
  ``train_bpe``): at most its stated maximum (each repetition is a forward pass or a
  pass over the words, run under the CPU-time limit);
* each text or container argument (a vocabulary, the merges, the words): at most
  :data:`MAX_ITEMS` items (the wire's own caps bound their bytes).
"""

from __future__ import annotations

import math

import numpy as np

#: Bytes one entry of an estimated array takes (float64, the course's type).
ENTRY_BYTES = 8
#: Size arguments: an output may be the square of one (``causal_mask(n)`` is ``n * n``).
SIZES = frozenset({"n", "n_real", "vocab_size", "n_ctx", "d", "d_ff", "d_head", "n_rep",
                   "k", "batch_size"})
#: Repetition counts and the most the worker runs of each.
REPEATS = {"n_new": 4096, "n_merges": 100_000}
#: Items of a text, list or dict argument (a vocabulary, the merges, a text).
MAX_ITEMS = 1_000_000


class OverBudget(MemoryError):
    """A request the run cannot afford (its message names the limit)."""


def _array_entries(a: np.ndarray) -> int:
    """``batch * rows * rows``: an array's rows against each other."""
    if a.ndim == 0:
        return 1
    rows = a.shape[-2] if a.ndim >= 2 else a.shape[0]
    batch = math.prod(a.shape[:-2]) if a.ndim > 2 else 1
    return batch * rows * rows


def estimate(args: dict) -> int:
    """Entries of the largest array a course function could build from ``args`` (the
    request's arguments, by parameter name): see the module docstring. Raises
    :class:`OverBudget` for a count past its maximum."""
    entries = 0
    for name, value in args.items():
        if isinstance(value, (bool, np.bool_)):
            continue
        if isinstance(value, (int, np.integer)):
            count = int(value)
            if name in REPEATS and count > REPEATS[name]:
                raise OverBudget(f"{name} = {count:,} is more than the grader runs for you "
                                 f"(at most {REPEATS[name]:,})")
            if name in SIZES:
                entries = max(entries, count * count)
        elif isinstance(value, np.ndarray):
            entries = max(entries, _array_entries(value))
        elif isinstance(value, (str, list, tuple, dict)) and len(value) > MAX_ITEMS:
            raise OverBudget(f"{name} holds {len(value):,} items; the grader takes at most "
                             f"{MAX_ITEMS:,}")
    return entries


def check(function: str, args: dict, memory_bytes: int) -> None:
    """Refuse (:class:`OverBudget`) a call of ``function`` whose estimated size is past
    ``memory_bytes``, the memory limit of the run that asks."""
    try:
        entries = estimate(args)
    except OverBudget as exc:
        raise OverBudget(f"the course's {function} was not run: {exc}") from None
    if entries * ENTRY_BYTES > memory_bytes:
        raise OverBudget(
            f"the course's {function} was not run: on these arguments it would build about "
            f"{entries * ENTRY_BYTES / 2**20:,.0f} MB, past your run's memory limit of "
            f"{memory_bytes // 2**20:,} MB")
