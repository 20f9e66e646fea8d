# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Scanners over serialized HLO protos: module instructions, buffer assignment, shape sizes.

Bounds checks are off: every byte read goes through `_varint.pxd`, which never reads at or past
the end of the message being read, spans handed in from Python are checked against the buffer,
and every output row is checked against the output's size before it is written.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t

import numpy as np

from ._varint cimport next_field, read_varint

cdef enum:
    TUPLE = 13
    OPAQUE = 14
    POINTER_SIZE = 8  # bytes XLA counts per tuple element (a pointer table), as XProf does


cdef inline const uint8_t* _data(const uint8_t[::1] buf) noexcept nogil:
    return &buf[0] if buf.shape[0] > 0 else NULL


cdef inline int64_t _varint(const uint8_t* buf, int64_t pos, int64_t end,
                            int64_t* value) noexcept nogil:
    """read_varint with the value as int64 (how HLO protos' ids and sizes are declared)."""
    cdef uint64_t raw
    pos = read_varint(buf, pos, end, &raw)
    value[0] = <int64_t>raw
    return pos


cdef inline int64_t _end(int64_t start, int64_t end, int64_t n_buf) except -2:
    if not 0 <= start <= end <= n_buf:
        raise ValueError(f"bytes [{start}, {end}) are not inside the buffer of {n_buf}")
    return end


def _scan_module(const uint8_t[::1] buf, int64_t start, int64_t end, bint fill,
                 int64_t[::1] header, int64_t[:, ::1] comps, int64_t[:, ::1] inst):
    """Walks an HloModuleProto in buf[start:end]; counts (fill=False) or fills.

    header = [name s, name e, id, entry computation id, stack frame index s, e];
    comps[k] = (name s, name e); inst[k] = (id, computation, record s, record e, name s, name e,
    shape s, shape e). Returns (error offset or -1, n computations, n instructions).
    """
    cdef int64_t counts[2]
    cdef int64_t err
    counts[0] = counts[1] = 0
    _end(start, end, buf.shape[0])
    if header.shape[0] < 6 or (fill and (comps.shape[1] < 2 or inst.shape[1] < 8)):
        raise ValueError("_scan_module: output arrays of the wrong width")
    with nogil:
        err = _module(_data(buf), start, end, fill, header, comps, inst, counts)
    if err == -2:
        raise ValueError("_scan_module: the output arrays are smaller than the counting pass said")
    if err >= 0:
        return err, 0, 0
    return -1, counts[0], counts[1]


cdef int64_t _module(const uint8_t* buf, int64_t start, int64_t end, bint fill,
                     int64_t[::1] header, int64_t[:, ::1] comps, int64_t[:, ::1] inst,
                     int64_t* counts) noexcept nogil:
    cdef int64_t n_comp = 0, n_inst = 0, pos = start, at, f, w, v
    cdef int64_t p, c_at, cf, cw, ca, q, i_at, i_f, iw, iv, col
    while pos < end:
        at = pos
        # varint fields are stored before pos is checked (a malformed one as 0), payloads after
        pos = next_field(buf, pos, end, &f, &w, &v)
        if w == 0:
            if fill and f == 5:
                header[2] = v
            elif fill and f == 6:
                header[3] = v
        elif w == 2 and pos >= 0:  # the payload is buf[v:pos]
            if fill and f == 1:
                header[0] = v
                header[1] = pos
            elif fill and f == 17:
                header[4] = v
                header[5] = pos
            elif f == 3:  # HloComputationProto
                p = v
                while p < pos:
                    c_at = p
                    p = next_field(buf, p, pos, &cf, &cw, &ca)
                    if p < 0:
                        return c_at
                    if cw == 2:  # the payload is buf[ca:p]
                        if fill and cf == 1:
                            if n_comp >= comps.shape[0]:
                                return -2
                            comps[n_comp, 0] = ca
                            comps[n_comp, 1] = p
                        elif cf == 2:  # HloInstructionProto
                            if fill:
                                if n_inst >= inst.shape[0]:
                                    return -2
                                for col in range(inst.shape[1]):
                                    inst[n_inst, col] = 0
                                inst[n_inst, 1] = n_comp
                                inst[n_inst, 2] = ca
                                inst[n_inst, 3] = p
                                q = ca
                                while q < p:
                                    i_at = q
                                    q = next_field(buf, q, p, &i_f, &iw, &iv)
                                    if iw == 0:
                                        if i_f == 35:
                                            inst[n_inst, 0] = iv
                                    elif iw == 2 and q >= 0:  # the payload is buf[iv:q]
                                        if i_f == 1:
                                            inst[n_inst, 4] = iv
                                            inst[n_inst, 5] = q
                                        elif i_f == 3:
                                            inst[n_inst, 6] = iv
                                            inst[n_inst, 7] = q
                                    if q < 0:
                                        return i_at
                            n_inst += 1
                n_comp += 1
        if pos < 0:
            return at
    counts[0] = n_comp
    counts[1] = n_inst
    return -1


def _count_buffer_assignment(const uint8_t[::1] buf, int64_t start, int64_t end):
    """Sizes the columns: (error offset or -1, lbs, allocations, assigned, traces, events).

    Only the top level and one level into allocations and traces are walked; logical buffers
    are counted, not read.
    """
    cdef int64_t counts[5]
    cdef int64_t err
    counts[0] = counts[1] = counts[2] = counts[3] = counts[4] = 0
    _end(start, end, buf.shape[0])
    with nogil:
        err = _count(_data(buf), start, end, counts)
    if err >= 0:
        return err, 0, 0, 0, 0, 0
    return -1, counts[0], counts[1], counts[2], counts[3], counts[4]


cdef int64_t _count(const uint8_t* buf, int64_t start, int64_t end,
                    int64_t* counts) noexcept nogil:
    cdef int64_t n_lb = 0, n_alloc = 0, n_asg = 0, n_tr = 0, n_ev = 0
    cdef int64_t pos = start, at, f, w, a, p, q_at, g, gw, v
    while pos < end:
        at = pos
        pos = next_field(buf, pos, end, &f, &w, &a)
        if pos < 0:
            return at
        if w == 2:  # the payload is buf[a:pos]
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
                    p = next_field(buf, p, pos, &g, &gw, &v)
                    if p < 0:
                        return q_at
                    if gw == 2:
                        if f == 3 and g == 9:
                            n_asg += 1
                        elif f == 4 and g == 1:
                            n_ev += 1
    counts[0] = n_lb
    counts[1] = n_alloc
    counts[2] = n_asg
    counts[3] = n_tr
    counts[4] = n_ev
    return -1


def _scan_buffer_assignment(const uint8_t[::1] buf, int64_t start, int64_t end,
                            int64_t[:, ::1] lbs, int64_t[::1] shape_index,
                            int64_t[:, ::1] allocs, int64_t[:, ::1] assigned,
                            int64_t[:, ::1] traces, int64_t[:, ::1] events):
    """Fills the columns of a BufferAssignmentProto in buf[start:end], sized by
    `_count_buffer_assignment` (shape_index by a guess: entries past it are counted, not kept).

    lbs[k] = (id, size, color, instruction id, first shape-index entry, count);
    allocs[k] = (index, size, flags, color, parameter number, first assigned, count) with flags
    1 thread-local, 2 entry parameter, 4 maybe live-out, 8 tuple, 16 constant;
    assigned[k] = (logical buffer id, offset, size); traces[k] = (first event, count,
    buffer allocation index, whole module); events[k] = (kind, buffer id, share-with id,
    instruction name s, e). Returns (error offset or -1, shape-index entries).
    """
    cdef int64_t n_si = 0
    cdef int64_t err
    _end(start, end, buf.shape[0])
    if lbs.shape[1] < 6 or allocs.shape[1] < 7 or assigned.shape[1] < 3 or \
            traces.shape[1] < 4 or events.shape[1] < 5:
        raise ValueError("_scan_buffer_assignment: output arrays of the wrong width")
    with nogil:
        err = _buffer_assignment(_data(buf), start, end, lbs, shape_index, allocs, assigned,
                                 traces, events, &n_si)
    if err == -2:
        raise ValueError("_scan_buffer_assignment: the output arrays are smaller than "
                         "_count_buffer_assignment said")
    if err >= 0:
        return err, 0
    return -1, n_si


cdef int64_t _buffer_assignment(const uint8_t* buf, int64_t start, int64_t end,
                                int64_t[:, ::1] lbs, int64_t[::1] shape_index,
                                int64_t[:, ::1] allocs, int64_t[:, ::1] assigned,
                                int64_t[:, ::1] traces, int64_t[:, ::1] events,
                                int64_t* n_shape_index) noexcept nogil:
    cdef int64_t n_lb = 0, n_si = 0, n_alloc = 0, n_asg = 0, n_tr = 0, n_ev = 0
    cdef int64_t capacity = shape_index.shape[0]
    cdef int64_t pos = start, at, f, w, v, p, first, q_at, g, gw, s, e, r_at, h, hw, r
    while pos < end:
        at = pos
        pos = next_field(buf, pos, end, &f, &w, &p)
        if pos < 0:
            return at
        if w != 2:
            continue
        if (f == 1 and n_lb >= lbs.shape[0]) or (f == 3 and n_alloc >= allocs.shape[0]) or \
                (f == 4 and n_tr >= traces.shape[0]):
            return -2
        # one message of the kind named by f in buf[p:pos]
        first = n_si if f == 1 else (n_asg if f == 3 else n_ev)
        while p < pos:
            q_at = p
            p = next_field(buf, p, pos, &g, &gw, &v)
            if gw == 0:
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
            elif gw == 2 and p >= 0:  # the payload is buf[v:p]
                s = v
                if (f == 1 and g == 3) or (f == 3 and g == 9) or (f == 4 and g == 1):
                    # defined_at (into the logical buffer's row), an Assigned or an Event
                    if (f == 3 and n_asg >= assigned.shape[0]) or \
                            (f == 4 and n_ev >= events.shape[0]):
                        return -2
                    while s < p:
                        r_at = s
                        s = next_field(buf, s, p, &h, &hw, &v)
                        if hw == 0:
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
                        elif hw == 2 and s >= 0:  # the payload is buf[v:s]
                            if f == 1 and h == 3:  # packed shape index
                                r = v
                                while r < s:
                                    r = _varint(buf, r, s, &e)
                                    if r < 0:
                                        return r_at
                                    if n_si < capacity:
                                        shape_index[n_si] = e
                                    n_si += 1
                            elif f == 4 and h == 4:
                                events[n_ev, 3] = v
                                events[n_ev, 4] = s
                        if s < 0:
                            return r_at
                    if f == 3:
                        n_asg += 1
                    elif f == 4:
                        n_ev += 1
            if p < 0:
                return q_at
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
    n_shape_index[0] = n_si
    return -1


def _top_level_spans(const uint8_t[::1] buf):
    """(module s, e, buffer assignment s, e) of an HloProto; -1 where absent; (-2, offset) if
    malformed."""
    cdef int64_t spans[4]
    cdef const uint8_t* data = _data(buf)
    cdef int64_t pos = 0, end = buf.shape[0], at, f, w, a
    spans[0] = spans[1] = spans[2] = spans[3] = -1
    with nogil:
        while pos < end:
            at = pos
            pos = next_field(data, pos, end, &f, &w, &a)
            if pos < 0:
                spans[0] = -2
                spans[1] = at
                break
            if w == 2:  # the payload is data[a:pos]
                if f == 1:
                    spans[0] = a
                    spans[1] = pos
                elif f == 3:
                    spans[2] = a
                    spans[3] = pos
    return spans[0], spans[1], spans[2], spans[3]


def _unpadded_sizes(const uint8_t[::1] buf, const int64_t[:, :] shape_spans,
                    const int64_t[:] shape_index, const int64_t[:, :] index_spans,
                    const int64_t[:] bits):
    """Unpadded bytes of subshapes: the ShapeProto at shape_spans[k] (s < 0: none) at the
    shape index shape_index[first:first + count], (first, count) = index_spans[k]; -1 where the
    index does not exist or the bytes are malformed."""
    cdef int64_t n = shape_spans.shape[0]
    if index_spans.shape[0] < n or (n and (shape_spans.shape[1] < 2 or index_spans.shape[1] < 2)):
        raise ValueError("_unpadded_sizes: shape_spans and index_spans differ in length")
    out = np.empty(n, np.int64)
    cdef int64_t[::1] sizes = out
    cdef const uint8_t* data = _data(buf)
    cdef int64_t n_buf = buf.shape[0], n_index = shape_index.shape[0], k, s, e, lo, hi
    with nogil:
        for k in range(n):
            s = shape_spans[k, 0]
            e = shape_spans[k, 1]
            if s < 0 or e < s or e > n_buf:
                sizes[k] = -1
                continue
            lo = min(max(index_spans[k, 0], 0), n_index)  # a slice, as Python clips it
            hi = min(max(index_spans[k, 0] + index_spans[k, 1], lo), n_index)
            sizes[k] = _shape_unpadded(data, s, e, shape_index, lo, hi, bits)
    return out


cdef int64_t _shape_unpadded(const uint8_t* buf, int64_t s, int64_t e,
                             const int64_t[:] index, int64_t index_lo, int64_t index_hi,
                             const int64_t[:] bits) noexcept nogil:
    """Unpadded bytes of the subshape at index[index_lo:index_hi] of the ShapeProto in
    buf[s:e]; -1 if the index does not exist or the bytes are malformed."""
    cdef int64_t element_type = 0, elements = 1, tuple_count = 0, depth = index_lo
    cdef int64_t p = s, f, w, v, q, width
    while p < e:
        p = next_field(buf, p, e, &f, &w, &v)
        if p < 0:
            return -1
        if w == 0:
            if f == 2:
                element_type = v
            elif f == 3:
                elements *= v
        elif w == 2:  # the payload is buf[v:p]
            if f == 3:  # packed dimensions
                q = v
                while q < p:
                    q = _varint(buf, q, p, &v)
                    if q < 0:
                        return -1
                    elements *= v
            elif f == 4:
                if depth < index_hi and tuple_count == index[depth]:
                    # descend into the indexed element and read it from its start
                    depth += 1
                    e = p
                    p = v
                    element_type = 0
                    elements = 1
                    tuple_count = 0
                    continue
                tuple_count += 1
    if depth < index_hi:
        return -1
    if element_type == TUPLE:
        return POINTER_SIZE * tuple_count
    if element_type == OPAQUE:
        return POINTER_SIZE
    width = bits[element_type] if 0 <= element_type < bits.shape[0] else 0
    return (elements * width + 7) // 8
