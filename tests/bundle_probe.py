"""Run inside a student bundle (its folder first on ``sys.path``): call every callable of
every module of the bundle's ``helpers`` with the visible inputs of the exercises a test
names, and report the outputs that look like the answer. Every kind of callable: its
functions (private ones too), its classes' methods (unbound, the first input as ``self``;
bound to an instance built with no argument; and bound to an instance built from some of
the case's inputs, in any order, called with the others), the methods of its compiled
patterns and its callable objects.

``python _bundle_probe.py BUNDLE IN.pkl OUT.pkl``. IN holds ``[(exercise, index, args,
kwargs, scenario, expected)]``; OUT gets ``[(where, exercise, index, output)]`` for every
call whose output is close to ``expected`` (the test then asks the judge) and is not
one of the inputs returned unchanged. Every exception is caught; each call has a time
limit. Standalone: it imports nothing of the course but the bundle's own ``helpers``.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import itertools
import os
import pickle
import pkgutil
import re
import signal
import sys
import warnings

#: Seconds per call. The slowest reference on a visible case takes 30 ms (train_bpe on
#: its Shakespeare case, measured on a busy 2-core machine): an answer the bundle computes
#: is done far inside the limit, while a drawing function given odd inputs (a size that
#: asks for thousands of patches) runs until stopped; with 2 s those took half the scan.
TIME_LIMIT = 0.5


class _TimeUp(BaseException):
    pass


def _alarm(signum, frame):
    raise _TimeUp()


def _close(expected, got) -> bool:
    import numpy as np

    if isinstance(expected, tuple):
        return (isinstance(got, (tuple, list)) and len(got) == len(expected)
                and all(_close(e, g) for e, g in zip(expected, got)))
    if isinstance(expected, (list, np.ndarray, float, int, np.number, bool, np.bool_)):
        try:
            e, g = np.asarray(expected), np.asarray(got)
            if e.shape != g.shape or e.dtype == object or g.dtype == object:
                return False
            if e.dtype.kind in "fc" or g.dtype.kind in "fc":
                return bool(np.allclose(g.astype(float), e.astype(float), rtol=1e-3,
                                        atol=1e-5, equal_nan=True))
            return bool(np.array_equal(e, g))
        except Exception:
            return False
    try:
        return bool(expected == got)
    except Exception:
        return False


def _inputs(args, kwargs):
    return list(args) + list(kwargs.values())


#: The methods of a compiled pattern a learner could answer with.
PATTERN_METHODS = ("findall", "finditer", "fullmatch", "match", "search", "split", "sub")


def _objects(module, seen: set[int]):
    """``(label, callable)`` for the module-level objects of ``module`` that are neither
    functions nor classes: the methods of a compiled pattern, a callable object of the
    course (a ``functools.partial``, an instance with ``__call__``). Each object once
    (``seen``: ids), under the first module that holds it."""
    import functools

    out = []
    for name, obj in sorted(vars(module).items()):
        if id(obj) in seen or inspect.ismodule(obj) or inspect.isclass(obj) or \
                inspect.isfunction(obj) or inspect.isbuiltin(obj) or hasattr(obj, "__wrapped__"):
            continue
        if isinstance(obj, re.Pattern):
            seen.add(id(obj))
            out += [(f"{module.__name__}:{name}.{m}", getattr(obj, m)) for m in PATTERN_METHODS]
        elif callable(obj) and (isinstance(obj, functools.partial) or
                                type(obj).__module__.startswith("helpers")):
            seen.add(id(obj))
            out.append((f"{module.__name__}:{name}", obj))
    return out


#: Instances of one class built from one case's inputs, at most.
MAX_BUILDS = 12


def _classes(module):
    """``(label, class)`` of the classes ``module`` defines (exceptions left out)."""
    return [(f"{module.__name__}:{name}", obj) for name, obj in sorted(vars(module).items())
            if inspect.isclass(obj) and getattr(obj, "__module__", None) == module.__name__
            and not issubclass(obj, BaseException)]


def _orders(n: int):
    """The ways to take some of ``n`` inputs to build an instance: one or two in any
    order, more in the case's order or reversed (a constructor rarely takes three inputs
    shuffled; all orders of five would be 325 builds per class and case)."""
    for k in range(1, n + 1):
        if k <= 2:
            yield from itertools.permutations(range(n), k)
            continue
        for chosen in itertools.combinations(range(n), k):
            yield chosen
            yield chosen[::-1]


def _built(cls, inputs):
    """``(how, instance, the other inputs)`` for the ways to build ``cls`` from some of a
    case's inputs (:func:`_orders`, at most :data:`MAX_BUILDS`), each within the time
    limit."""
    out = []
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return out
    for order in _orders(len(inputs)):
        if len(out) >= MAX_BUILDS:
            break
        try:
            signature.bind(*[inputs[i] for i in order])
        except TypeError:
            continue
        try:
            signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
            instance = cls(*copy.deepcopy([inputs[i] for i in order]))
        except BaseException:
            continue
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        rest = tuple(inputs[i] for i in range(len(inputs)) if i not in order)
        out.append((f"inputs {list(order)}", instance, rest))
    return out


def _built_calls(classes, args, kwargs):
    """``(label, bound method, args, kwargs)``: every method of every instance
    :func:`_built` makes from a case's inputs, with the inputs not used to build it."""
    out = []
    for label, cls in classes:
        for how, instance, rest in _built(cls, _inputs(args, kwargs)):
            for attr, member in sorted(vars(cls).items()):
                if inspect.isfunction(member) and (attr == "__call__" or not (
                        attr.startswith("__") and attr.endswith("__"))):
                    bound = member.__get__(instance, cls)
                    out += [(f"{label}({how}).{attr}", bound, a, k)
                            for a, k in _bindings(bound, rest, {})]
    return out


def _callables(module):
    """``(label, function)`` of a module: its own functions, and its classes' methods
    (static, class, and instance methods, the latter unbound: the case's first input
    plays ``self``, and bound to an instance when the class builds with no argument)."""
    out = []
    for name, obj in sorted(vars(module).items()):
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj):
            try:
                signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
                instance = obj()
            except BaseException:
                instance = None
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            for attr, member in sorted(vars(obj).items()):
                label = f"{module.__name__}:{name}.{attr}"
                if isinstance(member, staticmethod):
                    out.append((label, member.__func__))
                elif isinstance(member, classmethod):
                    out.append((label, member.__get__(None, obj)))
                elif inspect.isfunction(member):
                    out.append((label, member))
                    if instance is not None:
                        out.append((label + " (bound)", member.__get__(instance, obj)))
        elif callable(obj) and (inspect.isfunction(obj) or hasattr(obj, "__wrapped__")):
            out.append((f"{module.__name__}:{name}", obj))
    return out


def _bindings(fn, args, kwargs):
    """The ways to call ``fn`` with a case's inputs: as given, else positional only."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [(args, kwargs)]
    ways = []
    for a, k in ((args, kwargs), (args + tuple(kwargs.values()), {}), (args, {})):
        try:
            sig.bind(*a, **k)
        except TypeError:
            continue
        if (a, k) not in ways:
            ways.append((a, k))
    return ways[:1]


def main(bundle: str, inp: str, outp: str) -> None:
    sys.path.insert(0, bundle)
    os.environ.setdefault("MPLBACKEND", "Agg")
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    import helpers

    if not os.path.realpath(helpers.__file__).startswith(os.path.realpath(bundle)):
        raise SystemExit(f"helpers comes from {helpers.__file__}, not from {bundle}")
    import numpy as np

    np.seterr(all="ignore")
    with open(inp, "rb") as f:
        cases = pickle.load(f)
    modules = [helpers]
    for info in pkgutil.walk_packages(helpers.__path__, "helpers."):
        try:
            modules.append(importlib.import_module(info.name))
        except BaseException as exc:          # a module that does not import: say so
            print(f"cannot import {info.name}: {exc!r}", file=sys.stderr)
    seen: set[int] = set()
    functions = [c for m in modules for c in _callables(m) + _objects(m, seen)]
    classes = [c for m in modules for c in _classes(m)]
    found = []
    calls = 0
    for name, index, args, kwargs, scenario, expected in cases:
        scene = None
        if scenario:
            try:
                module, _, attr = scenario.partition(":")
                scene = getattr(importlib.import_module(module), attr)
            except BaseException:
                continue                      # the bundle runs no such scenario
        todo = [(label, fn, a, k) for label, fn in functions for a, k in _bindings(fn, args, kwargs)]
        for label, fn, a, k in todo + _built_calls(classes, args, kwargs):
            a, k = copy.deepcopy(a), copy.deepcopy(k)
            original = copy.deepcopy(_inputs(a, k))
            calls += 1
            try:
                signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
                got = scene(fn, *a, **k) if scene else fn(*a, **k)
            except BaseException:
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                try:
                    import matplotlib.pyplot as plt
                    plt.close("all")
                except BaseException:
                    pass
            if not _close(expected, got):
                continue
            if any(_close(x, got) for x in original):      # an input, unchanged
                continue
            try:
                pickle.dumps(got)
            except BaseException:
                continue
            found.append((label, name, index, got))
    print(f"{len(functions)} functions of {len(modules)} modules, {calls} calls",
          file=sys.stderr)
    with open(outp, "wb") as f:
        pickle.dump(found, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
