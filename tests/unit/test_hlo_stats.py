"""HLO stats and the roofline model on a small TPU profile whose every number is known."""

from __future__ import annotations

import pytest
from xspace_builder import open_planes

from xprof_widgets.analysis.hlo_stats import COLUMNS, hlo_stats
from xprof_widgets.analysis.roofline_model import analyze_roofline_model
from xprof_widgets.profile.schema import MemoryAccessBreakdown

HBM, VMEM, READ = 1, 3, 1


def _breakdown(*entries: tuple[int, int, int]) -> bytes:
    message = MemoryAccessBreakdown()
    for op, space, moved in entries:
        message.memory_accessed.add(operation_type=op, memory_space=space, bytes_accessed=moved)
    return message.SerializeToString()


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    def op(symbol, category, **stats):
        return {"display_name": None, "stats": {"program_id": 1, "symbol_id": symbol,
                                                "hlo_category": category, **stats}}

    metadata = {
        "fusion.1": op(1, "loop fusion", flops=10_000, bytes_accessed=2_000,
                       memory_access_breakdown=_breakdown((READ, HBM, 1_000),
                                                          (READ, VMEM, 100_000)),
                       tf_op="jit(f)/add:", source="model.py:12"),
        "while.2": op(2, "while", flops=5_000, bytes_accessed=0),
        "infeed.3": op(3, "infeed", bytes_accessed=1_000),
    }
    for name, meta in metadata.items():
        meta["display_name"] = name
    plane = {"name": "/device:TPU:0",
             "stats": {"peak_teraflops_per_second": 100.0,
                       "peak_hbm_bw_gigabytes_per_second": 1000.0,
                       "peak_vmem_rd_bw_gigabytes_per_second": 10000.0,
                       "peak_vmem_wr_bw_gigabytes_per_second": 10000.0,
                       "has_merged_vmem": 1, "device_type_string": "TPU test"},
             "metadata": metadata,
             "lines": [{"name": "Steps", "events": [("0", 0, 4000, {"group_id": 0}),
                                                    ("1", 4000, 3000, {"group_id": 1})]},
                       {"name": "XLA Ops", "events": [
                           ("fusion.1", 0, 1000, {}), ("while.2", 1000, 3000, {}),
                           ("infeed.3", 4000, 2000, {}), ("fusion.1", 6000, 1000, {})]}]}
    return open_planes([plane], tmp_path_factory.mktemp("hlo"), "tpu.xplane.pb")


def test_hlo_rows_rates_and_bottlenecks(profile):
    table = hlo_stats(profile)
    assert list(table.columns) == COLUMNS
    assert table["hlo_op_name"].tolist() == ["while.2", "fusion.1", "infeed.3"]  # ties by name
    rows = table.set_index("hlo_op_name")
    fusion = rows.loc["fusion.1"]
    assert fusion["occurrences"] == 2 and fusion["total_time_us"] == 2000 / 1e6
    assert fusion["total_self_time_pct"] == pytest.approx(2000 / 7000 * 100)
    assert fusion["normalized_flop_rate_gflops"] == pytest.approx(20_000 / 2e-9 / 1e9)
    assert fusion["hbm_bw_gbps"] == pytest.approx(1000.0)  # 2 x 1000 B in 2 ns
    assert fusion["vmem_read_bw_gbps"] == pytest.approx(100_000.0)
    assert fusion["bound_by"] == "VMEM Read"  # 10x its peak beats HBM's 1x
    assert fusion["operational_intensity"] == pytest.approx(5.0)
    assert fusion["tf_op_name"] == "jit(f)/add:" and fusion["source_info"] == "model.py:12"
    # no breakdown: every byte accessed counts as HBM traffic
    assert rows.loc["infeed.3", "hbm_bw_gbps"] == pytest.approx(500.0)
    assert rows.loc["infeed.3", "bound_by"] == "HBM"
    assert rows.loc["while.2", "bound_by"] == "Compute"
    assert table["cumulative_total_self_time_pct"].iloc[-1] == pytest.approx(100.0)


def test_roofline_programs_steps_and_ops(profile):
    analysis = analyze_roofline_model(profile)
    table = analysis.table
    program = table[(table["step"] == "Total") & (table["category"] == "Program")]
    both = program.set_index("include_infeed_outfeed")
    # the while op holds others: left out of the sums; infeed's time leaves with it
    assert both.loc[True, "total_time_us"] == 7000 / 1e6
    assert both.loc[True, "measured_flop_rate_gflops"] == pytest.approx(20_000 / 7e-9 / 1e9)
    assert both.loc[True, "hbm_bw_gbps"] == pytest.approx(2_000 / 7e-9 / 1e9)
    assert both.loc[False, "total_time_us"] == 5000 / 1e6
    assert both.loc[False, "measured_memory_bw_gbps"] == pytest.approx(4_000 / 5e-9 / 1e9)
    ops = table[(table["step"] == "Total") & (table["category"] != "Program")]
    assert ops[ops["include_infeed_outfeed"]]["operation"].tolist() == [
        "while.2", "fusion.1", "infeed.3"]
    assert "infeed.3" not in set(ops[~ops["include_infeed_outfeed"]]["operation"])
    fusion = ops[ops["include_infeed_outfeed"] & (ops["operation"] == "fusion.1")].iloc[0]
    assert fusion["roofline_efficiency"] == pytest.approx(10.0)  # VMEM read at 10x its peak
    assert fusion["compute_efficiency"] == pytest.approx(0.1)
    assert fusion["optimal_flop_rate_gflops"] == pytest.approx(1e13 / 10 / 1e9)
    steps = table[(table["category"] == "Program") & table["include_infeed_outfeed"]]
    by_step = steps.set_index("step")
    assert by_step.loc["0", "total_time_us"] == 4000 / 1e6
    assert by_step.loc["0", "measured_flop_rate_gflops"] == pytest.approx(10_000 / 4e-9 / 1e9)
    assert by_step.loc["1", "total_time_us"] == 3000 / 1e6
    assert by_step.loc["Average", "total_time_us"] == pytest.approx(3500 / 1e6)
    assert by_step.loc["Average", "measured_flop_rate_gflops"] == pytest.approx(
        20_000 / 7e-9 / 1e9)
    assert analysis.steps == 2


def test_ceilings_are_the_memories_with_peaks(profile):
    ceilings = analyze_roofline_model(profile).ceilings()
    assert ceilings["memory"].tolist() == ["HBM", "VMEM Read", "VMEM Write"]
    assert ceilings["peak_flop_rate_gflops"].iloc[0] == 100_000.0
    assert ceilings.set_index("memory").loc["HBM", "ridge_point"] == pytest.approx(100.0)
