"""TPU custom-call tracing and performance counters on the synthetic `--custom-calls` profile:
LLO utilization as one counter track per unit, the instruction lines searchable with their
details, the perf counters table (event or metadata values), and the PerfCounters widget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis.perf_counters import (
    COLUMNS,
    analyze_perf_counters,
    perf_counters_available,
)
from xprof_widgets.synthetic import llo

DATA = Path(__file__).parents[1] / "data"
FIXTURE = DATA / "custom_calls" / "tpu_custom_calls.xplane.pb"


@pytest.fixture(scope="module")
def profile():
    return xw.open_profile(FIXTURE)


def test_llo_utilization_is_a_counter_per_unit(profile):
    t = profile.tracks
    core = t[t["section"] == "/device:TPU:0"]
    counters = core[core["kind"] == "counter"]
    assert counters["name"].tolist() == list(llo.UNITS)  # first in the core, as XProf draws them
    assert (core["kind"].iloc[:len(llo.UNITS)] == "counter").all()
    runs = llo.LLO_STEPS * 2  # two layers: two custom calls a step
    assert (counters["n_events"] == runs * llo.UTILIZATION_SAMPLES).all()
    values = profile.counter_values(profile.event_indices(track=int(counters.index[0])))
    assert np.isfinite(values).all() and ((values >= 0) & (values <= 100)).all()
    assert "LLO Utilization" not in set(t["name"])  # the line itself became the counters


def test_instruction_lines_are_searchable_with_their_details(profile):
    tv = xw.TraceViewer(profile)
    hits = tv.search("vmatmul.bf16")
    assert len(hits) and set(hits["track_name"]) <= {"MXU0 Instructions", "LLO Instructions"}
    mxu = hits[hits["track_name"] == "MXU0 Instructions"]
    stats = profile.event_stats(int(mxu["event"].iat[0]))
    assert stats["unit_id"] == 6 and "bundle_number" in stats
    assert stats["details"].startswith("vmatmul.bf16")
    bundle = profile.events(track="/device:TPU:1/LLO Instructions").iloc[0]
    details = tv.index.details(int(bundle["event"]))
    assert "llo_scopes" in str(details) and "softmax/row_max" in str(details)
    primitives = tv.search("dot_general", regex=False)
    assert "Pallas Primitives" in set(primitives["track_name"])


def test_the_custom_call_is_a_kernel_without_cost_model(profile):
    from xprof_widgets.analysis.kernel_stats import custom_call_kernels

    kernels = custom_call_kernels(profile)
    assert kernels["kernel_name"].str.startswith("custom-call").all() and len(kernels) == 2


def test_perf_counters_table(profile):
    table = analyze_perf_counters(profile)
    assert table.columns.tolist() == COLUMNS
    assert len(table) == 2 * len(llo.COUNTERS)  # a sample per chip
    assert sorted(set(table["chip"])) == [0, 1]
    assert set(table["sample"]) == {llo.COUNTER_LINE_ID}
    assert set(table["kernel"]) == {"Performance Counters"}
    assert table["value"].dtype == np.uint64 and (table["value"] > 0).all()
    row = table[(table["chip"] == 1) & (table["counter"] == "mxu_busy_cycles")].iloc[0]
    assert (row["set"], row["description"]) == ("mxu", "Cycles a matrix unit was busy")
    assert perf_counters_available(profile)
    assert not perf_counters_available(xw.open_profile(DATA / "synthetic_tpu.xplane.pb"))


def test_counter_values_on_metadata_and_planes_without_a_chip(tmp_path):
    path = tmp_path / "pc.xplane.pb"
    path.write_bytes(build_xspace([
        {"name": "/device:TPU:0", "stats": {"global_chip_id": 3},
         "metadata": {"HBM_READS": {"stats": {"counter_value": 42}}},
         "lines": [{"name": "kernel", "events": [
             ("HBM_READS", 0, 0, {"performance_counter_sets": "hbm"}),
             ("ISSUE", 10, 0, {"counter_value": 1 << 60, "performance_counter_description": "i"}),
             ("zero", 20, 0, {"counter_value": 0})]}]},
        {"name": "/device:TPU:1", "lines": [{"name": "kernel", "events": [
            ("ISSUE", 0, 0, {"counter_value": 5})]}]},  # no chip id: XProf skips the plane
    ]))
    table = analyze_perf_counters(xw.open_profile(path))
    assert table[["chip", "counter", "value", "description", "set"]].values.tolist() == [
        [3, "hbm_reads", 42, "", "hbm"], [3, "issue", 1 << 60, "i", ""], [3, "zero", 0, "", ""]]
    widget = xw.PerfCounters(path)
    assert len(widget.to_dataframe()) == 2  # the non-zero ones
    widget.nonzero_only = False
    assert len(widget.to_dataframe()) == 3
    widget.to_csv(tmp_path / "pc.csv")
    assert pd.read_csv(tmp_path / "pc.csv").columns.tolist() == COLUMNS
    assert widget._call("table", {"nonzero_only": True})[0]["rows"]["counter"] == [
        "hbm_reads", "issue"]
