"""The wire form of answers (docs/dev/trace_protocol.md), decoded back with numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from trace_helpers import line
from xspace_builder import open_planes

import xprof_widgets as xw
from xprof_widgets.trace import (
    StringTracker,
    aggregate_content,
    answer_search,
    answer_window,
    encode_window,
    trace_index,
)

FIXTURE = Path(__file__).parent.parent / "data" / "tpu_v6e_inference.xplane.pb"
WINDOW_BUFFERS = [  # protocol order and types
    ("slice_start", np.float32), ("slice_dur", np.float32), ("slice_name", np.int32),
    ("slice_count", np.uint32), ("slice_event", np.uint32), ("slice_depth", np.uint16),
    ("counter_t", np.float32), ("counter_min", np.float64), ("counter_max", np.float64),
    ("counter_last", np.float64), ("flow_t", np.float32), ("flow_where", np.uint32),
    ("summary_start", np.float32), ("summary_dur", np.float32)]


def decode(content: dict, buffers: list) -> dict[str, np.ndarray]:
    """What the view does: each buffer as its little-endian typed array."""
    json.dumps(content)
    assert len(buffers) == len(WINDOW_BUFFERS)
    return {name: np.frombuffer(bytes(memoryview(b)), np.dtype(dtype).newbyteorder("<"))
            for (name, dtype), b in zip(WINDOW_BUFFERS, buffers, strict=True)}


def close(wire: np.ndarray, us: np.ndarray, span_us: float) -> bool:
    return np.allclose(wire, us, rtol=0, atol=span_us * 1e-6)


def test_window_round_trip_on_the_fixture():
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    host = int(profile.tracks.loc[13, "section_id"])
    window = index.window(1.9e7, 2.1e7, 1600, collapsed=[host], flows=True)
    content, buffers = encode_window(window, StringTracker(profile))
    wire = decode(content, buffers)
    frames = window.to_frames()
    slices, flows, summaries = frames["slices"], frames["flows"], frames["summaries"]
    start, span = content["start_us"], content["end_us"] - content["start_us"]
    assert content["start_us"] == window.start_ps / 1e6 and content["width_px"] == 1600
    assert [t for t, _, _ in content["tracks"]] == window.track_ids.tolist()
    assert sum(n for _, n, _ in content["tracks"]) == len(slices) == wire["slice_start"].size
    per_track = [n for _, n, _ in content["tracks"]]
    assert np.repeat(window.track_ids, per_track).tolist() == slices["track"].tolist()
    inside = (slices["start_us"] >= start) & (slices["end_us"] <= start + span)
    assert inside.mean() > 0.5
    assert close(wire["slice_start"][inside], slices["start_us"][inside] - start, span)
    assert close(wire["slice_dur"][inside], (slices["end_us"] - slices["start_us"])[inside],
                 span)
    assert wire["slice_start"].min() >= -span and (wire["slice_start"]
                                                   + wire["slice_dur"]).max() <= 2 * span
    assert wire["slice_count"].tolist() == slices["count"].tolist()
    assert wire["slice_event"].tolist() == slices["event"].tolist()
    assert wire["slice_depth"].tolist() == slices["depth"].tolist()
    strings = dict(content["strings"])
    assert [strings[i] for i in wire["slice_name"].tolist()] == slices["name"].tolist()
    assert content["n_flows"] == len(flows) > 0
    pairs = wire["flow_t"].reshape(-1, 2)
    assert close(pairs[:, 0], np.clip(flows["from_us"] - start, -span, 2 * span), span)
    where = wire["flow_where"].reshape(-1, 6)
    assert where[:, 2].tolist() == flows["from_event"].tolist()
    assert where[:, 5].tolist() == flows["to_event"].tolist()
    assert where[:, 0].tolist() == flows["from_track"].tolist()
    assert where[:, 4].tolist() == flows["to_depth"].tolist()
    assert content["summaries"] == [[host, len(summaries)]] and len(summaries) > 0
    assert close(wire["summary_start"], np.clip(summaries["start_us"] - start, -span, 2 * span),
                 span)
    assert content["events_in_window"] == window.events_in_window == slices["count"].sum()


def test_counters_on_the_wire():
    counter = {"name": "_counters_", "events": [("bytes", t, 0, {"value": float(t % 7)})
                                                for t in range(0, 10_000, 100)]}
    profile = open_planes([{"name": "/device:TPU:0", "lines": [line("ops", [0], [5]), counter]}])
    index = trace_index(profile)
    window = index.window(1e-3, 8e-3, 20)
    wire = decode(*encode_window(window))
    frame = window.to_frames()["counters"]
    content, _ = encode_window(window)
    kinds = profile.tracks["kind"].to_numpy()
    assert [(kinds[t], c) for t, _, c in content["tracks"]] == [("counter", len(frame)),
                                                               ("slices", 0)]
    assert close(wire["counter_t"], frame["t_us"] - 1e-3, 7e-3)
    for name in ("min", "max", "last"):
        assert wire[f"counter_{name}"].tolist() == frame[name].tolist()


def test_strings_are_sent_once_per_view_until_reset():
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    strings = StringTracker(profile)
    first, _ = answer_window(index, strings, 0, profile.duration_us, 800)
    ids = [i for i, _ in first["strings"]]
    assert len(ids) == len(set(ids)) > 0
    assert all(profile.display_names[i] == text for i, text in first["strings"])
    again, _ = answer_window(index, strings, 0, profile.duration_us, 800)
    assert again["strings"] == []
    reset, _ = answer_window(index, strings, 0, profile.duration_us, 800, reset_strings=True)
    assert sorted(i for i, _ in reset["strings"]) == sorted(ids)
    other_view, _ = answer_window(index, StringTracker(profile), 0, profile.duration_us, 800)
    assert sorted(i for i, _ in other_view["strings"]) == sorted(ids)


def test_search_and_aggregate_replies():
    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    content, buffers = answer_search(index, "copy-done", limit=10)
    result = index.search("copy-done")
    assert content == {"n_hits": result.n_hits, "truncated": True, "n_by": result.n_by}
    event = np.frombuffer(bytes(buffers[0]), "<u4")
    start = np.frombuffer(bytes(buffers[1]), "<f8")
    track = np.frombuffer(bytes(buffers[2]), "<u4")
    assert event.tolist() == result.event[:10].tolist()
    assert start.tolist() == result.start_us[:10].tolist()
    assert track.tolist() == result.track[:10].tolist()
    name_ids = np.frombuffer(bytes(buffers[3]), "<u4")
    assert name_ids.tolist() == np.flatnonzero(result.rows).tolist()
    assert set(profile.meta[event].tolist()) <= set(name_ids.tolist())
    assert all("copy-done" in profile.display_names[i] or "copy-done" in profile.metadata["name"][i]
               for i in name_ids.tolist())
    rows = aggregate_content(index.aggregate(event.tolist()))["rows"]
    json.dumps(rows)
    assert sum(r["count"] for r in rows) == 10
    assert set(rows[0]) == {"name", "count", "total_us", "avg_us", "min_us", "max_us",
                            "device_total_us"}
