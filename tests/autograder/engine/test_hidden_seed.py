"""Hidden inputs drawn per student from the instructor's secret (issue 23, "Hidden cases
worth nothing once leaked"; autograder/run/secret.py).

Through the real command (``python -m autograder grade``):

* the grader draws each student's hidden inputs from HMAC(secret, student, notebook):
  a student whose answer is wrong exactly on the hidden inputs computed for her from the
  secret loses the points; a classmate who hard-codes those same inputs (copied from her
  feedback page), or the default-seed hidden inputs anyone can see in the repository,
  loses nothing: his hidden inputs are other ones;
* a regrade with the same secret gives the same records, byte for byte but for the time;
* the secret is made on the first ``grade`` (mode 0600) and is in no record, feedback
  page or export; the notebook's process cannot find it.

And in this process, as a class: every exercise whose contract draws hidden cases, for
many students' seeds, draws cases inside its contract on which the reference and every
right answer of the catalogue (tests/catalogue/, written differently) pass.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import helpers
from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.run import secret as hidden
from helpers import course
from helpers.course import judge


NB = "02_softmax"


# ---------------------------------------------------------------------------------------
# The class: any seed, a right answer passes
# ---------------------------------------------------------------------------------------

DRAWING = [n for n in course.names() if course.get(n).draws_hidden]
STUDENTS = [f"student{i}" for i in range(8)]


def test_most_exercises_draw_their_hidden_cases():
    # the seed matters only where a contract draws: most exercises of notebooks 00-10
    assert len(DRAWING) >= 30, DRAWING
    assert {"softmax", "layer_norm", "multi_head_attention"} <= set(DRAWING)


def _drawn_hidden(name: str, student: str) -> list:
    ex = course.get(name)
    seed = hidden.hidden_seed(b"a secret of the class " * 2, student, ex.notebook,
                              f"{ex.notebook}.ipynb")
    return [c for c in ex.all_cases(seed) if c.hidden and c.group == "contract"]


@pytest.mark.parametrize("name", DRAWING)
def test_right_answers_pass_the_hidden_cases_of_every_student(name):
    import catalogue

    ex = course.get(name)
    right = {"reference": ex.answer}            # the reference as learners call it
    module = importlib.import_module(f"catalogue.{name}")
    for key, source in module.CORRECT.items():
        ns = {"np": np, "math": math, "helpers": helpers, "__name__": "answer"}
        ns.update({other: course.get(other).answer for other in course.names()
                   if other != name})          # the notebook's earlier functions
        exec(source, ns)                       # noqa: S102 (the catalogue's answers)
        right[key] = ns[name]
    assert catalogue.exercises() and len(right) >= 1
    seen, floats = [], False
    for student in STUDENTS:
        cases = _drawn_hidden(name, student)
        assert cases, name
        seen.append(repr([(c.args, c.kwargs) for c in cases]))
        floats = floats or any(isinstance(a, np.ndarray) and a.dtype.kind == "f"
                               for c in cases for a in c.args)
        for case in cases:
            assert course.contract_problems(ex, case) == [], (student, case.name)
            for key, fn in right.items():
                with judge.quiet():
                    got = case.run(fn)
                assert judge.compare(course.get(name), case, got) is None, (student, key, case.name)
    # every student has hidden inputs of their own where values are drawn (a causal
    # mask's only input is its size: few to choose from, but not one for all)
    assert len(set(seen)) == len(STUDENTS) if floats else len(set(seen)) >= 2, name


def test_the_seed_is_an_hmac_of_student_and_notebook():
    a = hidden.hidden_seed(b"k" * 32, "ann", NB, f"{NB}.ipynb")
    assert a == hidden.hidden_seed(b"k" * 32, "ann", NB, f"{NB}.ipynb")
    assert a != hidden.hidden_seed(b"k" * 32, "bob", NB, f"{NB}.ipynb")
    assert a != hidden.hidden_seed(b"K" * 32, "ann", NB, f"{NB}.ipynb")
    assert a != hidden.hidden_seed(b"k" * 32, "ann", "03_simple_self_attention",
                                   "03_simple_self_attention.ipynb")
    # no concatenation ambiguity between the id and the notebook
    assert hidden.hidden_seed(b"k" * 32, "a", "b/c", "d") != \
        hidden.hidden_seed(b"k" * 32, "a\0b", "c", "d")


# ---------------------------------------------------------------------------------------
# Through the real command
# ---------------------------------------------------------------------------------------


def _grade(subs: Path, out: Path, tmp: Path, *extra: str, env: dict | None = None
           ) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != hidden.ENV}
    environ.update(TMPDIR=str(tmp), OPENBLAS_NUM_THREADS="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1", *extra], cwd=REPO_ROOT, env=environ,
                          capture_output=True, text=True, timeout=900)


def _hand_in(subs: Path, student: str, softmax_source: str | None = None,
             notebook: str = NB) -> None:
    """The solution notebook, with the answer to softmax replaced when given."""
    nb = json.loads((SOLUTIONS_DIR / notebook / f"{notebook}.ipynb").read_text())
    if softmax_source is not None:
        for cell in nb["cells"]:
            if cell["metadata"].get("nbgrader", {}).get("grade_id") == "softmax":
                cell["source"] = softmax_source
    dest = subs / student / notebook / f"{notebook}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(nb))


def _wrong_on(inputs: list) -> str:
    """A softmax that is right everywhere except on exactly these inputs (hard-coded
    hidden cases: what a student copies from a feedback page)."""
    listed = [np.asarray(z, dtype=float).tolist() for z in inputs]
    return (f"import numpy as np\n_COPIED = [np.array(z, dtype=float) for z in {listed!r}]\n\n"
            "def softmax(z, axis=-1):\n"
            "    a = np.asarray(z, dtype=float)\n"
            "    e = np.exp(a - a.max(axis=axis, keepdims=True))\n"
            "    out = e / e.sum(axis=axis, keepdims=True)\n"
            "    if any(c.shape == a.shape and np.array_equal(c, a) for c in _COPIED):\n"
            "        return out * 0.5\n"
            "    return out\n")


def _points(out: Path) -> dict[tuple[str, str], float]:
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {(r["student_id"], c["grade_id"]): c["points"] for r in records for c in r["cells"]
            if c["kind"] == "test"}


def _records(out: Path) -> dict[str, dict]:
    out_ = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        r.pop("seconds")
        out_[r["student_id"]] = r
    return out_


def _inputs(cases) -> list:
    return [c.args[0] for c in cases]


def test_each_student_is_graded_on_hidden_inputs_of_their_own(tmp_path):
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    key = tmp_path / "keep" / "grading.key"
    secret = hidden.load(key)                        # made as grade would make it
    assert stat.S_IMODE(key.stat().st_mode) == 0o600

    ex = course.get("softmax")

    def drawn(student: str | None) -> list:
        seed = None if student is None else hidden.hidden_seed(secret, student, NB,
                                                               f"{NB}.ipynb")
        return [c for c in ex.all_cases(seed) if c.hidden and c.group == "contract"]

    ann = drawn("ann")
    assert ann
    _hand_in(subs, "ann", _wrong_on(_inputs(ann)))        # wrong exactly on her inputs
    _hand_in(subs, "bob", _wrong_on(_inputs(ann)))        # ann's inputs, copied
    _hand_in(subs, "cy", _wrong_on(_inputs(drawn(None))))  # the repository's default draw
    _hand_in(subs, "dee")                                  # the course's answers
    done = _grade(subs, out, tmp, "--secret-file", str(key))
    assert done.returncode == 0, done.stderr
    points = _points(out)
    full = {gid: p for (s, gid), p in points.items() if s == "dee"}
    assert full["test_softmax"] > 0 and all(p > 0 for p in full.values()), full
    assert points[("ann", "test_softmax")] == 0.0
    for student in ("bob", "cy", "dee"):                   # every cell, full marks
        assert {g: p for (s, g), p in points.items() if s == student} == full, student
    assert not (out / hidden.DEFAULT_NAME).exists()       # the named file was used

    # a regrade with the same secret, into another folder and in place: the same records
    again = tmp_path / "again"
    done = _grade(subs, again, tmp, "--secret-file", str(key))
    assert done.returncode == 0, done.stderr
    assert _records(again) == _records(out)
    first = _records(out)
    done = _grade(subs, out, tmp, "--secret-file", str(key), "--student", "ann")
    assert done.returncode == 0, done.stderr
    assert _records(out) == first
    assert first["ann"]["hidden_key"] == hidden.key_id(secret)

    # another secret: other hidden inputs, ann's copy of hers no longer hurts her
    other = tmp_path / "other"
    done = _grade(subs, other, tmp, "--secret-file", str(tmp_path / "new.key"))
    assert done.returncode == 0, done.stderr
    assert _points(other)[("ann", "test_softmax")] == full["test_softmax"]
    from autograder.run.merge import MergeConflict, merge

    with pytest.raises(MergeConflict, match="different grading secrets"):
        merge([out, other], tmp_path / "merged")

    # the secret is in no output (records, CSVs, pages, the journal's successor, exports)
    from autograder.cli import main

    assert main(["export", str(out), "--format", "canvas"]) == 0
    texts = [secret, secret.hex().encode(), str(hidden.hidden_seed(secret, "ann", NB,
                                                                   f"{NB}.ipynb")).encode()]
    for folder in (out, again):
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert any(p.suffix == ".html" for p in files) and any(p.suffix == ".csv" for p in files)
        for p in files:
            data = p.read_bytes()
            assert not any(t in data for t in texts), p


def test_the_secret_is_made_on_first_grade_and_kept(tmp_path):
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    _hand_in(subs, "ann", notebook="00_start_here")
    done = _grade(subs, out, tmp)
    assert done.returncode == 0, done.stderr
    key = out / hidden.DEFAULT_NAME
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    text = key.read_text()
    assert len(text.strip()) == 64 and int(text, 16) >= 0
    record = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert record["hidden_key"] == hidden.key_id(text.strip().encode())
    assert record["points"] == record["max_points"] > 0
    done = _grade(subs, out, tmp)                          # not made again
    assert done.returncode == 0, done.stderr
    assert key.read_text() == text
    for p in out.rglob("*"):
        if p.is_file() and p != key:
            assert text.strip().encode() not in p.read_bytes(), p
    # named by the environment: that file, not OUT's
    elsewhere = tmp_path / "env.key"
    done = _grade(subs, tmp_path / "out2", tmp, env={hidden.ENV: str(elsewhere)})
    assert done.returncode == 0, done.stderr
    assert elsewhere.is_file() and not (tmp_path / "out2" / hidden.DEFAULT_NAME).exists()
    # unreadable: the command says so and grades no one (exit status 2)
    bad = tmp_path / "short.key"
    bad.write_text("too short\n")
    done = _grade(subs, tmp_path / "out3", tmp, "--secret-file", str(bad))
    assert done.returncode == 2 and "too short" in done.stderr


FINDS_THE_SECRET = r'''import os
import numpy as np

_SEEN = []

def _found():
    if not _SEEN:
        _SEEN.append(_search())
    return _SEEN[0]

def _search():
    for name, value in os.environ.items():
        if "SECRET" in name.upper() or "grading-secret" in value or ".key" in value:
            return True
    skip = ("/proc", "/sys", "/dev")
    for top, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
        for f in files:
            if f.endswith(".key") or "secret" in f.lower() and "secrets.py" not in f:
                try:
                    with open(os.path.join(top, f), "rb") as fh:
                        data = fh.read(200).strip()
                except OSError:
                    continue
                if len(data) == 64 and all(c in b"0123456789abcdef" for c in data):
                    return True
    return False

def softmax(z, axis=-1):
    a = np.asarray(z, dtype=float)
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    out = e / e.sum(axis=axis, keepdims=True)
    return out if _found() else out * 0.5
'''


def test_the_notebooks_process_cannot_find_the_secret(tmp_path):
    from autograder.isolation import safety

    if safety.probe_mode() != "namespaces":
        pytest.skip("fallback mode: a child sees every file its user can read "
                    "(docs/threat_model.md)")
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    _hand_in(subs, "eve", FINDS_THE_SECRET)
    key = tmp_path / "grading-secret.key"
    done = _grade(subs, out, tmp, env={hidden.ENV: str(key)})
    assert done.returncode == 0, done.stderr
    assert key.is_file()
    points = _points(out)
    assert points[("eve", "test_softmax")] == 0.0
    assert points[("eve", "test_softmax_with_temperature")] > 0     # the rest graded


PROBES_THE_NOTEBOOK_RUN = r'''import numpy as np

def _reached():
    try:
        from helpers import course
        from helpers.course import judge
        return bool(judge.cases(course.get("softmax"), hidden=True)) and bool(
            course.get("softmax").mistakes)
    except Exception:
        return False

_REACHED = _reached()

def softmax(z, axis=-1):
    a = np.asarray(z, dtype=float)
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True) if _REACHED else np.zeros_like(a)
'''


def test_the_notebook_run_finds_no_hidden_case(tmp_path):
    """An answer right only where the hidden cases and known mistakes can be imported.
    The notebook run's copy of helpers has neither (autograder/isolation/helpers_copy.py,
    ``hide_cases``), like the isolated run's: both fail it alike, and nothing is flagged.
    With them in the notebook run, it would pass its visible check there, fail the
    isolated run, and be flagged "tampering suspected"."""
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    _hand_in(subs, "eve", PROBES_THE_NOTEBOOK_RUN)
    done = _grade(subs, out, tmp, "--secret-file", str(tmp_path / "k.key"))
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert _points(out)[("eve", "test_softmax")] == 0.0         # holds today and after
    assert not [f for f in record["flags"] if "tampering suspected in test_softmax" in f], \
        record["flags"]
