"""Shared pytest set-up: one Hypothesis profile, so property tests are fast and repeatable.

``derandomize=True`` makes every run draw the same examples (CI and laptops agree, a
failure reproduces). Set ``HYPOTHESIS_PROFILE=explore`` to search with fresh random
examples and more of them.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=40, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
