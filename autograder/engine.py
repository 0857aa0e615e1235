"""Grade one submitted notebook: merge it with the source, run it, decide the points.

``grade_notebook(submission, assignment)`` returns a :class:`NotebookResult` and never
raises for a bad submission (unreadable file, stripped metadata, deleted or edited test
cells, duplicated answers, hangs, memory blow-ups, killed processes, floods of output).

Source of truth
    The solution notebook ``solutions/<assignment>/<notebook>.ipynb`` is read directly:
    its nbgrader metadata gives the answer cells (by ``grade_id``), the test cells with
    their hidden tests and points, and the manually graded cells. We do not use
    nbgrader's gradebook: it would only hold a copy of the same facts (checksums and
    points taken from this notebook at release time), creating it costs a
    ``generate_assignment`` run per assignment, and a SQLite file shared by parallel
    grading processes is one more thing to lock. Reading the notebook keeps the grader
    stateless, so shards can run anywhere.

Merge (:func:`merge`)
    * answer cells come from the student, matched by ``grade_id`` (the first one wins
      when a student duplicated a cell; flagged). A cell whose nbgrader metadata was
      stripped is matched by ``def <function>(`` (flagged);
    * test cells always come from the source: edited ones are restored, deleted ones
      re-inserted after the nearest graded cell before them, hidden tests included;
    * every other code cell comes from the student (they may define helpers there).
      Copies of test cells that lost their metadata are dropped (the source's run).

Execution (:mod:`autograder.executor`, :mod:`autograder.sandbox`, :mod:`autograder.slicing`)
    1. The *notebook run*: the merged notebook in a confined child of a pre-warmed
       worker, cell by cell: every answer and test cell, and of the other cells the
       statements those depend on (demonstrations that grading does not need, such as
       text generation or explorers, are skipped). A test cell passes iff it raised
       nothing and wrote nothing to stderr (nbgrader's rule). Hidden tests are not run
       here (steps 2 and 3 judge them), so their source never enters the learner's
       process.
    2. The *authoritative verdict* for every contract function with a test cell: a
       separate confined child whose ``helpers`` lacks the reference of that function
       runs the function's answer cell and what it depends on (from the cells before
       its first test), then calls the function on the cases of ``helpers.checks``
       (visible and hidden) and returns only the outputs. This process (trusted)
       compares them with ``helpers.checks.compare``.
    3. The *isolated test run* for the other test cells (exercises outside the
       contract): the test cells and the source notebook's own set-up cells run in one
       confined child in which no learner code ever runs; the learner's answer cells
       run in a second child that only answers calls, with a ``helpers`` whose functions
       named like the notebook's answers (and those its modules' ``EXERCISE_REFERENCES``
       list for them) are stubs that raise. The learner's names are bound to
       stand-ins that forward each call (values in, values out, exceptions by type
       name) to that second child. A test cell passes iff it raised nothing and wrote
       nothing to stderr; a numeric last value is partial credit, as in nbgrader. The
       visible and hidden parts run as separate pieces, so that a failure can be traced
       to the part the notebook run also executed.
    The points of every test cell come from step 2 or 3, never from step 1: a correct
    answer keeps its points even if the notebook run failed (a warning on stderr, a
    crash in an unrelated cell), and a test that passed in the notebook but fails its
    authoritative run on the same checks scores 0 and is flagged "tampering suspected".
    Step 1 is the learner's feedback (what their notebook does) and the witness for
    those flags.

Feedback never contains the source of hidden tests: tracebacks name test cells without
quoting them, and captured output is scrubbed of every hidden-test line.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from autograder import SOLUTIONS_DIR, executor, sandbox, slicing

#: Submissions larger than this are not parsed.
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
#: Length of CellResult.message.
MESSAGE_CHARS = 300
#: Length of CellResult.feedback.
FEEDBACK_CHARS = 6000
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"


@dataclass
class CellResult:
    """The grade of one graded cell (a test cell or a manually graded cell)."""

    grade_id: str
    kind: str                 # "test" | "manual"
    points: float
    max_points: float
    status: str   # ok | failed | timeout | memory | crashed | missing | invalid | needs_manual_grade
    message: str = ""         # one short line, safe to show
    feedback: str = ""        # longer text for the student (no hidden-test source)


@dataclass
class NotebookResult:
    """The grade of one submitted notebook."""

    assignment: str
    notebook: str
    status: str               # ok | timeout | memory | crashed | invalid
    message: str = ""
    cells: list[CellResult] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def points(self) -> float:
        return sum(c.points for c in self.cells)

    @property
    def max_points(self) -> float:
        return sum(c.max_points for c in self.cells)


# ---------------------------------------------------------------------------------------
# The source notebook.
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceCell:
    cell_type: str
    kind: str                 # answer | test | manual | other
    grade_id: str | None
    points: float
    source: str

    @property
    def visible(self) -> str:
        """The source without its hidden-tests block (what students were given)."""
        return strip_hidden(self.source)


@dataclass(frozen=True)
class Source:
    assignment: str
    notebook: str
    path: Path
    cells: tuple[SourceCell, ...]

    def by_id(self, kind: str) -> dict[str, SourceCell]:
        return {c.grade_id: c for c in self.cells if c.kind == kind and c.grade_id}


def _text(source) -> str:
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _partition_hidden(text: str) -> tuple[str, str]:
    """``(visible lines, hidden lines stripped)`` of a test cell; markers dropped."""
    visible, hidden_lines, hidden = [], [], False
    for line in text.splitlines(keepends=True):
        if line.strip().startswith(BEGIN_HIDDEN):
            hidden = True
        elif line.strip().startswith(END_HIDDEN):
            hidden = False
        elif hidden:
            hidden_lines.append(line.strip() + "\n")
        else:
            visible.append(line)
    return "".join(visible), "".join(hidden_lines)


def strip_hidden(text: str) -> str:
    """A test cell without its hidden block (what the learner's notebook shows)."""
    return _partition_hidden(text)[0]


def hidden_block(text: str) -> str:
    """The hidden block's lines, stripped (what feedback must never show)."""
    return _partition_hidden(text)[1]


def _nbgrader(cell: dict) -> dict:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def _kind(cell_type: str, nbg: dict) -> str:
    grade, solution = bool(nbg.get("grade")), bool(nbg.get("solution"))
    if (grade and solution) or nbg.get("task"):
        return "manual"
    if grade and cell_type == "code":
        return "test"
    if solution and cell_type == "code":
        return "answer"
    return "other"


@lru_cache(maxsize=64)
def _load_source(path: Path, mtime: float) -> Source:
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = []
    for cell in nb["cells"]:
        nbg = _nbgrader(cell)
        kind = _kind(cell.get("cell_type", ""), nbg)
        gid = nbg.get("grade_id") if kind != "other" else None
        cells.append(SourceCell(cell.get("cell_type", ""), kind, gid,
                                float(nbg.get("points", 0) or 0), _text(cell.get("source"))))
    return Source(path.parent.name, path.name, path, tuple(cells))


def source_path(assignment: str, notebook: str, solutions: Path | None = None) -> Path | None:
    """The solution notebook for a submitted ``<assignment>/<notebook>``, if any."""
    solutions = SOLUTIONS_DIR if solutions is None else Path(solutions)
    if not re.fullmatch(r"[\w.-]+", assignment) or assignment.startswith("."):
        return None
    folder = solutions / assignment
    if not folder.is_dir():
        return None
    exact = folder / notebook
    if exact.is_file():
        return exact
    candidates = sorted(folder.glob("*.ipynb"))
    return candidates[0] if len(candidates) == 1 else None


def load_source(assignment: str, notebook: str | None = None,
                solutions: Path | None = None) -> Source:
    path = source_path(assignment, notebook or f"{assignment}.ipynb", solutions)
    if path is None:
        raise FileNotFoundError(f"no solution notebook for {assignment}/{notebook}")
    return _load_source(path, path.stat().st_mtime)


# ---------------------------------------------------------------------------------------
# Which test cell checks which contract function, on which cases.
# ---------------------------------------------------------------------------------------


def _contract_functions() -> tuple[str, ...]:
    import helpers

    return tuple(helpers.CONTRACT_FUNCTIONS)


def _check_call(node) -> tuple[str, bool, str | None] | None:
    """``check("name", fn, hidden=..., group=...)`` -> (name, hidden, group)."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if fname != "check" or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    name = node.args[0].value
    if not isinstance(name, str):
        return None
    hidden, group = False, None
    for kw in node.keywords:
        if kw.arg == "hidden" and isinstance(kw.value, ast.Constant):
            hidden = bool(kw.value.value)
        elif kw.arg == "group" and isinstance(kw.value, ast.Constant):
            group = kw.value.value if isinstance(kw.value.value, str) else None
    return name, hidden, group


def function_of_test(grade_id: str, functions=None) -> str | None:
    """The contract function a test cell is about: ``test_<function>...``, longest name."""
    functions = functions or _contract_functions()
    best = None
    for fn in functions:
        if grade_id == f"test_{fn}" or grade_id.startswith(f"test_{fn}_"):
            if best is None or len(fn) > len(best):
                best = fn
    return best


@dataclass(frozen=True)
class CaseSpec:
    """A set of check cases: those of ``function`` (visible/hidden/both), maybe a group."""

    function: str
    hidden: bool | None       # None: visible and hidden
    group: str | None
    in_kernel: bool           # whether the notebook run executes these checks


def case_specs(cell: SourceCell, kernel_source: str, local: tuple[str, ...] = ()) -> list[CaseSpec]:
    """The check cases a source test cell stands for (empty: not a contract test).

    ``check(...)`` calls in the cell say exactly which cases; without them the grade_id
    ``test_<function>[_<group>]`` does, the longest name among the contract functions and
    the notebook's own answer functions (``local``) winning: ``test_softmax_with_temperature``
    is about a local ``softmax_with_temperature``, not about ``softmax``.
    """
    functions = _contract_functions()
    specs = []
    try:
        tree = ast.parse(cell.source.replace(BEGIN_HIDDEN, "").replace(END_HIDDEN, ""))
        kernel_tree = ast.parse(kernel_source)
    except SyntaxError:
        tree = kernel_tree = None
    if tree is not None:
        in_kernel = {_check_call(n) for n in ast.walk(kernel_tree)} - {None}
        for node in ast.walk(tree):
            call = _check_call(node)
            if call and call[0] in functions:
                specs.append(CaseSpec(call[0], call[1], call[2], call in in_kernel))
    if specs:
        return list(dict.fromkeys(specs))
    fn = function_of_test(cell.grade_id or "", tuple(functions) + tuple(local))
    if fn is None or fn not in functions:
        return []
    suffix = (cell.grade_id or "")[len(f"test_{fn}"):].strip("_") or None
    return [CaseSpec(fn, None, suffix, False)]   # group kept only if it exists (below)


# ---------------------------------------------------------------------------------------
# Reading and merging the submission.
# ---------------------------------------------------------------------------------------


class InvalidSubmission(ValueError):
    pass


def read_submission(path: Path) -> list[dict]:
    """The cells of a submitted notebook (nbformat 4 JSON), or InvalidSubmission."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InvalidSubmission(f"cannot read the notebook ({exc.strerror})") from None
    if size > MAX_NOTEBOOK_BYTES:
        raise InvalidSubmission(f"the notebook is too large ({size // 1_000_000} MB)")
    try:
        nb = json.loads(path.read_bytes().decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise InvalidSubmission("the file is not valid JSON: it is not a readable notebook") from None
    except OSError as exc:
        raise InvalidSubmission(f"cannot read the notebook ({exc.strerror})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook (no cells)")
    return [c for c in nb["cells"] if isinstance(c, dict)]


@dataclass
class MergedCell:
    index: int
    kind: str                 # answer | test | other
    grade_id: str | None
    source: str               # what runs in the notebook
    source_cell: SourceCell | None = None


@dataclass
class Merged:
    cells: list[MergedCell]
    answers: dict[str, str]
    flags: list[str]
    missing: set[str]         # answer grade_ids not found
    notes: dict[str, str]     # grade_id -> note on how the cell was restored


def _normalized(text: str) -> str:
    """Text compared without blank lines and trailing spaces (editors differ there)."""
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def _defined_functions(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return re.findall(r"^\s*def\s+(\w+)\s*\(", code, flags=re.M)
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def merge(source: Source, student: list[dict]) -> Merged:
    answers_src, tests_src, manual_src = (source.by_id("answer"), source.by_id("test"),
                                          source.by_id("manual"))
    visible_tests = {_normalized(t) for c in tests_src.values() for t in (c.visible, c.source)}
    flags: list[str] = []
    notes: dict[str, str] = {}
    answers: dict[str, str] = {}
    seen: set[str] = set()
    out: list[tuple[str, str | None, str]] = []      # (kind, grade_id, source)
    for cell in student:
        ctype = cell.get("cell_type")
        text = _text(cell.get("source"))
        nbg = _nbgrader(cell)
        gid = nbg.get("grade_id") if isinstance(nbg.get("grade_id"), str) else None
        known = gid in answers_src or gid in tests_src or gid in manual_src
        if gid and known:
            if gid in seen:
                flags.append(f"duplicated cell {gid!r}: the first copy was graded, "
                             "the others ignored")
                continue
            seen.add(gid)
            if gid in tests_src:
                original = tests_src[gid]
                if _normalized(text) not in (_normalized(original.visible),
                                             _normalized(original.source)):
                    notes[gid] = "the test cell was edited; the original was restored"
                    flags.append(f"test cell {gid!r} was edited: restored from the source")
                out.append(("test", gid, ""))
            elif gid in manual_src:
                answers[gid] = text
            elif ctype == "code":
                answers[gid] = text
                out.append(("answer", gid, text))
            continue
        if nbg.get("grade") and not nbg.get("solution") and ctype == "code":
            flags.append(f"unknown test cell {gid!r} ignored")
            continue
        if ctype != "code":
            continue
        if _normalized(text) in visible_tests:
            continue                # a test cell that lost its metadata: the source runs
        out.append(("other", None, text))

    missing: set[str] = set()
    for gid, cell in answers_src.items():
        if gid in answers:
            continue
        wanted = _defined_functions(cell.source) or [gid]
        for i, (kind, _, text) in enumerate(out):
            if kind == "other" and any(
                    re.search(rf"^\s*def\s+{re.escape(fn)}\s*\(", text, flags=re.M)
                    for fn in wanted):
                out[i] = ("answer", gid, text)
                answers[gid] = text
                flags.append(f"answer cell {gid!r} had no nbgrader metadata: "
                             f"matched by 'def {wanted[0]}('")
                break
        else:
            missing.add(gid)
            answers[gid] = ""
    for gid in manual_src:
        answers.setdefault(gid, "")

    # Test cells the student deleted: insert after the nearest graded cell before them.
    present = {gid for kind, gid, _ in out if gid}
    order = [c.grade_id for c in source.cells if c.grade_id and c.kind in ("answer", "test")]
    for pos, gid in enumerate(order):
        if gid not in tests_src or gid in present:
            continue
        notes[gid] = "the test cell was missing; the original was restored"
        flags.append(f"test cell {gid!r} was deleted: restored from the source")
        anchor = next((g for g in reversed(order[:pos]) if g in present), None)
        at = len(out)
        if anchor is not None:
            at = max(i for i, (_, g, _) in enumerate(out) if g == anchor) + 1
        out.insert(at, ("test", gid, ""))
        present.add(gid)

    cells = []
    for i, (kind, gid, text) in enumerate(out):
        src_cell = tests_src.get(gid) if kind == "test" else answers_src.get(gid)
        cells.append(MergedCell(i, kind, gid, src_cell.source if kind == "test" else text,
                                src_cell))
    return Merged(cells, answers, flags, missing, notes)


# ---------------------------------------------------------------------------------------
# Resources the children see: helpers copies, data files.
# ---------------------------------------------------------------------------------------


class _Resources:
    """Per-process copies of ``helpers`` (full, stripped per contract function, with
    a notebook's exercise references stubbed) and data."""

    def __init__(self, worker: executor.Worker):
        self.worker = worker
        self.base = worker.home
        os.chmod(self.base, 0o711)
        self._helpers: dict[str | None, str] = {}
        self._exercise_helpers: dict[tuple[str, ...], str] = {}
        self._data: dict[str, str | None] = {}
        self._jobs = 0

    def helpers(self, strip: str | None) -> str:
        if strip not in self._helpers:
            dest = self.base / ("helpers-full" if strip is None else f"helpers-no-{strip}")
            dest.mkdir(exist_ok=True)
            os.chmod(dest, 0o755)
            self._helpers[strip] = str(sandbox.prepare_helpers(dest, strip=strip))
        return self._helpers[strip]

    def exercise_helpers(self, exercises) -> str:
        """The copy for the learner's side of the isolated test run: the references of
        a notebook's exercises (its answer grade_ids) stubbed in every helpers module,
        on disk (see ``sandbox.hide_exercise_references``); one per answer set."""
        key = tuple(sorted(set(exercises)))
        if key not in self._exercise_helpers:
            import hashlib

            digest = hashlib.blake2b("\n".join(key).encode(), digest_size=8).hexdigest()
            dest = self.base / f"helpers-exercises-{digest}"
            dest.mkdir(exist_ok=True)
            os.chmod(dest, 0o755)
            self._exercise_helpers[key] = str(sandbox.prepare_helpers(dest, exercises=key))
        return self._exercise_helpers[key]

    def data(self, source: Source) -> str | None:
        key = str(source.path.parent)
        if key not in self._data:
            files = [p for p in source.path.parent.iterdir()
                     if p.suffix != ".ipynb" and not p.name.startswith(".")
                     and p.name != "__pycache__"]
            if not files:
                self._data[key] = None
            else:
                dest = self.base / "data" / source.assignment
                if dest.exists():
                    shutil.rmtree(dest)
                dest.mkdir(parents=True)
                for p in files:
                    if p.is_dir():
                        shutil.copytree(p, dest / p.name)
                    else:
                        shutil.copy(p, dest / p.name)
                os.chmod(self.base / "data", 0o755)
                self._data[key] = str(dest)
        return self._data[key]

    def conf(self, strip: str | None, source: Source) -> dict:
        self._jobs += 1
        work = self.base / "fallback-work" / str(self._jobs)
        return {"root_mount": str(self.base / "root"), "helpers_parent": self.helpers(strip),
                "data_dir": self.data(source), "fallback_work": str(work),
                "data_folders": _course_caches()}

    def cleanup_fallback(self) -> None:
        shutil.rmtree(self.base / "fallback-work", ignore_errors=True)


_RESOURCES: dict[tuple[int, int], _Resources] = {}


def _course_caches() -> dict[str, str]:
    """The course's cache of converted model weights, shown read-only to the children
    when this machine has one (``helpers.llama.cache_dir``, named by the environment
    variable ``TRANSFORMERS_COURSE_CACHE``): without it, every graded notebook that uses
    the pretrained model converts its weights again (about ten seconds). Build it once
    before grading by loading the model (``helpers.llama.load_smollm2()``)."""
    home = os.environ.get("TRANSFORMERS_COURSE_CACHE") or str(
        Path.home() / ".cache" / "transformers-course")
    return {home: "TRANSFORMERS_COURSE_CACHE"} if Path(home).is_dir() else {}


_WARMED: set[str] = set()


def _warm_model_caches(source: Source) -> None:
    """Build the converted-weights cache of a notebook's pretrained model in a trusted
    subprocess before any child needs it (the children see the cache read-only, so a
    missing cache would cost every graded notebook a conversion). Once per process;
    a failure here only costs speed, never a grade."""
    uses_llama = any("llama" in c.source for c in source.cells if c.cell_type == "code")
    if not uses_llama or "llama" in _WARMED:
        return
    _WARMED.add("llama")
    code = ("from helpers import llama\n"
            "if not llama.missing_requirements():\n"
            "    llama.load_smollm2()\n")
    try:
        subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600,
                       env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    except (OSError, subprocess.SubprocessError):
        pass


def _resources() -> _Resources:
    worker = executor.get_worker()
    key = (os.getpid(), id(worker))
    if key not in _RESOURCES:
        _RESOURCES[key] = _Resources(worker)
    return _RESOURCES[key]


# ---------------------------------------------------------------------------------------
# Grading.
# ---------------------------------------------------------------------------------------


def _short(text: str, n: int = MESSAGE_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


class _Scrubber:
    """Blanks out hidden-test source in text shown to students.

    Every line of a hidden block, and every string literal in one (an assertion message
    is source too), becomes ``[hidden]`` wherever it appears, as do the block markers;
    text that also appears outside the hidden blocks (a function's name) is left alone.
    """

    def __init__(self, source: Source):
        secrets: set[str] = {BEGIN_HIDDEN, END_HIDDEN}
        for cell in source.cells:
            if cell.kind != "test":
                continue
            block = hidden_block(cell.source)
            secrets |= {line.strip() for line in block.splitlines() if len(line.strip()) >= 6}
            try:
                tree = ast.parse(block)
            except (SyntaxError, ValueError, RecursionError):
                continue
            secrets |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                        and isinstance(n.value, str) and len(n.value) >= 6}
        # what students were given anyway (a function name in a hidden check call) is no secret
        visible = "\n".join(strip_hidden(c.source) for c in source.cells)
        secrets = {x for x in secrets if x in (BEGIN_HIDDEN, END_HIDDEN) or x not in visible}
        self.secrets = sorted(secrets, key=len, reverse=True)   # longest first
        self.has_hidden = len(secrets) > 2

    def __call__(self, text: str) -> str:
        if not self.has_hidden or not text:
            return text
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "[hidden]")
        return text


def _kernel_source(cell: SourceCell) -> str:
    """The test cell as the notebook run executes it: without its hidden block (hidden
    tests are judged by the isolated runs, so their source never reaches the learner's
    process)."""
    return cell.visible


def segments(text: str) -> list[tuple[str, bool]]:
    """A test cell cut at its hidden-test markers: ``[(code, hidden)]`` in order, empty
    pieces left out. Each piece must compile on its own; if one does not (a hidden block
    inside an indented block), the whole cell is one piece, counted as hidden."""
    pieces: list[tuple[str, bool]] = []
    lines: list[str] = []
    hidden = False

    def flush():
        code = "".join(lines)
        if code.strip():
            pieces.append((code, hidden))
        lines.clear()

    for line in text.splitlines(keepends=True):
        marker = line.strip()
        if marker.startswith(BEGIN_HIDDEN) or marker.startswith(END_HIDDEN):
            flush()
            hidden = marker.startswith(BEGIN_HIDDEN)
        else:
            lines.append(line)
    flush()
    try:
        for code, _ in pieces:
            compile(code, "<test>", "exec")
    except (SyntaxError, ValueError):
        return [(text, BEGIN_HIDDEN in text)]
    return pieces


@dataclass
class _Verdict:
    """The isolated run of one contract function: per-case problems (None = passed)."""

    function: str
    problems: list[str | None]
    hidden: list[bool]
    groups: list[str]
    inconclusive: list[bool]
    status: str               # ok | timeout | crashed
    note: str = ""


@lru_cache(maxsize=None)
def _load_cases(function: str) -> tuple[tuple, tuple[bool, ...], tuple[str, ...]]:
    """The visible then hidden cases of ``function``, which are hidden, and their
    encoded arguments (computed once per grading process; cases are fixed)."""
    from helpers import checks

    visible = list(checks.cases(function, hidden=False))
    hidden = list(checks.cases(function, hidden=True))
    cases = tuple(visible + hidden)
    payloads = tuple(sandbox.b64(sandbox.encode((tuple(c.args), dict(c.kwargs))))
                     for c in cases)
    return cases, (False,) * len(visible) + (True,) * len(hidden), payloads


def _verdict(function: str, merged: Merged, specs_of: dict[str, list[CaseSpec]],
             source: Source, res: _Resources, cell_timeout: float, notebook_timeout: float,
             limits: sandbox.Limits) -> _Verdict:
    """Step 2 for one contract function: its outputs on every case, from a child whose
    ``helpers`` lacks its reference, compared here with ``helpers.checks.compare``."""
    from helpers import checks

    cases, hidden, payloads = _load_cases(function)
    groups = [str(getattr(c, "group", "") or "") for c in cases]
    first_test = min((c.index for c in merged.cells if c.kind == "test"
                      and function in {s.function for s in specs_of.get(c.grade_id, [])}),
                     default=len(merged.cells))
    own = {gid for gid, names in _answer_functions(source).items() if function in names}
    code = slicing.slice_cells([slicing.CellCode(c.index, c.source, c.grade_id in own)
                                for c in merged.cells if c.kind != "test" and c.index < first_test],
                               {function})
    cells = [{"index": i, "kind": "code", "source": src} for i, src in sorted(code.items())]
    job = {"kind": "calls", "cells": cells, "function": function, "cases": list(payloads),
           "cell_timeout": cell_timeout, "case_timeout": cell_timeout,
           "timeout": notebook_timeout}
    reply = res.worker.run(job, res.conf(function, source), limits)
    lines = executor.parse_lines(reply.get("output", ""))
    by_case: dict[int, dict] = {}
    for line in lines:
        k = line.get("case")
        if isinstance(k, int) and 0 <= k < len(cases) and k not in by_case:
            by_case[k] = line
    done = any(line.get("done") is True for line in lines)
    status, note = "ok", ""
    if reply.get("exit") == executor.EXIT_TIMEOUT:
        status, note = "timeout", f"the isolated run of {function} took longer than {notebook_timeout:g} s"
    elif not done:
        status, note = "crashed", f"the isolated run of {function} stopped unexpectedly"
    problems: list[str | None] = []
    inconclusive: list[bool] = []      # failed for lack of time/memory, not on the merits
    for k, case in enumerate(cases):
        line = by_case.get(k)
        inconclusive.append(line is None)
        if line is None:
            problems.append(note or f"{function} was not run on this case")
            continue
        if isinstance(line.get("error"), str):
            err = line["error"]
            if err.startswith("timeout"):
                status = "timeout" if status == "ok" else status
            inconclusive[-1] = err.startswith(("timeout", "MemoryError"))
            problems.append(_case_error(function, case, err))
            continue
        try:
            got = sandbox.decode(sandbox.unb64(line.get("value")))
            problems.append(checks.compare(function, case, got))
        except sandbox.DecodeError as exc:
            problems.append(f"{function} returned something that cannot be checked ({exc})")
        except Exception as exc:   # compare() on a strange value: a failed case
            problems.append(f"{function} returned a value that cannot be compared "
                            f"({type(exc).__name__}: {_short(exc, 200)})")
    return _Verdict(function, problems, list(hidden), groups, inconclusive, status, note)


def _summary(text: str) -> str:
    """One line from a ``checks.compare`` explanation: the known mistake first (the
    most useful words), then the case and the problem. Other text is returned as is."""
    lines = [line.strip() for line in text.splitlines()]
    problem = next((line[len("Problem:"):].strip() for line in lines
                    if line.startswith("Problem:")), None)
    if problem is None:
        return text
    mistake = next((line for line in lines if line.startswith("Likely mistake:")), "")
    case = re.match(r"Case ('[^']*')", lines[0])
    where = f"case {case.group(1)}: " if case else ""
    return (f"{mistake} ({where}{problem})" if mistake else f"{where}{problem}")


def _case_error(function: str, case, err: str) -> str:
    """Words for a case on which the isolated call raised (``err``: "Type: text")."""
    if err.startswith("NotImplementedError"):
        return f"{function} is not implemented yet: replace `raise NotImplementedError()` by your code"
    if sandbox.REFERENCE_STUB_MARK in err:
        return (f"{function} must be your own implementation: it called the reference "
                f"helpers.{function}")
    where = f"case {getattr(case, 'name', '?')!r} ({getattr(case, 'description', '')})"
    if err.startswith("timeout"):
        return f"{where}: {function} did not finish ({err})"
    return f"{where}: your {function} raised {_short(err, 400)}"


def _answer_functions(source: Source) -> dict[str, list[str]]:
    """Answer grade_id -> the functions its source cell defines."""
    return {gid: _defined_functions(cell.source) or [gid]
            for gid, cell in source.by_id("answer").items()}


def _select(verdict: _Verdict, spec: CaseSpec) -> list[int]:
    known_groups = set(verdict.groups)
    group = spec.group if spec.group in known_groups else None
    return [k for k in range(len(verdict.problems))
            if (spec.hidden is None or verdict.hidden[k] == spec.hidden)
            and (group is None or verdict.groups[k] == group)]


def _kernel_outcome(line: dict | None, kernel_status: str) -> tuple[bool, str]:
    """(passed, explanation) of a test cell in the notebook run."""
    if line is None:
        return False, {"timeout": "not run: the notebook timed out before this cell",
                       "crashed": "not run: the notebook crashed before this cell",
                       "memory": "not run: the notebook ran out of memory before this cell",
                       }.get(kernel_status, "not run")
    err = line.get("error")
    if isinstance(err, dict):
        return False, f"{err.get('ename', 'Error')}: {err.get('evalue', '')}"
    if str(line.get("stderr") or "").strip():
        return False, "the cell wrote to stderr: " + str(line.get("stderr")).strip()
    return True, "passed"


def _feedback(line: dict | None, scrub: _Scrubber, extra: list[str]) -> str:
    parts = []
    if line is not None:
        for key in ("stdout", "stderr"):
            text = scrub(str(line.get(key) or "")).strip()
            if text:
                parts.append(f"[{key}]\n{text}")
        err = line.get("error")
        if isinstance(err, dict):
            tb = scrub(str(err.get("traceback") or "")).strip()
            msg = scrub(f"{err.get('ename', 'Error')}: {err.get('evalue', '')}")
            parts.append("[error]\n" + (tb + "\n" if tb else "") + msg)
    parts.extend(scrub(e) for e in extra if e)
    text = "\n\n".join(parts)
    return text if len(text) <= FEEDBACK_CHARS else text[:FEEDBACK_CHARS] + "\n[...]"


def _isolated_tests(grade_ids: list[str], merged: Merged, source: Source, res: _Resources,
                    cell_timeout: float, timeout: float, limits: sandbox.Limits) -> _Run:
    """The authoritative run of test cells outside the contract (see module doc).

    The test cells and the source notebook's own set-up run in one child (full
    ``helpers``: it computes expected values); the learner's answers run in another and
    only answer calls (values in, values out), importing a ``helpers`` in which the
    course's own version of every exercise of the notebook is a stub that raises. So
    nothing the learner wrote runs where the tests decide, and no answer can hand the
    reference's work back as its own.
    """
    answers = source.by_id("answer")
    names = sorted({n for cell in answers.values() for n in slicing.bound_names(cell.source)})
    student = slicing.slice_cells(
        [slicing.CellCode(c.index, c.source, c.kind == "answer")
         for c in merged.cells if c.kind != "test"], set(names))
    wanted = set(grade_ids)
    setup = [(i, c) for i, c in enumerate(source.cells) if c.cell_type == "code"
             and (c.kind == "other" or (c.kind == "test" and c.grade_id in wanted))]
    code = slicing.slice_cells([slicing.CellCode(i, c.source, c.kind == "test")
                                for i, c in setup])
    cells, part_of = [], {}        # a test cell becomes its visible and hidden pieces
    for i, c in setup:
        if i not in code:
            continue
        if c.kind != "test":
            cells.append({"index": len(cells), "kind": "other", "source": code[i]})
            continue
        for piece, hidden in segments(c.source):
            part_of[len(cells)] = (c.grade_id, hidden)
            cells.append({"index": len(cells), "kind": "test", "grade_id": c.grade_id,
                          "source": piece})
    job = {"kind": "tests", "cells": cells, "names": names, "cell_timeout": cell_timeout,
           "timeout": timeout,
           "serve": {"cells": [{"index": i, "kind": "code", "source": src}
                               for i, src in sorted(student.items())],
                     "helpers_parent": res.exercise_helpers(list(answers)),
                     "cell_timeout": cell_timeout}}
    reply = res.worker.run(job, res.conf(None, source), limits)
    lines = executor.parse_lines(reply.get("output", ""))
    pieces: dict[str, list[tuple[bool, dict | None]]] = {}
    seen = {line.get("cell"): line for line in reversed(lines) if "cell" in line}
    for k, (gid, hidden) in part_of.items():
        pieces.setdefault(gid, []).append((hidden, seen.get(k)))
    by_id = {gid: _join_pieces(parts) for gid, parts in pieces.items()}
    by_id = {gid: line for gid, line in by_id.items() if line is not None}
    done = any(line.get("done") is True for line in lines)
    if reply.get("exit") == executor.EXIT_TIMEOUT or any(l.get("timeout") for l in by_id.values()):
        return _Run(by_id, "timeout", "the isolated test run ran out of time")
    if not done:
        return _Run(by_id, "crashed", "the isolated test run stopped unexpectedly")
    return _Run(by_id, "ok", "")


def _join_pieces(parts: list[tuple[bool, dict | None]]) -> dict | None:
    """One cell's line from the lines of its pieces (None: its first piece never ran).

    The cell fails at its first failing piece; ``visible_failed`` says whether that
    piece was visible (the part the notebook run also executed)."""
    if not parts or parts[0][1] is None:
        return None
    joined = {"stdout": "", "stderr": "", "error": None, "timeout": False, "memory": False,
              "value": None, "visible_failed": False}
    for hidden, line in parts:
        if line is None:          # the run stopped before this piece
            joined["error"] = joined["error"] or {"ename": "Stopped", "evalue": "not run",
                                                  "traceback": ""}
            break
        joined["stdout"] += str(line.get("stdout") or "")
        joined["stderr"] += str(line.get("stderr") or "")
        joined["timeout"] |= bool(line.get("timeout"))
        joined["memory"] |= bool(line.get("memory"))
        joined["value"] = line.get("value")
        failed = isinstance(line.get("error"), dict) or str(line.get("stderr") or "").strip()
        if failed:
            joined["error"] = line.get("error") if isinstance(line.get("error"), dict) else None
            joined["visible_failed"] = not hidden
            break
    return joined


@dataclass
class _Run:
    """What the notebook run reported: the first line per cell, and how it ended."""

    by_cell: dict[int, dict]
    status: str               # ok | timeout | memory | crashed
    message: str


def _notebook_run(merged: Merged, source: Source, res: _Resources, cell_timeout: float,
                  notebook_timeout: float, limits: sandbox.Limits) -> _Run:
    """Step 1: the merged notebook (answers, tests and what they need) in a child."""
    code = slicing.slice_cells([slicing.CellCode(
        c.index, _kernel_source(c.source_cell) if c.kind == "test" else c.source,
        c.kind in ("test", "answer")) for c in merged.cells])
    cells = [{"index": c.index, "kind": c.kind, "grade_id": c.grade_id, "source": code[c.index]}
             for c in merged.cells if c.index in code]
    reply = res.worker.run({"kind": "notebook", "cells": cells, "cell_timeout": cell_timeout,
                            "timeout": notebook_timeout}, res.conf(None, source), limits)
    lines = executor.parse_lines(reply.get("output", ""))
    by_cell: dict[int, dict] = {}
    for line in lines:
        i = line.get("cell")
        if isinstance(i, int) and i not in by_cell:
            by_cell[i] = line
    timed_out = [i for i, line in by_cell.items() if line.get("timeout")]
    memory = [i for i, line in by_cell.items() if line.get("memory")]
    exit_code = reply.get("exit")
    if exit_code == executor.EXIT_TIMEOUT or timed_out:
        where = f" (cell {timed_out[0] + 1})" if timed_out else ""
        return _Run(by_cell, "timeout", f"the notebook ran out of time{where}: cell limit "
                                        f"{cell_timeout:g} s, notebook limit {notebook_timeout:g} s")
    if memory:
        return _Run(by_cell, "memory", f"the notebook exceeded the memory limit of "
                                       f"{limits.memory_mb} MB (cell {memory[0] + 1})")
    if not any(line.get("done") is True for line in lines):
        how = (f"killed by signal {exit_code - 128}" if isinstance(exit_code, int)
               and exit_code > 128 else f"exit code {exit_code}")
        return _Run(by_cell, "crashed", f"the notebook's process stopped unexpectedly ({how})")
    return _Run(by_cell, "ok", "")


def _plain_cell(scell: SourceCell, line: dict | None, run: _Run, iline: dict | None,
                irun: _Run, note: str, scrub: _Scrubber) -> tuple[CellResult, bool]:
    """A test cell outside the contract: the isolated test run (``iline``) decides,
    by nbgrader's rule; the notebook run (``line``) is the learner's feedback.

    As in nbgrader, a cell that passes and whose last expression is a number earns that
    many points (partial credit, clipped to ``[0, points]``). Returns the result and
    whether it contradicts a pass in the notebook run (tampering). A failure caused by a
    call to an exercise's reference (a stub in the learner's process) says so and is not
    counted as tampering: in the notebook run the reference was there.
    """
    passed, text = _kernel_outcome(iline, irun.status)
    k_pass, k_text = _kernel_outcome(line, run.status)
    if passed:
        status, points, message = "ok", scell.points, "passed"
        value = iline.get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            points = min(max(float(value), 0.0), scell.points)
            message = f"partial credit: {points:g} of {scell.points:g}"
        if not k_pass:
            message += f" (in the isolated run; notebook run: {scrub(k_text)})"
    else:
        points = 0.0
        status = irun.status if iline is None and irun.status != "ok" else "failed"
        message = scrub(text)
    inconclusive = iline is None or bool(iline.get("timeout") or iline.get("memory"))
    tampered = k_pass and not passed and not inconclusive and bool(iline.get("visible_failed"))
    called = None if passed else re.search(
        rf"(helpers[\w.]*) {re.escape(sandbox.REFERENCE_STUB_MARK)}", text)
    if called:      # the learner's code used the course's version: said so, not tampering
        tampered = False
        message = (f"answers must be your own implementation: your code called the course's "
                   f"{called.group(1)} ({message})")
    if tampered:
        message = ("tampering suspected: the test passed in the notebook but failed when run "
                   f"apart from your code ({message})")
    message += f" ({note})" if note else ""
    extra = [] if passed or iline is None else [
        "isolated test run: " + scrub(_kernel_outcome(iline, irun.status)[1])]
    return (CellResult(scell.grade_id, "test", points, scell.points, status, _short(message),
                       _feedback(line, scrub, [note] + extra)), tampered)


def _contract_cell(scell: SourceCell, specs: list[CaseSpec], verdicts: dict[str, _Verdict],
                   line: dict | None, run: _Run, note: str, missing: dict[str, str],
                   scrub: _Scrubber) -> tuple[CellResult, list[str]]:
    """A test cell about contract functions: the isolated verdicts decide.

    Returns the cell's result and the functions whose verdict contradicts a pass in the
    notebook run on the same (visible) cases: tampering.
    """
    k_pass, k_text = _kernel_outcome(line, run.status)
    k_text = scrub(k_text)
    problems, tampered, extra = [], [], []
    status = "ok"
    for spec in specs:
        v = verdicts[spec.function]
        idx = _select(v, spec)
        failed = [k for k in idx if v.problems[k] is not None]
        which = {None: "", True: "hidden ", False: "visible "}[spec.hidden]
        group = f", group {spec.group!r}" if spec.group in v.groups else ""
        extra.append(f"isolated check of {spec.function} ({which}cases{group}): "
                     f"{len(idx) - len(failed)}/{len(idx)} passed")
        if not failed:
            continue
        first = v.problems[failed[0]]
        extra.append(first)
        first = _summary(first)
        if spec.function in missing:
            status = "missing"
            first = f"answer cell {missing[spec.function]!r} not found in the submission"
        elif v.status != "ok" and status == "ok":
            status = v.status
        problems.append(first)
        if k_pass and spec.in_kernel and any(not v.hidden[k] and not v.inconclusive[k]
                                             for k in failed):
            tampered.append(spec.function)
    if not problems:
        points = scell.points
        message = "passed" if k_pass else f"passed the isolated check (notebook run: {k_text})"
    else:
        points, status = 0.0, status if status != "ok" else "failed"
        message = problems[0]
        if tampered:
            message = (f"tampering suspected: the test passed in the notebook, but the isolated "
                       f"re-run of {', '.join(dict.fromkeys(tampered))} failed the same checks "
                       f"({message})")
    if note:
        message += f" ({note})"
    return (CellResult(scell.grade_id, "test", points, scell.points, status,
                       _short(scrub(message)), _feedback(line, scrub, extra)),
            list(dict.fromkeys(tampered)))


def grade_notebook(submission: Path, assignment: str, *, cell_timeout: float = 30,
                   notebook_timeout: float = 120, memory_mb: int = 2048,
                   solutions: Path | None = None) -> NotebookResult:
    """Grade one submitted notebook against ``solutions/<assignment>/`` (see module doc).

    Takes at most ``2 * notebook_timeout`` seconds plus a few: the notebook run, then the
    isolated runs sharing a second budget. ``solutions`` replaces the repository's
    ``solutions/`` folder (for tests). Raises
    only when the grader itself cannot run (``executor.WorkerError``), never because of
    the submission.
    """
    t0 = time.perf_counter()
    submission = Path(submission)
    result = NotebookResult(assignment, submission.name, "ok")
    try:
        source = load_source(assignment, submission.name, solutions)
    except (FileNotFoundError, ValueError, KeyError, TypeError) as exc:
        result.status, result.message = "invalid", f"unknown assignment or notebook ({exc})"
        return result
    try:
        student = read_submission(submission)
    except InvalidSubmission as exc:
        result.status, result.message = "invalid", str(exc)
        result.cells = [CellResult(c.grade_id, "test" if c.kind == "test" else "manual", 0,
                                   c.points, "invalid", _short(exc))
                        for c in source.cells if c.kind in ("test", "manual")]
        result.seconds = time.perf_counter() - t0
        return result

    _warm_model_caches(source)
    merged = merge(source, student)
    result.answers, result.flags = merged.answers, list(merged.flags)
    limits = sandbox.Limits(memory_mb=memory_mb, cpu_seconds=int(notebook_timeout) + 10)
    res = _resources()
    scrub = _Scrubber(source)

    # 1. The notebook run.
    run = _notebook_run(merged, source, res, cell_timeout, notebook_timeout, limits)
    result.status, result.message = run.status, run.message

    # 2. The authoritative verdicts, one isolated run per contract function tested.
    answer_functions = _answer_functions(source)
    local_functions = tuple(fn for names in answer_functions.values() for fn in names)
    specs = {c.grade_id: case_specs(c.source_cell, _kernel_source(c.source_cell), local_functions)
             for c in merged.cells if c.kind == "test"}
    # They share one budget of notebook_timeout seconds (so grading a notebook takes at
    # most twice notebook_timeout, plus a few seconds, whatever it does).
    verdicts: dict[str, _Verdict] = {}
    budget_end = time.monotonic() + notebook_timeout
    for fn in dict.fromkeys(s.function for ss in specs.values() for s in ss):
        left = max(1.0, budget_end - time.monotonic())
        verdicts[fn] = _verdict(fn, merged, specs, source, res, min(cell_timeout, left), left,
                                limits)
    missing = {fn: gid for gid, names in answer_functions.items() if gid in merged.missing
               for fn in names}
    plain = [c.grade_id for c in merged.cells if c.kind == "test" and not specs[c.grade_id]]
    irun = _Run({}, "ok", "")
    if plain:
        left = max(1.0, budget_end - time.monotonic())
        irun = _isolated_tests(plain, merged, source, res, min(cell_timeout, left), left, limits)
    if res.worker.mode == "fallback":
        res.cleanup_fallback()

    # 3. Points per graded cell, in source order.
    index_of = {c.grade_id: c.index for c in merged.cells if c.kind == "test"}
    for scell in source.cells:
        if scell.kind == "manual":
            text = merged.answers.get(scell.grade_id, "")
            result.cells.append(CellResult(
                scell.grade_id, "manual", 0.0, scell.points, "needs_manual_grade",
                "graded by hand" if text.strip() else "graded by hand (the answer is empty)"))
        elif scell.kind == "test":
            line = run.by_cell.get(index_of[scell.grade_id])
            note = merged.notes.get(scell.grade_id, "")
            if specs[scell.grade_id]:
                cell, tampered = _contract_cell(scell, specs[scell.grade_id], verdicts, line,
                                                run, note, missing, scrub)
                if tampered:
                    result.flags.append(
                        f"tampering suspected in {scell.grade_id}: the test passed in the "
                        f"notebook, but the isolated re-run of {', '.join(tampered)} failed "
                        f"the same checks")
            else:
                cell, tampered = _plain_cell(scell, line, run, irun.by_cell.get(scell.grade_id),
                                             irun, note, scrub)
                if tampered:
                    result.flags.append(
                        f"tampering suspected in {scell.grade_id}: the test passed in the "
                        f"notebook but failed when run apart from the learner's code")
            result.cells.append(cell)
    result.seconds = time.perf_counter() - t0
    return result
