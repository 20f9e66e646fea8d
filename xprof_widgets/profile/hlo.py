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
from typing import Any

import numba
import numpy as np
import pandas as pd

from ..errors import ProfileError
from .schema import (
    PRIMITIVE_TYPES,
    HloInstructionProto,
    HloProto,
    ShapeProto,
    _file_descriptor,
    _message_classes,
)

# xla.PrimitiveType values the schema table does not list yet -> (name, bits per element).
_MORE_TYPES = {
    14: ("opaque", 0), 23: ("f8e4m3b11fnuz", 8), 24: ("f8e5m2fnuz", 8), 25: ("f8e4m3fnuz", 8),
    26: ("s2", 2), 27: ("u2", 2), 28: ("f8e4m3", 8), 29: ("f8e3m4", 8), 32: ("f4e2m1fn", 4),
    33: ("f8e8m0fnu", 8),
}
_TYPES = {**PRIMITIVE_TYPES, **_MORE_TYPES}
TUPLE, OPAQUE, TOKEN = 13, 14, 17
POINTER_SIZE = 8  # bytes XLA counts per tuple element (a pointer table), as XProf does
_BITS = np.zeros(max(_TYPES) + 1, np.int64)
for _t, (_, _bits) in _TYPES.items():
    _BITS[_t] = _bits
_COMBINE_DIMENSION = -(2**63)  # a tile dimension that combines dimensions, printed `*`

(StackFrameIndexProto,) = _message_classes(
    _file_descriptor("xprof_widgets/hlo_stack_frames.proto", "xla", {
        "StackFrameIndexProto": [
            ("file_names", 1, "string", True), ("function_names", 2, "string", True),
            ("file_locations", 3, "StackFrameIndexProto.FileLocation", True),
            ("stack_frames", 4, "StackFrameIndexProto.StackFrame", True)],
        "StackFrameIndexProto.FileLocation": [
            ("file_name_id", 1, "int32", False), ("function_name_id", 2, "int32", False),
            ("line", 3, "int32", False), ("column", 4, "int32", False)],
        "StackFrameIndexProto.StackFrame": [
            ("file_location_id", 1, "int32", False), ("parent_frame_id", 2, "int32", False)],
    }, {}, set()),
    ["StackFrameIndexProto"],
)


# ---- shapes -------------------------------------------------------------------------------
def type_name(element_type: int) -> str:
    """`f32`, `bf16`, ... for an xla.PrimitiveType value."""
    known = _TYPES.get(element_type)
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
    """The shape at a tuple shape index (`{1,0}` = element 0 of element 1); ProfileError if absent."""
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
_jit = numba.njit(cache=True, nogil=True)
_ERR = -1


@_jit
def _varint(buf, pos, end):
    """(value, next pos); next pos is -1 on a malformed or truncated varint."""
    result = np.uint64(0)
    shift = np.uint64(0)
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= np.uint64(b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += np.uint64(7)
        if shift >= np.uint64(70):
            return np.uint64(0), _ERR
    return np.uint64(0), _ERR


@_jit
def _next(buf, pos, end):
    """Reads one field: (number, wire type, a, b, next pos). Varint: a = value; length-delimited:
    [a, b) is the payload; fixed-width values are skipped. next pos is -1 on malformed input."""
    tag, pos = _varint(buf, pos, end)
    if pos < 0:
        return 0, 0, 0, 0, _ERR
    field = np.int64(tag >> np.uint64(3))
    wire = np.int64(tag & np.uint64(7))
    if wire == 0:
        value, pos = _varint(buf, pos, end)
        return field, wire, np.int64(value), 0, pos
    if wire == 2:
        length, pos = _varint(buf, pos, end)
        if pos < 0 or length > np.uint64(end - pos):
            return 0, 0, 0, 0, _ERR
        return field, wire, pos, pos + np.int64(length), pos + np.int64(length)
    if wire == 1 or wire == 5:
        width = 8 if wire == 1 else 4
        if pos + width > end:
            return 0, 0, 0, 0, _ERR
        return field, wire, 0, 0, pos + width
    return 0, 0, 0, 0, _ERR


@_jit
def _scan_module(buf, start, end, fill, header, comps, inst):
    """Walks an HloModuleProto in buf[start:end].

    header = [name s, name e, id, entry computation id, stack frame index s, e];
    comps[k] = (name s, name e); inst[k] = (id, computation, record s, record e, name s, name e,
    shape s, shape e). Returns (error offset or -1, n computations, n instructions).
    """
    n_comp = 0
    n_inst = 0
    pos = start
    while pos < end:
        at = pos
        f, w, a, b, pos = _next(buf, pos, end)
        if pos < 0:
            return at, 0, 0
        if not fill:
            if f == 3 and w == 2:
                p = a
                while p < b:
                    cf, cw, ca, cb, p = _next(buf, p, b)
                    if p < 0:
                        return at, 0, 0
                    if cf == 2 and cw == 2:
                        n_inst += 1
                n_comp += 1
            continue
        if f == 1 and w == 2:
            header[0], header[1] = a, b
        elif f == 5 and w == 0:
            header[2] = a
        elif f == 6 and w == 0:
            header[3] = a
        elif f == 17 and w == 2:
            header[4], header[5] = a, b
        elif f == 3 and w == 2:
            p = a
            while p < b:
                c_at = p
                cf, cw, ca, cb, p = _next(buf, p, b)
                if p < 0:
                    return c_at, 0, 0
                if cf == 1 and cw == 2:
                    comps[n_comp, 0], comps[n_comp, 1] = ca, cb
                elif cf == 2 and cw == 2:
                    row = inst[n_inst]
                    row[:] = 0
                    row[1], row[2], row[3] = n_comp, ca, cb
                    q = ca
                    while q < cb:
                        i_at = q
                        f3, w3, a3, b3, q = _next(buf, q, cb)
                        if q < 0:
                            return i_at, 0, 0
                        if f3 == 35 and w3 == 0:
                            row[0] = a3
                        elif f3 == 1 and w3 == 2:
                            row[4], row[5] = a3, b3
                        elif f3 == 3 and w3 == 2:
                            row[6], row[7] = a3, b3
                    n_inst += 1
            n_comp += 1
    return -1, n_comp, n_inst


@_jit
def _scan_buffer_assignment(buf, start, end, fill, lbs, shape_index, allocs, assigned, traces,
                            events):
    """Walks a BufferAssignmentProto in buf[start:end].

    lbs[k] = (id, size, color, instruction id, first shape-index entry, count);
    allocs[k] = (index, size, flags, color, parameter number, first assigned, count) with flags
    1 thread-local, 2 entry parameter, 4 maybe live-out, 8 tuple, 16 constant;
    assigned[k] = (logical buffer id, offset, size); traces[k] = (first event, count,
    buffer allocation index, whole module); events[k] = (kind, buffer id, share-with id,
    instruction name s, e). Returns (error offset or -1, n lbs, n shape-index entries,
    n allocations, n assigned, n traces, n events).
    """
    n = np.zeros(6, np.int64)  # lbs, shape-index entries, allocs, assigned, traces, events
    pos = start
    while pos < end:
        at = pos
        f, w, a, b, pos = _next(buf, pos, end)
        if pos < 0:
            return at, 0, 0, 0, 0, 0, 0
        if w != 2:
            continue
        if f == 1:  # LogicalBufferProto
            k = n[0]
            first = n[1]
            p = a
            while p < b:
                q_at = p
                lf, lw, la, lb, p = _next(buf, p, b)
                if p < 0:
                    return q_at, 0, 0, 0, 0, 0, 0
                if lf == 3 and lw == 2:  # defined_at
                    q = la
                    while q < lb:
                        d_at = q
                        df, dw, da, db, q = _next(buf, q, lb)
                        if q < 0:
                            return d_at, 0, 0, 0, 0, 0, 0
                        if df == 4 and dw == 0:
                            if fill:
                                lbs[k, 3] = da
                        elif df == 3 and dw == 0:
                            if fill:
                                shape_index[n[1]] = da
                            n[1] += 1
                        elif df == 3 and dw == 2:  # packed shape index
                            r = da
                            while r < db:
                                v, r = _varint(buf, r, db)
                                if r < 0:
                                    return d_at, 0, 0, 0, 0, 0, 0
                                if fill:
                                    shape_index[n[1]] = np.int64(v)
                                n[1] += 1
                elif fill and lw == 0:
                    if lf == 1:
                        lbs[k, 0] = la
                    elif lf == 2:
                        lbs[k, 1] = la
                    elif lf == 4:
                        lbs[k, 2] = la
            if fill:
                lbs[k, 4] = first
                lbs[k, 5] = n[1] - first
            n[0] += 1
        elif f == 3:  # BufferAllocationProto
            k = n[2]
            first = n[3]
            if fill:
                allocs[k, :] = 0
            p = a
            while p < b:
                q_at = p
                af, aw, aa, ab, p = _next(buf, p, b)
                if p < 0:
                    return q_at, 0, 0, 0, 0, 0, 0
                if af == 9 and aw == 2:
                    if fill:
                        j = n[3]
                        assigned[j, :] = 0
                        q = aa
                        while q < ab:
                            s_at = q
                            sf, sw, sa, _sb, q = _next(buf, q, ab)
                            if q < 0:
                                return s_at, 0, 0, 0, 0, 0, 0
                            if sw == 0 and 1 <= sf <= 3:
                                assigned[j, sf - 1] = sa
                    n[3] += 1
                elif fill and aw == 0:
                    if af == 1:
                        allocs[k, 0] = aa
                    elif af == 2:
                        allocs[k, 1] = aa
                    elif af == 8:
                        allocs[k, 3] = aa
                    elif af == 6:
                        allocs[k, 4] = aa
                    elif aa != 0:
                        if af == 3:
                            allocs[k, 2] |= 1
                        elif af == 5:
                            allocs[k, 2] |= 2
                        elif af == 7:
                            allocs[k, 2] |= 4
                        elif af == 11:
                            allocs[k, 2] |= 8
                        elif af == 12:
                            allocs[k, 2] |= 16
            if fill:
                allocs[k, 5] = first
                allocs[k, 6] = n[3] - first
            n[2] += 1
        elif f == 4:  # HeapSimulatorTrace
            k = n[4]
            first = n[5]
            if fill:
                traces[k, :] = 0
            p = a
            while p < b:
                q_at = p
                tf, tw, ta, tb, p = _next(buf, p, b)
                if p < 0:
                    return q_at, 0, 0, 0, 0, 0, 0
                if tf == 1 and tw == 2:
                    if fill:
                        j = n[5]
                        events[j, :] = 0
                        q = ta
                        while q < tb:
                            e_at = q
                            ef, ew, ea, eb, q = _next(buf, q, tb)
                            if q < 0:
                                return e_at, 0, 0, 0, 0, 0, 0
                            if ew == 0:
                                if ef == 1:
                                    events[j, 0] = ea
                                elif ef == 2:
                                    events[j, 1] = ea
                                elif ef == 5:
                                    events[j, 2] = ea
                            elif ew == 2 and ef == 4:
                                events[j, 3], events[j, 4] = ea, eb
                    n[5] += 1
                elif fill and tw == 0 and tf == 2:
                    traces[k, 3] = ta
                elif fill and tw == 0 and tf == 3:
                    traces[k, 2] = ta
            if fill:
                traces[k, 0] = first
                traces[k, 1] = n[5] - first
            n[4] += 1
    return -1, n[0], n[1], n[2], n[3], n[4], n[5]


@_jit
def _top_level_spans(buf):
    """(module s, e, buffer assignment s, e) of an HloProto; -1 where absent; (-2, offset) if
    malformed."""
    spans = np.full(4, -1, np.int64)
    pos = 0
    end = buf.shape[0]
    while pos < end:
        at = pos
        f, w, a, b, pos = _next(buf, pos, end)
        if pos < 0:
            spans[0], spans[1] = -2, at
            return spans
        if w == 2 and f == 1:
            spans[0], spans[1] = a, b
        elif w == 2 and f == 3:
            spans[2], spans[3] = a, b
    return spans


@_jit
def _shape_unpadded(buf, s, e, index, bits):
    """Unpadded bytes of the subshape at `index` of the ShapeProto in buf[s:e]; -1 if the index
    does not exist or the bytes are malformed."""
    for i in index:
        p = s
        found = -1
        count = 0
        while p < e:
            f, w, a, b, p = _next(buf, p, e)
            if p < 0:
                return -1
            if f == 4 and w == 2:
                if count == i:
                    found = a
                    e = b
                    break
                count += 1
        if found < 0:
            return -1
        s = found
    element_type = 0
    elements = np.int64(1)
    tuple_count = 0
    p = s
    while p < e:
        f, w, a, b, p = _next(buf, p, e)
        if p < 0:
            return -1
        if f == 2 and w == 0:
            element_type = a
        elif f == 3 and w == 0:
            elements *= a
        elif f == 3 and w == 2:
            q = a
            while q < b:
                v, q = _varint(buf, q, b)
                if q < 0:
                    return -1
                elements *= np.int64(v)
        elif f == 4 and w == 2:
            tuple_count += 1
    if element_type == TUPLE:
        return POINTER_SIZE * tuple_count
    if element_type == OPAQUE:
        return POINTER_SIZE
    width = bits[element_type] if 0 <= element_type < bits.shape[0] else 0
    return (elements * width + 7) // 8


@_jit
def _unpadded_sizes(buf, shape_spans, shape_index, index_spans, bits):
    out = np.empty(shape_spans.shape[0], np.int64)
    for k in range(shape_spans.shape[0]):
        s = shape_spans[k, 0]
        e = shape_spans[k, 1]
        first = index_spans[k, 0]
        if s < 0:
            out[k] = -1
        else:
            out[k] = _shape_unpadded(buf, s, e, shape_index[first:first + index_spans[k, 1]],
                                     bits)
    return out


def _as_buffer(data: Any) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def _corrupt(where: str, what: str, offset: int) -> ProfileError:
    return ProfileError(f"{where}: the {what} is corrupt near byte {offset}; the profile file is "
                        "damaged or truncated: capture it again.")


def split_hlo_proto(data: Any, where: str) -> tuple[bytes, bytes | None]:
    """(module bytes, buffer-assignment bytes or None) of an HloProto given as bytes or message.

    A message is re-serialized piecewise: serializing costs a fraction of reading its fields one
    by one from Python.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        buf = _as_buffer(data)
        ms, me, bs, be = _top_level_spans(buf)
        if ms == -2:
            raise _corrupt(where, "HLO proto", int(me))
        module = bytes(buf[ms:me]) if ms >= 0 else b""
        return module, (bytes(buf[bs:be]) if bs >= 0 else None)
    module = data.hlo_module.SerializeToString()
    has_ba = data.HasField("buffer_assignment")
    return module, (data.buffer_assignment.SerializeToString() if has_ba else None)


@dataclass(frozen=True)
class BufferAssignment:
    """Columns of an `xla.BufferAssignmentProto` (see `_scan_buffer_assignment` for layouts)."""

    buf: np.ndarray
    lbs: np.ndarray
    shape_index: np.ndarray
    allocs: np.ndarray
    assigned: np.ndarray
    traces: np.ndarray
    events: np.ndarray

    def text(self, start: int, end: int) -> str:
        return bytes(self.buf[start:end]).decode("utf-8", "replace")


def scan_buffer_assignment(data: bytes, where: str) -> BufferAssignment:
    """Decodes a serialized BufferAssignmentProto into numpy columns in two compiled passes."""
    buf = _as_buffer(data)
    z2 = np.zeros((0, 7), np.int64)
    err, n_lb, n_si, n_alloc, n_asg, n_tr, n_ev = _scan_buffer_assignment(
        buf, 0, len(buf), False, z2, z2[:, 0], z2, z2, z2, z2)
    if err >= 0:
        raise _corrupt(where, "buffer assignment", err)
    cols = (np.zeros((n_lb, 6), np.int64), np.zeros(n_si, np.int64),
            np.zeros((n_alloc, 7), np.int64), np.zeros((n_asg, 3), np.int64),
            np.zeros((n_tr, 4), np.int64), np.zeros((n_ev, 5), np.int64))
    _scan_buffer_assignment(buf, 0, len(buf), True, *cols)
    return BufferAssignment(buf, *cols)


# ---- the module -----------------------------------------------------------------------------
class HloModule:
    """One HLO module: name, program id, instructions as a table, lookup by id or name.

    Built from an `xla.HloProto` (message or bytes) or an `xla.HloModuleProto` message. `where`
    names the source in error messages.
    """

    def __init__(self, proto: Any, program_id: int | None = None, where: str = "HLO module"):
        if hasattr(proto, "computations"):  # an HloModuleProto message
            module_bytes, self._ba_bytes = proto.SerializeToString(), None
        else:
            module_bytes, self._ba_bytes = split_hlo_proto(proto, where)
        self.where = where
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
        self._by_id = np.argsort(self._inst[:, 0], kind="stable")
        self._sorted_ids = self._inst[self._by_id, 0]

    def __repr__(self) -> str:
        return (f"<HloModule {self.name!r} program_id={self.program_id} "
                f"instructions={len(self._inst):,}>")

    def _text(self, start: int, end: int) -> str:
        return bytes(self._buf[start:end]).decode("utf-8", "replace")

    @property
    def buffer_assignment_bytes(self) -> bytes | None:
        """The serialized buffer assignment, or None when the proto carries none."""
        return self._ba_bytes

    @property
    def n_instructions(self) -> int:
        return len(self._inst)

    def rows_of_ids(self, ids: np.ndarray) -> np.ndarray:
        """Instruction rows (positions in `instructions`) of instruction ids; -1 where unknown."""
        ids = np.asarray(ids, np.int64)
        if not len(self._inst):
            return np.full(len(ids), -1, np.int64)
        pos = np.searchsorted(self._sorted_ids, ids).clip(0, len(self._sorted_ids) - 1)
        return np.where(self._sorted_ids[pos] == ids, self._by_id[pos], -1)

    @cached_property
    def _rows_by_name(self) -> dict[str, int]:
        return {self._text(s, e): k for k, (s, e) in enumerate(self._inst[:, 4:6])}

    def row(self, key: int | str) -> int:
        """The row of an instruction given its id (int) or name (str); ProfileError if absent."""
        if isinstance(key, str):
            row = self._rows_by_name.get(key, -1)
        else:
            row = int(self.rows_of_ids(np.array([key]))[0])
        if row < 0:
            raise ProfileError(f"{self.where}: module {self.name} has no instruction {key!r}")
        return row

    def instruction(self, key: int | str) -> Any:
        """The `xla.HloInstructionProto` with this id or name, from any computation."""
        return self._instruction_at(self.row(key))

    def _instruction_at(self, row: int) -> Any:
        s, e = self._inst[row, 2:4]
        return HloInstructionProto.FromString(bytes(self._buf[s:e]))

    def instruction_name(self, row: int) -> str:
        s, e = self._inst[row, 4:6]
        return self._text(s, e)

    def shape_unpadded(self, rows: np.ndarray, shape_index: np.ndarray,
                       index_spans: np.ndarray) -> np.ndarray:
        """Unpadded bytes of subshapes: rows[k]'s shape at shape_index[first:first+count] where
        (first, count) = index_spans[k]; -1 for unknown rows or indices."""
        spans = np.where(rows[:, None] >= 0, self._inst[rows.clip(0), 6:8], -1)
        return _unpadded_sizes(self._buf, spans, shape_index, index_spans, _BITS)

    @cached_property
    def _stack_frames(self) -> Any:
        s, e = self._header[4:6]
        return StackFrameIndexProto.FromString(bytes(self._buf[s:e]) if s >= 0 else b"")

    def source_of(self, instruction: Any) -> str:
        """`file:line` of an instruction: the innermost frame of its stack trace when the module
        carries one (as XProf shows), else OpMetadata source_file/source_line; '' if neither."""
        frames = self._stack_frames
        frame_id = instruction.metadata.stack_frame_id
        if 0 < frame_id <= len(frames.stack_frames):
            loc_id = frames.stack_frames[frame_id - 1].file_location_id
            if 0 < loc_id <= len(frames.file_locations):
                loc = frames.file_locations[loc_id - 1]
                if 0 < loc.file_name_id <= len(frames.file_names) and loc.line:
                    return f"{frames.file_names[loc.file_name_id - 1]}:{loc.line}"
        meta = instruction.metadata
        return f"{meta.source_file}:{meta.source_line}" if meta.source_file else ""

    def op_metadata(self, key: int | str) -> dict[str, Any]:
        """OpMetadata of an instruction: op_type, op_name (the framework op), source."""
        instruction = self.instruction(key)
        meta = instruction.metadata
        return {"op_type": meta.op_type, "op_name": meta.op_name,
                "source_file": meta.source_file, "source_line": meta.source_line,
                "source": self.source_of(instruction)}

    @cached_property
    def instructions(self) -> pd.DataFrame:
        """One row per instruction: id, name, computation, opcode, shape, op_name, source."""
        comp_names = [self._text(s, e) for s, e in self._comps]
        shapes: dict[bytes, str] = {}
        rows = []
        for k in range(len(self._inst)):
            ins = self._instruction_at(k)
            key = bytes(self._buf[self._inst[k, 6]:self._inst[k, 7]])
            if key not in shapes:
                shapes[key] = shape_to_string(ins.shape)
            rows.append((ins.id, ins.name, comp_names[self._inst[k, 1]], ins.opcode, shapes[key],
                         ins.metadata.op_name, self.source_of(ins)))
        frame = pd.DataFrame(rows, columns=["id", "name", "computation", "opcode", "shape",
                                            "op_name", "source"])
        frame["computation"] = frame["computation"].astype("category")
        frame["opcode"] = frame["opcode"].astype("category")
        return frame


def instruction_shape(instruction: Any, index: Sequence[int]) -> Any:
    """The shape of an instruction's output at a tuple shape index."""
    return subshape(instruction.shape, index) if len(index) else instruction.shape


__all__ = [
    "BufferAssignment", "HloModule", "ShapeProto", "StackFrameIndexProto", "decode_hlo_proto",
    "instruction_shape", "layout_to_string", "scan_buffer_assignment", "shape_to_string",
    "split_hlo_proto", "subshape", "type_name", "unpadded_bytes",
]
