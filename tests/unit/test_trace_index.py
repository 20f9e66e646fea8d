"""The trace index's windows against the level-of-detail contract and a brute-force reference."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from trace_helpers import (
    line,
    random_line,
    reference_runs,
    rows_in_window,
    window_rows,
)
from xspace_builder import open_planes

import xprof_widgets as xw
from xprof_widgets.trace import TraceIndex, trace_index

FIXTURE = Path(__file__).parent.parent / "data" / "tpu_v6e_inference.xplane.pb"


def query(index: TraceIndex, lo: int, hi: int, width: int, **kwargs):
    return index.window(lo / 1e6, hi / 1e6, width, **kwargs)


def check_contract(profile, window) -> None:
    """The contract, checked directly (not through the reference)."""
    lo, hi, px = window.start_ps, window.end_ps, window.px_ps
    start, dur = profile.start_ps, profile.duration_ps
    rows = window_rows(window)
    assert sum(r[4] for r in rows) == window.events_in_window
    n_in_window = 0
    for track, depth, ev in rows_in_window(profile, window.track_ids.tolist(), lo, hi):
        n_in_window += ev.shape[0]
        mine = [r for r in rows if r[0] == track and r[1] == depth]
        ends = start[ev] + dur[ev]
        apart = bool((start[ev][1:] >= ends[:-1]).all())
        # bounded by pixels; where siblings cross (a random trace may make them), every
        # event of 1 px or more is kept besides
        crossing = 0 if apart else int((dur[ev] >= px).sum())
        assert len(mine) <= 3 * window.width_px + 5 + crossing
        assert sum(r[4] for r in mine) == ev.shape[0]  # counts add up
        assert all(a[2] <= b[2] and a[3] <= b[3] for a, b in pairwise(mine))  # in order
        if apart:  # siblings apart: so are their runs
            assert all(a[3] <= b[2] for a, b in pairwise(mine))
        singles = {r[5] for r in mine if r[4] == 1}
        for e in ev[dur[ev] >= px].tolist():  # no event of 1 px or more is lost
            assert e in singles
        edges_end = {r[3] for r in mine}
        edges_start = {r[2] for r in mine}
        for k in np.flatnonzero(start[ev][1:] - ends[:-1] >= px).tolist():
            assert ends[k] in edges_end and start[ev][k + 1] in edges_start  # gap kept
    assert n_in_window == window.events_in_window


def check_window(profile, index, lo, hi, width, **kwargs):
    window = query(index, lo, hi, width, **kwargs)
    expected = reference_runs(profile, window.start_ps, window.end_ps, window.px_ps,
                              window.track_ids.tolist())
    assert window_rows(window) == expected
    check_contract(profile, window)
    return window


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 700), min_size=1,
                                                     max_size=3))
@example(seed=37936, sizes=[615, 1, 617])  # crossing siblings: more runs than pixels
def test_random_traces_match_the_brute_force_reference(seed, sizes):
    rng = np.random.default_rng(seed)
    profile = open_planes([{"name": "/device:TPU:0", "lines": [
        random_line(rng, f"line {k}", n) for k, n in enumerate(sizes)]}])
    index = TraceIndex(profile)
    end = int((profile.start_ps + profile.duration_ps).max()) + 1
    for _ in range(6):
        a, b = np.sort(rng.integers(-end // 10, end + end // 10, 2))
        width = int(rng.choice([1, 2, 7, 100, 1600]))
        check_window(profile, index, int(a), int(max(b, a + 1)), width)
    check_window(profile, index, 0, end, 1600)


def dense_profile(n: int = 20_000, seed: int = 1):
    """One long line of mostly tiny events in bursts, with some long ones: many levels."""
    rng = np.random.default_rng(seed)
    gaps = np.where(rng.random(n) < 0.02, rng.integers(10**5, 10**8, n), rng.integers(0, 200, n))
    durations = np.where(rng.random(n) < 0.01, rng.integers(10**5, 10**7, n),
                         rng.integers(0, 2000, n))
    starts = np.cumsum(gaps + np.roll(durations, 1))
    return open_planes([{"name": "/device:TPU:0", "lines": [line("XLA Ops", starts, durations)]}])


def test_levels_are_exact_at_every_zoom_and_offset():
    profile = dense_profile()
    index = TraceIndex(profile)
    assert len(index.levels()) >= 3  # the coarse levels are really read below
    end = int((profile.start_ps + profile.duration_ps).max())
    rng = np.random.default_rng(7)
    for _ in range(40):  # windows cutting through coarse runs exercise the edge clipping
        span = int(end * 10 ** rng.uniform(-5, 0))
        a = int(rng.integers(0, end - span + 1))
        check_window(profile, index, a, a + span, int(rng.choice([3, 50, 1600])))


def test_answer_size_does_not_grow_with_events():
    sizes = []
    for n in (2_000, 20_000):
        starts = np.arange(n) * 1000
        profile = open_planes([{"name": "/device:TPU:0", "lines": [
            line("ops", starts, np.full(n, 400)),
            line("gappy", starts * 7, np.full(n, 100))]}])
        window = trace_index(profile).window(0, profile.duration_us, 100)
        sizes.append(window.slice_event.shape[0])
        assert sizes[-1] <= 2 * (3 * 100 + 5)
    assert sizes[1] <= sizes[0] + 2 * 100


def test_gap_of_exactly_one_pixel_stays_and_narrower_merges():
    px = 1000  # a window [0, 100 px] drawn 100 px wide
    gaps = [1000, 999, 1000, 0, 2500]
    starts = np.cumsum([0] + [g + 10 for g in gaps])
    profile = open_planes([{"name": "/device:TPU:0", "lines": [
        line("l", starts, np.full(len(starts), 10)),
        line("widths", [0, 5000, 10000], [px, px - 1, px - 1])]}])
    index = TraceIndex(profile)
    window = check_window(profile, index, 0, 100 * px, 100)
    counts = window.slice_count[window.slice_track == 0].tolist()
    assert counts == [1, 2, 2, 1]
    widths = window.slice_event[window.slice_track == 1]
    assert window.slice_count[window.slice_track == 1].tolist() == [1, 1, 1]
    assert widths[0] == profile.tracks.loc[1, "first_event"]  # exactly 1 px: drawn as itself


def test_identical_starts_and_zero_durations_merge_into_one_run():
    starts = [100] * 50 + [100 + 10**6]
    profile = open_planes([{"name": "/device:TPU:0", "lines": [
        line("zeros", starts, [0] * 51)]}])
    index = TraceIndex(profile)
    window = check_window(profile, index, 0, 2 * 10**6, 10)
    assert window.slice_count.tolist() == [50, 1]


def test_huge_parent_over_many_tiny_children():
    n = 5000
    starts = np.concatenate([[0], 10 + np.arange(n) * 20])
    durations = np.concatenate([[n * 20 + 20], np.full(n, 5)])
    profile = open_planes([{"name": "/device:TPU:0", "lines": [line("l", starts, durations)]}])
    index = TraceIndex(profile)
    for lo, hi, width in [(0, n * 20 + 20, 50), (33_333, 33_999, 3), (50, 60, 1600),
                          (1000, 1000 + 20 * 64 * 64, 7)]:
        check_window(profile, index, lo, hi, width)


def test_run_cut_by_the_window_edge_counts_only_events_inside():
    starts = np.arange(1000) * 10
    profile = open_planes([{"name": "/device:TPU:0", "lines": [
        line("l", starts, np.full(1000, 5))]}])
    index = TraceIndex(profile)
    window = check_window(profile, index, 2500, 7499, 1)
    assert window.slice_count.tolist() == [500]
    assert window.slice_start_ps.tolist() == [2500] and window.slice_end_ps.tolist() == [7495]


def test_fixture_windows_match_the_reference():
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    end = int((profile.start_ps + profile.duration_ps).max())
    check_window(profile, index, 0, end, 1600)
    check_window(profile, index, 19_000_000_000_000, 19_700_000_000_000, 800)
    window = check_window(profile, index, 0, end, 1600, tracks=[1, 2, 31])
    assert window.track_ids.tolist() == [1, 2, 31]
    assert set(window.slice_track.tolist()) <= {1, 2, 31}


def test_index_is_built_once_per_profile_and_reports_progress():
    profile = xw.open_profile(FIXTURE)
    seen: list[float] = []
    index = trace_index(profile, progress=seen.append)
    assert trace_index(profile) is index
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    assert index.nbytes < 20 * profile.n_events + 100_000


def test_collapsed_sections_become_busy_intervals():
    device = {"name": "/device:TPU:0", "lines": [
        line("a", [0, 100, 5000], [50, 50, 10]), line("b", [40, 3000], [80, 10])]}
    host = {"name": "/host:CPU", "lines": [line("t", [0, 9000], [10, 10])]}
    profile = open_planes([device, host])
    index = TraceIndex(profile)
    section = int(profile.tracks.loc[0, "section_id"])
    window = index.window(0, 10000 / 1e6, 100, collapsed=[section])  # 1 px = 100 ps
    host_tracks = profile.tracks.index[profile.tracks["section_id"] != section].tolist()
    assert window.track_ids.tolist() == host_tracks
    summary = list(zip(window.summary_start_ps.tolist(), window.summary_end_ps.tolist(),
                       strict=True))
    # [0,50] [40,120] [100,150] touch or overlap: one interval; 3000 and 5000 stand alone
    assert summary == [(0, 150), (3000, 3010), (5000, 5010)]
    assert window.summary_section.tolist() == [section] * 3
    coarse = index.window(0, 10000 / 1e6, 2, collapsed=[section])  # 1 px = 5000 ps
    assert list(zip(coarse.summary_start_ps, coarse.summary_end_ps)) == [(0, 5010)]


def test_counters_give_min_max_last_per_pixel():
    values = [1.0, 5.0, 2.0, 7.0, 3.0, 4.0]
    times = [0, 1000, 1500, 2500, 2600, 9000]
    counter = {"name": "_counters_", "events": [
        ("hbm", t, 0, {"value": v}) for t, v in zip(times, values, strict=True)]}
    profile = open_planes([{"name": "/device:TPU:0", "lines": [
        line("ops", [0], [10]), counter]}])
    track = int(profile.tracks.index[profile.tracks["kind"] == "counter"][0])
    index = TraceIndex(profile)
    window = index.window(1200 / 1e6, 3199 / 1e6, 2)  # px = 999.5 ps
    frames = window.to_frames()["counters"]
    assert frames["track"].tolist() == [track] * 3
    # the value in force at the window start, then buckets [1200, 2199.5) and [2199.5, 3199]
    assert window.counter_t_ps.tolist() == [1000, 1500, 2500]
    assert frames["min"].tolist() == [5.0, 2.0, 3.0]
    assert frames["max"].tolist() == [5.0, 2.0, 7.0]
    assert frames["last"].tolist() == [5.0, 2.0, 3.0]


def test_counter_buckets_against_brute_force():
    rng = np.random.default_rng(3)
    times = np.sort(rng.integers(0, 10**6, 5000))
    values = rng.normal(size=5000).round(3)
    counter = {"name": "_counters_", "events": [
        ("c", int(t), 0, {"value": float(v)}) for t, v in zip(times, values, strict=True)]}
    profile = open_planes([{"name": "/device:TPU:0", "lines": [counter]}])
    index = TraceIndex(profile)
    t = profile.start_ps
    v = profile.counter_values(np.arange(profile.n_events))
    for lo, hi, width in [(0, 10**6, 7), (123_456, 654_321, 100), (5, 500_000, 1600)]:
        window = index.window(lo / 1e6, hi / 1e6, width)
        px = window.px_ps
        inside = np.flatnonzero((t >= lo) & (t <= hi))
        before = np.flatnonzero(t < lo)
        bucket = np.floor((t[inside] - lo) / px)
        expected = [(t[before[-1]], v[before[-1]], v[before[-1]], v[before[-1]])] \
            if before.shape[0] else []
        for b in np.unique(bucket):
            mine = inside[bucket == b]
            expected.append((t[mine[0]], v[mine].min(), v[mine].max(), v[mine[-1]]))
        got = list(zip(window.counter_t_ps, window.counter_min, window.counter_max,
                       window.counter_last, strict=True))
        assert got == expected


def test_bad_windows_are_refused():
    index = trace_index(xw.open_profile(FIXTURE))
    with pytest.raises(ValueError, match="end_us > start_us"):
        index.window(10.0, 10.0, 100)
    with pytest.raises(ValueError, match="width_px"):
        index.window(0.0, 10.0, 0)
    with pytest.raises(KeyError, match="track ids"):
        index.window(0.0, 10.0, 10, tracks=[10_000])


def test_frames_carry_names_and_microseconds():
    profile = xw.open_profile(FIXTURE)
    window = trace_index(profile).window(0, profile.duration_us, 200, tracks=[1])
    slices = window.to_frames()["slices"]
    assert list(slices.columns) == ["track", "depth", "start_us", "end_us", "name", "count",
                                    "event"]
    assert (slices["name"] == profile.display_names[profile.meta[slices["event"]]]).all()
    assert np.allclose(slices["start_us"] * 1e6, window.slice_start_ps)
