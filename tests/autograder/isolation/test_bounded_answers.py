"""The trusted worker answers within a contract and a budget (issue 36, finding 1).

A child may ask the worker for an earlier course function on inputs it chooses. Before
this change the call ran in the worker's own process, unbounded: a 72 KB request for
``pairwise_scores`` of a 9000x1 array took the grading process to 1.9 GB, and
``generate`` with a huge ``n_new`` held the worker until the student's deadline. Now each
request is checked against an estimate before it runs
(:mod:`autograder.isolation.budget`) and every call runs in a helper process under the
child's own memory limit and a CPU-time limit per call
(:mod:`autograder.isolation.answerer`): a refused or failed call is an error in that
child's call only, and the worker's peak memory stays within
``answerer.WORKER_BYTES_PER_CALL`` plus the replies it remembers, whatever a child asks.
"""

from __future__ import annotations

import inspect
import json
import socket
import threading
import time

import numpy as np
import pytest

from autograder.isolation import (answerer, answers, budget, client, confine, course_calls,
                                  student_helpers, wire)
from helpers import course
from sandbox_jobs import helpers_copies, run_cells

#: Every course function the worker serves, to any child.
SERVED = sorted({spec for name in course.names()
                 for spec in student_helpers.trusted_answers(name)}
                | set(student_helpers.SAMPLING_MODEL.values()))


def _oversized(fn) -> dict:
    """Arguments for every parameter of ``fn``, each as large as the wire lets a child
    send cheaply: a 9000x1 array (72 KB: 81 million pairs of rows), counts of 10**9, a
    100,000-character text, empty containers for the rest."""
    args = {}
    for name, p in inspect.signature(fn).parameters.items():
        if name in budget.REPEATS or name in budget.SIZES:
            args[name] = 10 ** 9
        elif name in ("text", "sentence", "word"):
            args[name] = "ab " * 33_000
        elif name in ("params", "layer", "block", "p", "vocab", "config", "cache"):
            args[name] = {}
        elif name in ("n_heads", "layer", "start", "i", "axis", "n_rep"):
            args[name] = 1
        elif p.kind is p.VAR_POSITIONAL:
            args[name] = ()
        elif p.kind is p.VAR_KEYWORD:
            args[name] = {}
        else:
            args[name] = np.ones((9000, 1))
    return args


def _peak_rss(pid: int) -> int:
    """Bytes of the highest resident set process ``pid`` reached (VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def copy_dir(tmp_path_factory):
    return helpers_copies(tmp_path_factory, "bounded", ("stack_tokens",))


_ASK = """
import json, helpers._yours as y, numpy as np
outcomes = {}
for spec, args in ARGS:
    try:
        y.trusted(spec, spec.rpartition(":")[2], args)
        outcomes[spec] = "value"
    except BaseException as exc:
        outcomes[spec] = f"{type(exc).__name__}: {exc}"[:300]
print(json.dumps(outcomes))
"""


def _cell(requests: list[tuple[str, dict]], ask: bool = True) -> str:
    """A cell that asks the worker for each ``(spec, args)`` and prints the outcomes
    (with ``ask`` False, the same cell that asks nothing: what carrying it costs)."""
    data = wire.b64(wire.encode(requests))
    return (f"import helpers._wire as _w\nARGS = _w.decode(_w.unb64({data!r}))\n"
            + (_ASK if ask else "ARGS = []\n" + _ASK))


def test_every_served_function_with_oversized_inputs_keeps_the_worker_within_its_cap(copy_dir):
    """The class: every function the worker serves, asked on oversized inputs by one
    child, at the product's default limits. Every call gets an answer or an error (the
    child goes on), and the worker's own peak memory grows by no more than its stated
    cap (it grew by 1.8 GB on pairwise_scores alone when calls ran in the worker)."""
    worker = client.get_worker()
    warm = [(spec, {}) for spec in SERVED[:1]]
    # a first job imports every served module in the worker (what any grading does)
    run_cells([_cell(warm)], copy_dir, strip="stack_tokens", answers=SERVED,
              cell_timeout=30, timeout=120)
    requests = [(spec, _oversized(answers.resolve(spec))) for spec in SERVED]
    chunks = [requests[k:k + 10] for k in range(0, len(requests), 10)]
    # the same cells asking nothing: the job's own cells (megabytes of arguments in their
    # text) pass through the worker too, which is not what a call costs
    run_cells([_cell(c, ask=False) for c in chunks], copy_dir, strip="stack_tokens",
              answers=SERVED, cell_timeout=30, timeout=120)
    before = _peak_rss(worker._proc.pid)
    reply, lines = run_cells([_cell(c) for c in chunks], copy_dir, strip="stack_tokens",
                             answers=SERVED, cell_timeout=30, timeout=120)
    outcomes = {}
    for line in lines:
        if line.get("stdout"):
            outcomes.update(json.loads(line["stdout"]))
    assert set(outcomes) == set(SERVED), [line.get("error") for line in lines]
    grown = _peak_rss(worker._proc.pid) - before
    assert grown <= answerer.WORKER_BYTES_PER_CALL + answers.MEMO_BYTES, grown / 2**20
    # 81 million pairs: an error in this child's call (the helper runs out of the run's
    # memory, or the reply is too large to send), never a value or a worker's failure
    assert outcomes["helpers.reference:pairwise_scores"] != "value"
    # a count past its maximum is refused unrun, naming the limit
    assert "n_new = 1,000,000,000" in outcomes["helpers.reference:generate"]


def _ask(serving: answerer.Answerer, sock, spec: str, args: dict) -> dict:
    """The reply of ``serving`` (the worker's side) to one request sent on ``sock`` (the
    child's side; sent from a thread: a request may not fit in the socket's buffer)."""
    data = wire.encode({"fn": spec, "args": args, "blobs": {}}, short=True)
    sender = threading.Thread(target=sock.sendall, args=(len(data).to_bytes(8, "big") + data,))
    sender.start()
    assert serving.serve(time.monotonic() + 120)
    sender.join(10)
    size = int.from_bytes(sock.recv(8), "big")
    got = b""
    while len(got) < size:
        got += sock.recv(size - len(got))
    return wire.decode(got)


def _mapped_mb() -> int:
    """Megabytes this process maps (VmSize): a helper forked from it starts with as much."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmSize")


def _ask_pairwise(rows: int, memory_mb: int) -> str:
    spec = "helpers.reference:pairwise_scores"
    ours, theirs = socket.socketpair()
    serving = answerer.Answerer(theirs, frozenset([spec]), memory_mb, 30, 60)
    try:
        return _ask(serving, ours, spec, {"X": np.ones((rows, 1))})["error"]
    finally:
        serving.close()
        ours.close()


def test_pairwise_scores_is_refused_unrun_past_the_runs_memory():
    """The estimate: 20,000 rows would build 3.2 GB, past the run's 2048 MB: refused
    unrun."""
    error = _ask_pairwise(20_000, 2048)
    assert error.startswith("OverBudget") and "was not run" in error, error


def test_an_answer_computed_within_memory_but_too_large_to_send_is_an_error():
    """2,100 rows: a 2100x2100 float64 output is 35 MB, past the 32 MB a reply may carry
    (course_calls.MAX_CALL_BYTES), while the estimate (4.4 million entries) is far within
    the run's memory. The helper computes it and the worker answers with an error naming
    the size, never sends it. The helper's memory limit is what this process already
    maps plus 1 GB (it is forked from this process, whose mappings vary with what a test
    run has imported), so only the size of the reply decides."""
    rows = 2100
    assert rows * rows * 8 > course_calls.MAX_CALL_BYTES > 0
    assert budget.estimate({"X": np.ones((rows, 1))}) == rows * rows
    error = _ask_pairwise(rows, _mapped_mb() + 1024)
    assert "too large to send" in error, error


def test_a_call_past_its_cpu_limit_is_stopped_and_the_rest_of_the_run_refused():
    """A call of the course's train_bpe that needs more CPU than a call of the run may
    use is stopped by the kernel in the helper (here a 1 s limit, a unit of the
    mechanism); the worker answers with the limit's words, and refuses the run's later
    calls with them, without computing."""
    spec = "helpers.tokenizer:train_bpe"
    ours, theirs = socket.socketpair()
    serving = answerer.Answerer(theirs, frozenset([spec]), 2048, 1, 60)
    rng = np.random.default_rng(0)           # 5,000 random words: minutes of merging
    words = ["".join(chr(97 + int(x)) for x in rng.integers(0, 26, 80)) for _ in range(5000)]
    try:
        t0 = time.monotonic()
        first = _ask(serving, ours, spec, {"words": words, "n_merges": 50_000})
        assert "CPU-time limit of 1 s" in first["error"], first
        assert time.monotonic() - t0 < 60
        again = _ask(serving, ours, spec, {"words": ["ab"], "n_merges": 1})
        assert again == first
    finally:
        serving.close()
        ours.close()


def test_the_worker_answers_the_next_run_after_a_hostile_one(copy_dir):
    """Whatever one child asked, the next job of the same worker gets right answers."""
    z = np.array([[1.0, 2.0, 3.0]])
    spec = "helpers.reference:softmax"
    hostile = [("helpers.reference:pairwise_scores", {"X": np.ones((20_000, 1))}),
               ("helpers.reference:causal_mask", {"n": 10 ** 9})]
    run_cells([_cell(hostile)], copy_dir, strip="stack_tokens",
              answers=[s for s, _ in hostile], cell_timeout=30, timeout=120)
    cell = _cell([(spec, {"z": z, "axis": -1})]).replace(
        'outcomes[spec] = "value"', 'outcomes[spec] = y.trusted(spec, "softmax", args).tolist()')
    _, lines = run_cells([cell], copy_dir, strip="stack_tokens", answers=[spec],
                         cell_timeout=30, timeout=120)
    got = json.loads(next(line["stdout"] for line in lines if line.get("stdout")))
    e = np.exp(z - z.max())
    np.testing.assert_allclose(got[spec], e / e.sum(), atol=1e-12)


def test_the_estimate_reads_rows_counts_and_sizes():
    assert budget.estimate({"X": np.ones((9000, 1))}) == 9000 * 9000
    assert budget.estimate({"Q": np.ones((12, 100, 64))}) == 12 * 100 * 100
    assert budget.estimate({"n": 300}) == 300 * 300
    assert budget.estimate({"params": {"E": np.ones((50_000, 8))}, "ids": np.arange(5)}) == 25
    with pytest.raises(budget.OverBudget, match="n_new"):
        budget.estimate({"n_new": budget.REPEATS["n_new"] + 1})
    assert budget.estimate({"n_new": budget.REPEATS["n_new"]}) == 0
