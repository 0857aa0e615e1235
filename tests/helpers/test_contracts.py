"""Issue 22: each exercise's contract as data, and cases drawn from it.

* Every exercise declares ``contract=Contract(...)`` (helpers/course/contract.py,
  docs/authoring.md), and every case, written or drawn, lies inside it.
* Drawn cases: visible ones from a fixed seed (the instant check runs them), hidden ones
  from a seed the grader may choose.
* Hidden cases are twins of visible ones: no hidden case has a trait (kind of input,
  rank, dtype, special values, keywords, scenario) that no visible case has.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import helpers

from helpers import checks, course
from helpers.course import judge
from helpers.course import draw as _draw
from helpers.checks import CheckFailed

#: Exercises that do not declare a contract YET. It only shrinks: a new exercise (notebooks
#: 11, 12, ...) declares ``contract=Contract(...)`` in its module from the start (listing it
#: here is a stopgap a reviewer must accept, with a reason).
NO_CONTRACT_YET: set[str] = set()     # every exercise of notebooks 00-12 has one

#: Exercises whose hidden cases still have traits no visible case has (finding 5), with
#: what is missing. This list only shrinks: fix an exercise by adding a visible twin.
TWINS_TODO: dict[str, str] = {}


@pytest.mark.parametrize("name", course.names())
def test_every_exercise_declares_its_contract(name):
    ex = course.get(name)
    if name in NO_CONTRACT_YET:
        assert ex.contract is None, f"{name} now has a contract: remove it from NO_CONTRACT_YET"
        return
    assert ex.contract is not None, (
        f"helpers/exercises/{name}.py declares no contract: give its Exercise "
        f"contract=Contract(args={{...one Arg per parameter...}}, returns=Arg(...)) "
        f"(docs/authoring.md, 'The contract')")
    params = list(inspect.signature(ex.signature).parameters)
    assert list(ex.contract.args) == params, (
        f"{name}: the contract's args must name the parameters {params} in order")


@pytest.mark.parametrize("name", [n for n in course.names() if n not in NO_CONTRACT_YET])
def test_every_case_lies_inside_its_contract(name):
    ex = course.get(name)
    outside = {c.name: course.contract_problems(ex, c) for c in ex.all_cases()}
    outside = {k: v for k, v in outside.items() if v}
    assert not outside, f"{name}: cases outside the contract: {outside}"
    kinds = {c.name for c in ex.all_cases() if c.group == "contract" and not c.hidden}
    shaped = any(a.is_array for a in ex.contract.args.values()) or \
        _draw.dim_names(ex.contract)
    want = "contract_size1" if shaped else "contract_draw1"   # strings, lists, numbers
    assert want in kinds or not ex.contract.args or not ex.contract.draw, kinds


def test_the_contract_catches_gqa_values_wider_than_the_keys():
    """Finding 1: a hidden case fed V with d_v != d_h, outside the stated contract."""
    ex = course.get("grouped_query_attention")
    rng = np.random.default_rng(0)
    bad = course.Case("grouped_query_attention", "wide_v", "", (
        rng.normal(size=(6, 3, 4)), rng.normal(size=(1, 7, 4)), rng.normal(size=(1, 7, 5))))
    [problem] = course.contract_problems(ex, bad)
    assert "V has shape (1, 7, 5) but Q has shape (6, 3, 4): d_h = 5 in V, 4 in Q" in problem


def test_drawn_hidden_cases_follow_the_seed():
    ex = course.get("layer_norm")
    a, b = ex.all_cases(), ex.all_cases(hidden_seed=7)
    assert [c.name for c in a] == [c.name for c in b]
    va = [c for c in a if c.group == "contract" and not c.hidden]
    vb = [c for c in b if c.group == "contract" and not c.hidden]
    assert all(np.array_equal(x.args[0], y.args[0]) for x, y in zip(va, vb))  # visible fixed
    ha = [c for c in a if c.group == "contract" and c.hidden]
    hb = [c for c in b if c.group == "contract" and c.hidden]
    assert any(np.shape(x.args[0]) != np.shape(y.args[0]) or
               not np.array_equal(x.args[0], y.args[0]) for x, y in zip(ha, hb))
    assert ex.all_cases(hidden_seed=7) is b                                  # built once
    kinds = [c.name for c in va]
    assert kinds[:3] == ["contract_rank1", "contract_rank2", "contract_rank3"]
    assert "contract_lists" in kinds and "contract_keywords" in kinds


def _ns(source):
    ns = {"np": np}
    exec(source, ns)
    return ns


LAYER_NORM_ALL_TRAILING = """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    axes = tuple(range(1, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
"""


def test_a_layer_norm_over_every_trailing_axis_fails_the_instant_check():
    """Finding 2: right on every 2-D input, wrong on [B, N, d] and on a single vector."""
    with pytest.raises(CheckFailed) as info:
        checks.check("layer_norm", _ns(LAYER_NORM_ALL_TRAILING)["layer_norm"])
    assert "contract_rank1" in str(info.value) and "contract_rank3" in str(info.value)


# ---------------------------------------------------------------------------------------
# Hidden cases are twins of visible ones (finding 5)
# ---------------------------------------------------------------------------------------


def _value_traits(name: str, value) -> set:
    if value is None:
        return {(name, "None")}
    if isinstance(value, (bool, np.bool_)):
        return {(name, "bool")}
    if isinstance(value, (list, tuple, np.ndarray, int, float, np.number)):
        kind = ("list" if isinstance(value, list) else "tuple" if isinstance(value, tuple)
                else "scalar" if np.ndim(value) == 0 else "array")
        # what a list of strings holds: a list of pairs given as lists is another input
        # than one of tuples (encode_word's merges); a pair as a list another than a tuple
        items = {(name, f"items:{type(v).__name__}") for v in value
                 if isinstance(v, (list, tuple)) and all(isinstance(w, str) for w in v)
                 } if kind in ("list", "tuple") else set()
        try:
            arr = np.asarray(value)
        except ValueError:
            return {(name, kind)} | items
        if arr.dtype == object or arr.dtype.kind in "US":
            return {(name, kind)} | items
        out = items | {(name, kind), (name, f"rank{arr.ndim}"), (name, f"dtype:{arr.dtype.kind}")}
        if arr.dtype.kind == "f" and arr.dtype != np.float64:
            out.add((name, f"dtype:{arr.dtype}"))
        if arr.dtype.kind in "iuf" and arr.size:
            arr = arr.astype(np.float64)
            with np.errstate(all="ignore"):
                big = np.abs(arr[np.isfinite(arr)]).max() if np.isfinite(arr).any() else 0
            if not np.isfinite(arr).all():
                out.add((name, "inf/nan"))
            if big >= 1e100:
                out.add((name, ">=1e100"))
            elif big >= 100:
                out.add((name, ">=100"))
            if not arr.any():
                out.add((name, "all zero"))
            elif arr.ndim and arr.shape[-1] > 2 and arr.dtype.kind == "f" and \
                    (arr == arr[..., :1]).all(axis=-1).any():
                out.add((name, "a constant row"))
        return out
    return {(name, type(value).__name__)}


def traits(case) -> set:
    """What kind of input ``case`` is: per argument its kind (list, array, scalar, ...),
    rank, dtype and special values (>= 100, >= 1e100, inf/nan, all zero, a constant row);
    the keywords passed; the scenario."""
    ex = course.get(case.function)
    params = list(inspect.signature(ex.signature).parameters)
    out = {("keyword", k) for k in case.kwargs}
    if case.scenario:
        out.add(("scenario", case.scenario))
    named = [(params[i] if i < len(params) else f"arg{i}", a) for i, a in enumerate(case.args)]
    for name, value in named + list(case.kwargs.items()):
        out |= _value_traits(name, value)
    return out | _order_traits(named + list(case.kwargs.items()))


def _order_traits(named: list) -> set:
    """The range of whole-number arguments against each other: ``step > steps`` (a step
    past the end of lr_schedule's schedule) is another input than a step inside it."""
    ints = [(k, v) for k, v in named if isinstance(v, (int, np.integer))
            and not isinstance(v, (bool, np.bool_))]
    return {("order", f"{a}>{b}") for a, x in ints for b, y in ints if x > y}


def missing_twins(name: str) -> dict[str, set]:
    """Hidden case -> its traits that no visible case has."""
    visible = set().union(*(traits(c) for c in judge.cases(course.get(name))))
    out = {}
    for c in judge.cases(course.get(name), hidden=True):
        lack = traits(c) - visible
        if lack:
            out[c.name] = lack
    return out


@pytest.mark.parametrize("name", course.names())
def test_every_hidden_case_has_a_visible_twin(name):
    lack = missing_twins(name)
    if name in TWINS_TODO:
        assert lack, f"{name} has its twins now: remove it from TWINS_TODO"
        return
    assert not lack, (f"{name}: these hidden cases have traits no visible case has (add a "
                      f"visible case with them, so check() tries them too): {lack}")


# ---------------------------------------------------------------------------------------
# Dtypes: one statement (finding 6), and the findings through the real grader
# ---------------------------------------------------------------------------------------

STACK_FLOAT32 = "def stack_tokens(vectors):\n    return np.asarray(vectors, dtype=np.float32)\n"
CAUSAL_MASK_INT = "def causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=int))\n"
RMS_NORM_FLOAT64 = """
def rms_norm(x, weight, eps=1e-5):
    x = np.array(x, dtype=np.float64)
    return x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps) * np.asarray(weight)
"""


def test_the_dtype_is_judged_where_the_contract_says_so_and_nowhere_else():
    judged = {n for n in course.names()
              if course.get(n).contract is not None and course.get(n).contract.dtype_judged}
    assert judged == {"causal_mask", "causal_padding_mask", "stack_tokens"}
    # stack_tokens: float64 is what it teaches; float32 of the right values fails, and
    # says so, in the words of the contract (docs/contract.md)
    with pytest.raises(CheckFailed) as info:
        checks.check("stack_tokens", _ns(STACK_FLOAT32)["stack_tokens"])
    assert "the output must have dtype float64, got dtype float32" in str(info.value)
    with pytest.raises(CheckFailed) as info:
        checks.check("causal_mask", _ns(CAUSAL_MASK_INT)["causal_mask"])
    assert "the mask must be boolean (dtype bool), got dtype int64" in str(info.value)
    # rms_norm: float64 for a float32 x is right, and a visible case gives it float32
    assert any(np.asarray(c.args[0]).dtype == np.float32 for c in judge.cases(course.get("rms_norm")))
    checks.check("rms_norm", _ns(RMS_NORM_FLOAT64)["rms_norm"])
    checks.check("rms_norm", _ns(RMS_NORM_FLOAT64)["rms_norm"], hidden=True)
    from autograder import REPO_ROOT
    doc = (REPO_ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    assert "dtypes are not judged, except" in doc
    for nb in ("solutions", "notebooks"):
        text = (REPO_ROOT / nb / "10_modern_llm" / "10_modern_llm.ipynb").read_text()
        assert "in the dtype of `x`.\\n" not in text and "same shape and dtype as" not in text


@pytest.mark.slow
def test_the_findings_graded_by_the_real_command_for_a_one_student_class(tmp_path):
    """``python -m autograder grade`` on one student who hands in notebooks 05, 07 and
    10 with the answers of findings 1, 2 and 6 (tests/catalogue/)."""
    import csv
    import importlib
    import json
    import subprocess
    import sys

    from autograder import REPO_ROOT
    from catalogue import student_notebook

    def source(function, kind, key):
        module = importlib.import_module(f"catalogue.{function}")
        return module.CORRECT[key] if kind == "correct" else module.WRONG[key][0]

    hand_in = {
        "05_masking_cross_attention": {"causal_mask": source("causal_mask", "wrong",
                                                             "int_zero_one")},
        "07_transformer_block": {"layer_norm": source("layer_norm", "wrong",
                                                      "all_trailing_axes")},
        "10_modern_llm": {"grouped_query_attention": source("grouped_query_attention",
                                                            "correct", "empty_like_q"),
                          "rms_norm": source("rms_norm", "correct", "float64_for_float32")},
    }
    subs, out = tmp_path / "submitted", tmp_path / "out"
    for assignment, answers in hand_in.items():
        path = subs / "s1" / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(student_notebook(assignment, answers)), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out",
                           str(out), "--jobs", "1"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=900)
    assert (out / "grades.csv").is_file(), proc.stderr[-3000:]
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["grade_id"]: r for r in csv.DictReader(f)
                if r["assignment"] in hand_in and r["grade_id"].startswith("test_")}
    lost = {g: r["message"][:300] for g, r in rows.items()
            if float(r["points"]) < float(r["max_points"])}
    assert set(lost) == {"test_causal_mask", "test_layer_norm"}, lost
    assert "must be boolean" in rows["test_causal_mask"]["message"] + \
        (out / "feedback/s1/05_masking_cross_attention/05_masking_cross_attention.html"
         ).read_text(encoding="utf-8")
    assert "contract_rank" in rows["test_layer_norm"]["message"] + \
        (out / "feedback/s1/07_transformer_block/07_transformer_block.html"
         ).read_text(encoding="utf-8")
    for gid in ("test_grouped_query_attention", "test_rms_norm"):
        assert rows[gid]["status"] == "ok", rows[gid]["message"]


# ---------------------------------------------------------------------------------------
# Arguments that are not arrays: strings, lists of pairs, vocabularies, parameter dicts
# ---------------------------------------------------------------------------------------


def _problems(name, *args, **kwargs):
    ex = course.get(name)
    return course.contract_problems(ex, course.Case(name, "probe", "", args, kwargs))


def test_the_contract_checks_what_strings_lists_and_dicts_hold():
    merges, vocab = [("a", "b")], {"a": 0, "b": 1, "ab": 2}
    assert _problems("encode_word", "ab", merges) == []
    assert _problems("encode_word", "ab", [["a", "b"]]) == []          # lists accepted
    assert _problems("encode_word", b"ab", merges) == [
        "word is a bytes; the contract says str"]
    assert _problems("encode_word", "ab", [("a", "b", "c")]) == [
        "merges[0] has 3 items; the contract says (str, str)"]
    assert _problems("encode_word", "ab", [("a", 1)]) == [
        "merges[0][1] is a int; the contract says str"]
    assert _problems("merge_pair", ["a", "b"], "ab") == [
        "pair is a str; the contract says a tuple (str, str)"]
    assert _problems("decode", [0, 2], vocab) == []
    assert _problems("decode", [0, 2.0], vocab) == ["ids[1] is a float; the contract says int"]
    assert _problems("decode", [0], {0: "a"}) == [
        "a key of vocab is a int; the contract says str",
        "vocab[0] is a str; the contract says int"]
    assert _problems("train_bpe", ["ab"], -1) == ["n_merges must be an int >= 0, got -1"]


def test_a_dict_of_parameters_binds_its_dimensions():
    """transformer_block_backward's params: each entry's shape, named by d and d_ff, binds
    with x's d; a missing entry and a W1 of another d are outside the contract."""
    ex = course.get("transformer_block_backward")
    good = next(c for c in ex.all_cases() if c.name == "small")
    x, params, n_heads, d_out = good.args
    assert _problems("transformer_block_backward", x, params, n_heads, d_out) == []
    missing = {k: v for k, v in params.items() if k != "W_Q"}
    assert _problems("transformer_block_backward", x, missing, n_heads, d_out) == [
        "params is missing W_Q"]
    wide = dict(params, W1=np.zeros((5, 8)))
    [problem] = _problems("transformer_block_backward", x, wide, n_heads, d_out)
    assert problem.startswith(f"params['W1'] has shape (5, 8) but x has shape {x.shape}: "
                              f"d = 5 in params['W1'], 4 in x")
    # a model's blocks: a list of such dicts, inside loss_and_grads' params
    lm = next(c for c in course.get("loss_and_grads").all_cases() if c.name == "batch")
    p, ids, targets, heads = lm.args
    assert _problems("loss_and_grads", p, ids, targets, heads) == []
    bad = dict(p, blocks=[dict(p["blocks"][0], b2=np.zeros(3))])
    [problem] = _problems("loss_and_grads", bad, ids, targets, heads)
    assert problem.startswith("params['blocks'][0]['b2'] has shape (3,) but params['E'] has "
                              "shape")
    assert "d = 3 in params['blocks'][0]['b2'], 4 in params['E']" in problem


def test_an_optional_argument_before_a_required_one_is_drawn_by_position():
    """attention_backward(Q, K, V, mask, d_out): a drawn case passes mask positionally,
    None unless it is the keywords case, and the reference accepts every drawn case."""
    drawn = [c for c in course.get("attention_backward").all_cases()
             if c.group == "contract"]
    assert drawn and all(len(c.args) == 5 and not c.kwargs for c in drawn)
    masks = {c.name: c.args[3] for c in drawn if not c.hidden}
    assert all(m is None for k, m in masks.items() if k != "contract_keywords")
    assert masks["contract_keywords"].dtype == bool
    for c in drawn:
        dQ, dK, dV = c.expected()
        assert dQ.shape == np.shape(c.args[0]) and dV.shape == np.shape(c.args[2])


@pytest.mark.parametrize("name", course.names())
def test_a_bundle_keeps_the_contract_without_the_case_builders_modules(name):
    """A student bundle keeps each exercise module's EXERCISE, so its CONTRACT and the
    functions that draw values, but only the exercise package's files of
    KEEP_EXERCISE_FILES and the other exercise modules (stripped the same way): a drawing
    function imports what else it needs inside its body, and the stripped module imports
    nothing the bundle lacks."""
    import ast

    from autograder import REPO_ROOT
    from autograder.isolation.student_helpers import KEEP_EXERCISE_FILES, strip_exercise_module

    source = (REPO_ROOT / "helpers" / "exercises" / f"{name}.py").read_text(encoding="utf-8")
    stripped = ast.parse(strip_exercise_module(source))
    kept = {"helpers.exercises." + f[:-3] for f in KEEP_EXERCISE_FILES if f != "__init__.py"}
    kept |= {f"helpers.exercises.{other}" for other in course.names()}   # stripped too
    for node in stripped.body:
        if isinstance(node, ast.ImportFrom) and node.module.startswith("helpers.exercises."):
            assert node.module in kept, f"{name}'s bundle copy imports {node.module}"
    namespace: dict = {"__name__": f"helpers.exercises.{name}"}
    exec(compile(stripped, name, "exec"), namespace)
    assert namespace["EXERCISE"].contract is not None


def test_the_range_of_an_array_is_checked_with_its_dimensions():
    """Token ids below V (``high="V - 1"``, V bound by E or by a params dict's fields),
    and a fixed range (apply_rope's positions)."""
    E, P = np.zeros((4, 2)), np.zeros((3, 2))
    assert _problems("embed", [0, 3, 1], E, P) == []
    assert _problems("embed", [0, 4, 1], E, P) == [
        "token_ids holds 4, outside [0, 3] (the contract says 0 <= token_ids <= V - 1)"]
    assert _problems("embed", [-1, 0], E, P)[0].startswith("token_ids holds -1, outside [0, 3]")
    lm = next(c for c in course.get("loss_and_grads").all_cases() if c.name == "batch")
    p, ids, targets, heads = lm.args                       # V = 6, from params["E"]
    assert _problems("loss_and_grads", p, ids, np.where(targets == 5, 6, targets),
                     heads)[0].startswith("targets holds 6, outside [0, 5]")
    x = np.zeros((2, 4))
    assert _problems("apply_rope", x, [0, 5000]) == []
    assert _problems("apply_rope", x, [0, 5001])[0].startswith("positions holds 5001")


# ---------------------------------------------------------------------------------------
# The "inputs and output" text of each exercise is rendered from its contract
# ---------------------------------------------------------------------------------------


def test_the_inputs_and_output_text_is_rendered_from_the_contract():
    from helpers.course import render as _render

    text = _render.contract(course.get("layer_norm"))
    assert text.split("\n") == [
        "**Inputs and output** (its contract: what `check()` and the grader call it with):",
        "",
        "- `x`: an array `[..., d]` (or nested lists)",
        "- `gamma`: an array `[d]` (or nested lists)",
        "- `beta`: an array `[d]` (or nested lists)",
        "- `eps` (optional): a float from 0.0 to 1.0",
        "- returns an array `[..., d]`",
        "- `...` stands for 0, 1 or 2 leading axes, the same in every argument",
        "- each vector of the last axis is normalised on its own"]
    encode = _render.contract(course.get("encode"))
    assert "- `merges`: a `list`, each item a tuple `(str, str)`" in encode
    assert "- `vocab`: a `dict`, each key `str`, each value `int`" in encode
    embed = _render.contract(course.get("embed_backward"))
    assert "- `token_ids`: an array `[..., N]` of int (or nested lists), entries from 0 " \
           "to V - 1" in embed
    assert "- `vocab_size`: an int >= 1, the size `V` of the shapes" in embed
    assert "- returns a tuple of 2: an array `[V, d]`; an array `[n_ctx, d]`" in embed


@pytest.mark.parametrize("nb", list(course.NOTEBOOKS))
def test_each_exercise_cell_shows_its_rendered_contract(nb):
    """In solutions/ and in the released notebooks/, after the author's instructions."""
    import json

    from autograder import NOTEBOOKS_DIR, SOLUTIONS_DIR
    from helpers.course import render as _render

    for root in (SOLUTIONS_DIR, NOTEBOOKS_DIR):
        cells = json.loads((root / nb / f"{nb}.ipynb").read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        for name in course.NOTEBOOKS[nb]:
            ex = course.get(name)
            if ex.hints:                     # the cells sync-exercises renders
                assert _render.contract(ex) + "\n\n" + _render.HINTS_START in text, (
                    f"{root.name}/{nb}: {name}'s cell lacks its contract: run "
                    f"`python -m autograder sync-exercises` and `regenerate`")


# ---------------------------------------------------------------------------------------
# The reference is the math; what helpers exports is it checked at the edge by the contract
# ---------------------------------------------------------------------------------------


def test_the_reference_is_the_equations_and_imports_only_numpy():
    """Issue 35: helpers/reference.py reads like the slides (no validation inside), at
    most 420 lines, importing NumPy alone."""
    import ast

    from autograder import REPO_ROOT

    path = REPO_ROOT / "helpers" / "reference.py"
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 420
    tree = ast.parse(text)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"numpy", "__future__"}, imported
    assert not [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Raise)]


@pytest.mark.parametrize("name", helpers.CONTRACT_FUNCTIONS)
def test_what_helpers_exports_is_the_reference_checked_by_its_contract(name):
    """Each exported function wraps its reference; its docstring shows the contract; and
    a call with any one array argument of a drawn visible case replaced by a number (a
    0-D array: the wrong rank for every array of the contract) is refused with a
    ValueError naming that argument."""
    from helpers import reference
    from helpers.course import render

    exported = getattr(helpers, name)
    assert exported.__wrapped__ is getattr(reference, name)
    assert inspect.cleandoc(render.docstring(course.get(name))) in inspect.getdoc(exported)
    ex = course.get(name)
    params = list(inspect.signature(ex.signature).parameters)
    drawn = [c for c in ex.all_cases() if c.group == "contract" and not c.hidden]
    refused = []
    for c in drawn[:1]:
        args, kwargs = c.fresh_args()
        exported(*args, **kwargs)                               # the case itself is fine
        for i, value in enumerate(args):
            if isinstance(value, np.ndarray) and value.ndim:
                bad = args[:i] + (np.asarray(value.flat[0]),) + args[i + 1:]
                with pytest.raises(ValueError, match=params[i]):
                    exported(*bad, **kwargs)
                refused.append(params[i])
    arrays = [a for a in ex.contract.args.values() if a.is_array]
    assert refused or not arrays or not drawn, name

