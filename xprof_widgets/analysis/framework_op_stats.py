"""Framework op stats (XProf's "framework_op_stats", TensorFlow stats): time by framework op.

Rows are framework ops (`tf_op` names: TensorFlow `name:Type`, JAX `scope/op:`) on the device
and on the host, as XProf builds them (xprof/convert/op_stats_to_tf_stats.cc,
xplane_to_op_metrics_db.cc, op_metrics_db_utils.cc):

- device: the op profile's ops (`analysis/op_profile.py`, XProf's device op metrics) grouped by
  the framework op each came from; an op without one stands as itself, of type "Unknown". Time,
  self time, FLOPs and bytes are summed; occurrences are the most of any op in the group. Idle
  is the op profile's idle time;
- host: on each line of a `/host:CPU` plane, events named like a framework op (TensorFlow
  `name:Type`, tf.data `Iterator::...`, memcpy) and events with a `tf_op` stat are the ops;
  self time is time minus the time of the ops directly inside; a line's time runs from its
  first op's start to its last op's end, and idle is that minus the self time of its ops;
- per side, rows sorted by self time (largest first, then name), at most 500; self-time shares
  of the side's total (idle included, or of the busy time with idle excluded) and their running
  sums; FLOP rates and bandwidth over the op's total time (as XProf: FLOPs include nested ops').

Where XProf has nothing, we go on: the XLA ops of a CPU run (host threads with `hlo_op` stats,
the device JAX reports as `cpu`) are device rows, as the op profile lists them
(`xla_cpu_ops=False` leaves them out, as XProf). A device framework op's type is read from its
name when the HLO metadata gives the name only (JAX writes no op type).

PyTorch profiler (Kineto) traces have their own part (kineto/op_stats.py): their `cpu_op`s are
the host rows, the GPU work those ops launched the device rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._native.intervals import self_times
from ..errors import ProfileError
from ..profile.derived import parse_framework_op
from ..profile.model import Profile
from .hosts import host_parts
from .kineto.op_stats import FRAMEWORK_OP_STATS
from .op_profile import IDLE, analyze_op_profile
from .op_sums import OpSides, Peaks, by_operation, combine_ops, empty_ops, with_idle
from .parts import FormatPart, first_present
from .steps import stat_hits, track_events

PS_PER_US = 1_000_000
MAX_ROWS = 500
"""Rows per side (device, host), as XProf's table keeps."""
HOST_PLANE = "/host:CPU"
UNKNOWN_TYPE = "Unknown"
COLUMNS = [
    "rank", "host_or_device", "type", "operation", "occurrences", "total_time_us", "avg_time_us",
    "total_self_time_us", "avg_self_time_us", "device_total_self_time_pct",
    "device_cumulative_total_self_time_pct", "host_total_self_time_pct",
    "host_cumulative_total_self_time_pct", "measured_flop_rate_gflops", "model_flop_rate_gflops",
    "measured_memory_bw_gbps", "operational_intensity", "bound_by", "execution_mode",
]


class FrameworkOpStatsAnalysis:
    """Per-op sums of each side, its IDLE row included, and the side's total time (ps).

    A side with no plane has no rows; a side whose plane holds no framework op has an IDLE
    row of zero, as XProf shows it. `table()` makes XProf's rows from these.
    """

    def __init__(self, device: pd.DataFrame, host: pd.DataFrame, device_total_ps: int,
                 host_total_ps: int, peaks: Peaks, device_kind: str, source: str):
        self.device = device
        self.host = host
        self.device_total_ps = int(device_total_ps)
        self.host_total_ps = int(host_total_ps)
        self.peaks = peaks
        self.device_kind = device_kind
        self.source = source

    def idle_ps(self, where: str) -> int:
        """Idle time of one side ("Device" or "Host")."""
        ops = self.device if where == "Device" else self.host
        return int(ops.loc[ops["type"] == IDLE, "self_time_ps"].sum())

    def table(self, include_idle: bool = True) -> pd.DataFrame:
        """XProf's table: device rows, then host rows, each by self time; see COLUMNS."""
        parts = [self._side("Device", self.device, self.device_total_ps, include_idle),
                 self._side("Host", self.host, self.host_total_ps, include_idle)]
        parts = [p for p in parts if len(p)]
        table = pd.concat(parts, ignore_index=True) if parts else _empty_table()
        table["rank"] = np.arange(1, len(table) + 1)
        return table[COLUMNS]

    def _side(self, where: str, ops: pd.DataFrame, total_ps: int,
              include_idle: bool) -> pd.DataFrame:
        rows = ops.sort_values(["self_time_ps", "operation"], ascending=[False, True],
                               kind="stable").head(MAX_ROWS)
        idle = rows["type"].to_numpy() == IDLE
        denominator = float(total_ps - (0 if include_idle else ops.loc[
            ops["type"] == IDLE, "self_time_ps"].sum()))
        if not include_idle:
            rows = rows[~idle]
        share = (rows["self_time_ps"].to_numpy(np.float64) / denominator * 100
                 if denominator > 0 else np.zeros(len(rows)))
        own, other = ("device", "host") if where == "Device" else ("host", "device")
        occurrences = rows["occurrences"].to_numpy(np.float64)
        total_us = rows["time_ps"].to_numpy(np.float64) / PS_PER_US
        self_us = rows["self_time_ps"].to_numpy(np.float64) / PS_PER_US
        with np.errstate(divide="ignore", invalid="ignore"):
            out = pd.DataFrame({
                "host_or_device": where, "type": rows["type"].to_numpy(),
                "operation": rows["operation"].to_numpy(),
                "occurrences": rows["occurrences"].to_numpy(np.int64),
                "total_time_us": total_us,
                "avg_time_us": np.where(occurrences > 0, total_us / occurrences, 0.0),
                "total_self_time_us": self_us,
                "avg_self_time_us": np.where(occurrences > 0, self_us / occurrences, 0.0),
                f"{own}_total_self_time_pct": share,
                f"{own}_cumulative_total_self_time_pct": np.cumsum(share),
                f"{other}_total_self_time_pct": 0.0,
                f"{other}_cumulative_total_self_time_pct": 0.0,
                "execution_mode": np.where(rows["eager"].to_numpy(bool), "Eager", "Function"),
            })
        return pd.concat([out, _roofline(rows, self.peaks)], axis=1)

    def self_time_by(self, where: str, by: str, include_idle: bool = True) -> pd.Series:
        """Self time (us) per `operation` or per `type` on one side ("Device" / "Host")."""
        table = self.table(include_idle)
        rows = table[table["host_or_device"] == where]
        return rows.groupby(by, sort=False)["total_self_time_us"].sum().sort_values(
            ascending=False, kind="stable")


def _empty_table() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c in ("host_or_device", "type",
                                                            "operation", "bound_by",
                                                            "execution_mode") else np.float64)
                         for c in COLUMNS})


def _roofline(rows: pd.DataFrame, peaks: Peaks) -> pd.DataFrame:
    """FLOP rates, bandwidth, intensity and the bottleneck of each row, over its total time."""
    seconds = rows["time_ps"].to_numpy(np.float64) / 1e12
    flops = rows["flops"].to_numpy(np.float64)
    model = rows["model_flops"].to_numpy(np.float64)
    moved = rows["bytes_accessed"].to_numpy(np.float64)
    peak = rows["peak_flops"].to_numpy(np.float64) if "peak_flops" in rows else \
        np.full(len(rows), peaks.flops)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(seconds > 0, flops / seconds, 0.0)
        model_rate = np.where(seconds > 0, model / seconds, 0.0)
        bandwidth = np.where(seconds > 0, moved / seconds, 0.0)
        intensity = np.where(moved > 0, flops / moved, 0.0)
        flops_util = np.nan_to_num(rate / peak)
        hbm_util = np.nan_to_num(bandwidth / peaks.hbm_bandwidth) \
            if np.isfinite(peaks.hbm_bandwidth) else np.zeros(len(rows))
    bound = np.full(len(rows), "Unknown", dtype=object)
    bound[flops_util > 0] = "Compute"
    bound[hbm_util > np.maximum(flops_util, 0)] = "HBM"
    return pd.DataFrame({"measured_flop_rate_gflops": rate / 1e9,
                         "model_flop_rate_gflops": model_rate / 1e9,
                         "measured_memory_bw_gbps": bandwidth / 1e9,
                         "operational_intensity": intensity, "bound_by": bound})


# ---- building ---------------------------------------------------------------------------------
def analyze_framework_op_stats(profile: Profile,
                               xla_cpu_ops: bool = True) -> FrameworkOpStatsAnalysis:
    """The framework op stats of an opened `Profile` (see the module doc)."""
    return profile.memo(("framework_op_stats", xla_cpu_ops),
                        lambda: _analyze(profile, xla_cpu_ops))


def _analyze(profile: Profile, xla_cpu_ops: bool) -> FrameworkOpStatsAnalysis:
    sides = first_present(profile, FORMATS).read(profile, xla_cpu_ops)
    return FrameworkOpStatsAnalysis(sides.device, sides.host, sides.device_total_ps,
                                    sides.host_total_ps, sides.peaks, sides.device_kind,
                                    profile.source)


def xspace_op_sides(profile: Profile, xla_cpu_ops: bool) -> OpSides:
    """XProf's two sides: device ops from the op profile, host ops from `/host:CPU` planes."""
    device, device_total, peaks, kind = _device_side(profile, xla_cpu_ops)
    per_host = [side for part in host_parts(profile, host_framework_ops) for side in part.part]
    host = combine_ops([ops for ops, _ in per_host])
    host_total = sum(total for _, total in per_host)
    if per_host:
        host = with_idle(host, host_total)
    return OpSides(device, host, device_total, host_total, peaks, kind)


def _any_profile(profile: Profile) -> bool:
    """XSpace's part answers every profile (sides without a plane have no rows)."""
    return True


def host_framework_ops(profile: Profile) -> list[tuple[pd.DataFrame, int]]:
    """One host's part (analysis/hosts.py): the framework ops of each of its `/host:CPU`
    planes with the plane's op time; `_combine` adds the hosts' up."""
    return [_host_side(profile, int(section)) for section in
            profile.sections.index[profile.sections["name"] == HOST_PLANE]]


def _device_side(profile: Profile, xla_cpu_ops: bool) -> tuple[pd.DataFrame, int, Peaks, str]:
    """Device ops by framework op, from the op profile's ops (XProf's device op metrics)."""
    try:
        analysis = analyze_op_profile(profile)
    except ProfileError:
        return empty_ops(), 0, Peaks(), ""
    kind = analysis.device.kind
    if kind == "CPU" and not xla_cpu_ops:
        return empty_ops(), 0, Peaks(), ""
    ops = analysis.ops
    # TPU ops carry the `tf_op` stat as written; on GPU and CPU the op profile has the HLO
    # metadata's op name, which XProf reads as `name:type` with the type left empty.
    suffix = "" if kind == "TPU" else ":"
    parsed = [parse_framework_op(f + suffix) if f else None
              for f in ops["framework_op"].astype(str).tolist()]
    frame = pd.DataFrame({
        "operation": [p.name if p else n for p, n in zip(parsed, ops["name"], strict=True)],
        "type": [(p.type or UNKNOWN_TYPE) if p else UNKNOWN_TYPE for p in parsed],
        "occurrences": ops["occurrences"].to_numpy(np.int64),
        "time_ps": ops["time_ps"].to_numpy(np.float64),
        "self_time_ps": ops["time_ps"].to_numpy(np.float64),
        "flops": np.nan_to_num(ops["flops"].to_numpy(np.float64)),
        "model_flops": np.nan_to_num(ops["model_flops"].to_numpy(np.float64)),
        "bytes_accessed": np.nan_to_num(ops["bytes_accessed"].to_numpy(np.float64)),
        "eager": False,
    })
    grouped = by_operation(frame, occurrences="max")
    device = analysis.device
    peaks = Peaks(device.peak_flops, device.peak_bandwidth)
    return with_idle(grouped, analysis.total_time_ps), analysis.total_time_ps, peaks, kind


def _host_side(profile: Profile, section: int) -> tuple[pd.DataFrame, int]:
    """Host framework ops of one `/host:CPU` plane and the plane's op time (see module doc)."""
    tracks = profile.built_tracks[profile.built_tracks["section_id"] == section]
    line = _line_numbers(tracks)
    events = track_events(profile, tracks.index.to_numpy())
    events = events[~profile.derived[events]]
    named = _framework_op_rows(profile)
    by_name = events[named[profile.meta[events]] >= 0]
    by_stat, stat_values = stat_hits(profile, events, "tf_op")
    keep = np.array([bool(str(v)) for v in stat_values.tolist()], bool)
    by_stat, stat_values = by_stat[keep], stat_values[keep]
    if not by_name.shape[0] and not by_stat.shape[0]:
        return empty_ops(), 0
    parsed_stat = [parse_framework_op(str(v)) for v in stat_values.tolist()]
    table = _framework_op_table(profile)
    row = named[profile.meta[by_name]]
    name = np.concatenate([table["name"][row], np.array([p.name for p in parsed_stat], object)])
    kind = np.concatenate([table["type"][row], np.array([p.type for p in parsed_stat], object)])
    ev = np.concatenate([by_name, by_stat])
    eager = np.zeros(ev.shape[0], bool)
    present, value = profile.stat_ints(by_name, "is_eager")
    eager[: by_name.shape[0]] = present & (value != 0)
    track_line = pd.Series(line, index=tracks.index)
    lines = track_line.loc[profile.track_of(ev)].to_numpy(np.int64)
    start = profile.start_ps[ev]
    end = start + profile.duration_ps[ev]
    order = np.lexsort((-end, start, lines))
    ev, lines, start, end = ev[order], lines[order], start[order], end[order]
    name, kind, eager = name[order], kind[order], eager[order]
    own = self_times(lines, start, end, end - start)
    frame = pd.DataFrame({"operation": name, "type": kind, "occurrences": 1,
                          "time_ps": (end - start).astype(np.float64),
                          "self_time_ps": own.astype(np.float64), "flops": 0.0,
                          "model_flops": 0.0, "bytes_accessed": 0.0, "eager": eager})
    ops = by_operation(frame)
    spans = pd.DataFrame({"line": lines, "start": start, "end": end,
                          "own": own}).groupby("line").agg(
        start=("start", "min"), end=("end", "max"), own=("own", "sum"))
    total = int(np.maximum(spans["end"] - spans["start"], spans["own"]).sum())
    return ops, total


def _line_numbers(tracks: pd.DataFrame) -> np.ndarray:
    """One number per XLine: a line's hidden events (allocator records) sit on their own track
    right after the line's slices; they are the same line."""
    kinds = tracks["kind"].to_numpy()
    names = tracks["name"].to_numpy()
    same = np.zeros(len(tracks), bool)
    same[1:] = (kinds[1:] == "hidden") & (kinds[:-1] != "hidden") & (names[1:] == names[:-1])
    return np.cumsum(~same) - 1


def _framework_op_table(profile: Profile) -> dict[str, np.ndarray]:
    """Per metadata row: the framework op its name parses as (name, type, whether it is one)."""
    def build() -> dict[str, np.ndarray]:
        parsed = [parse_framework_op(str(n)) for n in profile.metadata["name"].tolist()]
        return {"name": np.array([p.name for p in parsed], object),
                "type": np.array([p.type for p in parsed], object),
                "is_op": np.array([p.category != "unknown" for p in parsed], bool)}
    return profile.memo(("framework_op_names",), build)


def _framework_op_rows(profile: Profile) -> np.ndarray:
    """Per metadata row: its own row where its name is a framework op, else -1."""
    table = _framework_op_table(profile)
    return np.where(table["is_op"], np.arange(table["is_op"].shape[0]), -1)


def framework_op_stats_available(profile: Profile) -> bool:
    """Whether the profile has framework ops on any side (the suite's tab and XProf's list)."""
    analysis = analyze_framework_op_stats(profile)
    return bool((analysis.device["type"] != IDLE).any() or (analysis.host["type"] != IDLE).any())


FORMATS = (FRAMEWORK_OP_STATS, FormatPart("xspace", _any_profile, xspace_op_sides))
"""A PyTorch trace's ops where the profile has them, else XProf's (analysis/parts.py)."""
