"""The student bundle holds no answer, checked by behaviour (issue 23, finding 6): here
homework bundles (the whole course's bundle is scanned in test_bundle.py, beside the
other tests of that bundle).

Every function of every module of the bundle's ``helpers`` is called with the visible
inputs of every exercise the bundle leaves out (tests/bundle_scan.py, shared with the
grading children's copies: tests/autograder/isolation/test_trusted_answers.py). A
syntax-tree comparison (test_bundle.py) misses an answer written another way, such as a
model's own fast path; this does not.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from autograder import engine
from autograder.release import bundle as bundle_mod
from bundle_scan import HOMEWORK, answers_in, left_out as _left_out, probed_in
from notebook_helpers import hand_in
from helpers import course

ALL = list(course.NOTEBOOKS)




@pytest.mark.parametrize("assignment", HOMEWORK)
def test_no_function_of_a_homework_bundle_returns_a_left_out_answer(assignment, tmp_path):
    """Every exercise a bundle leaves out is probed, except those a later homework bundle
    of ``bundle_scan.HOMEWORK`` leaves out too (probed there: ``bundle_scan.probed_in``)."""
    built = tmp_path / "hw"
    bundle_mod.build(built, [assignment], reveal=[a for a in ALL if a < assignment],
                     worked_examples=False)
    names = _left_out(built)
    later = {n for n in ("layer_norm", "llama_block", "encode", "attention_backward")
             if course.notebook_of(n) >= assignment}
    assert set(course.NOTEBOOKS[assignment]) | later <= set(names)
    names = probed_in([a for a in ALL if a < assignment], names)
    leaks = answers_in(built, names, tmp_path)
    assert not leaks, "\n".join(leaks)


def test_the_probe_finds_an_answer_left_in_the_bundle(tmp_path):
    """The check itself: a bundle with ``split_heads`` revealed has its answer."""
    built = tmp_path / "hw"
    bundle_mod.build(built, ["07_transformer_block"], reveal=["06_multi_head_attention"],
                     worked_examples=False)
    leaks = answers_in(built, ["split_heads"], tmp_path)
    assert any(leak.startswith("helpers.reference:split_heads gives") for leak in leaks), leaks


#: A module put into a bundle that leaves notebook 11 out: the repository's tokenizer,
#: loaded from its file, reached through every kind of callable but a function.
_LEAKY = """
import functools, importlib.util
_spec = importlib.util.spec_from_file_location("real_tokenizer", {path!r})
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)


class Encoder:
    def __init__(self, vocab, merges):
        self.bpe = _real._FastBPE(vocab, merges)

    def ids_of(self, text):
        return self.bpe.ids_of(text)


ENCODE = functools.partial(_real.encode)
GPT2_PATTERN = _real.GPT2_PATTERN
"""


def test_the_probe_finds_an_answer_in_every_kind_of_callable(tmp_path):
    """The scan of every kind of callable (issue 36, finding 2): it finds encode's answer
    in a method of a class built from the case's own inputs (``Encoder(vocab,
    merges).ids_of(text)``) and in a callable object, and pretokenize's in a compiled
    pattern's method (the given ``GPT2_PATTERN``, which the scan then forgives)."""
    import bundle_scan
    from autograder import REPO_ROOT

    built = tmp_path / "hw"
    bundle_mod.build(built, ["11_tokenizer"], reveal=[a for a in ALL if a < "11_tokenizer"],
                     worked_examples=False)
    (built / "helpers" / "leaky.py").write_text(
        _LEAKY.format(path=str(REPO_ROOT / "helpers" / "tokenizer.py")), encoding="utf-8")
    leaks = answers_in(built, ["encode", "pretokenize"], tmp_path)
    assert any(leak.startswith("helpers.leaky:Encoder(inputs [2, 1]).ids_of gives encode's")
               for leak in leaks), leaks
    assert any(leak.startswith("helpers.leaky:ENCODE gives encode's") for leak in leaks), leaks
    assert not any("PATTERN" in leak for leak in leaks), [x for x in leaks if "PATTERN" in x]
    forgiven, bundle_scan.GIVEN = bundle_scan.GIVEN, {}
    try:
        leaks = answers_in(built, ["pretokenize"], tmp_path)
    finally:
        bundle_scan.GIVEN = forgiven
    assert any(leak.startswith("helpers.leaky:GPT2_PATTERN.findall gives pretokenize's")
               for leak in leaks), leaks


# ---------------------------------------------------------------------------------------
# The grader's copy of helpers follows the same rule (autograder/isolation/helpers_copy.py
# stubs what an exercise refuses): an answer that calls a model's fast path earns nothing.
# ---------------------------------------------------------------------------------------

_FAST_PATH_ANSWERS = {
    "06_multi_head_attention": {
        "split_heads": "from helpers.llama.model import _split_heads\n\n"
                       "def split_heads(X, n_heads):\n"
                       "    X = np.asarray(X, dtype=float)\n"
                       "    return np.ascontiguousarray(_split_heads(X, n_heads))\n",
        "merge_heads": "import helpers.llama.model as _m\n\n"
                       "def merge_heads(H):\n"
                       "    return _m._merge_heads(np.asarray(H, dtype=float))\n",
    },
    "07_transformer_block": {
        "layer_norm": "from helpers.llama import model as _m\n\n"
                      "def layer_norm(x, gamma, beta, eps=1e-5):\n"
                      "    x = np.asarray(x, dtype=float)\n"
                      "    centred = x - x.mean(axis=-1, keepdims=True)\n"
                      "    return _m._rms_norm_float32(centred, np.asarray(gamma, dtype=float), eps)"
                      " + beta\n",
    },
}


@pytest.mark.slow
def test_an_answer_calling_a_models_fast_path_earns_nothing(tmp_path):
    import csv

    from autograder import REPO_ROOT

    subs = tmp_path / "submissions"
    for assignment, answers in _FAST_PATH_ANSWERS.items():
        hand_in(subs, "mallory", assignment, answers)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cells = {(r["assignment"], r["grade_id"]): r
             for r in csv.DictReader((out / "grades.csv").open()) if r["kind"] == "test"}
    for assignment, answers in _FAST_PATH_ANSWERS.items():
        for gid in answers:
            row = cells[(assignment, f"test_{gid}")]
            assert float(row["points"]) == 0, row
            assert "must be your own implementation" in row["message"], row
    # the rest of the notebooks (the solutions' own answers) earn their points
    rest = [r for (a, gid), r in cells.items() if gid[5:] not in _FAST_PATH_ANSWERS[a]]
    assert rest and all(r["points"] == r["max_points"] for r in rest), rest


@pytest.mark.slow
def test_the_answered_run_records_what_the_whole_notebook_records():
    """The recording of a homework's answered run keeps only its answer and test cells and
    what they need (the calls recorded there are those made under check): the table is
    the one the whole notebook records (a notebook with demos between its exercises)."""
    specs = sorted(course.qualified(course.get(n).reference) for n in course.names())
    cut = bundle_mod.record_worked_examples(["06_multi_head_attention"], specs)
    whole = bundle_mod.record_worked_examples(["06_multi_head_attention"], specs, whole=True)
    assert engine.plain_data(cut.plain()) == engine.plain_data(whole.plain())
    assert sum(len(b) for by_key in cut.index.values() for b in by_key.values()) > 10
