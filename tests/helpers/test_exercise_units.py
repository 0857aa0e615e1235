"""Issue: one exercise, one place. Every graded exercise is one module of
``helpers/exercises``; the notebooks' test cells are one line; a mistake in an earlier
function is charged once, where it lives, and the instant check says so."""

from __future__ import annotations

import ast
import functools
import copy
import json
import math

import numpy as np
import pytest

from autograder import SOLUTIONS_DIR
from autograder.notebook import cells as nbcells
from helpers import checks, reference, course
from helpers.course import exercise, judge
from helpers.checks import CheckFailed
from catalogue.transformer_block import CORRECT as CORRECT_BLOCKS


def _solution_cells():
    for path in sorted(SOLUTIONS_DIR.glob("*/*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        yield path.parent.name, nb["cells"]


def test_every_answer_cell_of_every_notebook_is_an_exercise_of_the_registry():
    found = {}
    for assignment, cells in _solution_cells():
        found[assignment] = tuple(nbcells.grade_id(c) for c in cells if nbcells.is_answer(c))
    assert found == course.NOTEBOOKS


def test_every_test_cell_is_the_one_line_check_of_its_exercise():
    for assignment, cells in _solution_cells():
        for c in cells:
            if nbcells.is_test(c):
                name = nbcells.grade_id(c)[len("test_"):]
                assert "".join(c["source"]) == (
                    f'check("{name}", {name})\n### BEGIN HIDDEN TESTS\n'
                    f'check("{name}", {name}, hidden=True)\n### END HIDDEN TESTS'), name


@pytest.mark.parametrize("name", course.names())
def test_every_exercise_declares_visible_and_hidden_cases_and_mistakes(name):
    ex = course.get(name)
    assert ex.name == name and callable(ex.reference)
    assert judge.cases(course.get(name)) and judge.cases(course.get(name), hidden=True)
    assert ex.mistakes, f"{name} names no known mistake"
    every = ex.all_cases()
    assert len({c.name for c in every}) == len(every), "case names must be unique"
    for dep in ex.uses:                          # earlier exercises only
        assert course.names().index(dep) < course.names().index(name), (name, dep)
    for spec in (*ex.refuse, *ex.forbid):
        assert callable(course.resolve(spec)), spec


# ---------------------------------------------------------------------------------------
# The instant check names the earlier function that is wrong (a cascade per dependency)
# ---------------------------------------------------------------------------------------


def _learner(source: str, **names):
    """Functions defined by ``source`` in one fresh namespace, as notebook cells would."""
    ns = {"np": np, "math": math, **names}
    exec(compile(source, "<cell>", "exec"), ns)
    return ns


LAYER_NORM_NO_EPS = """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True)) * gamma + beta
"""

TRANSFORMER_BLOCK = "\n" + CORRECT_BLOCKS["slide_names"]     # a right block, from the catalogue


def test_a_wrong_layer_norm_is_named_by_transformer_blocks_check():
    ns = _learner(LAYER_NORM_NO_EPS + TRANSFORMER_BLOCK,
                  multi_head_attention=reference.multi_head_attention,
                  feed_forward=reference.feed_forward)
    with pytest.raises(CheckFailed) as info:
        checks.check("transformer_block", ns["transformer_block"])
    text = str(info.value)
    assert "your layer_norm fails its own check: fix it first" in text
    assert "Likely mistake" not in text          # no mistake of transformer_block is blamed
    # with the course's layer_norm the same transformer_block passes
    ns = _learner(TRANSFORMER_BLOCK, layer_norm=reference.layer_norm,
                  multi_head_attention=reference.multi_head_attention,
                  feed_forward=reference.feed_forward)
    checks.check("transformer_block", ns["transformer_block"])


EMBED_STUB = """
def embed(token_ids, E, P):
    raise NotImplementedError()
"""

LM_FORWARD = """
def language_model_forward(token_ids, params, n_heads):
    x = embed(token_ids, params["E"], params["P"])
    for block in params["blocks"]:
        x = transformer_block(x, block, n_heads)
    if "ln_f_gamma" in params:
        x = layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"])
    return lm_head(x, params["E"])
"""


def test_an_unanswered_embed_is_named_not_language_model_forward():
    ns = _learner(EMBED_STUB + LM_FORWARD, transformer_block=reference.transformer_block,
                  layer_norm=reference.layer_norm, lm_head=reference.lm_head)
    with pytest.raises(CheckFailed) as info:
        checks.check("language_model_forward", ns["language_model_forward"])
    text = str(info.value)
    assert "embed is not implemented yet" in text
    assert "language_model_forward is not implemented" not in text


LM_HEAD_PROBS = """
def lm_head(x, E):
    z = np.asarray(x, dtype=float) @ np.asarray(E, dtype=float).T
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""

GENERATE = """
def generate(token_ids, params, n_heads, n_new, temperature=0.0, rng=None):
    ids = [int(t) for t in token_ids]
    n_ctx = np.shape(params["P"])[0]
    for _ in range(n_new):
        logits = language_model_forward(np.array(ids[-n_ctx:]), params, n_heads)[-1]
        if temperature == 0:
            ids.append(int(np.argmax(logits)))
        else:
            z = logits / temperature
            p = np.exp(z - z.max())
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return np.array(ids)
"""


def test_an_lm_head_returning_probabilities_is_named_by_generates_check():
    ns = _learner(LM_HEAD_PROBS + LM_FORWARD + GENERATE, embed=reference.embed,
                  transformer_block=reference.transformer_block,
                  layer_norm=reference.layer_norm)
    with pytest.raises(CheckFailed) as info:
        checks.check("generate", ns["generate"])
    text = str(info.value)
    assert "your lm_head fails its own check: fix it first" in text
    assert "sampled uniformly" not in text and "Likely mistake" not in text


SOFTMAX_MEAN = """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.mean(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""

SDPA = """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = softmax(scores, axis=-1)
    return w @ V, w
"""


def test_a_softmax_shifted_by_the_mean_fails_its_own_visible_check_and_is_named_later():
    ns = _learner(SOFTMAX_MEAN + SDPA)
    with pytest.raises(CheckFailed):
        checks.check("softmax", ns["softmax"])
    with pytest.raises(CheckFailed) as info:
        checks.check("scaled_dot_product_attention", ns["scaled_dot_product_attention"])
    assert "your softmax fails its own check: fix it first" in str(info.value)


def test_the_contract_lists_every_exercise_with_its_signature():
    import inspect
    import re

    from autograder import REPO_ROOT

    text = (REPO_ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\|[^|]*\| `(\w+)\(([^`]*)\)`", text, flags=re.M)
    assert [name for name, _ in listed] == list(course.names())
    for name, params in listed:
        sig = inspect.signature(course.get(name).signature)
        written = [p.strip().partition("=") for p in params.split(",") if p.strip()]
        assert [(n, bool(eq), ast.literal_eval(d) if eq else None) for n, eq, d in written] == [
            (p.name, p.default is not p.empty, None if p.default is p.empty else p.default)
            for p in sig.parameters.values()], name


@pytest.mark.parametrize("name", course.names())
def test_every_known_mistake_is_told_apart_by_a_visible_case(name):
    """A mistake is only named for a wrong answer, and the instant check must catch it:
    each mistake's output differs from the right one on some visible case."""
    ex = course.get(name)
    missed = []
    for mistake in ex.mistakes:
        caught = False
        for case in judge.cases(course.get(name)):
            try:
                with checks.quiet():
                    got = case.run(mistake.fn)
            except Exception:
                caught = True                      # it raises where the answer does not
                break
            if judge.compare(course.get(name), case, got) is not None:
                caught = True
                break
        if not caught:
            missed.append(mistake.key)
    assert not missed, f"{name}: no visible case tells these mistakes apart: {missed}"


def _snapshot(x):
    """A deep, exact picture of a value (arrays as dtype, shape and bytes)."""
    if isinstance(x, np.ndarray):
        return ("nd", x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_snapshot(v) for v in x])
    if isinstance(x, dict):
        return ("dict", [(k, _snapshot(v)) for k, v in x.items()])
    if isinstance(x, (set, frozenset)):
        return (type(x).__name__, sorted(map(repr, x)))
    return ("v", repr(x))


@pytest.mark.parametrize("name", course.names())
def test_the_kept_outcomes_of_the_course_functions_are_those_of_fresh_runs(name):
    """A grading process keeps what the reference and each named mistake give on a case
    (``Case.outcome``): every student is judged on the same cases. Diagnosing each
    mistake's own output on each visible case (every comparison an exercise has, on the
    kept outputs) names the same mistakes as with nothing kept, leaves each kept output
    as a fresh run gives it, and the expected value handed out is a copy."""
    ex = course.get(name)
    visible = list(judge.cases(course.get(name)))

    def diagnoses():
        out = []
        for case in visible:
            for mistake in ex.mistakes:
                got, err = case.outcome(mistake.fn)
                if err is None:
                    found = judge.diagnose(course.get(name), case, copy.deepcopy(got))
                else:
                    found = judge.diagnose(course.get(name), case, reported=f"{type(err).__name__}: {err}")
                out.append((case.name, mistake.key, sorted(m.key for m in found)))
        return out

    for case in visible:
        exercise._OUTCOMES.pop(case, None)
    cold = diagnoses()
    assert diagnoses() == cold                          # every outcome kept by now
    for case in visible:
        kept = exercise._OUTCOMES[case]
        for mistake in ex.mistakes:
            with checks.quiet():
                try:
                    fresh, err = case.run(mistake.fn), None
                except Exception as exc:
                    fresh, err = None, exc
            got, kept_err = kept.get(mistake.fn, case.outcome(mistake.fn))
            assert (type(kept_err), str(kept_err)) == (type(err), str(err))
            if err is None and not case.is_sampling:
                assert _snapshot(got) == _snapshot(fresh), (case.name, mistake.key)
        if not case.is_sampling and case.answer is None:
            a, b = case.expected(), case.expected()
            assert _snapshot(a) == _snapshot(b) and (a is not b or a is None
                                                    or isinstance(a, (bool, int, float, str)))


def test_a_case_keeps_each_outcome_once_and_not_a_large_one():
    calls = []

    def small(x):
        calls.append("small")
        return np.asarray(x) * 2.0

    def large(x):
        calls.append("large")
        return np.zeros(exercise.OUTCOME_BYTES // 8 + 1)

    def failing(x):
        calls.append("failing")
        raise ValueError("no")

    case = course.Case("dot", "t", "a test case", (np.arange(3.0),))
    for _ in range(3):
        assert case.outcome(small)[0].tolist() == [0.0, 2.0, 4.0]
        assert case.outcome(large)[0].size == exercise.OUTCOME_BYTES // 8 + 1
        out, err = case.outcome(failing)
        assert out is None and type(err) is ValueError and str(err) == "no"
        assert err.__traceback__ is None                 # no frames kept with it
    assert calls.count("small") == 1 and calls.count("failing") == 1
    assert calls.count("large") == 3


@pytest.mark.parametrize("name", course.names())
def test_every_case_crosses_the_sandbox_boundary(name):
    """The grader sends each case's arguments to the learner's process as plain data
    (``autograder.isolation.wire``, capped at 32 MB per value): every case fits with room."""
    from autograder.isolation import wire

    for case in course.get(name).all_cases():
        data = wire.encode((case.args, case.kwargs))
        assert len(data) < 16 * 2**20, (name, case.name, len(data))
        args, kwargs = wire.decode(data)
        assert len(args) == len(case.args) and set(kwargs) == set(case.kwargs)


# -- one random-input builder -----------------------------------------------------------------

#: Names of ``np.random`` that make no numbers (a type to check against).
_RANDOM_TYPES = {"Generator"}


@functools.lru_cache(maxsize=None)
def _seeded_builders() -> frozenset[str]:
    """The functions of ``helpers`` outside its exercises that take a ``seed`` (a model's
    initial parameters, a demo's): called by an exercise, each must be handed a
    generator of ``draw`` (``seed=draw.rng(...)``), never its default or an int."""
    from autograder import REPO_ROOT

    names = set()
    for path in (REPO_ROOT / "helpers").rglob("*.py"):
        if "exercises" in path.parts or "course" in path.parts or path.name == "checks.py":
            continue                   # the cases, the framework (draw itself), the checks
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and "seed" in [
                    a.arg for a in node.args.args + node.args.kwonlyargs]:
                names.add(node.name)
    return frozenset(names)


def _own_generators(source: str) -> list[str]:
    """Where ``source`` makes random numbers of its own: any use of ``np.random`` or the
    ``random`` module, outside a scenario's frozen keyword defaults (a scenario runs in
    the sandbox, where it may call nothing of ``helpers.exercises``: it takes numpy's
    generator when its module is imported); and any call handing a builder elsewhere (a
    model's initial parameters) a ``seed`` that is not a generator of ``draw.rng``: that
    builder would make its own."""
    tree = ast.parse(source)
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("scenario_"):
            for d in node.args.kw_defaults + node.args.defaults:
                allowed |= {id(n) for n in ast.walk(d)} if d is not None else set()
    found = []
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Call):
            seed = next((kw.value for kw in node.keywords if kw.arg == "seed"), None)
            called = ast.unparse(node.func).rsplit(".", 1)[-1]
            if (seed is not None or called in _seeded_builders()) and not (
                    isinstance(seed, ast.Call)
                    and ast.unparse(seed.func) in ("draw.rng", "rng")):
                found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
        if isinstance(node, ast.Attribute) and node.attr not in _RANDOM_TYPES and \
                ast.unparse(node.value) in ("np.random", "numpy.random"):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""]
            if any(m == "random" or m.startswith("numpy.random") for m in mods):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_every_random_input_of_a_case_is_drawn_by_the_one_builder():
    """Issue 20: random inputs were built in seven places (three input modules, two
    language-model builders, a block builder, the contract generator). Now
    ``helpers/course/draw.py`` makes every generator and every shared structure; the
    other modules ask it for a seeded generator or are handed the contract's."""
    from autograder import REPO_ROOT

    folder = REPO_ROOT / "helpers" / "exercises"
    found = {p.name: _own_generators(p.read_text(encoding="utf-8"))
             for p in sorted(folder.glob("*.py"))}
    assert not {k: v for k, v in found.items() if v}
    # the rule sees each way of making one
    assert not _own_generators("isinstance(r, np.random.Generator)")
    assert not _own_generators("p = training.init_params(3, 4, 1, 8, 2, seed=draw.rng(7))")
    for line in ("r = np.random.default_rng(3)", "x = numpy.random.normal(size=3)",
                 "import random", "from numpy.random import default_rng",
                 "def scenario_x(fn, *, g=np.random.default_rng):\n    return g(np.random.rand())",
                 "p = training.init_params(3, 4, 1, 8, 2, seed=7)",
                 "b = model.random_llama_params(cfg, seed=seed)",
                 "p = training.init_params(3, 4, 1, 8, 2, 7)",
                 "b = model.random_llama_params(cfg)"):
        assert _own_generators(line), line
    assert not _own_generators("def scenario_x(fn, *, g=np.random.default_rng):\n    return g(1)")


def test_the_builders_give_the_layouts_the_references_take():
    from helpers import bert
    from helpers.course import draw as _draw

    block = _draw.block(5, 4, 8)
    assert {k: v.shape for k, v in block.items()} == {
        k: tuple({"d": 4, "d_ff": 8}[s] for s in shape)
        for k, shape in reference.BLOCK_PARAM_SHAPES.items()}
    assert block.keys() == _draw.block(_draw.rng(5), 4, 8).keys()
    assert all(np.array_equal(block[k], _draw.block(_draw.rng(5), 4, 8)[k]) for k in block)
    lm = _draw.seeded_lm(7, V=6, d=4, n_ctx=5, n_blocks=2, ln_f=True)
    ids = np.array([1, 5, 0])
    assert reference.language_model_forward(ids, lm, 2).shape == (3, 6)
    assert np.array_equal(lm["blocks"][1]["W_Q"], _draw.block(7 * 100 + 2, 4, 8)["W_Q"])
    drawn = _draw.lm(_draw.rng(1), 5, 4, 6, blocks=1, ln_f=False)
    assert len(drawn["blocks"]) == 1 and "ln_f_gamma" not in drawn
    tiny = _draw.tiny_bert(_draw.rng(2), V=9, d=8, d_ff=12, n_heads=2, n_layers=2, n_ctx=6,
                           eps=bert.LN_EPS)
    out = bert.bert_forward(np.array([[1, 2, 3]]), np.ones((1, 3), dtype=bool), tiny)
    assert out.shape == (1, 3, 8) and np.all(np.isfinite(out))


def test_the_mistakes_sampling_probabilities_are_the_references_bit_for_bit():
    """Diagnosing a wrong generate samples thousands of steps with ``_variants._probs``
    (the reference's softmax without its checks): the same numbers, or a known mistake's
    draws would part from the learner's."""
    from helpers.exercises import _variants

    rng = np.random.default_rng(3)
    for _ in range(500):
        z = rng.normal(size=int(rng.integers(1, 40))) * rng.choice([1e-3, 1.0, 30.0, 700.0])
        t = float(rng.choice([0.25, 0.7, 1.0, 2.0]))
        assert np.array_equal(_variants._sample_correct(z, t),
                              reference.softmax((z - z.max()) / t))
        assert np.array_equal(_variants._sampler_multiplied(z, t), reference.softmax(z * t))
        assert np.array_equal(_variants._sampler_no_temperature(z, t), reference.softmax(z))
