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
# Each field is read with two calls of the one-level `_varint` (tag, then value or length):
# numba inlines that, while a helper that itself calls `_varint` costs ~3x the scan time.
_jit = numba.njit(cache=True, nogil=True)


@_jit
def _varint(buf, pos, end):
    """(value as int64, next pos); next pos is -1 on a malformed or truncated varint."""
    result = 0
    shift = 0
    while pos < end:
        b = np.int64(buf[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            return 0, -1
    return 0, -1


@_jit
def _skip(wire, pos, end):
    """Position after a fixed-width value (wire 1 or 5); -1 for an unknown wire type or past end."""
    width = 8 if wire == 1 else (4 if wire == 5 else end + 1)
    return pos + width if pos + width <= end else -1


@_jit
def _scan_module(buf, start, end, fill, header, comps, inst):
    """Walks an HloModuleProto in buf[start:end]; counts (fill=False) or fills.

    header = [name s, name e, id, entry computation id, stack frame index s, e];
    comps[k] = (name s, name e); inst[k] = (id, computation, record s, record e, name s, name e,
    shape s, shape e). Returns (error offset or -1, n computations, n instructions).
    """
    n_comp = 0
    n_inst = 0
    pos = start
    while pos < end:
        at = pos
        tag, pos = _varint(buf, pos, end)
        f, w = tag >> 3, tag & 7
        if w == 0:
            v, pos = _varint(buf, pos, end)
            if fill and f == 5:
                header[2] = v
            elif fill and f == 6:
                header[3] = v
        elif w == 2:
            n, pos = _varint(buf, pos, end)
            if pos < 0 or n < 0 or n > end - pos:
                return at, 0, 0
            a, pos = pos, pos + n
            if fill and f == 1:
                header[0], header[1] = a, pos
            elif fill and f == 17:
                header[4], header[5] = a, pos
            elif f == 3:  # HloComputationProto
                p = a
                while p < pos:
                    c_at = p
                    tag, p = _varint(buf, p, pos)
                    cf, cw = tag >> 3, tag & 7
                    if cw == 0:
                        _, p = _varint(buf, p, pos)
                    elif cw == 2:
                        n, p = _varint(buf, p, pos)
                        if p < 0 or n < 0 or n > pos - p:
                            return c_at, 0, 0
                        ca, p = p, p + n
                        if fill and cf == 1:
                            comps[n_comp, 0], comps[n_comp, 1] = ca, p
                        elif cf == 2:  # HloInstructionProto
                            if fill:
                                row = inst[n_inst]
                                row[:] = 0
                                row[1], row[2], row[3] = n_comp, ca, p
                                q = ca
                                while q < p:
                                    i_at = q
                                    tag, q = _varint(buf, q, p)
                                    i_f, iw = tag >> 3, tag & 7
                                    if iw == 0:
                                        v, q = _varint(buf, q, p)
                                        if i_f == 35:
                                            row[0] = v
                                    elif iw == 2:
                                        n, q = _varint(buf, q, p)
                                        if q < 0 or n < 0 or n > p - q:
                                            return i_at, 0, 0
                                        if i_f == 1:
                                            row[4], row[5] = q, q + n
                                        elif i_f == 3:
                                            row[6], row[7] = q, q + n
                                        q += n
                                    else:
                                        q = _skip(iw, q, p)
                                    if q < 0:
                                        return i_at, 0, 0
                            n_inst += 1
                    else:
                        p = _skip(cw, p, pos)
                    if p < 0:
                        return c_at, 0, 0
                n_comp += 1
        else:
            pos = _skip(w, pos, end)
        if pos < 0:
            return at, 0, 0
    return -1, n_comp, n_inst


@_jit
def _count_buffer_assignment(buf, start, end):
    """Sizes the columns: (error offset or -1, lbs, allocations, assigned, traces, events).

    Only the top level and one level into allocations and traces are walked; logical buffers
    are counted, not read.
    """
    n_lb = n_alloc = n_asg = n_tr = n_ev = 0
    pos = start
    while pos < end:
        at = pos
        tag, pos = _varint(buf, pos, end)
        f, w = tag >> 3, tag & 7
        if w == 0:
            _, pos = _varint(buf, pos, end)
        elif w == 2:
            n, pos = _varint(buf, pos, end)
            if pos < 0 or n < 0 or n > end - pos:
                return at, 0, 0, 0, 0, 0
            a, pos = pos, pos + n
            if f == 1:
                n_lb += 1
            elif f == 3 or f == 4:
                if f == 3:
                    n_alloc += 1
                else:
                    n_tr += 1
                p = a
                while p < pos:
                    q_at = p
                    tag, p = _varint(buf, p, pos)
                    g, gw = tag >> 3, tag & 7
                    if gw == 0:
                        _, p = _varint(buf, p, pos)
                    elif gw == 2:
                        n, p = _varint(buf, p, pos)
                        if p < 0 or n < 0 or n > pos - p:
                            return q_at, 0, 0, 0, 0, 0
                        p += n
                        if f == 3 and g == 9:
                            n_asg += 1
                        elif f == 4 and g == 1:
                            n_ev += 1
                    else:
                        p = _skip(gw, p, pos)
                    if p < 0:
                        return q_at, 0, 0, 0, 0, 0
        else:
            pos = _skip(w, pos, end)
        if pos < 0:
            return at, 0, 0, 0, 0, 0
    return -1, n_lb, n_alloc, n_asg, n_tr, n_ev


@_jit
def _scan_buffer_assignment(buf, start, end, lbs, shape_index, allocs, assigned, traces, events):
    """Fills the columns of a BufferAssignmentProto in buf[start:end], sized by
    `_count_buffer_assignment` (shape_index by a guess: entries past it are counted, not kept).

    lbs[k] = (id, size, color, instruction id, first shape-index entry, count);
    allocs[k] = (index, size, flags, color, parameter number, first assigned, count) with flags
    1 thread-local, 2 entry parameter, 4 maybe live-out, 8 tuple, 16 constant;
    assigned[k] = (logical buffer id, offset, size); traces[k] = (first event, count,
    buffer allocation index, whole module); events[k] = (kind, buffer id, share-with id,
    instruction name s, e). Returns (error offset or -1, shape-index entries).
    """
    n_lb = n_si = n_alloc = n_asg = n_tr = n_ev = 0
    capacity = shape_index.shape[0]
    pos = start
    while pos < end:
        at = pos
        tag, pos = _varint(buf, pos, end)
        f, w = tag >> 3, tag & 7
        if w != 2:
            if w == 0:
                _, pos = _varint(buf, pos, end)
            else:
                pos = _skip(w, pos, end)
            if pos < 0:
                return at, 0
            continue
        n, pos = _varint(buf, pos, end)
        if pos < 0 or n < 0 or n > end - pos:
            return at, 0
        p, pos = pos, pos + n
        # one message of the kind named by f in buf[p:pos]
        first = n_si if f == 1 else (n_asg if f == 3 else n_ev)
        while p < pos:
            q_at = p
            tag, p = _varint(buf, p, pos)
            g, gw = tag >> 3, tag & 7
            if gw == 0:
                v, p = _varint(buf, p, pos)
                if f == 1:  # LogicalBufferProto
                    if g == 1:
                        lbs[n_lb, 0] = v
                    elif g == 2:
                        lbs[n_lb, 1] = v
                    elif g == 4:
                        lbs[n_lb, 2] = v
                elif f == 3:  # BufferAllocationProto
                    if g == 1:
                        allocs[n_alloc, 0] = v
                    elif g == 2:
                        allocs[n_alloc, 1] = v
                    elif g == 8:
                        allocs[n_alloc, 3] = v
                    elif g == 6:
                        allocs[n_alloc, 4] = v
                    elif v != 0:
                        if g == 3:
                            allocs[n_alloc, 2] |= 1
                        elif g == 5:
                            allocs[n_alloc, 2] |= 2
                        elif g == 7:
                            allocs[n_alloc, 2] |= 4
                        elif g == 11:
                            allocs[n_alloc, 2] |= 8
                        elif g == 12:
                            allocs[n_alloc, 2] |= 16
                elif f == 4:  # HeapSimulatorTrace
                    if g == 2:
                        traces[n_tr, 3] = v
                    elif g == 3:
                        traces[n_tr, 2] = v
            elif gw == 2:
                n, p = _varint(buf, p, pos)
                if p < 0 or n < 0 or n > pos - p:
                    return q_at, 0
                s, p = p, p + n
                if (f == 1 and g == 3) or (f == 3 and g == 9) or (f == 4 and g == 1):
                    # defined_at (into the logical buffer's row), an Assigned or an Event
                    while s < p:
                        r_at = s
                        tag, s = _varint(buf, s, p)
                        h, hw = tag >> 3, tag & 7
                        if hw == 0:
                            v, s = _varint(buf, s, p)
                            if f == 1:
                                if h == 4:
                                    lbs[n_lb, 3] = v
                                elif h == 3:  # one shape-index entry
                                    if n_si < capacity:
                                        shape_index[n_si] = v
                                    n_si += 1
                            elif f == 3:
                                if 1 <= h <= 3:
                                    assigned[n_asg, h - 1] = v
                            elif h == 1:
                                events[n_ev, 0] = v
                            elif h == 2:
                                events[n_ev, 1] = v
                            elif h == 5:
                                events[n_ev, 2] = v
                        elif hw == 2:
                            n, s = _varint(buf, s, p)
                            if s < 0 or n < 0 or n > p - s:
                                return r_at, 0
                            if f == 1 and h == 3:  # packed shape index
                                r = s
                                while r < s + n:
                                    v, r = _varint(buf, r, s + n)
                                    if r < 0:
                                        return r_at, 0
                                    if n_si < capacity:
                                        shape_index[n_si] = v
                                    n_si += 1
                            elif f == 4 and h == 4:
                                events[n_ev, 3], events[n_ev, 4] = s, s + n
                            s += n
                        else:
                            s = _skip(hw, s, p)
                        if s < 0:
                            return r_at, 0
                    if f == 3:
                        n_asg += 1
                    elif f == 4:
                        n_ev += 1
            else:
                p = _skip(gw, p, pos)
            if p < 0:
                return q_at, 0
        if f == 1:
            lbs[n_lb, 4] = first
            lbs[n_lb, 5] = n_si - first
            n_lb += 1
        elif f == 3:
            allocs[n_alloc, 5] = first
            allocs[n_alloc, 6] = n_asg - first
            n_alloc += 1
        elif f == 4:
            traces[n_tr, 0] = first
            traces[n_tr, 1] = n_ev - first
            n_tr += 1
    return -1, n_si


@_jit
def _top_level_spans(buf):
    """(module s, e, buffer assignment s, e) of an HloProto; -1 where absent; (-2, offset) if
    malformed."""
    spans = np.full(4, -1, np.int64)
    pos = 0
    end = buf.shape[0]
    while pos < end:
        at = pos
        tag, pos = _varint(buf, pos, end)
        f, w = tag >> 3, tag & 7
        if w == 2:
            n, pos = _varint(buf, pos, end)
            if pos >= 0 and 0 <= n <= end - pos:
                if f == 1:
                    spans[0], spans[1] = pos, pos + n
                elif f == 3:
                    spans[2], spans[3] = pos, pos + n
                pos += n
            else:
                pos = -1
        elif w == 0:
            _, pos = _varint(buf, pos, end)
        else:
            pos = _skip(w, pos, end)
        if pos < 0:
            spans[0], spans[1] = -2, at
            return spans
    return spans


@_jit
def _shape_unpadded(buf, s, e, index, bits):
    """Unpadded bytes of the subshape at `index` of the ShapeProto in buf[s:e]; -1 if the index
    does not exist or the bytes are malformed."""
    element_type = 0
    elements = 1
    tuple_count = 0
    depth = 0
    p = s
    while p < e:
        tag, p = _varint(buf, p, e)
        f, w = tag >> 3, tag & 7
        if w == 0:
            v, p = _varint(buf, p, e)
            if f == 2:
                element_type = v
            elif f == 3:
                elements *= v
        elif w == 2:
            n, p = _varint(buf, p, e)
            if p < 0 or n < 0 or n > e - p:
                return -1
            if f == 3:  # packed dimensions
                q = p
                while q < p + n:
                    v, q = _varint(buf, q, p + n)
                    if q < 0:
                        return -1
                    elements *= v
            elif f == 4:
                if depth < index.shape[0] and tuple_count == index[depth]:
                    # descend into the indexed element and read it from its start
                    depth += 1
                    s, e = p, p + n
                    element_type = 0
                    elements = 1
                    tuple_count = 0
                    continue
                tuple_count += 1
            p += n
        else:
            p = _skip(w, p, e)
        if p < 0:
            return -1
    if depth < index.shape[0]:
        return -1
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
        first = index_spans[k, 0]
        if s < 0:
            out[k] = -1
        else:
            out[k] = _shape_unpadded(buf, s, shape_spans[k, 1],
                                     shape_index[first:first + index_spans[k, 1]], bits)
    return out


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
    "BufferAssignment", "HloModule", "IdIndex", "StackFrameIndexProto", "decode_hlo_proto",
    "layout_to_string", "scan_buffer_assignment", "shape_to_string", "split_hlo_proto",
    "subshape", "type_name", "unpadded_bytes",
]
