"""The exercise contract: an exercise's arguments and result as data, declared once.

The ground floor of the exercise framework (of the course it imports only the drawing of
values, :mod:`helpers.course.draw`, whose bounds it reads): what an
argument may be (:class:`Arg`), what a call may hold (:class:`Contract`), and the one
reading of it, which says what makes a case's arguments and expected output fall
outside it (:func:`contract_problems`).
"""

from __future__ import annotations

import copy
import functools
import inspect
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from helpers.course import draw

__all__ = ["Arg", "Contract", "Reader", "contract_problems", "dtype_problem", "checked_call"]


@dataclass(frozen=True)
class Arg:
    """One argument (or result) of an exercise.

    ``shape``: ``"[..., N, d]"`` an array with named dimensions (a dimension's name means
    the same size in every argument and the result of one call; ``...`` stands for the
    leading batch axes, as many as :attr:`Contract.batch` allows; a number is a fixed
    size); a bare name ``"n"``: an int equal to that dimension; ``int``, ``float`` or
    ``bool``: a scalar, between ``low`` and ``high`` (for an array: every entry; a bound
    of an array may name dimensions, ``high="V - 1"``); another type (``dict``, ``list``,
    a model configuration, ``str``): a value of that type, drawn by ``values``; a tuple of
    kinds ``(str, str)``: a tuple of that many values of those kinds (a pair). What a
    structure holds: ``items``, the kind of every item of a list or tuple (or of every value
    of a dict), ``keys``, the kind of a dict's keys, ``fields``, a dict's named entries
    (name -> :class:`Arg`; their dimensions bind like arguments'); a kind is a type, a
    tuple of kinds, or an :class:`Arg`. ``dtype``: the array's dtypes
    (``"float64"``, ``"float32"``, ``"int"``, ``"bool"``). ``lists``: plain (nested)
    lists are accepted in place of the array (or of the tuple). ``optional``: a keyword
    with a default, which cases may leave out (or pass as ``None`` for an array; one
    followed by a required argument is passed positionally, ``None`` when left out).
    ``values(rng, shape, dims)``: how drawn values look (default: standard normal floats,
    ints in ``[low, high]``, booleans with the first key allowed). ``neg_inf``: a float
    array may hold ``-inf`` (masked scores); any other non-finite entry is refused.
    ``broadcasts``: a dimension of size 1 stands for any size (the array broadcasts
    against the others, as a mask does)."""

    shape: Any = float
    dtype: Any = "float64"
    lists: bool = False
    low: float | None = None
    high: float | None = None
    optional: bool = False
    values: Callable | None = None
    items: Any = None
    keys: Any = None
    fields: dict | None = None
    neg_inf: bool = False
    broadcasts: bool = False

    @property
    def is_array(self) -> bool:
        return isinstance(self.shape, str) and self.shape.startswith("[")

    @property
    def tokens(self) -> list[str]:
        return [t.strip() for t in self.shape.strip("[]").split(",") if t.strip()]

    @property
    def dtypes(self) -> tuple[str, ...]:
        return (self.dtype,) if isinstance(self.dtype, str) else tuple(self.dtype)


@dataclass(frozen=True)
class Contract:
    """An exercise's arguments and result, stated once (docs/authoring.md).

    ``args``: parameter name -> :class:`Arg` (every parameter of the signature);
    ``returns``: an :class:`Arg`, or a tuple of them for a tuple output; ``batch``: how
    many axes ``...`` may stand for; ``sizes``: the sizes drawn for a dimension (default
    2-5, and 1 in the ``size1`` draw); ``where``: conditions on the dimensions
    (``"d % n_heads == 0"``); ``dtype_judged``: whether the output's dtype is judged (it
    is for masks: booleans); ``invariants``: what else holds, in words; ``draw=False``:
    the contract validates the written cases but draws none (the models' exercises, whose
    inputs are whole models, not drawn yet); ``scenario``: the scenario every case runs
    through (its arguments are the exercise's; a drawn case runs it too, and a case of it
    has its arguments validated, not its observations); ``serves``: where the reference
    a learner calls accepts more than the exercise asks (a batch its callers pass), the
    shape it accepts instead (``{"X": "[..., N, d]"}`` for the contract's ``[N, d]``)."""

    args: dict
    returns: Any
    batch: tuple[int, ...] = (0,)
    sizes: dict = field(default_factory=dict)
    where: tuple[str, ...] = ()
    dtype_judged: bool = False
    invariants: tuple[str, ...] = ()
    draw: bool = True
    scenario: str | None = None
    serves: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Reading values against the contract. One reader serves the written and drawn cases
# (every problem listed: :func:`contract_problems`) and a learner's call of the reference
# (the arrays converted, the first problem raised as a ValueError: :func:`checked_call`).
# ---------------------------------------------------------------------------------------


def _dtype_ok(arg: Arg, arr, from_list: bool) -> bool:
    kind = arr.dtype.kind
    for want in arg.dtypes:
        if want == "bool" and kind == "b":
            return True
        if want == "int" and kind in "iu":
            return True
        if want.startswith("float") and (arr.dtype.name == want or
                                         (from_list and kind in "iuf")):
            return True
    return arr.size == 0


def dtype_problem(returns: Arg, got) -> str | None:
    """What is wrong with the dtype of output ``got`` of a contract whose dtype is judged
    (``returns``: its result), or None (not an array of numbers: the comparison says
    what is wrong)."""
    try:
        arr = np.asarray(got)
    except Exception:                        # ragged: the comparison says so
        return None
    if arr.dtype.kind not in "biuf" or _dtype_ok(returns, arr, False):
        return None
    if returns.dtypes == ("bool",):
        return (f"the mask must be boolean (dtype bool), got dtype {arr.dtype}: build it "
                f"from comparisons such as j <= i")
    return f"the output must have dtype {'/'.join(returns.dtypes)}, got dtype {arr.dtype}"


@functools.lru_cache(maxsize=None)
def _tokens(shape: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in shape.strip("[]").split(",") if t.strip())


@functools.lru_cache(maxsize=None)
def _compiled(expression: str):
    """A condition or a bound of the author's contract, compiled once."""
    return compile(expression, "<contract>", "eval")


@functools.lru_cache(maxsize=None)
def _float_dtypes(dtypes: tuple[str, ...]) -> tuple[np.dtype, ...]:
    return tuple(np.dtype(d) for d in dtypes if d.startswith("float"))


def _kind_name(kind) -> str:
    if isinstance(kind, Arg):
        return kind.shape if isinstance(kind.shape, str) else _kind_name(kind.shape)
    if isinstance(kind, tuple):
        return "(" + ", ".join(_kind_name(k) for k in kind) + ")"
    return kind.__name__


def _range_text(low, high) -> str:
    if low is not None and high is not None:
        return f" from {low} to {high}"
    return f" >= {low}" if low is not None else (f" <= {high}" if high is not None else "")


class Reader:
    """One call (or case) read against a contract: the named dimensions it binds, the
    batch shapes of its ``...`` axes, and the problems found, in words. ``edge``: a
    learner's call, whose arrays are converted (float64, finite; ids as int64; masks as
    bool) and whose batch axes may be any number; otherwise a case, read as written
    (lists only where the contract accepts them, dtypes as stated, the batch axes the
    contract draws)."""

    def __init__(self, contract: Contract, edge: bool):
        self.contract, self.edge = contract, edge
        self.dims: dict[str, tuple[int, str, str, tuple]] = {}   # -> (size, arg, shape, its shape)
        self.batches: list[tuple[str, tuple]] = []
        self.problems: list[str] = []
        self.ranges: list[tuple[str, Arg, Any]] = []             # checked once all are bound

    def fail(self, text: str):
        self.problems.append(text)

    def bind(self, token: str, size: int, name: str, shape: str, seen: tuple) -> None:
        if token.isdigit():
            if int(token) != size:
                self.fail(f"{name} has shape {seen}; it must be {shape}")
            return
        first = self.dims.setdefault(token, (size, name, shape, seen))
        if first[0] != size:
            other = (f"{first[1]} has shape {first[3]}" if first[3] is not None
                     else f"{first[1]} = {first[0]}")
            self.fail(f"{name} has shape {seen} but {other}: {token} = {size} in {name}, "
                      f"{first[0]} in {first[1]} ({name}: {shape}, {first[1]}: {first[2]})")

    # -- one value -------------------------------------------------------------------

    def value(self, name: str, arg: Arg, value, shape: str | None = None):
        """``value`` read as ``arg`` (converted at the edge); problems are recorded."""
        if value is None:
            if not arg.optional:
                self.fail(f"{name} is None")
            return value
        if arg.is_array:
            return self.array(name, arg, value, shape or arg.shape)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if isinstance(arg.shape, str):                   # an int equal to a dimension
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                self.fail(f"{name} must be an int >= 1, got {value!r}")
            else:
                self.bind(arg.shape, int(value), name, arg.shape, None)
            return value
        if isinstance(arg.shape, tuple) or arg.shape not in (int, float, bool):
            return self.structure(name, arg, value)
        return self.scalar(name, arg, value)

    def scalar(self, name: str, arg: Arg, value):
        kind = {int: "an int", float: "a number", bool: "a bool"}[arg.shape]
        want = {int: numbers.Integral, float: numbers.Real, bool: (bool, np.bool_)}[arg.shape]
        ok = isinstance(value, want) and (arg.shape is bool or not isinstance(value, bool))
        if ok and arg.shape is float:
            ok = bool(np.isfinite(value))
            kind = "a finite number"
        if ok and (arg.low is not None and value < arg.low or
                   arg.high is not None and value > arg.high):
            ok = False
        if not ok:
            self.fail(f"{name} must be {kind}{_range_text(arg.low, arg.high)}, got {value!r}")
        return value

    def array(self, name: str, arg: Arg, value, shape: str):
        from_list = isinstance(value, (list, tuple))
        if not self.edge:
            if from_list and not arg.lists or not from_list and not isinstance(value,
                                                                               np.ndarray):
                self.fail(f"{name} is a {type(value).__name__}; the contract wants an array")
                return value
            arr = np.asarray(value)
            if not _dtype_ok(arg, arr, from_list):
                self.fail(f"{name} has dtype {arr.dtype}; the contract says "
                          f"{'/'.join(arg.dtypes)}")
        else:
            arr = self.converted(name, arg, value)
            if arr is None:
                return value
        tokens = _tokens(shape)
        fixed = [t for t in tokens if t != "..."]
        n_batch = arr.ndim - len(fixed)
        if "..." in tokens and n_batch < 0:
            self.fail(f"{name} must be at least {len(fixed)}-D, but has shape {arr.shape}")
            return arr
        if "..." not in tokens and n_batch:
            self.fail(f"{name} must be {len(fixed)}-D, but has shape {arr.shape}")
            return arr
        if "..." in tokens and not self.edge and n_batch not in self.contract.batch:
            self.fail(f"{name} has shape {arr.shape}; the contract says {shape} (with ... "
                      f"standing for {self.contract.batch} axes)")
            return arr
        if "..." in tokens:
            self.batches.append((name, arr.shape[:n_batch]))
        for token, size in zip(fixed, arr.shape[n_batch:]):
            if not (arg.broadcasts and size == 1):
                self.bind(token, size, name, shape, arr.shape)
        if arg.low is not None or arg.high is not None:
            self.ranges.append((name, arg, arr))
        return arr if self.edge else value

    def converted(self, name: str, arg: Arg, value):
        """A learner's array as the reference takes it, or None (a problem recorded)."""
        if arg.dtypes == ("bool",):
            arr = np.asarray(value)
            if arr.dtype != bool:
                if arr.dtype.kind not in "biuf" or not np.isin(arr, (0, 1)).all():
                    self.fail(f"{name} must be boolean (True where allowed), or 0/1")
                    return None
                arr = arr.astype(bool)
            return arr
        if "int" in arg.dtypes:
            arr = np.asarray(value)
            if arr.size and arr.dtype.kind not in "iu":
                whole = arr.dtype.kind == "f" and bool(
                    (np.isfinite(arr) & (arr == np.floor(arr))).all())
                if not whole:
                    self.fail(f"{name} must hold whole numbers, got dtype {arr.dtype}")
                    return None
            if arr.size and arr.dtype.kind == "f" and np.abs(arr).max() >= 2**62:
                big = arr.flat[int(np.abs(arr).argmax())]
                self.fail(f"{name} holds {float(big):g}, far outside any range of ids")
                return None
            return arr.astype(np.int64)
        try:
            arr = np.asarray(value)
            floats = _float_dtypes(arg.dtypes)
            if arr.dtype not in floats:                     # float64 (or an allowed float)
                arr = np.asarray(value, dtype=floats[0] if floats else np.float64)
        except (TypeError, ValueError) as exc:
            self.fail(f"{name} must be an array of numbers ({exc})")
            return None
        if np.logical_and.reduce(np.isfinite(arr), axis=None):      # the usual case
            return arr
        bad = np.isnan(arr) | (np.isposinf(arr) if arg.neg_inf else np.isinf(arr))
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            self.fail(f"{name} contains {arr[where]} at index {where}; inputs must be finite")
            return None
        return arr

    def structure(self, name: str, arg: Arg, value):
        """A str, a list, a dict, a tuple of kinds or another type, and what it holds."""
        shape = arg.shape
        if isinstance(shape, tuple):
            return self.kind(name, shape, value, arg.lists)
        if not isinstance(value, shape) and not (arg.lists and shape is tuple and
                                                 isinstance(value, list)):
            self.fail(f"{name} is a {type(value).__name__}; the contract says {shape.__name__}")
            return value
        if isinstance(value, dict):
            out = dict(value)
            if arg.keys is not None:
                for k in value:
                    self.kind(f"a key of {name}", arg.keys, k, arg.lists)
            if arg.items is not None:
                for k, v in value.items():
                    out[k] = self.kind(f"{name}[{k!r}]", arg.items, v, arg.lists)
            fields = arg.fields or {}
            missing = [k for k, sub in fields.items() if k not in value and not sub.optional]
            if missing:
                self.fail(f"{name} is missing {', '.join(missing)}")
            for k, sub in fields.items():
                if k in value:
                    out[k] = self.value(f"{name}[{k!r}]", sub, value[k])
            return out if self.edge else value
        if isinstance(value, (list, tuple)) and arg.items is not None:
            out = [self.kind(f"{name}[{i}]", arg.items, v, arg.lists)
                   for i, v in enumerate(value)]
            return type(value)(out) if self.edge else value
        return value

    def kind(self, name: str, kind, value, lists: bool = False):
        """``value`` as a value of ``kind`` (a type, a tuple of kinds or an :class:`Arg`)."""
        if isinstance(kind, Arg):
            return self.value(name, kind, value)
        if isinstance(kind, tuple):
            if not isinstance(value, tuple) and not (lists and isinstance(value, list)):
                self.fail(f"{name} is a {type(value).__name__}; the contract says a tuple "
                          f"{_kind_name(kind)}")
            elif len(value) != len(kind):
                self.fail(f"{name} has {len(value)} items; the contract says {_kind_name(kind)}")
            else:
                for i, (k, v) in enumerate(zip(kind, value)):
                    self.kind(f"{name}[{i}]", k, v, lists)
            return value
        want = {int: numbers.Integral, float: numbers.Real}.get(kind, kind)
        if not isinstance(value, want) or (kind in (int, float) and isinstance(value, bool)):
            self.fail(f"{name} is a {type(value).__name__}; the contract says "
                      f"{_kind_name(kind)}")
        return value

    # -- the whole call ----------------------------------------------------------------

    def finish(self) -> None:
        """What holds between the arguments: the batch axes broadcast, the ``where``
        conditions, and the ranges of arrays (once every dimension is bound)."""
        try:
            if len(self.batches) > 1:
                np.broadcast_shapes(*(s for _, s in self.batches))
        except ValueError:
            self.fail("the batch axes ... do not broadcast: " + ", ".join(
                f"{n} {s}" for n, s in self.batches))
        sizes = {d: v[0] for d, v in self.dims.items()}
        for cond in self.contract.where:
            try:
                ok = eval(_compiled(cond), {}, dict(sizes))   # noqa: S307 (the author's text)
            except NameError:
                continue
            if not ok:
                names = sorted(n for n in sizes if n in cond)
                self.fail(f"{cond} does not hold (" + ", ".join(
                    f"{n} = {sizes[n]}" for n in names) + ")")
        if self.problems:
            return
        for name, arg, arr in self.ranges:
            self.range(name, arg, np.asarray(arr), sizes)

    def range(self, name: str, arg: Arg, arr: np.ndarray, sizes: dict) -> None:
        if not arr.size or arr.dtype.kind not in "iuf":
            return
        try:
            lo, hi = draw.bound(arg.low, sizes), draw.bound(arg.high, sizes)
        except NameError:                   # a dimension no argument binds: not checked
            return
        bad = (arr < lo if lo is not None else False) | (arr > hi if hi is not None else False)
        if np.any(bad):
            first = arr[bad].flat[0].item()
            rule = (f"{arg.low if arg.low is not None else '-inf'} <= {name} <= "
                    f"{arg.high if arg.high is not None else 'inf'}")
            self.fail(f"{name} holds {first!r}, outside [{lo}, {hi}] (the contract says {rule})")


def contract_problems(ex, case) -> list[str]:
    """What makes ``case`` (its arguments and its expected output) fall outside ``ex``'s
    contract; [] when it is inside (or when the exercise states no contract, or the case
    runs a scenario)."""
    contract = ex.contract
    if contract is None or case.scenario and case.scenario != contract.scenario:
        return []
    sig = inspect.signature(ex.signature)
    try:
        bound = sig.bind(*case.args, **case.kwargs).arguments
    except TypeError as exc:
        return [f"the arguments do not fit {ex.name}'s signature: {exc}"]
    reader = Reader(contract, edge=False)
    reader.problems += [f"{p} is not in the contract" for p in sig.parameters
                        if p not in contract.args]
    for name, arg in contract.args.items():
        if name not in bound:
            if not arg.optional:
                reader.fail(f"{name} is left out but is not optional")
            continue
        reader.value(name, arg, bound[name])
    reader.finish()
    if reader.problems or case.scenario:     # a scenario's result is its observations
        return reader.problems[:5]
    expected = copy.deepcopy(case.answer) if case.answer is not None else case.run(ex.answer)
    returns = contract.returns
    if isinstance(returns, tuple):
        if not isinstance(expected, tuple) or len(expected) != len(returns):
            return [f"the expected output is not a tuple of {len(returns)}"]
        pairs = list(zip(returns, expected))
    else:
        pairs = [(returns, expected)]
    result = Reader(Contract({}, None, batch=tuple(range(8))), edge=False)
    result.dims = reader.dims
    for i, (arg, value) in enumerate(pairs):
        if arg.is_array and not isinstance(value, np.ndarray):
            value = np.asarray(value)
        result.value(f"result {i}" if len(pairs) > 1 else "result", arg, value)
    return [f"the expected output: {p}" for p in result.problems[:5]]


def parameter_names(signature: inspect.Signature) -> tuple[str, ...] | None:
    """The names a call binds by position or keyword, or None (``*args``, ``**kwargs``,
    keyword-only: bound by :meth:`inspect.Signature.bind` instead)."""
    kinds = {p.kind for p in signature.parameters.values()}
    return tuple(signature.parameters) if kinds <= {
        inspect.Parameter.POSITIONAL_OR_KEYWORD} else None


def checked_call(contract: Contract, signature: inspect.Signature, args: tuple,
                 kwargs: dict, names: tuple[str, ...] | None = (),
                 function: str = "") -> tuple[tuple, dict]:
    """A learner's call ``(args, kwargs)`` as the reference takes it: every argument the
    contract names read against it at the edge (arrays as float64 and finite, token ids
    below their bound, masks as booleans, every named dimension one size, the ``where``
    conditions), or a ValueError naming the first problem and the shapes involved.
    ``names``: :func:`parameter_names` of ``signature``, when the caller keeps them;
    ``function``: its name, which a call that does not fit the signature names
    (``layer_norm(): missing a required argument: 'beta'``)."""
    names = parameter_names(signature) if names == () else names
    if names is None or len(args) + len(kwargs) != len(names) or any(
            k not in names or k in names[:len(args)] for k in kwargs):
        try:                                         # another kind of signature or call
            bound = signature.bind(*args, **kwargs)  # (the TypeError Python would raise)
        except TypeError as exc:
            raise TypeError(f"{function}(): {exc}" if function else str(exc)) from None
        values, order = bound.arguments, list(bound.arguments)
    else:
        values = dict(zip(names, args)) | kwargs
        order = list(names[:len(args)])
    reader = Reader(contract, edge=True)
    for name, value in values.items():
        arg = contract.args.get(name)
        if arg is not None:
            values[name] = reader.value(name, arg, value, contract.serves.get(name))
            if reader.problems:
                raise ValueError(reader.problems[0])
    reader.finish()
    if reader.problems:
        raise ValueError(reader.problems[0])
    return tuple(values[n] for n in order), {k: values[k] for k in values if k not in order}
