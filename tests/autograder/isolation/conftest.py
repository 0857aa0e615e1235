"""The copies of ``helpers`` the sandbox tests' children import: the full one and one
with softmax stripped (built once per module)."""

from __future__ import annotations

import pytest

from sandbox_jobs import helpers_copies


@pytest.fixture(scope="module")
def helper_copies(tmp_path_factory):
    return helpers_copies(tmp_path_factory, "helpers", (None, "softmax"))
