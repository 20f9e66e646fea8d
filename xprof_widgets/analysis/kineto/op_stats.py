"""Framework Op Stats' Kineto part (analysis/parts.py): a PyTorch trace's `cpu_op`s are the host
rows, the GPU work those ops launched the device rows (ops.py sums them per rank), and op FLOPs
and bytes from shapes (flops.py) fill the cost columns where the trace records shapes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...profile.model import Profile
from ..gpu_peaks import GpuPeaks, profile_gpu_peaks
from ..hosts import host_parts
from ..op_sums import OpSides, Peaks, combine_ops, with_idle
from ..parts import FormatPart
from . import CPU_OPS, any_rank_has
from .flops import op_flops
from .ops import DEVICE_WORK, kineto_op_part


def has_ops(profile: Profile) -> bool:
    """Whether any rank's trace has PyTorch ops or GPU work (cheap: reads no events)."""
    return any_rank_has(profile, (*CPU_OPS, *DEVICE_WORK))


def kineto_op_sides(profile: Profile, xla_cpu_ops: bool = True) -> OpSides:
    """PyTorch (Kineto) traces: every rank's cpu_ops and the GPU work they launched (ops.py),
    with FLOPs and bytes from shapes (flops.py) where the trace has them. `xla_cpu_ops` is the
    tool's XSpace argument: a Kineto trace has no XLA ops."""
    parts = [p.part for p in host_parts(profile, kineto_op_part) if p.part is not None]
    device_total = sum(p.device_total_ps for p in parts)
    host_total = sum(p.host_total_ps for p in parts)
    device = combine_ops([p.device for p in parts])
    host = combine_ops([p.host for p in parts])
    gpu = profile_gpu_peaks(profile)
    peaks = Peaks(math.nan, gpu.bandwidth) if gpu else Peaks()
    try:
        calls = op_flops(profile)
    except Exception as exc:  # noqa: BLE001 - a derived column family: the rows stay
        profile.warnings.append(f"{profile.source}: op FLOPs left out ({type(exc).__name__}: "
                                f"{exc}).")
        calls = None
    if calls is not None and len(device):
        device = _with_costs(device, calls[calls["device_self_ps"] > 0], gpu)
    elif calls is not None and not (profile.built_tracks["section_kind"] == "device").any():
        host = _with_costs(host, calls, None)  # a CPU-only run: the ops computed on the host
    return OpSides(
        with_idle(device, device_total) if len(device) else device,
        with_idle(host, host_total) if len(host) else host, device_total, host_total, peaks,
        "GPU" if len(device) else "")


def _with_costs(ops: pd.DataFrame, calls: pd.DataFrame, gpu: GpuPeaks | None) -> pd.DataFrame:
    """Op rows with the summed FLOPs and bytes of their calls (PyTorch's ops count as their
    own model: model FLOPs = FLOPs), and each row's peak FLOP rate for the dtype most of its
    FLOPs ran in."""
    if not len(calls):
        return ops
    flops = np.nan_to_num(calls["flops"].to_numpy(np.float64))
    frame = pd.DataFrame({"operation": calls["operation"].to_numpy(), "flops": flops,
                          "bytes": np.nan_to_num(calls["bytes"].to_numpy(np.float64)),
                          "dtype": calls["peak_dtype"].to_numpy()})
    sums = frame.groupby("operation", sort=False)[["flops", "bytes"]].sum()
    dominant = frame.groupby(["operation", "dtype"], sort=False)["flops"].sum().reset_index() \
        .sort_values("flops", ascending=False, kind="stable").drop_duplicates("operation") \
        .set_index("operation")["dtype"]
    ops = ops.copy()
    name = ops["operation"]
    ops["flops"] = name.map(sums["flops"]).fillna(0.0).to_numpy(np.float64)
    ops["model_flops"] = ops["flops"]
    ops["bytes_accessed"] = name.map(sums["bytes"]).fillna(0.0).to_numpy(np.float64)
    if gpu is not None:
        ops["peak_flops"] = [gpu.flops_for(str(d)) for d in name.map(dominant).tolist()]
    return ops


FRAMEWORK_OP_STATS = FormatPart("kineto", has_ops, kineto_op_sides)
"""Framework Op Stats' Kineto part (analysis/parts.py)."""
