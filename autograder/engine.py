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

Execution (:mod:`autograder.isolation`, :mod:`autograder.slicing`)
    Every graded exercise is declared once, in ``helpers/exercises/<name>.py`` (its
    reference, visible and hidden cases, known mistakes, the earlier course functions it
    uses, the references it refuses), and every test cell is the one line
    ``check("<name>", <name>)`` (plus ``hidden=True`` in its hidden block).

    1. The *notebook run*: the merged notebook in a confined child of a pre-warmed
       worker, cell by cell: every answer and test cell, and of the other cells the
       statements those depend on (demonstrations that grading does not need, such as
       text generation or explorers, are skipped). A test cell passes iff it raised
       nothing and wrote nothing to stderr (nbgrader's rule). Hidden tests are not run
       here (step 2 judges them), so their source never enters the learner's process.
    2. The *authoritative verdict* for every exercise with a test cell: a separate
       confined child whose ``helpers`` lacks the exercise's reference, the functions it
       refuses and every hidden case, runs its answer cell and, from the other cells
       before its first test, the statements its function needs (slow top-level work of
       other answer cells is not run again), binds the
       earlier course functions it uses to the course's own (a mistake in the learner's
       ``layer_norm`` costs points in ``layer_norm``'s test only, not again in
       ``transformer_block``'s), then calls the function on every case of the registry
       (visible and hidden; a *scenario* case runs a small script around it: two calls
       sharing a KV cache, the same seed twice) and returns only the outputs. This
       process (trusted) compares them with ``helpers.checks.compare``.
    The points of every test cell come from step 2, never from step 1: a correct answer
    keeps its points even if the notebook run failed (a warning on stderr, a crash or a
    time-out in an unrelated cell), and a test that passed in the notebook but fails its
    authoritative run on the same visible cases scores 0 and is flagged "tampering
    suspected". Step 1 is the learner's feedback (what their notebook does) and the
    witness for those flags.

Budget per notebook: the notebook run has ``notebook_timeout`` seconds (default 120,
``--timeout``) and each cell ``cell_timeout`` (default 30, ``--cell-timeout``); the
verdicts share a second ``notebook_timeout``, each call of the learner's function at
most ``cell_timeout``. A notebook run that runs out of time costs nothing by itself
(its status says ``timeout``; the verdicts decide the points); an exercise whose calls
run out of time loses that exercise's points, and the exercises after it in the budget
are judged with what time is left. Every request to the worker carries an id that its
reply repeats: a late reply is dropped, never taken for the next request's.

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

from autograder import REPO_ROOT, SOLUTIONS_DIR, slicing
from autograder import cells as cells_mod
from autograder.isolation import confine, executor, helpers_copy, seccomp, wire
# What the grading command needs of the boundary, through this module only.
from autograder.isolation.confine import UnsafeToGrade  # noqa: F401

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


_nbgrader = cells_mod.nbgrader
_kind = cells_mod.kind_of


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


def _exercise_names() -> tuple[str, ...]:
    from helpers import exercises

    return exercises.names()


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


@dataclass(frozen=True)
class CaseSpec:
    """A set of check cases: those of exercise ``function`` (visible/hidden/both), maybe
    one group."""

    function: str
    hidden: bool | None       # None: visible and hidden
    group: str | None
    in_kernel: bool           # whether the notebook run executes these checks


def case_specs(cell: SourceCell, kernel_source: str) -> list[CaseSpec]:
    """The check cases a source test cell stands for: its ``check(...)`` calls (empty:
    the cell checks nothing the grader knows, an error in the course's source)."""
    functions = set(_exercise_names())
    specs = []
    try:
        tree = ast.parse(cell.source.replace(BEGIN_HIDDEN, "").replace(END_HIDDEN, ""))
        kernel_tree = ast.parse(kernel_source)
    except SyntaxError:
        return []
    in_kernel = {_check_call(n) for n in ast.walk(kernel_tree)} - {None}
    for node in ast.walk(tree):
        call = _check_call(node)
        if call and call[0] in functions:
            specs.append(CaseSpec(call[0], call[1], call[2], call in in_kernel))
    return list(dict.fromkeys(specs))


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
        if _kind(ctype, nbg) == "test":
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


#: The plain-data codec of the wire (no pickle), which a student bundle ships to read its
#: stored cases (autograder/bundle.py).
PLAIN_DATA_CODEC = Path(wire.__file__)


def plain_data(obj) -> bytes:
    """``obj`` in the wire's plain-data form (see ``PLAIN_DATA_CODEC``)."""
    return wire.encode(obj)


def from_plain_data(data: bytes, max_bytes: int):
    """What :func:`plain_data` wrote (at most ``max_bytes``); nothing but plain values."""
    return wire.decode(data, max_bytes=max_bytes)


class _Resources:
    """Per-process copies of ``helpers`` (full, and one per exercise with what that
    exercise must not find stubbed) and data."""

    def __init__(self, worker: executor.Worker):
        self.worker = worker
        self.base = worker.home
        os.chmod(self.base, 0o711)
        self._helpers: dict[str | None, str] = {}
        self._data: dict[str, str | None] = {}
        self._arrays: set[str] = set()
        self._jobs = 0

    def helpers(self, strip: str | None) -> str:
        if strip not in self._helpers:
            dest = self.base / ("helpers-full" if strip is None else f"helpers-no-{strip}")
            dest.mkdir(exist_ok=True)
            os.chmod(dest, 0o755)
            self._helpers[strip] = str(helpers_copy.prepare_helpers(dest, strip=strip))
        return self._helpers[strip]

    def arrays(self, strip: str, store: dict) -> None:
        """The large arrays of exercise ``strip``'s cases, beside its helpers copy."""
        if store and strip not in self._arrays:
            wire.write_arrays(store, Path(self.helpers(strip)) / executor.ARRAYS_FOLDER)
            self._arrays.add(strip)

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


_PREPARED: set[str] = set()


def _prepare(source: Source) -> None:
    """Run what the assignment declares it needs prepared (``helpers.exercises.PREPARE``,
    e.g. building the SmolLM2 weights cache), once per process, in a trusted subprocess
    before any child needs it: the children see the caches read-only, so a missing
    cache would cost every graded notebook a conversion. A failure here only costs
    speed, never a grade."""
    from helpers import exercises

    for spec in exercises.PREPARE.get(source.assignment, ()):
        if spec in _PREPARED:
            continue
        _PREPARED.add(spec)
        module, _, function = spec.partition(":")
        code = f"import {module} as m\nm.{function}()\n"
        try:
            subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600,
                           cwd=str(REPO_ROOT),
                           env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        except (OSError, subprocess.SubprocessError):
            pass


def check_safe_to_grade(stream=None) -> str:
    """Decide, before any notebook runs, whether student code may run here (see
    :func:`autograder.isolation.confine.check_safe_to_grade`); also say so when the
    seccomp deny-list cannot be installed. Returns the isolation mode."""
    mode = confine.check_safe_to_grade(stream=stream)
    ok, why = seccomp.available()
    if not ok:
        print(f"warning: no seccomp filter for student code: {why}. Keyrings, BPF, perf "
              "events and io_uring stay callable (docs/threat_model.md).",
              file=stream or sys.stderr, flush=True)
    return mode


def close_worker() -> None:
    """Stop this process's grading worker and remove its files."""
    executor.get_worker().close()


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
def _load_cases(function: str) -> tuple[tuple, tuple[bool, ...], tuple[str, ...],
                                         tuple[str | None, ...], tuple[tuple[str, str], ...],
                                         dict]:
    """The visible then hidden cases of exercise ``function``, which are hidden, their
    encoded arguments, their scenarios, the ``(name, "module:function")`` of the
    course functions it uses, and the large arrays the arguments name rather than carry
    (computed once per grading process; cases are fixed)."""
    from helpers import checks, exercises

    visible = list(checks.cases(function, hidden=False))
    hidden = list(checks.cases(function, hidden=True))
    cases = tuple(visible + hidden)
    store: dict = {}
    payloads = tuple(wire.b64(wire.encode((tuple(c.args), dict(c.kwargs)), store=store))
                     for c in cases)
    uses = tuple((dep, exercises.qualified(exercises.get(dep).reference))
                 for dep in exercises.get(function).uses)
    return (cases, (False,) * len(visible) + (True,) * len(hidden), payloads,
            tuple(c.scenario for c in cases), uses, store)


def _verdict(function: str, merged: Merged, specs_of: dict[str, list[CaseSpec]],
             source: Source, res: _Resources, cell_timeout: float, notebook_timeout: float,
             limits: confine.Limits) -> _Verdict:
    """Step 2 for one exercise: its outputs on every case, from a child whose ``helpers``
    lacks its reference (and what it refuses), in which the earlier course functions it
    uses are the course's own, compared here with ``helpers.checks.compare``.

    The child runs the exercise's own answer cell whole (what the learner's notebook
    runs to define it) and, from the other cells before its first test, only the
    statements the function needs (:mod:`autograder.slicing`): slow top-level work in
    other answer cells is not run again."""
    from helpers import checks

    cases, hidden, payloads, scenarios, uses, store = _load_cases(function)
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
           "scenarios": list(scenarios), "uses": dict(uses),
           "cell_timeout": cell_timeout, "case_timeout": cell_timeout,
           "timeout": notebook_timeout}
    conf = res.conf(function, source)
    res.arrays(function, store)
    reply = res.worker.run(job, conf, limits)
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
            problems.append(_case_error(function, case, err, str(line.get("where") or "")))
            continue
        try:
            got = wire.decode(wire.unb64(line.get("value")))
            problems.append(checks.compare(function, case, got))
        except wire.DecodeError as exc:
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


def _case_error(function: str, case, err: str, where: str = "") -> str:
    """Words for a case on which the isolated call raised (``err``: "Type: text";
    ``where``: the innermost function of the learner's code it came from)."""
    from helpers import checks

    if err.startswith("NotImplementedError"):
        if where and where != function and where.isidentifier():
            return (f"{where} is not implemented yet (your {function} calls it): replace "
                    f"`raise NotImplementedError()` in {where} by your code")
        return f"{function} is not implemented yet: replace `raise NotImplementedError()` by your code"
    stub = re.search(rf"([\w.]+) {re.escape(helpers_copy.REFERENCE_STUB_MARK)}", err)
    if stub:
        return (f"{function} must be your own implementation: it called {stub.group(1)} "
                f"(the course's answer, hidden while yours is graded)")
    if err.startswith("timeout"):
        label = f"case {getattr(case, 'name', '?')!r} ({getattr(case, 'description', '')})"
        return f"{label}: {function} did not finish ({err})"
    if getattr(case, "hidden", False):
        # only the exception's type: its text is the learner's, and could carry the
        # hidden inputs (which the child must have) out into the feedback page
        err = err.split(":", 1)[0][:60] + ": (the message of an error on a hidden case is not shown)"
    return checks.error_text(function, case, _short(err, 400))


def _brief(function: str, group: str, text: str) -> str:
    """A failing hidden case in a few words: which group, and the likely mistake."""
    mistake = next((line.strip() for line in text.splitlines()
                    if line.strip().startswith("Likely mistake:")), "")
    return (f"{function} failed a hidden case (group {group!r}; its inputs and expected "
            f"values are not shown)" + (f"\n  {mistake}" if mistake else ""))


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
        if isinstance(err, dict) and err.get("ename") == "CheckFailed":
            # the check's own words are the explanation; its traceback is the course's code
            parts.append("[your notebook's check]\n" + scrub(str(err.get("evalue", ""))))
        elif isinstance(err, dict):
            tb = scrub(str(err.get("traceback") or "")).strip()
            msg = scrub(f"{err.get('ename', 'Error')}: {err.get('evalue', '')}")
            parts.append("[error]\n" + (tb + "\n" if tb else "") + msg)
    for e in extra:                 # each explanation once: skip what is already shown
        e = scrub(e) if e else ""
        if e and not any(_same_case(e, p) for p in parts):
            parts.append(e)
    text = "\n\n".join(parts)
    return text if len(text) <= FEEDBACK_CHARS else text[:FEEDBACK_CHARS] + "\n[...]"


def _same_case(text: str, shown: str) -> bool:
    """Whether ``text`` (an explanation of a failing case) is already part of ``shown``."""
    head = " ".join(text.split("\n  Likely mistake", 1)[0].split())
    return bool(head) and head in " ".join(shown.split())   # the notebook's text is wrapped


@dataclass
class _Run:
    """What the notebook run reported: the first line per cell, and how it ended."""

    by_cell: dict[int, dict]
    status: str               # ok | timeout | memory | crashed
    message: str


def _notebook_run(merged: Merged, source: Source, res: _Resources, cell_timeout: float,
                  notebook_timeout: float, limits: confine.Limits) -> _Run:
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


def _exercise_cell(scell: SourceCell, specs: list[CaseSpec], verdicts: dict[str, _Verdict],
                   line: dict | None, run: _Run, note: str, missing: dict[str, str],
                   scrub: _Scrubber, hidden_feedback: str = "full"
                   ) -> tuple[CellResult, list[str]]:
    """A test cell (its ``check`` calls): the isolated verdicts decide. With
    ``hidden_feedback="brief"`` a failing hidden case is reported without its inputs and
    expected values (the likely mistake is still named).

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
        if hidden_feedback == "brief" and v.hidden[failed[0]]:
            first = _brief(spec.function, v.groups[failed[0]], first)
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
                   solutions: Path | None = None,
                   hidden_feedback: str = "full") -> NotebookResult:
    """Grade one submitted notebook against ``solutions/<assignment>/`` (see module doc).
    ``hidden_feedback``: ``full`` shows a failing hidden case's inputs and expected
    values, ``brief`` only that a hidden case of a group failed, and the likely mistake.

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

    _prepare(source)
    merged = merge(source, student)
    result.answers, result.flags = merged.answers, list(merged.flags)
    limits = confine.Limits(memory_mb=memory_mb, cpu_seconds=int(notebook_timeout) + 10)
    res = _resources()
    scrub = _Scrubber(source)

    # 1. The notebook run.
    try:
        run = _notebook_run(merged, source, res, cell_timeout, notebook_timeout, limits)
    except slicing.TooLarge as exc:
        result.status, result.message = "invalid", _short(exc)
        result.cells = [CellResult(c.grade_id, "test" if c.kind == "test" else "manual", 0,
                                   c.points, "invalid", _short(exc))
                        for c in source.cells if c.kind in ("test", "manual")]
        result.seconds = time.perf_counter() - t0
        return result
    result.status, result.message = run.status, run.message

    # 2. The authoritative verdicts, one isolated run per exercise tested.
    answer_functions = _answer_functions(source)
    specs = {c.grade_id: case_specs(c.source_cell, _kernel_source(c.source_cell))
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
            if not specs[scell.grade_id]:
                result.cells.append(CellResult(
                    scell.grade_id, "test", 0.0, scell.points, "invalid",
                    "grader error: this test cell of the course's source calls no check(...) "
                    "of a known exercise; tell your instructor"))
                continue
            cell, tampered = _exercise_cell(scell, specs[scell.grade_id], verdicts, line,
                                            run, note, missing, scrub, hidden_feedback)
            if tampered:
                result.flags.append(
                    f"tampering suspected in {scell.grade_id}: the test passed in the "
                    f"notebook, but the isolated re-run of {', '.join(tampered)} failed "
                    f"the same checks")
            result.cells.append(cell)
    result.seconds = time.perf_counter() - t0
    return result
