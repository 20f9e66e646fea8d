"""The roofline's rows, whichever format the ops come from: a program row (the innermost ops'
sums over the device's time) and op rows, each with its rates, intensities, utilizations and
efficiency against the device's ceilings (XProf's op_stats_to_roofline_model.cc), in COLUMNS.
The Roofline Model tool (roofline_model.py) and its Kineto part (kineto/roofline.py) build
their tables from these.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .hlo_stats import MEMORIES, DevicePeaks, rates

PS_PER_US = 1_000_000
MAX_OPS = 1000
TOTAL, AVERAGE = "Total", "Average"
INNER = ("call", "conditional", "while", "megacore fusion")
"""Categories of ops that hold other ops: a program's sums leave them out."""
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
SUMMED = ["flops", "model_flops", "bytes_accessed", *[f"{r}_bytes" for r in MEMORIES]]


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


def program_row(ops: pd.DataFrame, total_ps: float, step: str, with_feeds: bool,
             peaks: DevicePeaks, steps: int = 1) -> pd.DataFrame:
    """One program row: the sums of the innermost ops over the device's time."""
    inner = ops["category"].isin(INNER).to_numpy(bool)
    feeds = ops["category"].map(is_infeed_or_outfeed).to_numpy(bool)
    counted = ops[~inner & (with_feeds | ~feeds)]
    time_ps = total_ps - (0.0 if with_feeds else float(ops.loc[feeds, "time_ps"].sum()))
    row = {column: float(counted[column].sum()) for column in SUMMED}
    row.update(name="Program", category="Program", program_id="0", occurrences=1,
               time_ps=time_ps, self_time_ps=0.0, source="",
               has_breakdown=bool(counted["has_breakdown"].any()), known_cost=True)
    frame = pd.DataFrame([row])
    out = records(frame, peaks, step, with_feeds, time_ps, steps)
    out["rank"] = 0
    out["total_self_time_pct"] = 0.0
    out["cumulative_total_self_time_pct"] = 0.0
    return out


def op_rows(ops: pd.DataFrame, total_ps: float, with_feeds: bool,
             peaks: DevicePeaks) -> pd.DataFrame:
    feeds = ops["category"].map(is_infeed_or_outfeed).to_numpy(bool)
    time_ps = total_ps - (0.0 if with_feeds else float(ops.loc[feeds, "time_ps"].sum()))
    rows = ops.sort_values(["self_time_ps", "name"], ascending=[False, True],
                           kind="stable").head(MAX_OPS)
    rows = rows[with_feeds | ~rows["category"].map(is_infeed_or_outfeed)].reset_index(drop=True)
    out = records(rows, peaks, TOTAL, with_feeds, time_ps, 1)
    share = rows["self_time_ps"].to_numpy(np.float64) / time_ps * 100 if time_ps else \
        np.zeros(len(rows))
    out["rank"] = np.arange(1, len(rows) + 1)
    out["total_self_time_pct"] = share
    out["cumulative_total_self_time_pct"] = np.cumsum(share)
    return out


def records(rows: pd.DataFrame, peaks: DevicePeaks, step: str, with_feeds: bool,
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
