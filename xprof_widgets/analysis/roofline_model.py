"""Roofline model: programs and ops against the device's compute and memory ceilings.

XProf's "roofline_model" (xprof/convert/op_stats_to_roofline_model.cc), from the HLO stats' op
rows (`analysis/hlo_stats.py`):

- program level: one row for the whole profile (step "Total"), one per step and their mean
  ("Average"); a program's FLOPs and bytes are its innermost ops' (ops that hold others, such
  as `while` and `call`, are left out of the sums), its time the device's total time;
- op level: every op of the whole profile (at most 1000, by self time);
- each of those twice, with and without infeed and outfeed ops (`include_infeed_outfeed`);
  without them, their time leaves the program's time too;
- rates and intensities as in the HLO stats; utilization of each ceiling (compute, HBM and, on
  TPU, CMEM or VMEM reads and writes where the device states their peaks); roofline
  efficiency = the highest of them; the optimal FLOP rate = the FLOP rate over that efficiency.

Steps come from the TPU cores' `Steps` lines: a step's ops are the ops that start within its
span on their core, its time is the slowest core's step time on every core (XProf's step time).

PyTorch (Kineto) traces have their own part behind the same columns (`_kineto`): the op rows
are the outermost op calls with FLOPs from shapes (kineto/flops.py) that ran GPU work,
one row per op and tensor inputs (the `operation` is the call's signature, the `category` its
family), their time the GPU work they and the calls nested in them launched; the program is
the sum of those over the GPUs' time (Framework Op Stats' device time). Peaks come from the
GPU's name (gpu_peaks.py): each op is held to the peak of its dtype, the program and the chart's
compute roof to the dtype most FLOPs ran in.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .framework_op_stats import analyze_framework_op_stats
from .gpu_peaks import gpu_peaks, profile_gpu_peaks
from .hlo_stats import MEMORIES, DevicePeaks, hlo_stats_available, op_metrics, rates
from .hosts import host_parts
from .kineto import any_rank_has
from .kineto.flops import op_flops
from .kineto.ops import DEVICE_WORK
from .steps import find_steps, track_events

PS_PER_US = 1_000_000
MAX_OPS = 1000
TOTAL, AVERAGE = "Total", "Average"
_INNER = ("call", "conditional", "while", "megacore fusion")
"""Categories of ops that hold other ops: a program's sums leave them out."""
_TPU_CORE = re.compile(r"^/device:TPU:\d+$")
COLUMNS = [
    "step", "rank", "category", "operation", "occurrences", "total_time_us", "avg_time_us",
    "total_self_time_us", "avg_self_time_us", "total_self_time_pct",
    "cumulative_total_self_time_pct", "measured_flop_rate_gflops", "model_flop_rate_gflops",
    "measured_memory_bw_gbps", "hbm_bw_gbps", "cmem_read_bw_gbps", "cmem_write_bw_gbps",
    "vmem_read_bw_gbps", "vmem_write_bw_gbps", "operational_intensity",
    "hbm_operational_intensity", "cmem_read_operational_intensity",
    "cmem_write_operational_intensity", "vmem_read_operational_intensity",
    "vmem_write_operational_intensity", "bottleneck_operational_intensity", "bound_by",
    "total_time_per_core_us", "total_time_pct", "optimal_flop_rate_gflops",
    "roofline_efficiency", "compute_efficiency", "max_mem_bw_utilization",
    "include_infeed_outfeed", "program_id", "source_info",
]
_SUMMED = ["flops", "model_flops", "bytes_accessed", *[f"{r}_bytes" for r in MEMORIES]]


def is_infeed_or_outfeed(category: str) -> bool:
    return "infeed" in category or "outfeed" in category


class RooflineModelAnalysis:
    """Program and op rows of the roofline, and the ceilings they are drawn against."""

    def __init__(self, table: pd.DataFrame, peaks: DevicePeaks, steps: int,
                 has_feeds: bool = True):
        self.table = table
        self.peaks = peaks
        self.steps = steps
        self.has_feeds = has_feeds  # False: a PyTorch trace, where infeed/outfeed do not apply

    def ceilings(self) -> pd.DataFrame:
        """The roofs: compute (FLOP/s) and each memory with a peak (bytes/s), with the ridge
        point (FLOPs per byte where that memory's roof meets the compute roof)."""
        peaks = self.peaks
        rows = [("HBM", peaks.hbm)]
        if peaks.kind == "TPU":
            if peaks.has_cmem:
                rows += [("CMEM Read", peaks.cmem_read), ("CMEM Write", peaks.cmem_write)]
            elif peaks.has_merged_vmem:
                rows += [("VMEM Read", peaks.vmem_read), ("VMEM Write", peaks.vmem_write)]
        frame = pd.DataFrame(rows, columns=["memory", "peak_bw_gbps"])
        frame = frame[frame["peak_bw_gbps"] > 0].reset_index(drop=True)
        frame["peak_bw_gbps"] = frame["peak_bw_gbps"] / 1e9
        frame["peak_flop_rate_gflops"] = peaks.flops / 1e9
        with np.errstate(divide="ignore", invalid="ignore"):
            frame["ridge_point"] = frame["peak_flop_rate_gflops"] / frame["peak_bw_gbps"]
        return frame


def analyze_roofline_model(profile: Profile) -> RooflineModelAnalysis:
    """The roofline model of a TPU or GPU profile (see the module doc)."""
    return profile.memo(("roofline_model",), lambda: _analyze(profile))


def _analyze(profile: Profile) -> RooflineModelAnalysis:
    if not hlo_stats_available(profile) and len(_kineto_calls(profile)):
        return _kineto(profile)
    ops, analysis, peaks = op_metrics(profile)
    ops = ops[ops["occurrences"] > 0].reset_index(drop=True)
    total_ps = float(analysis.total_time_ps)
    per_step = _step_sums(profile, ops) if peaks.kind == "TPU" else []
    parts = []
    for with_feeds in (True, False):
        parts.append(_program(ops, total_ps, TOTAL, with_feeds, peaks))
        parts.append(_op_rows(ops, total_ps, with_feeds, peaks))
        if per_step:
            step_ops = pd.concat([s for _, s, _ in per_step], ignore_index=True)
            mean = _program(step_ops, sum(t for _, _, t in per_step), AVERAGE, with_feeds,
                            peaks, steps=len(per_step))
            parts.append(mean)
            parts += [_program(s, t, str(step), with_feeds, peaks) for step, s, t in per_step]
    table = pd.concat(parts, ignore_index=True)
    return RooflineModelAnalysis(table[COLUMNS], peaks, len(per_step))


def _kineto_calls(profile: Profile) -> pd.DataFrame:
    """The PyTorch op calls the roofline draws: outermost, with FLOPs, that ran GPU work
    (copies and fills are left out: their time is often a transfer from or to the host)."""
    if not any_rank_has(profile, DEVICE_WORK):
        return pd.DataFrame()  # cheap (reads no events): a trace without GPU work has none
    calls = op_flops(profile)
    computes = np.nan_to_num(calls["flops"].to_numpy(np.float64)) > 0
    return calls[computes & calls["outermost"].to_numpy(bool)
                 & (calls["device_total_ps"].to_numpy(np.float64) > 0)]


def _kineto(profile: Profile) -> RooflineModelAnalysis:
    """The Kineto part (see the module doc): one program row (Total) and the op rows."""
    calls = _kineto_calls(profile)
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
        parts.append(_program(ops, total_ps, TOTAL, with_feeds, peaks))
        rows = pd.concat([_records(group, held_to(str(dtype)), TOTAL, with_feeds, total_ps, 1)
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


def _program(ops: pd.DataFrame, total_ps: float, step: str, with_feeds: bool,
             peaks: DevicePeaks, steps: int = 1) -> pd.DataFrame:
    """One program row: the sums of the innermost ops over the device's time."""
    inner = ops["category"].isin(_INNER).to_numpy(bool)
    feeds = ops["category"].map(is_infeed_or_outfeed).to_numpy(bool)
    counted = ops[~inner & (with_feeds | ~feeds)]
    time_ps = total_ps - (0.0 if with_feeds else float(ops.loc[feeds, "time_ps"].sum()))
    row = {column: float(counted[column].sum()) for column in _SUMMED}
    row.update(name="Program", category="Program", program_id="0", occurrences=1,
               time_ps=time_ps, self_time_ps=0.0, source="",
               has_breakdown=bool(counted["has_breakdown"].any()), known_cost=True)
    frame = pd.DataFrame([row])
    out = _records(frame, peaks, step, with_feeds, time_ps, steps)
    out["rank"] = 0
    out["total_self_time_pct"] = 0.0
    out["cumulative_total_self_time_pct"] = 0.0
    return out


def _op_rows(ops: pd.DataFrame, total_ps: float, with_feeds: bool,
             peaks: DevicePeaks) -> pd.DataFrame:
    feeds = ops["category"].map(is_infeed_or_outfeed).to_numpy(bool)
    time_ps = total_ps - (0.0 if with_feeds else float(ops.loc[feeds, "time_ps"].sum()))
    rows = ops.sort_values(["self_time_ps", "name"], ascending=[False, True],
                           kind="stable").head(MAX_OPS)
    rows = rows[with_feeds | ~rows["category"].map(is_infeed_or_outfeed)].reset_index(drop=True)
    out = _records(rows, peaks, TOTAL, with_feeds, time_ps, 1)
    share = rows["self_time_ps"].to_numpy(np.float64) / time_ps * 100 if time_ps else \
        np.zeros(len(rows))
    out["rank"] = np.arange(1, len(rows) + 1)
    out["total_self_time_pct"] = share
    out["cumulative_total_self_time_pct"] = np.cumsum(share)
    return out


def _records(rows: pd.DataFrame, peaks: DevicePeaks, step: str, with_feeds: bool,
             total_ps: float, steps: int) -> pd.DataFrame:
    metrics = rates(rows, peaks)
    occurrences = rows["occurrences"].to_numpy(np.float64)
    time_us = rows["time_ps"].to_numpy(np.float64) / PS_PER_US
    self_us = rows["self_time_ps"].to_numpy(np.float64) / PS_PER_US
    shown_us = time_us / steps  # the Average row shows one step's time, rates stay the sums'
    # The roofline's own ceilings: on TPU, CMEM where the device has it, else merged VMEM.
    counted = ["hbm"]
    if peaks.kind == "TPU":
        counted += ["cmem_read", "cmem_write"] if peaks.has_cmem else \
            ["vmem_read", "vmem_write"] if peaks.has_merged_vmem else []
    memory = np.max(np.stack([np.nan_to_num(metrics[f"{r}_utilization"]) for r in counted]),
                    axis=0)
    compute = metrics["compute_utilization"].to_numpy(np.float64)
    efficiency = np.fmax(memory, np.nan_to_num(compute))
    with np.errstate(divide="ignore", invalid="ignore"):
        optimal = np.where(efficiency > 0, metrics["normalized_flop_rate"] / efficiency, 0.0)
    total_pct = rows["time_ps"].to_numpy(np.float64) / total_ps * 100 if total_ps else \
        np.zeros(len(rows))
    return pd.DataFrame({
        "step": step, "category": rows["category"].to_numpy(),
        "operation": rows["name"].to_numpy(), "occurrences": rows["occurrences"].to_numpy(),
        "total_time_us": shown_us, "avg_time_us": time_us / np.maximum(occurrences, 1),
        "total_self_time_us": self_us / steps,
        "avg_self_time_us": self_us / np.maximum(occurrences, 1),
        "measured_flop_rate_gflops": metrics["normalized_flop_rate"].to_numpy() / 1e9,
        "model_flop_rate_gflops": metrics["model_flop_rate"].to_numpy() / 1e9,
        "measured_memory_bw_gbps": metrics["memory_bw"].to_numpy() / 1e9,
        **{f"{r}_bw_gbps": metrics[f"{r}_bw"].to_numpy() / 1e9 for r in MEMORIES},
        "operational_intensity": metrics["operational_intensity"].to_numpy(),
        **{f"{r}_operational_intensity": metrics[f"{r}_intensity"].to_numpy()
           for r in MEMORIES},
        "bottleneck_operational_intensity":
            metrics["bottleneck_operational_intensity"].to_numpy(),
        "bound_by": metrics["bound_by"].to_numpy(),
        "total_time_per_core_us": shown_us / max(peaks.cores, 1),
        "total_time_pct": total_pct, "optimal_flop_rate_gflops": optimal / 1e9,
        "roofline_efficiency": efficiency, "compute_efficiency": np.nan_to_num(compute),
        "max_mem_bw_utilization": memory, "include_infeed_outfeed": with_feeds,
        "program_id": rows["program_id"].to_numpy(), "source_info": rows["source"].to_numpy(),
    })


def _step_sums(profile: Profile, ops: pd.DataFrame) -> list[tuple[int, pd.DataFrame, float]]:
    """Per step of the TPU `Steps` lines: (step, its ops' sums, its time on every core). Each
    host tallies its own steps (next to its events: a Dask worker for a pod); a step is summed
    over the hosts, and lasts as long as on its slowest core."""
    parts = [p.part for p in host_parts(profile, step_tally) if p.part is not None]
    if not parts:
        return []
    key_of = {k: i for i, k in enumerate(zip(ops["program_id"], ops["name"], strict=True))}
    tally = pd.concat([t for t, _, _ in parts])
    tally["op"] = [key_of.get(k, -1) for k in zip(tally["program_id"], tally["name"],
                                                  strict=True)]
    tally = tally[tally["op"] >= 0].groupby(["step", "op"]).agg(
        n=("n", "sum"), ps=("ps", "sum")).reset_index()
    spans = pd.concat([s for _, s, _ in parts]).groupby(level=0).max()
    cores = sum(c for _, _, c in parts)
    per_occurrence = ops[_SUMMED].div(ops["occurrences"].clip(lower=1), axis=0)
    out = []
    for step, part in tally.groupby("step", sort=True):
        rows = ops.iloc[part["op"].to_numpy()].copy()
        n = part["n"].to_numpy(np.float64)
        rows[_SUMMED] = per_occurrence.iloc[part["op"].to_numpy()].to_numpy() * n[:, None]
        rows["occurrences"] = n.astype(np.int64)
        rows["time_ps"] = rows["self_time_ps"] = part["ps"].to_numpy(np.float64)
        out.append((int(step), rows, float(spans.loc[step]) * cores))
    return out


def step_tally(profile: Profile) -> tuple[pd.DataFrame, pd.Series, int] | None:
    """One host's part: per step and op (program id, name) the runs and time of its XLA ops on
    the TPU cores, each step's longest span, and the cores counted; None without Steps lines."""
    steps = find_steps(profile)
    if steps.source != "device Steps line":
        return None
    markers = steps.markers
    markers = markers[markers["section"].map(lambda s: bool(_TPU_CORE.match(s)))]
    tracks = profile.built_tracks
    lines = tracks[(tracks["name"] == "XLA Ops") & tracks["section"].isin(
        set(markers["section"]))]
    stats = profile.metadata["stats"].to_numpy()
    counts = []
    for section, line in lines.groupby("section"):
        events = track_events(profile, line.index.to_numpy())
        mine = markers[markers["section"] == section].sort_values("start_ps")
        start = profile.start_ps[events]
        at = np.searchsorted(mine["start_ps"].to_numpy(), start, side="right") - 1
        inside = (at >= 0) & (start < mine["end_ps"].to_numpy()[np.maximum(at, 0)])
        metas = profile.meta[events[inside]]
        codes, of_event = np.unique(metas, return_inverse=True)
        pids = np.array([str(int(stats[m].get("program_id", 0) or 0) & (2**64 - 1))
                         for m in codes.tolist()], dtype=object)
        names = profile.display_names[codes].astype(str)
        counts.append(pd.DataFrame({
            "step": mine["step"].to_numpy()[at[inside]], "program_id": pids[of_event],
            "name": names[of_event], "ps": profile.duration_ps[events[inside]]}))
    if not counts:
        return None
    tally = pd.concat(counts).groupby(["step", "program_id", "name"]).agg(
        n=("ps", "size"), ps=("ps", "sum")).reset_index()
    spans = (markers["end_ps"] - markers["start_ps"]).groupby(markers["step"]).max()
    return tally, spans, len(lines["section"].unique())


def roofline_model_available(profile: Profile) -> bool:
    """Whether the profile has TPU or GPU ops (XProf draws no roofline for CPU runs), or is a
    PyTorch trace whose GPU ran ops with FLOPs or bytes from shapes."""
    if hlo_stats_available(profile):
        return op_metrics(profile)[2].kind in ("TPU", "GPU")
    return bool(len(_kineto_calls(profile)))
