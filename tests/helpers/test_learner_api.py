"""The learner's API (``helpers.LEARNER_API``): every name of ``helpers`` that a notebook
of ``notebooks/`` or ``solutions/`` imports is declared, and every declared name exists.

What a notebook takes from ``helpers`` is read from its code cells with ``ast`` (IPython
magics turned into Python first): ``from helpers import X``, ``import helpers.X``,
``helpers.X`` after ``import helpers``, and ``from helpers.M import X`` (then ``M`` is
declared and ``X`` exists in it; for ``helpers.checks`` also in its ``__all__`` and in the
stand-in the isolated grading run imports instead of it).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
from functools import lru_cache

import pytest

import helpers
from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
from autograder.isolation import helpers_copy


def _notebooks():
    return sorted(NOTEBOOKS_DIR.glob("*/*.ipynb")) + sorted(SOLUTIONS_DIR.glob("*/*.ipynb"))


def _code_cells(path):
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            yield ast.parse(transform(source))


def _uses(tree: ast.Module) -> set[tuple[str, str]]:
    """``(module, name)`` for every name of ``helpers`` (or of a submodule) ``tree`` takes."""
    out: set[tuple[str, str]] = set()
    package_names = set()                  # names bound to the package itself
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] != "helpers":
                    continue
                if len(parts) == 1:
                    package_names.add(alias.asname or "helpers")
                else:
                    out.add(("helpers", parts[1]))
                    if alias.asname is None:
                        package_names.add("helpers")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "helpers":
                continue
            if len(parts) > 1:
                out.add(("helpers", parts[1]))
            for alias in node.names:
                out.add((node.module, alias.name))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in package_names):
            out.add(("helpers", node.attr))
    return out


@lru_cache(maxsize=None)
def _all_uses() -> dict[tuple[str, str], list[str]]:
    """(module, name) -> the notebooks that take it."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in _notebooks():
        for tree in _code_cells(path):
            for use in _uses(tree):
                where = found.setdefault(use, [])
                if path.name not in where:
                    where.append(path.name)
    return found


def test_the_notebooks_are_read():
    uses = _all_uses()
    assert len(_notebooks()) >= 20
    for use in [("helpers", "softmax"), ("helpers", "checks"), ("helpers.checks", "check"),
                ("helpers.environment_check", "main")]:     # the last one behind a %run
        assert use in uses, use


def test_every_name_a_notebook_imports_from_helpers_is_declared():
    undeclared = {f"{module}.{name}": nbs for (module, name), nbs in _all_uses().items()
                  if module == "helpers" and name not in helpers.LEARNER_API}
    assert not undeclared, (
        f"notebooks use names of helpers that helpers.LEARNER_API does not declare: "
        f"{undeclared}; declare them (they become the learner's API) or stop using them")


def test_learner_api_has_no_duplicates():
    assert len(set(helpers.LEARNER_API)) == len(helpers.LEARNER_API)


@pytest.mark.parametrize("name", helpers.LEARNER_API)
def test_every_declared_name_exists(name):
    if hasattr(helpers, name):
        return
    assert importlib.util.find_spec(f"helpers.{name}") is not None, (
        f"helpers.{name} is declared in helpers.LEARNER_API but is gone")
    importlib.import_module(f"helpers.{name}")


def test_every_name_a_notebook_imports_from_a_helpers_module_exists():
    missing = {}
    for (module, name), nbs in _all_uses().items():
        if module == "helpers":
            continue
        if not hasattr(importlib.import_module(module), name):
            missing[f"{module}.{name}"] = nbs
    assert not missing, missing


def test_the_check_names_notebooks_import_are_public_and_in_the_grading_stand_in():
    """The isolated grading run imports a stand-in for helpers.checks: whatever a notebook
    imports from it must be there too (else a correct answer's cell fails in that run)."""
    from helpers import checks

    taken = {name for (module, name) in _all_uses() if module == "helpers.checks"}
    assert taken, "no notebook imports from helpers.checks?"
    stand_in = {n.name for n in ast.parse(helpers_copy._CHECKS_STAND_IN).body
                if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert taken <= set(checks.__all__), taken - set(checks.__all__)
    assert taken <= stand_in, taken - stand_in


def test_import_star_and_a_fresh_import_give_every_contract_function():
    """The contract functions are looked up on first use (``helpers.__getattr__``), so
    ``import helpers`` imports no module of it (neither the exercise framework nor an
    exercise: a grading child that needs none pays for none); ``from helpers import *`` and
    attribute access still give each of them, in a process where none was used yet, and
    the modules it gave before (``examples``: the catalogue's answers use it)."""
    import subprocess
    import sys

    code = ("import sys, helpers\n"
            "from helpers import _same\n"          # a private module: nothing else loaded
            "loaded = [m for m in sys.modules if m.startswith('helpers.') "
            "and m != 'helpers._same']\n"
            "ns = {}\nexec('from helpers import *', ns)\n"
            "missing = [n for n in helpers.CONTRACT_FUNCTIONS if not callable(ns.get(n))]\n"
            "print(len(loaded), missing, 'softmax' in dir(helpers),\n"
            "      hasattr(ns.get('examples'), 'WASH_X1'),\n"
            "      helpers.LEARNER_API[:len(helpers.CONTRACT_FUNCTIONS)] == "
            "helpers.CONTRACT_FUNCTIONS,\n"
            "      helpers.course.get('softmax').name == 'softmax')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(SOLUTIONS_DIR.parent), check=True).stdout.split()
    assert out == ["0", "[]", "True", "True", "True", "True"], out
