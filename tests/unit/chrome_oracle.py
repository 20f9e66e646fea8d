"""The compiled Chrome reader against the Python one (its oracle): the same HostTrace."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from xprof_widgets.profile.chrome_args import HOT_ARGS
from xprof_widgets.profile.trace_data import HostTrace

PROBED_ARGS = (*HOT_ARGS, "grid", "block", "Input Dims", "est. achieved occupancy %", "name",
               "bytes", "args", "Call stack", "labels")
"""Args read back as columns in the comparison: the pulled-out ones and others tools read."""


def same_value(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, inside lists and dicts too."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def assert_same_trace(got: HostTrace, want: HostTrace) -> None:
    """Every column, table, warning and arg of two decodes of one file."""
    assert got.warnings == want.warnings
    assert (got.host, got.source, got.base_ns) == (want.host, want.source, want.base_ns)
    for column in ("start_ps", "duration_ps", "meta", "depth", "meta_section"):
        np.testing.assert_array_equal(getattr(got, column), getattr(want, column), column)
        assert getattr(got, column).dtype == getattr(want, column).dtype, column
    assert got.sections == want.sections
    assert got.tracks == want.tracks
    assert got.names == want.names
    assert got.display_names == want.display_names
    assert got.meta_stats == want.meta_stats
    if want.counter_values is None:
        assert got.counter_values is None
    else:
        np.testing.assert_array_equal(got.counter_values, want.counter_values)
    np.testing.assert_array_equal(got.flow_edges, want.flow_edges)
    n = want.n_events
    for event in range(n):
        assert same_value(got.details.stats(event), want.details.stats(event)), event
    everything = np.arange(n)
    for name in PROBED_ARGS:
        got_column = got.details.stat_column(everything, name)
        want_column = want.details.stat_column(everything, name)
        assert all(same_value(a, b) for a, b in zip(got_column, want_column)), name
        for side in (got, want):
            present, bits = side.details.stat_ints(everything, name)
            if side is got:
                got_ints = present, bits
        np.testing.assert_array_equal(got_ints[0], present, name)
        np.testing.assert_array_equal(got_ints[1][present], bits[present], name)
