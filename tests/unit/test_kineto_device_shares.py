"""Device shares of Framework Op Stats on a GPU running three streams at once (issue 30 item 3).

Shares are of the GPU's busy time (the union of its work over all streams) or, with idle, of
its span: summing each kernel's duration over concurrent streams read 189% with idle 0%. Here
a stretch where k kernels run counts 1/k to each, so the device rows' self times add up to the
union, idle is span minus union, the cumulative share ends at 100% and the pie's slices are
the table's rows.
"""

from __future__ import annotations

import gzip
import json

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.framework_op_stats import analyze_framework_op_stats

# (op, stream, start us, duration us): three streams overlapping, then a gap, then one alone.
WORK = [("aten::mm", 7, 0, 100), ("aten::add", 8, 50, 100), ("aten::relu", 9, 60, 20),
        ("aten::mm", 7, 300, 50)]
SPAN_US = 350
UNION_US = 150 + 50  # [0, 150) and [300, 350)


def _trace(path):
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
              {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}]
    for k, (op, stream, start, length) in enumerate(WORK):
        events += [
            {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": 10 * k,
             "dur": 5},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": 10 * k + 1, "dur": 2, "args": {"correlation": k + 1}},
            {"ph": "X", "cat": "kernel", "name": f"kernel_{k}", "pid": 0, "tid": stream,
             "ts": 1000 + start, "dur": length,
             "args": {"stream": stream, "device": 0, "correlation": k + 1}}]
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


@pytest.fixture()
def profile(tmp_path):
    return xw.open_profile(_trace(tmp_path / "streams.json.gz"))


def _device(table):
    return table[table["host_or_device"] == "Device"].set_index("operation")


def test_self_times_split_overlaps_and_add_up_to_the_union(profile):
    device = _device(xw.FrameworkOpStats(profile).to_dataframe())
    # mm: [0,50) alone, [50,60) with add, [60,80) with add and relu, [80,100) with add, [300,350)
    assert device.loc["aten::mm", "total_self_time_us"] == pytest.approx(
        50 + 10 / 2 + 20 / 3 + 20 / 2 + 50, abs=1e-6)
    assert device.loc["aten::relu", "total_self_time_us"] == pytest.approx(20 / 3, abs=1e-6)
    assert device.loc["aten::mm", "total_time_us"] == 150  # time stays the summed durations
    ops = device[device["type"] != "IDLE"]
    assert round(ops["total_self_time_us"].sum() * 10**6) == UNION_US * 10**6
    assert round(device.loc["IDLE", "total_self_time_us"] * 10**6) == (SPAN_US - UNION_US) * 10**6


def test_cumulative_share_ends_at_100_with_and_without_idle(profile):
    analysis = analyze_framework_op_stats(profile)
    for include_idle in (True, False):
        device = _device(analysis.table(include_idle))
        shares = device["device_total_self_time_pct"]
        assert shares.max() <= 100
        assert device["device_cumulative_total_self_time_pct"].iloc[-1] == pytest.approx(
            100, abs=1e-9)
        assert device["device_cumulative_total_self_time_pct"].is_monotonic_increasing
    with_idle = _device(analysis.table(True))
    assert with_idle.loc["IDLE", "device_total_self_time_pct"] == pytest.approx(
        100 * (SPAN_US - UNION_US) / SPAN_US)


def test_pie_slices_are_the_table_rows(profile):
    """The pie draws self_time_by; its slices' shares are the table's shares, row for row."""
    analysis = analyze_framework_op_stats(profile)
    for include_idle in (True, False):
        slices = analysis.self_time_by("Device", "operation", include_idle)
        device = _device(analysis.table(include_idle))
        pie = slices / slices.sum() * 100
        for name, share in pie.items():
            assert share == pytest.approx(device.loc[name, "device_total_self_time_pct"])
