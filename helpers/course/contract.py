"""The exercise contract: an exercise's arguments and result as data, declared once.

The ground floor of the exercise framework (of the course it imports only the drawing of
values, :mod:`helpers.course.draw`, whose bounds it reads): what an
argument may be (:class:`Arg`), what a call may hold (:class:`Contract`), and the one
reading of it, which says what makes a case's arguments and expected output fall
outside it (:func:`contract_problems`).
"""

from __future__ import annotations

import copy
import inspect
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from helpers.course import draw

__all__ = ["Arg", "Contract", "contract_problems", "dtype_problem"]


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
    array may hold ``-inf`` (masked scores); any other non-finite entry is refused."""

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


def _check_arg(name: str, arg: Arg, value, dims: dict, batches: list, contract) -> list[str]:
    """What is wrong with ``value`` as argument (or result) ``name``; binds ``dims``."""
    if value is None:
        return [] if arg.optional else [f"{name} is None"]
    if arg.is_array:
        from_list = isinstance(value, (list, tuple))
        if from_list and not arg.lists:
            return [f"{name} is a {type(value).__name__}; the contract wants an array"]
        if not from_list and not isinstance(value, np.ndarray):
            return [f"{name} is a {type(value).__name__}; the contract wants an array"]
        arr = np.asarray(value)
        out = [] if _dtype_ok(arg, arr, from_list) else [
            f"{name} has dtype {arr.dtype}; the contract says {'/'.join(arg.dtypes)}"]
        tokens = arg.tokens
        fixed = [t for t in tokens if t != "..."]
        n_batch = arr.ndim - len(fixed)
        if "..." not in tokens and n_batch != 0 or n_batch < 0 or \
                "..." in tokens and n_batch not in contract.batch:
            return out + [f"{name} has shape {arr.shape}; the contract says {arg.shape} "
                          f"(with ... standing for {contract.batch} axes)"]
        if "..." in tokens:
            batches.append((name, arr.shape[:n_batch]))
        for token, size in zip(fixed, arr.shape[n_batch:]):
            if token.isdigit():
                if int(token) != size:
                    out.append(f"{name} has shape {arr.shape}; the contract says {arg.shape}")
            elif dims.setdefault(token, size) != size:
                out.append(f"{name} has shape {arr.shape}: its {token} = {size}, but "
                           f"{token} = {dims[token]} elsewhere (the contract says "
                           f"{arg.shape})")
        return out
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(arg.shape, str):                      # an int equal to a dimension
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            return [f"{name} = {value!r} is not an int"]
        if dims.setdefault(arg.shape, int(value)) != int(value):
            return [f"{name} = {value} but {arg.shape} = {dims[arg.shape]} elsewhere"]
        return []
    if isinstance(arg.shape, tuple) or arg.shape not in (int, float, bool):
        return _check_structure(name, arg, value, dims, batches, contract)
    want = {int: numbers.Integral, float: numbers.Real, bool: bool}[arg.shape]
    if not isinstance(value, want) or (arg.shape is not bool and isinstance(value, bool)):
        return [f"{name} = {value!r} is not a {arg.shape.__name__}"]
    if arg.low is not None and value < arg.low or arg.high is not None and value > arg.high:
        return [f"{name} = {value!r} is outside [{arg.low}, {arg.high}]"]
    return []


def _range_problems(name: str, arg: Arg, value, dims: dict) -> list[str]:
    """What entries of array ``value`` lie outside ``[arg.low, arg.high]``."""
    arr = np.asarray(value)
    if not arr.size or arr.dtype.kind not in "iuf" or arg.low is None and arg.high is None:
        return []
    try:
        lo, hi = draw.bound(arg.low, dims), draw.bound(arg.high, dims)
    except NameError:                   # a dimension no argument binds: not checked
        return []
    bad = (arr < lo if lo is not None else False) | (arr > hi if hi is not None else False)
    if not np.any(bad):
        return []
    first = arr[bad].flat[0].item()
    return [f"{name} holds {first!r}, outside [{lo}, {hi}] (the contract says "
            f"{arg.low if arg.low is not None else '-inf'} <= {name} <= "
            f"{arg.high if arg.high is not None else 'inf'})"]


def _kind_name(kind) -> str:
    if isinstance(kind, Arg):
        return kind.shape if isinstance(kind.shape, str) else _kind_name(kind.shape)
    if isinstance(kind, tuple):
        return "(" + ", ".join(_kind_name(k) for k in kind) + ")"
    return kind.__name__


def _check_kind(name: str, kind, value, dims: dict, batches: list, contract,
                lists: bool = False) -> list[str]:
    """What is wrong with ``value`` as a value of ``kind`` (a type, a tuple of kinds or an
    :class:`Arg`)."""
    if isinstance(kind, Arg):
        return _check_arg(name, kind, value, dims, batches, contract)
    if isinstance(kind, tuple):
        if not isinstance(value, tuple) and not (lists and isinstance(value, list)):
            return [f"{name} is a {type(value).__name__}; the contract says a tuple "
                    f"{_kind_name(kind)}"]
        if len(value) != len(kind):
            return [f"{name} has {len(value)} items; the contract says {_kind_name(kind)}"]
        out = []
        for i, (k, v) in enumerate(zip(kind, value)):
            out += _check_kind(f"{name}[{i}]", k, v, dims, batches, contract, lists)
        return out
    want = {int: numbers.Integral, float: numbers.Real}.get(kind, kind)
    if not isinstance(value, want) or (kind in (int, float) and isinstance(value, bool)):
        return [f"{name} is a {type(value).__name__}; the contract says {_kind_name(kind)}"]
    return []


def _check_structure(name: str, arg: Arg, value, dims: dict, batches: list,
                     contract) -> list[str]:
    """A str, a list, a dict, a tuple of kinds or another type, and what it holds."""
    shape = arg.shape
    if isinstance(shape, tuple):
        return _check_kind(name, shape, value, dims, batches, contract, arg.lists)
    if not isinstance(value, shape) and not (arg.lists and shape is tuple and
                                             isinstance(value, list)):
        return [f"{name} is a {type(value).__name__}; the contract says {shape.__name__}"]
    out: list[str] = []
    if isinstance(value, dict):
        if arg.keys is not None:
            for k in value:
                out += _check_kind(f"a key of {name}", arg.keys, k, dims, batches, contract,
                                   arg.lists)
        if arg.items is not None:
            for k, v in value.items():
                out += _check_kind(f"{name}[{k!r}]", arg.items, v, dims, batches, contract,
                                   arg.lists)
        for k, sub in (arg.fields or {}).items():
            if k not in value:
                if not sub.optional:
                    out.append(f"{name} has no entry {k!r}")
                continue
            out += _check_arg(f"{name}[{k!r}]", sub, value[k], dims, batches, contract)
    elif isinstance(value, (list, tuple)) and arg.items is not None:
        for i, v in enumerate(value):
            out += _check_kind(f"{name}[{i}]", arg.items, v, dims, batches, contract,
                               arg.lists)
    return out[:5]


def contract_problems(ex: "Exercise", case: "Case") -> list[str]:
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
    out = [f"{p} is not in the contract" for p in sig.parameters if p not in contract.args]
    dims: dict = {}
    batches: list = []
    for name, arg in contract.args.items():
        if name not in bound:
            if not arg.optional:
                out.append(f"{name} is left out but is not optional")
            continue
        out += _check_arg(name, arg, bound[name], dims, batches, contract)
    try:
        np.broadcast_shapes(*(s for _, s in batches))
    except ValueError:
        out.append(f"the batch axes ... do not broadcast: {batches}")
    for cond in contract.where:
        try:
            ok = eval(cond, {}, dict(dims))            # noqa: S307 (the author's text)
        except NameError:
            continue
        if not ok:
            out.append(f"{cond} does not hold ({dims})")
    for name, arg in contract.args.items():            # ranges: every dimension is bound
        if arg.is_array and bound.get(name) is not None and not out:
            out += _range_problems(name, arg, bound[name], dims)
    if out or case.scenario:                # a scenario's result is its observations
        return out
    expected = copy.deepcopy(case.answer) if case.answer is not None else case.run(ex.reference)
    returns = contract.returns
    if isinstance(returns, tuple):
        if not isinstance(expected, tuple) or len(expected) != len(returns):
            return [f"the expected output is not a tuple of {len(returns)}"]
        pairs = list(zip(returns, expected))
    else:
        pairs = [(returns, expected)]
    for i, (arg, value) in enumerate(pairs):
        if arg.is_array and not isinstance(value, np.ndarray):
            value = np.asarray(value)
        out += [f"the expected output: {p}" for p in
                _check_arg(f"result {i}" if len(pairs) > 1 else "result", arg, value, dims,
                           [], Contract({}, None, batch=tuple(range(8))))]
    return out


