"""Example submissions for the instructor's first run, generated on demand.

``python -m autograder make-examples [--dest DIR]`` writes into ``DIR`` (default
``grading-output/example-class/``, never committed), from the course's own solution and
student notebooks:

``submissions/<student>/<assignment>/<notebook>.ipynb`` for these students:

* ``perfect``: every answer cell holds the solution.
* ``unanswered``: the student notebooks exactly as released.
* ``typical_mistakes_1`` and ``typical_mistakes_2``: the solution, except that in each
  notebook the last exercise that has a known mistake written below gets that mistake
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
notebooks by the rules above (``tests/test_examples.py`` generates the examples, grades
them and checks it); ``EXPECTED.md`` is the same as a table for people. Only these two
are committed, in ``tests/fixtures/examples/`` (``make examples`` refreshes them, and the
tests fail while they are stale); ``make grade-examples`` generates the class, grades it
and prints the summary.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import nbformat

from autograder import NOTEBOOKS_DIR, REPO_ROOT, SOLUTIONS_DIR
from autograder.notebook import stored as notebook_format
from autograder.notebook import cells as nbcells
from autograder.results.feedback import tests_of

#: Where ``make-examples`` writes the example class by default (generated, not committed).
EXAMPLES_DIR = REPO_ROOT / "grading-output" / "example-class"
#: The committed expectations (``EXPECTED.json``, ``EXPECTED.md``).
EXPECTED_DIR = REPO_ROOT / "tests" / "fixtures" / "examples"

#: Wrong answers students typically write, per contract function: (what is wrong, cell source).
MISTAKES: dict[str, list[tuple[str, str]]] = {
    "dot": [
        ("element-wise product, never summed", """\
import numpy as np

def dot(a, b):
    return np.asarray(a, dtype=float) * np.asarray(b, dtype=float)
"""),
    ],
    "cosine_similarity": [
        ("divided by |a| only", """\
import numpy as np

def cosine_similarity(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(a @ b / np.linalg.norm(a))
"""),
    ],
    "pairwise_scores": [
        ("X^T X instead of X X^T", """\
import numpy as np

def pairwise_scores(X):
    X = np.asarray(X, dtype=float)
    return X.T @ X
"""),
        ("cosine similarities instead of dot products", """\
import numpy as np

def pairwise_scores(X):
    X = np.asarray(X, dtype=float)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    return unit @ unit.T
"""),
    ],
    "softmax": [
        ("maximum not subtracted: overflows for large inputs", """\
import numpy as np

def softmax(z, axis=-1):
    with np.errstate(all="ignore"):
        e = np.exp(np.asarray(z, dtype=float))
        return e / e.sum(axis=axis, keepdims=True)
"""),
        ("normalised over the whole array, not along the axis", """\
import numpy as np

def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum()
"""),
    ],
    "simple_self_attention": [
        ("scores not divided by sqrt(d)", """\
import numpy as np

def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    scores = X @ X.T
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ X
"""),
        ("softmax over the wrong axis", """\
import numpy as np

def simple_self_attention(X):
    X = np.asarray(X, dtype=float)
    scores = X @ X.T / np.sqrt(X.shape[-1])
    w = np.exp(scores - scores.max(axis=0, keepdims=True))
    w = w / w.sum(axis=0, keepdims=True)
    return w @ X
"""),
    ],
    "scaled_dot_product_attention": [
        ("scores not divided by sqrt(d_k)", """\
import numpy as np

def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -1e30)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ V, w
"""),
        ("mask applied after the softmax", """\
import numpy as np

def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    if mask is not None:
        w = np.where(mask, w, 0.0)
    return w @ V, w
"""),
    ],
    "causal_mask": [
        ("upper triangle: queries see the future", """\
import numpy as np

def causal_mask(n):
    return np.triu(np.ones((n, n), dtype=bool))
"""),
    ],
    "cross_attention": [
        ("keys and values taken from the decoder", """\
import numpy as np

def cross_attention(X_dec, H_enc, W_Q, W_K, W_V):
    X_dec = np.asarray(X_dec, dtype=float)
    Q, K, V = X_dec @ W_Q, X_dec @ W_K, X_dec @ W_V
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""),
    ],
    "split_heads": [
        ("reshaped without moving the head axis", """\
import numpy as np

def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    N, d = X.shape[-2:]
    return X.reshape(*X.shape[:-2], n_heads, N, d // n_heads)
"""),
    ],
    "multi_head_attention": [
        ("scores divided by sqrt(d_model), not sqrt(d_model / n_heads)", """\
import numpy as np

def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=float)
    N, d_model = X.shape
    d_h = d_model // n_heads
    heads = []
    for c in range(n_heads):
        cols = slice(c * d_h, (c + 1) * d_h)
        Q, K, V = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]
        scores = Q @ K.T / np.sqrt(d_model)
        if causal:
            scores = np.where(np.tril(np.ones((N, N), dtype=bool)), scores, -1e30)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        heads.append((w / w.sum(axis=-1, keepdims=True)) @ V)
    return np.concatenate(heads, axis=-1) @ W_O
"""),
        ("no output projection W_O", """\
import numpy as np

def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=float)
    N, d_model = X.shape
    d_h = d_model // n_heads
    heads = []
    for c in range(n_heads):
        cols = slice(c * d_h, (c + 1) * d_h)
        Q, K, V = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]
        scores = Q @ K.T / np.sqrt(d_h)
        if causal:
            scores = np.where(np.tril(np.ones((N, N), dtype=bool)), scores, -1e30)
        w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        heads.append((w / w.sum(axis=-1, keepdims=True)) @ V)
    return np.concatenate(heads, axis=-1)
"""),
    ],
    "layer_norm": [
        ("variance with ddof=1", """\
import numpy as np

def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, ddof=1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
"""),
        ("eps added outside the square root", """\
import numpy as np

def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / (x.std(axis=-1, keepdims=True) + eps) + beta
"""),
    ],
    "feed_forward": [
        ("no ReLU", """\
import numpy as np

def feed_forward(x, W1, b1, W2, b2):
    return (np.asarray(x, dtype=float) @ W1 + b1) @ W2 + b2
"""),
    ],
    "transformer_block": [
        ("no residual connection", """\
from helpers import feed_forward, layer_norm, multi_head_attention

def transformer_block(x, params, n_heads, causal=True):
    p = params
    t1 = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    t2 = multi_head_attention(t1, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal)
    t4 = layer_norm(t2, p["ln2_gamma"], p["ln2_beta"])
    return feed_forward(t4, p["W1"], p["b1"], p["W2"], p["b2"])
"""),
        ("post-norm: layer norm after each residual sum", """\
from helpers import feed_forward, layer_norm, multi_head_attention

def transformer_block(x, params, n_heads, causal=True):
    p = params
    t3 = layer_norm(x + multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"],
                                             n_heads, causal), p["ln1_gamma"], p["ln1_beta"])
    h = t3 + feed_forward(t3, p["W1"], p["b1"], p["W2"], p["b2"])
    return layer_norm(h, p["ln2_gamma"], p["ln2_beta"])
"""),
    ],
    "lm_head": [
        ("logits with E's first columns instead of E^T", """\
import numpy as np

def lm_head(h, E):
    h, E = np.asarray(h, dtype=float), np.asarray(E, dtype=float)
    return h @ E[: h.shape[-1], :]
"""),
    ],
    "cross_entropy": [
        ("summed over rows, not averaged", """\
import numpy as np

def cross_entropy(logits, targets):
    logits = np.asarray(logits, dtype=float)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return float(-log_p[np.arange(len(targets)), targets].sum())
"""),
        ("maximum not subtracted: overflows for large logits", """\
import numpy as np

def cross_entropy(logits, targets):
    logits = np.asarray(logits, dtype=float)
    with np.errstate(all="ignore"):
        p = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        return float(-np.log(p[np.arange(len(targets)), targets]).mean())
"""),
    ],
}

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


def _without_markers(source: str) -> str:
    """A solution cell's source without nbgrader's ``### BEGIN/END SOLUTION`` lines."""
    return "\n".join(line for line in source.splitlines()
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def solved(released, solution) -> nbformat.NotebookNode:
    """The released notebook with every answer cell holding the solution's code and every
    written answer holding an example sentence."""
    nb = copy.deepcopy(released)
    answers = {_grading(c)["grade_id"]: _without_markers(c.source)
               for c in solution.cells if _grading(c).get("solution")}
    for cell in nb.cells:
        meta = _grading(cell)
        if meta.get("solution") and meta.get("grade_id") in answers:
            cell.source = answers[meta["grade_id"]] if cell.cell_type == "code" else WRITTEN_ANSWER
    return nb


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
    ids = answer_ids(nb)
    return [t for t, _ in test_cells(nb) if tests_of(t, ids) in set(functions)]


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
        with_mistakes = [f for f in answer_ids(solution_nb) if f in MISTAKES]
        for variant, student in enumerate(("typical_mistakes_1", "typical_mistakes_2")):
            candidates = [f for f in with_mistakes if len(MISTAKES[f]) > variant] or with_mistakes
            description = ("in each notebook the last exercise with a known mistake is answered"
                           f" with mistake variant {variant + 1}, the rest is right")
            if not candidates:
                add(student, rel, perfect, _expect(solution_nb, status=ok, full=all_tests, points=full,
                                                   note="no known mistake for this notebook"),
                    description)
                continue
            function = candidates[-1]
            label, source = MISTAKES[function][min(variant, len(MISTAKES[function]) - 1)]
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
    last_source = _without_markers(
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
             "Generated by `python -m autograder make-examples` with `EXPECTED.json`;"
             " `tests/test_examples.py` grades the examples and checks every row.",
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

