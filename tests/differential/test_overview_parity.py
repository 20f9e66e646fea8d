"""The Overview against XProf's `overview_page` on every XSpace fixture with device ops: the same
device idle time (XProf prints it to 0.1%), and utilization taken over the time the device was
busy, as XProf does. Rule: XProf rates FLOPs against the roofline at the program's arithmetic
intensity over complete steps only, and prints 0.0% on both TPU fixtures (nothing on GPUs); we
rate the Op Profile's FLOPs against the device's peak (docs/from_xprof.md, "Overview"). Both are
asserted: XProf's printed value, and ours as that ratio.

On every XSpace fixture: the run environment (hosts, device type, device cores) and the top ten
device framework ops (name, type, self-time share and running share, FLOP rate) equal XProf's.
Rules: a GPU's type names its compute capability where XProf names the architecture; on a CPU
run our framework ops include the XLA ops (without them, XProf's empty table); XProf lists no
GPU kernel not grouped into a step; XProf measures no device compute precision on any fixture
with XLA ops. GPUs without XLA ops (XProf's 2020 TensorFlow demo) get no device analysis here:
no op profile, idle time or precision (XProf reads the kernels' shapes), and the device is
named by its first plane.
"""

from __future__ import annotations

import fixture_files
import numpy as np
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import analyze_input_pipeline
from xprof_widgets.analysis.op_profile import analyze_op_profile
from xprof_widgets.analysis.overview import overview
from xprof_widgets.errors import ProfileError

pytest.importorskip("xprof.convert.raw_to_tool_data")

DEVICE = [p for p in fixture_files.XSPACE
          if (xw.open_profile(p).sections["kind"] == "device").any()]


def percent(text: str) -> float:
    return float(text.rstrip("%"))


@pytest.mark.parametrize("path", DEVICE, ids=fixture_files.ids(DEVICE))
def test_idle_time_and_busy_time_utilization(path):
    analysis = xprof_oracle.run(path, "overview_page")[0]["p"]
    profile = xw.open_profile(path)
    try:
        ops = analyze_op_profile(profile)
    except ProfileError as error:  # Rule: GPUs without XLA ops (TensorFlow's own kernels) have
        # no op profile here; XProf's GPU overview prints no idle time either.
        assert "no XLA ops" in str(error) and "device_idle_time_percent" not in analysis
        return
    run = overview(profile, op_analysis=ops).run
    if "device_idle_time_percent" in analysis:  # XProf's TPU analysis
        assert round(100 * run["idle_share"], 1) == percent(analysis["device_idle_time_percent"])
    # Rule: XProf's FLOP rate is relative to the roofline over complete steps: 0.0% on the TPU
    # fixtures, not printed for GPUs. Ours is the Op Profile's FLOPs over the busy time against
    # the device's peak, capped at 100% (the expression of analysis.op_profile, so equal).
    theirs = analysis.get("flop_rate_utilization_relative_to_roofline")
    assert theirs == ("0.0%" if ops.device.kind == "TPU" else None)
    busy_s = (ops.total_time_ps - ops.idle_time_ps) / 1e12
    flops = float(np.nansum(ops.ops["flops"]))
    assert run["flops_utilization"] == min(1.0, flops / busy_s / ops.device.peak_flops)


# ---- run environment, top framework ops, device compute precision -----------------------------
GPU_FAMILIES = {2: "Fermi", 3: "Kepler", 5: "Maxwell", 6: "Pascal", 7: "Volta", 8: "Ampere",
                9: "Hopper", 10: "Blackwell"}
"""XProf's names of the GPU architecture by compute capability (7.5 Turing, 8.9 Ada Lovelace)."""


def gpu_family(device_type: str) -> str:
    """XProf's device type for our "Nvidia GPU (compute capability M.m)"."""
    major, minor = (int(v) for v in device_type.rsplit(" ", 1)[1].rstrip(")").split("."))
    name = {(7, True): "Turing", (8, True): "Ada Lovelace"}.get(
        (major, minor >= (5 if major == 7 else 9)), GPU_FAMILIES.get(major))
    return f"Nvidia GPU ({name})" if name else "Nvidia GPU"


def rows(table: dict) -> list[list]:
    return [[c.get("v") for c in r["c"]] for r in table.get("rows", [])]


@pytest.mark.parametrize("path", fixture_files.XSPACE, ids=fixture_files.ids(fixture_files.XSPACE))
def test_run_environment(path):
    theirs = xprof_oracle.run(path, "overview_page")[2]["p"]
    run = overview(xw.open_profile(path)).run
    assert run["host_count"] == int(theirs["host_count"])
    assert run["device_core_count"] == int(theirs["device_core_count"])
    if run["device_kind"] == "GPU":  # Rule: we name the compute capability, XProf its family
        assert gpu_family(run["device_type"]) == theirs["device_type"]
    elif run["device_kind"] == "CPU":
        assert theirs["device_type"] == "CPU"
    elif run["device_kind"] == "device":  # Rule: no XLA op tells the device's kind here; we
        # name its first plane (`/device:GPU:0`), XProf the kind (`GPU`)
        assert run["device_type"].split(":")[1] == theirs["device_type"]
    else:
        assert run["device_type"] == theirs["device_type"]


@pytest.mark.parametrize("path", fixture_files.XSPACE, ids=fixture_files.ids(fixture_files.XSPACE))
def test_top_framework_ops(path):
    from xprof_widgets.analysis.framework_op_stats import analyze_framework_op_stats
    from xprof_widgets.analysis.overview import top_framework_ops

    theirs = rows(xprof_oracle.run(path, "overview_page")[0])
    profile = xw.open_profile(path)
    ours = overview(profile).top_framework_ops
    kind = overview(profile).run["device_kind"]
    if kind == "CPU":  # Rule: a CPU run's XLA ops are our device rows; without them, XProf's
        ours = top_framework_ops(analyze_framework_op_stats(profile, xla_cpu_ops=False))
    if kind == "GPU" and not theirs:  # Rule: XProf lists no kernel not grouped into a step
        assert len(ours) > 0
        return
    assert len(ours) == len(theirs)
    # XProf's doubles against ours: the same inputs in another order, within 1e-15 relative
    # (4.5 ulps at least; where they differ on these fixtures, by 1 ulp)
    for want, (_, got) in zip(theirs, ours.iterrows(), strict=True):
        share, cumulative, category, operation, flop_rate = want
        assert (got["operation"], got["type"]) == (operation, category)
        assert got["share_of_framework_self_time"] == pytest.approx(share, rel=1e-15, abs=0)
        assert got["cumulative_share_of_framework_self_time"] == pytest.approx(
            cumulative, rel=1e-15, abs=0)
        assert got["flop_rate_gflops"] == pytest.approx(flop_rate, rel=1e-15, abs=0)


@pytest.mark.parametrize("path", fixture_files.XSPACE, ids=fixture_files.ids(fixture_files.XSPACE))
def test_device_compute_precision(path):
    """Rule: XProf counts the precision of GPU kernels grouped into steps only (16-bit when their
    shapes say `half`), none on TPU or CPU; no fixture has one, so XProf prints 0.0% or nothing.
    We count every device compute op by its result type."""
    theirs = xprof_oracle.run(path, "overview_page")[0]["p"]
    ours = overview(xw.open_profile(path))
    if ours.run["device_kind"] == "device":  # Rule: GPUs without XLA ops; XProf reads the
        # kernels' shapes (grouped into steps: the TensorFlow GPU demo's), we measure none
        assert ours.precision is None
        assert percent(theirs["device_compute_16bit_percent"]) + \
            percent(theirs["device_compute_32bit_percent"]) == 100
        return
    for key in ("device_compute_16bit_percent", "device_compute_32bit_percent"):
        assert theirs.get(key, "0.0%") == "0.0%"
    if ours.run["device_kind"] in ("TPU", "GPU"):
        p = ours.precision
        # two fractions of one total, each rounded: their sum is within an ulp of 1
        assert abs(p["compute_16bit_share"] + p["compute_32bit_share"] - 1.0) <= 2.0**-52
        assert p["compute_us"] > 0


@pytest.mark.parametrize("path", fixture_files.XSPACE, ids=fixture_files.ids(fixture_files.XSPACE))
def test_the_steps_xprofs_overview_counts(path):
    """XProf's overview counts the steps its Input Pipeline does (steps.ill_formed and
    edge_steps), and so does ours: the same number of steps and, on each step's marker (our
    host-marked periods also hold the wait before it), the same average to the 0.1 ms XProf
    prints. Rule: on the synthetic GPU runs XProf finds no step; we measure the devices under
    the host's markers."""
    doc = xprof_oracle.run(path, "overview_page")
    data = overview(xw.open_profile(path))
    xprof_steps = len(doc[1]["rows"])
    if not xprof_steps:
        assert data.steps is None or path.name.startswith("synthetic_gpu")
        return
    steps = analyze_input_pipeline(xw.open_profile(path)).steps
    assert data.steps["count"] == len(steps) == xprof_steps
    marker_ms = ((steps["duration_us"] - steps["before_step_us"]) / 1000).mean()
    printed = doc[1]["p"]["steptime_ms_average"]
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    assert abs(marker_ms - float(printed)) <= 0.5 * 10 ** -decimals + 1e-9
