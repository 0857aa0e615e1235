"""The order tests are handed out in under pytest-xdist (tests/conftest.py): every module
it names exists, and a module is named once (a renamed module would silently lose its
place, or its shared fixture would be built twice)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _conftest():
    """tests/conftest.py itself (other folders' conftest.py may hold the module name)."""
    spec = importlib.util.spec_from_file_location("_tests_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_module_the_schedule_names_exists_once():
    conftest = _conftest()
    shared = [m for modules in conftest.SHARED.values() for m in modules]
    for module in shared + list(conftest.LONG):
        assert (ROOT / module).is_file(), module
    assert len(set(conftest.LONG)) == len(conftest.LONG)
    assert not set(conftest.LONG) & set(shared)
