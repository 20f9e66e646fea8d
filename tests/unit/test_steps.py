"""Step detection: device `Steps` lines, host step roots, TensorFlow group ids, and none."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis.steps import (
    EDGE_STEPS_KEPT,
    LOOKED_FOR,
    SOURCES,
    edge_steps,
    find_steps,
    ill_formed,
)

US = 1_000_000


def open_space(tmp_path, planes, name="host0"):
    path = tmp_path / f"{name}.xplane.pb"
    path.write_bytes(build_xspace(planes))
    return xw.open_profile(path)


def root(name, start_us, dur_us, **stats):
    return (name, start_us * US, dur_us * US, {"_r": 1, **stats})


def test_device_steps_lines_take_the_slowest_chip(tmp_path):
    chips = []
    for chip, extra in enumerate([0, 30]):
        steps = [(str(k), (1000 + 100 * k) * US, (90 + extra * (k == 1)) * US, {"group_id": k})
                 for k in range(3)]
        chips.append({"name": f"/device:TPU:{chip}", "lines": [{"name": "Steps", "events": steps}]})
    # Host roots exist too: the device line wins, as in XProf on TPU.
    chips.append({"name": "/host:CPU", "lines": [
        {"name": "python", "events": [root("train", 990 + 100 * k, 95, step_num=k)
                                      for k in range(3)]}]})
    steps = find_steps(open_space(tmp_path, chips))
    assert steps.source == SOURCES[0]
    assert len(steps.markers) == 6
    table = steps.table
    assert table["step"].tolist() == [0, 1, 2]
    assert (table["duration_ps"] / US).tolist() == [90, 120, 90]
    assert table["section"].tolist()[1] == "/device:TPU:1"
    assert steps.step_tracks, "the host roots still tell which thread runs the steps"


def test_sparse_core_steps_lines_are_not_chips(tmp_path):
    planes = [{"name": "/device:TPU:0 SparseCore 0",
               "lines": [{"name": "Steps", "events": [("0", 0, 10 * US, {"group_id": 0})]}]},
              {"name": "/host:CPU", "lines": [{"name": "python", "events": [("x", 0, US, {})]}]}]
    assert not find_steps(open_space(tmp_path, planes)).found


def test_jax_step_trace_annotations(tmp_path):
    events = [("$train.py:10 main", 0, 1000 * US, {})]
    events += [root("train", 10 + 100 * k, 80, step_num=k + 5) for k in range(4)]
    events += [("input_pipeline", 12 + 100 * k, 20 * US, {}) for k in range(4)]
    steps = find_steps(open_space(tmp_path, [{"name": "/host:CPU", "lines": [
        {"name": "python", "events": events}]}]))
    assert steps.source == SOURCES[1]
    assert steps.table["step"].tolist() == [5, 6, 7, 8]
    assert steps.table["name"].tolist() == [f"train {k}" for k in (5, 6, 7, 8)]  # as XProf
    assert (steps.table["duration_ps"] == 80 * US).all()
    assert steps.step_tracks == (0,)


def test_step_numbers_from_names_or_order(tmp_path):
    named = [root(f"train_step_{k}", 100 * k, 50) for k in (3, 4, 5)]
    plain = [root("step", 100 * k, 50) for k in range(3)]
    for events, expected in ((named, [3, 4, 5]), (plain, [0, 1, 2])):
        path = tmp_path / f"{expected[0]}"
        path.mkdir()
        steps = find_steps(open_space(path, [{"name": "/host:CPU", "lines": [
            {"name": "python", "events": events}]}]))
        assert steps.table["step"].tolist() == expected


def test_the_most_frequent_kind_of_root_is_the_step(tmp_path):
    events = [root("train", 100 * k, 50, step_num=k) for k in range(5)]
    events += [root("eval", 600 + 100 * k, 70, step_num=k) for k in range(2)]
    steps = find_steps(open_space(tmp_path, [{"name": "/host:CPU", "lines": [
        {"name": "python", "events": events}]}]))
    assert steps.table["name"].tolist() == [f"train {k}" for k in range(5)]


def test_events_marked_as_no_root_are_not_steps(tmp_path):
    events = [("train", 100 * k * US, 50 * US, {"step_num": k, "_r": 0}) for k in range(3)]
    events += [("load_batch", (100 * k + 60) * US, 5 * US, {}) for k in range(3)]
    steps = find_steps(open_space(tmp_path, [{"name": "/host:CPU", "lines": [
        {"name": "python", "events": events}]}]))
    assert not steps.found


def test_tensorflow_group_ids_span_their_events(tmp_path):
    host = [("IteratorGetNext", (100 * k) * US, 10 * US, {"group_id": k}) for k in range(3)]
    host += [("MatMul:MatMul", (100 * k + 20) * US, 30 * US, {"group_id": k}) for k in range(3)]
    gpu = [("volta_sgemm", (100 * k + 25) * US, 40 * US, {"group_id": k}) for k in range(3)]
    steps = find_steps(open_space(tmp_path, [
        {"name": "/host:CPU", "lines": [{"name": "tf_Compute", "events": host}]},
        {"name": "/device:GPU:0", "lines": [{"name": "Stream #1", "events": gpu}]}]))
    assert steps.source == SOURCES[2]
    assert steps.table["step"].tolist() == [0, 1, 2]
    # One span per step from its first host event to its last GPU kernel, filed under the host.
    assert (steps.table["duration_ps"] == 65 * US).all()
    assert set(steps.markers["section"]) == {"/host:CPU"}


def test_no_markers_says_what_was_looked_for(tpu_path):
    steps = find_steps(xw.open_profile(tpu_path))
    assert not steps.found and steps.source == ""
    assert steps.looked_for == LOOKED_FOR
    assert any("StepTraceAnnotation" in text for text in steps.looked_for)
    assert steps.table.empty and list(steps.table.columns)[:4] == [
        "step", "name", "start_ps", "duration_ps"]


def test_two_hosts_each_keep_their_own_step_time(tmp_path, make_logdir):
    files = {}
    for h, slow in (("a", 0), ("b", 15)):
        files[f"{h}.xplane.pb"] = build_xspace([{"name": "/host:CPU", "lines": [
            {"name": "python", "timestamp_ns": 1_000, "events": [
                root("train", 100 * k, 60 + slow, step_num=k) for k in range(3)]}]}])
    profile = xw.open_profile(make_logdir({"2026_01_01_00_00_00": files}))
    steps = find_steps(profile)
    assert len(steps.markers) == 6
    assert (steps.table["duration_ps"] == 75 * US).all()
    assert set(steps.table["section"]) == {"/host:CPU"}
    assert np.array_equal(steps.table["step"], [0, 1, 2])


@pytest.mark.parametrize("value", ["7", 7, 7.0])
def test_step_numbers_of_any_stat_type(tmp_path, value):
    steps = find_steps(open_space(tmp_path, [{"name": "/host:CPU", "lines": [
        {"name": "python", "events": [("train", 0, US, {"_r": 1, "step_num": value})]}]}]))
    assert steps.table["step"].tolist() == [7]


def write_chrome(tmp_path, events) -> xw.Profile:
    path = tmp_path / "host0.trace.json"
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        *({"ph": "X", "pid": 1, "tid": 7, **e} for e in events)]}))
    return xw.open_profile(path)


def test_chrome_traces_without_root_stats(tmp_path):
    # JAX's trace.json.gz keeps step_num (as text) but drops `_r`.
    jax_steps = [{"name": "train", "ts": 100 * k, "dur": 80, "args": {"step_num": str(k + 2)}}
                 for k in range(3)]
    jax_steps += [{"name": "load_batch", "ts": 100 * k + 1, "dur": 10} for k in range(3)]
    steps = find_steps(write_chrome(tmp_path, jax_steps))
    assert steps.source == SOURCES[1]
    assert steps.table["step"].tolist() == [2, 3, 4]
    assert (steps.table["duration_ps"] == 80 * US).all()


def test_pytorch_profiler_steps(tmp_path):
    torch_steps = [{"name": f"ProfilerStep#{k}", "ts": 100 * k, "dur": 90} for k in (7, 8)]
    torch_steps += [{"name": "aten::mm", "ts": 100 * k + 5, "dur": 20} for k in (7, 8)]
    steps = find_steps(write_chrome(tmp_path, torch_steps))
    assert steps.table["step"].tolist() == [7, 8]
    assert steps.table["name"].tolist() == ["ProfilerStep#7", "ProfilerStep#8"]


def rule_rows(n, idle=()):
    return pd.DataFrame({"step": range(n), "name": [f"train {k}" for k in range(n)],
                         "has_work": [k not in idle for k in range(n)]})


@pytest.mark.parametrize(("n", "ends"), [(5, []), (6, [0, 5]), (12, [0, 11])])
def test_xprofs_edge_rule_starts_past_five_steps(n, ends):
    left = edge_steps(rule_rows(n))
    assert EDGE_STEPS_KEPT == 5 and left["step"].tolist() == ends
    assert left["reason"].str.startswith(("first of more than 5 steps",
                                          "last of more than 5 steps")).all()


def test_steps_without_compute_are_ill_formed():
    left = ill_formed(rule_rows(6, idle=(4, 1)), "device")
    assert left["step"].tolist() == [1, 4]
    assert (left["reason"].str.startswith("no device compute inside its marker")).all()
    assert ill_formed(rule_rows(3), "host").empty
