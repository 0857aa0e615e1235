"""The earlier course functions a child may use, answered by the trusted grader (issue 23,
"No secret in any child").

Every child imports a student's copy of ``helpers`` (autograder/isolation/student_helpers.py):
no exercise's reference is in it. The functions an exercise's run may use (credit
isolation: ``uses``, and theirs in turn) are computed by the worker
(``answers.answer``) on the arguments the child sends; nothing else is answered, and a
request is hostile bytes: any breach is an error reply, never an exception or a crash.
"""

from __future__ import annotations

import time

import json

import numpy as np
import pytest

from autograder.isolation import answers, course_calls, student_helpers, wire
from helpers import course, reference
from helpers.course import draw as _draw
from sandbox_jobs import helpers_copies, run_cells

BLOCK = "helpers.reference:transformer_block"
LAYER_NORM = "helpers.reference:layer_norm"


def _request(spec, args, blobs=None) -> bytes:
    return wire.encode({"fn": spec, "args": args, "blobs": blobs or {}}, short=True)


def _reply(data: bytes):
    return wire.decode(data, max_bytes=course_calls.MAX_CALL_BYTES)


# ---------------------------------------------------------------------------------------
# What is answered: the earlier notebooks' exercises and what an exercise uses; never its own
# ---------------------------------------------------------------------------------------


def test_each_exercise_is_answered_its_earlier_functions_and_never_its_own():
    for name in course.names():
        answered = set(student_helpers.trusted_answers(name))
        own = set(student_helpers.stubbed_functions([name]))
        assert not answered & own, name
        notebook = course.notebook_of(name)
        order = list(course.NOTEBOOKS)
        deps = {n for a in order[:order.index(notebook)] for n in course.NOTEBOOKS[a]}
        todo = list(course.get(name).uses)
        while todo:
            d = todo.pop()
            if d != name and d not in deps:
                deps.add(d)
                todo += course.get(d).uses
        want = set(student_helpers.stubbed_functions(sorted(deps))) - own
        assert answered == want, name
    assert LAYER_NORM in student_helpers.trusted_answers("transformer_block")
    assert "helpers.reference:softmax" in student_helpers.trusted_answers("lm_head")
    # of its own notebook, what it uses only; of a later one, nothing
    assert "helpers.reference:feed_forward" in student_helpers.trusted_answers(
        "transformer_block")
    assert "helpers.exercises.count_block_parameters:count_block_parameters" not in \
        student_helpers.trusted_answers("transformer_block")
    assert "helpers.reference:embed" not in student_helpers.trusted_answers(
        "transformer_block")
    assert student_helpers.trusted_answers("stack_tokens") == ()


def test_a_notebook_run_is_answered_earlier_notebooks_only_and_its_sampling_model():
    names = course.NOTEBOOKS["08_language_model"]
    answered = set(student_helpers.trusted_answers_of_notebook(names))
    assert {"helpers.reference:transformer_block", "helpers.reference:softmax"} <= answered
    assert "helpers.reference:generate" not in answered
    assert "helpers.reference:embed" not in answered
    # the sampling check's judge needs the model: the only own function answered
    assert student_helpers.SAMPLING_MODEL["generate"] in answered
    assert set(student_helpers.trusted_answers_of_notebook(
        course.NOTEBOOKS["01_dot_products"])) == set(
            student_helpers.stubbed_functions(course.NOTEBOOKS["00_start_here"]))
    assert student_helpers.trusted_answers_of_notebook(
        course.NOTEBOOKS["00_start_here"]) == ()


# ---------------------------------------------------------------------------------------
# The worker's side: answers.answer on hostile bytes
# ---------------------------------------------------------------------------------------


def test_an_allowed_function_is_computed_with_its_arrays_sent_once():
    rng = np.random.default_rng(0)
    x, p = rng.normal(size=(3, 8)), _draw.block(rng, 8, 16)
    client = course_calls.Trusted.__new__(course_calls.Trusted)
    client.sent = set()
    new: dict = {}
    named = client._named({"x": x, "params": p, "n_heads": 2, "causal": True}, new)
    assert new and all(isinstance(v, np.ndarray) for v in new.values())
    blobs = answers.Held()
    got = _reply(answers.answer(_request(BLOCK, named, new), frozenset([BLOCK]), blobs))
    np.testing.assert_allclose(got["value"], reference.transformer_block(x, p, 2), rtol=0,
                               atol=1e-12)
    assert got["patches"] == []
    # later calls name the arrays only; the worker kept them under their content's digest
    client.sent |= set(new)
    again: dict = {}
    named = client._named({"x": x, "params": p, "n_heads": 2, "causal": True}, again)
    assert again == {} and set(blobs) == set(new)
    got = _reply(answers.answer(_request(BLOCK, named), frozenset([BLOCK]), blobs))
    np.testing.assert_allclose(got["value"], reference.transformer_block(x, p, 2), atol=1e-12)


@pytest.mark.parametrize("exercise", ["generate", "language_model_forward"])
def test_a_sampling_loops_repeated_call_is_answered_from_memory(exercise, monkeypatch):
    """In a sampling loop the model's blocks see the same contexts again and again, in
    every child that grades the exercise: such a call must be one the child remembers
    (a request that sends an array is not: asked again, it would only name it), so the
    activations of every model of the exercise's cases are written in the request while
    the weights cross once."""
    from helpers.course import judge

    ex = course.get(exercise)
    models = [a for hidden in (False, True) for c in judge.cases(ex, hidden=hidden)
              for a in c.args if isinstance(a, dict) and "blocks" in a]
    assert models
    for params in models:
        n_ctx, d = params["P"].shape
        x = np.random.default_rng(n_ctx * d).normal(size=(n_ctx, d))
        args = {"x": x, "params": params["blocks"][0], "n_heads": 1, "causal": True}
        monkeypatch.setattr(answers, "_MEMO", {})          # nothing remembered yet
        blobs = answers.Held()
        for child in range(2):                 # two children ask the same, each fresh
            client = course_calls.Trusted.__new__(course_calls.Trusted)
            client.sent = set()
            weights: dict = {}
            named = client._named(args, weights)
            assert type(named["x"]) is np.ndarray      # written in, never sent
            client.sent |= set(weights)
            answers.answer(_request(BLOCK, named, weights), frozenset([BLOCK]), blobs)
            again: dict = {}
            request = _request(BLOCK, client._named(dict(args, x=x.copy()), again), again)
            assert again == {}
            hit = answers.remembered(answers.request_key(request), frozenset([BLOCK]))
            assert hit is not None or child == 0       # the second child: from memory
            assert "value" in _reply(answers.answer(request, frozenset([BLOCK]), blobs))


def test_what_a_call_changes_in_its_arguments_comes_back():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(2, 5))
    spec = "helpers.reference:softmax"
    got = _reply(answers.answer(_request(spec, {"z": z, "axis": -1}), frozenset([spec])))
    np.testing.assert_allclose(got["value"], reference.softmax(z), atol=1e-15)
    assert got["patches"] == []          # the course's softmax leaves its input alone


@pytest.mark.parametrize("data, words", [
    (b"not wire bytes", "DecodeError"),
    (wire.encode([1, 2, 3], short=True), "malformed"),
    (wire.encode({"fn": LAYER_NORM, "args": {}}, short=True), "malformed"),
    (_request(BLOCK, {"x": 1}), "computes"),                 # not this run's to ask
    (_request("os:system", {"command": "true"}), "computes"),
    (_request(LAYER_NORM, {"x": np.ones((2, 3))}), "takes"),  # not its parameters
    (_request(LAYER_NORM, {"x": {course_calls.BLOB: "0" * 32}, "gamma": np.ones(3),
                           "beta": np.zeros(3), "eps": 1e-5}), "never sent"),
    (_request(LAYER_NORM, {"x": 1, "gamma": 1, "beta": 1, "eps": 1},
              {"0" * 32: [1, 2]}), "malformed"),
    (wire.SHORT + b'{"__ndb__": "AAAAAAAA8D8=", "dtype": "<f8", "shape": [7], "scalar": false}',
     "DecodeError"),
    (wire.SHORT + b'{"__ndb__": "AAAAAAAA8D8=", "dtype": "(15000,10000)f8", "shape": [1], '
                  b'"scalar": false}', "DecodeError"),
    (wire.SHORT + b"[" * 100_000 + b"]" * 100_000, "DecodeError"),
    (wire.SHORT + b'{"__map__": [[{"__seq__": "list", "items": []}, 1]]}', "DecodeError"),
])
def test_a_hostile_request_is_an_error_reply_never_an_exception(data, words):
    got = _reply(answers.answer(data, frozenset([LAYER_NORM])))
    assert set(got) == {"error"} and words in got["error"], got


def test_the_arrays_one_run_may_leave_with_the_worker_are_capped(monkeypatch):
    """The job's arrays keep a running total (answers.Held), an array sent twice counted
    once."""
    monkeypatch.setattr(answers, "MAX_BLOB_BYTES", 10_000)
    blobs = answers.Held()
    big = np.ones(1000)                                        # 8,000 bytes
    args = {"x": 1, "gamma": 1, "beta": 1, "eps": 1}
    for _ in range(2):                                         # the same array again
        answers.answer(_request(LAYER_NORM, args, {course_calls.blob_key(big): big}),
                       frozenset([LAYER_NORM]), blobs)
    other = np.zeros(1000)
    got = _reply(answers.answer(_request(LAYER_NORM, args,
                                          {course_calls.blob_key(other): other}),
                                 frozenset([LAYER_NORM]), blobs))
    assert "MemoryError" in got["error"] and len(blobs) == 1
    assert blobs.nbytes == 8000


def test_a_remembered_reply_is_given_only_to_a_run_that_may_ask():
    x = np.arange(6.0).reshape(2, 3)
    data = _request(LAYER_NORM, {"x": x, "gamma": np.ones(3), "beta": np.zeros(3),
                                 "eps": 1e-5})
    first = answers.answer(data, frozenset([LAYER_NORM]))
    assert answers.answer(data, frozenset([LAYER_NORM])) == first      # remembered
    refused = _reply(answers.answer(data, frozenset([BLOCK])))
    assert "computes" in refused["error"]


def test_the_child_asks_again_only_what_it_no_longer_remembers(monkeypatch):
    """The child keeps the replies of calls without side effects, the least recently
    used dropped first (train_bpe asks the pairs of every word at every merge; most
    words have not changed since the last one), within a count and a size in bytes."""
    import socket
    import threading

    from autograder.isolation.answerer import Answerer

    spec = "helpers.tokenizer:merge_pair"
    import sys

    import helpers

    monkeypatch.setitem(sys.modules, "helpers._wire", wire)   # as in a grading child
    monkeypatch.setattr(helpers, "_wire", wire, raising=False)
    monkeypatch.setattr(course_calls, "MEMO_ITEMS", 3)
    ours, theirs = socket.socketpair()
    answerer = Answerer(theirs, frozenset([spec]), 2048, 30, 60)

    def serve():
        while answerer.serve(time.monotonic() + 120):
            pass

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    client = course_calls.Trusted(ours.detach(), [spec])

    def ask(word):
        return client(spec, "merge_pair", {"tokens": list(word), "pair": ("a", "b")})

    try:
        for word in "abx", "bab", "cab", "abx", "dab", "abx", "bab":
            assert ask(word) == reference_merge(list(word), ("a", "b"))
        # abx, bab, cab asked; abx remembered; dab asked, dropping bab (least recently
        # used); abx remembered; bab asked again
        assert answerer.requests == 5
        monkeypatch.setattr(course_calls, "MEMO_BYTES", 10)      # nothing fits: all asked
        for word in "eab", "eab":
            ask(word)
        assert answerer.requests == 7
    finally:
        client.sock.close()
        worker.join(10)
        answerer.close()


def test_a_call_that_sends_arrays_is_remembered_and_its_arrays_sent_again_when_needed(
        monkeypatch):
    """The first call of every exercise's run sends the model's weights (a capstone's real
    ones): the worker remembers its reply like any other, so the next run asking the same
    gets it without computing. That run's weights then never reached the grader's side:
    a later call naming them is refused with UNSENT, and the child sends them again."""
    import socket
    import sys
    import threading

    import helpers
    from autograder.isolation.answerer import Answerer

    monkeypatch.setitem(sys.modules, "helpers._wire", wire)   # as in a grading child
    monkeypatch.setattr(helpers, "_wire", wire, raising=False)
    monkeypatch.setattr(answers, "_MEMO", {})
    rng = np.random.default_rng(5)
    p = _draw.block(rng, 8, 16)
    assert any(v.size > course_calls.BLOB_SIZE for v in p.values())    # sent as blobs
    xs = [rng.normal(size=(3, 8)) for _ in range(3)]

    def run(calls):
        """One child's run: its calls of the block, through a worker of its own."""
        ours, theirs = socket.socketpair()
        answerer = Answerer(theirs, frozenset([BLOCK]), 2048, 30, 60)
        worker = threading.Thread(
            target=lambda: [None for _ in iter(lambda: answerer.serve(
                time.monotonic() + 120), False)], daemon=True)
        worker.start()
        client = course_calls.Trusted(ours.detach(), [BLOCK])
        try:
            for x in calls:
                got = client(BLOCK, "transformer_block",
                             {"x": x, "params": p, "n_heads": 2, "causal": True})
                np.testing.assert_allclose(got, reference.transformer_block(x, p, 2),
                                           rtol=0, atol=1e-12)
        finally:
            client.sock.close()
            worker.join(10)
            answerer.close()
        return answerer.requests, answerer.computed

    assert run([xs[0], xs[1]]) == (2, 2)            # the first run: all computed
    # the second asks the same first (weights sent: remembered), the same second (named
    # only: remembered), then a new one: its weights are sent again (UNSENT), once
    assert run([xs[0], xs[1], xs[2]]) == (4, 2)
    # without memory of the first call, every call is computed and none refused
    monkeypatch.setattr(answers, "_MEMO", {})
    assert run([xs[2], xs[0]]) == (2, 2)


def reference_merge(tokens, pair):
    from helpers import tokenizer

    return tokenizer.merge_pair(tokens, pair)


def test_dict_keys_that_are_not_strings_cross_as_they_are():
    value = {("l", "o"): 2, 3: "x", "a": {1.5: [1]}, (1, (2, None)): True}
    assert wire.decode(wire.encode(value)) == value
    assert wire.decode(wire.encode(value, short=True)) == value


# ---------------------------------------------------------------------------------------
# In the sandbox: a child reaches an earlier function only through the worker
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def block_copy(tmp_path_factory):
    return helpers_copies(tmp_path_factory, "block", ("transformer_block",))


_LEARNER = """
import numpy as np
import helpers

def transformer_block(x, params, n_heads, causal=True):
    p = params
    h = x + helpers.multi_head_attention(
        helpers.layer_norm(x, p["ln1_gamma"], p["ln1_beta"]),
        p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=causal)
    return h + helpers.feed_forward(helpers.layer_norm(h, p["ln2_gamma"], p["ln2_beta"]),
                                    p["W1"], p["b1"], p["W2"], p["b2"])
"""

_LOOK = """
import gc, inspect, json, sys, types
import helpers, helpers._yours
for name in ("layer_norm", "multi_head_attention", "feed_forward", "softmax"):
    getattr(helpers, name)               # looked up on first use: load what it would call
found, stubs = [], 0
for obj in gc.get_objects():
    if isinstance(obj, types.FunctionType) and obj.__name__ in (
            "layer_norm", "multi_head_attention", "feed_forward", "softmax"):
        try:
            src = inspect.getsource(obj)
        except (OSError, TypeError):
            src = ""
        if "_yours.course(" not in src:
            found.append(f"{obj.__module__}.{obj.__name__}")
        else:
            stubs += 1
own = None
try:
    helpers._yours.trusted("helpers.reference:transformer_block", "transformer_block",
                           {"x": 1, "params": {}, "n_heads": 1, "causal": True})
except Exception as exc:
    own = f"{type(exc).__name__}: {exc}"
print(json.dumps({"found": found, "stubs": stubs, "own": own,
                  "answered": sorted(helpers._yours.trusted.specs)}))
"""


def test_an_exercises_run_gets_its_earlier_functions_from_the_grader_only(block_copy):
    rng = np.random.default_rng(3)
    x, p = rng.normal(size=(4, 8)), _draw.block(rng, 8, 16)
    payloads = [wire.b64(wire.encode(((x, p, 2), {})))]
    answers = list(student_helpers.trusted_answers("transformer_block"))
    reply, lines = run_cells([_LEARNER, _LOOK], block_copy, kind="calls",
                             strip="transformer_block", function="transformer_block",
                             cases=payloads, case_timeout=20, answers=answers)
    case = next(line for line in lines if "case" in line)
    assert "value" in case, case
    np.testing.assert_allclose(wire.decode(wire.unb64(case["value"])),
                               reference.transformer_block(x, p, 2), atol=1e-10)
    # the cells' output is discarded in a calls job: run the look as a notebook job
    reply, lines = run_cells([_LEARNER, _LOOK], block_copy, kind="notebook",
                             strip="transformer_block", answers=answers)
    seen = json.loads(next(line["stdout"] for line in lines if line.get("stdout")))
    assert seen["found"] == [] and seen["stubs"] >= 4   # only stubs of them in the child
    assert "computes" in seen["own"]         # its own function is never answered
    assert seen["answered"] == sorted(answers)
    # without the grader's answers, the child has nothing to compute them with
    reply, lines = run_cells([_LEARNER], block_copy, kind="calls", strip="transformer_block",
                             function="transformer_block", cases=payloads, case_timeout=20)
    case = next(line for line in lines if "case" in line)
    assert case["error"].startswith("NotImplementedError"), case
    assert "exercise layer_norm" in case["error"], case


@pytest.mark.slow
def test_no_function_of_an_exercises_copy_returns_any_answer(block_copy, tmp_path):
    """The behavioural scan of the bundle (tests/bundle_scan.py) on the copy an
    exercise's run imports: every function of every module, called on the visible inputs
    of the exercise and of those it uses, returns none of their answers (here no worker
    answers: what the copy itself can compute)."""
    from pathlib import Path

    from bundle_scan import answers_in

    names = ["transformer_block", "layer_norm", "feed_forward", "multi_head_attention",
             "split_heads", "softmax"]
    leaks = answers_in(Path(block_copy["transformer_block"]), names, tmp_path)
    assert not leaks, "\n".join(leaks)
