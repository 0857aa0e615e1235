"""The copies of ``helpers`` a learner's code may import while it is graded.

The notebook run imports the full package. The run that judges an exercise imports a
copy in which that exercise's reference and the functions it refuses are stubs that
raise (an AST rewrite: their code is not in the process at all), every function of
``helpers/exercises/`` is such a stub too (hidden cases, known mistakes, which are close
to right answers) except the ``scenario_*`` ones the calls run, and
``helpers/checks.py`` is a harmless stand-in.
"""

from __future__ import annotations

import ast
import py_compile
import shutil
from pathlib import Path

from autograder import REPO_ROOT

HELPERS_DIR = REPO_ROOT / "helpers"



_CHECKS_STAND_IN = '''"""Stand-in for helpers.checks inside the isolated grading run (checks happen outside)."""


class CheckFailed(AssertionError):
    pass


def check(name, fn, *args, **kwargs):
    return None


def assert_close(*args, **kwargs):
    return None
'''


#: Part of the message of the stub that replaces the reference of the graded function.
REFERENCE_STUB_MARK = "is hidden while your own is graded"


def _stub_function(tree: ast.Module, name: str, label: str | None = None) -> bool:
    """Replace the body of every top-level ``def name`` by ``raise RuntimeError``
    (the message names the function as ``label``, by default ``helpers.<name>``)."""
    message = f"{label or f'helpers.{name}'} {REFERENCE_STUB_MARK}"
    found = False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            node.body = ast.parse(f"raise RuntimeError({message!r})").body
            node.decorator_list = []
            found = True
    return found


def _stub_file(py: Path, names, label_of) -> list[str]:
    tree = ast.parse(py.read_text(encoding="utf-8"))
    stubbed = sorted(n for n in names if _stub_function(tree, n, label_of(n)))
    if stubbed:
        py.write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    return stubbed


def hide_exercise(pkg: Path, name: str) -> dict[str, list[str]]:
    """In the copy ``pkg`` of ``helpers``: stub the reference of exercise ``name`` and the
    functions it refuses, and every function of the exercise modules
    (``helpers/exercises/*.py``: references, case builders with the hidden cases, known
    mistakes) except the ``scenario_*`` functions the grader's calls run. Returns
    ``{module file: stubbed names}``."""
    from helpers import exercises

    # the course's versions of the earlier functions it uses stay callable
    keep = {(f.__module__, f.__name__) for f in
            (exercises.get(dep).reference for dep in exercises.get(name).uses)}
    hidden: dict[str, list[str]] = {}
    for module, names in exercises.answer_functions(name).items():
        py = exercises.module_file(pkg, module)
        # helpers.reference is re-exported by the package: name it as learners call it
        prefix = "helpers" if module == "helpers.reference" else module
        stubbed = _stub_file(py, names, lambda n, p=prefix: f"{p}.{n}")
        if stubbed:
            hidden[str(py.relative_to(pkg))] = stubbed
    for py in sorted((pkg / "exercises").glob("*.py")):
        if py.name == "__init__.py":
            continue
        tree = ast.parse(py.read_text(encoding="utf-8"))
        names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and not n.name.startswith("scenario_")
                 and (f"helpers.exercises.{py.stem}", n.name) not in keep}
        stubbed = _stub_file(py, names, lambda n, m=py.stem: f"helpers.exercises.{m}.{n}")
        if stubbed:
            hidden[str(py.relative_to(pkg))] = stubbed
    return hidden


def prepare_helpers(dest: Path, strip: str | None = None, source: Path | None = None) -> Path:
    """Copy ``helpers/`` to ``dest/helpers`` (compiled); return ``dest`` (for sys.path).

    With ``strip`` (an exercise's name), the copy is the one that exercise is graded
    with (:func:`hide_exercise`), and its checks module is a no-op stand-in.
    """
    source = HELPERS_DIR if source is None else source
    pkg = dest / "helpers"
    if pkg.exists():
        shutil.rmtree(pkg)
    shutil.copytree(source, pkg, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".ipynb_checkpoints"))
    if strip is not None:
        from helpers import exercises

        ref = exercises.get(strip).reference
        hidden = hide_exercise(pkg, strip)
        where = str(exercises.module_file(pkg, ref.__module__).relative_to(pkg))
        if ref.__name__ not in hidden.get(where, ()):
            raise ValueError(f"{where} defines no function {ref.__name__} to hide")
        (pkg / "checks.py").write_text(_CHECKS_STAND_IN, encoding="utf-8")
    for py in pkg.rglob("*.py"):
        py_compile.compile(str(py), doraise=False, quiet=2)
    return dest


