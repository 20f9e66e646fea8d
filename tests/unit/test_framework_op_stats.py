"""Framework op stats on small profiles whose every number is known, and on the fixtures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis.framework_op_stats import (
    COLUMNS,
    analyze_framework_op_stats,
    framework_op_stats_available,
)

DATA = Path(__file__).parents[1] / "data"


def _op(symbol: int, tf_op: str | None, flops: int, moved: int) -> dict:
    stats = {"program_id": 1, "symbol_id": symbol, "hlo_category": "loop fusion",
             "flops": flops, "bytes_accessed": moved}
    if tf_op is not None:
        stats["tf_op"] = tf_op
    return stats


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    tpu = {"name": "/device:TPU:0",
           "stats": {"peak_teraflops_per_second": 100.0,
                     "peak_hbm_bw_gigabytes_per_second": 1000.0},
           "metadata": {"fusion.1": {"display_name": "fusion.1",
                                     "stats": _op(1, "jit(f)/mul:", 1000, 500)},
                        "copy.2": {"display_name": "copy.2", "stats": _op(2, None, 0, 100)}},
           "lines": [{"name": "XLA Ops", "events": [
               ("fusion.1", 0, 1000, {}), ("copy.2", 1500, 500, {}),
               ("fusion.1", 3000, 1000, {})]}]}
    host = {"name": "/host:CPU", "lines": [
        {"name": "python", "events": [
            ("model/dense/MatMul:MatMul", 0, 1000, {}),
            ("model/dense/BiasAdd:BiasAdd", 200, 300, {"is_eager": 1}),
            ("user annotation", 1200, 100, {}),
            ("model/dense/MatMul:MatMul", 2000, 400, {})]},
        {"name": "tf_data", "events": [
            ("Iterator::Prefetch", 0, 500, {}),
            ("Iterator::Prefetch::Map", 100, 300, {}),
            ("MemoryAllocation", 600, 0, {"tf_op": "dummy"})]}]}
    path = tmp_path_factory.mktemp("fw") / "small.xplane.pb"
    path.write_bytes(build_xspace([tpu, host]))
    return analyze_framework_op_stats(xw.open_profile(path))


def test_rows_in_xprof_order_with_known_numbers(small):
    table = small.table()
    assert list(table.columns) == COLUMNS
    assert table["rank"].tolist() == list(range(1, 10))
    assert table[["host_or_device", "operation", "type"]].values.tolist() == [
        ["Device", "jit(f)/mul", "mul"], ["Device", "IDLE", "IDLE"],
        ["Device", "copy.2", "Unknown"],
        ["Host", "IDLE", "IDLE"], ["Host", "model/dense/MatMul", "MatMul"],  # tie: by name
        ["Host", "Iterator::Prefetch::Map", "Dataset"], ["Host", "model/dense/BiasAdd", "BiasAdd"],
        ["Host", "Iterator::Prefetch", "Dataset"], ["Host", "dummy", ""]]
    rows = table.set_index(["host_or_device", "operation"])
    mul = rows.loc[("Device", "jit(f)/mul")]
    assert mul["occurrences"] == 2 and mul["total_time_us"] == 2000 / 1e6
    assert mul["device_total_self_time_pct"] == pytest.approx(50.0)  # of 4000 ps, idle included
    assert mul["measured_flop_rate_gflops"] == pytest.approx(1000.0)  # 2000 FLOPs in 2 ns
    assert mul["measured_memory_bw_gbps"] == pytest.approx(500.0)
    assert mul["operational_intensity"] == 2.0 and mul["bound_by"] == "HBM"
    assert rows.loc[("Device", "IDLE"), "total_self_time_us"] == 1500 / 1e6
    matmul = rows.loc[("Host", "model/dense/MatMul")]
    assert matmul["occurrences"] == 2
    assert matmul["total_time_us"] == 1400 / 1e6 and matmul["total_self_time_us"] == 1100 / 1e6
    # host time: the python line spans 2400 ps, the tf_data line 600 ps; ops own 1900 ps
    assert rows.loc[("Host", "IDLE"), "total_self_time_us"] == 1100 / 1e6
    assert matmul["host_total_self_time_pct"] == pytest.approx(1100 / 3000 * 100)
    assert rows.loc[("Host", "model/dense/BiasAdd"), "execution_mode"] == "Eager"
    assert rows.loc[("Host", "model/dense/MatMul"), "execution_mode"] == "Function"
    assert table.loc[table["host_or_device"] == "Host", "host_cumulative_total_self_time_pct"
                     ].iloc[-1] == pytest.approx(100.0)
    assert (table.loc[table["host_or_device"] == "Host", "device_total_self_time_pct"] == 0).all()


def test_excluding_idle_makes_shares_of_busy_time(small):
    table = small.table(include_idle=False)
    assert "IDLE" not in set(table["type"])
    rows = table.set_index(["host_or_device", "operation"])
    assert rows.loc[("Device", "jit(f)/mul"), "device_total_self_time_pct"] == pytest.approx(80.0)
    assert rows.loc[("Host", "model/dense/MatMul"), "host_total_self_time_pct"] == \
        pytest.approx(1100 / 1900 * 100)
    assert table["rank"].tolist() == list(range(1, 8))


def test_self_time_by_op_and_by_type(small):
    by_type = small.self_time_by("Host", "type", include_idle=False)
    assert by_type.index.tolist() == ["MatMul", "Dataset", "BiasAdd", ""]
    assert by_type["Dataset"] == pytest.approx(500 / 1e6)
    assert small.self_time_by("Device", "operation").index[0] == "jit(f)/mul"


def test_cpu_runs_list_their_xla_ops_as_device_rows_unless_asked_not_to():
    profile = xw.open_profile(DATA / "jax_cpu_demo.xplane.pb")
    ours = analyze_framework_op_stats(profile).table()
    device = ours[ours["host_or_device"] == "Device"]
    assert len(device) > 1 and "IDLE" in set(device["type"])
    assert device["operation"].str.startswith("jit(").any()
    assert np.isclose(device["device_total_self_time_pct"].sum(), 100.0)
    plain = analyze_framework_op_stats(profile, xla_cpu_ops=False).table()
    assert plain["host_or_device"].tolist() == ["Host"] and plain["type"].tolist() == ["IDLE"]


def test_availability_follows_the_data(tmp_path):
    assert framework_op_stats_available(xw.open_profile(DATA / "tf_keras_cpu_fast.xplane.pb"))
    host = {"name": "/host:CPU", "lines": [{"name": "python", "events": [
        ("step", 0, 1000, {})]}]}
    path = tmp_path / "plain.xplane.pb"
    path.write_bytes(build_xspace([host]))
    profile = xw.open_profile(path)
    assert not framework_op_stats_available(profile)
    table = analyze_framework_op_stats(profile).table()
    assert table["operation"].tolist() == ["IDLE"] and table["total_time_us"].tolist() == [0.0]
