"""Invariants of decoding and drawing on every fixture, checked against a brute-force recount
of the file itself (upb's parse of the XSpace, `json` for Chrome traces), also after shuffling
the order planes, lines and events are stored in: storage order must change nothing.

- Per row: event count, first start, last end and deepest nesting equal the recount.
- Rows come out in the same order, with the same events, however the file is ordered.
- In a window over the whole trace, every event lies in a drawn run of its own row and depth.
"""

from __future__ import annotations

import random
from pathlib import Path

import fixture_files
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recount import (
    brute_depths,
    our_rows,
    recount_chrome,
    recount_xspace,
    shuffled_chrome,
    shuffled_xspace,
)

import xprof_widgets as xw
from xprof_widgets.trace import TraceIndex

SHUFFLES = settings(max_examples=3, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


FIXTURES = fixture_files.XSPACE + fixture_files.JAX_GPU + fixture_files.CHROME


def open_bytes(tmp_path: Path, name: str, data: bytes) -> xw.Profile:
    path = tmp_path / name
    path.write_bytes(data)
    return xw.open_profile(path)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_files.ids(FIXTURES))
def test_rows_equal_a_brute_force_recount(path):
    """Rows of the file's events; the events derived as XProf derives them (checked against
    XProf in test_trace_parity.py) take part in the nesting, and rows made only of them are
    left out here."""
    profile = xw.open_profile(path)
    data = path.read_bytes()
    recount = recount_xspace(data) if path.name.endswith(".xplane.pb") else recount_chrome(data)
    ours = {key: events for key, events in our_rows(profile).items()
            if not all(derived for *_, derived in events)}
    # Our times count from the profile's first event, which may be one XProf does not draw (the
    # TensorFlow GPU demo opens with allocations): align on the first event both count.
    first = min(e[0] for events in ours.values() for e in events if not e[3])
    origin = min(min(s for s, _ in events) for events in recount.values() if events) - first
    assert set(ours) == {key for key, events in recount.items() if events}
    table = profile.tracks[profile.tracks["kind"] == "slices"].set_index(["section", "name"])
    for key, events in ours.items():
        derived = [(s, d) for s, d, _, made in events if made]
        expected = brute_depths([(s - origin, d) for s, d in recount[key]] + derived)
        assert [e[:3] for e in events] == expected, key
        row = table.loc[key]
        assert row["n_events"] == len(expected)
        assert row["start_us"] * 1e6 == pytest.approx(min(s for s, _, _ in expected), abs=0.5)
        assert row["end_us"] * 1e6 == pytest.approx(max(s + d for s, d, _ in expected), abs=0.5)
        assert row["max_depth"] == max(depth for _, _, depth in expected)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_files.ids(FIXTURES))
@SHUFFLES
@given(seed=st.integers(0, 2**32 - 1))
def test_storage_order_changes_nothing(path, tmp_path_factory, seed):
    data = path.read_bytes()
    rng = random.Random(seed)
    shuffled = shuffled_xspace(data, rng) if path.name.endswith(".xplane.pb") else \
        shuffled_chrome(data, rng)
    tmp = tmp_path_factory.mktemp("shuffled")
    original, moved = xw.open_profile(path), open_bytes(tmp, path.name, shuffled)
    columns = ["section", "name", "kind", "n_events", "start_us", "end_us", "max_depth"]
    if path.name.endswith(".xplane.pb"):  # Chrome: a thread's place follows its first event
        assert original.tracks[columns].equals(moved.tracks[columns])
    assert our_rows(original) == our_rows(moved)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_files.ids(FIXTURES))
def test_every_event_is_drawn_on_its_own_row(path):
    profile = xw.open_profile(path)
    index = TraceIndex(profile)
    window = index.window(0.0, profile.duration_us, 4000)
    drawn = profile.tracks[profile.tracks["kind"] == "slices"]
    assert window.events_in_window == int(drawn["n_events"].sum())
    runs = {}
    for track, depth, start, end in zip(window.slice_track.tolist(), window.slice_depth.tolist(),
                                        window.slice_start_ps.tolist(),
                                        window.slice_end_ps.tolist(), strict=True):
        runs.setdefault((track, depth), []).append((start, end))
    for track, row in drawn.iterrows():
        idx = np.arange(row["first_event"], row["end_event"])
        for depth in np.unique(profile.depth[idx]).tolist():
            mine = idx[profile.depth[idx] == depth]
            spans = np.array(runs[(track, depth)])
            at = np.searchsorted(spans[:, 0], profile.start_ps[mine], side="right") - 1
            assert (at >= 0).all()
            assert (spans[at, 1] >= profile.start_ps[mine] + profile.duration_ps[mine]).all()

