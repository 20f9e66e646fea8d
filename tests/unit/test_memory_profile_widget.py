"""The MemoryProfile widget: choices and their checks, what the view receives, the chart template,
the pandas face and CSV, the suite's tab and its link to a moment in the Trace Viewer."""

from __future__ import annotations

from pathlib import Path

import bokeh_doc
import numpy as np
import pandas as pd
import pytest
import test_charts
import traitlets

import xprof_widgets as xw
from xprof_widgets.errors import ProfileError
from xprof_widgets.widgets.memory_profile import VIEW_POINTS, chart_template

DATA = Path(__file__).parents[1] / "data"
TPU = DATA / "tpu_v6e_inference.xplane.pb"
TF = DATA / "tf_keras_cpu_slow_map.xplane.pb"
GPU = DATA / "synthetic_gpu_allocator.xplane.pb"


def test_choices_and_their_checks():
    mp = xw.MemoryProfile(TPU)
    assert (mp.host, mp.memory_id) == ("tpu_v6e_inference", "0")
    assert mp._choices == {"tpu_v6e_inference": ["0", "1", "2", "3"]}
    mp.memory_id = "3"
    assert mp.breakdown()["op_name"].iat[0] == "stack"
    with pytest.raises(traitlets.TraitError, match="no allocator 'GPU_0_bfc'"):
        mp.memory_id = "GPU_0_bfc"
    with pytest.raises(traitlets.TraitError, match="no allocator events on host 'nope'"):
        mp.host = "nope"
    assert xw.MemoryProfile(GPU, "GPU_1_bfc").memory_id == "GPU_1_bfc"
    assert "peak 20496.91 MiB" in repr(xw.MemoryProfile(TPU))


def test_view_answer():
    mp = xw.MemoryProfile(TF)
    content, buffers = mp._call("view", {})
    s = content["summary"]
    assert (content["host"], content["memory_id"], content["unit"]) == (
        "tf_keras_cpu_slow_map", "mklcpu", "MiB")
    assert content["free_hidden"]  # 25 GB of RAM next to an 8 MiB peak
    n = content["timeline"]["points"]
    assert n == content["timeline"]["snapshots"] == 192
    floats, ints, codes = buffers[:7], buffers[7:9], buffers[9:]
    assert all(np.asarray(b).dtype == np.float64 and len(b) == n for b in floats)
    assert all(np.asarray(b).dtype == np.int32 for b in ints + codes)
    stack, heap = floats[1], floats[2]
    assert (stack + heap).max() * content["scale"] == s["peak_bytes"] == 7864320
    snaps = mp.timeline()
    assert np.array_equal(ints[1], snaps["event"].to_numpy())
    ops = np.array(content["timeline"]["texts"]["op_name"])[codes[1]]
    assert ops.tolist() == snaps["op_name"].tolist()
    table = pd.DataFrame(content["breakdown"])
    assert table.columns.tolist() == mp.breakdown().columns.tolist()
    assert int(table["allocation_bytes"].sum()) == s["peak_bytes"]


def test_view_keeps_the_largest_snapshots_when_there_are_many():
    mp = xw.MemoryProfile(GPU)
    full = mp.timeline()
    reduced = mp.timeline(max_points=100)
    assert len(full) == 1123 and len(reduced) == 100
    assert reduced["in_use_bytes"].max() == full["in_use_bytes"].max()
    assert mp._call("view", {})[0]["timeline"]["points"] == min(VIEW_POINTS, len(full))


def test_no_allocator_events():
    mp = xw.MemoryProfile(DATA / "jax_cpu_demo.xplane.pb")
    assert "no allocator events" in mp._error and "MemoryAllocation" in mp._error
    with pytest.raises(ProfileError, match="no allocator events"):
        mp.breakdown()
    assert mp.summary().empty
    assert "no allocator events" in repr(mp)


def test_chart_template_is_valid_bokeh():
    item = chart_template()
    test_charts.test_every_model_and_property_exists_in_the_installed_bokeh({"timeline": item})
    test_charts.test_each_model_is_written_once_and_references_point_to_written_models(
        {"timeline": item})
    names = {m["attributes"].get("name") for m in bokeh_doc.models(item["doc"])}
    assert {"timeline", "x_axis", "y_axis", "peak", "peak_label", "free_area", "hover"} <= names


def test_csv_is_the_breakdown(tmp_path):
    mp = xw.MemoryProfile(TPU, "1")
    mp.to_csv(tmp_path / "b.csv")
    assert pd.read_csv(tmp_path / "b.csv", keep_default_na=False).equals(mp.to_dataframe())


def test_suite_tab_and_link_to_a_moment():
    suite = xw.Profiler(TPU)
    assert "memory_profile" in suite.tab_keys
    assert "memory_profile" not in xw.Profiler(DATA / "jax_cpu_demo.xplane.pb").tab_keys
    mp = suite.tool("memory_profile")
    assert mp._linked
    memory = mp.allocator()
    peak = memory.snapshots.iloc[memory.peak]
    mp.link = {"tool": "trace", "time_us": float(peak["time_us"]), "event": int(peak["event"]),
               "at": 1}
    tv = suite.tool("trace")
    assert suite.tab_keys[suite.tabs.selected_index] == "trace"
    start, end = tv.window
    assert start < peak["time_us"] < end and end - start >= 20
    names = suite.profile.events_frame(tv.selected_events)
    assert "DeferredTpuAllocator::Allocate" in names["name"].tolist()  # the op that allocated
    assert (names["start_us"] <= peak["time_us"]).all()
