"""Memory profile (XProf's memory_profile): what the framework's allocators held over time.

Read from the allocator's own bookkeeping events on `/host:CPU` (`MemoryAllocation`,
`MemoryDeallocation`; TensorFlow's BFC and CPU allocators and the TPU runtime write them), as
XProf does (xprof/convert/xplane_to_memory_profile.cc):

- each event is a snapshot of its allocator after the activity: stack reserved, heap
  allocated, free bytes, fragmentation, the allocator's lifetime peak; and what was asked for
  (requested and allocated bytes, address, framework op, region type, data type, shape);
- the memory id is the `allocator_name`, else `index_on_host`, else `device_ordinal`;
- snapshots are sorted by time; a deallocation takes the op, region, data type and shape of
  the allocation at its address;
- a snapshot belongs to the step whose period holds it (steps from `steps.find_steps`); one
  outside every step belongs to the step after it (the step before it + 1 past the last), as
  XProf numbers its step groups; in a file its profiler grouped (allocator events carry a
  `group_id`, TensorFlow 2's) the step is that group, one without it the group before + 1;
- the window's peak is the largest heap + stack; the breakdown at the peak lists the
  allocations made in the peak's step, up to the peak, that are still live, identical ones
  merged with a count, plus the heap not accounted for by them ("unused preallocated device
  memory") and the stack.

A PyTorch profiler (Kineto) trace has none of these; its `[memory]` events are read instead,
one allocator per device, by analysis/kineto/memory.py into the same snapshots.

Where we differ, on purpose: among snapshots tied at the peak, XProf takes the step of the
latest one but the time of the last one in file order (on files with several threads an
earlier moment, sometimes in another step, so its breakdown can miss every allocation); we
take the latest one for both. `step` is the step's number as marked (`train 14` is 14), where
XProf numbers its step groups from 0. Times are microseconds of the profile's timeline (the
Trace Viewer's), where XProf prints each event's offset from its thread's line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..profile.model import Profile
from .allocator_memory import (
    ALLOCATION,
    DEALLOCATION,
    NO_DATA_TYPE,
    SUMMARY_COLUMNS,
    AllocatorMemory,
    allocators,
    steps_of,
)
from .kineto.memory import MEMORY_PROFILE
from .parts import FormatPart, first_present, present
from .steps import find_steps

HOST_PLANE = "/host:CPU"
EVENT_NAMES = {"MemoryAllocation": ALLOCATION, "MemoryDeallocation": DEALLOCATION}
_INT_STATS = {
    "stack_reserved_bytes": "bytes_reserved", "heap_allocated_bytes": "bytes_allocated",
    "free_memory_bytes": "bytes_available", "peak_bytes_in_use": "peak_bytes_in_use",
    "requested_bytes": "requested_bytes", "allocation_bytes": "allocation_bytes",
    "address": "addr",
}
_TEXT_STATS = {"op_name": "tf_op", "region_type": "region_type", "shape": "shape"}
_INHERITED = ("op_name", "region_type", "data_type", "shape")
_DATA_TYPES = (
    NO_DATA_TYPE, "float", "double", "int32", "uint8", "int16", "int8", "string", "complex64",
    "int64", "bool", "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16",
    "complex128", "half", "resource", "variant", "uint32", "uint64", "float8_e5m2",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2fnuz", "int4",
    "uint4",
)
"""TensorFlow's DataType enum names (tensorflow/core/framework/types.proto), as XProf prints
them; +100 is the reference type (`float_ref`)."""
_REF_OFFSET = 100


def data_type_name(code: int) -> str:
    """The name XProf prints for a `data_type` stat (TensorFlow's DataType enum)."""
    if _REF_OFFSET < code < _REF_OFFSET + len(_DATA_TYPES):
        return f"{_DATA_TYPES[code - _REF_OFFSET]}_ref"
    if 0 <= code < len(_DATA_TYPES):
        return _DATA_TYPES[code]
    return f"unknown dtype enum ({code})"


class MemoryProfileAnalysis:
    """Every allocator of every host (`allocators`, keyed by (host, memory_id), in host order
    then memory id order as XProf sorts them). `kind`: "allocator" for XProf's allocator
    events, "kineto" for a PyTorch trace's `[memory]` events (one allocator per device)."""

    def __init__(self, allocators: dict[tuple[str, str], AllocatorMemory], source: str,
                 kind: str = "allocator"):
        self.allocators = allocators
        self.source = source
        self.kind = kind

    @property
    def memory_ids(self) -> list[str]:
        """Memory ids of every host, each once, sorted."""
        return sorted({key[1] for key in self.allocators})

    def hosts_of(self, memory_id: str) -> list[str]:
        return [h for h, m in self.allocators if m == memory_id]

    def allocator(self, memory_id: str | None = None, host: str | None = None
                  ) -> AllocatorMemory:
        """One allocator; default: the first memory id of the first host that has it."""
        keys = [k for k in self.allocators if (memory_id is None or k[1] == str(memory_id))
                and (host is None or k[0] == host)]
        if not keys:
            known = ", ".join(f"{m} on {h}" for h, m in self.allocators) or "none"
            raise KeyError(f"{self.source}: no allocator {memory_id!r}"
                           f"{f' on host {host!r}' if host else ''}; the profile has: {known}")
        return self.allocators[keys[0]]

    def summary(self) -> pd.DataFrame:
        """One row per host and allocator (SUMMARY_COLUMNS)."""
        kinds = [type(a) for a in self.allocators.values()]
        columns = kinds[0].summary_columns if kinds else SUMMARY_COLUMNS
        return pd.DataFrame([a.summary() for a in self.allocators.values()], columns=columns)


def analyze_memory_profile(profile: Profile) -> MemoryProfileAnalysis:
    """The allocators of `profile` (see the module doc); computed once per profile."""
    return profile.memo(("memory_profile",), lambda: _analyze(profile))


def memory_profile_available(profile: Profile) -> bool:
    """Whether any host plane holds an allocator event, or a Kineto trace a `[memory]` event
    (cheap: no stat is read)."""
    return bool(present(profile, FORMATS))


def has_allocator_events(profile: Profile) -> bool:
    """Whether a `/host:CPU` plane holds XProf's allocator events."""
    t = profile.built_tracks
    hidden = t[(t["section"] == HOST_PLANE) & (t["kind"] == "hidden")]
    return bool(len(hidden)) and bool(_allocator_events(profile).shape[0])


def _allocator_events(profile: Profile) -> np.ndarray:
    t = profile.built_tracks
    tracks = t.index[(t["section"] == HOST_PLANE) & (t["kind"] == "hidden")].to_numpy()
    if not tracks.shape[0]:
        return np.empty(0, np.int64)
    wanted = np.isin(profile.display_names, list(EVENT_NAMES))
    events = np.concatenate([np.arange(t.at[k, "first_event"], t.at[k, "end_event"])
                             for k in tracks.tolist()])
    return events[wanted[profile.meta[events]]]


def memory_profile_part(profile: Profile) -> list[tuple[str, pd.DataFrame]]:
    """One host's part (analysis/hosts.py): (memory id, its snapshots) per allocator in memory
    id order, in the host's frame (`time_ps` and `event` of the host's own profile)."""
    events = _allocator_events(profile)
    if not events.shape[0]:
        return []
    frame = _snapshots(profile, events)
    steps = find_steps(profile).markers
    grouped = bool((frame["group_id"] >= 0).any())
    out = []
    for memory_id, snaps in sorted(frame.groupby("memory_id", sort=False), key=lambda kv: kv[0]):
        snaps = snaps.sort_values(["time_ps", "event"], kind="stable").reset_index(drop=True)
        group = snaps.pop("group_id").to_numpy()
        snaps["step"] = (_grouped_steps(group) if grouped else
                         steps_of(snaps["time_ps"].to_numpy(), steps))
        inherit_allocations(snaps)
        out.append((str(memory_id), snaps))
    return out


def _analyze(profile: Profile) -> MemoryProfileAnalysis:
    """The allocators of the tool's first format the profile holds (FORMATS)."""
    part = first_present(profile, FORMATS)
    found = part.read(profile) if part is not None else {}
    kind = next(iter(found.values())).kind if found else AllocatorMemory.kind
    return MemoryProfileAnalysis(found, profile.source, kind)


def xspace_allocators(profile: Profile) -> dict[tuple[str, str], AllocatorMemory]:
    """The allocators XProf's allocator events describe, every host's."""
    return allocators(profile, memory_profile_part, AllocatorMemory)


def _snapshots(profile: Profile, events: np.ndarray) -> pd.DataFrame:
    """The stats of each allocator event, a column per stat (absent numbers are 0, absent
    text ""), as XProf reads them."""
    columns: dict[str, np.ndarray] = {}
    for column, stat in _INT_STATS.items():
        present, bits = profile.stat_ints(events, stat)
        values = bits.astype(np.uint64) if column == "address" else bits.view(np.int64)
        columns[column] = np.where(present, values, 0)
    for column, stat in _TEXT_STATS.items():
        columns[column] = _texts(profile.stat_column(events, stat))
    fragmentation = profile.stat_column(events, "fragmentation")
    columns["fragmentation"] = np.array([float(v) if isinstance(v, (int, float)) else 0.0
                                         for v in fragmentation.tolist()], np.float64)
    present, codes = profile.stat_ints(events, "data_type")
    columns["data_type"] = np.array([data_type_name(c) for c in
                                     np.where(present, codes.view(np.int64), 0).tolist()],
                                    dtype=object)
    frame = pd.DataFrame(columns)
    frame["memory_id"] = _memory_ids(profile, events)
    frame["activity"] = np.array([EVENT_NAMES[n] for n in
                                  profile.display_names[profile.meta[events]].tolist()], object)
    frame["in_use_bytes"] = frame["stack_reserved_bytes"] + frame["heap_allocated_bytes"]
    frame["time_ps"] = profile.start_ps[events]
    frame["event"] = events
    present, group = profile.stat_ints(events, "group_id")
    frame["group_id"] = np.where(present, group.view(np.int64), -1)
    return frame


def _texts(values: np.ndarray) -> np.ndarray:
    return np.array(["" if v is None else str(v) for v in values.tolist()], dtype=object)


def _memory_ids(profile: Profile, events: np.ndarray) -> np.ndarray:
    """`allocator_name`, else `index_on_host`, else `device_ordinal` ("" when none)."""
    ids = _texts(profile.stat_column(events, "allocator_name"))
    for stat in ("index_on_host", "device_ordinal"):
        missing = ids == ""
        if not missing.any():
            break
        present, bits = profile.stat_ints(events[missing], stat)
        numbers = bits.view(np.int64).tolist()
        ids[np.flatnonzero(missing)[present]] = [str(v) for v, p in
                                                 zip(numbers, present.tolist(), strict=True) if p]
    return ids


def _grouped_steps(group: np.ndarray) -> np.ndarray:
    """The steps of a file whose profiler grouped its events (each its `group_id`, -1 for
    none): a snapshot without one takes the one before it + 1 (0 before any), as XProf does."""
    at = np.arange(group.shape[0])
    last = np.maximum.accumulate(np.where(group >= 0, at, -1))
    before = np.where(last >= 0, group[np.maximum(last, 0)], -1)
    return np.where(group >= 0, group, before + 1)


def inherit_allocations(snaps: pd.DataFrame) -> None:
    """Deallocations take the op, region, data type and shape of the allocation at their
    address (the first one not yet matched; a repeated free keeps its own), in place."""
    is_alloc = (snaps["activity"] == ALLOCATION).to_numpy()
    address = snaps["address"].to_numpy().tolist()
    source = np.arange(len(snaps))
    open_allocs: dict[int, int] = {}
    for row, (alloc, addr) in enumerate(zip(is_alloc.tolist(), address, strict=True)):
        if alloc:
            open_allocs.setdefault(addr, row)
        elif addr in open_allocs:
            source[row] = open_allocs.pop(addr)
    if (source != np.arange(len(snaps))).any():
        for column in _INHERITED:
            values = snaps[column].to_numpy()
            snaps[column] = values[source]


FORMATS = (FormatPart("xspace", has_allocator_events, xspace_allocators), MEMORY_PROFILE)
"""Where allocators come from, XProf's own events first (analysis/parts.py)."""
