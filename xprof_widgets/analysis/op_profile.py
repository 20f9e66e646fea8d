"""Op profile: where device time goes, op by op, against what the device could do.

Follows XProf's op profile (xprof/convert/op_profile_builder.cc, xplane_to_op_metrics_db.cc):

- TPU: the events of each core's `XLA Ops` line, timed by their `device_offset_ps` /
  `device_duration_ps` stats when present; an op is (program id, op name), its events summed
  over every core; FLOPs, bytes and category come from the op's metadata stats (`flops`,
  `model_flops`, `bytes_accessed`, `memory_access_breakdown`, `hlo_category`) times its
  occurrences; events with `symbol_id` 0 (the program itself) are left out;
- a core's time is the span from its first op (or step) to its last; idle = that span minus the
  time covered by top-level ops; an op that contains other ops (nested on the line) is left out
  of the table, its children are in it;
- FLOPS utilization = min(1, FLOPs / time / peak FLOP/s per core); bandwidth utilization = HBM
  bytes read + written (from `memory_access_breakdown`, else `bytes_accessed`) / time / peak
  HBM bandwidth, capped at 1; peaks from the device plane (`peak_teraflops_per_second`,
  `peak_hbm_bw_gigabytes_per_second`);
- wasted time = time share x (1 - max(FLOPS utilization, bandwidth utilization)).

Where XProf has nothing, we go on:

- CPU (XProf's op profile is empty): host threads' events with `hlo_op` / `hlo_module` stats are
  the ops; a thread's time is the span of its ops; FLOPs and bytes come from the HLO proto
  (`hlo_cost`); no peak is known, so utilizations stay NaN unless `peak_tflops` / `peak_gbps`
  are given;
- GPU: kernels on `/device:GPU:N` lines with `hlo_op` stats; consecutive kernels of one op on a
  line are one occurrence (as XProf merges them); FLOPs and bytes from event stats when
  present, else from the HLO proto; peaks from the device capabilities (`clock_rate`,
  `core_count`, `compute_cap_major/minor`, `memory_bandwidth`); a device's time is the span of
  all its lines.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .._native.intervals import tally_op_line
from ..errors import ProfileError
from ..profile._wire import count_rows, range_max
from ..profile.framework import xla_advice
from ..profile.schema import MemoryAccessBreakdown
from ..profile.threads import each_balanced
from .hlo_cost import HloCosts, shape_padding
from .hosts import host_parts

PS_PER_US = 1_000_000
PS_PER_S = 1e12
_TPU_CORE = re.compile(r"^/device:TPU:\d+$")
_GPU_DEVICE = re.compile(r"^/device:GPU:\d+$")
_HBM, _READ, _WRITE = 1, 1, 2
IDLE = "IDLE"
GROUPINGS = ("program", "category", "provenance")
SORTS = ("time", "wasted_time", "flops_utilization")
_COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                "send", "recv")
_FORMATTING = ("data formatting", "copy", "copy-start", "copy-done", "transpose")

# Dense FLOPs per SM per clock cycle, the largest of the fp32/fp16 vector and matrix rates, by
# CUDA compute capability (NVIDIA architecture whitepapers; the same figures XProf uses).
GPU_FLOPS_PER_SM_CYCLE = {
    (10, 0): 8192, (9, 0): 4096, (8, 9): 1024, (8, 6): 1024, (8, 0): 2048, (7, 5): 1024,
    (7, 0): 1024, (6, 1): 256, (6, 0): 256, (5, 0): 256, (3, 0): 384, (2, 0): 64,
}


@dataclass(frozen=True)
class Device:
    """The hardware the ops ran on and the peaks utilization is measured against."""

    kind: str  # "TPU", "GPU" or "CPU"
    name: str  # e.g. "TPU v6 Lite"
    count: int  # cores (TPU), devices (GPU) or threads (CPU) whose time is counted
    peak_flops: float  # FLOP/s of one core; NaN when unknown
    peak_bandwidth: float  # HBM bytes/s of one core; NaN when unknown
    peak_source: str  # "profile", "argument" or "" (unknown)

    @property
    def has_peaks(self) -> bool:
        return bool(np.isfinite(self.peak_flops) and np.isfinite(self.peak_bandwidth))

    @property
    def ridge_point(self) -> float:
        """FLOPs per byte where the roofline turns from memory-bound to compute-bound."""
        return self.peak_flops / self.peak_bandwidth if self.has_peaks else math.nan


@dataclass
class _Collected:
    """Ops gathered from one kind of source, before derived columns."""

    ops: pd.DataFrame
    device: Device
    total_time_ps: int
    busy_time_ps: int
    read: str
    hlo: dict[int, HloCosts] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    parents: list[tuple[int, str]] = field(default_factory=list)  # (program id, name) left out


OP_COLUMNS = [
    "program", "program_id", "name", "category", "framework_op", "occurrences", "time_us",
    "avg_time_us", "time_share", "flops", "model_flops", "bytes_accessed", "hbm_bytes",
    "flop_rate", "bandwidth_gbps", "arithmetic_intensity", "flops_utilization",
    "bandwidth_utilization", "bound_by", "wasted_time_share", "expression", "shape", "source",
    "source_stack", "deduplicated_name", "devices",
]


class OpProfileAnalysis:
    """The op table of a profile with the device it ran on; see `analyze_op_profile`."""

    def __init__(self, collected: _Collected, source: str):
        self.source = source
        self.device = collected.device
        self.total_time_ps = int(collected.total_time_ps)
        self.idle_time_ps = int(max(0, collected.total_time_ps - collected.busy_time_ps))
        self.read = collected.read
        self.notes = collected.notes
        self._hlo = collected.hlo
        self.ops = _derive(collected.ops, self.device, self.total_time_ps)

    # ---- pandas face --------------------------------------------------------------------------
    def to_dataframe(self) -> pd.DataFrame:
        """One row per op (program, name), sorted by time; real units in the column names."""
        return self.ops[OP_COLUMNS].sort_values("time_us", ascending=False).reset_index(drop=True)

    def overview(self) -> dict[str, Any]:
        """Device, total and idle time, overall utilization against the device peaks."""
        ops = self.ops
        # Rates over the time the device was busy, idle excluded, as XProf's overview.
        busy_s = (self.total_time_ps - self.idle_time_ps) / PS_PER_S
        flops = float(np.nansum(ops["flops"]))
        hbm = float(np.nansum(ops["hbm_bytes"]))
        rate = flops / busy_s if busy_s > 0 else math.nan
        bandwidth = hbm / busy_s if busy_s > 0 else math.nan
        return {
            "device_kind": self.device.kind,
            "device_type": self.device.name,
            "devices": self.device.count,
            "peak_tflops": self.device.peak_flops / 1e12,
            "peak_gbps": self.device.peak_bandwidth / 1e9,
            "peak_source": self.device.peak_source,
            "total_time_us": self.total_time_ps / PS_PER_US,
            "idle_time_us": self.idle_time_ps / PS_PER_US,
            "idle_share": self.idle_time_ps / self.total_time_ps if self.total_time_ps else 0.0,
            "flops_utilization": _cap(rate / self.device.peak_flops),
            "bandwidth_utilization": _cap(bandwidth / self.device.peak_bandwidth),
            "flop_rate": rate,
            "ops": len(ops),
            "read": self.read,
        }

    # ---- grouped table ------------------------------------------------------------------------
    def table(self, group_by: str = "category", sort_by: str = "time", ops_per_group: int = 10,
              top_fraction: float | None = None, exclude_idle: bool = False,
              name_filter: str | None = None) -> pd.DataFrame:
        """The op table as rows of a tree: groups, their top ops, in display order.

        Columns: row, parent (row of the enclosing group, -1 at the top), level, kind ("group",
        "op" or "idle"), label, op (row of `ops`, -1 for groups), the summed metrics, the
        utilizations recomputed from the sums, `time_share` of the total (of the busy time
        with `exclude_idle`) and `cumulative_share` within the parent, plus `children` (ops
        under a group before the cut) and `fused` (whether an op is a fusion to expand).
        """
        if group_by not in GROUPINGS:
            raise ValueError(f"group_by must be one of {GROUPINGS}, not {group_by!r}")
        if sort_by not in SORTS:
            raise ValueError(f"sort_by must be one of {SORTS}, not {sort_by!r}")
        ops = self.ops
        if name_filter:
            try:
                pattern = re.compile(name_filter)
            except re.error as exc:
                raise ValueError(f"name filter {name_filter!r} is not a regular expression: "
                                 f"{exc}") from None
            hay = ops["name"] + "\n" + ops["framework_op"] + "\n" + ops["category"]
            ops = ops[hay.map(lambda s: bool(pattern.search(s))).to_numpy(bool)]
        denominator = self.total_time_ps - (self.idle_time_ps if exclude_idle else 0)
        levels = {"program": ["program", "category"], "category": ["category"],
                  "provenance": ["framework_group"]}[group_by]
        rows: list[dict] = []
        self._add_groups(rows, ops, levels, -1, 0, sort_by, ops_per_group, top_fraction,
                         denominator)
        if not exclude_idle and self.idle_time_ps and not name_filter:
            rows.append(self._idle_row(denominator))
        table = pd.DataFrame(rows)
        if table.empty:
            return table
        table["row"] = np.arange(len(table))
        table["parent"] = table["parent_key"].map(
            {k: r for k, r in zip(table["key"], table["row"], strict=True)}).fillna(-1).astype(int)
        table["cumulative_share"] = table.groupby("parent")["time_share"].cumsum()
        return table.drop(columns=["key", "parent_key"])

    def _add_groups(self, rows: list, ops: pd.DataFrame, levels: list[str], parent: Any,
                    level: int, sort_by: str, ops_per_group: int, top_fraction: float | None,
                    denominator: int) -> None:
        column = levels[0]
        groups = list(ops.groupby(column, sort=False, observed=True))
        metrics = [self._summary(part, denominator) for _, part in groups]
        order = sorted(range(len(groups)), key=lambda k: -_sort_value(metrics[k], sort_by))
        for k in order:
            name, part = groups[k]
            key = (parent, column, name)
            rows.append({"key": key, "parent_key": parent, "level": level, "kind": "group",
                         "label": str(name), "op": -1, "children": len(part), "fused": False,
                         **metrics[k]})
            if len(levels) > 1:
                self._add_groups(rows, part, levels[1:], key, level + 1, sort_by,
                                 ops_per_group, top_fraction, denominator)
                continue
            shown = _cut(part, ops_per_group, top_fraction)
            shown = shown.iloc[np.argsort(-_sort_column(shown, sort_by), kind="stable")]
            for index, op in shown.iterrows():
                rows.append({"key": (key, index), "parent_key": key, "level": level + 1,
                             "kind": "op", "label": op["name"], "op": int(index), "children": 0,
                             "fused": bool(op["fused"]),
                             **_metrics_of(op, self.device, denominator)})

    def _summary(self, part: pd.DataFrame, denominator: int) -> dict:
        time_ps = float(part["time_ps"].sum())
        sums = {"time_ps": time_ps, "occurrences": int(part["occurrences"].sum()),
                "flops": float(np.nansum(part["flops"])),
                "hbm_bytes": float(np.nansum(part["hbm_bytes"])),
                "framework_op": "", "known_cost": bool(part["known_cost"].any())}
        return _metrics_of(sums, self.device, denominator)

    def _idle_row(self, denominator: int) -> dict:
        sums = {"time_ps": float(self.idle_time_ps), "occurrences": 0, "flops": 0.0,
                "hbm_bytes": 0.0, "framework_op": "", "known_cost": True}
        return {"key": IDLE, "parent_key": -1, "level": 0, "kind": "idle", "label": IDLE,
                "op": -1, "children": 0, "fused": False,
                **_metrics_of(sums, self.device, denominator)}

    # ---- one op -------------------------------------------------------------------------------
    def details(self, op: int) -> dict[str, Any]:
        """Everything the detail card shows about one op (a row of `ops`)."""
        row = self.ops.loc[op]
        padding = shape_padding(row["shape"]) if row["shape"] else None
        return {
            "name": row["name"], "category": row["category"], "program": row["program"],
            "expression": row["expression"], "framework_op": row["framework_op"],
            "flops_utilization": _none_if_nan(row["flops_utilization"]),
            "bandwidth_utilization": _none_if_nan(row["bandwidth_utilization"]),
            "flop_rate": _none_if_nan(row["flop_rate"]),
            "bandwidth_gbps": _none_if_nan(row["bandwidth_gbps"]),
            "arithmetic_intensity": _none_if_nan(row["arithmetic_intensity"]),
            "bound_by": row["bound_by"], "time_us": row["time_us"],
            "span_time_us": float(row["span_time_ps"]) / PS_PER_US,
            "occurrences": int(row["occurrences"]), "avg_time_us": row["avg_time_us"],
            "shape": row["shape"],
            "padded_shape": padding.padded_dims if padding else "",
            "padding_bytes": padding.padding_bytes if padding else 0,
            "unpadded_bytes": padding.unpadded_bytes if padding else 0,
            "source": row["source"], "source_stack": row["source_stack"],
            "has_peaks": self.device.has_peaks,
        }

    def fused_ops(self, op: int) -> pd.DataFrame:
        """The instructions inside a fusion op, from its module's HLO proto (empty otherwise)."""
        row = self.ops.loc[op]
        costs = self._costs(int(row["program_id"]))
        instruction = costs.instruction(row["name"]) if costs is not None else None
        if instruction is None:
            return pd.DataFrame(columns=["name", "opcode", "category", "flops", "shape",
                                         "expression", "framework_op", "depth"])
        return pd.DataFrame([vars(f) for f in costs.fused_ops(instruction)],
                            columns=["name", "opcode", "category", "flops", "shape",
                                     "expression", "framework_op", "depth"])

    def _costs(self, program_id: int) -> HloCosts | None:
        return self._hlo.get(program_id)

    # ---- words --------------------------------------------------------------------------------
    def suggestions(self, limit: int = 5) -> list[str]:
        """Plain sentences about where time goes, naming the ops to look at first."""
        return suggest(self, limit)


# ---- building ---------------------------------------------------------------------------------
def analyze_op_profile(profile: Any, peak_tflops: float | None = None,
                       peak_gbps: float | None = None) -> OpProfileAnalysis:
    """The op profile of an opened `Profile`: TPU, GPU or CPU, whichever the profile holds.

    `peak_tflops` (TFLOP/s of one core/device) and `peak_gbps` (GB/s of its memory) replace the
    peaks the profile states, or supply them where it states none (CPU).
    """
    return profile.memo(("op_profile", peak_tflops, peak_gbps),
                        lambda: _analyze(profile, peak_tflops, peak_gbps))


def _analyze(profile: Any, peak_tflops: float | None,
             peak_gbps: float | None) -> OpProfileAnalysis:
    parts = [p.part for p in host_parts(profile, op_profile_part) if p.part is not None]
    if not parts:
        raise ProfileError(_nothing_found(profile))
    collected = combine_op_parts(parts)
    collected.hlo = _LazyCosts(profile)
    collected.device = _with_user_peaks(collected.device, peak_tflops, peak_gbps)
    return OpProfileAnalysis(collected, profile.source)


def op_profile_part(profile: Any) -> _Collected | None:
    """One host's part of the op profile: its ops with raw sums (time, occurrences, FLOPs,
    bytes, cores), its device, total and busy time; None when it ran no XLA op. It carries no
    HLO (the combined analysis reads the protos it needs on demand)."""
    collected = _collect_tpu(profile) or _collect_gpu(profile) or _collect_host(profile)
    if collected is not None:
        collected.hlo = {}
    return collected


_SUMMED = ("time_ps", "occurrences", "devices", "flops", "model_flops", "bytes_accessed",
           "hbm_bytes", "log_time_sum", "log_time_sq_sum", "span_time_ps")


def combine_op_parts(parts: list[_Collected]) -> _Collected:
    """The hosts' parts as one: an op is (program id, name) over every host, its sums added (as
    XProf combines per-host op metrics); an op that holds others on any host is left out;
    devices, total and busy time add up."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    ops = pd.concat([p.ops for p in parts], ignore_index=True)
    left_out = {(int(pid), str(name)) for p in parts for pid, name in p.parents}
    if left_out:
        keys = zip(ops["program_id"].tolist(), ops["name"].tolist(), strict=True)
        ops = ops[[(int(pid), str(name)) not in left_out for pid, name in keys]]
    groups = ops.groupby(["program_id", "name"], sort=False)
    combined = groups[[c for c in ops.columns if c not in _SUMMED
                       and c not in ("program_id", "name", "known_cost")]].first()
    combined = combined.join(groups[list(_SUMMED)].sum(min_count=1))
    combined["known_cost"] = groups["known_cost"].all()
    combined = combined.reset_index()[list(first.ops.columns)]
    combined["occurrences"] = combined["occurrences"].astype(np.int64)
    combined["devices"] = combined["devices"].astype(np.int64)
    notes = list(dict.fromkeys(n for p in parts for n in p.notes))
    device = replace(first.device, count=sum(p.device.count for p in parts))
    return _Collected(
        ops=combined, device=device, total_time_ps=sum(p.total_time_ps for p in parts),
        busy_time_ps=sum(p.busy_time_ps for p in parts),
        read=f"{len(parts)} hosts, the first: {first.read}", notes=notes,
        parents=sorted(left_out))


def _with_user_peaks(device: Device, peak_tflops: float | None,
                     peak_gbps: float | None) -> Device:
    changes: dict[str, Any] = {}
    if peak_tflops is not None:
        changes["peak_flops"] = float(peak_tflops) * 1e12
    if peak_gbps is not None:
        changes["peak_bandwidth"] = float(peak_gbps) * 1e9
    if changes:
        changes["peak_source"] = "argument"
    return replace(device, **changes) if changes else device


def _nothing_found(profile: Any) -> str:
    sections = sorted(set(profile.sections["name"]))
    tracks = profile.built_tracks
    lines = sorted({f"{s}/{n}" for s, n in zip(tracks["section"], tracks["name"], strict=True)
                    if s.startswith("/device")})[:8]
    return (f"{profile.source}: no XLA ops to profile. Read planes {', '.join(sections) or 'none'}"
            f"{' and device lines ' + ', '.join(lines) if lines else ''}; found no `XLA Ops` "
            "line on a TPU plane, no GPU kernel and no host thread event with an `hlo_op` stat. "
            f"The op profile needs XLA programs running. {xla_advice(profile)}")


def _int_stat(profile: Any, events: np.ndarray, name: str, fallback: np.ndarray) -> np.ndarray:
    """A numeric per-event stat as int64, `fallback` where an event lacks it."""
    present, values = profile.stat_ints(events, name)
    if not present.any():
        return fallback
    return np.where(present, values.view(np.int64), fallback)  # no masked copies of a line


def _tracks_where(profile: Any, section: re.Pattern, names: Iterable[str] | None) -> pd.DataFrame:
    tracks = profile.built_tracks
    mask = tracks["section"].map(lambda s: bool(section.match(s))).to_numpy(bool)
    if names is not None:
        mask = mask & tracks["name"].isin(list(names)).to_numpy(bool)
    return tracks[mask]


def _ranges(tracks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Global event indices of the tracks' events and the track of each."""
    first = tracks["first_event"].to_numpy(np.int64)
    end = tracks["end_event"].to_numpy(np.int64)
    parts = [np.arange(a, b, dtype=np.int64) for a, b in zip(first, end, strict=True)]
    events = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return events, np.repeat(tracks.index.to_numpy(np.int64), end - first)


def _nesting(start: np.ndarray, end: np.ndarray
             ) -> tuple[np.ndarray | slice, np.ndarray, np.ndarray]:
    """Events of one line: which lie inside an earlier one, and which hold another.

    Returns (order, contained, holds), the masks following `order` (by start, longest first).
    Inside is XProf's inclusion: begin >= the holder's begin and end <= its end; the holder is
    the outermost one. Lines are mostly in order already, and then `order` is `slice(None)`:
    nothing is sorted or copied (an op line holds millions of events).
    """
    later, same = start[1:] > start[:-1], start[1:] == start[:-1]
    same &= end[1:] <= end[:-1]
    later |= same
    del same
    order: np.ndarray | slice = slice(None)
    if not later.all():
        order = np.lexsort((start - end, start))
    del later
    e = end[order]
    run = np.maximum.accumulate(e) if len(e) else e
    contained = np.zeros(len(e), bool)
    np.greater_equal(run[:-1], e[1:], out=contained[1:])
    holds = np.zeros(len(e), bool)
    if contained.any():
        at = np.maximum.accumulate(np.where(e == run, np.arange(len(e)), 0))
        holds[at[:-1][contained[1:]]] = True
    return order, contained, holds


def _nesting_by_line(start: np.ndarray, end: np.ndarray,
                     line: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_nesting` over events grouped by line (as `_ranges` lists them), in global positions."""
    bounds = np.r_[0, np.flatnonzero(np.diff(line)) + 1, len(line)]
    parts = [_nesting(start[lo:hi], end[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
    parts = [(np.arange(hi - lo)[o], c, h) for (o, c, h), (lo, hi) in
             zip(parts, itertools.pairwise(bounds), strict=True)]
    if not parts:
        empty = np.empty(0, np.int64)
        return empty, empty.astype(bool), empty.astype(bool)
    order = np.concatenate([o + lo for (o, _, _), lo in zip(parts, bounds[:-1], strict=True)])
    return (order, np.concatenate([c for _, c, _ in parts]),
            np.concatenate([h for _, _, h in parts]))


def _rows_named(profile: Any, tracks: pd.DataFrame) -> np.ndarray:
    """How many of the tracks' events name each metadata row, the tracks counted on worker
    threads."""
    n_rows = len(profile.display_names)

    def count(track: Any) -> np.ndarray:
        counts = np.zeros(n_rows, np.int64)
        count_rows(profile.meta[track.first_event:track.end_event], counts)
        return counts

    rows = list(tracks.itertuples())
    return sum(each_balanced(count, rows, [t.n_events for t in rows]), np.zeros(n_rows, np.int64))


def _has_stat(profile: Any, tracks: pd.DataFrame, name: str, probes: int = 8) -> bool:
    """Whether the tracks' events carry a stat, judged from the first few events of each."""
    for first, end in zip(tracks["first_event"], tracks["end_event"], strict=True):
        for event in range(int(first), min(int(end), int(first) + probes)):
            if name in profile.event_stats(event):
                return True
    return False


def _collect_tpu(profile: Any) -> _Collected | None:
    op_tracks = _tracks_where(profile, _TPU_CORE, ["XLA Ops"])
    if op_tracks.empty:
        return None
    step_tracks = _tracks_where(profile, _TPU_CORE, ["Steps"])
    timed = _has_stat(profile, op_tracks, "device_duration_ps")
    op_of_meta, ops = _tpu_ops(profile, np.flatnonzero(_rows_named(profile, op_tracks)))
    n_ops = len(ops)
    op_time = np.zeros(n_ops + 1)
    op_count = np.zeros(n_ops + 1, np.int64)
    op_cores = np.zeros(n_ops + 1, np.int64)
    op_logs = np.zeros((3, n_ops + 1))  # log-time moments, then the events' trace spans
    parents = np.zeros(n_ops + 1, bool)
    busy = 0
    spans: dict[int, list[int]] = {}
    lines = [*op_tracks.itertuples(), *step_tracks.itertuples()]
    # Lines on worker threads, their tallies added in line order: the sums one thread makes.
    for line in each_balanced(partial(_tally_line, profile, timed, op_of_meta, n_ops + 1), lines,
                              [t.end_event - t.first_event for t in lines]):
        if line is None:
            continue
        span = spans.setdefault(line.section_id, [line.lo, line.hi])
        span[0], span[1] = min(span[0], line.lo), max(span[1], line.hi)
        if line.times is None:
            continue
        busy += line.busy
        op_time += line.times[0]
        op_count += line.counts
        op_cores += line.counts > 0
        op_logs += line.times[1:]
        parents |= line.parents
    total = sum(last - first for first, last in spans.values())
    ops["time_ps"] = op_time[1:]
    ops["occurrences"] = op_count[1:]
    ops["devices"] = op_cores[1:]
    ops["log_time_sum"], ops["log_time_sq_sum"] = op_logs[0, 1:], op_logs[1, 1:]
    ops["span_time_ps"] = op_logs[2, 1:]
    for column in ("flops", "model_flops", "bytes_accessed", "hbm_bytes"):
        ops[column] = ops[column] * ops["occurrences"]
    notes = []
    parent_ops = np.flatnonzero(parents[1:])
    if len(parent_ops):
        notes.append(f"{len(parent_ops)} ops contain other ops on the XLA Ops line; they are "
                     "left out of the table and the ops inside them are in it (as XProf does).")
    parent_keys = list(zip(ops["program_id"].iloc[parent_ops], ops["name"].iloc[parent_ops],
                           strict=True))
    ops = ops.drop(index=parent_ops)
    ops = ops[ops["occurrences"] > 0]
    if not ops["known_cost"].all():
        notes.append(f"{int((~ops['known_cost']).sum())} custom-call kernels (Pallas, Mosaic) "
                     "have no cost model: XLA counts no FLOPs or bytes for them, so their "
                     "utilization is not known (Kernel Stats lists them).")
    stats = _first_stats(profile, op_tracks)
    peak_flops = float(stats.get("peak_teraflops_per_second", 0) or 0) * 1e12
    peak_bw = float(stats.get("peak_hbm_bw_gigabytes_per_second", 0) or 0) * 1e9
    device = Device(kind="TPU", name=str(stats.get("device_type_string") or "TPU"),
                    count=int(op_tracks["section"].nunique()),
                    peak_flops=peak_flops or math.nan, peak_bandwidth=peak_bw or math.nan,
                    peak_source="profile" if peak_flops and peak_bw else "")
    events = int(op_tracks["n_events"].sum())
    read = (f"`XLA Ops` lines of {device.count} TPU core(s): {events:,} op events in "
            f"{len(ops):,} ops")
    return _Collected(ops=ops, device=device, total_time_ps=int(total), busy_time_ps=busy,
                      read=read, hlo=_LazyCosts(profile), notes=notes, parents=parent_keys)


@dataclass
class _LineTally:
    """One line's extent on its core's clock and, for an `XLA Ops` line, its ops' tallies
    (indexed by op + 1): time, log-time moments and trace span (`times`), counts, which ops
    hold others (`parents`) and its busy time."""

    section_id: int
    lo: int
    hi: int
    times: np.ndarray | None = None
    counts: np.ndarray | None = None
    parents: np.ndarray | None = None
    busy: int = 0


def _tally_line(profile: Any, timed: bool, op_of_meta: np.ndarray, n: int,
                track: Any) -> _LineTally | None:
    """One line's tally (None when empty; `n` ops + 1): its extent and, for an `XLA Ops` line,
    its ops' times, counts, log-time moments, trace spans (the events' own durations, which
    the device times replace when timed) and parents. One compiled pass over the line
    (`tally_op_line`, without the GIL): no column-sized temporaries but the device times."""
    first, last = int(track.first_event), int(track.end_event)
    start, duration = _device_times(profile, first, last, timed)
    if not len(start):
        return None
    whole = np.array([0, len(start)], np.int64)
    lo, hi = int(start.min()), int(range_max(start, duration, whole[:1], whole[1:])[0])
    tally = _LineTally(int(track.section_id), lo, hi)
    if track.name != "XLA Ops":
        return tally
    tally.times = np.zeros((4, n))  # time, log sum, log square sum, trace span
    tally.counts = np.zeros(n, np.int64)
    tally.parents = np.zeros(n, bool)
    tally.busy = int(tally_op_line(
        start, duration, profile.duration_ps[first:last], profile.meta[first:last], op_of_meta,
        _nesting_order(start, duration), tally.times[0], tally.counts, tally.times[1],
        tally.times[2], tally.times[3], tally.parents.view(np.uint8)))
    return tally


def _nesting_order(start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """The order `_nesting` visits a line's events in (by start, longest first); empty when
    they are in it already, as op lines mostly are (then nothing is sorted or copied)."""
    if not len(start) or (start[1:] > start[:-1]).all():
        return np.empty(0, np.int64)
    end = start + duration
    later = (start[1:] > start[:-1]) | ((start[1:] == start[:-1]) & (end[1:] <= end[:-1]))
    return np.empty(0, np.int64) if later.all() else np.lexsort((start - end, start))


def _device_times(profile: Any, first: int, end: int, timed: bool) -> tuple[np.ndarray, ...]:
    """Start and duration of a line's events: the device clock's when the events carry it."""
    start, duration = profile.start_ps[first:end], profile.duration_ps[first:end]
    if not timed:
        return start, duration
    events = np.arange(first, end, dtype=np.int64)
    # Device offsets have their own origin; only differences on one core are used.
    return (_int_stat(profile, events, "device_offset_ps", start),
            _int_stat(profile, events, "device_duration_ps", duration))


def _tpu_ops(profile: Any, metas: np.ndarray) -> tuple[np.ndarray, pd.DataFrame]:
    """Op of each metadata row (-1 where not an op) and one row per (program id, name)."""
    names = profile.metadata["name"].to_numpy()
    display = profile.display_names
    stats = profile.metadata["stats"].to_numpy()
    op_of_meta = np.full(len(names), -1, np.int32)
    index: dict[tuple[int, str], int] = {}
    rows: list[dict] = []
    programs = _program_names(profile)
    for m in metas.tolist():
        st = stats[m]
        if st.get("symbol_id", 1) == 0:  # the program itself, not an op
            continue
        pid = int(st.get("program_id", 0) or 0) & (2**64 - 1)
        key = (pid, display[m])
        if key not in index:
            index[key] = len(rows)
            hbm = _hbm_bytes(st.get("memory_access_breakdown"))
            flops = float(st.get("flops", 0) or 0)
            model = float(st.get("model_flops", 0) or 0)
            bytes_accessed = float(st.get("bytes_accessed", 0) or 0)
            source = str(st.get("source", "") or "")
            rows.append({
                "program": programs.get(pid, f"program {pid}"), "program_id": pid,
                "name": display[m], "category": str(st.get("hlo_category") or "unknown"),
                "framework_op": str(st.get("tf_op", "") or ""),
                "flops": flops, "model_flops": model or flops,
                "bytes_accessed": bytes_accessed,
                "hbm_bytes": bytes_accessed if hbm is None else float(hbm),
                "expression": names[m], "shape": str(st.get("shape_with_layout", "") or ""),
                "source": source, "source_stack": str(st.get("source_stack", "") or ""),
                "deduplicated_name": str(st.get("deduplicated_name", "") or ""),
                "known_cost": not (is_custom_call(str(st.get("hlo_category", "")), names[m])
                                   and not flops and not bytes_accessed),
                "fused": "fusion" in str(st.get("hlo_category", "")),
            })
        op_of_meta[m] = index[key]
    return op_of_meta, pd.DataFrame(rows, columns=_RAW_COLUMNS)


def is_custom_call(category: str, expression: str) -> bool:
    """Whether an HLO op is a custom call (Pallas / Mosaic `tpu_custom_call` kernels among
    them): XLA has no cost model for it, so unless the runtime states its FLOPs and bytes, its
    utilization is unknown (XProf shows 0%)."""
    return category == "custom-call" or " custom-call(" in expression


_RAW_COLUMNS = ["program", "program_id", "name", "category", "framework_op", "flops",
                "model_flops", "bytes_accessed", "hbm_bytes", "expression", "shape", "source",
                "source_stack", "deduplicated_name", "known_cost", "fused"]


def _hbm_bytes(breakdown: Any) -> int | None:
    """HBM bytes read + written from a serialized MemoryAccessBreakdown; None when absent."""
    if breakdown is None:
        return None
    accessed = MemoryAccessBreakdown.FromString(bytes(breakdown)).memory_accessed
    return sum(m.bytes_accessed for m in accessed
               if m.memory_space == _HBM and m.operation_type in (_READ, _WRITE))


def _program_names(profile: Any) -> dict[int, str]:
    """Program id -> module name, from the HLO protos and the `XLA Modules` line names."""
    names: dict[int, str] = {}
    tracks = profile.built_tracks
    modules = tracks[tracks["name"] == "XLA Modules"]
    if len(modules):
        metas = np.unique(profile.meta[_ranges(modules)[0]])
        for text in profile.metadata["name"].to_numpy()[metas]:
            found = re.match(r"^(.*)\((\d+)\)$", str(text))
            if found:
                names[int(found.group(2)) & (2**64 - 1)] = found.group(1)
    for pid, name in zip(profile.hlo_modules["program_id"], profile.hlo_modules["name"],
                         strict=True):
        names[int(pid) & (2**64 - 1)] = name
    return names


def _first_stats(profile: Any, tracks: pd.DataFrame) -> dict:
    ids = tracks["section_id"].unique()
    return profile.sections["stats"].iat[int(ids[0])] if len(ids) else {}


class _LazyCosts(dict):
    """Program id -> HloCosts, decoding a module's HLO proto the first time it is asked for.

    Ops found by `hlo_op` stats (GPU, CPU) carry their module's own id, which need not be the
    id the profile files the proto under: an id not filed is looked for among every module's
    own ids, decoded once."""

    def __init__(self, profile: Any):
        super().__init__()
        self._profile = profile
        self._keys = {int(pid) & (2**64 - 1): int(pid) for pid in profile.hlo_modules["program_id"]}
        self._all_read = False

    def get(self, program_id: int, default: Any = None) -> Any:
        if program_id not in self and program_id in self._keys:
            self[program_id] = self._read(self._keys[program_id])
        elif program_id not in self and not self._all_read:
            self._all_read = True
            for pid in self._keys.values():
                costs = self._read(pid)
                self.setdefault(costs.program_id, costs)
        return super().get(program_id, default)

    def _read(self, pid: int) -> HloCosts:
        return HloCosts(self._profile.hlo_proto(pid), where=self._profile.source)


# ---- GPU and CPU: events named by hlo_op stats, costs from HLO --------------------------------
def _collect_gpu(profile: Any) -> _Collected | None:
    tracks = _tracks_where(profile, _GPU_DEVICE, None)
    found = _hlo_op_events(profile, tracks)
    if found is None:
        return None
    all_events, line, hlo_op, has = found
    section = profile.built_tracks["section_id"].to_numpy(np.int64)[line]
    start = profile.start_ps[all_events]
    total = _span_total(section, start, start + profile.duration_ps[all_events])
    names = np.array([str(v).split(",")[-1].strip() for v in hlo_op[has]], dtype=object)
    collected = _collect_named(profile, all_events[has], line[has], names, merge_runs=True,
                               total_time_ps=total, kind="GPU")
    collected.device = _gpu_device(_first_stats(profile, tracks), int(tracks["section"].nunique()))
    return collected


def _hlo_op_events(profile: Any, tracks: pd.DataFrame) -> tuple | None:
    """(events of the tracks, their lines, their `hlo_op` stat, which have one); None when
    no event names its HLO op."""
    if tracks.empty:
        return None
    events, line = _ranges(tracks)
    hlo_op = profile.stat_column(events, "hlo_op")
    has = pd.notna(hlo_op)
    return (events, line, hlo_op, has) if has.any() else None


def _span_total(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    """Sum over groups (devices, threads) of their last end minus their first start."""
    if not len(group):
        return 0
    frame = pd.DataFrame({"group": group, "start": start, "end": end}).groupby("group")
    return int((frame["end"].max() - frame["start"].min()).sum())


def _gpu_device(stats: dict, count: int) -> Device:
    clock_ghz = float(stats.get("clock_rate", 0) or 0) / 1e6  # kHz
    cores = int(stats.get("core_count", 0) or 0)
    major, minor = int(stats.get("compute_cap_major", 0) or 0), int(stats.get("compute_cap_minor",
                                                                              0) or 0)
    known = [cap for cap in GPU_FLOPS_PER_SM_CYCLE if cap <= (major, minor)]
    per_cycle = GPU_FLOPS_PER_SM_CYCLE[max(known)] if known and major else 0
    peak_flops = per_cycle * cores * clock_ghz * 1e9
    peak_bw = float(stats.get("memory_bandwidth", 0) or 0)
    vendor = str(stats.get("device_vendor") or "")
    name = str(stats.get("device_type_string") or stats.get("device_name") or
               (f"{vendor} GPU (compute capability {major}.{minor})".strip() if major else "GPU"))
    return Device(kind="GPU", name=name, count=count, peak_flops=peak_flops or math.nan,
                  peak_bandwidth=peak_bw or math.nan,
                  peak_source="profile" if peak_flops and peak_bw else "")


def _collect_host(profile: Any) -> _Collected | None:
    found = _hlo_op_events(profile,
                           profile.built_tracks[profile.built_tracks["section_kind"] == "host"])
    if found is None:
        return None
    all_events, all_lines, hlo_op, has = found
    events, line = all_events[has], all_lines[has]
    names = np.array([str(v) for v in hlo_op[has]], dtype=object)
    start = profile.start_ps[events]
    total = _span_total(line, start, start + profile.duration_ps[events])
    collected = _collect_named(profile, events, line, names, merge_runs=False,
                               total_time_ps=total, kind="CPU")
    collected.device = Device(kind="CPU", name="CPU", count=len(np.unique(line)),
                              peak_flops=math.nan, peak_bandwidth=math.nan, peak_source="")
    return collected


def _collect_named(profile: Any, events: np.ndarray, line: np.ndarray, names: np.ndarray,
                   merge_runs: bool, total_time_ps: int, kind: str) -> _Collected:
    """Ops from events that name their HLO op and module in stats (CPU threads, GPU kernels)."""
    module = profile.stat_column(events, "hlo_module")
    has_program, program = profile.stat_ints(events, "program_id")
    program = np.where(has_program, program.view(np.int64), -1)
    flops_stat = profile.stat_ints(events, "flops")
    bytes_stat = profile.stat_ints(events, "bytes_accessed")
    start = profile.start_ps[events]
    duration = profile.duration_ps[events]
    resolver = _ModuleResolver(profile)
    keys = pd.MultiIndex.from_arrays([
        pd.Series(module, dtype=object).fillna(""), program, pd.Series(names, dtype=object)])
    codes, uniques = pd.factorize(keys)
    order, contained, holds = _nesting_by_line(start, start + duration, line)
    busy = int(duration[order][~contained].sum())
    occurrence = np.ones(len(events), bool)
    if merge_runs:
        ordered = codes[order]
        same = np.zeros(len(order), bool)
        same[1:] = (ordered[1:] == ordered[:-1]) & (line[order][1:] == line[order][:-1])
        occurrence[order] = ~same
    time = np.bincount(codes, weights=duration, minlength=len(uniques))
    # XProf counts every kernel of an op as an occurrence (a convolution of two kernels run five
    # times: 10); a run of one op's kernels on a line is one record for the spread only.
    count = np.bincount(codes, minlength=len(uniques)).astype(np.int64)
    stat_flops = _summed(flops_stat, codes, len(uniques))
    stat_bytes = _summed(bytes_stat, codes, len(uniques))
    threads = np.bincount(np.unique(codes * (int(line.max()) + 1) + line) // (int(line.max()) + 1),
                          minlength=len(uniques)) if len(codes) else np.zeros(0, np.int64)
    rows = []
    for k, (module_name, pid, name) in enumerate(uniques):
        costs = resolver.costs(str(module_name), int(pid), str(name))
        rows.append(_named_row(costs, str(module_name), int(pid), str(name), int(count[k]),
                               stat_flops[k], stat_bytes[k]))
    ops = pd.DataFrame(rows, columns=_RAW_COLUMNS)
    ops["time_ps"] = time
    ops["span_time_ps"] = time  # the events are the ops' own spans
    ops["occurrences"] = count
    ops["devices"] = threads
    first = np.flatnonzero(occurrence[order])
    ops["log_time_sum"], ops["log_time_sq_sum"] = _log_moments(
        codes[order][first], np.add.reduceat(duration[order], first) if len(first) else duration,
        len(uniques))
    parents = np.unique(codes[order][holds])
    parent_keys = list(zip(ops["program_id"].iloc[parents], ops["name"].iloc[parents],
                           strict=True))
    notes = []
    if len(parents):
        notes.append(f"{len(parents)} ops contain other ops; they are left out of the table "
                     "and the ops inside them are in it.")
        ops = ops.drop(index=parents)
    if not all(ops["known_cost"]):
        missing = int((~ops["known_cost"]).sum())
        notes.append(f"{missing} ops have no FLOPs or bytes: the profile carries no HLO proto "
                     "for their module and no cost stats.")
    where = "GPU kernels" if kind == "GPU" else "host XLA op events"
    read = (f"{where} with `hlo_op` stats on {len(np.unique(line))} "
            f"{'stream line' if kind == 'GPU' else 'thread'}(s): {len(events):,} events in "
            f"{len(ops):,} ops")
    return _Collected(ops=ops, device=Device(kind, kind, 1, math.nan, math.nan, ""),
                      total_time_ps=total_time_ps, busy_time_ps=busy, read=read,
                      hlo=resolver.by_program, notes=notes, parents=parent_keys)


def _log_moments(codes: np.ndarray, duration_ps: np.ndarray, n: int) -> np.ndarray:
    """Per op, the sums of ln(1 + ps) and its square over the occurrences: their spread is
    what a comparison of two runs reads as noise (analysis/compare.py). Logs, because timing
    noise is multiplicative and heavy-tailed (a preempted occurrence takes many times longer).
    """
    logs = np.log1p(np.asarray(duration_ps, np.float64))
    return np.stack([np.bincount(codes, weights=logs, minlength=n),
                     np.bincount(codes, weights=logs * logs, minlength=n)])


def _summed(stat: tuple[np.ndarray, np.ndarray], codes: np.ndarray, n: int) -> np.ndarray:
    """Per-op sums of an integer stat (`Profile.stat_ints`); NaN for ops no event carries it."""
    present, values = stat
    out = np.full(n, np.nan)
    if present.any():
        sums = np.bincount(codes[present], weights=values[present].astype(np.float64),
                           minlength=n)
        seen = np.bincount(codes[present], minlength=n) > 0
        out[seen] = sums[seen]
    return out


def _named_row(costs: HloCosts | None, module: str, pid: int, name: str, count: int,
               stat_flops: float, stat_bytes: float) -> dict:
    instruction = costs.instruction(name) if costs is not None else None
    flops = bytes_accessed = math.nan
    if instruction is not None:
        flops = float(costs.flops(instruction)) * count
        bytes_accessed = float(costs.bytes_accessed(instruction)) * count
    if np.isfinite(stat_flops):
        flops = stat_flops
    if np.isfinite(stat_bytes):
        bytes_accessed = stat_bytes
    return {
        "program": module or (costs.name if costs else "unknown"),
        "program_id": costs.program_id if costs is not None else pid,
        "name": name,
        "category": costs.category(instruction) if instruction is not None else "unknown",
        "framework_op": instruction.metadata.op_name if instruction is not None else "",
        "flops": flops, "model_flops": flops, "bytes_accessed": bytes_accessed,
        "hbm_bytes": bytes_accessed,
        "expression": costs.expression(instruction) if instruction is not None else name,
        "shape": _shape_text(instruction), "source": costs.source(instruction)
        if instruction is not None else "", "source_stack": "", "deduplicated_name": "",
        "known_cost": bool(np.isfinite(flops) and np.isfinite(bytes_accessed)),
        "fused": instruction is not None and instruction.opcode == "fusion",
    }


def _shape_text(instruction: Any) -> str:
    if instruction is None:
        return ""
    from ..profile.hlo import shape_to_string

    return shape_to_string(instruction.shape)


class _ModuleResolver:
    """Finds the HLO module of an op: by program id (the module's own id or its metadata id),
    else by name, preferring among same-named modules one that holds the op."""

    def __init__(self, profile: Any):
        self._profile = profile
        self.by_program: dict[int, HloCosts] = {}
        self._all: list[HloCosts] | None = None
        self._cache: dict[tuple[str, int, str], HloCosts | None] = {}

    def _modules(self) -> list[HloCosts]:
        if self._all is None:
            self._all = []
            for pid in self._profile.hlo_modules["program_id"]:
                costs = HloCosts(self._profile.hlo_proto(int(pid)), where=self._profile.source)
                self._all.append(costs)
                self.by_program[costs.program_id] = costs
                self.by_program.setdefault(int(pid), costs)
        return self._all

    def costs(self, module: str, pid: int, name: str) -> HloCosts | None:
        key = (module, pid, name)
        if key not in self._cache:
            modules = self._modules()
            found = self.by_program.get(pid) if pid >= 0 else None
            if found is None or name not in found:
                named = [m for m in modules if m.name == module and name in m]
                found = named[0] if named else found
            self._cache[key] = found
        return self._cache[key]


# ---- derived columns --------------------------------------------------------------------------
def _derive(ops: pd.DataFrame, device: Device, total_time_ps: int) -> pd.DataFrame:
    ops = ops.reset_index(drop=True).copy()
    time_ps = ops["time_ps"].to_numpy(np.float64)
    seconds = time_ps / PS_PER_S
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = ops["flops"].to_numpy(np.float64) / seconds
        bandwidth = ops["hbm_bytes"].to_numpy(np.float64) / seconds
        intensity = ops["flops"].to_numpy(np.float64) / ops["hbm_bytes"].to_numpy(np.float64)
    rate[time_ps == 0] = np.nan
    bandwidth[time_ps == 0] = np.nan
    unknown = ~ops["known_cost"].to_numpy(bool)  # no cost model: neither 0 nor a rate
    rate[unknown], bandwidth[unknown], intensity[unknown] = np.nan, np.nan, np.nan
    intensity[~np.isfinite(intensity)] = np.nan
    flops_util = _cap(rate / device.peak_flops)
    bw_util = _cap(bandwidth / device.peak_bandwidth)
    share = time_ps / total_time_ps if total_time_ps else np.zeros(len(ops))
    ops["time_us"] = time_ps / PS_PER_US
    ops["avg_time_us"] = ops["time_us"] / ops["occurrences"].clip(lower=1)
    ops["time_share"] = share
    ops["flop_rate"] = rate
    ops["bandwidth_gbps"] = bandwidth / 1e9
    ops["arithmetic_intensity"] = intensity
    ops["flops_utilization"] = flops_util
    ops["bandwidth_utilization"] = bw_util
    ops["bound_by"] = _bound_by(flops_util, bw_util, ops["flops"].to_numpy(np.float64),
                                ops["hbm_bytes"].to_numpy(np.float64))
    ops["wasted_time_share"] = share * (1 - np.fmax(flops_util, bw_util))
    ops["framework_group"] = ops["framework_op"].where(ops["framework_op"] != "",
                                                       "(no framework op)")
    ops["program_id"] = ops["program_id"].astype(object)
    return ops


def _bound_by(flops_util: np.ndarray, bw_util: np.ndarray, flops: np.ndarray,
              hbm: np.ndarray) -> np.ndarray:
    out = np.full(len(flops_util), "", dtype=object)
    known = np.isfinite(flops_util) & np.isfinite(bw_util) & ((flops > 0) | (hbm > 0))
    out[known & (flops_util >= bw_util)] = "compute"
    out[known & (flops_util < bw_util)] = "memory"
    return out


def _cap(value: Any) -> Any:
    """Utilization capped at 1, as XProf caps it; NaN stays NaN (no peak known)."""
    return np.minimum(value, 1.0)


def _none_if_nan(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and not np.isfinite(value)) \
        else float(value)


def _metrics_of(row: Any, device: Device, denominator: int) -> dict:
    """Table metrics of an op or a group, utilizations recomputed from its sums."""
    time_ps = float(row["time_ps"])
    seconds = time_ps / PS_PER_S
    flops, hbm = float(row["flops"]), float(row["hbm_bytes"])
    known = bool(row["known_cost"])
    rate = flops / seconds if seconds and known else math.nan
    bandwidth = hbm / seconds if seconds and known else math.nan
    # np.minimum keeps NaN (no cost known) where the builtin min would say 1.0
    flops_util = float(np.minimum(1.0, rate / device.peak_flops)) if device.has_peaks \
        else math.nan
    bw_util = float(np.minimum(1.0, bandwidth / device.peak_bandwidth)) if device.has_peaks \
        else math.nan
    share = time_ps / denominator if denominator else 0.0
    bound = ""
    if np.isfinite(flops_util) and np.isfinite(bw_util) and (flops > 0 or hbm > 0):
        bound = "compute" if flops_util >= bw_util else "memory"
    occurrences = int(row["occurrences"])
    return {
        "time_ps": time_ps, "time_us": time_ps / PS_PER_US, "time_share": share,
        "occurrences": occurrences,
        "avg_time_us": time_ps / PS_PER_US / occurrences if occurrences else math.nan,
        "framework_op": row["framework_op"], "flops": flops, "hbm_bytes": hbm,
        "flop_rate": rate, "bandwidth_gbps": bandwidth / 1e9,
        "arithmetic_intensity": flops / hbm if hbm and known else math.nan,
        "flops_utilization": flops_util, "bandwidth_utilization": bw_util, "bound_by": bound,
        "wasted_time_share": share * (1 - max(flops_util, bw_util))
        if np.isfinite(flops_util) else math.nan,
    }


def _sort_value(metrics: dict, sort_by: str) -> float:
    value = metrics["time_ps" if sort_by == "time" else
                    "wasted_time_share" if sort_by == "wasted_time" else "flops_utilization"]
    return value if np.isfinite(value) else -1.0


def _sort_column(ops: pd.DataFrame, sort_by: str) -> np.ndarray:
    column = {"time": "time_ps", "wasted_time": "wasted_time_share",
              "flops_utilization": "flops_utilization"}[sort_by]
    return np.nan_to_num(ops[column].to_numpy(np.float64), nan=-1.0)


def _cut(part: pd.DataFrame, ops_per_group: int, top_fraction: float | None) -> pd.DataFrame:
    """The group's ops to show: its top ops by time, at most `ops_per_group`, and with
    `top_fraction` only as many as make up that fraction of the group's time."""
    by_time = part.sort_values("time_ps", ascending=False, kind="stable")
    if top_fraction is not None and len(by_time):
        cumulative = by_time["time_ps"].cumsum().to_numpy() / max(by_time["time_ps"].sum(), 1)
        keep = int(np.searchsorted(cumulative, top_fraction - 1e-12)) + 1
        by_time = by_time.iloc[:keep]
    return by_time.iloc[: max(0, int(ops_per_group))]


# ---- suggestions ------------------------------------------------------------------------------
def suggest(analysis: OpProfileAnalysis, limit: int = 5) -> list[str]:
    """Sentences about the biggest costs; each names the ops behind it."""
    ops = analysis.ops
    device = analysis.device
    total = analysis.total_time_ps
    out: list[str] = []
    if not total or ops.empty:
        return out
    by_category = ops.groupby("category")["time_ps"].sum().sort_values(ascending=False)
    for category, time_ps in by_category.head(2).items():
        if time_ps / total < 0.1:
            continue
        mine = ops[ops["category"] == category].sort_values("time_ps", ascending=False)
        out.append(_category_sentence(category, mine, device, total))
    idle = analysis.idle_time_ps / total
    if idle >= 0.1:
        where = "cores" if device.kind == "TPU" else "devices" if device.kind == "GPU" \
            else "XLA threads"
        out.append(f"The {where} are idle {_pct(idle)} of the time: nothing ran on them, so "
                   "the host (input pipeline, dispatch, Python) kept them waiting; see the "
                   "trace viewer and input pipeline.")
    if device.has_peaks:
        worst = ops.sort_values("wasted_time_share", ascending=False).head(1)
        for _, op in worst.iterrows():
            if op["wasted_time_share"] >= 0.05 and not any(f"{op['name']} (" in s for s in out):
                out.append(f"{op['name']} ({op['category']}) alone wastes "
                           f"{_pct(op['wasted_time_share'])} of device time: it takes "
                           f"{_pct(op['time_share'])} running at "
                           f"{_pct(op['flops_utilization'])} of peak FLOPS and "
                           f"{_pct(op['bandwidth_utilization'])} of peak HBM bandwidth.")
    collective = ops[ops["category"].str.startswith(_COLLECTIVES)]
    if collective["time_ps"].sum() / total >= 0.1:
        names = ", ".join(collective.sort_values("time_ps", ascending=False)["name"].head(3))
        out.append(f"{_pct(collective['time_ps'].sum() / total)} of time is in collectives "
                   f"({names}); overlap them with compute or shrink what they move.")
    formatting = ops[ops["category"].isin(_FORMATTING)]
    if formatting["time_ps"].sum() / total >= 0.1:
        names = ", ".join(formatting.sort_values("time_ps", ascending=False)["name"].head(3))
        out.append(f"{_pct(formatting['time_ps'].sum() / total)} of time moves data without "
                   f"computing (copies, layout changes: {names}).")
    if not device.has_peaks:
        out.append(f"No peak FLOP rate or memory bandwidth is known for this {device.kind}, so "
                   "utilization is not shown; pass peak_tflops= and peak_gbps= to compare "
                   "against your hardware.")
    return out[:limit]


def _category_sentence(category: str, ops: pd.DataFrame, device: Device, total: int) -> str:
    plural = f"{category}s" if category.endswith("fusion") else f"{category} ops"
    largest = ", ".join(f"{n} ({_pct(t / total)})"
                        for n, t in zip(ops["name"].head(3), ops["time_ps"].head(3), strict=True))
    if not device.has_peaks or not ops["known_cost"].any():
        return f"{_pct(ops['time_ps'].sum() / total)} of time is in {plural}; largest: {largest}."
    memory = ops[ops["bound_by"] == "memory"]
    compute = ops[ops["bound_by"] == "compute"]
    if memory["time_ps"].sum() >= compute["time_ps"].sum() and len(memory):
        seconds = memory["time_ps"].sum() / PS_PER_S
        util = min(1.0, memory["hbm_bytes"].sum() / seconds / device.peak_bandwidth)
        return (f"{_pct(memory['time_ps'].sum() / total)} of time is in memory-bound {plural} "
                f"running at {_pct(util)} of peak HBM bandwidth; largest: {largest}.")
    if len(compute):
        seconds = compute["time_ps"].sum() / PS_PER_S
        util = min(1.0, compute["flops"].sum() / seconds / device.peak_flops)
        return (f"{_pct(compute['time_ps'].sum() / total)} of time is in compute-bound {plural} "
                f"running at {_pct(util)} of peak FLOPS; largest: {largest}.")
    return f"{_pct(ops['time_ps'].sum() / total)} of time is in {plural}; largest: {largest}."


def _pct(value: float) -> str:
    if not np.isfinite(value):
        return "n/a"
    percent = value * 100
    return f"{percent:.0f}%" if percent >= 10 or percent == 0 else f"{percent:.1f}%"
