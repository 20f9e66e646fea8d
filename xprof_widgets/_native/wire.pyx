# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Scanners over the raw XSpace wire format, and the per-line event order and nesting depth.

Bounds checks are off: every byte read goes through `_varint.pxd`, which never reads at or past
the end of the message being read (a malformed length ends the scan with an error code), and
every output write is checked against the output's size.
"""

from libc.stdint cimport int16_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np

from ._varint cimport len_field, read_varint, skip_field

# Error codes returned by the scanners (with the offset where they occurred).
OK = 0
ERR_TRUNCATED = -1  # a field runs past the end of its message
ERR_WIRETYPE = -2  # a wire type that protobuf does not define
ERR_VARINT = -3  # a varint longer than 10 bytes

cdef enum:
    C_OK = 0
    C_TRUNCATED = -1
    C_VARINT = -3
    C_TOO_SMALL = -100  # an output array holds fewer rows than the data needs

ctypedef fused record_t:
    uint32_t
    int64_t


cdef inline const uint8_t* _data(const uint8_t[::1] buf) noexcept nogil:
    return &buf[0] if buf.shape[0] > 0 else NULL


def _varint(const uint8_t[::1] buf, int64_t pos, int64_t end):
    """Reads a varint at pos: (value, next pos), or (0, -1) on malformed input."""
    cdef uint64_t value
    pos = read_varint(_data(buf), pos, min(end, buf.shape[0]), &value)
    return value, pos


def _len_field(const uint8_t[::1] buf, int64_t pos, int64_t end):
    """Reads a length prefix at pos: (payload start, payload end), or (-1, -1)."""
    cdef int64_t payload_end
    pos = len_field(_data(buf), pos, min(end, buf.shape[0]), &payload_end)
    return pos, payload_end


def scan_xspace(const uint8_t[::1] buf, bint fill, int64_t[:, ::1] planes,
                int64_t[:, ::1] header_spans, int64_t[:, ::1] lines,
                int64_t[:, ::1] line_names, int64_t[::1] ev_meta, int64_t[::1] ev_offset,
                int64_t[::1] ev_duration, int64_t[::1] ev_record):
    """Walks an XSpace; counts (fill=False) or fills (fill=True) the output arrays.

    planes[k] = (start, end) of plane k's bytes; header_spans[j] = (plane, start, end) of every
    plane field that is not a line, and of every top-level field that is not a plane (plane -1);
    lines[k] = (plane, id, display_id, timestamp_ns, duration_ps, first event, end event);
    line_names[k] = (name start, name end, display start, display end);
    events: metadata id, offset_ps, duration_ps, and the byte offset of the event's record.
    Returns (status, error offset, n_planes, n_spans, n_lines, n_events).
    """
    cdef int64_t counts[4]
    cdef int64_t where = 0
    cdef int status
    counts[0] = counts[1] = counts[2] = counts[3] = 0
    if fill and (planes.shape[1] < 2 or header_spans.shape[1] < 3 or lines.shape[1] < 7
                 or line_names.shape[1] < 4):
        raise ValueError("scan_xspace: output arrays of the wrong width")
    with nogil:
        status = _scan_xspace(_data(buf), buf.shape[0], fill, planes, header_spans, lines,
                              line_names, ev_meta, ev_offset, ev_duration, ev_record, counts,
                              &where)
    if status == C_TOO_SMALL:
        raise ValueError("scan_xspace: the output arrays are smaller than the counting pass "
                         "said; size them with scan_xspace(buf, False, ...) on the same bytes")
    if status != C_OK:
        return status, where, 0, 0, 0, 0
    return C_OK, 0, counts[0], counts[1], counts[2], counts[3]


cdef int _scan_xspace(const uint8_t* buf, int64_t end, bint fill, int64_t[:, ::1] planes,
                      int64_t[:, ::1] header_spans, int64_t[:, ::1] lines,
                      int64_t[:, ::1] line_names, int64_t[::1] ev_meta, int64_t[::1] ev_offset,
                      int64_t[::1] ev_duration, int64_t[::1] ev_record, int64_t* counts,
                      int64_t* where) noexcept nogil:
    cdef int64_t n_planes = 0, n_spans = 0, n_lines = 0, n_events = 0
    cdef int64_t pos = 0, field_start, p_start, p_end, pf_start, l_start, l_end, lf_start
    cdef int64_t e_start, e_end, ef_start, s, e
    cdef int64_t wire_type, field, pwt, pfield, lwt, lfield, ewt, efield
    cdef int64_t first_event, line_id, display_id, timestamp_ns, duration_ps
    cdef int64_t name_s, name_e, disp_s, disp_e, meta, offset, duration, signed
    cdef uint64_t tag, value
    while pos < end:
        field_start = pos
        pos = read_varint(buf, pos, end, &tag)
        if pos < 0:
            where[0] = field_start
            return C_VARINT
        wire_type = <int64_t>(tag & 7)
        field = <int64_t>(tag >> 3)
        if field != 1 or wire_type != 2:
            pos = skip_field(buf, pos, end, wire_type)
            if pos < 0:
                where[0] = field_start
                return C_TRUNCATED
            if fill:
                if n_spans >= header_spans.shape[0]:
                    return C_TOO_SMALL
                header_spans[n_spans, 0] = -1
                header_spans[n_spans, 1] = field_start
                header_spans[n_spans, 2] = pos
            n_spans += 1
            continue
        p_start = len_field(buf, pos, end, &p_end)
        if p_start < 0:
            where[0] = field_start
            return C_TRUNCATED
        if fill:
            if n_planes >= planes.shape[0]:
                return C_TOO_SMALL
            planes[n_planes, 0] = p_start
            planes[n_planes, 1] = p_end
        pos = p_start
        while pos < p_end:
            pf_start = pos
            pos = read_varint(buf, pos, p_end, &tag)
            if pos < 0:
                where[0] = pf_start
                return C_VARINT
            pwt = <int64_t>(tag & 7)
            pfield = <int64_t>(tag >> 3)
            if pfield != 3 or pwt != 2:
                pos = skip_field(buf, pos, p_end, pwt)
                if pos < 0:
                    where[0] = pf_start
                    return C_TRUNCATED
                if fill:
                    if n_spans >= header_spans.shape[0]:
                        return C_TOO_SMALL
                    header_spans[n_spans, 0] = n_planes
                    header_spans[n_spans, 1] = pf_start
                    header_spans[n_spans, 2] = pos
                n_spans += 1
                continue
            l_start = len_field(buf, pos, p_end, &l_end)
            if l_start < 0:
                where[0] = pf_start
                return C_TRUNCATED
            first_event = n_events
            line_id = display_id = timestamp_ns = duration_ps = 0
            name_s = name_e = disp_s = disp_e = l_start
            pos = l_start
            while pos < l_end:
                lf_start = pos
                pos = read_varint(buf, pos, l_end, &tag)
                if pos < 0:
                    where[0] = lf_start
                    return C_VARINT
                lwt = <int64_t>(tag & 7)
                lfield = <int64_t>(tag >> 3)
                if lwt == 0 and (lfield == 1 or lfield == 3 or lfield == 9 or lfield == 10):
                    pos = read_varint(buf, pos, l_end, &value)
                    if pos < 0:
                        where[0] = lf_start
                        return C_VARINT
                    signed = <int64_t>value
                    if lfield == 1:
                        line_id = signed
                    elif lfield == 3:
                        timestamp_ns = signed
                    elif lfield == 9:
                        duration_ps = signed
                    else:
                        display_id = signed
                elif lwt == 2 and (lfield == 2 or lfield == 11):
                    s = len_field(buf, pos, l_end, &e)
                    if s < 0:
                        where[0] = lf_start
                        return C_TRUNCATED
                    if lfield == 2:
                        name_s = s
                        name_e = e
                    else:
                        disp_s = s
                        disp_e = e
                    pos = e
                elif lwt == 2 and lfield == 4:
                    e_start = len_field(buf, pos, l_end, &e_end)
                    if e_start < 0:
                        where[0] = lf_start
                        return C_TRUNCATED
                    if not fill:  # counting: the record's length is all we need
                        n_events += 1
                        pos = e_end
                        continue
                    meta = offset = duration = 0
                    pos = e_start
                    while pos < e_end:
                        ef_start = pos
                        pos = read_varint(buf, pos, e_end, &tag)
                        if pos < 0:
                            where[0] = ef_start
                            return C_VARINT
                        ewt = <int64_t>(tag & 7)
                        efield = <int64_t>(tag >> 3)
                        if ewt == 0 and efield <= 3:
                            pos = read_varint(buf, pos, e_end, &value)
                            if pos < 0:
                                where[0] = ef_start
                                return C_VARINT
                            if efield == 1:
                                meta = <int64_t>value
                            elif efield == 2:
                                offset = <int64_t>value
                            elif efield == 3:
                                duration = <int64_t>value
                        else:
                            pos = skip_field(buf, pos, e_end, ewt)
                            if pos < 0:
                                where[0] = ef_start
                                return C_TRUNCATED
                    if n_events >= ev_meta.shape[0] or n_events >= ev_offset.shape[0] or \
                            n_events >= ev_duration.shape[0] or n_events >= ev_record.shape[0]:
                        return C_TOO_SMALL
                    ev_meta[n_events] = meta
                    ev_offset[n_events] = offset
                    ev_duration[n_events] = duration
                    ev_record[n_events] = lf_start
                    n_events += 1
                    pos = e_end
                else:
                    pos = skip_field(buf, pos, l_end, lwt)
                    if pos < 0:
                        where[0] = lf_start
                        return C_TRUNCATED
            if fill:
                if n_lines >= lines.shape[0] or n_lines >= line_names.shape[0]:
                    return C_TOO_SMALL
                lines[n_lines, 0] = n_planes
                lines[n_lines, 1] = line_id
                lines[n_lines, 2] = display_id
                lines[n_lines, 3] = timestamp_ns
                lines[n_lines, 4] = duration_ps
                lines[n_lines, 5] = first_event
                lines[n_lines, 6] = n_events
                line_names[n_lines, 0] = name_s
                line_names[n_lines, 1] = name_e
                line_names[n_lines, 2] = disp_s
                line_names[n_lines, 3] = disp_e
            n_lines += 1
            pos = l_end
        n_planes += 1
        pos = p_end
    counts[0] = n_planes
    counts[1] = n_spans
    counts[2] = n_lines
    counts[3] = n_events
    return C_OK


def order_and_depth(start, duration, line_bounds, depth):
    """Sorts each line's events by (start, longest first) in place and fills their nesting depth.

    Returns the permutation applied, so callers can reorder companion columns, or an empty
    array when every line was already ordered (the common case: no n-sized allocation).
    Depth follows a stack of earlier events: an event sits one level below the innermost one
    that contains it (ends no earlier than it does), as XProf's trace viewer nests slices. An
    event that overlaps an earlier one without fitting in it (tracers write such pairs: JAX's
    step annotation ends 2 us after a Python frame it starts in) is its sibling, not its child.
    Siblings may so overlap, but one never holds another: an event that an earlier event at its
    depth would contain (possible only below such an overlap) goes one level deeper, so starts
    and ends both ascend at every depth. Instants (zero duration) hold nothing.
    """
    cdef int64_t[::1] s = start
    cdef int64_t[::1] d = duration
    cdef const int64_t[:, :] bounds = line_bounds
    cdef int16_t[::1] out = depth
    cdef int64_t n = s.shape[0]
    cdef int64_t k, lo, hi
    cdef bint ordered
    if d.shape[0] != n or out.shape[0] != n:
        raise ValueError("order_and_depth: start, duration and depth differ in length")
    for k in range(bounds.shape[0]):
        if not 0 <= bounds[k, 0] <= bounds[k, 1] <= n:
            raise ValueError(f"order_and_depth: line {k} spans events {bounds[k, 0]}.."
                             f"{bounds[k, 1]} of {n}")
    perm = np.empty(0, dtype=np.int64)
    cdef int64_t[::1] stack_end = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] stack_depth = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] last_end = np.empty(n + 1, dtype=np.int64)
    for k in range(bounds.shape[0]):
        lo = bounds[k, 0]
        hi = bounds[k, 1]
        with nogil:
            ordered = _is_ordered(s, d, lo, hi)
        if not ordered:
            if perm.shape[0] == 0:
                perm = np.arange(n)
            by_duration = np.argsort(-duration[lo:hi], kind="mergesort")
            local = by_duration[np.argsort(start[lo:hi][by_duration], kind="mergesort")]
            start[lo:hi] = start[lo:hi][local]
            duration[lo:hi] = duration[lo:hi][local]
            perm[lo:hi] = lo + local
        with nogil:
            _fill_depth(s, d, lo, hi, stack_end, stack_depth, last_end, out)
    return perm


cdef bint _is_ordered(int64_t[::1] start, int64_t[::1] duration, int64_t lo,
                      int64_t hi) noexcept nogil:
    cdef int64_t i
    for i in range(lo + 1, hi):
        if start[i] < start[i - 1] or (start[i] == start[i - 1]
                                       and duration[i] > duration[i - 1]):
            return False
    return True


cdef void _fill_depth(int64_t[::1] start, int64_t[::1] duration, int64_t lo, int64_t hi,
                      int64_t[::1] stack_end, int64_t[::1] stack_depth, int64_t[::1] last_end,
                      int16_t[::1] depth) noexcept nogil:
    cdef int64_t i, end, d
    cdef int64_t top = 0
    cdef int64_t used = 0  # depths seen on this line
    for i in range(lo, hi):
        end = start[i] + duration[i]
        while top > 0 and stack_end[top - 1] < end:
            top -= 1
        d = stack_depth[top - 1] + 1 if top > 0 else 0
        while d < used and last_end[d] > end:
            d += 1
        if d == used:
            used += 1
        last_end[d] = end
        depth[i] = <int16_t>(d if d < 32767 else 32767)
        if duration[i] > 0:  # an instant holds nothing
            stack_end[top] = end
            stack_depth[top] = d
            top += 1


def scan_stat(const uint8_t[::1] buf, const record_t[:] records, const int64_t[:] targets,
              bint any_numeric, int64_t[:] kind, int64_t[:] int_value, double[:] float_value,
              int64_t[:, :] span):
    """Finds, for each event record, the stat whose metadata id equals targets[k].

    With any_numeric, takes instead the first stat holding a number (a counter's value).
    kind[k]: 0 absent, 2 double, 3 uint64, 4 int64, 5 str, 6 bytes, 7 ref (the XStat field
    number); the value lands in int_value, float_value, or span (start, end) for str/bytes.
    Returns a status code.
    """
    cdef int64_t n = records.shape[0]
    cdef int status
    if (targets.shape[0] < n or kind.shape[0] < n or int_value.shape[0] < n
            or float_value.shape[0] < n or span.shape[0] < n or (n and span.shape[1] < 2)):
        raise ValueError("scan_stat: an output array is shorter than records")
    with nogil:
        status = _scan_stat(_data(buf), buf.shape[0], records, targets, any_numeric, kind,
                            int_value, float_value, span)
    return status


cdef int _scan_stat(const uint8_t* buf, int64_t end, const record_t[:] records,
                    const int64_t[:] targets, bint any_numeric, int64_t[:] kind,
                    int64_t[:] int_value, double[:] float_value,
                    int64_t[:, :] span) noexcept nogil:
    cdef int64_t k, pos, e_start, e_end, s_start, s_end, wt, field
    cdef uint64_t tag
    cdef int status
    for k in range(records.shape[0]):
        kind[k] = 0
        pos = read_varint(buf, <int64_t>records[k], end, &tag)  # the event's tag
        if pos < 0:
            return C_VARINT
        e_start = len_field(buf, pos, end, &e_end)
        if e_start < 0:
            return C_TRUNCATED
        pos = e_start
        while pos < e_end:
            pos = read_varint(buf, pos, e_end, &tag)
            if pos < 0:
                return C_VARINT
            wt = <int64_t>(tag & 7)
            field = <int64_t>(tag >> 3)
            if field != 4 or wt != 2:
                pos = skip_field(buf, pos, e_end, wt)
                if pos < 0:
                    return C_TRUNCATED
                continue
            s_start = len_field(buf, pos, e_end, &s_end)
            if s_start < 0:
                return C_TRUNCATED
            status = _read_stat(buf, s_start, s_end, targets[k], any_numeric, k, kind,
                                int_value, float_value, span)
            if status < 0:
                return status
            pos = s_end
    return C_OK


cdef int _read_stat(const uint8_t* buf, int64_t pos, int64_t end, int64_t target,
                    bint any_numeric, int64_t k, int64_t[:] kind, int64_t[:] int_value,
                    double[:] float_value, int64_t[:, :] span) noexcept nogil:
    cdef int64_t meta = 0, value_kind = 0, ivalue = 0, s = 0, e = 0, wt, field
    cdef double fvalue = 0.0
    cdef uint64_t tag, value
    cdef bint numeric, wanted
    while pos < end:
        pos = read_varint(buf, pos, end, &tag)
        if pos < 0:
            return C_VARINT
        wt = <int64_t>(tag & 7)
        field = <int64_t>(tag >> 3)
        if wt == 0:
            pos = read_varint(buf, pos, end, &value)
            if pos < 0:
                return C_VARINT
            if field == 1:
                meta = <int64_t>value
            else:
                value_kind = field
                ivalue = <int64_t>value
        elif wt == 1:
            if pos + 8 > end:
                return C_TRUNCATED
            if field == 2:
                value_kind = 2
                memcpy(&fvalue, buf + pos, 8)
            pos += 8
        elif wt == 2:
            s = len_field(buf, pos, end, &e)
            if s < 0:
                return C_TRUNCATED
            value_kind = field
            pos = e
        else:
            pos = skip_field(buf, pos, end, wt)
            if pos < 0:
                return C_TRUNCATED
    numeric = value_kind == 2 or value_kind == 3 or value_kind == 4
    wanted = (kind[k] == 0 and numeric) if any_numeric else meta == target
    if wanted and value_kind != 0:
        kind[k] = value_kind
        int_value[k] = ivalue
        float_value[k] = fvalue
        span[k, 0] = s
        span[k, 1] = e
    return C_OK
