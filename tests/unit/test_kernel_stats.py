"""Kernel stats: GPU kernels by launch parameters and op, TPU custom-call kernels, and the op
profile's "no cost model" for custom calls."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from xspace_builder import open_planes

import xprof_widgets as xw
from xprof_widgets.analysis.kernel_stats import (
    COLUMNS,
    custom_call_kernels,
    kernel_stats,
    kernel_stats_available,
    parse_launch,
    uses_tensor_core,
)
from xprof_widgets.analysis.op_profile import analyze_op_profile

DATA = Path(__file__).parents[1] / "data"
GEMM = "volta_h884gemm_64x64_nn"
DETAILS = "regs:32 static_shared:1024 dynamic_shared:2048 block:128,1,1 grid:10,2,1 occ_pct:50.0"
US = 1_000_000  # ps


def test_launch_parameters_are_read_from_either_separator():
    assert parse_launch(DETAILS) == {
        "registers_per_thread": 32, "static_shmem_bytes": 1024, "dynamic_shmem_bytes": 2048,
        "block": (128, 1, 1), "grid": (10, 2, 1), "occupancy_pct": 50.0}
    partial = parse_launch("regs:16\nblock:256,1,1\ngrid:4,x,1 occ_pct:nope junk")
    assert partial["registers_per_thread"] == 16 and partial["block"] == (256, 1, 1)
    assert partial["grid"] == (1, 1, 1) and partial["occupancy_pct"] == 0.0
    assert partial["static_shmem_bytes"] == partial["dynamic_shmem_bytes"] == 0


def test_tensor_core_kernels_by_name():
    assert uses_tensor_core(GEMM) and uses_tensor_core("sm90_xmma_gemm_bf16")
    assert not uses_tensor_core("elementwise_kernel") and not uses_tensor_core("cutlass_80_gemm")


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    def kernel(name, start, dur, details, **stats):
        return (name, start, dur, {"kernel_details": details, **stats})

    relu = "regs:16\nblock:256,1,1\ngrid:4,1,1"
    events = [
        kernel(GEMM, 0, 2 * US, DETAILS, tf_op="model/dense/MatMul:MatMul"),
        kernel(GEMM, 3 * US, 4 * US, DETAILS, tf_op="model/dense/MatMul:MatMul"),
        kernel(GEMM, 8 * US, 3 * US, DETAILS.replace("occ_pct:50.0", "occ_pct:75.0"),
               tf_op="model/dense/MatMul:MatMul"),
        kernel("elementwise_kernel", 12 * US, 1 * US, relu, tf_op="model/Relu:Relu"),
        kernel("einsum_kernel", 14 * US, 5 * US, relu, tf_op="model/e/Einsum:Einsum",
               equation="ab,bc->ac"),
        kernel("tiny_kernel", 20 * US, 500, relu, tf_op="model/t:T"),  # under a nanosecond
        kernel("fusion_kernel", 21 * US, 1 * US, relu, hlo_op="fusion.1", hlo_module="jit_f"),
        ("MemcpyHtoD", 23 * US, 2 * US, {"memcpy_details": "kind:HtoD size:64"}),
    ]
    plane = {"name": "/device:GPU:0", "stats": {"clock_rate": 1_000_000, "core_count": 10},
             "lines": [{"name": "Stream #1(Compute)", "events": events}]}
    return open_planes([plane], tmp_path_factory.mktemp("gpu"), "gpu.xplane.pb")


def test_gpu_kernels_one_row_per_kernel_launch_and_op(gpu):
    table = kernel_stats(gpu)
    assert list(table.columns) == COLUMNS
    assert table["kernel_name"].tolist() == [GEMM, "einsum_kernel", "elementwise_kernel",
                                             "fusion_kernel"]
    assert table["rank"].tolist() == [1, 2, 3, 4]
    gemm = table.iloc[0]
    assert gemm["occurrences"] == 3  # occupancy is not part of a kernel's identity
    assert gemm["occupancy_pct"] == 50.0  # the first one's, as XProf keeps it
    assert (gemm["total_duration_us"], gemm["min_duration_us"], gemm["max_duration_us"]) == \
        (9.0, 2.0, 4.0)
    assert gemm["avg_duration_us"] == 3.0
    assert gemm["shmem_bytes"] == 3072 and gemm["registers_per_thread"] == 32
    assert (gemm["block_dim"], gemm["grid_dim"]) == ("128,1,1", "10,2,1")
    assert gemm["is_kernel_using_tensor_core"] and gemm["is_op_tensor_core_eligible"]
    assert gemm["op_name"] == "model/dense/MatMul"
    rows = table.set_index("kernel_name")
    assert rows.loc["einsum_kernel", "is_op_tensor_core_eligible"]  # a two-operand einsum
    assert not rows.loc["einsum_kernel", "is_kernel_using_tensor_core"]
    assert not rows.loc["elementwise_kernel", "is_op_tensor_core_eligible"]
    assert rows.loc["elementwise_kernel", "shmem_bytes"] == 0
    assert rows.loc["fusion_kernel", "op_name"] == ""  # no HLO proto for jit_f
    assert kernel_stats_available(gpu)


def test_xla_kernels_take_their_op_from_the_hlo_module():
    profile = xw.open_profile(DATA / "synthetic_gpu.xplane.pb")
    by_name = kernel_stats(profile)
    # XProf's form for an HLO instruction's framework op: `op_name:op_type` of its metadata
    assert by_name["op_name"].str.match(r"^jit\(.*:").all()
    by_id = kernel_stats(profile, by_module_name=False)  # the kernels carry no program_id
    assert (by_id["op_name"] == "").all()
    assert by_id["total_duration_us"].sum() == pytest.approx(by_name["total_duration_us"].sum())


# ---- TPU custom calls -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pallas(tmp_path_factory):
    kernel = ('%my_kernel = f32[8]{0} custom-call(f32[8]{0} %p), '
              'custom_call_target="tpu_custom_call"')
    metadata = {
        "fusion.1": {"display_name": "fusion.1", "stats": {
            "program_id": 7, "symbol_id": 1, "hlo_category": "loop fusion", "flops": 10_000,
            "bytes_accessed": 1000, "tf_op": "jit(f)/add:"}},
        kernel: {"display_name": "my_kernel", "stats": {
            "program_id": 7, "symbol_id": 2, "hlo_category": "custom-call",
            "tf_op": "jit(f)/pallas_call:"}},
    }
    plane = {"name": "/device:TPU:0",
             "stats": {"peak_teraflops_per_second": 100.0,
                       "peak_hbm_bw_gigabytes_per_second": 1000.0},
             "metadata": metadata,
             "lines": [{"name": "XLA Ops", "events": [
                 ("fusion.1", 0, 2000, {}), (kernel, 2000, 3000, {}),
                 ("fusion.1", 6000, 2000, {}), (kernel, 8000, 5000, {})]}]}
    return open_planes([plane], tmp_path_factory.mktemp("pallas"), "pallas.xplane.pb")


def test_custom_call_kernels_are_listed_with_time_and_occurrences(pallas):
    table = custom_call_kernels(pallas)
    assert table["kernel_name"].tolist() == ["my_kernel"]
    row = table.iloc[0]
    assert row["occurrences"] == 2 and row["op_name"] == "jit(f)/pallas_call:"
    assert row["program_id"] == "7"
    assert (row["total_duration_us"], row["min_duration_us"], row["max_duration_us"]) == \
        (0.008, 0.003, 0.005)
    assert kernel_stats(pallas).empty and kernel_stats_available(pallas)


def test_the_op_profile_says_no_cost_model_instead_of_zero_utilization(pallas):
    analysis = analyze_op_profile(pallas)
    ops = analysis.to_dataframe().set_index("name")
    assert math.isnan(ops.loc["my_kernel", "flops_utilization"])
    assert math.isnan(ops.loc["my_kernel", "bandwidth_utilization"])
    assert ops.loc["my_kernel", "bound_by"] == ""
    assert ops.loc["fusion.1", "flops_utilization"] == pytest.approx(2e4 / 4e-9 / 1e14)
    assert any("no cost model" in note for note in analysis.notes)
    table = analysis.table(group_by="category")
    custom = table[table["label"] == "custom-call"].iloc[0]
    assert np.isnan(custom["flops_utilization"]) and custom["bound_by"] == ""


def test_profiles_without_kernels():
    tpu = xw.open_profile(DATA / "tpu_v6e_inference.xplane.pb")
    assert kernel_stats(tpu).empty and custom_call_kernels(tpu).empty
    assert not kernel_stats_available(tpu)
