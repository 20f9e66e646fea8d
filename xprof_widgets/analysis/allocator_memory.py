"""An allocator's memory over time, as both formats give it: its snapshots (one per allocation or
deallocation), the peak, the breakdown of what was live there, the timeline XProf draws. The
memory profile (memory_profile.py) fills it from XSpace's allocator events, kineto/memory.py from
a PyTorch trace's `[memory]` events; neither knows the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US
from .hosts import host_parts

ALLOCATION, DEALLOCATION = "allocation", "deallocation"
TIMELINE_POINTS = 1000
"""XProf's timeline keeps at most this many snapshots (the largest heap + stack per window)."""
UNUSED_PREALLOCATED = "unused preallocated device memory"
STACK = "stack"
NO_STEP = -1
NO_DATA_TYPE = "INVALID"
"""TensorFlow's DataType 0, what XProf prints for a row with no data type."""

SNAPSHOT_COLUMNS = [
    "time_us", "activity", "stack_reserved_bytes", "heap_allocated_bytes", "free_memory_bytes",
    "in_use_bytes", "fragmentation", "peak_bytes_in_use", "requested_bytes", "allocation_bytes",
    "address", "op_name", "step", "region_type", "data_type", "shape", "event",
]
"""One row per allocator event, in time order; in_use_bytes = stack + heap."""
BREAKDOWN_COLUMNS = ["op_name", "allocation_bytes", "requested_bytes", "occurrences",
                     "region_type", "data_type", "shape"]
"""XProf's memory breakdown table (sizes in bytes where XProf prints GiB)."""
SUMMARY_COLUMNS = [
    "host", "memory_id", "num_allocs", "num_deallocs", "capacity_bytes", "peak_bytes",
    "peak_heap_bytes", "peak_stack_bytes", "peak_free_bytes", "peak_fragmentation",
    "peak_time_us", "peak_step", "lifetime_peak_bytes",
]
"""One row per host and allocator; peak_* are at the window's peak (heap + stack)."""

@dataclass(frozen=True)
class AllocatorMemory:
    """One allocator (memory id) of one host: its snapshots in time order and the peak."""

    host: str
    memory_id: str
    snapshots: pd.DataFrame
    """SNAPSHOT_COLUMNS, in time order."""
    columns = SNAPSHOT_COLUMNS
    """The snapshots' columns (a Kineto device's add its own: kineto/memory.py)."""
    summary_columns = SUMMARY_COLUMNS
    kind = "allocator"
    """What the view draws: XProf's allocator (stack, heap, fragmentation) or a Kineto device."""

    @cached_property
    def peak(self) -> int:
        """Row of the window's peak: the latest snapshot with the largest heap + stack."""
        in_use = self.snapshots["in_use_bytes"].to_numpy()
        return int(in_use.shape[0] - 1 - np.argmax(in_use[::-1]))

    def summary(self) -> dict:
        """The allocator's SUMMARY_COLUMNS as a dict."""
        s = self.snapshots
        at = s.iloc[self.peak]
        activity = s["activity"].to_numpy()
        return {
            "host": self.host, "memory_id": self.memory_id,
            "num_allocs": int((activity == ALLOCATION).sum()),
            "num_deallocs": int((activity == DEALLOCATION).sum()),
            "capacity_bytes": int(at["in_use_bytes"] + at["free_memory_bytes"]),
            "peak_bytes": int(at["in_use_bytes"]),
            "peak_heap_bytes": int(at["heap_allocated_bytes"]),
            "peak_stack_bytes": int(at["stack_reserved_bytes"]),
            "peak_free_bytes": int(at["free_memory_bytes"]),
            "peak_fragmentation": float(at["fragmentation"]),
            "peak_time_us": float(at["time_us"]), "peak_step": int(at["step"]),
            "lifetime_peak_bytes": int(s["peak_bytes_in_use"].max()),
        }

    def breakdown(self) -> pd.DataFrame:
        """Allocations live at the peak (BREAKDOWN_COLUMNS), largest first."""
        at = self.snapshots.iloc[self.peak]
        return active_allocations(self.snapshots, int(self.peak), int(at["step"]))

    def timeline(self, max_points: int | None = TIMELINE_POINTS) -> pd.DataFrame:
        """The snapshots, reduced as XProf reduces its timeline when there are more than
        `max_points` (None: all): in consecutive windows of equal size (some one longer), the
        snapshot with the largest heap + stack."""
        return self.snapshots.iloc[timeline_rows(self.snapshots["in_use_bytes"].to_numpy(),
                                                 max_points)].reset_index(drop=True)


def timeline_rows(in_use: np.ndarray, max_points: int | None) -> np.ndarray:
    """Rows XProf's max box filter keeps: `max_points` windows, the first ones `n //
    max_points` snapshots wide and the rest one wider; the first largest of each."""
    n = in_use.shape[0]
    if max_points is None or n <= max_points:
        return np.arange(n)
    width = n // max_points
    narrow = max_points * (width + 1) - n
    picks = []
    wide = max_points - narrow
    for start, size, count in ((0, width, narrow), (width * narrow, width + 1, wide)):
        block = in_use[start:start + size * count].reshape(count, size)
        picks.append(start + np.arange(count) * size + block.argmax(axis=1))
    return np.concatenate(picks)


def active_allocations(snapshots: pd.DataFrame, at: int, step: int) -> pd.DataFrame:
    """The breakdown at snapshot row `at`, counting the activities of `step` up to `at`'s time
    (XProf's ProcessActiveAllocations): allocations not freed since, merged when identical;
    the heap left unexplained by them (less what was freed of earlier steps' allocations) as
    "unused preallocated device memory", and the stack."""
    time = snapshots["time_us"].to_numpy()
    last = int(np.searchsorted(time, time[at], side="right"))
    window = snapshots.iloc[:last]
    window = window[window["step"].to_numpy() == step]
    is_alloc = window["activity"].to_numpy() == ALLOCATION
    address = window["address"].to_numpy()
    size = window["allocation_bytes"].to_numpy()
    live: dict[int, int] = {}  # address -> row of `window`, the last allocation there
    unmatched_free = 0
    for row, (alloc, addr) in enumerate(zip(is_alloc.tolist(), address.tolist(), strict=True)):
        if alloc:
            live[addr] = row
        elif live.pop(addr, None) is None:
            unmatched_free += int(size[row])
    freed = int(size[~is_alloc].sum())
    heap = int(snapshots["heap_allocated_bytes"].iat[at])
    unmapped = heap - int(size[is_alloc].sum()) + freed - unmatched_free
    rows = window.iloc[sorted(live.values())][BREAKDOWN_COLUMNS[:3] + BREAKDOWN_COLUMNS[4:]]
    special = []
    if unmapped > 0:
        special.append((UNUSED_PREALLOCATED, unmapped, "persist/dynamic"))
    stack = int(snapshots["stack_reserved_bytes"].iat[at])
    if stack > 0:
        special.append((STACK, stack, "stack"))
    extra = pd.DataFrame({
        "op_name": [s[0] for s in special], "allocation_bytes": [s[1] for s in special],
        "requested_bytes": [s[1] for s in special], "region_type": [s[2] for s in special],
        "data_type": [NO_DATA_TYPE] * len(special), "shape": ["unknown"] * len(special)})
    table = pd.concat([rows, extra], ignore_index=True) if len(extra) else \
        rows.reset_index(drop=True)
    keys = ["allocation_bytes", "requested_bytes", "op_name", "region_type", "data_type",
            "shape"]
    merged = (table.groupby(keys, sort=False).size().rename("occurrences").reset_index())
    merged = merged.sort_values(keys, ascending=[False, False, True, True, True, True],
                                kind="stable").reset_index(drop=True)
    merged["allocation_bytes"] = merged["allocation_bytes"].astype(np.int64)
    merged["requested_bytes"] = merged["requested_bytes"].astype(np.int64)
    merged["occurrences"] = merged["occurrences"].astype(np.int64)
    return merged[BREAKDOWN_COLUMNS]


def steps_of(time_ps: np.ndarray, markers: pd.DataFrame) -> np.ndarray:
    """The step of each snapshot: the one whose period holds it, else the next one (the last
    step's number + 1 after every step); NO_STEP when the host marks no steps."""
    if not len(markers):
        return np.full(time_ps.shape[0], NO_STEP, np.int64)
    spans = markers.groupby("step", sort=True).agg(start=("period_start_ps", "min"),
                                                   end=("end_ps", "max")).sort_values("start")
    number = spans.index.to_numpy(np.int64)
    start, end = spans["start"].to_numpy(), spans["end"].to_numpy()
    k = np.searchsorted(start, time_ps, side="right") - 1
    inside = (k >= 0) & (time_ps <= end[np.maximum(k, 0)])
    following = np.append(number, number[-1] + 1)[k + 1]
    return np.where(inside, number[np.maximum(k, 0)], following)


def allocators(profile: Any, part: Callable[[Any], list[tuple]], memory: type[AllocatorMemory]
               ) -> dict[tuple[str, str], AllocatorMemory]:
    """Every host's allocators from a per-host part (analysis/hosts.py) answering (memory id,
    snapshots in the host's frame, *what `memory` takes after the snapshots) per allocator,
    on the whole profile's timeline and event numbers, keyed by (host, memory id)."""
    out: dict[tuple[str, str], AllocatorMemory] = {}
    tracks = profile.built_tracks
    for found in host_parts(profile, part):
        # the host's events are numbered after the hosts before it: its first track's first
        base = int(tracks.loc[tracks["host"] == found.host, "first_event"].min())
        for memory_id, snaps, *more in found.part:
            shifted = {"time_ps": snaps["time_ps"] + found.shift_ps,
                       "event": snaps["event"] + base}
            if "paired_event" in snaps:
                paired = snaps["paired_event"].to_numpy()
                shifted["paired_event"] = np.where(paired >= 0, paired + base, -1)
            snaps = snaps.assign(**shifted)
            snaps["time_us"] = snaps["time_ps"] / PS_PER_US
            out[(found.host, memory_id)] = memory(found.host, memory_id,
                                                  snaps[memory.columns], *more)
    return out
