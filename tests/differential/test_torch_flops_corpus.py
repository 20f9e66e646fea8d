"""Op FLOPs, Framework Op Stats' FLOP columns and the Kineto roofline on every public Kineto
trace with GPU work (fixture_files.KINETO_PUBLIC_GPU: HTA's test traces, PARAM's 8-rank DLRM
run): nothing fails, and what is filled reads sensibly (finite, non-negative rates; no op faster
than its GPU's peak for its dtype; GEMMs compute-heavier than elementwise ops)."""

from __future__ import annotations

import fixture_files
import numpy as np
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.framework_op_stats import analyze_framework_op_stats
from xprof_widgets.analysis.gpu_peaks import profile_gpu_peaks
from xprof_widgets.analysis.kineto.flops import op_flops
from xprof_widgets.analysis.roofline_model import analyze_roofline_model, roofline_model_available

TRACES = fixture_files.KINETO_PUBLIC_GPU


@pytest.mark.parametrize("path", TRACES, ids=fixture_files.ids(TRACES))
def test_sensible_rows(path):
    profile = xw.open_profile(path)
    calls = op_flops(profile)
    flops = calls["flops"].to_numpy(np.float64)
    assert (np.nan_to_num(flops) >= 0).all() and (np.nan_to_num(calls["bytes"]) >= 0).all()
    ran = calls[calls["device_total_ps"] > 0]
    assert np.isfinite(ran["achieved_gbps"].dropna().to_numpy(np.float64)).all() and \
        calls.loc[calls["device_total_ps"] == 0, "achieved_tflops"].isna().all()
    table = analyze_framework_op_stats(profile).table()
    rates = table[["measured_flop_rate_gflops", "measured_memory_bw_gbps"]].to_numpy(np.float64)
    assert np.isfinite(rates).all() and (rates >= 0).all()
    host = table[table["host_or_device"] == "Host"]
    if (table["host_or_device"] == "Device").any():  # the GPU computed: host rows hold none
        assert (host["measured_flop_rate_gflops"] == 0).all()
    gemm = calls[(calls["family"] == "GEMM") & (calls["bytes"] > 0)]
    rest = calls[calls["family"] == "elementwise"]
    if len(gemm) and len(rest):
        assert (gemm["flops"] / gemm["bytes"]).median() > (rest["flops"] / rest["bytes"]).max()
    if not roofline_model_available(profile):
        assert not len(calls) or not (calls["device_total_ps"] > 0).any() or \
            not (calls["flops"] > 0).any()
        return
    roof = analyze_roofline_model(profile).table
    ops = roof[roof["category"] != "Program"]
    assert len(ops) and set(ops["bound_by"]) <= {"Compute", "HBM", "Unknown"}
    gpu = profile_gpu_peaks(profile)
    if gpu is not None and gpu.flops:  # no op outruns its peak (fp32 matrix ops: TF32's)
        assert (ops["compute_efficiency"] <= 1.0).all(), ops.sort_values(
            "compute_efficiency").tail(3)[["operation", "measured_flop_rate_gflops"]]


def test_public_gpu_traces_offer_the_roofline():
    """The traces recorded with shapes whose GPU ran GEMMs get a roofline (PARAM's DLRM ranks,
    HTA's trace_diff, sampled and AMD runs)."""
    offered = [p for p in TRACES if roofline_model_available(xw.open_profile(p))]
    names = " ".join(str(p) for p in offered)
    assert "dlrm_v100_8rank" in names and "trace_diff" in names and "amd_trace" in names
