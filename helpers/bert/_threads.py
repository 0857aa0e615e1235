"""Run a block of many small matrix products on one BLAS thread.

Attention multiplies hundreds of small matrices in one batched product (one per sentence
and head, e.g. 32 x 12 products of [128, 32] by [32, 128]). With more than one thread,
OpenBLAS splits each small product between its threads and synchronises them every time;
on a machine whose cores are busy, each of those waits can take a scheduler time slice,
and the batched product becomes tens of times slower than on one thread (measured: 2.3 s
against 0.05 s at load 8 on 2 cores). The large products keep all the threads.

OpenBLAS (0.3.27 and later, as NumPy ships it) can change the thread count for the
calling thread only (``openblas_set_num_threads_local``); other Python threads are not
affected. With another BLAS, or an OpenBLAS without that function, nothing changes.
"""

from __future__ import annotations

import contextlib
import ctypes
from pathlib import Path

import numpy as np

_LOCAL = []          # [function or None], found once


def _set_local():
    if not _LOCAL:
        found = None
        root = Path(np.__file__).resolve().parent
        for path in [*root.parent.glob("numpy.libs/*openblas*"), *root.glob(".dylibs/*openblas*")]:
            try:
                lib = ctypes.CDLL(str(path))          # the copy NumPy already loaded
            except OSError:
                continue
            fn = getattr(lib, "openblas_set_num_threads_local", None)
            if fn is not None:
                fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
                found = fn
                break
        _LOCAL.append(found)
    return _LOCAL[0]


@contextlib.contextmanager
def one_blas_thread():
    """Within the block, BLAS calls of this Python thread use one OpenBLAS thread."""
    setter = _set_local()
    if setter is None:
        yield
        return
    previous = setter(1)
    try:
        yield
    finally:
        setter(previous)
