"""Issue 14 (Teaching II): one rhythm, exercise headers and hints rendered from the
exercise modules, hints that never hold an answer, diagrams drawn from code.

The notebook-wide checks run on the notebooks converted to the rhythm so far,
:data:`CONVERTED`: add a notebook's folder name there when it is converted (its
exercises then must declare difficulty, importance, minutes and hints, its text must
match the render, its headings must follow :data:`RHYTHM`).
"""

from __future__ import annotations

import copy
import re
import textwrap
import warnings

import matplotlib
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import helpers
from autograder import REPO_ROOT, SOLUTIONS_DIR
from autograder.notebook import stored as notebook_format
from autograder.release.notebooks import synced_exercise_cells, sync_exercises
from helpers import course, plots
from helpers.checks import check
from helpers.course import render as _render

#: The notebooks that follow the rhythm (issue 14), by folder name.
CONVERTED: set[str] = {"00_start_here", "01_dot_products", "02_softmax",
                       "03_simple_self_attention", "04_queries_keys_values",
                       "05_masking_cross_attention", "06_multi_head_attention",
                       "07_transformer_block", "08_language_model", "09_sentence_encoder",
                       "10_modern_llm", "11_tokenizer", "12_training", "13_inference"}

CONVERTED_EXERCISES = sorted(n for nb in CONVERTED for n in course.NOTEBOOKS[nb])

#: The ``##`` headings of a notebook, by kind: each heading must match one of these.
RHYTHM = {
    "objectives": r"Objectives",
    "intuition": r"Intuition(: .+)?",
    "equation": r"The equation(: .+)?",
    "worked": r"Worked example( \d+)?(: .+)?",
    "exercise": r"Exercise (?P<k>\d+)( \((extra|written)\))?: .+",
    "plot": r"Plot(: .+)?",
    "explorer": r"Explorer(: .+)?",
    "recap": r"Recap",
}
#: The order in which each kind first appears.
ORDER = tuple(RHYTHM)
#: The objectives cell states the expected time in this form.
EXPECTED_TIME = re.compile(r"^\*\*Expected time:\*\* about (\d+) minutes", re.M)


def _path(nb: str):
    return SOLUTIONS_DIR / nb / f"{nb}.ipynb"


def _markdown(nb: str) -> list[str]:
    return [c.source for c in notebook_format.read(_path(nb)).cells
            if c.cell_type == "markdown"]


def headings(markdown_cells: list[str]) -> list[str]:
    """The ``##`` headings (text after ``## ``), in order, outside code fences."""
    out, fenced = [], False
    for text in markdown_cells:
        for line in text.split("\n"):
            if line.strip().startswith("```"):
                fenced = not fenced
            elif not fenced and line.startswith("## "):
                out.append(line[3:].strip())
    return out


def rhythm_problems(heads: list[str], n_graded: int) -> list[str]:
    """What is wrong with a notebook's ``##`` headings (empty: they follow the rhythm)."""
    problems, kinds, numbers = [], [], []
    for h in heads:
        kind = next((k for k, rx in RHYTHM.items() if re.fullmatch(rx, h)), None)
        if kind is None:
            problems.append(f"'## {h}' is not a heading of the rhythm (make it ### inside one)")
            continue
        kinds.append(kind)
        if kind == "exercise":
            numbers.append(int(re.fullmatch(RHYTHM["exercise"], h)["k"]))
    first = [k for i, k in enumerate(kinds) if k not in kinds[:i]]
    missing = [k for k in ORDER if k not in kinds]
    if missing:
        problems.append(f"missing headings: {missing}")
    elif first != list(ORDER):
        problems.append(f"headings first appear in the order {first}, not {list(ORDER)}")
    if kinds and (kinds[0] != "objectives" or kinds.count("objectives") != 1):
        problems.append("'## Objectives' must come first, once")
    if kinds and (kinds[-1] != "recap" or kinds.count("recap") != 1):
        problems.append("'## Recap' must come last, once")
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"exercises numbered {numbers}, not 1, 2, 3, ...")
    if len(numbers) < n_graded:
        problems.append(f"{len(numbers)} exercise headings for {n_graded} graded exercises")
    return problems


# ---------------------------------------------------------------------------------------
# The rhythm
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("nb", sorted(CONVERTED))
def test_notebook_follows_the_rhythm(nb):
    assert rhythm_problems(headings(_markdown(nb)), len(course.NOTEBOOKS[nb])) == []


@pytest.mark.parametrize("nb", sorted(CONVERTED))
def test_notebook_states_its_expected_time_with_the_objectives(nb):
    cells = _markdown(nb)
    at = next(i for i, c in enumerate(cells) if "## Objectives" in c)
    found = EXPECTED_TIME.search("\n".join(cells[at:at + 2]))
    assert found, f"{nb}: state '**Expected time:** about N minutes' with the objectives"
    minutes = sum(course.get(n).minutes for n in course.NOTEBOOKS[nb])
    assert int(found[1]) >= minutes, f"{nb}: less time than its exercises' {minutes} minutes"


def test_readme_gives_the_course_total_of_the_converted_notebooks():
    """The README's total is the sum of the notebooks' expected times (of the converted
    notebooks until all are: then of the whole course)."""
    total = sum(int(EXPECTED_TIME.search("\n".join(_markdown(nb)))[1]) for nb in CONVERTED)
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"about (\d+) hours? (\d+) minutes in all|about (\d+) minutes in all",
                      text)
    assert found, "README: state the course total as 'about H hours M minutes in all'"
    stated = (int(found[1]) * 60 + int(found[2])) if found[1] else int(found[3])
    assert stated == total, f"README states {stated} minutes, the notebooks {total}"


def test_rhythm_check_can_fail():
    good = ["Objectives", "Intuition", "The equation", "Worked example: cats",
            "Exercise 1: `f(x)`", "Worked example: more", "Exercise 2: `g(x)`",
            "Plot: scores", "Explorer", "Recap"]
    assert rhythm_problems(good, 2) == []
    assert rhythm_problems(good, 3)                                     # one missing
    assert rhythm_problems([h for h in good if h != "Plot: scores"], 2)   # no plot
    swapped = good[:1] + [good[2], good[1]] + good[3:]
    assert rhythm_problems(swapped, 2)                                  # out of order
    assert rhythm_problems(good[:4] + ["1. Intuition"] + good[4:], 2)   # foreign heading
    assert rhythm_problems(good[:4] + ["Exercise 2: `f(x)`", "Exercise 1: `g(x)`"]
                           + good[7:], 2)                              # numbering
    assert rhythm_problems(good + ["Explorer"], 2)                      # recap not last


# ---------------------------------------------------------------------------------------
# The exercise text: fields, render, the notebooks in sync
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONVERTED_EXERCISES)
def test_exercise_declares_its_teaching_fields(name):
    ex = course.get(name)
    assert _render.declared_problems(ex) == []
    assert not _render.code_blocks(ex.hints[0]), f"{name}: hint 1 is the idea, not code"
    for level in ex.hints:
        assert "<details" not in level and "```py\n" not in level, name


@pytest.mark.parametrize("nb", sorted(CONVERTED))
def test_notebook_exercise_cells_match_their_modules(nb):
    stale = synced_exercise_cells(notebook_format.read(_path(nb)))
    assert not stale, (f"{nb}: exercise cells {[n for _, n, _ in stale]} differ from their "
                       "modules: run `python -m autograder sync-exercises`")


@pytest.mark.parametrize("nb", sorted(CONVERTED))
def test_every_exercise_states_what_to_write(nb):
    """Name, inputs and output (with shapes) and an equation, in the cell's own text."""
    cells = notebook_format.read(_path(nb)).cells
    for name in course.NOTEBOOKS[nb]:
        ex = course.get(name)
        heading = re.compile(rf"## Exercise \d+( \(extra\))?: `{re.escape(_render.signature(ex))}`\n")
        text = _render.instructions(next(c.source for c in cells if c.cell_type == "markdown"
                                         and heading.match(c.source)))
        assert text, f"{name}: no instructions"
        for param in _render.signature(ex)[len(name) + 1:-1].split(", "):
            param = param.split("=")[0]
            if param:
                assert re.search(rf"`[^`]*\b{re.escape(param)}\b[^`]*`", text), (
                    f"{name}: the instructions do not describe the input `{param}`")
        assert "$" in text, f"{name}: the instructions state no equation"
        assert re.search(r"[Rr]eturn", text), f"{name}: the instructions do not say what it returns"


def test_render_and_sync_round_trip(tmp_path):
    """A cell with an old header and old hints gets the module's; the author's
    instructions stay; a second sync changes nothing; --check reports a stale cell."""
    name = "softmax"
    ex = copy.copy(course.get(name))
    ex.difficulty, ex.importance, ex.minutes = 2, 3, 10
    ex.hints = ("The idea: $e^z$ over its sum.", "A nudge:\n\n```python\nz_max = ___\n```")
    old = ("## Exercise 9: `softmax`\n\n**Difficulty:** old line\n\nWrite it. "
           "Returns $\\sigma$.\n\n<details><summary><b>Hint 1: stale</b></summary>\n\nold\n"
           "\n</details>")
    new = _render.sync_cell(old, ex, 1)
    assert new.startswith("## Exercise 1: `softmax(z, axis=-1)`\n\n"
                          "**Difficulty:** ●●○ (2 of 3) · **Importance:** ●●● (3 of 3) · "
                          "**Time:** about 10 minutes\n\nWrite it. Returns $\\sigma$.\n\n")
    assert "stale" not in new and "old line" not in new
    assert new.count("<details>") == 2 and "Hint 2: a nudge" in new
    assert _render.sync_cell(new, ex, 1) == new
    assert _render.instructions(new) == "Write it. Returns $\\sigma$."
    # the notebook-level sync: a hand-edited hint in a copy of solutions/ is found
    converted = sorted(CONVERTED)
    if not converted:
        return
    nb = converted[0]
    (tmp_path / nb).mkdir()
    path = tmp_path / nb / f"{nb}.ipynb"
    book = notebook_format.read(_path(nb))
    cell = next(c for c in book.cells if c.cell_type == "markdown"
                and _render.HINTS_START in c.source)
    cell.source = cell.source.replace("Hint 1: the idea", "Hint 1: edited by hand")
    notebook_format.write(book, path)
    assert sync_exercises([nb], tmp_path, write=False)
    assert sync_exercises([nb], tmp_path)          # rewrites it
    assert not sync_exercises([nb], tmp_path, write=False)
    assert path.read_bytes() == _path(nb).read_bytes()


def test_sync_exercises_command_reports_a_stale_cell(tmp_path, capsys, monkeypatch):
    """`python -m autograder sync-exercises --check` exits 0 on the repository, 1 (naming
    the exercise) when a module's hint changes, and then rewrites nothing."""
    from autograder.release import notebooks as release_module
    from autograder.cli import main

    nb = "02_softmax"
    assert main(["sync-exercises", "--check", nb]) == 0
    (tmp_path / nb).mkdir()
    (tmp_path / nb / f"{nb}.ipynb").write_bytes(_path(nb).read_bytes())
    # the command's default folder becomes the copy; the module loses its third hint
    monkeypatch.setattr(release_module.sync_exercises, "__defaults__",
                        (None, tmp_path, True))
    monkeypatch.setattr(course.get("softmax"), "hints", course.get("softmax").hints[:2])
    capsys.readouterr()
    assert main(["sync-exercises", "--check", nb]) == 1
    assert "exercise softmax" in capsys.readouterr().out
    assert (tmp_path / nb / f"{nb}.ipynb").read_bytes() == _path(nb).read_bytes()


def test_render_refuses_undeclared_fields():
    ex = copy.copy(course.get("dot"))
    ex.difficulty, ex.importance, ex.minutes, ex.hints = 4, 0, 0, ("only one",)
    problems = _render.declared_problems(ex)
    assert len(problems) == 4, problems
    with pytest.raises(ValueError, match="difficulty"):
        _render.header(ex)


# ---------------------------------------------------------------------------------------
# Hints never hold a working answer
# ---------------------------------------------------------------------------------------


def hint_answers(ex) -> list[tuple[str, str]]:
    """``(label, source)``: each code block of each hint, made into the exercise's
    function (the block as given when it defines the function, else as its body)."""
    out = []
    for level, text in enumerate(ex.hints, start=1):
        for j, code in enumerate(_render.code_blocks(text), start=1):
            if not re.search(rf"^def {re.escape(ex.name)}\s*\(", code, re.M):
                code = f"def {_render.signature(ex)}:\n" + textwrap.indent(
                    textwrap.dedent(code).strip() or "pass", "    ")
            out.append((f"hint {level}, block {j}", code))
    return out


def working_hints(ex) -> list[str]:
    """The hint blocks that, as an answer, pass the exercise's visible check."""
    passing = []
    for label, code in hint_answers(ex):
        namespace = {"np": np, "numpy": np, "helpers": helpers, "examples": helpers.examples}
        for use in ex.uses:
            namespace[use] = course.get(use).answer
        try:
            exec(compile(code, f"<{ex.name} {label}>", "exec"), namespace)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(ex.name, namespace[ex.name])
        except Exception:        # a syntax error, a blank ___, a wrong answer: fine
            continue
        passing.append(label)
    return passing


@pytest.mark.parametrize("name", CONVERTED_EXERCISES)
def test_no_hint_is_a_working_answer(name, capsys):
    assert working_hints(course.get(name)) == []


def test_hint_test_catches_a_hint_that_holds_the_answer(capsys):
    ex = copy.copy(course.get("softmax_with_temperature"))
    ex.hints = (
        "Divide, then softmax.",
        "Skeleton:\n\n```python\nif temperature <= 0:\n    raise ValueError(___)\n"
        "return softmax(___)\n```",
        "Almost:\n\n```python\nreturn softmax(np.asarray(z, dtype=float) / temperature)\n```",
        "Everything:\n\n```python\ndef softmax_with_temperature(z, temperature):\n"
        "    if temperature <= 0:\n        raise ValueError('temperature must be positive')\n"
        "    return softmax(np.asarray(z, dtype=float) / temperature)\n```",
    )
    assert [label for label, _ in hint_answers(ex)] == [
        "hint 2, block 1", "hint 3, block 1", "hint 4, block 1"]
    assert working_hints(ex) == ["hint 4, block 1"]


# ---------------------------------------------------------------------------------------
# Diagrams drawn from code
# ---------------------------------------------------------------------------------------

#: Each diagram: its arguments, texts it must show, and the notebook that shows it.
DIAGRAMS = {
    "diagram_causal_mask": ((["The", "cat", "sat", "<end>"],), {},
                            ["<end>", "query i (who reads)", "key j (what is read)"],
                            "05_masking_cross_attention"),
    "diagram_heads": ((), {}, ["head 0", "head 1", "split_heads"], "06_multi_head_attention"),
    "diagram_prenorm_block": ((), {}, ["t1 = LN1(x)", "t3 = x + t2", "h = t3 + t5"],
                              "07_transformer_block"),
    "diagram_language_model": ((), {}, ["token ids"], "08_language_model"),
    "diagram_kv_cache": ((), {}, ["q5"], "10_modern_llm"),
    "diagram_rope": ((), {}, ["pair 0: (x0, x4)", "position p = 4", "4.00 rad", "0.13 rad"],
                     "10_modern_llm"),
    "diagram_mean_pool": ((), {}, ["[PAD]", "mask m", "0.894", "0.447", "÷ 2 real"],
                          "09_sentence_encoder"),
    "diagram_postnorm_layer": ((), {}, ["H = LN1(x + A)", "out = LN2(H + F)", "residual: H"],
                               "09_sentence_encoder"),
}


def _texts(fig) -> list:
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip()
            and t.get_visible()]


def overlapping_texts(fig) -> list[tuple[str, str]]:
    """Pairs of texts of a drawn figure whose boxes overlap (each shrunk by 1 px)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer).expanded(1.0, 1.0)) for t in _texts(fig)]
    pairs = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if (min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0) > 2
                    and min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0) > 2):
                pairs.append((a, b))
    return pairs


@pytest.mark.parametrize("diagram", sorted(DIAGRAMS))
def test_diagram_renders_its_texts_without_warnings_or_overlaps(diagram):
    args, kwargs, expected, _ = DIAGRAMS[diagram]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = getattr(plots, diagram)(*args, **kwargs)
        png = plots.figure_to_png(fig)
    assert png.startswith(b"\x89PNG") and len(png) > 5000
    texts = [t.get_text() for t in _texts(fig)]
    for text in expected:
        assert any(text in t for t in texts), f"{diagram}: no text {text!r} in {texts}"
    assert overlapping_texts(fig) == []


def test_overlap_check_can_fail():
    fig, ax = plots.new_figure(3, 2)
    ax.text(0.5, 0.5, "one label", ha="center")
    ax.text(0.52, 0.5, "another label", ha="center")
    assert overlapping_texts(fig) == [("one label", "another label")]


def test_each_diagram_is_drawn_in_its_notebook_once_converted():
    for diagram, (_, _, _, nb) in DIAGRAMS.items():
        if nb in CONVERTED:
            code = "\n".join(c.source for c in notebook_format.read(_path(nb)).cells
                             if c.cell_type == "code")
            assert f"plots.{diagram}(" in code, f"{nb} does not draw plots.{diagram}"
