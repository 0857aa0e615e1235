"""``helpers._same.differs``: whether a call changed an input (the instant check and the
grader's ``changed`` observation share it). A float array is unchanged when it holds the
same values with NaN where NaN was; -0.0 and 0.0 are the same value."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers._same import differs

SPECIAL = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(SPECIAL) | st.floats(-5, 5), min_size=0, max_size=12),
       st.lists(st.tuples(st.integers(0, 11), st.sampled_from(SPECIAL)), max_size=3),
       st.sampled_from(["<f8", "<f4", "<i8", "|b1"]))
def test_an_array_differs_exactly_when_a_value_or_a_nan_moved(values, edits, dtype):
    with np.errstate(all="ignore"):
        before = np.array(values, dtype=np.float64).astype(dtype)
    after = before.copy()
    for i, v in edits:
        if i < len(after):
            with np.errstate(all="ignore"):
                after[i] = np.array(v).astype(dtype)
    kind = before.dtype.kind
    same = np.array_equal(before, after, equal_nan=kind in "fc")   # the definition
    assert differs(before, after) is (not same)
    assert differs({"W": [before]}, {"W": [after]}) is (not same)
    assert differs(before, after.view(np.uint8)) is (before.dtype != np.uint8)   # dtype
    assert differs(before, after[:-1] if len(after) else after[None]) is True   # shape
