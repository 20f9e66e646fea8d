"""Memory profile of a PyTorch profiler (Kineto) trace, from its `[memory]` events.

With `profile_memory=True` PyTorch's profiler writes an instant event `[memory]` (category
`cpu_instant_event`) on the calling thread each time a device's allocator hands out or takes
back memory. Its args: `Addr`, `Bytes` (+ allocated, - freed), `Total Allocated` and `Total
Reserved` after it (reserved: what the caching allocator holds from the device; 0 on the CPU),
`Device Type` (c10::DeviceType: 0 CPU, 1 CUDA, ...), `Device Id` (-1 on the CPU) and `Ev Idx`
(the profiler's record order).

They are read here as the allocator snapshots of the memory profile (memory_profile.py) so the
one table, chart and view serve both, one memory id per device (`cuda:0`, `cpu`, as torch names
devices; accelerators first):

- heap_allocated_bytes = `Total Allocated` (where an event lacks it, as older PyTorch's may:
  the last stated total plus the `Bytes` since); free_memory_bytes = `Total Reserved` less it
  (reserved, not handed out; 0 where nothing is reserved); stack 0; fragmentation unknown (NaN);
- requested and allocation bytes = |`Bytes`|; op_name = the innermost `cpu_op` on the event's
  thread that encloses it, and a free takes its allocation's op (as XProf's deallocations do);
  the extra columns: reserved_bytes, cpu_op (the op around the event itself, a free's too),
  thread, ev_idx;
- snapshots in time order, events at one time in `Ev Idx` order (the profiler's record order,
  whichever thread wrote them): the order in which `Total Allocated` is the running sum of
  `Bytes`;
- the peak is the latest snapshot with the largest `Total Allocated`; what is live there is
  every allocation up to it whose address has not been freed since, one row each (address,
  size, time allocated, op, step, thread), plus what was allocated before the trace began and is
  still held (`Total Allocated` at the peak less the allocations listed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .kineto import CPU_OPS, args_of, events_of, innermost_enclosing
from .memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    NO_STEP,
    SNAPSHOT_COLUMNS,
    SUMMARY_COLUMNS,
    AllocatorMemory,
    inherit_allocations,
    steps_of,
)
from .steps import find_steps

MEMORY_EVENT = "[memory]"
DEVICE_TYPES = (
    "cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip", "fpga", "maia", "xla",
    "vulkan", "metal", "xpu", "mps", "meta", "hpu", "ve", "lazy", "ipu", "mtia",
    "privateuseone",
)
"""torch's names of c10::DeviceType, by number (`Device Type`)."""
BEFORE_TRACE = "allocated before the trace"
"""The breakdown's row for memory held at the peak that no allocation in the trace accounts for."""
EXTRA_COLUMNS = ["reserved_bytes", "cpu_op", "thread", "ev_idx"]
DEVICE_SNAPSHOT_COLUMNS = SNAPSHOT_COLUMNS + EXTRA_COLUMNS
DEVICE_BREAKDOWN_COLUMNS = ["op_name", "allocation_bytes", "requested_bytes", "occurrences",
                            "address", "allocated_us", "step", "thread", "event"]
"""One row per allocation live at the peak (occurrences 1; XProf's names where they apply)."""
DEVICE_SUMMARY_COLUMNS = SUMMARY_COLUMNS + ["peak_reserved_bytes", "max_reserved_bytes",
                                            "live_allocations"]
_ARGS = ("Addr", "Bytes", "Total Allocated", "Total Reserved", "Device Type", "Device Id",
         "Ev Idx")


class DeviceMemory(AllocatorMemory):
    """One device of a Kineto trace: its `[memory]` snapshots (DEVICE_SNAPSHOT_COLUMNS) and peak."""

    columns = DEVICE_SNAPSHOT_COLUMNS
    summary_columns = DEVICE_SUMMARY_COLUMNS

    def summary(self) -> dict:
        """SUMMARY_COLUMNS, then the reserved bytes at the peak and their maximum, and how many
        allocations of the trace are live at the peak."""
        s = self.snapshots
        at = s.iloc[self.peak]
        return {
            **super().summary(),  # heap = in use, stack 0, fragmentation NaN in these snapshots
            "peak_reserved_bytes": int(at["reserved_bytes"]),
            "max_reserved_bytes": int(s["reserved_bytes"].max()),
            "live_allocations": len(live_rows(s, self.peak)),
        }

    def breakdown(self) -> pd.DataFrame:
        """The allocations live at the peak (DEVICE_BREAKDOWN_COLUMNS), largest first, then
        the memory held from before the trace."""
        s = self.snapshots
        rows = s.iloc[live_rows(s, self.peak)]
        table = pd.DataFrame({
            "op_name": rows["op_name"].to_numpy(object),
            "allocation_bytes": rows["allocation_bytes"].to_numpy(np.int64),
            "requested_bytes": rows["requested_bytes"].to_numpy(np.int64),
            "occurrences": np.ones(len(rows), np.int64),
            "address": rows["address"].to_numpy(np.int64),
            "allocated_us": rows["time_us"].to_numpy(np.float64),
            "step": rows["step"].to_numpy(np.int64),
            "thread": rows["thread"].to_numpy(object),
            "event": rows["event"].to_numpy(np.int64)})
        table = table.sort_values(["allocation_bytes", "allocated_us"], ascending=[False, True],
                                  kind="stable")
        before = int(s["in_use_bytes"].iat[self.peak]) - int(table["allocation_bytes"].sum())
        if before > 0:
            extra = pd.DataFrame({"op_name": [BEFORE_TRACE], "allocation_bytes": [before],
                                  "requested_bytes": [before], "occurrences": [1],
                                  "address": [0], "allocated_us": [np.nan], "step": [NO_STEP],
                                  "thread": [""], "event": [-1]})
            table = pd.concat([table, extra.astype(table.dtypes.to_dict())])
        return table.reset_index(drop=True)[DEVICE_BREAKDOWN_COLUMNS]


def live_rows(snapshots: pd.DataFrame, at: int) -> np.ndarray:
    """Rows of the allocations up to row `at` whose address is not freed by then, in order: at
    each address the last event up to `at`, where it is an allocation (one at an address still
    held replaces the one there)."""
    address = snapshots["address"].to_numpy()[:at + 1]
    _, last_reversed = np.unique(address[::-1], return_index=True)
    last = np.sort(at - last_reversed)
    return last[snapshots["activity"].to_numpy()[last] == ALLOCATION]


def kineto_memory_available(profile: Profile) -> bool:
    """Whether any event is a `[memory]` event (reads no args)."""
    rows = np.flatnonzero(profile.display_names == MEMORY_EVENT)
    return bool(rows.shape[0]) and bool(np.isin(profile.meta, rows).any())


def memory_events(profile: Profile) -> np.ndarray:
    """Global indices of the `[memory]` events on host threads, in storage order."""
    rows = np.flatnonzero(profile.display_names == MEMORY_EVENT)
    events = np.flatnonzero(np.isin(profile.meta, rows))
    on_host = (profile.built_tracks["section_kind"] == "host").to_numpy(bool)
    return events[on_host[profile.track_of(events)]]


def kineto_memory_part(profile: Profile) -> list[tuple[str, pd.DataFrame]]:
    """One host's part (analysis/hosts.py), as memory_profile_part's: (memory id, its
    snapshots) per device, accelerators first, in the host's frame (`time_ps`, `event`)."""
    events = memory_events(profile)
    args = args_of(profile, events, _ARGS)
    numbers = {name: _ints(args[name]) for name in _ARGS}
    whole = numbers["Bytes"][0]
    events = events[whole]
    if not events.shape[0]:
        return []
    value = {name: np.where(present[whole], values[whole], 0)
             for name, (present, values) in numbers.items()}
    has_idx = numbers["Ev Idx"][0][whole]
    frame = _snapshots(profile, events, value, has_idx)
    frame["stated"] = numbers["Total Allocated"][0][whole]
    device_type = value["Device Type"]
    device_id = np.where(numbers["Device Id"][0][whole], value["Device Id"], -1)
    markers = find_steps(profile).markers
    out = []
    devices = np.unique(np.stack([device_type, device_id], axis=1), axis=0).tolist()
    for dtype, did in sorted(devices, key=lambda d: (d[0] == 0, d[0], d[1])):
        mine = (device_type == dtype) & (device_id == did)
        snaps = frame[mine].sort_values(["time_ps", "ev_idx", "event"], kind="stable")
        snaps = snaps.reset_index(drop=True)
        _allocated(snaps, snaps.pop("stated").to_numpy())
        snaps["step"] = steps_of(snaps["time_ps"].to_numpy(), markers)
        inherit_allocations(snaps)
        out.append((device_name(dtype, did), snaps))
    return out


def _allocated(snaps: pd.DataFrame, stated: np.ndarray) -> None:
    """The allocated bytes after each event, in place: `Total Allocated` where the event states
    it, else the last stated total (0 before any) plus the `Bytes` since (an older PyTorch's
    `[memory]` events may carry no totals)."""
    signed = np.where(snaps["activity"].to_numpy() == ALLOCATION, 1, -1) * \
        snaps["allocation_bytes"].to_numpy(np.int64)
    running = np.cumsum(signed)
    heap = snaps["heap_allocated_bytes"].to_numpy(np.int64)
    last = np.maximum.accumulate(np.where(stated, np.arange(stated.shape[0]), -1))
    base = np.where(last >= 0, (heap - running)[np.maximum(last, 0)], 0)
    allocated = np.where(stated, heap, running + base)
    for column in ("heap_allocated_bytes", "in_use_bytes", "peak_bytes_in_use"):
        snaps[column] = allocated
    snaps["free_memory_bytes"] = np.maximum(snaps["reserved_bytes"].to_numpy() - allocated, 0)


def device_name(device_type: int, device_id: int) -> str:
    """torch's name of a device: `cuda:0`, `cpu` (no index below 0)."""
    kind = DEVICE_TYPES[device_type] if 0 <= device_type < len(DEVICE_TYPES) else \
        f"device_type_{device_type}"
    return kind if device_id < 0 else f"{kind}:{device_id}"


def _ints(column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An object column of args as (present, int64 values); bools and non-integers are absent."""
    present = np.fromiter((type(v) is int for v in column.tolist()), bool, column.shape[0])
    values = np.zeros(column.shape[0], np.int64)
    values[present] = column[present].tolist()
    return present, values


def _snapshots(profile: Profile, events: np.ndarray, value: dict[str, np.ndarray],
               has_idx: np.ndarray) -> pd.DataFrame:
    """SNAPSHOT_COLUMNS (less step; the allocated and free bytes as stated, filled per device
    by `_allocated`) and the extra columns, in storage order."""
    size = value["Bytes"]
    allocated, reserved = value["Total Allocated"], value["Total Reserved"]
    is_alloc = size > 0
    ops = innermost_enclosing(profile, events, events_of(profile, CPU_OPS, "host"))
    op_names = np.where(ops >= 0, profile.display_names[profile.meta[np.maximum(ops, 0)]], "")
    op_names = op_names.astype(object)
    threads = profile.built_tracks["name"].to_numpy(object)[profile.track_of(events)]
    n = events.shape[0]
    empty = np.full(n, "", dtype=object)
    return pd.DataFrame({
        "time_ps": profile.start_ps[events],
        "activity": np.where(is_alloc, ALLOCATION, DEALLOCATION).astype(object),
        "stack_reserved_bytes": np.zeros(n, np.int64),
        "heap_allocated_bytes": allocated, "free_memory_bytes": np.zeros(n, np.int64),
        "in_use_bytes": allocated, "fragmentation": np.full(n, np.nan),
        "peak_bytes_in_use": allocated,
        "requested_bytes": np.abs(size), "allocation_bytes": np.abs(size),
        "address": value["Addr"], "op_name": np.where(is_alloc, op_names, "").astype(object),
        "region_type": empty, "data_type": empty.copy(), "shape": empty.copy(),
        "event": events, "reserved_bytes": reserved, "cpu_op": op_names, "thread": threads,
        "ev_idx": np.where(has_idx, value["Ev Idx"], np.iinfo(np.int64).max),
    })
