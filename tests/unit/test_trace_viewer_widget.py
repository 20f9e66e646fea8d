"""TraceViewer's kernel half: its synced state, the requests its view makes, its pandas face."""

from __future__ import annotations

import json

import numpy as np
import pytest
import traitlets

import xprof_widgets as xw
from xprof_widgets.errors import ProfileError
from xprof_widgets.profile.model import PS_PER_US
from xprof_widgets.widgets.trace_viewer import MAX_BOX_EVENTS, TraceViewer

WINDOW_BUFFERS = [  # docs/dev/trace_protocol.md, in order
    ("slice_start", np.float32), ("slice_dur", np.float32), ("slice_name", np.int32),
    ("slice_count", np.uint32), ("slice_event", np.uint32), ("slice_depth", np.uint16),
    ("counter_t", np.float32), ("counter_min", np.float64), ("counter_max", np.float64),
    ("counter_last", np.float64), ("flow_t", np.float32), ("flow_where", np.uint32),
    ("summary_start", np.float32), ("summary_dur", np.float32),
]


@pytest.fixture(scope="module")
def profile():
    return xw.open_profile("tests/data/tpu_v6e_inference.xplane.pb")


@pytest.fixture
def viewer(profile):
    return TraceViewer(profile)


def ask(widget: TraceViewer, method: str, **params) -> tuple[dict, list[np.ndarray]]:
    """One request as the view sends it; the reply put back together as transport.js does."""
    sent: list[tuple[dict, list]] = []
    widget.send = lambda content, buffers=None: sent.append((content, list(buffers or [])))
    widget._on_custom_message(widget, {"kind": "request", "id": 1, "method": method,
                                       "params": params}, [])
    replies = [(m, b) for m, b in sent if m.get("kind") in ("response", "error")]
    first = replies[0][0]
    assert first["kind"] == "response", first
    out = [bytearray(size) for size in first["sizes"]]
    for message, buffers in replies:
        for (index, offset), piece in zip(message["parts"], buffers, strict=True):
            out[index][offset:offset + len(piece)] = bytes(piece)
    blobs = [bytes(b) for b in out]
    content = (json.loads(blobs.pop().decode()) if first.get("content_buffer")
               else first["content"])
    return content, blobs


def window_arrays(blobs: list[bytes]) -> dict[str, np.ndarray]:
    assert len(blobs) == len(WINDOW_BUFFERS)
    return {name: np.frombuffer(b, dtype) for (name, dtype), b in zip(WINDOW_BUFFERS, blobs,
                                                                     strict=True)}


def test_accepts_a_path_or_an_opened_profile(profile):
    by_path = xw.TraceViewer("tests/data/tpu_v6e_inference.xplane.pb")
    assert TraceViewer(profile).profile is profile
    assert by_path.profile.n_events == profile.n_events  # each viewer made the derived rows
    assert xw.TraceViewer is TraceViewer
    with pytest.raises(ProfileError):
        TraceViewer("tests/data/no_such_profile.xplane.pb")


def test_synced_state_is_small_and_describes_every_track(viewer, profile):
    synced = viewer.get_state()
    assert {"window", "selected_events", "height", "_summary"} <= set(synced)
    assert len(json.dumps(synced["_summary"])) < 64 * 1024
    summary = synced["_summary"]
    tracks = summary["tracks"]
    drawn = profile.tracks[profile.tracks["kind"] != "hidden"]  # XProf's internal events
    assert 0 < len(drawn) < len(profile.tracks)
    assert tracks["id"] == drawn.index.tolist()
    assert tracks["name"] == drawn["name"].tolist()
    assert tracks["max_depth"] == drawn["max_depth"].tolist()
    assert set(tracks) >= {"id", "section", "section_id", "name", "kind", "max_depth", "n_events"}
    assert set(summary["sections"]["id"]) == set(tracks["section_id"])  # no empty sections
    assert summary["n_events"] == profile.n_events
    assert viewer.window == (0.0, pytest.approx(profile.duration_us))


def test_a_profile_in_the_kernel_has_no_hosts_to_pick(viewer):
    """One class serves a Profile and a PodProfile (test_pod.py): a Profile's hosts are all
    shown, so `hosts` stays empty."""
    assert viewer.hosts == [] and type(viewer.index).__name__ == "TraceIndex"
    with pytest.raises(traitlets.TraitError, match="not a PodProfile"):
        viewer.hosts = ["tpu"]
    assert viewer.hosts == []


def test_window_trait_syncs_and_rejects_empty_windows(viewer):
    assert viewer.trait_metadata("window", "sync") is True
    assert viewer.trait_metadata("selected_events", "sync") is True
    viewer.window = (1_000, 2_500)
    assert viewer.window == (1000.0, 2500.0)
    assert list(viewer.get_state("window")["window"]) == [1000.0, 2500.0]
    viewer.set_state({"window": [10.5, 20.25], "selected_events": [3, 4]})  # the view panned
    assert viewer.window == (10.5, 20.25) and viewer.selected_events == [3, 4]
    for bad in [(5, 5), (9, 1), (0, float("inf"))]:
        with pytest.raises(traitlets.TraitError, match="start < end"):
            viewer.window = bad
    assert viewer.window == (10.5, 20.25)


def test_window_request_answers_the_protocol(viewer, profile):
    module = profile.events(track=0).iloc[10]
    start, end = module.start_us - 1000, module.start_us + module.duration_us + 1000
    device_tracks = profile.tracks.index[profile.tracks["section_kind"] == "device"].tolist()
    host_section = int(profile.tracks["section_id"][profile.tracks["section_kind"] == "host"]
                       .iloc[0])
    content, blobs = ask(viewer, "window", start_us=start, end_us=end, width_px=800,
                         tracks=device_tracks, collapsed=[host_section], flows=True,
                         reset_strings=True, view="a")
    arrays = window_arrays(blobs)
    assert content["start_us"] == pytest.approx(start) and content["width_px"] == 800
    assert [t for t, _, _ in content["tracks"]] == device_tracks
    n_slices = sum(n for _, n, _ in content["tracks"])
    for name in ("slice_start", "slice_dur", "slice_name", "slice_count", "slice_event",
                 "slice_depth"):
        assert arrays[name].shape[0] == n_slices, name
    assert arrays["flow_t"].shape[0] == 2 * content["n_flows"]
    assert arrays["flow_where"].shape[0] == 6 * content["n_flows"]
    assert [s for s, _ in content["summaries"]] == [host_section]
    assert arrays["summary_start"].shape[0] == sum(n for _, n in content["summaries"])
    # The module is wider than a pixel: it comes as itself, at its time, with its name.
    mine = np.flatnonzero(arrays["slice_event"] == module.event)
    assert mine.shape[0] == 1 and arrays["slice_count"][mine[0]] == 1
    assert arrays["slice_start"][mine[0]] == pytest.approx(module.start_us - start, abs=1e-3)
    names = dict(content["strings"])
    assert names[int(arrays["slice_name"][mine[0]])] == module["name"]
    assert set(arrays["slice_name"].tolist()) <= set(names)


def test_names_go_to_each_view_once_unless_it_asks_again(viewer, profile):
    params = {"start_us": 0.0, "end_us": profile.duration_us, "width_px": 400, "tracks": [0, 1]}
    first, _ = ask(viewer, "window", reset_strings=True, view="a", **params)
    assert first["strings"]
    again, _ = ask(viewer, "window", view="a", **params)
    assert again["strings"] == []
    other, _ = ask(viewer, "window", view="b", **params)
    assert sorted(other["strings"]) == sorted(first["strings"])
    reset, _ = ask(viewer, "window", reset_strings=True, view="a", **params)
    assert sorted(reset["strings"]) == sorted(first["strings"])


def test_the_first_request_builds_the_index_and_reports_progress():
    fresh = TraceViewer(xw.open_profile("tests/data/tpu_v6e_inference.xplane.pb"))
    sent: list[dict] = []
    fresh.send = lambda content, buffers=None: sent.append(content)
    fresh._on_custom_message(fresh, {"kind": "request", "id": 3, "method": "window", "params": {
        "start_us": 0.0, "end_us": 1e6, "width_px": 100}}, [])
    kinds = [m["kind"] for m in sent]
    assert kinds[0] == "progress" and kinds[-1] == "response"
    assert sent[-2]["text"].endswith("100%")


def test_details_search_and_aggregate_requests(viewer, profile):
    event = int(profile.events(track=1).iloc[5].event)
    details, _ = ask(viewer, "details", event=event)
    assert details["name"] == profile.display_names[profile.meta[event]]
    assert details["start_us"] == pytest.approx(profile.start_ps[event] / PS_PER_US)
    assert details["track"] == 1

    content, blobs = ask(viewer, "search", pattern="copy-done", regex=False, case=False)
    hits = np.frombuffer(blobs[0], np.uint32)
    starts = np.frombuffer(blobs[1], np.float64)
    tracks = np.frombuffer(blobs[2], np.uint32)
    assert content["n_hits"] == hits.shape[0] > 0 and not content["truncated"]
    assert np.all(np.diff(starts) >= 0)
    full = profile.metadata["name"].to_numpy()
    assert all("copy-done" in profile.display_names[profile.meta[e]] + full[profile.meta[e]]
               for e in hits)
    assert np.array_equal(tracks, profile.track_of(hits.astype(np.int64)))

    two = [int(e) for e in profile.events(track=0).event[:2]]
    aggregate, _ = ask(viewer, "aggregate", events=two + [event])
    rows = aggregate["rows"]
    assert sum(r["count"] for r in rows) == 3
    chosen = profile.events_frame(np.array(two + [event]))
    assert aggregate["start_us"] == pytest.approx(chosen.start_us.min())
    assert aggregate["end_us"] == pytest.approx((chosen.start_us + chosen.duration_us).max())
    assert {"name", "count", "total_us", "avg_us", "min_us", "max_us"} <= set(rows[0])


def test_box_selection_takes_the_events_of_the_rows_and_depths_crossed(viewer, profile):
    ops = profile.events(track=1)
    start, end = ops.start_us.iloc[3], ops.start_us.iloc[8]
    content, _ = ask(viewer, "select_box", start_us=start, end_us=end, rows=[[1, 0, 0]])
    expected = ops[(ops.start_us <= end) & (ops.start_us + ops.duration_us >= start)
                   & (ops.depth == 0)].event.tolist()
    assert content["events"] == sorted(expected)
    assert content["start_us"] == pytest.approx(min(ops.set_index("event").start_us[expected]))
    kept = int(profile.events(track=0).event.iloc[0])
    more, _ = ask(viewer, "select_box", start_us=start, end_us=end, rows=[[1, 0, 0]], add=[kept])
    assert more["events"] == sorted(expected + [kept])
    everything, _ = ask(viewer, "select_box", start_us=0, end_us=profile.duration_us,
                        rows=[[t, 0, 99] for t in range(len(profile.tracks))])
    assert len(everything["events"]) == min(profile.n_events, MAX_BOX_EVENTS)
    assert everything["truncated"] == (profile.n_events > MAX_BOX_EVENTS)


def test_selection_search_events_and_window_data_are_dataframes(viewer, profile):
    picked = [int(e) for e in profile.events(track=1).event[:3]]
    viewer.selected_events = picked
    selection = viewer.selection
    assert selection["event"].tolist() == picked
    assert {"name", "start_us", "duration_us", "track", "section"} <= set(selection.columns)
    viewer.selected_events = []
    assert viewer.selection.empty

    hits = viewer.search("^copy-done", regex=True)
    assert len(hits) > 0 and hits["name"].str.startswith("copy-done").all()
    assert hits["start_us"].is_monotonic_increasing
    assert len(viewer.events(track=1)) == profile.tracks.loc[1, "n_events"]

    frames = viewer.window_data(0, profile.duration_us, 800)
    slices = frames["slices"]
    assert {"track", "depth", "start_us", "end_us", "name", "count", "event"} <= set(slices)
    assert slices["count"].sum() <= profile.n_events and (slices["count"] > 1).any()
