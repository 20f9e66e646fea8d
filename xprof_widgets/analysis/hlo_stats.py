"""HLO stats: every device HLO op with its time, rates and bottleneck (XProf's "hlo_stats").

The ops are the op profile's (`analysis/op_profile.py`: XProf's device op metrics), one row
per (program, op); rows by self time, largest first, then by name. As XProf computes them
(xprof/convert/op_stats_to_hlo_stats.cc, op_metrics_to_record.h):

- FLOP rates over the op's total time (its FLOPs include nested ops'): normalized (`flops`)
  and model (`model_flops`, else `flops`);
- bandwidths over the total time: all bytes accessed; HBM bytes (from the
  `memory_access_breakdown` stat; without one, every byte accessed); on TPU, on-chip CMEM and
  VMEM reads and writes from the breakdown;
- bound by: the resource whose utilization (rate over the device's peak) is highest among
  compute, HBM and, on TPU, CMEM/VMEM reads and writes that the op uses and the device states
  a peak for; "Unknown" when nothing is used;
- self-time shares of the device's total time, idle included.

Our bandwidths are GB/s (10^9 bytes/s); XProf prints GiB/s. Custom calls without a cost model
(Pallas, Mosaic) have no rates and no bound-by here; XProf gives them 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..profile.model import Profile
from ..profile.schema import MemoryAccessBreakdown
from .hosts import host_parts
from .op_profile import OpProfileAnalysis, analyze_op_profile

PS_PER_US = 1_000_000
_HBM, _CMEM, _VMEM = 1, 2, 3
_READ, _WRITE = 1, 2
_TPU_CORE = re.compile(r"^/device:TPU:\d+$")
COLUMNS = [
    "rank", "program_id", "category", "hlo_op_name", "hlo_op_expression", "tf_op_name",
    "occurrences", "total_time_us", "avg_time_us", "total_self_time_us", "avg_self_time_us",
    "total_self_time_pct", "cumulative_total_self_time_pct", "model_flop_rate_gflops",
    "normalized_flop_rate_gflops", "measured_memory_bw_gbps", "hbm_bw_gbps",
    "cmem_read_bw_gbps", "cmem_write_bw_gbps", "vmem_read_bw_gbps", "vmem_write_bw_gbps",
    "operational_intensity", "bound_by", "source_info",
]
MEMORIES = ("hbm", "cmem_read", "cmem_write", "vmem_read", "vmem_write")
BOUND_NAMES = {"compute": "Compute", "hbm": "HBM", "cmem_read": "CMEM Read",
               "cmem_write": "CMEM Write", "vmem_read": "VMEM Read", "vmem_write": "VMEM Write"}


@dataclass(frozen=True)
class DevicePeaks:
    """Peak rates of one core or device; 0 where the profile states none (never a bound)."""

    kind: str  # "TPU", "GPU" or "CPU"
    name: str
    cores: int
    flops: float  # FLOP/s
    hbm: float  # bytes/s
    cmem_read: float = 0.0
    cmem_write: float = 0.0
    vmem_read: float = 0.0
    vmem_write: float = 0.0
    has_cmem: bool = False
    has_merged_vmem: bool = False

    def of(self, resource: str) -> float:
        return float(getattr(self, resource))


def device_peaks(profile: Profile, analysis: OpProfileAnalysis) -> DevicePeaks:
    """The peaks of the device the ops ran on: TPU plane stats (HBM, CMEM, VMEM), else the op
    profile's (GPU capabilities, or peaks a user gave)."""
    device = analysis.device
    flops = device.peak_flops if math.isfinite(device.peak_flops) else 0.0
    hbm = device.peak_bandwidth if math.isfinite(device.peak_bandwidth) else 0.0
    if device.kind != "TPU":
        return DevicePeaks(device.kind, device.name, device.count, flops, hbm)
    sections = profile.sections
    cores = sections[sections["name"].map(lambda s: bool(_TPU_CORE.match(s)))]
    stats = cores["stats"].iat[0] if len(cores) else {}

    def gbps(name: str) -> float:
        return float(stats.get(f"peak_{name}_bw_gigabytes_per_second", 0) or 0) * 1e9

    cmem_read, cmem_write = gbps("cmem_rd"), gbps("cmem_wr")
    return DevicePeaks("TPU", device.name, device.count, flops, hbm, cmem_read, cmem_write,
                       gbps("vmem_rd"), gbps("vmem_wr"), has_cmem=cmem_read > 0 or cmem_write > 0,
                       has_merged_vmem=bool(stats.get("has_merged_vmem", 0)))


def op_metrics(profile: Profile) -> tuple[pd.DataFrame, OpProfileAnalysis, DevicePeaks]:
    """The op profile's ops with self time, the expression and, on TPU, bytes per memory from
    the breakdown (`*_bytes`, `has_breakdown`); plus the analysis and the device's peaks. The
    rows every HLO-level table starts from."""
    return profile.memo(("hlo_op_metrics",), lambda: _op_metrics(profile))


def _op_metrics(profile: Profile) -> tuple[pd.DataFrame, OpProfileAnalysis, DevicePeaks]:
    analysis = analyze_op_profile(profile)
    peaks = device_peaks(profile, analysis)
    ops = analysis.ops
    frame = pd.DataFrame({
        "program_id": ops["program_id"].map(lambda v: str(int(v) & (2**64 - 1))
                                            if int(v) >= 0 else ""),
        "name": ops["name"].astype(str), "category": ops["category"].astype(str),
        "expression": ops["expression"].astype(str),
        "framework_op": ops["framework_op"].astype(str),
        "occurrences": ops["occurrences"].to_numpy(np.int64),
        "time_ps": ops["time_ps"].to_numpy(np.float64),
        "self_time_ps": ops["time_ps"].to_numpy(np.float64),
        "flops": ops["flops"].to_numpy(np.float64),
        "model_flops": ops["model_flops"].to_numpy(np.float64),
        "bytes_accessed": ops["bytes_accessed"].to_numpy(np.float64),
        "known_cost": ops["known_cost"].to_numpy(bool),
        "source": ops["source"].astype(str), "source_stack": ops["source_stack"].astype(str),
    })
    memory = _memory_bytes(profile, frame) if peaks.kind == "TPU" else {}
    frame["has_breakdown"] = memory.get("has_breakdown", np.zeros(len(frame), bool))
    for resource in MEMORIES:
        frame[f"{resource}_bytes"] = memory.get(resource, np.zeros(len(frame)))
    return frame, analysis, peaks


def _memory_bytes(profile: Profile, frame: pd.DataFrame) -> dict[str, np.ndarray]:
    """Bytes each TPU op moves per memory from its metadata's `memory_access_breakdown`,
    times its occurrences, and `has_breakdown` (an empty breakdown counts as none). The
    breakdowns are read per host, where the host's metadata is (a Dask worker for a pod)."""
    per_op: dict[tuple[str, str], tuple[float, ...]] = {}
    for part in host_parts(profile, breakdown_per_op):
        per_op.update(part.part)
    keys = list(zip(frame["program_id"], frame["name"], strict=True))
    has = np.array([k in per_op for k in keys], bool)
    table = np.array([per_op.get(k, (0.0,) * len(MEMORIES)) for k in keys], np.float64)
    table = table.reshape(len(keys), len(MEMORIES)) * frame["occurrences"].to_numpy(
        np.float64)[:, None]
    return {"has_breakdown": has, **{r: table[:, k] for k, r in enumerate(MEMORIES)}}


def breakdown_per_op(profile: Profile) -> dict[tuple[str, str], tuple[float, ...]]:
    """One host's part: (program id, op name) -> bytes one run of the op moves per memory
    (MEMORIES order), for the TPU core ops whose metadata has a non-empty breakdown."""
    md = profile.metadata
    core_sections = profile.sections.index[profile.sections["name"].map(
        lambda s: bool(_TPU_CORE.match(s)))]
    on_core = np.isin(md["section_id"].to_numpy(), core_sections.to_numpy())
    per_op: dict[tuple[str, str], tuple[float, ...]] = {}
    for row in np.flatnonzero(on_core).tolist():
        stats = md["stats"].iat[row]
        if "memory_access_breakdown" not in stats or "program_id" not in stats:
            continue
        key = (str(int(stats["program_id"]) & (2**64 - 1)), str(profile.display_names[row]))
        if key in per_op:
            continue
        accessed = MemoryAccessBreakdown.FromString(
            bytes(stats["memory_access_breakdown"])).memory_accessed
        if not len(accessed):
            continue
        sums = dict.fromkeys(MEMORIES, 0.0)
        for m in accessed:
            if m.memory_space == _HBM:
                sums["hbm"] += m.bytes_accessed
            elif m.memory_space in (_CMEM, _VMEM) and m.operation_type in (_READ, _WRITE):
                space = "cmem" if m.memory_space == _CMEM else "vmem"
                sums[f"{space}_{'read' if m.operation_type == _READ else 'write'}"] += \
                    m.bytes_accessed
        per_op[key] = tuple(sums[r] for r in MEMORIES)
    return per_op


def rates(frame: pd.DataFrame, peaks: DevicePeaks) -> pd.DataFrame:
    """XProf's roofline metrics of each row (ops, framework ops, programs): rates over the
    row's total time, intensities, the bottleneck, its intensity and every utilization."""
    seconds = frame["time_ps"].to_numpy(np.float64) / 1e12
    known = frame["known_cost"].to_numpy(bool) if "known_cost" in frame else \
        np.ones(len(frame), bool)
    flops = frame["flops"].to_numpy(np.float64)
    out: dict[str, Any] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        def per_second(values: np.ndarray) -> np.ndarray:
            return np.where(seconds > 0, values / seconds, 0.0)

        def per_byte(values: np.ndarray) -> np.ndarray:
            return np.where(values > 0, flops / values, 0.0)

        out["normalized_flop_rate"] = per_second(flops)
        out["model_flop_rate"] = per_second(frame["model_flops"].to_numpy(np.float64))
        out["memory_bw"] = per_second(frame["bytes_accessed"].to_numpy(np.float64))
        out["operational_intensity"] = per_byte(frame["bytes_accessed"].to_numpy(np.float64))
        utilization = {"compute": out["normalized_flop_rate"] / peaks.flops
                       if peaks.flops > 0 else np.zeros(len(frame))}
        for resource in MEMORIES:
            moved = frame[f"{resource}_bytes"].to_numpy(np.float64)
            if resource == "hbm":  # without a breakdown, every byte accessed is in HBM
                moved = np.where(frame["has_breakdown"].to_numpy(bool), moved,
                                 frame["bytes_accessed"].to_numpy(np.float64))
            out[f"{resource}_bw"] = per_second(moved)
            out[f"{resource}_intensity"] = per_byte(moved)
            peak = peaks.of(resource)
            on_chip = resource != "hbm"
            usable = peak > 0 and (not on_chip or peaks.kind == "TPU")
            utilization[resource] = np.where(moved > 0 if on_chip else True,
                                             out[f"{resource}_bw"] / peak, 0.0) if usable \
                else np.zeros(len(frame))
    bound = np.full(len(frame), "Unknown", dtype=object)
    best = np.zeros(len(frame))
    intensity = np.zeros(len(frame))
    for resource in ("compute", *MEMORIES):
        wins = utilization[resource] > best
        bound[wins] = BOUND_NAMES[resource]
        best = np.where(wins, utilization[resource], best)
        intensity = np.where(wins, out["operational_intensity"] if resource == "compute"
                             else out[f"{resource}_intensity"], intensity)
    out["bound_by"] = bound
    out["bottleneck_operational_intensity"] = intensity
    for resource, value in utilization.items():
        out[f"{resource}_utilization"] = value
    result = pd.DataFrame(out, index=frame.index)
    numbers = [c for c in result.columns if c != "bound_by"]
    result.loc[~known, numbers] = np.nan
    result.loc[~known, "bound_by"] = ""
    return result


def hlo_stats(profile: Profile) -> pd.DataFrame:
    """XProf's HLO op table (see COLUMNS): one row per device op, by self time."""
    return profile.memo(("hlo_stats",), lambda: _hlo_stats(profile))


def _hlo_stats(profile: Profile) -> pd.DataFrame:
    frame, analysis, peaks = op_metrics(profile)
    frame = frame[frame["occurrences"] > 0]
    frame = frame.sort_values(["self_time_ps", "name"], ascending=[False, True],
                              kind="stable").reset_index(drop=True)
    metrics = rates(frame, peaks)
    total = float(analysis.total_time_ps)
    share = frame["self_time_ps"].to_numpy(np.float64) / total * 100 if total else \
        np.zeros(len(frame))
    occurrences = frame["occurrences"].to_numpy(np.float64)
    table = pd.DataFrame({
        "rank": np.arange(1, len(frame) + 1), "program_id": frame["program_id"],
        "category": frame["category"],
        "hlo_op_name": [_op_name(e) for e in frame["expression"]],
        "hlo_op_expression": frame["expression"], "tf_op_name": frame["framework_op"],
        "occurrences": frame["occurrences"],
        "total_time_us": frame["time_ps"] / PS_PER_US,
        "avg_time_us": frame["time_ps"] / PS_PER_US / np.maximum(occurrences, 1),
        "total_self_time_us": frame["self_time_ps"] / PS_PER_US,
        "avg_self_time_us": frame["self_time_ps"] / PS_PER_US / np.maximum(occurrences, 1),
        "total_self_time_pct": share, "cumulative_total_self_time_pct": np.cumsum(share),
        "model_flop_rate_gflops": metrics["model_flop_rate"] / 1e9,
        "normalized_flop_rate_gflops": metrics["normalized_flop_rate"] / 1e9,
        "measured_memory_bw_gbps": metrics["memory_bw"] / 1e9,
        **{f"{r}_bw_gbps": metrics[f"{r}_bw"] / 1e9 for r in MEMORIES},
        "operational_intensity": metrics["operational_intensity"],
        "bound_by": metrics["bound_by"], "source_info": frame["source"],
    })
    return table[COLUMNS]


def _op_name(expression: str) -> str:
    """The op name in an HLO text, `%name = ...` (XProf reads the table's name from it)."""
    name = expression.split(" = ", 1)[0]
    return name.removeprefix("%")


def hlo_stats_available(profile: Profile) -> bool:
    """Whether the profile has device ops (XLA ops on TPU, GPU or CPU threads)."""
    try:
        return len(analyze_op_profile(profile).ops) > 0
    except ProfileError:
        return False
