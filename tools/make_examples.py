"""Example submissions for the instructor's first run, generated on demand (a tool of the
course repository: it draws the typical mistakes from the test suite's catalogue).

``python tools/make_examples.py [--dest DIR] [--expected-only]`` (or ``python -m
autograder make-examples``, which runs it) writes into ``DIR`` (default
``grading-output/example-class/``, never committed), from the course's own solution and
student notebooks:

``submissions/<student>/<assignment>/<notebook>.ipynb`` for these students:

* ``perfect``: every answer cell holds the solution.
* ``unanswered``: the student notebooks exactly as released.
* ``typical_mistakes_1`` and ``typical_mistakes_2``: the solution, except that in each
  notebook the last exercise that has a wrong answer in the catalogue (``tests/catalogue/``)
  gets that mistake
  (the first or the second variant).
* ``calls_reference``: answers that just call ``helpers``' reference implementation of
  the same function (which earns nothing).
* broken files, each handing in only one notebook (the first with two answers or
  more): ``invalid_json`` (the file is
  cut off half way), ``infinite_loop`` (the last answer cell never ends),
  ``memory_hog``, ``output_flood``, ``kills_kernel`` and ``kills_parent`` (the last
  answer cell allocates without end, prints 300 000 lines, ends its own process, or
  sends SIGKILL to its parent),
  ``deleted_test`` (the first test cell deleted, otherwise perfect),
  ``duplicated_answer`` (the first answer cell pasted twice, otherwise perfect),
  ``stripped_metadata`` (no nbgrader metadata left) and ``edited_tests`` (every test
  cell emptied).

``EXPECTED.json`` says what grading each example must give, derived from the solution
notebooks by the rules above (``tests/tools/test_make_examples.py`` generates the examples, grades
them and checks it); ``EXPECTED.md`` is the same as a table for people. Only these two
are committed, in ``tests/fixtures/examples/`` (``make examples`` refreshes them, and the
tests fail while they are stale); ``make grade-examples`` generates the class, grades it
and prints the summary.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR  # noqa: E402
from autograder.notebook import stored as notebook_format  # noqa: E402
from autograder.notebook import cells as nbcells  # noqa: E402
from autograder.notebook.source import checked_exercise  # noqa: E402

#: Where ``make-examples`` writes the example class by default (generated, not committed).
EXAMPLES_DIR = REPO_ROOT / "grading-output" / "example-class"
#: The committed expectations (``EXPECTED.json``, ``EXPECTED.md``).
EXPECTED_DIR = REPO_ROOT / "tests" / "fixtures" / "examples"

#: The collection of wrong answers, one module per exercise (``WRONG = {key: (source,
#: words)}``, graded by the test suite through the real command): the typical mistakes of
#: the example class are drawn from it, so there is one list of wrong answers.
CATALOGUE_DIR = REPO_ROOT / "tests" / "catalogue"


def mistakes(function: str, catalogue: Path = CATALOGUE_DIR) -> list[tuple[str, str]]:
    """``[(key, answer cell source)]``: the catalogue's wrong answers to ``function``
    that a diagnosis names (keys starting with ``unknown_`` left out), in its order."""
    path = catalogue / f"{function}.py"
    if not path.is_file():
        return []
    spec = importlib.util.spec_from_file_location(f"_catalogue_{function}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(key, source) for key, (source, _words) in getattr(module, "WRONG", {}).items()
            if not key.startswith("unknown_")]


INFINITE_LOOP = "\nwhile True:  # waits for something that never happens\n    pass\n"
MEMORY_HOG = "\n_cache = []\nwhile True:  # keeps everything, forever\n    _cache.append(bytearray(50_000_000))\n"
OUTPUT_FLOOD = "\nfor step in range(300_000):  # debugging output left in\n    print('step', step, 'x' * 80)\n"
KILL_KERNEL = "\nimport os\n\nos._exit(1)  # ends the process running the notebook\n"
KILL_PARENT = "\nimport os, signal\n\nos.kill(os.getppid(), signal.SIGKILL)  # tries to kill the grader\n"
WRITTEN_ANSWER = "An example written answer (graded by hand)."


# --------------------------------------------------------------------------- notebooks

_grading = nbcells.nbgrader
_is_answer = nbcells.is_answer
_is_test = nbcells.is_test


def solved(released, solution) -> nbformat.NotebookNode:
    """The released notebook with every answer cell holding the solution's code and every
    written answer holding an example sentence."""
    return nbcells.with_model_answers(released, solution, written=WRITTEN_ANSWER)


# Expectations are computed from the solution notebook, which is what the engine grades
# against (points, test cells, answer cells), never from the example files themselves.

def answer_ids(nb) -> list[str]:
    return [_grading(c)["grade_id"] for c in nb.cells if _is_answer(c)]


def test_cells(nb) -> list[tuple[str, float]]:
    return [(_grading(c)["grade_id"], float(_grading(c).get("points", 0))) for c in nb.cells if _is_test(c)]


def with_answer(nb, grade_id: str, source: str):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if _is_answer(cell) and _grading(cell)["grade_id"] == grade_id:
            cell.source = source
    return nb


# --------------------------------------------------------------------------- expectations

def _expect(nb, *, status: list[str], full: list[str] = (), zero: list[str] = (),
            points: float | None = None, flagged: bool | None = None, note: str = "") -> dict:
    """An expectation for one notebook: allowed statuses, tests that must earn full marks,
    tests that must earn nothing, (when it follows) the exact autograded points, and
    whether the grader must flag the notebook for review (None: either)."""
    return {"status": sorted(status), "full_marks": sorted(full), "no_marks": sorted(zero),
            "points": points, "max_points": sum(p for _, p in test_cells(nb)),
            "flagged": flagged, "note": note}


def _tests_of_answers(nb, functions) -> list[str]:
    return [_grading(c)["grade_id"] for c in nb.cells
            if _is_test(c) and checked_exercise(c.source) in set(functions)]


def _tests_before(nb, grade_id: str) -> list[str]:
    """Tests of the answers that come before ``grade_id`` in the notebook."""
    ids = answer_ids(nb)
    return _tests_of_answers(nb, ids[: ids.index(grade_id)])


# --------------------------------------------------------------------------- the examples

def build(solutions: Path = SOLUTIONS_DIR, released: Path = NOTEBOOKS_DIR
          ) -> tuple[dict[str, str], dict]:
    """``({relative path: file text}, expectations)`` of every example."""
    files: dict[str, str] = {}
    expected: dict[str, dict] = {}
    pairs = []
    for folder in sorted(p for p in solutions.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for path in sorted(folder.glob("*.ipynb")):
            student_nb = released / folder.name / path.name
            if not student_nb.is_file():  # a notebook being written: not released yet
                print(f"make-examples: skipped {folder.name}/{path.name}: not released yet"
                      " (run `make release` first)", file=sys.stderr)
                continue
            pairs.append((f"{folder.name}/{path.name}", notebook_format.read(student_nb),
                          notebook_format.read(path)))

    def add(student: str, rel: str, nb_or_text, expectation: dict, description: str) -> None:
        text = nb_or_text if isinstance(nb_or_text, str) else notebook_format.dumps(nb_or_text)
        files[f"submissions/{student}/{rel}"] = text
        entry = expected.setdefault(student, {"description": description, "notebooks": {}})
        entry["notebooks"][rel] = expectation

    ok = ["ok"]  # the notebook ran to the end (whatever its tests said)
    for rel, released_nb, solution_nb in pairs:
        perfect = solved(released_nb, solution_nb)
        all_tests = [t for t, _ in test_cells(solution_nb)]
        full = sum(p for _, p in test_cells(solution_nb))
        add("perfect", rel, perfect, _expect(solution_nb, status=ok, full=all_tests, points=full,
                                             flagged=False),
            "every answer is the solution")
        add("unanswered", rel, released_nb,
            _expect(solution_nb, status=ok,
                    zero=_tests_of_answers(solution_nb, answer_ids(solution_nb))),
            "the released notebooks, handed in untouched")
        known = {f: mistakes(f) for f in answer_ids(solution_nb)}
        with_mistakes = [f for f in answer_ids(solution_nb) if known[f]]
        for variant, student in enumerate(("typical_mistakes_1", "typical_mistakes_2")):
            candidates = [f for f in with_mistakes if len(known[f]) > variant] or with_mistakes
            description = ("in each notebook the last exercise with a known mistake is answered"
                           f" with mistake variant {variant + 1}, the rest is right")
            if not candidates:
                add(student, rel, perfect, _expect(solution_nb, status=ok, full=all_tests, points=full,
                                                   note="no known mistake for this notebook"),
                    description)
                continue
            function = candidates[-1]
            label, source = known[function][min(variant, len(known[function]) - 1)]
            add(student, rel, with_answer(perfect, function, source),
                _expect(solution_nb, status=ok,
                        full=_tests_before(solution_nb, function),
                        zero=_tests_of_answers(solution_nb, [function]), note=f"{function}: {label}"),
                description)
        cheat = perfect
        for function in answer_ids(solution_nb):
            cheat = with_answer(cheat, function, f"import helpers\n\n{function} = helpers.{function}\n")
        add("calls_reference", rel, cheat,
            _expect(solution_nb, status=ok,
                    zero=_tests_of_answers(solution_nb, answer_ids(solution_nb))),
            "every answer calls the reference implementation in helpers (earns nothing)")

    # Broken files: in the first notebook with two answers or more (so that a failure in
    # the last one shows that what came before it still counts).
    rel, released_nb, solution_nb = next(
        (p for p in pairs if len(answer_ids(p[2])) >= 2), pairs[0])
    perfect = solved(released_nb, solution_nb)
    all_tests = [t for t, _ in test_cells(solution_nb)]
    full = sum(p for _, p in test_cells(solution_nb))

    text = notebook_format.dumps(perfect)
    add("invalid_json", rel, text[: len(text) // 2],
        _expect(solution_nb, status=["invalid"], zero=all_tests, points=0.0),
        "the notebook file is cut off half way: not valid JSON")

    last = answer_ids(solution_nb)[-1]
    last_source = nbcells.without_solution_markers(
        next(c.source for c in solution_nb.cells if _grading(c).get("grade_id") == last))
    # The function is defined before the cell goes wrong: whether its own tests still
    # score is the engine's call (its isolated re-run may judge the function alone), so
    # only the answers before it are pinned.
    before = _tests_before(solution_nb, last)
    add("infinite_loop", rel, with_answer(perfect, last, last_source + INFINITE_LOOP),
        _expect(solution_nb, status=["timeout"], full=before),
        f"the answer cell of {last} never ends (the answers before it are right)")
    add("memory_hog", rel, with_answer(perfect, last, last_source + MEMORY_HOG),
        _expect(solution_nb, status=["crashed", "memory"], full=before),
        f"the answer cell of {last} allocates memory until the cap stops it")
    add("output_flood", rel, with_answer(perfect, last, last_source + OUTPUT_FLOOD),
        _expect(solution_nb, status=["ok", "timeout"], full=before),
        f"the answer cell of {last} prints 300 000 long lines (the output is capped)")
    add("kills_kernel", rel, with_answer(perfect, last, last_source + KILL_KERNEL),
        _expect(solution_nb, status=["crashed"], full=before),
        f"the answer cell of {last} ends the notebook's process with os._exit")
    add("kills_parent", rel, with_answer(perfect, last, last_source + KILL_PARENT),
        _expect(solution_nb, status=["ok", "crashed"], full=before),
        f"the answer cell of {last} sends SIGKILL to its parent process (the grader survives)")

    deleted = copy.deepcopy(perfect)
    first_test = next(i for i, c in enumerate(deleted.cells) if _is_test(c))
    removed = _grading(deleted.cells[first_test])["grade_id"]
    del deleted.cells[first_test]
    add("deleted_test", rel, deleted,
        _expect(solution_nb, status=ok, full=all_tests, points=full, flagged=True,
                note=f"test cell {removed} deleted: restored from the solution"),
        "right answers, but a test cell was deleted")

    duplicated = copy.deepcopy(perfect)
    first_answer = next(i for i, c in enumerate(duplicated.cells) if _is_answer(c))
    twin = copy.deepcopy(duplicated.cells[first_answer])
    twin["id"] = twin.get("id", "cell") + "-copy"
    duplicated.cells.insert(first_answer + 1, twin)
    add("duplicated_answer", rel, duplicated,
        _expect(solution_nb, status=ok, full=all_tests, points=full, flagged=True,
                note=f"answer cell {_grading(twin)['grade_id']} pasted twice: the first is graded"),
        "right answers, but an answer cell was pasted twice")

    stripped = copy.deepcopy(perfect)
    for cell in stripped.cells:
        cell.metadata = nbformat.from_dict({})
    add("stripped_metadata", rel, stripped,
        _expect(solution_nb, status=ok, full=all_tests, points=full, flagged=True,
                note="answers matched by their def lines, tests restored"),
        "right answers, but the cells' nbgrader metadata is gone (cells copied to a new notebook)")

    edited = copy.deepcopy(perfect)
    for cell in edited.cells:
        if _is_test(cell):
            cell.source = "pass  # the tests were in the way"
    add("edited_tests", rel, edited,
        _expect(solution_nb, status=ok, full=all_tests, points=full, flagged=True,
                note="every test cell replaced by `pass`: restored from the solution"),
        "right answers, but every test cell was emptied")
    return files, expected


def expected_markdown(expected: dict) -> str:
    lines = ["# Expected outcomes of the example submissions", "",
             "Generated by `python tools/make_examples.py` with `EXPECTED.json`;"
             " `tests/tools/test_make_examples.py` grades the examples and checks every row.",
             "Points are the autograded points (written answers are graded by hand); `-` means"
             " the total is not fixed: EXPECTED.json lists the tests that must earn full marks"
             " and those that must earn nothing.", "",
             "| student | notebook | status | points | flagged | what it shows |",
             "|---|---|---|---|---|---|"]
    for student, entry in expected.items():
        for rel, e in entry["notebooks"].items():
            points = "-" if e["points"] is None else f"{e['points']:g}"
            flagged = {None: "-", True: "yes", False: "no"}[e["flagged"]]
            what = entry["description"] + (f" ({e['note']})" if e["note"] else "")
            lines.append(f"| {student} | {rel} | {' or '.join(e['status'])} | {points} / "
                         f"{e['max_points']:g} | {flagged} | {what} |")
    return "\n".join(lines) + "\n"


def make_examples(dest: Path = EXAMPLES_DIR, solutions: Path = SOLUTIONS_DIR,
                  released: Path = NOTEBOOKS_DIR, expected_only: bool = False) -> list[Path]:
    """(Re)write the examples into ``dest``; return the files that changed (or went).
    With ``expected_only``, only ``EXPECTED.json`` and ``EXPECTED.md``."""
    files, expected = build(solutions, released)
    if expected_only:
        files = {}
    files["EXPECTED.json"] = json.dumps(expected, indent=1, sort_keys=False) + "\n"
    files["EXPECTED.md"] = expected_markdown(expected)
    changed = []
    for rel, text in sorted(files.items()):
        path = dest / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    submissions = dest / "submissions"
    if submissions.is_dir():
        for path in sorted(submissions.rglob("*")):
            if path.is_file() and path.relative_to(dest).as_posix() not in files:
                path.unlink()
                changed.append(path)
        for folder in sorted((p for p in submissions.rglob("*") if p.is_dir()), reverse=True):
            if not any(folder.iterdir()):
                folder.rmdir()
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/make_examples.py",
                                     description="regenerate the example submissions")
    parser.add_argument("--dest", default=str(EXAMPLES_DIR),
                        help="where to write (default: grading-output/example-class/)")
    parser.add_argument("--expected-only", action="store_true",
                        help="write only EXPECTED.json and EXPECTED.md (make examples: into "
                             "tests/fixtures/examples)")
    args = parser.parse_args(argv)
    dest = Path(args.dest)
    changed = make_examples(dest, expected_only=args.expected_only)
    for path in changed:
        print(f"updated {_show(path)}")
    print(f"make-examples: {len(changed)} file(s) changed in {_show(dest)}")
    return 0


def _show(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
