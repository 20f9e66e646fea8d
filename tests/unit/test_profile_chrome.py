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


def test_a_counter_with_ids_is_a_series_per_id(tmp_path):
    """HTA's queue lengths: one name, a series per stream (`id`); merged, they would draw one
    line jumping between the streams' values."""
    events = [{"ph": "C", "pid": 0, "name": "Queue Length", "id": stream, "ts": ts,
               "args": {"Queue Length": value}}
              for stream, ts, value in ((7, 1, 1), (20, 2, 3), (7, 3, 0), (20, 4, 2))]
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = xw.open_profile(path)
    for stream, values in ((7, [1.0, 0.0]), (20, [3.0, 2.0])):
        idx = profile.event_indices(track=f"Queue Length id: {stream}")
        assert profile.counter_values(idx).tolist() == values


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
    (gzip.compress(b'{"traceEvents": []}', mtime=0)[:-6], "gzip stream is truncated"),
])
def test_bad_chrome_traces_raise_named_errors(tmp_path, content, message):
    path = tmp_path / "bad.trace.json.gz"
    path.write_bytes(content)
    with pytest.raises(xw.ProfileError, match=rf"bad\.trace\.json\.gz.*{message}"):
        xw.open_profile(path)


# ---- malformed traces: repaired with one warning, or refused by name ---------------------------
FIXTURES = {"torch": "torch_tiny_mlp.pt.trace.json.gz", "jax": "jax_cpu_demo.trace.json.gz"}


def _fixture(tpu_path, which: str) -> dict:
    return json.loads(gzip.decompress((tpu_path.parent / FIXTURES[which]).read_bytes()))


def _xs(doc: dict, ph: str = "X") -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("ph") == ph]


def _set(field, value, ph="X"):
    def mutate(doc):
        for e in _xs(doc, ph)[1:4]:
            e[field] = value
    return mutate


def _add(*events):
    def mutate(doc):
        doc["traceEvents"].extend(json.loads(json.dumps(events)))
    return mutate


def _check_consistent(profile) -> None:
    """Every event inside its track's range, times and durations non-negative and ordered."""
    tracks = profile.tracks
    assert (tracks["n_events"] > 0).all()
    assert tracks["n_events"].sum() == profile.n_events
    assert (profile.start_ps >= 0).all() and (profile.duration_ps >= 0).all()
    assert (profile.start_ps + profile.duration_ps >= profile.start_ps).all()  # no wrap-around
    for first, end in zip(tracks["first_event"], tracks["end_event"], strict=True):
        assert 0 <= first < end <= profile.n_events
        assert (np.diff(profile.start_ps[first:end]) >= 0).all()
    edges = profile.flow_edges()
    assert ((edges[:, :2] >= 0) & (edges[:, :2] < profile.n_events)).all()


MALFORMED = [  # (which fixture, mutation, text of the one warning; "" for none)
    ("torch", _set("ts", "abc"), "3 events with a non-numeric ts (first: event 8)"),
    ("torch", _set("ts", float("nan")), "3 events with a non-finite ts"),
    ("jax", _set("ts", float("inf")), "3 events with a non-finite ts (first: event 13)"),
    ("jax", _set("ts", [1]), "3 events with a non-numeric ts"),
    ("jax", _set("ts", True), "3 events with a non-numeric ts"),
    ("torch", _set("ts", 1e300), "3 events more than 26 days away from the trace's other events"),
    ("jax", _set("ts", "12.5"), ""),  # a numeric string, as Perfetto reads it
    ("torch", _set("name", ["a"]), "read lists or objects given as 3 name as their JSON text"),
    ("torch", _set("pid", {"a": 1}), "read lists or objects given as 3 pid as their JSON text"),
    ("jax", _set("tid", [1, 2]), "read lists or objects given as 3 tid as their JSON text"),
    ("jax", _set("tid", 1.5), ""),
    ("jax", _set("tid", float("nan")), ""),
    ("torch", lambda d: [e.pop("pid") for e in _xs(d)[1:4]], ""),
    ("torch", _set("dur", 1e300), "3 events with a dur over 26 days (first: event 8)"),
    ("jax", _set("dur", 1e15), "3 events with a dur over 26 days"),
    ("torch", _set("dur", -5.0), "3 X events with a negative dur"),
    ("jax", _set("dur", "x"), "3 X events with a non-numeric dur"),
    ("jax", _set("dur", float("nan")), "3 X events with a non-finite dur"),
    ("jax", _set("dur", [3]), "3 X events with a non-numeric dur"),
    ("torch", _add({"ph": "X"}), "1 X event without ts (event 543)"),
    ("torch", _set("args", [1, 2]), ("kept args that are not a JSON object under the key 'args' "
                                    "(3 events)")),
    ("jax", _set("args", "s"), "kept args that are not a JSON object"),
    ("torch", _set("id", {"local": 5}, ph="s"), "read lists or objects given as 3 id"),
    ("torch", _set("id", [1], ph="f"), "read lists or objects given as 3 id"),
    ("torch", _set("cat", [1], ph="s"), "read lists or objects given as 3 cat"),
    ("torch", lambda d: [e.update(args="junk") for e in _xs(d, "M")],
     "8 M events whose args are not an object (first: event 0)"),
    ("jax", _add({"ph": "M", "pid": 701, "name": "process_sort_index",
                  "args": {"sort_index": "z"}}),
     "1 M event with a non-numeric sort_index"),
    ("jax", _add({"ph": "M", "pid": 701, "tid": 1, "name": "thread_name", "args": {"name": {}}}),
     "read lists or objects given as 1 name"),
    ("jax", _add({"ph": "B", "pid": 701, "tid": 5, "name": "open", "ts": 20.0}), ""),
    ("jax", _add({"ph": "E", "pid": 701, "tid": 999, "ts": 20.0}),
     "1 E event without a matching B (event 1916)"),
    ("jax", _add({"ph": "B", "pid": 701, "tid": 5, "name": "b", "ts": 20.0},
                 {"ph": "E", "pid": 701, "tid": 5, "ts": 10.0}), "1 E event earlier than the"),
    ("jax", lambda d: d["traceEvents"].extend(json.loads(json.dumps(d["traceEvents"]))), ""),
    ("torch", _set("ph", ["X"]), "3 events whose `ph` is not text"),
    ("jax", _add({"ph": "C", "pid": 701, "name": "m", "ts": 1, "args": [1]}),
     "1 C event without a finite numeric value"),
    ("jax", _add({"ph": "C", "pid": 701, "name": "m", "ts": 1, "args": {"v": float("nan")}}),
     "1 C event without a finite numeric value"),
    ("jax", _add({"ph": "C", "pid": 701, "name": "m", "ts": 1, "args": {"v": 10**400}}),
     "1 C event without a finite numeric value"),
    ("jax", _set("ts", 10**400), "3 events with a non-finite ts"),
    ("jax", _add({"ph": "s", "pid": 701, "tid": 5, "ts": 1}), "1 flow event without id"),
    ("jax", _add([1], "x", 3.0, None), "4 events that are not a JSON object (first: event 1916)"),
    ("jax", _add({"ph": "b", "id": 1, "ts": 1}, {"ph": "P", "ts": 1}),
     "2 events of unsupported phases (first: event 1916) (phases: P, b)"),
]


@pytest.mark.parametrize("which, mutate, warning", MALFORMED)
def test_malformed_events_are_dropped_or_kept_with_one_warning(tmp_path, tpu_path, which, mutate,
                                                               warning):
    doc = _fixture(tpu_path, which)
    mutate(doc)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    profile = xw.open_profile(path)
    _check_consistent(profile)
    if warning:
        assert len(profile.warnings) == 1
        assert profile.warnings[0].startswith(f"{path}: ")
        assert warning in profile.warnings[0]
    else:
        assert profile.warnings == []


def test_a_begin_without_end_runs_to_the_trace_end(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"ph": "B", "pid": 1, "tid": 1, "name": "open", "ts": 10},
                                {"ph": "X", "pid": 1, "tid": 2, "name": "x", "ts": 0, "dur": 50}]))
    events = xw.open_profile(path).events(name="open")
    assert events[["start_us", "duration_us"]].values.tolist() == [[10.0, 40.0]]


def test_a_trace_where_nothing_is_usable_is_refused_with_the_reasons(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "ts": "a"}, 5, {"ph": "E", "ts": 1}]}))
    with pytest.raises(xw.ProfileError, match=r"t\.json: the Chrome trace holds no events \(slices "
                                              r"or counters\) \(skipped 3: 1 event with a "
                                              r"non-numeric ts \(event 0\), 1 event that is not a "
                                              r"JSON object \(event 1\), 1 E event without a "
                                              r"matching B \(event 2\)\)"):
        xw.open_profile(path)


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_cut_off_trace_keeps_its_complete_events(tmp_path, tpu_path, gzipped):
    text = json.dumps(_fixture(tpu_path, "torch")).encode()
    cut = text[:text.index(b'"ph": "X"', len(text) // 2)]  # mid-way through an event
    path = tmp_path / ("cut.json.gz" if gzipped else "cut.json")
    path.write_bytes(gzip.compress(text)[:len(gzip.compress(cut))] if gzipped else cut)
    profile = xw.open_profile(path)
    _check_consistent(profile)
    assert 0 < profile.n_events < 479
    (warning,) = profile.warnings
    assert warning.startswith(f"{path}: ")
    damage = "gzip stream is truncated" if gzipped else "the JSON breaks off at character"
    assert damage in warning
    assert "kept the" in warning and "complete events before it" in warning


def test_flows_bind_under_a_slice_that_covers_everything_in_linear_time(tmp_path):
    n = 20_000
    events = [{"ph": "X", "pid": 1, "tid": 1, "name": "step", "ts": 0, "dur": 1e7}]
    for i in range(n):
        t = 10.0 + i
        events += [{"ph": "X", "pid": 1, "tid": 1, "name": "launch", "ts": t, "dur": 0.5},
                   {"ph": "X", "pid": 2, "tid": 3, "name": "kernel", "ts": t + 0.6, "dur": 0.2},
                   {"ph": "s", "pid": 1, "tid": 1, "id": i, "cat": "ac2g", "ts": t + 0.25},
                   {"ph": "f", "pid": 2, "tid": 3, "id": i, "cat": "ac2g", "ts": t + 0.6,
                    "bp": "e"}]
    path = tmp_path / "flows.json"
    path.write_text(json.dumps(events))
    profile = xw.open_profile(path)
    edges = profile.flow_edges()
    assert len(edges) == n
    frame = profile.events_frame(edges[:, 0])
    assert set(frame["name"]) == {"launch"}  # the deepest slice, not the step around it
    assert set(profile.events_frame(edges[:, 1])["name"]) == {"kernel"}
    assert (profile.start_ps[edges[:, 1]] - profile.start_ps[edges[:, 0]] == 600_000).all()
