"""The order tests are handed out in under pytest-xdist (tests/conftest.py): every module
it names exists, and a module is named once (a renamed module would silently lose its
place, or its shared fixture would be built twice)."""

from __future__ import annotations

from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_the_schedule_names_exists_once():
    shared = [m for modules in conftest.SHARED.values() for m in modules]
    for module in shared + list(conftest.LONG):
        assert (ROOT / module).is_file(), module
    assert len(set(conftest.LONG)) == len(conftest.LONG)
    assert not set(conftest.LONG) & set(shared)
