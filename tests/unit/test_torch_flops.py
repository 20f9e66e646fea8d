"""Op FLOPs and bytes from shapes (analysis/kineto/flops.py), GPU peaks (gpu_peaks.py) and the
FLOP columns they fill: Framework Op Stats' Kineto rows and the roofline's bound-by.

tests/data/torch_flops holds a torch 2.13.0 CPU trace recorded with `record_shapes=True,
with_flops=True` (tests/data/make/torch_flops.py) and PyTorch's own FLOP counts of the same run
(`key_averages(group_by_input_shape=True)`: torch 2.13's exporter writes no `flops` arg). The
expected FLOPs below are counted by hand from the shapes the script uses, not read from our code.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.framework_op_stats import Peaks, _roofline, analyze_framework_op_stats
from xprof_widgets.analysis.gpu_peaks import gpu_peaks
from xprof_widgets.analysis.hlo_stats import DevicePeaks, rates
from xprof_widgets.analysis.kineto.flops import Call, op_cost, op_flops

DATA = Path(__file__).resolve().parents[1] / "data" / "torch_flops"

# By hand, from tests/data/make/torch_flops.py's shapes: 2*M*K*N for a GEMM, 2*N*Cout*pixels*
# Cin*kh*kw for the convolution, 2*B*H*Lq*Lk*(D+Dv) for attention, elements for add and mul.
HAND = {
    "aten::mm(float[64, 128], float[128, 32])": 2 * 64 * 128 * 32,
    "aten::addmm(float[32], float[64, 128], float[128, 32])": 2 * 64 * 128 * 32,
    "aten::bmm(float[4, 64, 128], float[4, 128, 32])": 2 * 4 * 64 * 128 * 32,
    "aten::baddbmm(float[4, 64, 32], float[4, 64, 128], float[4, 128, 32])":
        2 * 4 * 64 * 128 * 32,
    "aten::matmul(float[4, 64, 128], float[128, 32])": 2 * 4 * 64 * 128 * 32,
    "aten::linear(float[64, 128], float[32, 128], float[32])": 2 * 64 * 128 * 32,
    "aten::conv2d(float[2, 3, 16, 16], float[8, 3, 3, 3], float[8])": 2 * 2 * 8 * 16 * 16 * 3 * 9,
    "aten::scaled_dot_product_attention(float[2, 4, 16, 8], float[2, 4, 16, 8], "
    "float[2, 4, 16, 8])": 2 * 2 * 4 * 16 * 16 * (8 + 8),
    "aten::add(float[64, 128], float[64, 128])": 64 * 128,
    "aten::mul(float[64, 128], float[64, 128])": 64 * 128,
    "aten::softmax(float[64, 128])": 64 * 128,
}


@pytest.fixture(scope="module")
def calls() -> pd.DataFrame:
    return op_flops(xw.open_profile(DATA / "trace.json.gz"))


def test_flops_equal_a_hand_count_in_both_dtypes(calls):
    for signature, flops in HAND.items():
        for dtype in ("float", "c10::BFloat16"):
            rows = calls[calls["signature"] == signature.replace("float[", f"{dtype}[")]
            assert len(rows) >= 1, signature  # addmm: called directly and by linear
            assert (rows["flops"] == flops).all(), signature


def test_bytes_are_inputs_and_output_at_their_dtype(calls):
    mm = calls[calls["signature"].str.startswith("aten::mm(") & (calls["dtype"] == "fp32")]
    assert mm["bytes"].iat[0] == (64 * 128 + 128 * 32 + 64 * 32) * 4
    bf16 = calls[calls["signature"] == "aten::add(c10::BFloat16[64, 128], c10::BFloat16[64, 128])"]
    assert bf16["bytes"].iat[0] == 3 * 64 * 128 * 2
    assert set(calls["dtype"]) >= {"fp32", "bf16"}


def test_flops_equal_pytorchs_own_count(calls):
    """Per op name, our FLOPs summed over its calls equal PyTorch's (with_flops=True) wherever
    PyTorch counts one: neither counts addmm's or baddbmm's added input."""
    theirs: dict[str, float] = {}
    for row in json.loads((DATA / "key_averages_by_input_shape.json").read_text()):
        theirs[row["key"]] = theirs.get(row["key"], 0) + row["flops"]
    assert {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::conv2d"} <= set(theirs)
    ours = calls.groupby("operation")["flops"].sum()
    for name, flops in theirs.items():
        assert ours[name] == flops, name


def test_nested_calls_count_once(calls):
    """A linear's addmm, a matmul's mm and the convolution layers under conv2d are inside a call
    with FLOPs: only the outer one is `outermost` (the roofline's program sums those)."""
    outer = calls[calls["outermost"]]
    assert not outer["operation"].isin(["aten::convolution", "aten::_convolution",
                                        "aten::mkldnn_convolution", "aten::clamp_min"]).any()
    assert (calls["operation"] == "aten::addmm").sum() == 4
    assert (outer["operation"] == "aten::addmm").sum() == 2  # the two direct calls


@pytest.mark.parametrize("call, flops", [
    # causal attention: half the scores (2*B*H*Lq*Lk*(D+Dv) / 2)
    (Call("aten::_scaled_dot_product_flash_attention", [[1, 2, 8, 4]] * 3, ["c10::Half"] * 3,
          ["", "", "", "0.", "True"]), 2 * 1 * 2 * 8 * 8 * 8 / 2),
    # flash forward's [B, L, H, D] layout, Lk != Lq, Dv != D
    (Call("aten::_flash_attention_forward", [[1, 8, 2, 4], [1, 6, 2, 4], [1, 6, 2, 5]],
          ["c10::BFloat16"] * 3, []), 2 * 1 * 2 * 8 * 6 * (4 + 5)),
    # a strided convolution: out = (9 + 2 - 3) // 2 + 1 = 5 per side
    (Call("aten::convolution", [[1, 4, 9, 9], [6, 4, 3, 3], [6], [], [], [], [], [], []],
          ["float"] * 3 + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
          ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]),
     2 * 1 * 6 * 5 * 5 * 4 * 9),
    # convolution backward, both gradients: twice the forward, output from grad_output
    (Call("aten::convolution_backward", [[1, 6, 5, 5], [1, 4, 9, 9], [6, 4, 3, 3]],
          ["float"] * 3, ["", "", "", "[6]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]",
                          "1", "[True, True, False]"]), 2 * 2 * 1 * 6 * 5 * 5 * 4 * 9),
    # matmul broadcasting a vector: [3, 5, 7] @ [7] = 2 * 3 * 5 * 7
    (Call("aten::matmul", [[3, 5, 7], [7]], ["float", "float"], []), 2 * 3 * 5 * 7),
])
def test_rules_by_hand(call, flops):
    assert op_cost(call).flops == flops


def test_unknown_without_shapes():
    """No rule guesses: a convolution without its stride and padding, an op of no family."""
    assert op_cost(Call("aten::conv2d", [[1, 3, 8, 8], [4, 3, 3, 3]], ["float", "float"],
                        [])) is None
    assert op_cost(Call("aten::lstm", [[1, 3]], ["float"], [])) is None


def test_cpu_run_fills_the_host_rows():
    table = analyze_framework_op_stats(xw.open_profile(DATA / "trace.json.gz")).table()
    mm = table[(table["operation"] == "aten::mm") & (table["host_or_device"] == "Host")].iloc[0]
    total_s = mm["total_time_us"] / 1e6
    flops = 2 * (524288 + 2097152)  # both dtypes: mm [64,128]x[128,32] and matmul's [256,128]
    assert mm["measured_flop_rate_gflops"] == pytest.approx(flops / total_s / 1e9)
    assert mm["model_flop_rate_gflops"] == mm["measured_flop_rate_gflops"]
    assert mm["bound_by"] == "Unknown"  # a CPU run states no peaks


@pytest.mark.parametrize("properties, fp32, bf16, bandwidth", [
    ({"name": "Tesla V100-SXM2-32GB", "numSms": 80}, 15.7e12, math.nan, 900e9),
    ({"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744}, 19.5e12, 312e12, 2039e9),
    ({"name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42505273344}, 19.5e12, 312e12, 1555e9),
    ({"name": "NVIDIA H100 80GB HBM3"}, 67e12, 989.5e12, 3.35e12),
    ({"name": "AMD Radeon Graphics", "numSms": 104, "computeMajor": 9}, 45.3e12, 181e12, 1.6e12),
    ({"name": "NVIDIA L40S"}, 91.6e12, 362e12, 864e9),
])
def test_known_gpus(properties, fp32, bf16, bandwidth):
    peaks = gpu_peaks(properties)
    assert peaks.flops_for("fp32") == pytest.approx(fp32)
    assert peaks.flops_for("bf16") == pytest.approx(bf16, nan_ok=True)
    assert peaks.bandwidth == pytest.approx(bandwidth)


def test_unknown_gpu_from_its_clock():
    """XProf's estimate: SMs x clock x FLOPs per SM per cycle of the compute capability; no
    bandwidth. Without a clock nothing is known."""
    peaks = gpu_peaks({"name": "Some GPU", "numSms": 10, "clockRate": 1_000_000,
                       "computeMajor": 8, "computeMinor": 0})
    assert peaks.flops_for("bf16") == 2048 * 10 * 1e9 and math.isnan(peaks.bandwidth)
    assert gpu_peaks({"name": "Some GPU", "numSms": 10}).flops == {}


def test_bound_by_at_the_ridge_point():
    """At the ridge point (intensity = peak FLOP/s / peak bytes/s) an op is compute-bound, as
    XProf decides ties; just under it, memory-bound. Framework Op Stats and the roofline agree."""
    peak_flops, peak_bw = 100e12, 2e12  # ridge: 50 FLOP/byte
    rows = pd.DataFrame({"time_ps": [1e6] * 3, "flops": [50e3, 49.9e3, 51e3],
                         "model_flops": [0.0] * 3, "bytes_accessed": [1e3] * 3})
    bound = _roofline(rows, Peaks(peak_flops, peak_bw))["bound_by"].tolist()
    assert bound == ["Compute", "HBM", "Compute"]
    frame = rows.assign(hbm_bytes=rows["bytes_accessed"], has_breakdown=False,
                        **{f"{m}_{rw}_bytes": 0.0 for m in ("cmem", "vmem")
                           for rw in ("read", "write")})
    hlo = rates(frame, DevicePeaks("GPU", "test", 1, peak_flops, peak_bw))["bound_by"].tolist()
    assert hlo == bound
    # Kineto rows carry the peak of their dtype: unknown (no compute roof), same, twice as high
    with_row_peak = rows.assign(peak_flops=[np.nan, peak_flops, 200e12])
    assert _roofline(with_row_peak, Peaks(math.nan, peak_bw))["bound_by"].tolist() == \
        ["HBM", "HBM", "HBM"]


def test_the_traces_own_flops_arg(tmp_path):
    """Where the trace writes `flops` (with_flops=True in PyTorch versions whose exporter does),
    it is kept as `trace_flops`; it stands in for an op no rule covers, and ours stay where a
    rule does (here PyTorch's addmm count equals ours)."""
    def op(name, ts, dims, types, flops):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
                "dur": 10, "args": {"Input Dims": dims, "Input type": types, "flops": flops}}
    trace = {"traceEvents": [
        op("aten::addmm", 0, [[32], [64, 128], [128, 32], [], []],
           ["float", "float", "float", "Scalar", "Scalar"], 524288),
        op("aten::lstm", 20, [[4, 8]], ["float"], 1234)]}
    path = tmp_path / "flops.pt.trace.json"
    path.write_text(json.dumps(trace))
    calls = op_flops(xw.open_profile(path)).set_index("operation")
    assert calls.loc["aten::addmm", "flops"] == calls.loc["aten::addmm", "trace_flops"] == 524288
    assert calls.loc["aten::lstm", "flops"] == 1234 and calls.loc["aten::lstm", "family"] == "other"
    assert math.isnan(calls.loc["aten::lstm", "bytes"])


def test_float32_matrix_ops_are_held_to_tf32(calls):
    """A chosen rule: float32 GEMMs, attention and convolutions may run in TF32 (the trace does
    not say), so their peak is TF32's where the GPU has one, the fp32 rate where not (V100)."""
    fp32 = calls[calls["dtype"] == "fp32"]
    matrix = fp32["family"].isin(["GEMM", "attention", "convolution"])
    assert (fp32.loc[matrix, "peak_dtype"] == "tf32").all() and matrix.any()
    assert (fp32.loc[~matrix, "peak_dtype"] == "fp32").all()
    assert gpu_peaks({"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744}
                     ).flops_for("tf32") == pytest.approx(156e12)
    assert gpu_peaks({"name": "Tesla V100-SXM2-32GB"}).flops_for("tf32") == pytest.approx(15.7e12)


def test_kineto_roofline_rows():
    """On PARAM's DLRM rank 0 (a V100): the op rows are outermost calls with FLOPs (copies and
    fills, no FLOPs, are left out), a GEMM's FLOPs over its GPU time; one program row whose
    FLOPs are the op rows' and whose time is the GPU's."""
    from xprof_widgets.analysis.roofline_model import analyze_roofline_model

    path = DATA.parents[0] / "public" / "param" / "dlrm_v100_8rank" / \
        "worker0_step_12.1694128201545.pt.trace.json.gz"
    profile = xw.open_profile(path)
    table = analyze_roofline_model(profile).table
    table = table[table["include_infeed_outfeed"]]
    ops, program = table[table["category"] != "Program"], table[table["category"] == "Program"]
    assert len(program) == 1 and (ops["measured_flop_rate_gflops"] > 0).all()
    assert not ops["operation"].str.startswith(("aten::copy_", "aten::fill_")).any()
    mm = ops[ops["operation"] == "aten::mm(float[16, 512], float[512, 512])"].iloc[0]
    assert mm["measured_flop_rate_gflops"] == pytest.approx(
        2 * 16 * 512 * 512 * mm["occurrences"] / (mm["total_time_us"] / 1e6) / 1e9)
    device_us = analyze_framework_op_stats(profile).device_total_ps / 1e6
    assert program["total_time_us"].iat[0] == pytest.approx(device_us)
    flops = (ops["measured_flop_rate_gflops"] * ops["total_time_us"]).sum()
    assert program["measured_flop_rate_gflops"].iat[0] * device_us == pytest.approx(flops)


def test_malformed_shapes_lose_their_cost_only(tmp_path):
    """Degrade, don't die: a call whose dims are not a shape (a string, a stride of 0, fewer
    types than inputs) has no cost; the other calls keep theirs."""
    def op(name, ts, dims, types, concrete):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
                "dur": 10, "args": {"Input Dims": dims, "Input type": types,
                                    "Concrete Inputs": concrete}}
    trace = {"traceEvents": [
        op("aten::mm", 0, [[2, 3], [3, 4]], ["float"], []),
        op("aten::conv2d", 20, [[1, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []],
           ["float"] * 3 + ["ScalarList"] * 3 + ["Scalar"],
           ["", "", "", "[0, 0]", "[1, 1]", "[1, 1]", "1"]),
        op("aten::add", 40, "oops", ["float"], []),
        op("aten::mul", 60, [[2, 3], [2, 3]], ["float", "float"], [])]}
    path = tmp_path / "bad.pt.trace.json"
    path.write_text(json.dumps(trace))
    calls = op_flops(xw.open_profile(path)).set_index("operation")
    assert list(calls.index) == ["aten::mul"] and calls.loc["aten::mul", "flops"] == 6
