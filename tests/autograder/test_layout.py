"""The layout shows the architecture. ``autograder/`` has one subpackage per stage of the
pipeline, and a stage imports only the stages below it:

    cli -> intake | run | release -> results | engine -> notebook | isolation -> safe_text

The security boundary (``isolation/``) is imported by the engine alone; the result schema
is one module (``results/records.py``); no module of the grader or of the course helpers
imports another that imports it back. Every import counts: those inside functions,
relative ones, and ``importlib.import_module`` of a written name. One loop is allowed: a
registry (``helpers.exercises``) loading its own modules by name, which import it back for
its classes; a circle through any other module is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

from autograder import REPO_ROOT

#: What each stage of the grader may import (besides itself, the package's root module
#: ``autograder``, ``autograder.safe_text`` and ``autograder.lms``, which import nothing
#: of the grader).
STAGES = {
    "isolation": set(),
    "notebook": set(),
    "engine": {"notebook", "isolation"},
    "results": {"notebook"},
    "run": {"engine", "notebook", "results"},
    "intake": {"notebook", "results"},
    "ondemand": {"run", "results", "intake", "notebook"},
    "lti": {"results", "intake", "notebook"},
    "release": {"engine", "notebook", "results"},
}
#: Modules at the package's root: the command line (which may import every stage), its
#: entry point, the paths and version, text made safe, the LMSs' file names (read by
#: intake, written by results), nbgrader's configuration.
ROOT_MODULES = {"__init__", "__main__", "cli", "safe_text", "lms", "nbgrader_config"}


#: The mark of an import by a computed name: ``importlib.import_module(f"pkg.{name}")``
#: is read as ``"pkg." + COMPUTED``, an import of each module under ``pkg.``.
COMPUTED = "{computed}"


def _module_name(path: Path) -> str:
    if not path.is_relative_to(REPO_ROOT):
        return path.stem
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _import_edges(path: Path, package: str) -> dict[str, bool]:
    """The modules of ``package`` that ``path`` imports anywhere (functions included), each
    with whether a top-level statement imports it. Read: ``import a.b``, ``from a import
    b`` and relative ``from .b import c`` (resolved), and ``importlib.import_module`` /
    ``__import__`` of a name written in the call: a literal names one module, an f-string
    the modules under its literal prefix (``f"helpers.exercises.{name}"``: each of them,
    marked by a trailing :data:`COMPUTED`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _module_name(path)
    here = me if path.name == "__init__.py" else me.rpartition(".")[0]
    top = {id(node) for node in tree.body}
    found: dict[str, bool] = {}

    def add(name: str, at_top: bool) -> None:
        if name == package or name.startswith(package + "."):
            found[name] = found.get(name, False) or at_top

    for node in ast.walk(tree):
        at_top = id(node) in top
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base and base != package:       # `from helpers import x`: helpers.x
                add(base, at_top)
            for a in node.names if base else ():
                if a.name != "*":             # `import *`: the module itself, above
                    add(f"{base}.{a.name}", at_top)
        elif isinstance(node, ast.Import):
            for a in node.names:
                add(a.name, at_top)
        elif isinstance(node, ast.Call) and node.args and (
                getattr(node.func, "attr", None) == "import_module"
                or getattr(node.func, "id", None) in ("import_module", "__import__")):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                add(arg.value, False)
            elif isinstance(arg, ast.JoinedStr):
                prefix = ""
                for part in arg.values:          # the literal start; __name__ is known
                    if isinstance(part, ast.Constant):
                        prefix += str(part.value)
                    elif isinstance(part, ast.FormattedValue) and isinstance(
                            part.value, ast.Name) and part.value.id == "__name__":
                        prefix += me
                    else:
                        break
                if prefix:
                    add(prefix + COMPUTED, False)
    return found


def _imports(path: Path, package: str) -> set[str]:
    """The modules of ``package`` that ``path`` imports anywhere (functions included)."""
    return set(_import_edges(path, package))


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(path): path for path in sorted((REPO_ROOT / package).rglob("*.py"))}


def _graph(package: str, reexports: bool = True, computed: dict | None = None
           ) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports. ``reexports=False``: without a
    package's top-level imports of its own submodules (how a package re-exports; an
    import inside one of its functions still counts). ``computed``, when given, receives
    module -> the modules it imports only by a computed name."""
    modules = _modules(package)
    graph = {}
    for name, path in modules.items():
        edges, by_name = set(), set()
        for target, at_top in _import_edges(path, package).items():
            if target.endswith(COMPUTED):
                by_name |= {m for m in modules if m.startswith(target[:-len(COMPUTED)])}
                continue
            for m in {target} & set(modules) - {name}:
                if not reexports and at_top and path.name == "__init__.py" and \
                        m.startswith(name + "."):
                    continue
                edges.add(m)
        by_name -= {name} | edges
        graph[name] = edges | by_name
        if computed is not None:
            computed[name] = by_name
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of ``graph`` with more than one module: the
    import circles (every module of one imports every other, through the others)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _circles(package: str) -> list[list[str]]:
    """The import circles of ``package``, every import counted but one kind: a module's
    import of a registry that loads it only by a computed name (the exercise registry,
    ``importlib.import_module(f"{__name__}.{name}")``, and the exercise modules that
    import its classes: Python runs a package before any of its modules, and the
    registry loads them at first use, inside a function). A registry that also imports
    one of its modules by name, and every other circle, is reported."""
    computed: dict[str, set[str]] = {}
    graph = _graph(package, reexports=False, computed=computed)
    graph = {m: {t for t in targets if m not in computed.get(t, ())}
             for m, targets in graph.items()}
    return [sorted(comp) for comp in _components(graph)]


def _stage(module: str) -> str:
    """``autograder.run.pool`` -> ``run``; a root module -> its own name."""
    return module.split(".")[1] if module.count(".") >= 1 else "__init__"


def test_imports_inside_functions_are_read():
    text = "def f():\n    from autograder.run import pool\n    import autograder.engine\n"
    path = Path(__import__("tempfile").mkdtemp()) / "m.py"
    path.write_text(text)
    assert _imports(path, "autograder") == {"autograder.run", "autograder.run.pool",
                                             "autograder.engine"}


def test_relative_and_computed_imports_are_read(tmp_path, monkeypatch):
    """The circles a reader of absolute imports would miss: a relative import inside a
    function, ``__import__`` of a literal name, ``importlib.import_module`` of an f-string
    (every module under its prefix), and a package importing its own submodule inside a
    function (its top-level re-exports do not count)."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "def load(name):\n    import importlib\n"
                       "    return importlib.import_module(f'{__name__}.sub.{name}')\n",
        "a.py": "def f():\n    from .b import g\n",
        "b.py": "from pkg import a\ndef g():\n    __import__('pkg.c')\n",
        "c.py": "from pkg.a import f\n",
        "sub/__init__.py": "from pkg.sub import x\ndef later():\n    from pkg.sub import y\n",
        "sub/x.py": "import pkg\n",
        "sub/y.py": "from . import x\nimport pkg.sub\n",
    }
    for rel, text in files.items():
        (root / rel).write_text(text)
    monkeypatch.setitem(globals(), "REPO_ROOT", tmp_path)
    graph = _graph("pkg", reexports=False)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a", "pkg.c"}
    assert graph["pkg"] == {"pkg.sub.x", "pkg.sub.y"}    # the modules under the prefix
    assert graph["pkg.sub"] == {"pkg.sub.y"}     # its top-level re-export of x: not counted
    assert graph["pkg.sub.y"] == {"pkg.sub", "pkg.sub.x"}           # relative, resolved
    assert sorted(map(sorted, _components(graph))) == [
        ["pkg", "pkg.sub", "pkg.sub.x", "pkg.sub.y"], ["pkg.a", "pkg.b", "pkg.c"]]
    assert _circles("pkg") != []           # pkg.a <-> pkg.b: not the registry's loop
    cycles = {frozenset(c) for c in _cycles(graph)}
    assert {"pkg.a", "pkg.b"} in cycles                          # relative, in a function
    assert {"pkg.a", "pkg.b", "pkg.c"} in cycles                 # __import__ of a literal
    assert {"pkg.sub", "pkg.sub.y"} in cycles                    # __init__'s function
    assert {"pkg", "pkg.sub.x"} in cycles                        # import_module, f-string


def test_every_module_of_the_grader_belongs_to_a_stage():
    for name in _modules("autograder"):
        stage = _stage(name)
        if name.count(".") == 1 and stage not in STAGES:
            assert stage in ROOT_MODULES, f"{name}: a new root module; put it in a stage"
        else:
            assert stage in STAGES or name == "autograder", name
    for stage in STAGES:
        init = REPO_ROOT / "autograder" / stage / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and doc.strip(), f"autograder/{stage}/__init__.py: say the stage's purpose"


def test_each_stage_imports_only_the_stages_below_it():
    wrong = []
    for name, targets in _graph("autograder").items():
        stage = _stage(name)
        # the top: the command line, and nbgrader's configuration of `make lab` (read by
        # Jupyter, imported by nothing), which takes the exchange classes from results/
        if stage in ("cli", "__main__", "nbgrader_config"):
            continue
        allowed = STAGES.get(stage, set()) | {stage}
        for target in targets:
            if target in ("autograder", "autograder.safe_text", "autograder.lms",
                          "autograder.__version__"):
                continue
            if target.count(".") == 1 and _stage(target) not in STAGES:
                wrong.append(f"{name} -> {target}")      # a root module (cli) from below
            elif _stage(target) not in allowed:
                wrong.append(f"{name} -> {target}")
    assert wrong == []


def test_only_the_engine_reaches_the_security_boundary():
    """Other stages reach the boundary only through the names the engine's package
    re-exports of it (autograder/isolation/README.md): the grading command's refusal, and
    the student's helpers builder and stub runtime, which the release stage's bundle
    shares with every child."""
    for name, path in _modules("autograder").items():
        if name.startswith(("autograder.isolation", "autograder.engine")):
            continue
        # any mention counts, not only imports
        assert "autograder.isolation" not in path.read_text(encoding="utf-8"), name
    init = REPO_ROOT / "autograder" / "engine" / "__init__.py"
    reexported = {f"{node.module}.{a.name}" for node in ast.parse(init.read_text()).body
                  if isinstance(node, ast.ImportFrom)
                  and (node.module or "").startswith("autograder.isolation")
                  for a in node.names}
    assert reexported == {"autograder.isolation.confine.UnsafeToGrade",
                          "autograder.isolation.course_calls",
                          "autograder.isolation.student_helpers"}


def test_the_package_reads_nothing_of_the_test_suite_or_the_tools():
    """The catalogue of wrong answers and the example class's builder are the course
    repository's (tests/, tools/): no module of the grader imports or reads them (the
    command line runs tools/make_examples.py as a program, when the clone has it)."""
    for name, path in _modules("autograder").items():
        text = path.read_text(encoding="utf-8")
        assert "catalogue" not in text.replace("catalogue of wrong answers", ""), name
        assert not _imports(path, "tools") and not _imports(path, "tests"), name
        assert not _imports(path, "make_examples"), name


def test_no_import_circles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    for package in ("autograder", "helpers"):
        assert _circles(package) == [], package


def test_a_registry_loading_its_modules_is_the_one_loop_allowed(tmp_path, monkeypatch):
    """The exercise registry loads each exercise module by name and the module imports the
    registry's classes: allowed. A module outside the registry that an exercise imports
    (the reference) and that imports the registry back closes a circle: reported."""
    root = tmp_path / "pkg"
    (root / "reg").mkdir(parents=True)
    files = {"__init__.py": "",
             "math.py": "X = 1\n",
             "reg/__init__.py": "import importlib\nclass Exercise: pass\n"
                                "def get(name):\n"
                                "    return importlib.import_module(f'{__name__}.{name}')\n",
             "reg/one.py": "from pkg.reg import Exercise\nfrom pkg import math\n"}
    for rel, text in files.items():
        (root / rel).write_text(text)
    monkeypatch.setitem(globals(), "REPO_ROOT", tmp_path)
    assert _components(_graph("pkg", reexports=False)) == [{"pkg.reg", "pkg.reg.one"}]
    assert _circles("pkg") == []
    (root / "math.py").write_text("def contract(name):\n    from pkg import reg\n"
                                  "    return reg.get(name)\n")
    assert _circles("pkg") == [["pkg.math", "pkg.reg", "pkg.reg.one"]]
    (root / "math.py").write_text("X = 1\n")
    # the registry importing one of its modules by name, in a function: a circle
    (root / "reg/__init__.py").write_text(files["reg/__init__.py"] + "def compare():\n"
                                          "    from pkg.reg.one import Exercise\n")
    assert _circles("pkg") == [["pkg.reg", "pkg.reg.one"]]
    (root / "reg/__init__.py").write_text(files["reg/__init__.py"])
    # two modules of the registry importing each other: a circle
    (root / "reg/two.py").write_text("def f():\n    from pkg.reg import one\n")
    (root / "reg/one.py").write_text(files["reg/one.py"] + "def g():\n    from pkg.reg import two\n")
    assert _circles("pkg") == [["pkg.reg.one", "pkg.reg.two"]]
    (root / "reg/two.py").unlink()
    (root / "reg/one.py").write_text(files["reg/one.py"])
    # a star import is an import of the module: no registry, and its circles count
    (root / "__init__.py").write_text("from pkg.math import *\ndef later():\n"
                                      "    from pkg import reg\n")
    (root / "reg/one.py").write_text(files["reg/one.py"] + "import pkg\n")
    assert ["pkg", "pkg.reg", "pkg.reg.one"] in _circles("pkg")


def test_the_result_schema_lives_in_records():
    for name in ("results/feedback", "results/report", "results/export", "run/merge",
                 "results/outputs"):
        text = (REPO_ROOT / "autograder" / f"{name}.py").read_text(encoding="utf-8")
        assert "from autograder.results.records import" in text, name
    records = (REPO_ROOT / "autograder" / "results" / "records.py").read_text()
    assert "from autograder.results.feedback" not in records


TEST_ROOT = REPO_ROOT / "tests"
# Folders of tests/ that hold support code or data, not tests of one package.
SUPPORT_FOLDERS = {"attacks", "catalogue", "data", "fixtures", "lms", "__pycache__"}


def test_tests_are_laid_out_like_the_packages_they_test():
    """tests/autograder/<stage>/ for each stage of the grader (its cross-stage tests one
    level up), tests/helpers/, tests/notebooks/ (the course as a learner runs it),
    tests/tools/ and tests/setup/ (the set-up and make check); at tests/ itself only
    conftest.py and the support modules the folders share, none of them a test."""
    assert not list(TEST_ROOT.glob("test_*.py")), "a test at the top of tests/"
    folders = {p.name for p in TEST_ROOT.iterdir() if p.is_dir()} - SUPPORT_FOLDERS
    assert folders == {"autograder", "helpers", "notebooks", "tools", "setup"}, folders
    stages = {p.name for p in (TEST_ROOT / "autograder").iterdir() if p.is_dir()} - {"__pycache__"}
    assert stages == set(STAGES), stages ^ set(STAGES)     # a folder for each stage
    for path in TEST_ROOT.rglob("test_*.py"):
        assert path.parent.name != "tests", path


def test_test_folders_named_like_packages_do_not_shadow_them():
    """tests/helpers and tests/autograder have no __init__.py (a package there would shadow
    the real one for a test's imports) and pytest puts the repository first on sys.path
    (pyproject.toml, ``pythonpath``): the packages the tests import are the repository's."""
    import helpers

    import autograder

    for name in ("autograder", "helpers", "notebooks", "tools", "setup"):
        assert not list((TEST_ROOT / name).rglob("__init__.py")), name
    assert Path(helpers.__file__).resolve() == REPO_ROOT / "helpers" / "__init__.py"
    assert Path(autograder.__file__).resolve() == REPO_ROOT / "autograder" / "__init__.py"


def test_no_test_module_imports_another():
    """What tests share lives in the support modules at tests/ (a test module imported by
    another one is found only from its own folder, and its tests would run twice)."""
    for path in TEST_ROOT.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [n for n in names if n.split(".")[0].startswith("test_")], path


#: The floors of ``helpers/``, from the ground up: the exercise framework, the reference
#: (the math alone; the slides' examples; the environment's checks), the models and the course's other computing modules, the exercise
#: modules, and what notebooks show (checks, plots, explorers). A module imports only its
#: own floor and the floors below; the package's face (``helpers/__init__.py``) may
#: re-export any of them.
HELPER_FLOORS = (
    ("framework", ("helpers.course", "helpers._same")),
    ("reference", ("helpers.reference", "helpers.examples", "helpers.environment_check")),
    ("models", ("helpers.llama", "helpers.bert", "helpers.tokenizer", "helpers.training",
                "helpers.pretrained", "helpers.demos_model", "helpers.inference",
                "helpers.interpretability")),
    ("exercises", ("helpers.exercises",)),
    ("notebooks", ("helpers.checks", "helpers.plots", "helpers.widgets")),
)


def _floor(module: str) -> int | None:
    for k, (_, prefixes) in enumerate(HELPER_FLOORS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return k
    return None


def test_every_module_of_the_helpers_has_a_floor():
    loose = [m for m in _modules("helpers") if m != "helpers" and _floor(m) is None]
    assert not loose, f"modules of helpers/ on no floor (add them to HELPER_FLOORS): {loose}"


def test_the_helpers_import_only_their_floor_and_those_below():
    """Issue 35: the framework, the reference, the models and the exercises are separate
    rooms, each importing only the ones below it. Two ways up are allowed: the framework's
    registry loads the exercise modules by a computed name (the registry's loop), and a
    module may import the package ``helpers`` itself, whose face re-exports the checked
    reference functions."""
    computed: dict = {}
    graph = _graph("helpers", computed=computed)
    upward = []
    for module, targets in graph.items():
        here = _floor(module)
        if here is None:
            continue
        for target in targets - computed.get(module, set()) - {"helpers"}:
            there = _floor(target)
            if there is not None and there > here:
                upward.append(f"{module} -> {target}")
    assert not upward, upward
    # the rule sees a way up
    assert _floor("helpers.course.judge") < _floor("helpers.exercises.softmax") < \
        _floor("helpers.checks")


#: The most lines one module of the grader or the helpers may have (issue 35): a file
#: that grows past it is two things, to be split where it comes apart.
MAX_MODULE_LINES = 600


def test_no_module_of_the_grader_or_the_helpers_is_over_600_lines():
    long = {str(path.relative_to(REPO_ROOT)): n
            for package in ("autograder", "helpers")
            for path in sorted((REPO_ROOT / package).rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, long
