"""Shared pytest set-up: one Hypothesis profile, so property tests are fast and repeatable.

``derandomize=True`` makes every run draw the same examples (CI and laptops agree, a
failure reproduces). Set ``HYPOTHESIS_PROFILE=explore`` to search with fresh random
examples and more of them.

``tools/`` goes on ``sys.path`` so that tests can import the dev scripts' input builders
(``from make_torch_reference import random_lm_params``).

``make test`` runs the suite in three processes (pytest-xdist, ``-n 3``, on two cores:
many tests wait for servers, timers and children). What a test session builds once (the fixtures of :data:`SHARED`, and a module's own module-scoped
fixtures) must then be built by one process only: tests are handed out a module at a
time, and the modules sharing a fixture of :data:`SHARED` together.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

settings.register_profile(
    "ci", derandomize=True, max_examples=40, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile("explore", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: Session fixtures that take minutes to build (below), and the test modules that use
#: them: under pytest-xdist the modules of one fixture run in the same test process, so
#: the fixture is built once per session.
SHARED = {
    "catalogue_run": ("tests/autograder/engine/test_catalogue.py",
                      "tests/autograder/engine/test_trust.py",
                      "tests/autograder/isolation/test_attacks.py"),
    "whole_course_bundle": ("tests/autograder/release/test_bundle.py",
                            "tests/autograder/release/test_bundle_install.py"),
    "example_class": ("tests/autograder/test_cli.py", "tests/tools/test_make_examples.py",
                      "tests/setup/test_smoke.py"),
    "example_class_graded": ("tests/autograder/test_cli.py",
                             "tests/tools/test_make_examples.py"),
}
#: Modules without a shared fixture that take a minute or more on two cores, longest
#: first: handed out right after the groups of :data:`SHARED` (the longest jobs first,
#: so that the session does not end with one process running a long module alone).
LONG = ("tests/notebooks/test_notebooks.py", "tests/autograder/release/test_bundle_answers.py",
        "tests/autograder/engine/test_engine.py", "tests/notebooks/test_jupyterhub.py",
        "tests/autograder/release/test_authoring.py", "tests/autograder/results/test_gradebook.py",
        "tests/autograder/engine/test_hidden_seed.py", "tests/notebooks/test_grader_hub.py",
        "tests/autograder/ondemand/test_gradescope.py")
#: A module's group: the first fixture of :data:`SHARED` that lists it (a fixture built
#: from another, such as the graded example class, runs in that one's group).
GROUP_OF: dict[str, str] = {}
for _fixture, _modules in SHARED.items():
    for _m in _modules:
        GROUP_OF.setdefault(_m, _fixture)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config, log):
    """How pytest-xdist hands out tests (``make test``: ``-n 3``): a module at a time,
    the modules of one :data:`SHARED` fixture together."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return GROUP_OF.get(_module(nodeid), _module(nodeid))

    config.option.loadscopereorder = False       # in the order of collection (below), not
    return ByModule(config, log)                 # the modules with the most tests first


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Every test using a fixture of :data:`SHARED` must be in one of its modules (else
    two test processes could each build it); the modules of :data:`SHARED` come first,
    in its order, then those of :data:`LONG`, so that no process is left with a long
    group at the end."""
    rank = {}
    for item in items:
        for fixture, modules in SHARED.items():
            if fixture in item.fixturenames and _module(item.nodeid) not in modules:
                raise pytest.UsageError(
                    f"{item.nodeid} uses the {fixture} fixture: add its module to "
                    f"SHARED[{fixture!r}] in tests/conftest.py")
        module = _module(item.nodeid)
        group = GROUP_OF.get(module)
        rank[item] = (list(SHARED).index(group) if group else
                      len(SHARED) + (LONG.index(module) if module in LONG else len(LONG)))
    items.sort(key=rank.__getitem__)


@pytest.fixture(autouse=True)
def own_tmpdir(tmp_path_factory, monkeypatch):
    """Every test gets a temporary folder of its own as ``TMPDIR`` (and as
    ``tempfile.gettempdir()``), so no test reads or leaves anything in the machine's
    global temp folder, and subprocesses it starts inherit the same private folder. The
    folder is not the test's ``tmp_path`` (tests that list that folder see only what they
    made)."""
    own = tmp_path_factory.mktemp("tmpdir")
    monkeypatch.setenv("TMPDIR", str(own))
    monkeypatch.setattr(tempfile, "tempdir", None)   # recomputed from TMPDIR on next use
    return own


@pytest.fixture(scope="session")
def example_class(tmp_path_factory):
    """The example class of ``python -m autograder make-examples`` (generated, not
    committed): ``<dir>/submissions/<student>/...`` and ``<dir>/EXPECTED.json``."""
    from make_examples import make_examples

    dest = tmp_path_factory.mktemp("example-class")
    make_examples(dest)
    return dest


@pytest.fixture(scope="session")
def example_class_graded(example_class, tmp_path_factory):
    """The example class graded once by the real command (``grade --jobs 2``, with short
    limits for its hanging and memory-hungry students and a fixed grading secret, so the
    same hidden draws every run): ``(OUT, the finished command, SUBMISSIONS' digest
    before, and after)``. The example tests and the command-line tests read it."""
    from fake_class import tree_digest as digest

    from autograder import REPO_ROOT

    subs = example_class / "submissions"
    out = tmp_path_factory.mktemp("example-graded") / "out"
    key = tmp_path_factory.mktemp("example-secret") / "grading-secret.key"
    key.write_text("examples-" + "0123456789abcdef" * 3 + "\n")
    key.chmod(0o600)
    before = digest(subs)
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
         "--jobs", "2", "--timeout", "60", "--cell-timeout", "10", "--memory-mb", "1024",
         "--secret-file", str(key)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    return out, result, before, digest(subs)


@pytest.fixture(scope="session")
def whole_course_bundle(tmp_path_factory):
    """The student bundle of the whole course (``python -m autograder release --bundle``),
    built once per test session (it records every notebook's worked examples: minutes):
    ``<dir>/homework/`` and ``<dir>/homework.zip``. Tests read it, or copy or unzip it."""
    from autograder import REPO_ROOT

    out = tmp_path_factory.mktemp("bundle") / "homework"
    result = subprocess.run([sys.executable, "-m", "autograder", "release", "--bundle", str(out)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert out.with_suffix(".zip").is_file()
    return out


@pytest.fixture(scope="session")
def catalogue_run(tmp_path_factory):
    """The one grading run of every catalogue entry, every attack and the honest students
    (``tests/catalogue/run.py``: minutes), shared by the catalogue, attack and trust
    tests."""
    from catalogue.run import graded

    return graded(tmp_path_factory.getbasetemp())

