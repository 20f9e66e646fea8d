"""Memory profile of a PyTorch profiler (Kineto) trace, from its `[memory]` events.

With `profile_memory=True` PyTorch's profiler writes an instant event `[memory]` (category
`cpu_instant_event`) on the calling thread each time a device's allocator hands out or takes
back memory. Its args: `Bytes` (+ allocated, - freed), `Device Type` (c10::DeviceType: 0 CPU,
1 CUDA, ...), `Device Id` (-1 on the CPU); since PyTorch 1.10 also `Addr`, `Total Allocated`
and `Total Reserved` after it (reserved: what the caching allocator holds from the device; 0 on
the CPU) and `Ev Idx` (the profiler's record order). Older traces carry only the first three.

They are read here as the allocator snapshots of the memory profile (memory_profile.py) so the
one table, chart and view serve both, one memory id per device (`cuda:0`, `cpu`, as torch names
devices; accelerators first):

- snapshots in time order, events at one time in `Ev Idx` order (the profiler's record order,
  whichever thread wrote them): the order in which `Total Allocated` is the running sum of
  `Bytes`;
- each free is paired with an allocation (`paired_event`, both ways): by `Addr` where every
  event of the device carries one (the allocation at that address not yet freed); else, as
  older traces allow, by size: the latest allocation of the same size on the device not yet
  freed (last in, first out: on HTA's df_index_resolver trace, stripped of its addresses, it
  pairs 24.8% of the frees as the addresses do, first in first out 9.0%, and gets 71% of the
  bytes live at the peak to the right op, FIFO 61%). A free with no such allocation frees
  memory allocated before the trace;
- heap_allocated_bytes = `Total Allocated`; where an event lacks it, the last stated total
  plus the `Bytes` since; before any stated total, the running sum from the bytes that the
  unpaired frees before it show were held (0 when none): what the curve needs, no more;
- reserved_bytes = `Total Reserved`, NaN (unknown) where the event lacks it; free_memory_bytes
  = reserved less allocated (NaN where unknown); stack 0; fragmentation unknown (NaN);
- requested and allocation bytes = |`Bytes`|; address = `Addr` (0 where absent); op_name = the
  innermost `cpu_op` on the event's thread whose span [start, end) holds it (`innermost_op`),
  and a free takes its allocation's op (as XProf's deallocations do); the extra columns:
  reserved_bytes, cpu_op (the op around the event itself, a free's too), thread, ev_idx,
  paired_event;
- the peak is the latest snapshot with the largest allocated bytes; what is live there is every
  allocation up to it not paired with a free by then, one row each (address, size, time
  allocated, op, step, thread), plus what was allocated before the trace and is still held (the
  allocated bytes at the peak less the allocations listed);
- per op, PyTorch's TensorBoard plugin's Memory View (its memory_parser): for the ops whose
  name is one of its operators (a `cpu_op` other than `ProfilerStep#`, `Optimizer.*`, the
  DataLoader's `__next__` and `[Distributed]DataParallel.forward`), the allocations and frees
  whose innermost `cpu_op` it is (self) and those inside it at any depth (inclusive): count
  and bytes of each, and the increase (allocated less freed); an op's inclusive figures are
  summed over its calls by name, so an op inside another of its name counts twice, as there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...profile.model import Profile
from ..allocator_memory import (
    ALLOCATION,
    DEALLOCATION,
    NO_STEP,
    SNAPSHOT_COLUMNS,
    SUMMARY_COLUMNS,
    AllocatorMemory,
    allocators,
    steps_of,
)
from ..parts import FormatPart
from ..steps import find_steps
from . import CPU_OPS, args_of, events_of, innermost_enclosing

MEMORY_EVENT = "[memory]"
DEVICE_TYPES = (
    "cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep", "hip", "fpga", "maia", "xla",
    "vulkan", "metal", "xpu", "mps", "meta", "hpu", "ve", "lazy", "ipu", "mtia",
    "privateuseone",
)
"""torch's names of c10::DeviceType, by number (`Device Type`)."""
BEFORE_TRACE = "allocated before the trace"
"""The breakdown's row for memory held at the peak that no allocation in the trace accounts for."""
BY_ADDRESS, BY_SIZE = "address", "size"
"""How a device's frees are paired with its allocations (summary's `pairing`)."""
EXTRA_COLUMNS = ["reserved_bytes", "cpu_op", "thread", "ev_idx", "paired_event"]
DEVICE_SNAPSHOT_COLUMNS = SNAPSHOT_COLUMNS + EXTRA_COLUMNS
DEVICE_BREAKDOWN_COLUMNS = ["op_name", "allocation_bytes", "requested_bytes", "occurrences",
                            "address", "allocated_us", "step", "thread", "event"]
"""One row per allocation live at the peak (occurrences 1; XProf's names where they apply)."""
DEVICE_SUMMARY_COLUMNS = SUMMARY_COLUMNS + ["peak_reserved_bytes", "max_reserved_bytes",
                                            "live_allocations", "peak_op", "pairing"]
OP_COLUMNS = ["op_name", "calls", "allocation_count", "allocation_bytes", "free_count",
              "free_bytes", "increase_bytes", "self_allocation_count", "self_allocation_bytes",
              "self_free_count", "self_free_bytes", "self_increase_bytes"]
"""The Memory View of PyTorch's TensorBoard plugin, one row per op name: inclusive figures,
then self (free counts and bytes are ours; the plugin's increase is allocated less freed)."""
NOT_OPERATORS = ("ProfilerStep#", "Optimizer.", "enumerate(DataPipe)#")
"""Name prefixes of the `cpu_op`s the plugin does not count as operators (nor do their own
events count for the ops around them); also the DataLoader's `enumerate(DataLoader)#...
.__next__` and `DataParallel.forward`, `DistributedDataParallel.forward`."""
_ARGS = ("Addr", "Bytes", "Total Allocated", "Total Reserved", "Device Type", "Device Id",
         "Ev Idx")
_METRICS = ("allocation_count", "allocation_bytes", "free_count", "free_bytes")


@dataclass(frozen=True)
class DeviceMemory(AllocatorMemory):
    """One device of a Kineto trace: its `[memory]` snapshots (DEVICE_SNAPSHOT_COLUMNS), peak
    and memory per op (OP_COLUMNS)."""

    ops: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=OP_COLUMNS))
    columns = DEVICE_SNAPSHOT_COLUMNS
    summary_columns = DEVICE_SUMMARY_COLUMNS
    kind = "kineto"

    def summary(self) -> dict:
        """SUMMARY_COLUMNS (no stack, fragmentation NaN; capacity and free bytes from the
        reserved bytes, None where the trace does not state them), then the reserved bytes at
        the peak and their maximum (None: unknown), how many allocations of the trace are live
        at the peak, the op that allocated at the peak and how frees were paired."""
        s = self.snapshots
        at = s.iloc[self.peak]
        activity = s["activity"].to_numpy()
        reserved = s["reserved_bytes"].to_numpy(np.float64)
        allocated = int(at["in_use_bytes"])
        return {
            "host": self.host, "memory_id": self.memory_id,
            "num_allocs": int((activity == ALLOCATION).sum()),
            "num_deallocs": int((activity == DEALLOCATION).sum()),
            "capacity_bytes": _known(max(at["reserved_bytes"], allocated)),
            "peak_bytes": allocated, "peak_heap_bytes": allocated, "peak_stack_bytes": 0,
            "peak_free_bytes": _known(at["free_memory_bytes"]),
            "peak_fragmentation": float("nan"),
            "peak_time_us": float(at["time_us"]), "peak_step": int(at["step"]),
            "lifetime_peak_bytes": int(s["peak_bytes_in_use"].max()),
            "peak_reserved_bytes": _known(at["reserved_bytes"]),
            "max_reserved_bytes": _known(np.nanmax(reserved) if np.isfinite(reserved).any()
                                         else np.nan),
            "live_allocations": len(live_rows(s, self.peak)),
            "peak_op": str(at["op_name"]),
            "pairing": BY_ADDRESS if bool((s["address"].to_numpy() != 0).all()) else BY_SIZE,
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


def _known(value: float) -> int | None:
    """Bytes as an int, None where unknown (NaN)."""
    return None if math.isnan(value) else int(value)


def live_rows(snapshots: pd.DataFrame, at: int) -> np.ndarray:
    """Rows of the allocations up to row `at` not freed by then (not paired with a free, or
    with one after `at`), in order."""
    paired = paired_rows(snapshots)[:at + 1]
    is_alloc = snapshots["activity"].to_numpy()[:at + 1] == ALLOCATION
    return np.flatnonzero(is_alloc & ((paired < 0) | (paired > at)))


def paired_rows(snapshots: pd.DataFrame) -> np.ndarray:
    """The row of each snapshot's `paired_event` (-1 for none)."""
    return pd.Index(snapshots["event"].to_numpy()).get_indexer(
        snapshots["paired_event"].to_numpy())


def pair_lifo(key: np.ndarray, is_alloc: np.ndarray) -> np.ndarray:
    """Pairs each free with the latest allocation of its key not yet freed (rows in event
    order); the paired row of each row, both ways, -1 for none (a free with no open
    allocation of its key, an allocation never freed).

    Columnar: rows grouped by key (in order within each); the open allocations of a key
    after each row are the running count of allocations less frees, reflected at 0 (a free
    with none open pairs with nothing and leaves it 0). Last in, first out pairs an
    allocation that leaves n open with the next free of its key that starts from n open:
    sorted by (key, level, row), those two are neighbours."""
    n = key.shape[0]
    out = np.full(n, -1, np.int64)
    if not n:
        return out
    order = np.lexsort((np.arange(n), key))
    start = np.ones(n, bool)
    start[1:] = key[order][1:] != key[order][:-1]
    group = np.cumsum(start) - 1
    step = np.where(is_alloc[order], 1, -1)
    total = np.cumsum(step)
    running = total - (total - step)[start][group]
    spread = 2 * n + 2  # keeps each group's running minimum apart from the one before
    low = np.minimum(np.minimum.accumulate(running - group * spread) + group * spread, 0)
    open_after = running - low
    open_before = np.where(start, 0, np.roll(open_after, 1))
    take = (step > 0) | (open_before > 0)  # allocations, and frees that find one open
    level = np.where(step > 0, open_after, open_before)[take]
    rows, group, frees = order[take], group[take], (step < 0)[take]
    by_level = np.lexsort((rows, level, group))
    rows, group, level, frees = rows[by_level], group[by_level], level[by_level], frees[by_level]
    first = np.flatnonzero(~frees[:-1] & frees[1:] & (group[:-1] == group[1:])
                           & (level[:-1] == level[1:]))
    out[rows[first]] = rows[first + 1]
    out[rows[first + 1]] = rows[first]
    return out


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


def kineto_memory_part(profile: Profile) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """One host's part (analysis/hosts.py), as memory_profile_part's: (memory id, its
    snapshots, its memory per op) per device, accelerators first, in the host's frame
    (`time_ps`, `event`)."""
    events = memory_events(profile)
    args = args_of(profile, events, _ARGS)
    numbers = {name: _ints(args[name]) for name in _ARGS}
    whole = numbers["Bytes"][0]
    events = events[whole]
    if not events.shape[0]:
        return []
    present = {name: p[whole] for name, (p, _) in numbers.items()}
    value = {name: np.where(present[name], values[whole], 0)
             for name, (_, values) in numbers.items()}
    cpu_ops = events_of(profile, CPU_OPS, "host")
    thread = profile.track_of(events)
    op_of = innermost_op(profile, events, thread, cpu_ops)
    frame = _snapshots(profile, events, value, present, op_of)
    frame["op_track"] = thread
    device_type = value["Device Type"]
    device_id = np.where(present["Device Id"], value["Device Id"], -1)
    markers = find_steps(profile).markers
    operators = cpu_ops[_operators(profile, cpu_ops)]
    out = []
    devices = np.unique(np.stack([device_type, device_id], axis=1), axis=0).tolist()
    for dtype, did in sorted(devices, key=lambda d: (d[0] == 0, d[0], d[1])):
        mine = (device_type == dtype) & (device_id == did)
        snaps = frame[mine].sort_values(["time_ps", "ev_idx", "event"], kind="stable")
        snaps = snaps.reset_index(drop=True)
        paired = _pair(snaps, snaps.pop("has_addr").to_numpy())
        _allocated(snaps, snaps.pop("stated").to_numpy(), paired)
        snaps["step"] = steps_of(snaps["time_ps"].to_numpy(), markers)
        ops = op_memory(profile, operators, snaps, snaps.pop("op_event").to_numpy(),
                        snaps.pop("op_track").to_numpy())
        out.append((device_name(dtype, did), snaps, ops))
    return out


def _pair(snaps: pd.DataFrame, has_addr: np.ndarray) -> np.ndarray:
    """Pairs the device's frees with its allocations (by address where every event has one,
    else by size), in place: paired_event both ways, and a free takes its allocation's op.
    Returns the paired rows."""
    key = snaps["address" if has_addr.all() else "allocation_bytes"].to_numpy(np.int64)
    is_alloc = snaps["activity"].to_numpy() == ALLOCATION
    paired = pair_lifo(key, is_alloc)
    events = snaps["event"].to_numpy()
    snaps["paired_event"] = np.where(paired >= 0, events[np.maximum(paired, 0)], -1)
    op = snaps["op_name"].to_numpy()
    snaps["op_name"] = np.where(~is_alloc & (paired >= 0), op[np.maximum(paired, 0)], op)
    return paired


def _allocated(snaps: pd.DataFrame, stated: np.ndarray, paired: np.ndarray) -> None:
    """The allocated bytes after each event, in place: `Total Allocated` where the event states
    it, else the last stated total plus the `Bytes` since; before any stated total, the running
    sum from what the unpaired frees before it show was held (older traces state none)."""
    is_alloc = snaps["activity"].to_numpy() == ALLOCATION
    size = snaps["allocation_bytes"].to_numpy(np.int64)
    running = np.cumsum(np.where(is_alloc, size, -size))
    heap = snaps["heap_allocated_bytes"].to_numpy(np.int64)
    at = np.arange(stated.shape[0])
    last = np.maximum.accumulate(np.where(stated, at, -1))
    first = int(np.argmax(stated)) if stated.any() else stated.shape[0]
    held = int(size[:first][~is_alloc[:first] & (paired[:first] < 0)].sum())
    base = np.where(last >= 0, (heap - running)[np.maximum(last, 0)], held)
    allocated = np.where(stated, heap, running + base)
    for column in ("heap_allocated_bytes", "in_use_bytes", "peak_bytes_in_use"):
        snaps[column] = allocated
    snaps["free_memory_bytes"] = np.maximum(snaps["reserved_bytes"].to_numpy() - allocated, 0)


def innermost_op(profile: Profile, events: np.ndarray, thread: np.ndarray, cpu_ops: np.ndarray
                 ) -> np.ndarray:
    """The innermost `cpu_op` on each instant event's thread (`thread`: its track) whose span
    [start, end) holds it
    (-1 none): an event stamped at the tick an op ends is taken as after it, as the plugin
    does (an op's inputs are freed as it returns). Ops on a thread nest, so it is the last op
    to start at or before the event, or the first of that op's ancestors still running: one
    step up per level, for all events at once."""
    order = np.lexsort((-profile.duration_ps[cpu_ops], profile.start_ps[cpu_ops],
                        profile.track_of(cpu_ops)))
    ops = cpu_ops[order]
    track = profile.track_of(ops)
    start = profile.start_ps[ops]
    end = start + profile.duration_ps[ops]
    parent = pd.Index(ops).get_indexer(innermost_enclosing(profile, ops, ops))
    time = profile.start_ps[events]
    at = np.full(events.shape[0], -1, np.int64)
    for k in np.unique(thread).tolist():
        lo, hi = np.searchsorted(track, [k, k + 1])
        mine = thread == k
        at[mine] = np.where(hi > lo, lo + np.searchsorted(start[lo:hi], time[mine],
                                                          side="right") - 1, -1)
        at[mine & (at < lo)] = -1
    while True:  # once per level of ops that ended before their events
        ended = (at >= 0) & (end[np.maximum(at, 0)] <= time)
        if not ended.any():
            return np.where(at >= 0, ops[np.maximum(at, 0)], -1)
        at[ended] = parent[at[ended]]


def _operators(profile: Profile, ops: np.ndarray) -> np.ndarray:
    """Which of these `cpu_op`s the plugin counts as operators (NOT_OPERATORS)."""
    names, code = np.unique(profile.display_names[profile.meta[ops]].astype(str),
                            return_inverse=True)
    plain = np.array([not (n.startswith(NOT_OPERATORS)
                           or n.startswith("enumerate(DataLoader)#") and n.endswith(".__next__")
                           or n in ("DataParallel.forward", "DistributedDataParallel.forward"))
                      for n in names.tolist()], bool)
    return plain[code.reshape(-1)] if names.shape[0] else np.zeros(0, bool)


def op_memory(profile: Profile, operators: np.ndarray, snaps: pd.DataFrame,
              op_event: np.ndarray, op_track: np.ndarray) -> pd.DataFrame:
    """OP_COLUMNS for one device: `operators` are the operator `cpu_op`s in storage order,
    `op_event` the innermost `cpu_op` around each snapshot's event (-1 none), `op_track` the
    track of the ops of its thread. Events whose
    innermost op is not an operator count for no op. Inclusive figures: the events on an op's
    thread within its span [start, end) (ops on one thread nest), summed per op, then per
    name."""
    counted = np.isin(op_event, operators)
    is_alloc = (snaps["activity"].to_numpy() == ALLOCATION)[counted]
    size = snaps["allocation_bytes"].to_numpy(np.int64)[counted]
    metrics = np.stack([is_alloc, np.where(is_alloc, size, 0), ~is_alloc,
                        np.where(is_alloc, 0, size)], axis=1).astype(np.int64)
    owner = np.searchsorted(operators, op_event[counted])
    self_ = np.zeros((operators.shape[0], 4), np.int64)
    np.add.at(self_, owner, metrics)
    inclusive = _within(profile, operators, profile.start_ps[snaps["event"].to_numpy()[counted]],
                        op_track[counted], metrics)
    names = profile.display_names[profile.meta[operators]].astype(object)
    frame = pd.DataFrame({"op_name": names, "calls": 1})
    for k, metric in enumerate(_METRICS):
        frame[metric] = inclusive[:, k]
        frame[f"self_{metric}"] = self_[:, k]
    table = frame.groupby("op_name", sort=True).sum().reset_index()
    table["increase_bytes"] = table["allocation_bytes"] - table["free_bytes"]
    table["self_increase_bytes"] = table["self_allocation_bytes"] - table["self_free_bytes"]
    table = table[(table[["allocation_count", "free_count"]].to_numpy() != 0).any(axis=1)]
    table = table.sort_values(["self_increase_bytes", "op_name"], ascending=[False, True],
                              kind="stable")
    return table.reset_index(drop=True)[OP_COLUMNS].astype(
        {c: np.int64 for c in OP_COLUMNS[1:]})


def _within(profile: Profile, ops: np.ndarray, times: np.ndarray, tracks: np.ndarray,
            metrics: np.ndarray) -> np.ndarray:
    """Per op, the sum of `metrics` over the events (at `times`, of the ops' `tracks`) on its
    track within its span [start, end)
    (as `innermost_op` reads spans), by prefix sums per track (a loop over tracks, not
    events)."""
    out = np.zeros((ops.shape[0], metrics.shape[1]), np.int64)
    op_track = profile.track_of(ops)
    for track in np.unique(tracks).tolist():
        mine = tracks == track
        time = times[mine]
        order = np.argsort(time, kind="stable")
        time = time[order]
        prefix = np.vstack([np.zeros((1, metrics.shape[1]), np.int64),
                            np.cumsum(metrics[mine][order], axis=0)])
        here = np.flatnonzero(op_track == track)
        start = profile.start_ps[ops[here]]
        lo = np.searchsorted(time, start, side="left")
        hi = np.searchsorted(time, start + profile.duration_ps[ops[here]], side="left")
        out[here] = prefix[hi] - prefix[lo]
    return out


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
               present: dict[str, np.ndarray], op_of: np.ndarray) -> pd.DataFrame:
    """SNAPSHOT_COLUMNS (less step; the allocated and free bytes as stated, filled per device
    by `_allocated`), the extra columns (less paired_event) and, for the device's pass,
    has_addr, stated and op_event (op_track added by the caller), in storage order."""
    size = value["Bytes"]
    allocated = value["Total Allocated"]
    reserved = np.where(present["Total Reserved"], value["Total Reserved"], np.nan)
    is_alloc = size > 0
    op_names = np.where(op_of >= 0, profile.display_names[profile.meta[np.maximum(op_of, 0)]],
                        "").astype(object)
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
        "ev_idx": np.where(present["Ev Idx"], value["Ev Idx"], np.iinfo(np.int64).max),
        "has_addr": present["Addr"], "stated": present["Total Allocated"], "op_event": op_of,
    })


def kineto_allocators(profile: Profile) -> dict[tuple[str, str], DeviceMemory]:
    """Every rank's devices as its `[memory]` events describe them."""
    return allocators(profile, kineto_memory_part, DeviceMemory)


MEMORY_PROFILE = FormatPart("kineto", kineto_memory_available, kineto_allocators)
"""Memory Profile's Kineto part (analysis/parts.py)."""
