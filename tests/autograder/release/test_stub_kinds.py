"""The builder hides every kind of callable an exercise refuses (issue 36, finding 2): a
function, a class (every method), one method (``Class.method``) and a module-level value
such as a compiled pattern. Each is a stub with no line of the original: in a student's
copy it answers through ``helpers._yours.course`` (a class's methods are never answered
by a learner's function of the same name) or, for a value, raises on any use; in the copy
an exercise is graded with, each raises that it is hidden while the learner's own is
graded. Checked on a small module of a ``helpers`` package built here, imported in a
fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from autograder.engine import student_helpers

SOURCE = textwrap.dedent('''
    import re

    TABLE_RULE = re.compile(r"(\\d)")


    def table():
        """The answer's table."""
        return {b: chr(b + 7) for b in range(4)}


    class Fast:
        """A fast path."""
        SECRET = {"x": 42}

        def __init__(self, n):
            self.n = n * 1000 + 7

        def answer(self, x):
            return x * 3 + self.n

        @staticmethod
        def helper(x):
            return x - 99


    class Open:
        def kept(self):
            return "kept"

        def answer(self, x):
            return x * 5 + 11
''')

PROBE = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import helpers.fake as f

    def outcome(call):
        try:
            return ["ok", repr(call())]
        except BaseException as exc:
            return [type(exc).__name__, str(exc)]

    print(json.dumps({
        "table": outcome(f.table),
        "pattern": outcome(lambda: f.TABLE_RULE.split("a1b")),
        "pattern_called": outcome(lambda: f.TABLE_RULE("x")),
        "build": outcome(lambda: f.Fast(2)),
        "helper": outcome(lambda: f.Fast.helper(5)),
        "secret": outcome(lambda: f.Fast.SECRET),
        "kept": outcome(lambda: f.Open().kept()),
        "method": outcome(lambda: f.Open().answer(1)),
    }))
''')

SPECS = ("helpers.fake:table", "helpers.fake:TABLE_RULE", "helpers.fake:Fast",
         "helpers.fake:Open.answer")


def _package(tmp_path):
    pkg = tmp_path / "helpers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_yours.py").write_bytes(student_helpers.COURSE_CALLS.read_bytes())
    for name, data in student_helpers.codec_files().items():
        (pkg / name).write_bytes(data)
    (pkg / "fake.py").write_text(SOURCE)
    return pkg


def _run(tmp_path) -> dict:
    done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("graded", [False, True], ids=["left_out", "graded"])
def test_every_kind_of_callable_is_a_stub(tmp_path, graded):
    pkg = _package(tmp_path)
    messages = {spec: f"{spec} MESSAGE" for spec in SPECS}
    done = student_helpers.stub_answers(pkg, {} if graded else messages,
                                        messages if graded else None)
    assert done == set(SPECS)
    text = (pkg / "fake.py").read_text()
    for original in ("chr(b + 7)", "1000 + 7", "x * 3", "x - 99", "x * 5 + 11", "42", r"(\d)"):
        assert original not in text, original            # no line of the original stays
    assert '"""A fast path."""' in text                 # what the class is stays
    assert ('"""The answer\'s table."""' in text) is not graded   # a raising stub: no doc
    seen = _run(tmp_path)
    error = "RuntimeError" if graded else "NotImplementedError"
    for key, spec in [("table", "helpers.fake:table"), ("pattern", "helpers.fake:TABLE_RULE"),
                      ("pattern_called", "helpers.fake:TABLE_RULE"),
                      ("build", "helpers.fake:Fast"), ("helper", "helpers.fake:Fast"),
                      ("method", "helpers.fake:Open.answer")]:
        assert seen[key] == [error, f"{spec} MESSAGE"], (key, seen[key])
    assert seen["secret"][0] == "AttributeError"          # the class keeps no attribute
    assert seen["kept"] == ["ok", "'kept'"]               # a method not named stays


def _beside_a_learners(tmp_path, definition: str, name: str, call: str) -> str:
    """What ``call`` of the stubbed ``helpers.fake`` prints in a fresh interpreter whose
    notebook (``__main__``) defines the learner's ``definition`` as ``name``: its value,
    or ``refused MESSAGE`` when the stub raises NotImplementedError."""
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import __main__\n"
              f"{definition}\n__main__.{name} = {name}\nimport helpers.fake as f\n"
              f"try:\n    print({call})\nexcept NotImplementedError as e:\n"
              "    print('refused', e)\n")
    done = subprocess.run([sys.executable, "-I", "-c", script, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    return done.stdout.strip() or done.stderr


def test_a_method_stub_is_never_answered_by_a_learners_function_of_its_name(tmp_path):
    """A learner's ``answer`` in the notebook is not ``Open.answer``: the stub does not
    call it (only a function's own name may stand in for it)."""
    pkg = _package(tmp_path)
    student_helpers.stub_answers(pkg, {"helpers.fake:Open.answer": "hidden"})
    assert _beside_a_learners(tmp_path, "def answer(self, x):\n    return 'learner'",
                              "answer", "f.Open().answer(1)") == "refused hidden"


@pytest.mark.parametrize("is_reference", [False, True], ids=["other_function", "reference"])
def test_a_learners_function_stands_in_only_for_an_exercises_reference(tmp_path, monkeypatch,
                                                                      is_reference):
    """A notebook may define a function of the same name as a course function that is no
    exercise's reference (notebook 12's own ``block_forward`` beside the course's kernel of
    that name once was): that stub must not call the learner's function, which means
    something else there; an exercise's reference, which the notebook asks the learner to
    write under its name, is answered by it."""
    spec = "helpers.fake:table"
    monkeypatch.setattr(student_helpers, "exercise_references",
                        lambda: frozenset({spec} if is_reference else ()))
    pkg = _package(tmp_path)
    student_helpers.stub_answers(pkg, {spec: f"left out ({is_reference})"})
    got = _beside_a_learners(tmp_path, "def table():\n    return 'learner'", "table",
                             "f.table()")
    assert got == ("learner" if is_reference else f"refused left out ({is_reference})"), got


def test_the_exercises_references_are_the_functions_the_notebooks_ask_for():
    """Written out by hand: a few references the notebooks ask for by name are in the set
    (so a learner's function answers their stubs); course functions no exercise asks
    for, the training kernels' cached block and the plots', are not."""
    refs = student_helpers.exercise_references()
    for spec in ("helpers.reference:softmax", "helpers.reference:layer_norm",
                 "helpers.bert.model:gelu"):
        assert spec in refs, spec
    for spec in ("helpers.training.kernels:block_forward_cached", "helpers._yours:course"):
        assert spec not in refs, spec
    assert all(spec.startswith("helpers.") and ":" in spec for spec in refs)
