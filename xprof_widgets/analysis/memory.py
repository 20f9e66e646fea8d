"""Memory viewer analysis: replay XLA's heap simulation of one module and memory space.

Follows XProf's memory viewer (xprof/convert/hlo_proto_to_memory_visualization_utils.cc):

- the heap-simulator trace is the one XLA ran for the space's temporary allocation (found from
  the allocation of each trace's first buffer); when several or none qualify, the trace with the
  most events in that space;
- replay in program order: ALLOC adds a buffer's padded size (the logical buffer size, tiling
  included) and unpadded size (elements x element bits, no layout); FREE subtracts once the
  reference count of the buffer's canonical buffer reaches 0; SHARE_WITH points a buffer at a
  canonical buffer and, when that buffer had been freed, brings its memory back;
- allocations of indefinite lifetime (entry parameters, maybe-live-out outputs, constants;
  not thread-local scratch) are a constant baseline: each counts its allocation size and is
  shown by its largest logical buffer;
- the peak is the first step where the padded total reaches its maximum; the buffers live there
  are listed in the order they became live, buffers under 16 KiB lumped into one entry.

Where we differ, on purpose: a buffer defined at a nested tuple index ({1,0}) gets that
subshape (XProf takes the top-level element of the last index); the unpadded baseline subtracts
the padding of the indefinite buffers (XProf counts them fully padded); the buffers of the
baseline are listed in every memory space (XProf lists them for HBM only, though it adds them
to the peak); a shared region reports the size of the memory it occupies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .._native.memory import replay as _replay
from .._native.memory import span_hashes as _span_hashes
from ..errors import ProfileError
from ..profile.hlo import (
    BufferAssignment,
    HloModule,
    IdIndex,
    scan_buffer_assignment,
    shape_to_string,
    subshape,
)
from ..profile.schema import MEMORY_SPACES

SMALL_BUFFER_BYTES = 16 * 1024
MIB = float(1 << 20)
# Memory spaces in the order a space selector lists them.
SPACE_ORDER = ("HBM", "VMEM", "SMEM", "CMEM", "SFlag", "SparseCore", "Host")
_COLOR_OF = {name.lower(): color for color, name in MEMORY_SPACES.items()}
_FLAG_THREAD_LOCAL, _FLAG_PARAMETER, _FLAG_LIVE_OUT, _FLAG_CONSTANT = 1, 2, 4, 16
# Thread-local allocations are per-thread scratch: XProf 2.24 leaves them out of the baseline.
_INDEFINITE = _FLAG_PARAMETER | _FLAG_LIVE_OUT | _FLAG_CONSTANT
ALLOC, FREE, SHARE_WITH = 0, 1, 2
_EVENT_NAMES = np.array(["alloc", "free", "share_with"])
_NO_BUFFER_ASSIGNMENT = (
    "profile captured without buffer assignment; JAX writes it by default with "
    "jax.profiler.trace (and XProf's capture does too), so capture the profile again that way "
    "rather than from an HLO dump or a tool that strips it")

# replay status codes (as _native/memory.pyx returns them)
_OK, _FREED_TWICE, _NEGATIVE_HEAP, _SHARE_CYCLE = 0, 1, 2, 3


def _category(flags: int) -> str:
    """XProf's allocation type: the first of parameter, output, thread-local, constant."""
    if flags & _FLAG_PARAMETER:
        return "parameter"
    if flags & _FLAG_LIVE_OUT:
        return "output"
    if flags & _FLAG_THREAD_LOCAL:
        return "thread-local"
    if flags & _FLAG_CONSTANT:
        return "constant"
    return "temporary"


def _space_name(color: int) -> str:
    return MEMORY_SPACES.get(color, f"color{color}")


def _color(memory_space: str | int) -> int:
    if isinstance(memory_space, (int, np.integer)):
        return int(memory_space)
    key = memory_space.lower()
    if key.startswith("color") and key[5:].isdigit():
        return int(key[5:])
    if key not in _COLOR_OF:
        raise ProfileError(f"unknown memory space {memory_space!r}; expected one of "
                           f"{', '.join(SPACE_ORDER)} (or a colour number)")
    return _COLOR_OF[key]


# ---- buffer assignment as rows ------------------------------------------------------------------
@dataclass(frozen=True)
class _Buffers:
    """Logical buffers of a module joined to their allocations and defining instructions."""

    ba: BufferAssignment
    index: IdIndex  # logical buffer id -> row
    sizes: np.ndarray
    colors: np.ndarray
    instruction: np.ndarray  # instruction row, -1 if unknown
    alloc: np.ndarray  # allocation row, -1 if unassigned
    unpadded: np.ndarray
    known: np.ndarray  # assigned and defined by a known instruction (as XProf requires)

    @property
    def ids(self) -> np.ndarray:
        return self.ba.lbs[:, 0]

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """Rows of logical buffer ids; -1 where unknown."""
        rows = self.index(ids)
        return np.where(self.known[rows], rows, -1) if len(rows) else rows


def _buffers(module: HloModule, ba: BufferAssignment) -> _Buffers:
    lbs = ba.lbs
    index = IdIndex(lbs[:, 0])
    instruction = module.rows_of_ids(lbs[:, 3])
    alloc = np.full(len(lbs) + 1, -1, np.int64)  # the extra slot absorbs unknown ids
    owner = np.repeat(np.arange(len(ba.allocs)), ba.allocs[:, 6])
    alloc[index(ba.assigned[:, 0])] = owner  # a later assignment wins, as in XProf's map
    alloc = alloc[:-1]
    unpadded = module.shape_unpadded(instruction, ba.shape_index, lbs[:, 4:6])
    unpadded = np.where(unpadded < 0, lbs[:, 1], unpadded)  # shape unknown: assume no padding
    known = np.append((alloc >= 0) & (instruction >= 0), False)  # index -1 -> False
    return _Buffers(ba, index, lbs[:, 1], lbs[:, 2], instruction, alloc, unpadded, known)


def _choose_trace(bufs: _Buffers, color: int, rows: np.ndarray) -> int:
    """The heap-simulator trace of `color`: the one XLA ran for the space's temporary allocation
    (found from its first event's buffer); the one with most events of the colour otherwise.
    `rows`: the logical-buffer row of every event of every trace."""
    ba = bufs.ba
    traces = ba.traces
    if not len(traces):
        return -1
    trace_of_event = np.repeat(np.arange(len(traces)), traces[:, 1])
    hits = np.bincount(trace_of_event, weights=(rows >= 0) & (bufs.colors[rows.clip(0)] == color),
                       minlength=len(traces)) if len(rows) else np.zeros(len(traces))
    owned = []
    trace_of_alloc: dict[int, int] = {}
    for t, (first, count, _, _) in enumerate(traces):
        if count and rows[first] >= 0:
            trace_of_alloc[int(bufs.alloc[rows[first]])] = t  # the last trace of an allocation
    for a, t in trace_of_alloc.items():
        flags, alloc_color = ba.allocs[a, 2], ba.allocs[a, 3]
        if alloc_color == color and not flags & _INDEFINITE:
            owned.append(t)
    candidates = owned or list(range(len(traces)))
    best = max(candidates, key=lambda t: (hits[t], -t))
    return best if hits[best] > 0 or owned else -1


# ---- public API --------------------------------------------------------------------------------
def _as_module(hlo_proto: Any, where: str | None, program_id: int | None = None) -> HloModule:
    if isinstance(hlo_proto, HloModule):
        return hlo_proto
    return HloModule(hlo_proto, program_id=program_id, where=where or "HLO proto")


def _label(module: HloModule) -> str:
    return f"{module.name}({module.program_id})"


def _present_spaces(ba: BufferAssignment) -> list[str]:
    colors = set(ba.lbs[:, 2].tolist()) | set(ba.allocs[ba.allocs[:, 1] > 0, 3].tolist())
    names = [_space_name(c) for c in sorted(colors)]
    return sorted(names, key=lambda s: SPACE_ORDER.index(s) if s in SPACE_ORDER else 99)


def _scan(module: HloModule) -> BufferAssignment:
    data = module.buffer_assignment_bytes
    ba = None if data is None else scan_buffer_assignment(data, module.where)
    if ba is None or not (len(ba.lbs) or len(ba.allocs)):
        raise ProfileError(f"{module.where}: HLO module {_label(module)} has no buffer "
                           f"assignment, so its memory use cannot be shown: "
                           f"{_NO_BUFFER_ASSIGNMENT}.")
    return ba


def memory_spaces(hlo_proto: Any) -> list[str]:
    """Memory spaces that hold buffers in this module (HBM, VMEM, ..., Host), selector order.

    Accepts an `xla.HloProto` (message or bytes) or an `HloModule`; [] without buffer assignment.
    """
    module = _as_module(hlo_proto, None)
    data = module.buffer_assignment_bytes
    return [] if data is None else _present_spaces(scan_buffer_assignment(data, module.where))


def analyze_memory(hlo_proto: Any, memory_space: str | int = "HBM", where: str | None = None,
                   program_id: int | None = None) -> MemoryAnalysis:
    """Replays the buffer assignment of one module in one memory space (see the module doc).

    `hlo_proto`: an `xla.HloProto` message, its serialized bytes (fastest: no re-serializing),
    or an `HloModule`. `memory_space`: a name (HBM, VMEM, SMEM, CMEM, SFlag, SparseCore, Host)
    or a colour number. `where` names the source in errors; `program_id` (the profile's id of
    the module; default: the module's own id) labels the result. Raises ProfileError when the
    module has no buffer assignment or no buffers in that space.
    """
    module = _as_module(hlo_proto, where, program_id)
    return _analyze(module, _scan(module), _color(memory_space))


def _analyze(module: HloModule, ba: BufferAssignment, color: int) -> MemoryAnalysis:
    present = _present_spaces(ba)
    if _space_name(color) not in present:
        raise ProfileError(f"{module.where}: HLO module {_label(module)} has no buffers in "
                           f"memory space {_space_name(color)}; it has "
                           f"{', '.join(present) or 'none'}.")
    return MemoryAnalysis(module, color, _buffers(module, ba))


_STEP_TOKEN = re.compile(r"[_.\-()]+")


def _looks_like_step(name: str) -> bool:
    tokens = _STEP_TOKEN.split(name.lower())
    return any(t.startswith("train") or t.endswith("step") for t in tokens)


def _top_level(name: str) -> bool:
    return not re.match(r"p?jit__", name)


def default_module(modules: Mapping[Any, Any] | Iterable[Any]) -> Any:
    """The module a user most likely wants to see.

    Among top-level modules (not JAX's internal helpers, whose names start with `jit__`), those
    whose name has a part starting with `train` or ending with `step` (`jit_train_step`,
    `jit_update_step`, `train`) come first, and of them the one with the largest peak memory;
    without such a module, the top-level module with the largest peak; else the largest peak of
    all. The peak is taken in HBM, or in the first memory space a module has. Modules without
    buffer assignment are passed over.

    `modules`: a mapping (e.g. program id -> `xla.HloProto`; returns the key) or an iterable of
    protos / `HloModule`s (returns the item). Raises ProfileError when no module qualifies.
    """
    items = list(modules.items()) if isinstance(modules, Mapping) else [(m, m) for m in modules]
    scored = []
    for key, proto in items:
        module = _as_module(proto, None)
        try:
            ba = _scan(module)
        except ProfileError:
            continue
        spaces = _present_spaces(ba)
        if not spaces:
            continue
        space = "HBM" if "HBM" in spaces else spaces[0]
        peak = _analyze(module, ba, _color(space)).summary["peak_bytes"]
        top = _top_level(module.name)
        scored.append(((top and _looks_like_step(module.name), top, peak), key))
    if not scored:
        raise ProfileError(f"none of {len(items)} HLO modules has a buffer assignment: "
                           f"{_NO_BUFFER_ASSIGNMENT}.")
    return max(scored, key=lambda s: s[0])[1]


class MemoryAnalysis:
    """Peak memory of one module in one memory space, its timeline and the buffers at the peak.

    `summary` is a dict; `timeline()` and `buffers()` return DataFrames (built on first use).
    """

    def __init__(self, module: HloModule, color: int, bufs: _Buffers):
        self.module = module
        self.memory_space = _space_name(color)
        self._bufs = bufs
        ba = bufs.ba
        in_space = ba.allocs[:, 3] == color
        event_rows = bufs.rows_of(ba.events[:, 1])
        self._trace = _choose_trace(bufs, color, event_rows)
        first, count = ba.traces[self._trace, :2] if self._trace >= 0 else (0, 0)
        self._events = ba.events[first:first + count]
        self._replay(module, event_rows[first:first + count])
        self._baseline(in_space)

    def _replay(self, module: HloModule, rows: np.ndarray) -> None:
        bufs, events = self._bufs, self._events
        share = np.where(events[:, 0] == SHARE_WITH, bufs.rows_of(events[:, 2]), -1)
        out = _replay(events[:, 0].copy(), rows, share, bufs.sizes.copy(), bufs.unpadded)
        status, failed = out[0], out[1]
        if status != _OK:
            what = {_FREED_TWICE: "frees a buffer more often than it allocates it",
                    _NEGATIVE_HEAP: "frees more memory than it allocated",
                    _SHARE_CYCLE: "shares buffers in a cycle"}[status]
            raise ProfileError(f"{module.where}: the heap-simulator trace of "
                               f"{_label(module)} {what} (event {failed}, buffer "
                               f"{events[failed, 1]}); the HLO proto is inconsistent.")
        (self._heap, self._heap_u, self._sim_peak, self._sim_peak_u, self._peak_at,
         push_root, push_display, push_at, kill_at, self._span_start,
         self._span_end) = out[2:]
        live = (push_at <= self._peak_at) & (kill_at > self._peak_at)
        self._live_root = push_root[live]
        self._live_display = push_display[live]

    def _baseline(self, in_space: np.ndarray) -> None:
        """Indefinite allocations of the space: (allocation row, its largest logical buffer row;
        the first of equals, as XProf picks), in allocation order."""
        bufs, ba = self._bufs, self._bufs.ba
        owner = np.repeat(np.arange(len(ba.allocs)), ba.allocs[:, 6])
        rows = bufs.rows_of(ba.assigned[:, 0])
        keep = (rows >= 0) & in_space[owner] & (ba.allocs[owner, 2] & _INDEFINITE > 0)
        owner, rows = owner[keep], rows[keep]
        keep = bufs.sizes[rows] > 0
        owner, rows = owner[keep], rows[keep]
        order = np.lexsort((np.arange(len(rows)), -bufs.sizes[rows], owner))
        first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]] if len(order) else order
        self._indefinite = np.stack([owner[first], rows[first]], axis=1).reshape(-1, 2)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """Peak with and without padding, its split by allocation type, padding, the peak step.

        Bytes at the peak by type sum to `peak_bytes`: parameters, outputs (maybe live-out) and
        constants count their allocation sizes; temporaries are the heap-simulated buffers live
        at the peak. `peak_program_order` is the heap-simulator step whose allocation reached
        the peak (None when no step allocates).
        """
        bufs, allocs = self._bufs, self._bufs.ba.allocs
        a, rows = self._indefinite[:, 0], self._indefinite[:, 1]
        split = dict.fromkeys(("parameter", "output", "constant", "temporary"), 0)
        for alloc_size, flags in zip(allocs[a, 1].tolist(), allocs[a, 2].tolist(), strict=True):
            split[_category(flags)] += alloc_size
        for root in self._live_root.tolist():
            kind = _category(int(allocs[bufs.alloc[root], 2]))
            split[kind if kind in split else "temporary"] += int(bufs.sizes[root])
        base = int(allocs[a, 1].sum())
        base_padding = int((bufs.sizes[rows] - bufs.unpadded[rows]).sum())
        peak = base + int(self._sim_peak)
        peak_u = base - base_padding + int(self._sim_peak_u)
        at = int(self._peak_at) if self._peak_at >= 0 else None
        instruction = None if at is None else bufs.ba.text(*self._events[at, 3:5])
        padding = peak - peak_u
        return {
            "module": self.module.name, "program_id": self.module.program_id,
            "memory_space": self.memory_space,
            "peak_bytes": peak, "peak_mib": peak / MIB,
            "peak_unpadded_bytes": peak_u, "peak_unpadded_mib": peak_u / MIB,
            "parameters_bytes": split["parameter"], "temporaries_bytes": split["temporary"],
            "outputs_bytes": split["output"], "constants_bytes": split["constant"],
            "padding_bytes": padding, "padding_pct": 100.0 * padding / peak if peak else 0.0,
            "peak_instruction": instruction, "peak_program_order": at,
            "program_steps": len(self._events),
        }

    def timeline(self) -> pd.DataFrame:
        """Allocated memory after each heap-simulator step ("memory allocation size vs program
        order"), padded and unpadded, with the instruction that step belongs to and its event."""
        return self._timeline.copy()

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Allocated bytes after each heap-simulator step, padded and unpadded: `timeline()`'s
        columns without naming every step's instruction (see `instructions_at`)."""
        summary = self.summary
        return (self._heap + (summary["peak_bytes"] - int(self._sim_peak)),
                self._heap_u + (summary["peak_unpadded_bytes"] - int(self._sim_peak_u)))

    def instructions_at(self, steps: np.ndarray) -> list[str]:
        """The instruction of each of these heap-simulator steps."""
        return self._bufs.ba.texts(self._events[steps, 3:5])

    @cached_property
    def _timeline(self) -> pd.DataFrame:
        allocated, allocated_u = self.curve()
        return pd.DataFrame({
            "program_order": np.arange(len(self._events)),
            "instruction": self._instruction_names(),
            "event": pd.Categorical.from_codes(self._events[:, 0].clip(0, 2),
                                               categories=_EVENT_NAMES),
            "allocated_bytes": allocated, "allocated_unpadded_bytes": allocated_u,
            "allocated_mib": allocated / MIB, "allocated_unpadded_mib": allocated_u / MIB,
        })

    def _instruction_names(self) -> pd.Categorical:
        """Names decoded once per distinct instruction (a step's name repeats at its frees)."""
        ba = self._bufs.ba
        spans = self._events[:, 3:5]
        _, first, codes = np.unique(_span_hashes(ba.buf, spans), return_index=True,
                                    return_inverse=True)
        return pd.Categorical.from_codes(codes.reshape(-1),
                                         categories=pd.Index(ba.texts(spans[first])))

    def buffers(self, order: str = "program") -> pd.DataFrame:
        """Buffers live at the peak, one row each; buffers under 16 KiB lumped into one row.

        order: "program" (as they became live; the indefinite-lifetime ones first), "size" or
        "padding" (largest first; ties keep program order). Columns: name (instruction{shape
        index}), size_bytes, size_mib, unpadded_bytes, padding_bytes, expansion (padded /
        unpadded), shape (with layout), op_name (the framework op), allocation_type, source
        (file:line), start and end (program order of the lifetime), logical_buffer_id, opcode.
        """
        frame = self._buffers
        if order == "program":
            return frame.copy()
        if order not in ("size", "padding"):
            raise ValueError(f"order must be 'program', 'size' or 'padding', not {order!r}")
        column = "size_bytes" if order == "size" else "padding_bytes"
        return frame.sort_values(column, ascending=False, kind="stable").reset_index(drop=True)

    @cached_property
    def _buffers(self) -> pd.DataFrame:
        bufs, module = self._bufs, self.module
        allocs = bufs.ba.allocs
        last = len(self._events) - 1
        # (region row for numbers, display row for labels, start, end)
        entries = [(r, r, 0 if last >= 0 else -1, last) for r in self._indefinite[:, 1].tolist()]
        entries += [(root, shown, int(self._span_start[shown]), int(self._span_end[shown]))
                    for root, shown in zip(self._live_root.tolist(), self._live_display.tolist(),
                                           strict=True)]
        records = []
        small = {"count": 0, "size": 0, "unpadded": 0, "types": set()}
        cache: dict[int, Any] = {}
        for region, shown, start, end in entries:
            size = int(bufs.sizes[region])
            unpadded = int(bufs.unpadded[region])
            kind = _category(int(allocs[bufs.alloc[region], 2]))
            if size < SMALL_BUFFER_BYTES:
                small["count"] += 1
                small["size"] += size
                small["unpadded"] += unpadded
                small["types"].add(kind)
                continue
            row = int(bufs.instruction[shown])
            if row not in cache:
                cache[row] = module.instruction_at(row)
            instruction = cache[row]
            first, count = bufs.ba.lbs[shown, 4:6]
            index = bufs.ba.shape_index[first:first + count].tolist()
            name = instruction.name + ("{" + ",".join(map(str, index)) + "}" if index else "")
            try:
                shape = shape_to_string(subshape(instruction.shape, index))
            except ProfileError:  # an index the shape lacks: show the whole shape
                shape = shape_to_string(instruction.shape)
            records.append((name, size, unpadded, shape, instruction.metadata.op_name, kind,
                            module.source_of(instruction), start, end, int(bufs.ids[shown]),
                            instruction.opcode))
        if small["count"]:
            kinds = small["types"]
            records.append((f"small ({small['count']} buffers < 16 KiB)", small["size"],
                            small["unpadded"], "", "", kinds.pop() if len(kinds) == 1 else "mixed",
                            "", -1, -1, -1, ""))
        frame = pd.DataFrame(records, columns=[
            "name", "size_bytes", "unpadded_bytes", "shape", "op_name", "allocation_type",
            "source", "start", "end", "logical_buffer_id", "opcode"])
        frame = frame.astype({"size_bytes": np.int64, "unpadded_bytes": np.int64,
                              "logical_buffer_id": np.int64})
        for column in ("start", "end"):
            frame[column] = frame[column].astype("Int64").where(frame[column] >= 0)
        frame.insert(2, "size_mib", frame["size_bytes"] / MIB)
        frame.insert(4, "padding_bytes", frame["size_bytes"] - frame["unpadded_bytes"])
        frame.insert(5, "expansion", frame["size_bytes"] / frame["unpadded_bytes"].where(
            frame["unpadded_bytes"] > 0))
        return frame

    def __repr__(self) -> str:
        s = self.summary
        return (f"<MemoryAnalysis {s['module']}({s['program_id']}) {s['memory_space']}: "
                f"peak {s['peak_mib']:.2f} MiB ({s['peak_unpadded_mib']:.2f} MiB unpadded) at "
                f"step {s['peak_program_order']} {s['peak_instruction'] or ''}>")
