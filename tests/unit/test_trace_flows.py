"""Flow edges from XProf flow stats, producer/consumer pairs, correlation ids and Chrome flows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from xspace_builder import open_planes

import xprof_widgets as xw
from xprof_widgets.trace import TraceIndex, trace_index

FIXTURE = Path(__file__).parent.parent / "data" / "tpu_v6e_inference.xplane.pb"


def flow(flow_id: int, direction: str, category: int = 0) -> dict:
    return {"flow": (category << 58) | (flow_id << 2) | {"in": 1, "out": 2, "inout": 3}[direction]}


def flow_profile():
    device = {"name": "/device:TPU:0", "lines": [
        {"name": "XLA Ops", "events": [
            ("A", 0, 10, flow(5, "out")), ("C", 100, 10, flow(5, "in")),
            ("D", 200, 10, flow(6, "in")), ("E", 300, 10, flow(6, "out")),
            ("G", 350, 10, flow(5, "out", category=1)), ("F", 400, 10, flow(5, "in", 1))]},
        {"name": "Async XLA Ops", "events": [("B", 50, 30, flow(5, "inout"))]},
        {"name": "XLA Modules", "events": [
            ("K1", 20, 5, {"_c": 77, "_ct": 3}), ("K2", 40, 5, {"_c": 77, "_ct": 3}),
            ("K3", 60, 5, {"_c": 77, "_ct": 4}), ("K4", 80, 5, {"_c": 2**64 - 5, "_ct": 3})]}]}
    gpu = {"name": "/device:GPU:0", "lines": [
        {"name": "stream 1", "events": [("R", 30, 5, {"correlation_id": 9})]}]}
    host = {"name": "/host:CPU", "lines": [
        {"name": "python", "events": [("P", 0, 10, {"_p": 77, "_pt": 3}),
                                      ("Q", 70, 5, {"_p": -5, "_pt": 3})]},
        {"name": "launch", "events": [("L", 0, 10, {"correlation_id": 9})]}]}
    return open_planes([device, gpu, host])


def named_edges(profile, index) -> set[tuple[str, str, str]]:
    frame = index.flows.frame()
    names = profile.display_names[profile.meta]
    return set(zip(names[frame["from_event"]], names[frame["to_event"]], frame["kind"],
                   strict=True))


def test_edges_from_every_kind_of_flow_stat():
    profile = flow_profile()
    assert named_edges(profile, TraceIndex(profile)) == {
        ("A", "B", "flow"), ("B", "C", "flow"),  # out -> inout -> in, in time order
        ("G", "F", "flow"),  # same id, other category: its own flow; D (in) -> E (out) is not
        ("P", "K1", "producer"), ("P", "K2", "producer"),  # K3 has another type
        ("Q", "K4", "producer"),  # -5 written as int64 and as uint64 is the same id
        ("L", "R", "correlation"),
    }


def test_window_flows_follow_the_window_and_the_visible_tracks():
    profile = flow_profile()
    index = TraceIndex(profile)
    names = profile.display_names[profile.meta]
    window = index.window(0, 1e-4, 1000, flows=True)  # 0..100 ps, 0.1 ps a pixel
    pairs = set(zip(names[window.flow_from_event], names[window.flow_to_event], strict=True))
    assert pairs == {("A", "B"), ("B", "C"), ("P", "K1"), ("P", "K2"), ("Q", "K4"), ("L", "R")}
    late = index.window(3.2e-4, 4.5e-4, 1000, flows=True)
    assert set(zip(names[late.flow_from_event], names[late.flow_to_event],
                   strict=True)) == {("G", "F")}
    stream = int(profile.tracks.index[profile.tracks["name"] == "stream 1"][0])
    only = index.window(0, 1e-4, 1000, tracks=[stream], flows=True)
    assert set(names[only.flow_from_event]) == {"L"}
    assert only.flow_from_track.tolist() == profile.track_of(only.flow_from_event).tolist()
    assert only.flow_to_depth.tolist() == profile.depth[only.flow_to_event].tolist()
    assert index.window(0, 1e-4, 10).flow_edges.shape[0] == 0  # only when asked for


def test_flows_between_the_same_rows_in_one_pixel_are_sent_once():
    n = 200
    sends = [(f"s{k}", k * 10, 5, flow(k + 1, "out")) for k in range(n)]
    receives = [(f"r{k}", k * 10 + 5, 5, flow(k + 1, "in")) for k in range(n)]
    profile = open_planes([{"name": "/device:TPU:0", "lines": [
        {"name": "a", "events": sends}, {"name": "b", "events": receives}]}])
    index = TraceIndex(profile)
    assert len(index.flows) == n
    fine = index.window(0, n * 10 / 1e6, 4 * n, flows=True)
    assert fine.flow_edges.shape[0] == n
    coarse = index.window(0, n * 10 / 1e6, 10, flows=True)
    assert coarse.flow_edges.shape[0] <= 2 * 11


def test_fixture_producer_consumer_edges_join_equal_ids():
    profile = xw.open_profile(FIXTURE)
    frame = trace_index(profile).flows.frame()
    pc = frame[frame["kind"] == "producer"]
    assert len(pc) == 2189  # every consumer of the fixture finds its producer
    mask = (1 << 64) - 1
    p_id = profile.stat_column(pc["from_event"].to_numpy(), "_p")
    c_id = profile.stat_column(pc["to_event"].to_numpy(), "_c")
    assert all(int(a) & mask == int(b) & mask for a, b in zip(p_id, c_id, strict=True))
    p_type = profile.stat_column(pc["from_event"].to_numpy(), "_pt")
    c_type = profile.stat_column(pc["to_event"].to_numpy(), "_ct")
    assert p_type.tolist() == c_type.tolist()
    names = profile.display_names[profile.meta]
    executes = pc[names[pc["from_event"]] == "TfrtTpuLoadedExecutable::Execute"]
    assert len(executes) > 0
    assert set(names[executes["to_event"]]) == {"Scheduled TfrtTpuLoadedExecutable::Execute"}
    assert (executes["from_us"] <= executes["to_us"]).all()  # scheduled after it was asked for
    # Async XLA Ops carry `flow` stats, each id on one event only: no chain to draw
    assert (frame["kind"] == "flow").sum() == 0


def test_chrome_trace_flows_become_edges(tmp_path):
    trace = {"traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "python"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "GPU 0"}},
        {"ph": "X", "pid": 1, "tid": 1, "name": "cudaLaunchKernel", "ts": 10.0, "dur": 5.0},
        {"ph": "X", "pid": 2, "tid": 7, "name": "kernel", "ts": 20.0, "dur": 3.0},
        {"ph": "s", "pid": 1, "tid": 1, "id": 4, "cat": "ac2g", "name": "ac2g", "ts": 11.0},
        {"ph": "f", "pid": 2, "tid": 7, "id": 4, "cat": "ac2g", "name": "ac2g", "ts": 20.0,
         "bp": "e"}]}
    path = tmp_path / "w.pt.trace.json"
    path.write_text(json.dumps(trace))
    profile = xw.open_profile(path)
    assert named_edges(profile, trace_index(profile)) == {("cudaLaunchKernel", "kernel", "chrome")}


def test_details_list_flows_in_and_out():
    profile = flow_profile()
    index = TraceIndex(profile)
    b = int(np.flatnonzero(profile.display_names[profile.meta] == "B")[0])
    details = index.details(b)
    assert [f["name"] for f in details["flows_in"]] == ["A"]
    assert [f["name"] for f in details["flows_out"]] == ["C"]
    assert details["flows_out"][0]["start_us"] == 100 / 1e6


@pytest.mark.parametrize("chunk", [1 << 20, 7])  # scanned in chunks of 7 events: many chunks
def test_stat_ints_match_stat_column(chunk, monkeypatch):
    monkeypatch.setattr("xprof_widgets.profile.xspace_details._SCAN_CHUNK", chunk)
    profile = xw.open_profile(FIXTURE)
    events = np.arange(profile.n_events)
    for name in ("_p", "_c", "_pt", "hlo_op", "no such stat"):
        column = profile.stat_column(events, name)
        present, values = profile.stat_ints(events, name)
        ints = np.array([isinstance(v, int) for v in column])
        assert present.tolist() == ints.tolist()
        assert values[present].tolist() == [v & (2**64 - 1) for v in column[ints]]
        assert not values[~present].any()
    present, packed = profile.stat_ints(events, "flow")  # raw bits, not unpacked
    unpacked = profile.stat_column(events[present], "flow")
    assert present.sum() == 600
    assert [int(v >> np.uint64(2)) & (2**56 - 1) for v in packed[present]] == [
        f["id"] for f in unpacked]


def test_a_window_carries_at_most_max_arrows(monkeypatch, tpu_path):
    import xprof_widgets as xw
    from xprof_widgets.trace import flows as flows_module
    from xprof_widgets.trace import trace_index

    index = trace_index(xw.open_profile(tpu_path))
    everything = index.window(0.0, index.profile.duration_us, 1600, flows=True)
    assert len(everything.flow_edges) > 10
    monkeypatch.setattr(flows_module, "MAX_ARROWS", 10)
    capped = index.window(0.0, index.profile.duration_us, 1600, flows=True)
    assert len(capped.flow_edges) == 10
    assert set(capped.flow_edges.tolist()) <= set(everything.flow_edges.tolist())


def test_a_profile_closed_while_its_flows_build_in_the_background_prints_nothing(monkeypatch):
    """Closing a profile (or its file changing) before the background scan ends must not throw
    a thread's traceback into the notebook; the next use of the flows raises where it is seen."""
    import threading

    from xprof_widgets.errors import ProfileError
    from xprof_widgets.trace import index as index_module

    profile = xw.open_profile(FIXTURE)
    index = trace_index(profile)
    started, release = threading.Event(), threading.Event()

    def closed_meanwhile(*args, **kwargs):
        started.set()
        release.wait(5)
        raise ProfileError(f"{FIXTURE}: this profile was closed (xw.close)")

    uncaught = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    monkeypatch.setattr(index_module, "FlowIndex", closed_meanwhile)
    index.prepare_flows()
    assert started.wait(5)
    [thread] = [t for t in threading.enumerate() if t.name == "xprof-widgets-flows"]
    release.set()
    thread.join(5)
    assert not thread.is_alive() and uncaught == []
    with pytest.raises(ProfileError, match="was closed"):
        _ = index.flows
