"""`cumulative_unions` (the step-time split's sweep) against a brute-force union."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xprof_widgets._native.intervals import cumulative_unions


def brute_union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merged [a, b) spans; touching spans merge."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


events = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12), st.integers(-1, 4)),
                  max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=5), st.integers(1, 4))
def test_every_level_is_the_union_of_the_events_at_or_below_it(runs, n_levels):
    arrays = []
    for run in runs:
        run = sorted(run)
        arrays.append((np.array([s for s, _, _ in run], np.int64),
                       np.array([d for _, d, _ in run], np.int64),
                       np.array([c for _, _, c in run], np.int8)))
    parts = cumulative_unions(arrays, n_levels)
    assert len(parts) == n_levels
    for level, (a, b, before) in enumerate(parts):
        want = brute_union([(s, s + d) for run in runs for s, d, c in run if 0 <= c <= level])
        assert list(zip(a.tolist(), b.tolist(), strict=True)) == want
        lengths = np.array([y - x for x, y in want], np.int64)
        assert before.tolist() == (np.cumsum(lengths) - lengths).tolist()


def test_a_run_out_of_start_order_is_refused():
    run = (np.array([5, 3], np.int64), np.array([1, 1], np.int64), np.zeros(2, np.int8))
    with pytest.raises(ValueError, match="not sorted by start"):
        cumulative_unions([run], 1)


def test_columns_of_different_lengths_are_refused():
    run = (np.array([1, 3], np.int64), np.array([1], np.int64), np.zeros(2, np.int8))
    with pytest.raises(ValueError, match="differ in length"):
        cumulative_unions([run], 1)


def test_slices_of_the_profile_columns_are_runs():
    start = np.arange(0, 100, 10, dtype=np.int64)
    duration = np.full(10, 5, np.int64)
    (a, b, _), = cumulative_unions([(start[2:6], duration[2:6], np.zeros(4, np.int8))], 1)
    assert a.tolist() == [20, 30, 40, 50] and b.tolist() == [25, 35, 45, 55]
