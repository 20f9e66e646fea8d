"""HLO module helpers: shapes as XLA prints them, unpadded sizes, instruction lookup.

A large module has 1e5 instructions and logical buffers; reading them field by field through
upb costs about a microsecond per field. `HloModule` therefore walks the serialized module once
with a compiled scanner into numpy columns (id, name span, shape span, ...) and parses single
instructions with upb only when a caller asks for one. `scan_buffer_assignment` does the same for
the buffer assignment (logical buffers, allocations, heap-simulator traces) that the memory
analysis replays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._native.hlo_scan import (
    _count_buffer_assignment,
    _scan_buffer_assignment,
    _scan_module,
    _top_level_spans,
    _unpadded_sizes,
)
from ..errors import ProfileError
from .schema import (
    PRIMITIVE_TYPES,
    HloInstructionProto,
    HloProto,
    StackFrameIndexProto,
)

TUPLE, OPAQUE, TOKEN = 13, 14, 17
POINTER_SIZE = 8  # bytes XLA counts per tuple element (a pointer table), as XProf does
_BITS = np.zeros(max(PRIMITIVE_TYPES) + 1, np.int64)
for _t, (_, _bits) in PRIMITIVE_TYPES.items():
    _BITS[_t] = _bits
_COMBINE_DIMENSION = -(2**63)  # a tile dimension that combines dimensions, printed `*`


# ---- shapes -------------------------------------------------------------------------------
def type_name(element_type: int) -> str:
    """`f32`, `bf16`, ... for an xla.PrimitiveType value."""
    known = PRIMITIVE_TYPES.get(element_type)
    return known[0] if known else f"type{element_type}"


def layout_to_string(layout: Any) -> str:
    """`{1,0:T(8,128)(2,1)E(4)S(1)}`: minor-to-major, then tiles, element bits, memory space."""
    text = "{" + ",".join(str(d) for d in layout.minor_to_major)
    extra = ""
    if len(layout.tiles):
        extra += "T" + "".join(
            "(" + ",".join("*" if d == _COMBINE_DIMENSION else str(d) for d in tile.dimensions)
            + ")" for tile in layout.tiles)
    if layout.element_size_in_bits:
        extra += f"E({layout.element_size_in_bits})"
    if layout.memory_space:
        extra += f"S({layout.memory_space})"
    return text + (":" + extra if extra else "") + "}"


def shape_to_string(shape: Any, layout: bool = True) -> str:
    """A shape as XLA prints it: `f32[128,512]{1,0:T(8,128)}`, `(f32[2]{0}, s32[])`.

    Dynamic dimensions print as `<=N`; a scalar's layout prints only when it says more than
    `{}` (a memory space); every fifth tuple element carries XLA's `/*index=N*/` marker.
    """
    if shape.element_type == TUPLE:
        parts = []
        for i, sub in enumerate(shape.tuple_shapes):
            marker = f"/*index={i}*/" if i and i % 5 == 0 else ""
            parts.append(marker + shape_to_string(sub, layout))
        return "(" + ", ".join(parts) + ")"
    dynamic = list(shape.is_dynamic_dimension)
    dims = ",".join(("<=" if i < len(dynamic) and dynamic[i] else "") + str(d)
                    for i, d in enumerate(shape.dimensions))
    text = f"{type_name(shape.element_type)}[{dims}]"
    if layout and shape.HasField("layout") and shape.element_type not in (TOKEN, OPAQUE):
        printed = layout_to_string(shape.layout)
        if len(shape.dimensions) or printed != "{}":
            text += printed
    return text


def subshape(shape: Any, index: Sequence[int]) -> Any:
    """The shape at a tuple shape index (`{1,0}`: element 0 of element 1); ProfileError if none."""
    for i in index:
        if shape.element_type != TUPLE or not 0 <= i < len(shape.tuple_shapes):
            raise ProfileError(f"shape index {{{','.join(map(str, index))}}} does not exist in "
                               f"{shape_to_string(shape)}")
        shape = shape.tuple_shapes[i]
    return shape


def unpadded_bytes(shape: Any) -> int:
    """Bytes of a shape without layout padding: elements x bits of the element type, rounded up
    to whole bytes; a tuple counts its pointer table (8 bytes per element), a token nothing."""
    if shape.element_type == TUPLE:
        return POINTER_SIZE * len(shape.tuple_shapes)
    if shape.element_type == OPAQUE:
        return POINTER_SIZE
    bits = int(_BITS[shape.element_type]) if shape.element_type < len(_BITS) else 0
    return (math.prod(shape.dimensions) * bits + 7) // 8


def decode_hlo_proto(data: bytes, where: str) -> Any:
    """Parses a serialized `xla.HloProto`; ProfileError naming `where` if the bytes are corrupt."""
    try:
        return HloProto.FromString(data)
    except Exception as exc:  # upb raises DecodeError; older runtimes raise other types
        raise ProfileError(f"{where}: the HLO proto is corrupt ({exc}); the profile file is "
                           "damaged or truncated: capture it again.") from exc


# ---- compiled wire scanners ------------------------------------------------------------------
# _scan_module, _count_buffer_assignment, _scan_buffer_assignment, _top_level_spans and
# _unpadded_sizes live in xprof_widgets/_native/hlo_scan.pyx (compiled ahead of time).


def _as_buffer(data: Any) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def _corrupt(where: str, what: str, offset: int) -> ProfileError:
    return ProfileError(f"{where}: the {what} is corrupt near byte {offset}; the profile file is "
                        "damaged or truncated: capture it again.")


def split_hlo_proto(data: bytes, where: str) -> tuple[bytes, bytes | None]:
    """(module bytes, buffer-assignment bytes or None) of a serialized HloProto, without parsing
    the rest: reading a large proto field by field from Python costs far more than scanning it."""
    buf = _as_buffer(data)
    ms, me, bs, be = _top_level_spans(buf)
    if ms == -2:
        raise _corrupt(where, "HLO proto", int(me))
    module = bytes(buf[ms:me]) if ms >= 0 else b""
    return module, (bytes(buf[bs:be]) if bs >= 0 else None)


@dataclass(frozen=True)
class BufferAssignment:
    """Columns of an `xla.BufferAssignmentProto` (see `_scan_buffer_assignment` for layouts)."""

    data: bytes
    buf: np.ndarray
    lbs: np.ndarray
    shape_index: np.ndarray
    allocs: np.ndarray
    assigned: np.ndarray
    traces: np.ndarray
    events: np.ndarray

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def texts(self, spans: np.ndarray) -> list[str]:
        """Strings of many (start, end) spans."""
        data = self.data  # flat lists: a list of pairs makes the garbage collector run
        return [data[s:e].decode("utf-8", "replace")
                for s, e in zip(spans[:, 0].tolist(), spans[:, 1].tolist(), strict=True)]


def scan_buffer_assignment(data: bytes, where: str) -> BufferAssignment:
    """Decodes a serialized BufferAssignmentProto into numpy columns with compiled scanners."""
    buf = _as_buffer(data)
    err, n_lb, n_alloc, n_asg, n_tr, n_ev = _count_buffer_assignment(buf, 0, len(buf))
    if err >= 0:
        raise _corrupt(where, "buffer assignment", err)
    cols = (np.zeros((n_lb, 6), np.int64), np.zeros((n_alloc, 7), np.int64),
            np.zeros((n_asg, 3), np.int64), np.zeros((n_tr, 4), np.int64),
            np.zeros((n_ev, 5), np.int64))
    shape_index = np.zeros(2 * n_lb + 64, np.int64)  # most buffers have 0 or 1 index entries
    err, n_si = _scan_buffer_assignment(buf, 0, len(buf), cols[0], shape_index, *cols[1:])
    if err < 0 and n_si > len(shape_index):
        shape_index = np.zeros(n_si, np.int64)
        err, n_si = _scan_buffer_assignment(buf, 0, len(buf), cols[0], shape_index, *cols[1:])
    if err >= 0:
        raise _corrupt(where, "buffer assignment", err)
    return BufferAssignment(data, buf, cols[0], shape_index[:n_si], *cols[1:])


class SourceFrame(NamedTuple):
    """One frame of an op's source stack: where in the user's code (line and column -1 when
    unknown, function '' when not recorded)."""

    file: str
    line: int
    column: int = -1
    function: str = ""


class IdIndex:
    """Rows of ids (-1 where absent; a repeated id maps to its last row, like a map insert).

    Ids in HLO protos are small non-negative integers, so a dense table usually answers with one
    gather; other ids fall back to a binary search.
    """

    def __init__(self, ids: np.ndarray):
        ids = np.asarray(ids, np.int64)
        self._table = None
        if len(ids) and ids.min() >= 0 and ids.max() < 4 * len(ids) + 1024:
            self._table = np.full(int(ids.max()) + 1, -1, np.int64)
            self._table[ids] = np.arange(len(ids))
        else:
            self._order = np.argsort(ids, kind="stable")
            self._sorted = ids[self._order]

    def __call__(self, query: np.ndarray) -> np.ndarray:
        query = np.asarray(query, np.int64)
        if self._table is not None:
            inside = (query >= 0) & (query < len(self._table))
            return np.where(inside, self._table[np.where(inside, query, 0)], -1)
        if not len(self._sorted):
            return np.full(len(query), -1, np.int64)
        pos = np.searchsorted(self._sorted, query, side="right") - 1
        hit = (pos >= 0) & (self._sorted[pos.clip(0)] == query)
        return np.where(hit, self._order[pos.clip(0)], -1)


# ---- the module -----------------------------------------------------------------------------
class HloModule:
    """One HLO module: name, program id, instructions as a table, lookup by id or name.

    Built from an `xla.HloProto` (message or bytes) or an `xla.HloModuleProto` message. `where`
    names the source in error messages.
    """

    def __init__(self, proto: Any, program_id: int | None = None, where: str = "HLO module"):
        self.where = where
        self._proto = None  # an HloProto message whose buffer assignment is serialized on demand
        self._ba_bytes: bytes | None = None
        if isinstance(proto, (bytes, bytearray, memoryview)):
            module_bytes, self._ba_bytes = split_hlo_proto(proto, where)
        elif hasattr(proto, "computations"):  # an HloModuleProto message
            module_bytes = proto.SerializeToString()
        else:
            module_bytes, self._proto = proto.hlo_module.SerializeToString(), proto
        self._data = module_bytes
        self._buf = _as_buffer(module_bytes)
        header = np.array([0, 0, 0, 0, -1, -1], np.int64)
        z = np.zeros((0, 8), np.int64)
        err, n_comp, n_inst = _scan_module(self._buf, 0, len(self._buf), False, header, z, z)
        if err >= 0:
            raise _corrupt(where, "HLO module", err)
        self._comps = np.zeros((n_comp, 2), np.int64)
        self._inst = np.zeros((n_inst, 8), np.int64)
        _scan_module(self._buf, 0, len(self._buf), True, header, self._comps, self._inst)
        self._header = header
        self.name: str = self._text(header[0], header[1])
        self.program_id: int = int(header[2]) if program_id is None else int(program_id)
        self._id_index = IdIndex(self._inst[:, 0])

    def __repr__(self) -> str:
        return (f"<HloModule {self.name!r} program_id={self.program_id} "
                f"instructions={len(self._inst):,}>")

    def _text(self, start: int, end: int) -> str:
        return self._data[start:end].decode("utf-8", "replace")

    @property
    def buffer_assignment_bytes(self) -> bytes | None:
        """The serialized buffer assignment, or None when the proto carries none."""
        if self._proto is not None:
            if self._proto.HasField("buffer_assignment"):
                self._ba_bytes = self._proto.buffer_assignment.SerializeToString()
            self._proto = None
        return self._ba_bytes

    def rows_of_ids(self, ids: np.ndarray) -> np.ndarray:
        """Instruction rows (positions in `instructions`) of instruction ids; -1 where unknown."""
        return self._id_index(ids)

    @cached_property
    def _rows_by_name(self) -> dict[str, int]:
        starts, ends = self._inst[:, 4].tolist(), self._inst[:, 5].tolist()
        return {self._text(s, e): k for k, (s, e) in enumerate(zip(starts, ends, strict=True))}

    def row(self, key: int | str) -> int:
        """The row of an instruction given its id (int) or name (str); ProfileError if absent."""
        if isinstance(key, str):
            row = self._rows_by_name.get(key, -1)
        else:
            row = int(self._id_index(np.array([key]))[0])
        if row < 0:
            raise ProfileError(f"{self.where}: module {self.name} has no instruction {key!r}")
        return row

    def instruction(self, key: int | str) -> Any:
        """The `xla.HloInstructionProto` with this id or name, from any computation."""
        return self.instruction_at(self.row(key))

    def instruction_at(self, row: int) -> Any:
        """The `xla.HloInstructionProto` at a row of `instructions`."""
        s, e = self._inst[row, 2:4]
        return HloInstructionProto.FromString(self._data[s:e])

    def shape_unpadded(self, rows: np.ndarray, shape_index: np.ndarray,
                       index_spans: np.ndarray) -> np.ndarray:
        """Unpadded bytes of subshapes: rows[k]'s shape at shape_index[first:first+count] where
        (first, count) = index_spans[k]; -1 for unknown rows or indices."""
        spans = np.where(rows[:, None] >= 0, self._inst[rows.clip(0), 6:8], -1)
        return _unpadded_sizes(self._buf, spans, shape_index, index_spans, _BITS)

    @cached_property
    def _stack_frames(self) -> Any:
        s, e = self._header[4:6]
        return StackFrameIndexProto.FromString(self._data[s:e] if s >= 0 else b"")

    def _frame(self, frame_id: int) -> tuple[SourceFrame, int] | None:
        """(the frame, its parent's id) of a 1-based stack frame id; None past the index. A
        location or name the index lacks reads as line -1 / '' (as XProf reads it)."""
        index = self._stack_frames
        if not 0 < frame_id <= len(index.stack_frames):
            return None
        frame = index.stack_frames[frame_id - 1]
        file, function, line, column = "", "", -1, -1
        if 0 < frame.file_location_id <= len(index.file_locations):
            loc = index.file_locations[frame.file_location_id - 1]
            line, column = loc.line, loc.column
            if 0 < loc.file_name_id <= len(index.file_names):
                file = index.file_names[loc.file_name_id - 1]
            if 0 < loc.function_name_id <= len(index.function_names):
                function = index.function_names[loc.function_name_id - 1]
        return SourceFrame(file, line, column, function), frame.parent_frame_id

    def stack_of(self, instruction: Any) -> list[SourceFrame]:
        """The instruction's stack trace from the module's stack frame index, innermost frame
        first; [] when the module carries none for it. A cycle of parents ends the walk."""
        return list(self._stack(instruction.metadata.stack_frame_id))

    @cached_property
    def _stacks(self) -> dict[int, tuple[SourceFrame, ...]]:
        return {}

    def _stack(self, frame_id: int) -> tuple[SourceFrame, ...]:
        """The stack from one frame id, walked once per id (many instructions share a frame,
        and reading the index through upb costs microseconds a field)."""
        stack = self._stacks.get(frame_id)
        if stack is None:
            frames: list[SourceFrame] = []
            seen: set[int] = set()
            walk = frame_id
            while walk not in seen and (hit := self._frame(walk)) is not None:
                seen.add(walk)
                frame, walk = hit
                frames.append(frame)
            stack = self._stacks[frame_id] = tuple(frames)
        return stack

    def source_of(self, instruction: Any) -> str:
        """`file:line` of an instruction: the innermost frame of its stack trace when the module
        carries one (as XProf shows), else OpMetadata source_file/source_line; '' if neither."""
        hit = self._frame(instruction.metadata.stack_frame_id)
        if hit is not None and hit[0].file and hit[0].line > 0:
            return f"{hit[0].file}:{hit[0].line}"
        meta = instruction.metadata
        return f"{meta.source_file}:{meta.source_line}" if meta.source_file else ""

    @cached_property
    def instructions(self) -> pd.DataFrame:
        """One row per instruction: id, name, computation, opcode, shape, op_name, source."""
        comp_names = [self._text(s, e) for s, e in self._comps.tolist()]
        shapes: dict[bytes, str] = {}
        rows = []
        for k, (comp, shape_s, shape_e) in enumerate(self._inst[:, [1, 6, 7]].tolist()):
            ins = self.instruction_at(k)
            key = self._data[shape_s:shape_e]  # instructions of one shape format it once
            if key not in shapes:
                shapes[key] = shape_to_string(ins.shape)
            rows.append((ins.id, ins.name, comp_names[comp], ins.opcode, shapes[key],
                         ins.metadata.op_name, self.source_of(ins)))
        frame = pd.DataFrame(rows, columns=["id", "name", "computation", "opcode", "shape",
                                            "op_name", "source"])
        frame["computation"] = frame["computation"].astype("category")
        frame["opcode"] = frame["opcode"].astype("category")
        return frame


__all__ = [
    "BufferAssignment", "HloModule", "IdIndex", "SourceFrame", "StackFrameIndexProto",
    "decode_hlo_proto", "layout_to_string", "scan_buffer_assignment", "shape_to_string", "split_hlo_proto",
    "subshape", "type_name", "unpadded_bytes",
]
