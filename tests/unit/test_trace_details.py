"""One event's details (self time, names, stats) and the aggregate of a selection."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from xspace_builder import open_planes

import xprof_widgets as xw
from xprof_widgets.trace import TraceIndex, trace_index
from xprof_widgets.trace.details import json_value, self_time_ps

FIXTURE = Path(__file__).parent.parent / "data" / "tpu_v6e_inference.xplane.pb"


def nested_profile():
    # parent [0, 1000) with a child [100, 300); "late" [300, 1200) starts inside the parent but
    # runs past it, so it is the parent's sibling (depth 0, overlapping it) as XProf nests them;
    # its child [400, 450) lies in both spans; next parent [2000, 2100) with a child at its start.
    events = [("parent", 0, 1000, {"step_num": 3}), ("child", 100, 200, {}),
              ("late", 300, 900, {}), ("grandchild", 400, 50, {}),
              ("next", 2000, 100, {}), ("first", 2000, 30, {})]
    return open_planes([{"name": "/host:CPU", "lines": [{"name": "main", "events": events}]}])


def event_named(profile, name: str) -> int:
    return int(np.flatnonzero(profile.display_names[profile.meta] == name)[0])


def test_self_time_subtracts_the_time_covered_one_level_down():
    profile = nested_profile()
    index = TraceIndex(profile)
    assert profile.depth[event_named(profile, "late")] == 0
    assert profile.depth[event_named(profile, "grandchild")] == 1
    # one level down, [100, 300) and [400, 450) fall in the parent's span: 250 of its 1000 ps
    assert self_time_ps(index, event_named(profile, "parent")) == 750
    assert self_time_ps(index, event_named(profile, "late")) == 900 - 50
    assert self_time_ps(index, event_named(profile, "grandchild")) == 50
    assert self_time_ps(index, event_named(profile, "next")) == 70


def test_overlapping_children_are_counted_once():
    events = [("parent", 0, 1000, {}), ("a", 100, 400, {}), ("b", 300, 700, {})]
    profile = open_planes([{"name": "/host:CPU", "lines": [{"name": "main", "events": events}]}])
    assert profile.depth.tolist() == [0, 1, 1]  # a and b overlap: siblings
    assert self_time_ps(TraceIndex(profile), 0) == 1000 - 900


def test_self_time_on_the_fixture_matches_a_brute_force_sum():
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    rng = np.random.default_rng(0)
    for event in rng.choice(profile.n_events, 200, replace=False).tolist():
        track = int(profile.track_of(np.array([event]))[0])
        first, end = profile.tracks.loc[track, ["first_event", "end_event"]]
        idx = np.arange(first, end)
        idx = idx[profile.depth[idx] == profile.depth[event] + 1]
        s, e = profile.start_ps[event], profile.start_ps[event] + profile.duration_ps[event]
        cs, ce = profile.start_ps[idx], profile.start_ps[idx] + profile.duration_ps[idx]
        covered = np.clip(np.minimum(ce, e) - np.maximum(cs, s), 0, None).sum()
        assert self_time_ps(index, event) == e - s - covered


def test_details_of_an_xla_op_carry_hlo_text_and_metadata_stats():
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    event = int(profile.tracks.loc[1, "first_event"]) + 10  # an XLA Ops event of TPU 0
    details = index.details(event)
    json.dumps(details)  # JSON-ready as it is
    assert details["track"] == 1 and details["track_name"] == "XLA Ops"
    assert details["section"] == "/device:TPU:0"
    assert details["full_name"] == profile.metadata["name"].iat[int(profile.meta[event])]
    assert details["name"] == profile.display_names[profile.meta[event]]
    assert details["start_us"] == profile.start_ps[event] / 1e6
    assert details["duration_us"] == profile.duration_ps[event] / 1e6
    assert 0 <= details["self_us"] <= details["duration_us"]
    assert "hlo_category" in details["metadata_stats"]
    assert details["depth"] == int(profile.depth[event])
    assert set(details) >= {"event", "host", "stats", "flows_in", "flows_out"}


def test_details_reject_unknown_events():
    index = trace_index(xw.open_profile(FIXTURE))
    with pytest.raises(KeyError, match="no event"):
        index.details(10**9)


def test_aggregate_groups_by_name():
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    events = np.arange(105, 1609)  # TPU 0's XLA Ops
    table = index.aggregate(events)
    frame = profile.events_frame(events)
    expected = frame.groupby("name")["duration_us"].agg(["count", "sum", "mean", "min", "max"])
    assert list(table.columns) == ["name", "count", "total_us", "avg_us", "min_us", "max_us",
                                   "device_total_us"]
    assert table["total_us"].is_monotonic_decreasing
    got = table.set_index("name").loc[expected.index]
    assert (got["count"] == expected["count"]).all()
    for ours, theirs in [("total_us", "sum"), ("avg_us", "mean"), ("min_us", "min"),
                         ("max_us", "max")]:
        assert np.allclose(got[ours], expected[theirs])
    assert index.aggregate([]).empty


def test_aggregate_gives_the_device_time_the_ops_measured_beside_their_spans():
    """The Op Profile sums `device_duration_ps`; a selection's summary says that too, so the
    two agree where the spans differ (copy-done.4 of the TPU run: its spans are shorter)."""
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    events = np.arange(105, 1609)
    table = index.aggregate(events).set_index("name")
    device = {}
    for e in events.tolist():
        ps = profile.event_stats(e).get("device_duration_ps")
        if ps is not None:
            name = profile.display_names[profile.meta[e]]
            device[name] = device.get(name, 0) + int(ps)
    assert device  # the fixture's XLA ops carry their device time
    for name, ps in device.items():
        assert table.at[name, "device_total_us"] == ps / 1e6
    assert table["device_total_us"].notna().sum() == len(device)
    assert (table["device_total_us"] != table["total_us"]).any()


def test_json_value_keeps_what_javascript_can_hold():
    assert json_value({"a": b"\x01\x02", "b": 2**60, "c": np.int64(7), "d": float("nan"),
                       "e": [True, 1.5, "x"], "f": bytes(100)}) == {
        "a": "0x0102", "b": str(2**60), "c": 7, "d": "nan", "e": [True, 1.5, "x"],
        "f": "<100 bytes>"}
