"""`covered_before` (the step-time split's sweep) against a brute-force union."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xprof_widgets._native.intervals import covered_before


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


def brute_covered(spans: list[tuple[int, int]], t: int) -> int:
    return sum(max(0, min(b, t) - a) for a, b in brute_union(spans))


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=5), st.integers(1, 4), st.lists(st.integers(-5, 80), max_size=12))
def test_every_level_covers_what_the_union_of_its_events_covers(runs, n_levels, times):
    arrays = []
    for run in runs:
        run = sorted(run)
        arrays.append((np.array([s for s, _, _ in run], np.int64),
                       np.array([d for _, d, _ in run], np.int64),
                       np.array([c for _, _, c in run], np.int8)))
    covered = covered_before(arrays, n_levels, np.array(times, np.int64))
    assert covered.shape == (n_levels, len(times))
    for level in range(n_levels):
        spans = [(s, s + d) for run in runs for s, d, c in run if 0 <= c <= level]
        assert covered[level].tolist() == [brute_covered(spans, t) for t in times]


def test_a_run_out_of_start_order_is_refused():
    run = (np.array([5, 3], np.int64), np.array([1, 1], np.int64), np.zeros(2, np.int8))
    with pytest.raises(ValueError, match="not sorted by start"):
        covered_before([run], 1, [0])


def test_columns_of_different_lengths_are_refused():
    run = (np.array([1, 3], np.int64), np.array([1], np.int64), np.zeros(2, np.int8))
    with pytest.raises(ValueError, match="differ in length"):
        covered_before([run], 1, [0])


def test_slices_of_the_profile_columns_are_runs():
    start = np.arange(0, 100, 10, dtype=np.int64)
    duration = np.full(10, 5, np.int64)
    run = (start[2:6], duration[2:6], np.zeros(4, np.int8))  # [20, 25) ... [50, 55)
    assert covered_before([run], 1, [0, 22, 30, 47, 99]).tolist() == [[0, 2, 5, 15, 20]]
