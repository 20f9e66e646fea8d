"""Where a GPU's time goes, as Holistic Trace Analysis (HTA) splits it, from Kineto traces.

HTA (facebookresearch/HolisticTraceAnalysis, hta/analyzers/breakdown_analysis.py) defines:

- GPU work: what ran on a stream, i.e. the events of a GPU process with a `stream` arg that
  reads as an integer other than -1 (kernels, copies, memsets, syncs; MTIA's stream events);
- a kernel's type by its name: COMMUNICATION `^nccl.*Kernel`, MEMORY `^Memcpy|^Memset|^dma`,
  COMPUTATION unless `^nccl.*Kernel|.*Memcpy|^Memset|.*Sync`, else OTHER. Ours types as
  COMMUNICATION every kernel of kernel_families.COMMUNICATION_FAMILIES (NCCL anywhere in the
  name, RCCL, DeepEP, symmetric memory, NVSHMEM, custom all-reduce / all-to-all): HTA would
  count DeepEP's dispatch as computation;
- in a trace of two or more profiler steps (names with `ProfilerStep`), only the work launched
  before the last step began: work whose `correlation` is that of a host call starting before
  the latest start of a ProfilerStep annotation (CPU or GPU); the last step is often cut off;
- the temporal breakdown: from the first work's start to the last one's end (kernel time),
  idle is what no work covers, compute what COMPUTATION work covers, non-compute the rest;
- the kernel breakdown: the time covered by each set of types at once (COMPUTATION,
  COMMUNICATION, MEMORY, and `COMPUTATION overlapping COMMUNICATION` where both run), OTHER
  left out, each as a share of all of it;
- the communication-computation overlap (communication_analysis.py): the time COMPUTATION and
  COMMUNICATION work both run, as a share of the time COMMUNICATION work runs;
- the idle time breakdown: on each stream, the kernels, copies and memsets in order of start,
  and the gap before each one (its start minus the previous one's end, negative where they
  overlap) is host wait where the call that launched it started after the previous one ended
  (the GPU waited for the host to enqueue it), else kernel wait where it is under 30 us (the
  cost of launching back-to-back kernels), else other (a wait on an event, say).

HTA reads times as whole microseconds; here they are the trace's exact picoseconds. Where else
we differ, and why: docs/from_hta.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...profile.model import PS_PER_US, Profile
from ..hosts import host_parts
from ..kernel_families import COMMUNICATION_FAMILIES, communication_family, is_communication
from . import KERNELS, events_of, int_stat, meta_categories, rank_of

TYPES = ("COMPUTATION", "COMMUNICATION", "MEMORY")
"""HTA's kernel types that the breakdown splits, in the order it names overlaps."""
OTHER = "OTHER"
HTA_COMMUNICATION = re.compile(r"^nccl.*Kernel")
"""HTA's own communication rule (hta_kernel_type), kept to name where ours differs."""
_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
STEP_MARK = "ProfilerStep"
TIME_COLUMNS = ["rank", "idle_us", "compute_us", "non_compute_us", "kernel_us", "idle_pct",
                "compute_pct", "non_compute_pct"]
KERNEL_COLUMNS = ["rank", "kernel_type", "total_us", "percentage"]
FAMILY_COLUMNS = ["rank", "family", "kernels", "total_us"]
OVERLAP_COLUMNS = ["rank", "communication_us", "overlap_us", "comp_comm_overlap_pctg"]
IDLE_COLUMNS = ["rank", "stream", "idle_category", "idle_time_us", "idle_time_ratio"]
IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")
STREAM_CATEGORIES = ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset",
                     "mtia_ccp_events")
"""The work HTA's idle time breakdown orders on a stream (not syncs, not GPU annotations)."""
KERNEL_WAIT_US = 30
"""HTA's consecutive_kernel_delay: a shorter gap between kernels is launch overhead (HTA's
docstring says 30 ns, but it compares it with its microsecond times: 30 us)."""


def kernel_type(name: str, category: str = "kernel") -> str:
    """A GPU work event's type by its name: HTA's (hta.utils.utils.get_kernel_type) but with
    every kernel of a communication family of kernel_families as COMMUNICATION, so that DeepEP,
    symmetric-memory or NVSHMEM traffic is not counted as compute. Only kernels (`category`):
    a GPU annotation named `nccl:all_reduce` keeps HTA's type."""
    if category in KERNELS and is_communication(name):
        return "COMMUNICATION"
    return hta_kernel_type(name)


def hta_kernel_type(name: str) -> str:
    """HTA's own type of a GPU kernel by its name (hta.utils.utils.get_kernel_type): only
    `^nccl.*Kernel` communicates."""
    if HTA_COMMUNICATION.match(name):
        return "COMMUNICATION"
    if _MEMORY.match(name):
        return "MEMORY"
    return OTHER if _NOT_COMPUTE.match(name) else "COMPUTATION"


@dataclass(frozen=True)
class GpuWork:
    """One rank's GPU work: each event's start and end (any one unit) and kernel type."""

    rank: int
    start: np.ndarray
    end: np.ndarray
    kernel_type: np.ndarray  # object: TYPES or OTHER


def gpu_work_events(profile: Profile) -> np.ndarray:
    """The GPU work HTA's breakdowns count (see the module doc), as global event indices."""
    return gpu_work_streams(profile)[0]


def gpu_work_streams(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """The GPU work's events and their stream ids, memoized: a Kineto trace's args are decoded
    per event, and every breakdown starts here."""
    return profile.memo(("gpu_work_events",), lambda: _find_gpu_work(profile))


def _find_gpu_work(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    categories = set(meta_categories(profile).tolist()) - {""}  # HTA drops events without
    device = events_of(profile, categories, "device")
    streams = stream_ids(profile.stat_column(device, "stream"))
    device, streams = device[streams != -1], streams[streams != -1]
    names = profile.metadata["name"].to_numpy(dtype=object)
    steps = np.flatnonzero([STEP_MARK in str(n) for n in names])
    if np.unique(names[steps]).shape[0] < 2:
        return device, streams
    is_work = np.zeros(profile.n_events, bool)
    is_work[device] = True
    marks = np.flatnonzero(np.isin(profile.meta, steps) & ~is_work)
    last_step = int(profile.start_ps[marks].max())
    calls, call_corr = host_correlations(profile)
    early = call_corr[profile.start_ps[calls] < last_step]
    has_corr, correlation = int_stat(profile, device, "correlation")
    keep = has_corr & np.isin(correlation, early)
    return device[keep], streams[keep]


def host_correlations(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """The host events with a `correlation` arg (runtime and driver calls) and its value,
    memoized (the step filter and the launch lookup both read them)."""
    def find() -> tuple[np.ndarray, np.ndarray]:
        calls = events_of(profile, set(meta_categories(profile).tolist()) - {""}, "host")
        has_call, call_corr = int_stat(profile, calls, "correlation")
        return calls[has_call], call_corr[has_call]
    return profile.memo(("host_correlations",), find)


def stream_ids(streams: np.ndarray) -> np.ndarray:
    """Each `stream` arg as HTA reads it, `int()` (so "7" and 7.0 are 7), -1 where it cannot
    ("0x0", absent)."""
    def stream(value: object) -> int:
        try:
            return int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError):
            return -1
    return np.fromiter((stream(v) for v in streams.tolist()), np.int64, streams.shape[0])


def gpu_work(profile: Profile) -> GpuWork:
    """One host's GPU work with its rank, times in ps (a per-host part: analysis/hosts.py)."""
    events = gpu_work_events(profile)
    rows, row_of_event = np.unique(profile.meta[events], return_inverse=True)
    names = profile.metadata["name"].to_numpy(dtype=object)[rows]
    categories = meta_categories(profile)[rows]
    types = np.array([kernel_type(str(n), str(c)) for n, c in zip(names, categories, strict=True)],
                     dtype=object)
    start = profile.start_ps[events]
    return GpuWork(rank=rank_of(profile), start=start, end=start + profile.duration_ps[events],
                   kernel_type=types[row_of_event.reshape(-1)])


def merged(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals [start, end) as disjoint pieces (lo, hi), in order: a piece
    opens where an interval starts after every earlier one ended (HTA's merge_kernel_intervals,
    whose whole-microsecond intervals may end before they start; see docs/from_hta.md)."""
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    opens = np.ones(start.shape[0], bool)
    opens[1:] = start[1:] > np.maximum.accumulate(end)[:-1]
    first = np.flatnonzero(opens)
    hi = np.maximum.reduceat(end, first) if first.shape[0] else end[:0]
    return start[first], hi


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """How much time the intervals [start, end) cover together."""
    lo, hi = merged(start, end)
    return int((hi - lo).sum())


def temporal_breakdown(work: GpuWork) -> dict[str, int]:
    """idle, compute, non-compute and kernel time of one rank's work (HTA's definitions), in
    the work's unit; all 0 without work."""
    if not work.start.shape[0]:
        return {"idle": 0, "compute": 0, "non_compute": 0, "kernel": 0}
    lo, hi = merged(work.start, work.end)
    kernel = int(hi[-1] - lo[0])
    idle = kernel - int((hi - lo).sum())
    compute_mask = work.kernel_type == "COMPUTATION"
    compute = union_length(work.start[compute_mask], work.end[compute_mask])
    return {"idle": idle, "compute": compute, "non_compute": kernel - compute - idle,
            "kernel": kernel}


def type_breakdown(work: GpuWork) -> dict[str, int]:
    """Time covered by each set of kernel types running at once (`A overlapping B`), in the
    work's unit; sets that never cover any time are left out."""
    edges, change = [], []
    for bit, name in enumerate(TYPES):
        lo, hi = merged(*(side[work.kernel_type == name] for side in (work.start, work.end)))
        edges += [lo, hi]
        change += [np.full(lo.shape[0], 1 << bit), np.full(hi.shape[0], -(1 << bit))]
    times = np.concatenate(edges).astype(np.int64)
    if not times.shape[0]:
        return {}
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(np.concatenate(change).astype(np.int64)[order])
    spans = np.diff(times)
    totals = pd.Series(spans).groupby(running[:-1]).sum()
    return {_overlap_name(int(state)): int(total) for state, total in totals.items()
            if state > 0 and total > 0}


def _overlap_name(state: int) -> str:
    return " overlapping ".join(name for bit, name in enumerate(TYPES) if state & (1 << bit))


def time_breakdown_table(works: list[GpuWork], per_us: int = PS_PER_US) -> pd.DataFrame:
    """HTA's temporal breakdown per rank (TIME_COLUMNS); `per_us`: the works' units per us."""
    rows = []
    for work in works:
        if not work.start.shape[0]:
            continue
        part = temporal_breakdown(work)
        kernel = part["kernel"]
        rows.append({"rank": work.rank, **{f"{k}_us": v / per_us for k, v in part.items()},
                     **{f"{k}_pct": 100 * part[k] / kernel if kernel else 0.0
                        for k in ("idle", "compute", "non_compute")}})
    return pd.DataFrame(rows, columns=TIME_COLUMNS).astype(
        {"rank": np.int64, **dict.fromkeys(TIME_COLUMNS[1:], np.float64)})


def kernel_breakdown_table(works: list[GpuWork], per_us: int = PS_PER_US) -> pd.DataFrame:
    """HTA's kernel-type breakdown per rank (KERNEL_COLUMNS), largest first in each rank."""
    frames = []
    for work in works:
        totals = type_breakdown(work)
        if not totals:
            continue
        frame = pd.DataFrame({"rank": work.rank, "kernel_type": list(totals),
                              "total": list(totals.values())})
        frame = frame.sort_values(["total", "kernel_type"], ascending=[False, True],
                                  kind="stable")
        frame["total_us"] = frame["total"] / per_us
        frame["percentage"] = 100 * frame["total"] / frame["total"].sum()
        frames.append(frame[KERNEL_COLUMNS])
    if not frames:
        return pd.DataFrame({"rank": pd.Series(dtype=np.int64),
                             "kernel_type": pd.Series(dtype=object),
                             "total_us": pd.Series(dtype=np.float64),
                             "percentage": pd.Series(dtype=np.float64)})
    return pd.concat(frames, ignore_index=True)


def host_works(profile: Profile) -> list[GpuWork]:
    """Every host's GPU work (one rank per host file), memoized for both breakdowns."""
    return profile.memo(("gpu_work",), lambda: [p.part for p in host_parts(profile, gpu_work)])


def kernel_breakdown(profile: Profile) -> pd.DataFrame:
    """Time per kernel type and overlap per rank, as HTA's get_gpu_kernel_breakdown
    (include_memory_kernels=True) reports it (KERNEL_COLUMNS); empty without GPU work."""
    return kernel_breakdown_table(host_works(profile))


def overlap_of(work: GpuWork) -> tuple[int, int]:
    """(time COMMUNICATION work runs, time it runs while COMPUTATION work does), in the work's
    unit: a sweep over each type's merged intervals, as HTA's overlap (whose whole-microsecond
    pieces may end before they start, and then count negative)."""
    pieces = {name: merged(work.start[work.kernel_type == name], work.end[work.kernel_type == name])
              for name in ("COMMUNICATION", "COMPUTATION")}
    communication = int((pieces["COMMUNICATION"][1] - pieces["COMMUNICATION"][0]).sum())
    times, change = [], []
    for weight, (lo, hi) in zip((1, 2), pieces.values(), strict=True):
        times += [lo, hi]
        change += [np.full(lo.shape[0], weight), np.full(hi.shape[0], -weight)]
    times = np.concatenate(times).astype(np.int64)
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(np.concatenate(change).astype(np.int64)[order])
    both = int(np.diff(times)[running[:-1] == 3].sum()) if times.shape[0] else 0
    return communication, both


def overlap_table(works: list[GpuWork], per_us: int = PS_PER_US) -> pd.DataFrame:
    """HTA's communication-computation overlap per rank (OVERLAP_COLUMNS); the share is NaN on
    a rank without communication, as HTA's is."""
    rows = []
    for work in works:
        if not work.start.shape[0]:
            continue
        communication, both = overlap_of(work)
        rows.append({"rank": work.rank, "communication_us": communication / per_us,
                     "overlap_us": both / per_us,
                     "comp_comm_overlap_pctg": 100 * both / communication if communication
                     else np.nan})
    return pd.DataFrame(rows, columns=OVERLAP_COLUMNS).astype(
        {"rank": np.int64, **dict.fromkeys(OVERLAP_COLUMNS[1:], np.float64)})


def family_part(profile: Profile) -> pd.DataFrame:
    """One host's communication kernels per family (FAMILY_COLUMNS; total_us sums their
    durations, concurrent ones each counted): which libraries communicated, so a view can
    name them rather than say "NCCL"."""
    events = gpu_work_events(profile)
    events = events[np.isin(meta_categories(profile)[profile.meta[events]], KERNELS)]
    names = profile.metadata["name"].to_numpy(dtype=object)
    family = pd.Series([communication_family(str(n)) for n in names], dtype=object)
    frame = pd.DataFrame({"family": family.to_numpy()[profile.meta[events]],
                          "ps": profile.duration_ps[events]}).dropna()
    grouped = frame.groupby("family", sort=False)["ps"].agg(["size", "sum"]).reset_index()
    return pd.DataFrame({"rank": rank_of(profile), "family": grouped["family"].astype(object),
                         "kernels": grouped["size"].astype(np.int64),
                         "total_us": grouped["sum"] / PS_PER_US}, columns=FAMILY_COLUMNS)


def communication_by_family(profile: Profile) -> pd.DataFrame:
    """Per rank, the communication kernels of each family of
    kernel_families.COMMUNICATION_FAMILIES that ran (FAMILY_COLUMNS), in the table's family
    order; empty when none ran."""
    def find() -> pd.DataFrame:
        frames = [p.part for p in host_parts(profile, family_part) if len(p.part)]
        if not frames:
            return pd.DataFrame({"rank": pd.Series(dtype=np.int64),
                                 "family": pd.Series(dtype=object),
                                 "kernels": pd.Series(dtype=np.int64),
                                 "total_us": pd.Series(dtype=np.float64)})
        order = {f.name: k for k, f in enumerate(COMMUNICATION_FAMILIES)}
        frame = pd.concat(frames, ignore_index=True)
        frame = frame.assign(_order=frame["family"].map(order))
        return frame.sort_values(["rank", "_order"], kind="stable")[FAMILY_COLUMNS] \
            .reset_index(drop=True)
    return profile.memo(("communication_by_family",), find)


@dataclass(frozen=True)
class StreamKernels:
    """One rank's kernels, copies and memsets with their stream and the start of the host
    call that launched each (`launched` False where the trace holds no such call)."""

    rank: int
    stream: np.ndarray
    start: np.ndarray
    end: np.ndarray
    launch: np.ndarray
    launched: np.ndarray


def stream_kernels(profile: Profile) -> StreamKernels:
    """One host's StreamKernels, times in ps (a per-host part: analysis/hosts.py). The launch
    is the host event sharing the kernel's `correlation` (the CUDA runtime or driver call)."""
    events, streams = gpu_work_streams(profile)
    mine = np.isin(meta_categories(profile)[profile.meta[events]], STREAM_CATEGORIES)
    events, start = events[mine], profile.start_ps[events[mine]]
    launch, launched = _launch_starts(profile, *int_stat(profile, events, "correlation"))
    return StreamKernels(rank=rank_of(profile), stream=streams[mine], start=start,
                         end=start + profile.duration_ps[events], launch=launch,
                         launched=launched)


def _launch_starts(profile: Profile, has_corr: np.ndarray, correlation: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The start of the host event with each correlation id (the last one stored, where
    several share it), and whether there is one."""
    calls, call_corr = host_correlations(profile)
    order = np.argsort(call_corr, kind="stable")
    keys, starts = call_corr[order], profile.start_ps[calls][order]
    if not keys.shape[0]:
        return np.zeros(correlation.shape[0], np.int64), np.zeros(correlation.shape[0], bool)
    at = np.maximum(np.searchsorted(keys, correlation, side="right") - 1, 0)
    launched = has_corr & (keys[at] == correlation)
    return np.where(launched, starts[at], 0), launched


def idle_split(kernels: StreamKernels, kernel_wait: int) -> dict[int, dict[str, int]]:
    """Per stream (in order), the idle time of each category (IDLE_CATEGORIES), in the kernels' unit;
    `kernel_wait`: HTA's consecutive_kernel_delay in that unit."""
    out = {}
    for stream in np.unique(kernels.stream).tolist():
        mine = np.flatnonzero(kernels.stream == stream)
        mine = mine[np.argsort(kernels.start[mine], kind="stable")]
        start, end = kernels.start[mine], kernels.end[mine]
        gap = start[1:] - end[:-1]
        host = kernels.launched[mine][1:] & (kernels.launch[mine][1:] > end[:-1])
        short = ~host & (gap < kernel_wait)
        out[int(stream)] = {"host_wait": int(gap[host].sum()), "kernel_wait": int(gap[short].sum()),
                            "other": int(gap[~host & ~short].sum())}
    return out


def idle_table(parts: list[StreamKernels], per_us: int = PS_PER_US) -> pd.DataFrame:
    """HTA's idle time breakdown (IDLE_COLUMNS): per rank and stream, each category's idle time
    and its share of the stream's (NaN where the stream never idles, as HTA's)."""
    rows = []
    for kernels in parts:
        for stream, split in idle_split(kernels, KERNEL_WAIT_US * per_us).items():
            total = sum(split.values())
            rows += [{"rank": kernels.rank, "stream": stream, "idle_category": category,
                      "idle_time_us": split[category] / per_us,
                      "idle_time_ratio": split[category] / total if total else np.nan}
                     for category in IDLE_CATEGORIES]
    return pd.DataFrame(rows, columns=IDLE_COLUMNS).astype(
        {"rank": np.int64, "stream": np.int64, "idle_category": object,
         "idle_time_us": np.float64, "idle_time_ratio": np.float64})


def comm_comp_overlap(profile: Profile) -> pd.DataFrame:
    """Per rank, how much of its communication overlaps computation, as HTA's
    get_comm_comp_overlap (OVERLAP_COLUMNS, its share in percent); empty without GPU work."""
    return overlap_table(host_works(profile))


def idle_time_breakdown(profile: Profile) -> pd.DataFrame:
    """Per rank and stream, idle time split into host wait, kernel wait and other, as HTA's
    get_idle_time_breakdown (IDLE_COLUMNS; every rank, every category); empty without GPU
    work."""
    parts = profile.memo(("stream_kernels",),
                         lambda: [p.part for p in host_parts(profile, stream_kernels)])
    return idle_table(parts)
