"""The copies of ``helpers`` the sandbox tests' children import: the full one and one
with softmax stripped (built once per module)."""

from __future__ import annotations

import os

import pytest

from autograder.isolation import helpers_copy


@pytest.fixture(scope="module")
def helper_copies(tmp_path_factory):
    base = tmp_path_factory.mktemp("helpers")
    os.chmod(base, 0o755)
    out = {}
    for strip in (None, "softmax"):
        dest = base / (strip or "full")
        dest.mkdir()
        os.chmod(dest, 0o755)
        out[strip] = str(helpers_copy.prepare_helpers(dest, strip=strip))
    return out
