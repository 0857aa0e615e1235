"""The copies of ``helpers`` a learner's code may import while it is graded.

The notebook run imports a copy (:func:`hide_cases`) in which every function of
``helpers/exercises/`` that builds cases, draws inputs or is a known mistake is a stub
that raises (the same AST rewrite as below): no hidden case (written or drawn), no known
mistake, no case builder is in its process. What judges an output stays (the package's
``__init__.py``, ``_compare.py``, ``_scenarios.py``, the ``scenario_*`` functions, and
what each ``EXERCISE`` declaration needs but ``diagnose=``), and each exercise gets its
visible cases back as stored plain data (``helpers/exercises/_stored``, as a student
bundle has them), so the real ``check`` of the notebook's test cells runs the visible
cases as the course does: it is the witness for tampering flags, and decides no points.
The course's references stay there: the notebooks' demos, plots and worked examples
call them, and nothing of that run is a verdict.

The run that judges an exercise imports a
copy in which that exercise's reference and the functions it refuses are stubs that
raise (an AST rewrite: their code is not in the process at all), every function of
``helpers/exercises/`` is such a stub too (hidden cases, known mistakes, which are close
to right answers) except the ``scenario_*`` ones the calls run, and
``helpers/checks.py`` (what notebooks import: ``check``, ``quiet``, ``assert_close``,
``CheckFailed``) is a harmless stand-in. It stays one after the judge moved to
``helpers/judge.py`` (which the grader imports, outside the run; the copy's judge holds
no case): the kept cells of the learner's notebook import it, and may call ``check`` or
``assert_close`` (in an answer cell). The real ``check`` would need the cases, which
are stubs here, and a failing ``assert_close`` would stop a cell: the verdict is not
reached in this process, so neither may decide anything in it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib._bootstrap_external
import importlib.util
import os
import shutil
from functools import lru_cache
from pathlib import Path

from autograder import REPO_ROOT

HELPERS_DIR = REPO_ROOT / "helpers"



_CHECKS_STAND_IN = '''"""Stand-in for helpers.checks inside the isolated grading run (checks happen outside)."""

import contextlib
import warnings


class CheckFailed(AssertionError):
    pass


def check(name, fn, *args, **kwargs):
    return None


def assert_close(*args, **kwargs):
    return None


@contextlib.contextmanager
def quiet():
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield
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


@lru_cache(maxsize=None)
def _functions(text: str) -> tuple[str, ...]:
    """The names of the top-level functions of a module's source."""
    return tuple(n.name for n in ast.parse(text).body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))


@lru_cache(maxsize=None)
def _stubbed(text: str, names: frozenset[str], label: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with the functions ``names`` stubbed (labelled ``label.<name>``), and the
    names that were found. Cached: every copy of a grading process stubs the same
    exercise modules the same way."""
    if not names & set(_functions(text)):
        return text, ()
    tree = ast.parse(text)
    stubbed = tuple(sorted(n for n in names if _stub_function(tree, n, f"{label}.{n}")))
    return ast.unparse(tree) + "\n", stubbed


def _stub_file(py: Path, names, label: str) -> list[str]:
    text = py.read_text(encoding="utf-8")
    out, stubbed = _stubbed(text, frozenset(names), label)
    if stubbed:
        _unlink_write(py, out.encode("utf-8"))
    return list(stubbed)


def _unlink_write(path: Path, data: bytes) -> None:
    """Replace ``path`` (maybe a hard link into the store) by a new file."""
    path.unlink(missing_ok=True)
    path.write_bytes(data)


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
        stubbed = _stub_file(py, names, prefix)
        if stubbed:
            hidden[str(py.relative_to(pkg))] = stubbed
    for py in sorted((pkg / "exercises").glob("*.py")):
        if py.name == "__init__.py":
            continue
        module = f"helpers.exercises.{py.stem}"
        names = {n for n in _functions(py.read_text(encoding="utf-8"))
                 if not n.startswith("scenario_") and (module, n) not in keep}
        stubbed = _stub_file(py, names, module)
        if stubbed:
            hidden[str(py.relative_to(pkg))] = stubbed
    return hidden


#: Files of ``helpers/exercises/`` the notebook run keeps whole: the package (declarations,
#: contracts, drawing), how outputs are compared, and the scenarios' scripts.
NOTEBOOK_RUN_KEEPS = ("__init__.py", "_compare.py", "_scenarios.py")
#: The folder of the notebook-run copy's stored visible cases (``helpers/exercises/_stored``).
STORED = "_stored"


def _decorated_by_exercise(node: ast.AST) -> bool:
    return any("EXERCISE" in ast.unparse(d) for d in getattr(node, "decorator_list", []))


@lru_cache(maxsize=None)
def _judging_functions(text: str) -> frozenset[str]:
    """The top-level functions of an exercise module that judge an output: what its
    ``EXERCISE`` declaration (but for ``diagnose=``, which names known mistakes) and its
    ``scenario_*`` functions reach, and what the module's other top-level statements run
    on import. Functions decorated by ``EXERCISE`` (the case builder, known mistakes) are
    never among them."""
    tree = ast.parse(text)
    defs = {n.name: n for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and not _decorated_by_exercise(n)}
    roots: list[ast.AST] = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign,
                                                                  ast.Expr))]
    roots += [n for name, n in defs.items() if name.startswith("scenario_")]
    for node in roots:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            node.value.keywords = [k for k in node.value.keywords if k.arg != "diagnose"]
    keep: set[str] = {n for n in defs if n.startswith("scenario_")}
    todo = list(roots)
    while todo:
        node = todo.pop()
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for name in used & set(defs) - keep:
            keep.add(name)
            todo.append(defs[name])
    return frozenset(keep)


_STORED_REGISTRATION = """
from helpers.exercises import _stored as _stored_visible_cases
EXERCISE.cases(lambda: _stored_visible_cases.load({name!r}))
EXERCISE.custom_diagnose = None
"""


#: helpers/exercises/_stored/__init__.py of a student bundle and of the notebook run's copy:
#: the visible cases kept as plain data (and the sampling cases' stored logits).
STORED_INIT = '''"""The visible cases of the bundle's exercises, with their expected outputs, as plain
data (written by ``python -m autograder release --bundle`` and by the grader for its
notebook run)."""

from pathlib import Path

from helpers import _wire

_HERE = Path(__file__).parent


def load(name):
    """The case fields of exercise ``name`` (see ``helpers.exercises.case``), or []."""
    path = _HERE / f"{name}.npz"
    if not path.exists():
        return []
    return list(_wire.decode(path.read_bytes(), max_bytes=256 * 1024 * 1024))


def next_token_logits(name, fingerprint, fallback):
    """A stand-in for the course model's forward pass while exercise ``name`` is judged:
    the stored last row of logits for a (model, heads, context) the visible sampling
    cases can reach, else ``fallback``."""
    table = {}

    def forward(token_ids, params, n_heads):
        if not table:
            path = _HERE / f"{name}_logits.npz"
            if path.exists():
                data = _wire.decode(path.read_bytes(), max_bytes=256 * 1024 * 1024)
                table.update(zip(data["keys"], data["logits"]))
            table.setdefault(None, None)
        import numpy as np

        ids = np.asarray(token_ids).astype(np.int64).reshape(-1).tolist()
        row = table.get(f"{fingerprint(params)}:{n_heads}:{ids}")
        return fallback(token_ids, params, n_heads) if row is None else row[None, :]

    return forward
'''


def visible_case_fields(name: str) -> list[dict]:
    """The visible cases of ``name`` as :func:`helpers.exercises.case` fields, each with
    its expected output computed by the reference (in the trusted process): what a
    student bundle and the notebook run's copy store of them."""
    from helpers import exercises

    out = []
    for c in exercises.get(name).all_cases():
        if c.hidden:
            continue
        out.append({"name": c.name, "description": c.description, "args": c.args,
                    "kwargs": c.kwargs, "group": c.group, "hidden": False,
                    "scenario": c.scenario,
                    "answer": None if c.is_sampling else c.expected()})
    return out


@lru_cache(maxsize=None)
def _stored_cases(name: str) -> bytes:
    """Exercise ``name``'s visible cases with their expected outputs, as plain data (what
    a student bundle stores for them, :func:`visible_case_fields`)."""
    from autograder.isolation import wire

    return wire.encode(visible_case_fields(name))


def hide_cases(pkg: Path, store: "_Store") -> dict[str, list[str]]:
    """In the copy ``pkg`` of ``helpers`` (the notebook run's): stub every function of
    ``helpers/exercises/`` that builds cases, draws inputs or is a known mistake (every
    one but those of :data:`NOTEBOOK_RUN_KEEPS`, the ``scenario_*`` ones and what an
    exercise's declaration needs to judge an output), and give each exercise its visible
    cases back as stored plain data, as a student bundle has them. The references stay:
    the notebook's demos call them, and nothing of this run decides a point. Returns
    ``{module file: stubbed names}``."""
    from helpers import exercises

    hidden: dict[str, list[str]] = {}
    ex_dir = pkg / "exercises"
    for py in sorted(ex_dir.glob("*.py")):
        if py.name in NOTEBOOK_RUN_KEEPS:
            continue
        text = py.read_text(encoding="utf-8")
        module = f"helpers.exercises.{py.stem}"
        is_exercise = py.stem in exercises.names()
        keep = _judging_functions(text) if is_exercise else frozenset(
            n for n in _functions(text) if n.startswith("scenario_"))
        names = set(_functions(text)) - keep
        out, stubbed = _stubbed(text, frozenset(names), module)
        if is_exercise:
            out += _STORED_REGISTRATION.format(name=py.stem)
        if stubbed or is_exercise:
            _unlink_write(py, out.encode("utf-8"))
        if stubbed:
            hidden[str(py.relative_to(pkg))] = list(stubbed)
    from autograder.isolation import wire

    stored = ex_dir / STORED
    stored.mkdir()
    store.put(stored / "__init__.py", STORED_INIT.encode("utf-8"))
    store.put(pkg / "_wire.py", Path(wire.__file__).read_bytes())
    for name in exercises.names():
        store.put(stored / f"{name}.npz", _stored_cases(name))
    return hidden


@lru_cache(maxsize=None)
def _bytecode(text: str) -> bytes:
    """The ``.pyc`` of a module's source, checked by the source's hash (PEP 552), so that
    one compiled file serves every copy holding the same source, whatever its time (the
    import system sets the code's file name to the module's path when it loads it)."""
    data = text.encode("utf-8")
    code = compile(data, "<helpers>", "exec", dont_inherit=True)
    return importlib._bootstrap_external._code_to_hash_pyc(
        code, importlib.util.source_hash(data), checked=True)


class _Store:
    """Content-addressed files in a folder of the grader's own (mode 0700, never shown to
    a child): each copy of ``helpers`` is made of hard links to them, so the ~130 files
    of a copy are written once per grading process, not once per exercise."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(mode=0o700, exist_ok=True)

    def put(self, dest: Path, data: bytes) -> None:
        stored = self.folder / hashlib.sha256(data).hexdigest()
        if not stored.exists():
            tmp = stored.with_name(f".{stored.name}.{os.getpid()}")
            tmp.write_bytes(data)
            tmp.chmod(0o644)
            os.replace(tmp, stored)
        try:
            os.link(stored, dest)
        except OSError:                        # another file system, or no links
            dest.write_bytes(data)


@lru_cache(maxsize=None)
def _read(path: Path, mtime_ns: int, size: int) -> bytes:
    return path.read_bytes()


def _copy_tree(source: Path, pkg: Path, store: _Store) -> None:
    for folder, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".ipynb_checkpoints")]
        rel = Path(folder).relative_to(source)
        (pkg / rel).mkdir(exist_ok=True)
        for name in files:
            if not name.endswith(".pyc"):
                src = Path(folder) / name
                st = src.stat()
                store.put(pkg / rel / name, _read(src, st.st_mtime_ns, st.st_size))


def _compile_tree(pkg: Path, store: _Store) -> None:
    for py in pkg.rglob("*.py"):
        try:
            pyc = _bytecode(py.read_text(encoding="utf-8"))
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue                           # imported from source (and fails there)
        target = Path(importlib.util.cache_from_source(str(py)))
        target.parent.mkdir(exist_ok=True)
        store.put(target, pyc)


def prepare_helpers(dest: Path, strip: str | None = None, source: Path | None = None,
                    notebook_run: bool = False) -> Path:
    """Copy ``helpers/`` to ``dest/helpers`` (compiled); return ``dest`` (for sys.path).

    With ``strip`` (an exercise's name), the copy is the one that exercise is graded
    with (:func:`hide_exercise`), and its checks module is a no-op stand-in. With
    ``notebook_run``, the copy is the notebook run's (:func:`hide_cases`): no case
    builder, hidden case or known mistake, the visible cases stored, the real checks.
    Without either, the full package (the sandbox's own tests and benchmark).
    """
    if strip is not None and notebook_run:
        raise ValueError("a copy is either an exercise's or the notebook run's")
    source = HELPERS_DIR if source is None else source
    pkg = dest / "helpers"
    if pkg.exists():
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    store = _Store(dest.parent / ".helpers-store")
    _copy_tree(source, pkg, store)
    if strip is not None:
        from helpers import exercises

        ref = exercises.get(strip).reference
        hidden = hide_exercise(pkg, strip)
        where = str(exercises.module_file(pkg, ref.__module__).relative_to(pkg))
        if ref.__name__ not in hidden.get(where, ()):
            raise ValueError(f"{where} defines no function {ref.__name__} to hide")
        _unlink_write(pkg / "checks.py", _CHECKS_STAND_IN.encode("utf-8"))
    elif notebook_run:
        hide_cases(pkg, store)
    _compile_tree(pkg, store)
    return dest
