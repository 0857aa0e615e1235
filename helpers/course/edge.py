"""The learner's edge of the course's functions: what ``helpers`` exports.

The reference (``helpers/reference.py``) is the math alone and checks nothing. What a
learner calls is each reference function *checked at the edge* (:func:`checked`): its
arguments read against its exercise's contract (:func:`helpers.course.contract.checked_call`:
arrays as float64, shapes and named dimensions, token ids below their bound, the
``where`` conditions), then the exercise's own edge checks (``@EXERCISE.edge``: what
the contract cannot say, such as "not the zero vector"), and the call itself run with
NumPy's overflow, divide and invalid flags raising: a product beyond float64 becomes a
``ValueError`` that quotes the reference's line that overflowed.

The functions below (:func:`array`, :func:`token_ids`, :func:`in_float64_range`,
:func:`nonnegative`, :func:`require`) are the same reading for modules that check their
own arguments inline (``helpers/training/``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import numbers
import sys
from typing import Callable

import numpy as np

from helpers.course.contract import Arg, Contract, Reader, checked_call, parameter_names

__all__ = ["checked", "array", "token_ids", "in_float64_range", "nonnegative", "require",
           "overflow_text"]

_LIMIT = f"{np.finfo(np.float64).max:.3g}"


def overflow_text(what: str) -> str:
    """The words of a ValueError for a quantity ``what`` beyond float64."""
    return (f"{what} overflows float64 for these inputs (a value would exceed {_LIMIT}): "
            f"rescale the inputs")


def _failing_line(exc: BaseException, module_file: str) -> str:
    """The statement of ``module_file`` that was running when ``exc`` was raised (the
    innermost such frame), without its comment and ``return``."""
    tb, line = exc.__traceback__, ""
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == module_file:
            text = linecache.getline(code.co_filename, tb.tb_lineno).split("#", 1)[0]
            line = text.strip().removeprefix("return ").strip()
        tb = tb.tb_next
    return line


def checked(fn: Callable, contract: Contract, edge: Callable | None = None,
            doc: str = "") -> Callable:
    """``fn`` (a reference function) as learners call it: checked against ``contract``
    and ``edge`` (a function of the same arguments that raises ValueError) first; its
    docstring ``fn``'s followed by ``doc`` (the contract in words)."""
    signature = inspect.signature(fn)
    names = parameter_names(signature)
    module_file = inspect.getsourcefile(fn) or ""
    name = fn.__name__
    # A student's copy of helpers (the grader's, or the bundle's) holds stubs. In a grading
    # child the grader answers them, reading each call against this same contract there:
    # here a call is then checked only when it fails, which raises what it always raised.
    yours = sys.modules.get("helpers._yours")
    by_grader = getattr(yours, "answered_by_grader", None)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if by_grader is not None and by_grader(fn):
            try:
                return fn(*args, **kwargs)
            except Exception:
                pass            # what the call raises is decided below, as for any call
        args, kwargs = checked_call(contract, signature, args, kwargs, names, name)
        if edge is not None:
            edge(*args, **kwargs)
        try:
            with np.errstate(over="raise", divide="raise", invalid="raise"):
                return fn(*args, **kwargs)
        except FloatingPointError as exc:
            line = _failing_line(exc, module_file)
            what = f"`{line}` (in {name})" if line else f"a value in {name}"
            raise ValueError(overflow_text(what)) from None

    call.__doc__ = (fn.__doc__ or "").rstrip() + ("\n\n" + doc if doc else "")
    return call


# ---------------------------------------------------------------------------------------
# The same reading, one value at a time, for functions that check their own arguments
# ---------------------------------------------------------------------------------------


def _read(name: str, arg: Arg, value, shape: str):
    reader = Reader(Contract({}, None), edge=True)
    out = reader.value(name, arg, value, shape)
    if reader.problems:
        raise ValueError(reader.problems[0])
    return out


def array(x, name: str, ndim: int | None = None, min_ndim: int | None = None,
          neg_inf: bool = False) -> np.ndarray:
    """``x`` as a float64 array (finite; ``-inf`` too with ``neg_inf``) of ``ndim`` axes
    (at least ``min_ndim``), or a ValueError that says what is wrong with it."""
    if ndim is None and min_ndim is None:
        shape = "[...]"
    else:
        axes = ", ".join(f"a{i}" for i in range(ndim if ndim is not None else min_ndim))
        shape = f"[{axes}]" if ndim is not None else f"[..., {axes}]"
    return _read(name, Arg(shape, neg_inf=neg_inf), x, shape)


def token_ids(ids, vocab_size: int, name: str = "token_ids") -> np.ndarray:
    """A 1-D int64 array of ids in ``[0, vocab_size)``, or a ValueError naming the id."""
    out = _read(name, Arg("[N]", dtype="int"), ids, "[N]")
    wrong = (out < 0) | (out >= vocab_size)
    if wrong.any():
        raise ValueError(f"token id {int(out[wrong][0])} is out of range for a vocabulary "
                         f"of {vocab_size}")
    return out


@contextlib.contextmanager
def in_float64_range(what: str):
    """Products of finite numbers can exceed float64 (``1e200 * 1e200``): a ValueError
    naming the quantity, instead of ``inf``, NaN and a NumPy warning."""
    try:
        with np.errstate(over="raise", invalid="raise"):
            yield
    except FloatingPointError:
        raise ValueError(overflow_text(what)) from None


def nonnegative(value, name: str) -> float:
    """``value`` as a float that is finite and >= 0, or a ValueError naming it."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (ok and np.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def require(params, keys, what: str = "params") -> None:
    """``params`` is a dict holding ``keys``, or a ValueError listing what is missing."""
    if not isinstance(params, dict):
        raise ValueError(f"{what} must be a dict, got {type(params).__name__}")
    missing = [k for k in keys if k not in params]
    if missing:
        raise ValueError(f"{what} is missing {', '.join(missing)}")
