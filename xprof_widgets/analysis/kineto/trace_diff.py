"""Ops and kernels of a PyTorch (Kineto) trace, counted as HTA's trace diff counts them.

HTA's `TraceDiff.compare_traces` (hta/trace_diff.py) compares one profiler step of one rank of
each run by name: how many events of each name ran in it and their total duration. Its events
are every timed event with a category (`cat`) other than `Trace`, CPU and GPU alike: PyTorch ops,
CUDA runtime calls, annotations, kernels, copies. Which step an event belongs to:

- an event with no `stream` arg (-1: on the CPU) belongs to the step `ProfilerStep#N` whose span
  holds its start (`start <= ts < start + dur`); where several do, the one written last (Kineto
  writes CPU events before GPU ones, so a GPU-side `ProfilerStep` annotation wins);
- an event on a stream (a number above 0) belongs to the step of the CPU event of the same
  `correlation` (the runtime call that launched it); without one, to none.

By default the first rank (the lowest) and the first step (the lowest N) of each run, both
devices. Times here are the trace's exact picoseconds (HTA rounds fractional microseconds:
docs/from_hta.md, WHOLE_MICROSECONDS); the differences from HTA are written there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import ProfileError
from ...profile.model import PS_PER_US, Profile
from ..hosts import host_parts
from . import CPU_OPS, KERNELS, has_category, int_stat, meta_categories, rank_of

DEVICES = ("all", "cpu", "gpu")
PART_COLUMNS = ["rank", "iteration", "name", "device", "occurrences", "time_ps"]
OPS_COLUMNS = ["name", "device", "occurrences", "time_us"]
_STEP = re.compile(r"ProfilerStep\s*#\s*(\d+)")
_UNCOUNTED = ("", "Trace")
"""Categories HTA leaves out: events without one, and the profiler's own `Trace` span."""


def is_kineto(profile: Profile) -> bool:
    """Whether the profile is a PyTorch profiler trace (it has Kineto's CPU ops or kernels)."""
    return has_category(profile, (*CPU_OPS, *KERNELS))


def step_events(profile: Profile) -> pd.DataFrame:
    """Every event HTA's trace diff counts, with its profiler step (see the module doc):
    columns event (global index), iteration (-1 for none), cpu (no stream: on the CPU)."""
    categories = meta_categories(profile)
    slices = profile.built_tracks.index[profile.built_tracks["kind"] == "slices"].to_numpy(np.int64)
    first = profile.built_tracks["first_event"].to_numpy(np.int64)[slices]
    end = profile.built_tracks["end_event"].to_numpy(np.int64)[slices]
    events = np.concatenate([np.arange(a, b) for a, b in zip(first, end, strict=True)]
                            or [np.empty(0, np.int64)])
    events = events[~profile.derived[events] & ~np.isin(categories[profile.meta[events]],
                                                         _UNCOUNTED)]
    stream = stream_numbers(profile.stat_column(events, "stream"))
    return pd.DataFrame({"event": events, "iteration": _iterations(profile, events, stream),
                         "cpu": stream == -1})


@dataclass(frozen=True)
class TraceOpsPart:
    """One host's (rank's) part: its rank, the profiler steps its trace names (HTA's list of
    iterations, steps that hold no event included), its events grouped (PART_COLUMNS)."""

    rank: int
    steps: list[int]
    table: pd.DataFrame


def trace_ops_part(profile: Profile) -> TraceOpsPart:
    """One host's events per profiler step, name and device: a part for `host_parts`, grouped
    so that only a small table leaves the host."""
    names = profile.metadata["name"].to_numpy(dtype=object)
    steps = sorted({n for n in (_step_number(str(name)) for name in names) if n >= 0})
    found = step_events(profile)
    found = found[found["iteration"] >= 0]
    events = found["event"].to_numpy(np.int64)
    frame = pd.DataFrame({
        "iteration": found["iteration"].to_numpy(np.int64),
        "name": profile.metadata["name"].to_numpy(dtype=object)[profile.meta[events]],
        "device": np.where(found["cpu"].to_numpy(bool), "cpu", "gpu"),
        "time_ps": profile.duration_ps[events]})
    out = frame.groupby(["iteration", "name", "device"], sort=True).agg(
        occurrences=("time_ps", "size"), time_ps=("time_ps", "sum")).reset_index()
    out.insert(0, "rank", rank_of(profile))
    return TraceOpsPart(rank_of(profile), steps, out[PART_COLUMNS])


def stream_numbers(values: np.ndarray) -> np.ndarray:
    """Each `stream` arg as HTA reads it (`int()`, -1 where absent or not a number)."""
    def number(value: object) -> int:
        if value is None:
            return -1
        try:
            return int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError, OverflowError):
            return -1
    return np.fromiter((number(v) for v in values.tolist()), np.int64, values.shape[0])


def _iterations(profile: Profile, events: np.ndarray, stream: np.ndarray) -> np.ndarray:
    """The profiler step of each event (see the module doc); -1 for none."""
    out = np.full(events.shape[0], -1, np.int64)
    names = profile.metadata["name"].to_numpy(dtype=object)
    numbers = np.array([_step_number(str(n)) for n in names], np.int64)[profile.meta[events]]
    starts = profile.start_ps[events]
    cpu = stream < 0
    steps = np.flatnonzero(numbers >= 0)
    steps = steps[np.lexsort((starts[steps], ~cpu[steps]))]  # as Kineto writes them
    for step in steps.tolist():
        lo, hi = starts[step], starts[step] + profile.duration_ps[events[step]]
        out[cpu & (starts >= lo) & (starts < hi)] = numbers[step]
    has_corr, correlation = int_stat(profile, events, "correlation")
    launches = np.flatnonzero(has_corr & (stream == -1) & (correlation != -1))
    on_stream = np.flatnonzero(has_corr & (stream > 0))
    if launches.shape[0] and on_stream.shape[0]:
        order = launches[np.lexsort((starts[launches], correlation[launches]))]
        keys = correlation[order]
        last = np.searchsorted(keys, correlation[on_stream], side="right") - 1
        found = (last >= 0) & (keys[np.maximum(last, 0)] == correlation[on_stream])
        out[on_stream[found]] = out[order[last[found]]]
    return out


def _step_number(name: str) -> int:
    if not name.startswith("ProfilerStep"):
        return -1
    found = _STEP.match(name)
    return int(found.group(1)) if found else -1


def trace_parts(profile: Profile) -> list[TraceOpsPart]:
    """Every host's part (memoized: both sides of many comparisons reuse them)."""
    return profile.memo(("trace_diff_parts",),
                        lambda: [p.part for p in host_parts(profile, trace_ops_part)])


def _table(parts: list[TraceOpsPart]) -> pd.DataFrame:
    tables = [p.table for p in parts if len(p.table)]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=PART_COLUMNS)


def trace_scope(profile: Profile, rank: int | Sequence[int] | None = None,
                iteration: int | Sequence[int] | None = None) -> tuple[list[int], list[int]]:
    """The ranks and profiler steps compared: as asked, else the first of each (HTA's
    defaults); a ProfileError says what the profile has where it lacks one asked for."""
    parts = trace_parts(profile)
    ranks = sorted({p.rank for p in parts}) or [rank_of(profile)]
    chosen_ranks = ranks[:1] if rank is None else _listed(rank)
    missing = sorted(set(chosen_ranks) - set(ranks))
    if missing:
        raise ProfileError(f"{profile.source}: no rank {missing}; ranks: {ranks}.")
    steps = sorted({s for p in parts for s in p.steps})  # of every rank, as HTA lists them
    if not steps:
        raise ProfileError(f"{profile.source}: no ProfilerStep#N in the trace, so there is no "
                           "step to compare. Wrap each training step in torch.profiler's "
                           "schedule (prof.step()) so that the trace marks its steps.")
    chosen_steps = steps[:1] if iteration is None else _listed(iteration)
    missing = sorted(set(chosen_steps) - set(steps))
    if missing:
        raise ProfileError(f"{profile.source}: no profiler step {missing}; steps: {steps}.")
    return chosen_ranks, chosen_steps


def trace_ops(profile: Profile, rank: int | Sequence[int] | None = None,
              iteration: int | Sequence[int] | None = None, device: str = "all"
              ) -> pd.DataFrame:
    """Events of the chosen ranks and steps by name (OPS_COLUMNS): how many ran and their
    total time (us); `device` "cpu", "gpu" or "all" (HTA's DeviceType). `device` is "cpu",
    "gpu" or "cpu+gpu" where a name ran on both (a ProfilerStep annotation)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    ranks, steps = trace_scope(profile, rank, iteration)
    parts = _table(trace_parts(profile))
    rows = parts[parts["rank"].isin(ranks) & parts["iteration"].isin(steps)]
    if device != "all":
        rows = rows[rows["device"] == device]
    if not len(rows):
        return pd.DataFrame({"name": pd.Series(dtype=object), "device": pd.Series(dtype=object),
                             "occurrences": pd.Series(dtype=np.int64),
                             "time_us": pd.Series(dtype=np.float64)})
    out = rows.groupby("name", sort=True).agg(
        device=("device", lambda d: "+".join(sorted(set(d)))),
        occurrences=("occurrences", "sum"), time_ps=("time_ps", "sum")).reset_index()
    out["occurrences"] = out["occurrences"].astype(np.int64)
    out["time_us"] = out["time_ps"].astype(np.float64) / PS_PER_US
    return out[OPS_COLUMNS]


def _listed(value: int | Sequence[int]) -> list[int]:
    return [int(value)] if isinstance(value, (int, np.integer)) else [int(v) for v in value]
