"""Roofline Model's Kineto part (analysis/parts.py): the op rows are the outermost op calls with
FLOPs from shapes (flops.py) that ran GPU work, one row per op and tensor inputs (the
`operation` is the call's signature, the `category` its family), their time the GPU work they
and the calls nested in them launched; the program is the sum of those over the GPUs' time
(Framework Op Stats' device time). Peaks come from the GPU's name (gpu_peaks.py): each op is
held to the peak of its dtype, the program and the chart's compute roof to the dtype most FLOPs
ran in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...profile.model import Profile
from ..framework_op_stats import analyze_framework_op_stats
from ..gpu_peaks import gpu_peaks, profile_gpu_peaks
from ..hlo_stats import MEMORIES, DevicePeaks
from ..parts import FormatPart
from ..roofline_rows import (
    COLUMNS,
    MAX_OPS,
    PS_PER_US,
    TOTAL,
    RooflineModelAnalysis,
    program_row,
    records,
)
from . import any_rank_has
from .flops import op_flops
from .ops import DEVICE_WORK


def roofline_calls(profile: Profile) -> pd.DataFrame:
    """The PyTorch op calls the roofline draws: outermost, with FLOPs, that ran GPU work
    (copies and fills are left out: their time is often a transfer from or to the host)."""
    if not any_rank_has(profile, DEVICE_WORK):
        return pd.DataFrame()  # cheap (reads no events): a trace without GPU work has none
    calls = op_flops(profile)
    computes = np.nan_to_num(calls["flops"].to_numpy(np.float64)) > 0
    return calls[computes & calls["outermost"].to_numpy(bool)
                 & (calls["device_total_ps"].to_numpy(np.float64) > 0)]


def kineto_roofline(profile: Profile) -> RooflineModelAnalysis:
    """One program row (Total) and the op rows (see the module doc)."""
    calls = roofline_calls(profile)
    gpu = profile_gpu_peaks(profile) or gpu_peaks(None)  # no deviceProperties: no roofs
    gpus = int((profile.built_tracks["section_kind"] == "device").groupby(
        profile.built_tracks["section_id"]).any().sum())
    flops = np.nan_to_num(calls["flops"].to_numpy(np.float64))
    frame = pd.DataFrame({
        "name": calls["signature"].to_numpy(), "category": calls["family"].to_numpy(),
        "peak_dtype": calls["peak_dtype"].to_numpy(), "flops": flops,
        "bytes_accessed": np.nan_to_num(calls["bytes"].to_numpy(np.float64)),
        "time_ps": calls["device_total_ps"].to_numpy(np.float64)})
    ops = frame.groupby(["name", "category", "peak_dtype"], sort=False).agg(
        occurrences=("time_ps", "size"), time_ps=("time_ps", "sum"), flops=("flops", "sum"),
        bytes_accessed=("bytes_accessed", "sum")).reset_index()
    ops = ops.assign(self_time_ps=ops["time_ps"], model_flops=ops["flops"],
                     hbm_bytes=ops["bytes_accessed"], program_id="", source="",
                     has_breakdown=False, known_cost=True,
                     **{f"{r}_bytes": 0.0 for r in MEMORIES if r != "hbm"})
    by_dtype = ops.groupby("peak_dtype")["flops"].sum().sort_values(ascending=False)
    dominant = str(by_dtype.index[0]) if len(by_dtype) else ""

    def held_to(dtype: str) -> DevicePeaks:
        peak = gpu.flops_for(dtype)
        label = f"{gpu.name}, {dtype} peak" if np.isfinite(peak) else gpu.name
        return DevicePeaks("GPU", label, max(gpus, 1), peak if np.isfinite(peak) else 0.0,
                           gpu.bandwidth if np.isfinite(gpu.bandwidth) else 0.0)

    peaks = held_to(dominant)
    total_ps = float(analyze_framework_op_stats(profile).device_total_ps)
    parts = []
    for with_feeds in (True, False):  # PyTorch has no infeed or outfeed: the same rows twice
        parts.append(program_row(ops, total_ps, TOTAL, with_feeds, peaks))
        rows = pd.concat([records(group, held_to(str(dtype)), TOTAL, with_feeds, total_ps, 1)
                          for dtype, group in ops.groupby("peak_dtype", sort=False)],
                         ignore_index=True)
        rows = rows.sort_values(["total_self_time_us", "operation"], ascending=[False, True],
                                kind="stable").head(MAX_OPS).reset_index(drop=True)
        share = rows["total_self_time_us"].to_numpy(np.float64) * PS_PER_US / total_ps * 100 \
            if total_ps else np.zeros(len(rows))
        rows["rank"] = np.arange(1, len(rows) + 1)
        rows["total_self_time_pct"] = share
        rows["cumulative_total_self_time_pct"] = np.cumsum(share)
        parts.append(rows)
    return RooflineModelAnalysis(pd.concat(parts, ignore_index=True)[COLUMNS], peaks, 0,
                                 has_feeds=False)


def has_roofline_calls(profile: Profile) -> bool:
    """Whether the trace's GPU ran op calls with FLOPs or bytes from shapes."""
    return bool(len(roofline_calls(profile)))


ROOFLINE_MODEL = FormatPart("kineto", has_roofline_calls, kineto_roofline)
"""Roofline Model's Kineto part (analysis/parts.py)."""
