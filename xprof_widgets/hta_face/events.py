"""One rank's events as Holistic Trace Analysis (HTA) holds them, built from our columns.

HTA's analyses group and join one table per rank: every timed event with a category (but the
profiler's own span, category `Trace`; GPU user annotations too) with its `ts`, `dur`, name,
category, `stream` (-1 on the host) and `correlation` (-1 without). In a trace of two or more
profiler steps HTA keeps only what ran before the last step began (the last step is often cut
off): host events that start before it, and the GPU work their calls launched
(analysis/kineto/gpu_time.py finds that work for the breakdowns; it is reused here). The table is
made from the decoded columns in a few numpy passes: no event is visited in Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..analysis.hosts import host_parts
from ..analysis.kineto import events_of, innermost_enclosing, int_stat, meta_categories, rank_of
from ..analysis.kineto.gpu_time import STEP_MARK, gpu_work_streams, stream_ids
from ..analysis.kineto.trace_diff import step_events
from ..profile.model import PS_PER_US, Profile

COLUMNS = ["index", "ts", "dur", "end", "name", "cat", "stream", "correlation", "pid",
           "track", "memory_bw_gbps", "aten_op", "iteration"]
"""`index`: the event's id in its host's profile; times in microseconds from the
earliest event kept on any rank; `pid`: the GPU's device number for GPU work (Kineto's `device` arg), -1 elsewhere; `track`: the event's track
in its host's profile (a thread, or a GPU stream's lane);
`memory_bw_gbps`: a copy's or memset's `memory bandwidth (GB/s)` arg (NaN elsewhere);
`aten_op`: for a kernel launch call, the `index` of the innermost `aten::` op on its thread that
spans it (-1 elsewhere); `iteration`: the profiler step the event belongs to, as HTA assigns
it (analysis/trace_diff.step_events: a host event by its start, GPU work by its launch call; -1
for none)."""
SYNC_COLUMNS = ["index", "ts", "dur", "end", "name", "stream", "correlation", "pid",
                "wait_on_stream", "wait_on_record"]
"""A rank's CUDA syncs as the GPU side states them (Kineto's `cuda_sync` events: `Stream Sync`,
`Context Sync`, `Event Sync`, `Stream Wait Event`), times as in COLUMNS: `stream` -1 for a
device-wide or event sync; `wait_on_stream` and `wait_on_record` the stream and the
`cudaEventRecord` correlation an event sync waits on (-1 where none). HTA's critical path links
them; they are not rows of the rank's table (a device-wide sync has no stream, and HTA's other
analyses never see it)."""
GPU_ANNOTATION = "gpu_user_annotation"
"""Kineto's copy of a `record_function` range on the stream its kernels ran on: no `stream`
arg, so HTA holds it as it holds host events (stream -1), on its GPU's lane."""
KERNEL_LAUNCH = re.compile(r"(cuda.*LaunchKernel)|(cuLaunchKernel)|(^runFunction)")
"""HTA's kernel launch calls (KERNEL_LAUNCH_CATEGORY_PATTERN)."""
BANDWIDTH_ARG = "memory bandwidth (GB/s)"
SYNC_CATEGORY = "cuda_sync"


def last_step_start(profile: Profile) -> int | None:
    """Where the last profiler step begins (ps), or None in a trace of fewer than two steps:
    HTA's cut for what it analyses."""
    names = profile.metadata["name"].to_numpy(dtype=object)
    steps = np.flatnonzero([STEP_MARK in str(n) for n in names])
    if np.unique(names[steps]).shape[0] < 2:
        return None
    work, _ = gpu_work_streams(profile)
    marks = np.flatnonzero(np.isin(profile.meta, steps))
    marks = marks[~np.isin(marks, work)]
    return int(profile.start_ps[marks].max())


def host_events(profile: Profile) -> pd.DataFrame:
    """One host's events as HTA's table (COLUMNS), host events first, each side by start
    (a per-host part: analysis/hosts.py); memoized."""
    return profile.memo(("hta_face", "host_events"), lambda: _host_events(profile))


def _host_events(profile: Profile) -> pd.DataFrame:
    categories = meta_categories(profile)
    calls = np.sort(np.concatenate([
        events_of(profile, set(categories.tolist()) - {"", "Trace"}, "host"),
        events_of(profile, [GPU_ANNOTATION], "device")]))
    cut = last_step_start(profile)
    if cut is not None:
        calls = calls[profile.start_ps[calls] < cut]
    work, streams = gpu_work_streams(profile)
    events = np.concatenate([calls, work]).astype(np.int64)
    has_corr, correlation = int_stat(profile, events, "correlation")
    has_device, device = int_stat(profile, work, "device")
    names, name_code = np.unique(profile.metadata["name"].to_numpy(dtype=str),
                                 return_inverse=True)
    cats, cat_code = np.unique(categories.astype(str), return_inverse=True)
    rows = profile.meta[events]
    start = profile.start_ps[events]
    end = start + profile.duration_ps[events]
    return pd.DataFrame({
        "index": events,
        "ts": start / PS_PER_US,
        "dur": (end - start) / PS_PER_US,
        "end": end / PS_PER_US,
        "name": pd.Categorical.from_codes(name_code.reshape(-1)[rows], categories=names),
        "cat": pd.Categorical.from_codes(cat_code.reshape(-1)[rows], categories=cats),
        "stream": np.concatenate([np.full(calls.shape[0], -1, np.int64), streams]),
        "correlation": np.where(has_corr, correlation, -1),
        "pid": np.concatenate([np.full(calls.shape[0], -1, np.int64),
                               np.where(has_device, device, 0)]),
        "track": profile.track_of(events),
        "memory_bw_gbps": np.concatenate([np.full(calls.shape[0], np.nan),
                                          _floats(profile.stat_column(work, BANDWIDTH_ARG))]),
        "aten_op": np.concatenate([_aten_ops(profile, calls, names[name_code.reshape(-1)]),
                                   np.full(work.shape[0], -1, np.int64)]),
        "iteration": _iterations(profile, events),
    }, columns=COLUMNS)


def _iterations(profile: Profile, events: np.ndarray) -> np.ndarray:
    steps = step_events(profile)
    iteration = np.full(profile.n_events, -1, np.int64)
    iteration[steps["event"].to_numpy(np.int64)] = steps["iteration"].to_numpy(np.int64)
    return iteration[events]


def _aten_ops(profile: Profile, calls: np.ndarray, row_names: np.ndarray) -> np.ndarray:
    """Per host event, the innermost `aten::` op on its track that spans it, for the kernel
    launch calls (-1 for the rest, and where none does)."""
    launch_rows = np.array([bool(KERNEL_LAUNCH.search(n)) for n in row_names.tolist()], bool)
    aten_rows = np.char.startswith(row_names.astype(str), "aten::")
    out = np.full(calls.shape[0], -1, np.int64)
    launch = np.flatnonzero(launch_rows[profile.meta[calls]])
    ops = calls[aten_rows[profile.meta[calls]]]
    if launch.shape[0] and ops.shape[0]:
        out[launch] = innermost_enclosing(profile, calls[launch], ops)
    return out


def _floats(values: np.ndarray) -> np.ndarray:
    """An arg column as float64, NaN where absent."""
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64)


def rank_tables(profile: Profile) -> dict[int, pd.DataFrame]:
    """Every rank's table (host_events), by rank, memoized. One rank per host file, its rank
    from the trace header (analysis/kineto.rank_of). As in HTA, the ranks share one clock
    whose 0 is the earliest event any of them kept."""
    return _ranked(profile)[0]


def rank_syncs(profile: Profile) -> dict[int, pd.DataFrame]:
    """Every rank's syncs (SYNC_COLUMNS) on its table's clock, by rank, memoized."""
    return _ranked(profile)[1]


def rank_files(profile: Profile) -> dict[int, RankFile]:
    """Every rank's trace file, and where its table's clock puts the file's own `ts`."""
    return _ranked(profile)[2]


@dataclass(frozen=True)
class RankFile:
    """A rank's trace file: `ts` in it is (zero_ps + a table time in ps) / 1e6 us."""

    path: str
    zero_ps: int


def _ranked(profile: Profile) -> tuple[dict[int, pd.DataFrame], dict[int, pd.DataFrame],
                                       dict[int, RankFile]]:
    def build() -> tuple[dict[int, pd.DataFrame], dict[int, pd.DataFrame],
                         dict[int, RankFile]]:
        parts = host_parts(profile, _ranked_events)
        shifts = [p.part[1]["ts"].min() + p.shift_ps / PS_PER_US for p in parts
                  if len(p.part[1])]
        origin = min(shifts, default=0.0)
        tables, syncs, files = {}, {}, {}
        for part in parts:
            rank, frame, sync, path, file_zero_ps = part.part
            shift = part.shift_ps / PS_PER_US - origin
            tables[rank] = frame.assign(ts=frame["ts"] + shift, end=frame["end"] + shift)
            syncs[rank] = sync.assign(ts=sync["ts"] + shift, end=sync["end"] + shift)
            files[rank] = RankFile(path, file_zero_ps - part.shift_ps
                                   + round(origin * PS_PER_US))
        return (dict(sorted(tables.items())), dict(sorted(syncs.items())),
                dict(sorted(files.items())))
    return profile.memo(("hta_face", "rank_tables"), build)


def _ranked_events(profile: Profile) -> tuple[int, pd.DataFrame, pd.DataFrame, str, int]:
    return (rank_of(profile), host_events(profile), sync_events(profile),
            profile.host_sources[0], profile.file_zero_ps)


def sync_events(profile: Profile) -> pd.DataFrame:
    """One host's `cuda_sync` events (SYNC_COLUMNS) whose call is in its table (the same cut
    at the last step), by start."""
    table = host_events(profile)
    calls = table.loc[table["stream"] == -1, "correlation"].to_numpy()
    syncs = events_of(profile, [SYNC_CATEGORY], "device")
    has_corr, correlation = int_stat(profile, syncs, "correlation")
    keep = has_corr & np.isin(correlation, calls[calls >= 0])
    syncs, correlation = syncs[keep], correlation[keep]
    start = profile.start_ps[syncs]
    end = start + profile.duration_ps[syncs]
    has_device, device = int_stat(profile, syncs, "device")
    has_wait, wait_stream = int_stat(profile, syncs, "wait_on_stream")
    has_record, record = int_stat(profile, syncs, "wait_on_cuda_event_record_corr_id")
    names = profile.metadata["name"].to_numpy(dtype=object)
    return pd.DataFrame({
        "index": syncs, "ts": start / PS_PER_US, "dur": (end - start) / PS_PER_US,
        "end": end / PS_PER_US, "name": names[profile.meta[syncs]].astype(str),
        "stream": stream_ids(profile.stat_column(syncs, "stream")),
        "correlation": correlation, "pid": np.where(has_device, device, 0),
        "wait_on_stream": np.where(has_wait, wait_stream, -1),
        "wait_on_record": np.where(has_record, record, -1),
    }, columns=SYNC_COLUMNS).sort_values("ts", kind="stable", ignore_index=True)
