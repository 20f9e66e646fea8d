"""Chrome trace JSON (jax.profiler's trace.json.gz, PyTorch's pt.trace.json) into the same model."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import xprof_widgets as xw

pytestmark = pytest.mark.decoding

TRACE = {
    "displayTimeUnit": "ns",
    "traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "python3 4242"}},
        {"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": {"name": "MainThread"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "GPU 0"}},
        {"ph": "M", "pid": 2, "tid": 3, "name": "thread_name", "args": {"name": "stream 7"}},
        {"ph": "X", "pid": 1, "tid": 7, "name": "aten::linear", "ts": 100.0, "dur": 50.5,
         "args": {"Input Dims": [[8, 4]], "External id": 11}},
        {"ph": "X", "pid": 1, "tid": 7, "name": "cudaLaunchKernel", "ts": 110.0, "dur": 5.0,
         "args": {"correlation": 99}},
        {"ph": "B", "pid": 1, "tid": 7, "name": "step", "ts": 90.0},
        {"ph": "E", "pid": 1, "tid": 7, "ts": 200.0},
        {"ph": "X", "pid": 2, "tid": 3, "name": "<img src=x onerror=alert(1)>", "ts": 120.0,
         "dur": 7.25, "args": {"correlation": 99}},
        {"ph": "s", "pid": 1, "tid": 7, "id": 99, "cat": "ac2g", "name": "ac2g", "ts": 110.0},
        {"ph": "f", "pid": 2, "tid": 3, "id": 99, "cat": "ac2g", "name": "ac2g", "ts": 120.0,
         "bp": "e"},
        {"ph": "C", "pid": 1, "name": "memory", "ts": 95.0, "args": {"bytes": 1024}},
        {"ph": "C", "pid": 1, "name": "memory", "ts": 150.0, "args": {"bytes": 4096}},
        {"ph": "b", "pid": 1, "tid": 7, "name": "async thing", "ts": 1.0, "id": 5},
    ],
}


@pytest.fixture
def trace_path(tmp_path):
    path = tmp_path / "worker.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(TRACE).encode()))
    return path


def test_processes_threads_and_counters_become_sections_and_tracks(trace_path):
    profile = xw.open_profile(trace_path)
    assert profile.hosts == ["worker"]
    tracks = profile.tracks[["section", "name", "kind", "n_events"]].values.tolist()
    assert tracks == [["GPU 0", "stream 7", "slices", 1],
                      ["python3 4242", "MainThread", "slices", 3],
                      ["python3 4242", "memory", "counter", 2]]


def test_slices_keep_times_nesting_and_names(trace_path):
    profile = xw.open_profile(trace_path)
    main = profile.events(track="MainThread")
    assert main["name"].tolist() == ["step", "aten::linear", "cudaLaunchKernel"]
    assert main["depth"].tolist() == [0, 1, 2]
    assert main["start_us"].tolist() == pytest.approx([0.0, 10.0, 20.0])
    assert main["duration_us"].tolist() == pytest.approx([110.0, 50.5, 5.0])
    gpu = profile.events(track="stream 7")
    assert gpu["name"].tolist() == ["<img src=x onerror=alert(1)>"]


def test_args_are_stats_decoded_on_demand(trace_path):
    profile = xw.open_profile(trace_path)
    linear = int(profile.events(name="aten::linear")["event"].iloc[0])
    assert profile.event_stats(linear) == {"Input Dims": [[8, 4]], "External id": 11}
    idx = profile.event_indices()
    assert sorted(v for v in profile.stat_column(idx, "correlation") if v is not None) == [99, 99]


def test_flow_events_bind_to_slices(trace_path):
    profile = xw.open_profile(trace_path)
    (src, dst, _), = profile.flow_edges().tolist()
    assert profile.events_frame(np.array([src, dst]))["name"].tolist() == [
        "cudaLaunchKernel", "<img src=x onerror=alert(1)>"]


def test_counter_values(trace_path):
    profile = xw.open_profile(trace_path)
    idx = profile.event_indices(track="memory")
    assert profile.counter_values(idx).tolist() == [1024.0, 4096.0]


def test_unsupported_phases_become_one_warning(trace_path):
    warnings = xw.open_profile(trace_path).warnings
    assert warnings == [(f"{trace_path}: skipped 1 of 14 events: 1 event of unsupported phases "
                        "(event 13) (phases: b).")]


def test_plain_json_list_form(tmp_path):
    path = tmp_path / "t.trace.json"
    path.write_text(json.dumps([{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 0, "tid": 0}]))
    assert xw.open_profile(path).events()["name"].tolist() == ["a"]


@pytest.mark.parametrize("content, message", [
    (b"{not json", "not valid JSON"),
    (b'{"foo": 1}', "without a `traceEvents` list"),
    (b'{"traceEvents": []}', "holds no events"),
    (b"", r"empty \(0 bytes\)"),
    (gzip.compress(b'{"traceEvents": []}')[:-6], "gzip stream is truncated"),
])
def test_bad_chrome_traces_raise_named_errors(tmp_path, content, message):
    path = tmp_path / "bad.trace.json.gz"
    path.write_bytes(content)
    with pytest.raises(xw.ProfileError, match=rf"bad\.trace\.json\.gz.*{message}"):
        xw.open_profile(path)
