"""The student bundle (``release --bundle``): homework that does not ship its answers.

Built once for every assignment (and once with earlier assignments revealed); checked:
no function of the bundle has the body of a graded exercise's answer (the reference's
or the solution notebook's, compared by syntax tree with every name renamed), no hidden
case and no hidden case's expected output (among the stored cases and the worked
examples' recorded outputs), no ``solutions/``, tests or examples, no bytecode; every
notebook of the bundle runs top to bottom with nothing answered (only the answer cells'
checks fail, each saying it is not implemented yet: test_bundle_install.py runs them with
the bundle's own command) and with the model answers (every check passes, no cell fails);
a notebook handed in from the bundle is graded like any other.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.release import bundle as bundle_mod
from bundle_scan import HOMEWORK, answers_in, left_out as _left_out, probed_in
from catalogue import student_notebook
from autograder.engine import student_helpers
from helpers import course

ALL = list(course.NOTEBOOKS)


@pytest.fixture
def built(whole_course_bundle) -> Path:
    """The whole course's bundle (tests/conftest.py builds it once per session)."""
    return whole_course_bundle


class _Canonical(ast.NodeTransformer):
    """Every identifier renamed to its order of first appearance; docstrings dropped."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def _n(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(self._n(node.id), node.ctx), node)

    def visit_arg(self, node):
        return ast.copy_location(ast.arg(self._n(node.arg)), node)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self._n(node.attr)
        return node


def _body_key(fn: ast.FunctionDef) -> str:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    import copy

    args = copy.deepcopy(fn.args)
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None                  # annotations are no part of the answer
    node = ast.FunctionDef(name="f", args=args, body=body or [ast.Pass()], decorator_list=[],
                           returns=None, type_comment=None)
    return ast.dump(_Canonical().visit(ast.parse(ast.unparse(ast.fix_missing_locations(node)))))


def _functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _refused_functions(spec: str) -> list[ast.FunctionDef]:
    """The function definitions ``spec`` (as its defining module names it) names in the
    repository's ``helpers``: a function, every method of a class, or one method
    (``Class.method``)."""
    module, _, attr = spec.partition(":")
    path = course.module_file(REPO_ROOT / "helpers", module)
    if not path.exists():                      # a private module the bundle drops
        return []
    name, _, method = attr.partition(".")
    for node in ast.parse(path.read_text()).body:
        if getattr(node, "name", None) != name:
            continue
        if isinstance(node, ast.ClassDef):
            return [f for f in _functions(node) if method in ("", f.name)]
        return [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    return []


def _answer_keys() -> dict[str, str]:
    """Canonical body -> where it comes from, for every graded exercise's reference (and
    every function, class method or method it refuses) and every function of the solution
    notebooks' answer cells."""
    keys: dict[str, str] = {}
    for name in course.names():
        ex = course.get(name)
        for spec in [course.qualified(ex.reference), *map(student_helpers.defined_at, ex.refuse)]:
            if spec in bundle_mod.COMPOSITES:
                continue
            for fn in _refused_functions(spec):
                keys[_body_key(fn)] = f"{spec} ({fn.name})"
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell["cell_type"] == "code" and meta.get("solution"):
                code = "".join(cell["source"])
                try:
                    tree = ast.parse(code)
                except SyntaxError:
                    continue
                for fn in _functions(tree):
                    keys[_body_key(fn)] = f"{path.stem} answer cell {fn.name}"
    return keys


def test_no_function_of_the_bundle_has_an_answers_body(built):
    answers = _answer_keys()
    assert len(answers) >= len(course.names())            # the comparison has material
    found = []
    for py in sorted((built / "helpers").rglob("*.py")):
        for fn in _functions(ast.parse(py.read_text(encoding="utf-8"))):
            where = answers.get(_body_key(fn))
            if where:
                found.append(f"{py.relative_to(built)}:{fn.name} is {where}")
    assert not found, found


def test_the_comparison_sees_through_renaming():
    src = inspect.getsource(sys.modules["helpers.reference"].softmax)
    class Rename(ast.NodeTransformer):             # every variable renamed, as a copier would
        def visit_Name(self, node):
            return ast.Name("my_" + node.id, node.ctx) if node.id != "np" else node

        def visit_arg(self, node):
            return ast.arg("my_" + node.arg)

    tree = ast.parse(ast.unparse(Rename().visit(ast.parse(src.replace("def softmax", "def mine")))))
    answers = _answer_keys()
    assert _body_key(_functions(tree)[0]) in answers


def test_no_hidden_case_solution_test_or_bytecode_in_the_bundle(built):
    files = [p for p in built.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix == ".pyc" or "__pycache__" in p.parts]
    for folder in ("solutions", "tests", "grading-output", "autograder"):
        assert not (built / folder).exists(), folder
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files
                     if p.suffix in (".py", ".md", ".ipynb", ".txt", ".json", ".yml"))
    notebooks = "\n".join(p.read_text() for p in files if p.suffix == ".ipynb")
    assert "BEGIN HIDDEN TESTS" not in notebooks and "BEGIN SOLUTION" not in notebooks
    hidden = [c for n in course.names() for c in course.get(n).all_cases() if c.hidden]
    assert hidden
    leaked = [c.description for c in hidden if len(c.description) > 25 and c.description in text]
    assert not leaked, leaked[:5]
    with _bundle_codec(built) as wire:              # read the stored cases as the bundle does
        stored = {p.stem: wire.decode(p.read_bytes(), max_bytes=1 << 28)
                  for p in (built / "helpers" / "exercises" / "_stored").glob("*.wire")
                  if not p.stem.endswith("_logits")}
    assert set(stored) == set(course.names())
    for name, cases in stored.items():
        visible = {c.name for c in course.get(name).all_cases() if not c.hidden}
        assert cases and {c["name"] for c in cases} <= visible, name
        assert not any(c["hidden"] for c in cases)


def _run_checks(bundle: Path, assignment: str, stubs: bool) -> dict[str, list[str]]:
    """grade_id -> error names of the test cells of ``assignment`` run in ``bundle``'s
    helpers, with the solutions' answers or the released stubs."""
    import nbformat
    from nbclient import NotebookClient

    path = bundle / "notebooks" / assignment / f"{assignment}.ipynb"
    path.write_text(json.dumps(student_notebook(assignment, {}, stubs=stubs)))
    nb = nbformat.read(path, as_version=4)
    env = dict(os.environ, PYTHONPATH=str(bundle), PYTHONDONTWRITEBYTECODE="1")   # bundle as built
    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    old = dict(os.environ)
    os.environ.update(env)                     # the kernel imports the bundle's helpers
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            out[meta["grade_id"]] = [o.get("evalue", "") for o in cell.get("outputs", [])
                                     if o.get("output_type") == "error"]
    return out


def _execute(bundle: Path, nb: dict, name: str, tmp: Path) -> list[tuple[int, dict, str]]:
    """``(index, cell, "ename: evalue")`` of every cell of ``nb`` that fails when it runs
    top to bottom in a kernel importing ``bundle``'s helpers (nothing of the repository)."""
    import shutil

    import nbformat
    from nbclient import NotebookClient

    work = tmp / name
    shutil.copytree(bundle / "notebooks" / name, work)
    node = nbformat.reads(json.dumps(nb), as_version=4)
    env = dict(os.environ, PYTHONPATH=str(bundle), MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1")       # no __pycache__ written into the bundle
    env.pop("PYTEST_CURRENT_TEST", None)
    NotebookClient(node, timeout=300, kernel_name="python3", allow_errors=True,
                   store_widget_state=False,
                   resources={"metadata": {"path": str(work)}}).execute(env=env, cwd=str(work))
    return [(i, cell, f"{o.get('ename')}: {o.get('evalue')}") for i, cell in enumerate(node.cells)
            for o in cell.get("outputs", []) if o.get("output_type") == "error"]


@pytest.mark.slow
def test_every_notebook_of_the_bundle_runs_answered(built, tmp_path):
    """Each notebook of the whole-course bundle, run with the model answers filled in, in
    the bundle's helpers: every cell runs, so every instant check passes. (As handed out,
    with nothing answered, every notebook runs through the bundle's own "check my
    notebooks" command in a fresh install: test_bundle_install.py.)"""
    problems, asked = [], []
    for name in ALL:
        answered = bundle_mod._variant(name, answered=True)
        for i, c, e in _execute(built, answered, name, tmp_path / "answered"):
            if _asks_for_a_left_out_function(c, e, asked and asked[-1][0] == name):
                asked.append((name, i))
            else:
                problems.append(f"{name} answered, cell {i}: {e[:300]}")
    assert not problems, "\n".join(problems)
    # Only notebook 14's SmolLM2 section is not recorded; in this bundle (nothing
    # revealed) it stops at its first call of notebook 10's block, as documented.
    assert {n for n, _ in asked} <= {"14_interpretability"}, asked


def _asks_for_a_left_out_function(cell, error: str, after_one: bool) -> bool:
    """A cell tagged ``not-recorded`` (bundle.NOT_RECORDED_TAG) may stop at a left-out
    function with the stub's words (or, after such a cell, for what it did not define)."""
    if bundle_mod.NOT_RECORDED_TAG not in cell.metadata.get("tags", ()):
        return False
    return ("NotImplementedError" in error and student_helpers.BUNDLE_MARK in error) or \
        (after_one and error.startswith("NameError"))


def test_checks_pass_on_right_answers_and_fail_on_stubs_with_earlier_homework_revealed(
        tmp_path):
    assignment = "07_transformer_block"            # homework that builds on revealed ones
    built = tmp_path / "hw"
    bundle_mod.build(built, [assignment], reveal=[a for a in ALL if a < assignment],
                     worked_examples=False)
    right = _run_checks(built, assignment, stubs=False)
    assert right and not {g: e for g, e in right.items() if e}, right
    stubs = _run_checks(built, assignment, stubs=True)
    assert all(stubs.values()), {g: e for g, e in stubs.items() if not e}
    assert all("not implemented yet" in " ".join(e) for e in stubs.values()), stubs


def test_sampling_cases_are_judged_in_the_bundle_without_the_model(tmp_path):
    """The visible sampling cases of generate run in the bundle (the course model's
    next-token logits are stored for every context they can reach): the model answer
    passes, a generate that ignores the temperature fails on them."""
    built = tmp_path / "hw"
    bundle_mod.build(built, ["08_language_model"], reveal=[a for a in ALL if a < "08"],
                     worked_examples=False)
    stored = built / "helpers" / "exercises" / "_stored" / "generate_logits.wire"
    assert stored.is_file()
    answers = "\n".join(
        "".join(c["source"]) for c in bundle_mod._variant("08_language_model", True)["cells"]
        if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    # The answers live in a namespace of their own: nothing in __main__, so a left-out
    # course function cannot fall back on the learner's own and the judge must use the
    # stored logits.
    code = f"""
import sys, numpy as np
sys.path.insert(0, {str(built)!r})
from helpers.checks import check, CheckFailed
from helpers import reference
assert "_yours" in open(reference.__file__).read()            # the bundle's, not the course's
ns = {{"__name__": "answers"}}
exec("import numpy as np\\nfrom helpers import softmax, layer_norm, transformer_block\\n"
     + {answers!r}, ns)
check("generate", ns["generate"], group="sampling")
print("RIGHT PASSES")
def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    return ns["generate"](token_ids, params, n_heads, n_new, 1.0 if temperature else 0.0, rng)
try:
    check("generate", generate, group="sampling")
    print("WRONG PASSES")
except CheckFailed as exc:
    print("WRONG FAILS", exc)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=600,
                            env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "RIGHT PASSES" in result.stdout, result.stdout
    assert "WRONG FAILS" in result.stdout and "temperature" in result.stdout, result.stdout


def test_a_demo_needing_a_left_out_function_replays_the_course_or_uses_the_learners_own(built):
    code = f"""
import sys
sys.path.insert(0, {str(built)!r})
import numpy as np, helpers, __main__
from helpers import examples
print("RECORDED", helpers.pairwise_scores(examples.CAT_X).shape)   # notebook 01's example
try:
    helpers.softmax(np.array([0.125, 4.5, -3.0]))                  # nobody's example
except NotImplementedError as exc:
    print("MESSAGE", exc)
def softmax(z, axis=-1):
    return np.full(np.shape(z), 7.0)
__main__.softmax = softmax
print("OWN", helpers.softmax(np.array([0.125, 4.5, -3.0])))
from helpers import _yours
print("READ", sorted(_yours.table().tables))       # the recordings this kernel read
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=built, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "RECORDED (4, 4)" in result.stdout, result.stdout
    assert "exercise softmax of notebook 02_softmax" in result.stdout
    assert "OWN [7. 7. 7.]" in result.stdout
    # a kernel reads the recordings of the functions it calls only (notebook 12's training
    # demo alone records hundreds of megabytes), one file per function
    assert "READ ['helpers.reference:pairwise_scores', 'helpers.reference:softmax']" in \
        result.stdout, result.stdout
    folder = built / "helpers" / "_worked_examples"
    files = sorted(p.name for p in folder.iterdir())
    assert "helpers.reference.pairwise_scores.npz" in files and len(files) > 10, files


#: The most the whole course's recorded worked examples may take (75 MB when notebook 12
#: recorded outputs alone; its forward passes with their caches took 330 MB more).
MAX_WORKED_EXAMPLES_BYTES = 120 * 1024 * 1024


def test_the_recorded_worked_examples_stay_small(built):
    files = list((built / "helpers" / "_worked_examples").glob("*.npz"))
    sizes = {p.name: p.stat().st_size for p in files}
    assert sum(sizes.values()) <= MAX_WORKED_EXAMPLES_BYTES, sorted(
        sizes.items(), key=lambda kv: -kv[1])[:5]


@contextlib.contextmanager
def _bundle_codec(built: Path):
    """The bundle's own codec (``helpers/_wire.py`` on its ground floor
    ``helpers/_wire_read.py``), loaded from its files beside this process's ``helpers``."""
    from importlib import util

    names = {"_wire_read": "helpers._wire_read", "_wire": "_bundle_wire"}
    try:
        for stem, name in names.items():
            spec = util.spec_from_file_location(name, built / "helpers" / f"{stem}.py")
            module = util.module_from_spec(spec)
            sys.modules[name] = module             # dataclasses look their module up
            spec.loader.exec_module(module)
        yield module
    finally:
        for name in names.values():
            sys.modules.pop(name, None)


def _table_arrays(built: Path) -> list:
    """Every array of the bundle's recorded worked examples, read as the bundle reads them."""
    import numpy as np

    with _bundle_codec(built) as wire:
        parts = [wire.decode(p.read_bytes(), max_bytes=1 << 30)
                 for p in sorted((built / "helpers" / "_worked_examples").glob("*.npz"))]
    found = [a for data in parts for a in data["arrays"].values()]

    def walk(x):
        if isinstance(x, np.ndarray):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)

    for data in parts:
        walk(data["entries"])
    return found


def test_no_hidden_cases_expected_output_among_the_worked_examples(built):
    import numpy as np

    by_shape: dict = {}
    for a in _table_arrays(built):
        if a.dtype.kind in "biufc":
            by_shape.setdefault(a.shape, []).append(a)
    assert sum(len(v) for v in by_shape.values()) > 100           # there is material
    from helpers import examples

    # the course's example data ships in the bundle anyway (helpers/examples.py)
    constants = [np.asarray(v) for v in vars(examples).values() if isinstance(v, np.ndarray)]
    leaked = []
    for name in course.names():
        for c in course.get(name).all_cases():
            if not c.hidden or c.is_sampling:
                continue
            out = c.expected()
            leaves = list(out) if isinstance(out, (tuple, list)) else [out]
            for leaf in leaves:
                leaf = np.asarray(leaf)
                if leaf.dtype.kind not in "biufc" or leaf.size < 6:
                    continue                        # a scalar or a tiny array says nothing
                if np.allclose(leaf, np.clip(np.round(leaf), 0, 1), rtol=0, atol=1e-12):
                    continue                        # a mask or one-hot weights: a pattern
                if any(k.shape == leaf.shape and np.allclose(k, leaf) for k in constants):
                    continue
                if any(np.allclose(leaf, t, rtol=1e-9, atol=1e-12)
                       for t in by_shape.get(leaf.shape, ())):
                    leaked.append(f"{name}:{c.name} {leaf.shape}")
    assert not leaked, leaked


def test_the_kept_composites_are_no_exercises_reference():
    references = {course.qualified(course.get(n).reference) for n in course.names()}
    assert bundle_mod.COMPOSITES and not bundle_mod.COMPOSITES & references


def _answered(nb: dict, assignment: str) -> dict:
    """A bundle notebook with a learner's correct answers (the solutions' code) filled in."""
    solved = student_notebook(assignment, {}, stubs=False)
    answers = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in solved["cells"]
               if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    return nb


def test_a_notebook_from_the_bundle_is_graded_like_any_other(built, tmp_path):
    sub = tmp_path / "sub" / "alice" / "02_softmax"
    sub.mkdir(parents=True)
    nb = json.loads((built / "notebooks" / "02_softmax" / "02_softmax.ipynb").read_text())
    (sub / "02_softmax.ipynb").write_text(json.dumps(_answered(nb, "02_softmax")))
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "sub"),
                             "--out", str(out)], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    import csv

    row = next(r for r in csv.DictReader((out / "summary.csv").open())
               if r["assignment"] == "02_softmax")
    assert (row["points"], row["max_points"], row["status"]) == ("4", "4", "ok"), row


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org",
                    "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True,
                   capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_git_route_clones_are_collected_and_graded(built, tmp_path):
    """docs/homework.md's Git route: the bundle's contents as the template repository,
    each student a clone with their commits, the instructor's clones collected (only
    their notebooks/, never the course's own files) and graded."""
    import csv
    import shutil

    template = tmp_path / "template"
    shutil.copytree(built, template)
    _git("init", "-q", cwd=template)
    _git("add", "-A", cwd=template)
    _git("commit", "-q", "-m", "homework", cwd=template)
    for student in ("alice", "bob"):
        _git("clone", "-q", str(template), str(tmp_path / "students" / student), cwd=tmp_path)
    mine = tmp_path / "students" / "alice" / "notebooks" / "02_softmax" / "02_softmax.ipynb"
    mine.write_text(json.dumps(_answered(json.loads(mine.read_text()), "02_softmax")))
    _git("commit", "-q", "-am", "my softmax", cwd=mine.parents[2])
    for student in ("alice", "bob"):                    # the instructor clones every repo
        _git("clone", "-q", str(tmp_path / "students" / student),
             str(tmp_path / "repos" / student), cwd=tmp_path)

    subs = tmp_path / "subs"
    done = subprocess.run([sys.executable, "-m", "autograder", "collect", str(tmp_path / "repos"),
                           "--out", str(subs)], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    for student in ("alice", "bob"):
        placed = sorted(p.parent.name for p in (subs / student).glob("*/*.ipynb"))
        assert placed == sorted(ALL), placed
    copied = [p for p in subs.rglob("*") if p.is_file()]
    assert not [p for p in copied if p.suffix == ".py" or ".git" in p.parts], copied
    for student in ("alice", "bob"):                    # grade 02 only: keep the test short
        for folder in (subs / student).iterdir():
            if folder.name != "02_softmax":
                shutil.rmtree(folder)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    rows = {r["student_id"]: r for r in csv.DictReader((out / "summary.csv").open())
            if r["assignment"] == "02_softmax"}
    assert (rows["alice"]["points"], rows["alice"]["max_points"]) == ("4", "4"), rows
    assert rows["bob"]["points"] == "0", rows


def test_reveal_ships_the_answers_of_earlier_homework(tmp_path):
    out = tmp_path / "hw2"
    zip_path = bundle_mod.build(out, ["02_softmax"], reveal=["01_dot_products"],
                                worked_examples=False)
    assert zip_path.is_file()
    ref = (out / "helpers" / "reference.py").read_text()
    tree = ast.parse(ref)
    bodies = {fn.name: ast.unparse(fn) for fn in _functions(tree)}
    assert "_yours" not in bodies["dot"]              # revealed: the course's own code
    assert "_yours" in bodies["softmax"]              # handed out: not there
    assert "_yours" in bodies["transformer_block"]    # later homework: not there either
    assert sorted(p.name for p in (out / "notebooks").iterdir()) == ["02_softmax"]
    with pytest.raises(bundle_mod.BundleError, match="unknown assignment"):
        bundle_mod.build(tmp_path / "x", ["99_nothing"], worked_examples=False)
    with pytest.raises(bundle_mod.BundleError, match="both"):
        bundle_mod.build(tmp_path / "y", ["02_softmax"], reveal=["02_softmax"],
                         worked_examples=False)


@pytest.mark.slow
def test_no_function_of_the_whole_course_bundle_returns_an_answer(built, tmp_path):
    """The behavioural scan (tests/bundle_scan.py) of the whole course's bundle: it
    leaves every exercise out; those that a homework bundle revealing more leaves out
    too are probed there (test_bundle_answers.py, ``bundle_scan.probed_in``)."""
    names = _left_out(built)
    assert names == list(course.names())
    names = probed_in([], names)
    assert names and {course.notebook_of(n) for n in names} == {
        a for a in ALL if a < HOMEWORK[0]}
    leaks = answers_in(built, names, tmp_path, timeout=3600)
    assert not leaks, "\n".join(leaks)
