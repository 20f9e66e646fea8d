# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Scanners over the raw XSpace wire format, and the per-line event order and nesting depth.

Bounds checks are off: every byte read goes through `_varint.pxd`, which never reads at or past
the end of the message being read (a malformed length ends the scan with an error code), and
every output write is checked against the output's size.
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc
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


def scan_planes(const uint8_t[::1] buf, int64_t[:, ::1] planes, int64_t[:, ::1] header_spans,
                int64_t[:, ::1] line_spans):
    """Walks an XSpace down to its lines, skipping each line's payload by its length.

    planes[k] = (start, end) of plane k's bytes; header_spans[j] = (plane, start, end) of every
    plane field that is not a line, and of every top-level field that is not a plane (plane -1);
    line_spans[k] = (plane, payload start, payload end) of line k, what `scan_lines` walks, on
    any thread. Rows past an array's end are counted, not written: one pass sizes and fills at
    once when the arrays are large enough, else the caller calls again with the counts
    returned. Returns (status, error offset, n_planes, n_spans, n_lines); on an error the
    counts are those of the rows written before it (whole lines), for `scan_lines` to look
    for an earlier error inside them.
    """
    cdef int64_t counts[3]
    cdef int64_t where = 0
    cdef int status
    if planes.shape[1] < 2 or header_spans.shape[1] < 3 or line_spans.shape[1] < 3:
        raise ValueError("scan_planes: output arrays of the wrong width")
    with nogil:
        status = _scan_planes(_data(buf), buf.shape[0], planes, header_spans, line_spans,
                              counts, &where)
    return status, where, counts[0], counts[1], counts[2]


cdef int _scan_planes(const uint8_t* buf, int64_t end, int64_t[:, ::1] planes,
                      int64_t[:, ::1] header_spans, int64_t[:, ::1] line_spans,
                      int64_t* counts, int64_t* where) noexcept nogil:
    cdef int64_t pos = 0, field_start, p_start, p_end, pf_start, l_start, l_end
    cdef int64_t wire_type, field, pwt, pfield
    cdef uint64_t tag
    cdef int status = C_OK
    counts[0] = counts[1] = counts[2] = 0
    while pos < end and status == C_OK:
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
            if counts[1] < header_spans.shape[0]:
                header_spans[counts[1], 0] = -1
                header_spans[counts[1], 1] = field_start
                header_spans[counts[1], 2] = pos
            counts[1] += 1
            continue
        p_start = len_field(buf, pos, end, &p_end)
        if p_start < 0:
            where[0] = field_start
            return C_TRUNCATED
        if counts[0] < planes.shape[0]:
            planes[counts[0], 0] = p_start
            planes[counts[0], 1] = p_end
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
                if counts[1] < header_spans.shape[0]:
                    header_spans[counts[1], 0] = counts[0]
                    header_spans[counts[1], 1] = pf_start
                    header_spans[counts[1], 2] = pos
                counts[1] += 1
                continue
            l_start = len_field(buf, pos, p_end, &l_end)
            if l_start < 0:
                where[0] = pf_start
                return C_TRUNCATED
            if counts[2] < line_spans.shape[0]:
                line_spans[counts[2], 0] = counts[0]
                line_spans[counts[2], 1] = l_start
                line_spans[counts[2], 2] = l_end
            counts[2] += 1
            pos = l_end
        counts[0] += 1
        pos = p_end
    return C_OK


def scan_lines(const uint8_t[::1] buf, const int64_t[:, ::1] line_spans,
               const int64_t[::1] which, int64_t chunk_events, int64_t[:, ::1] lines,
               int64_t[:, ::1] line_names, const int64_t[::1] chunk_base,
               int64_t[:, ::1] chunks):
    """Walks the lines `which` (rows of scan_planes' line_spans, ascending) without the GIL,
    skipping each event record by its length, so threads may walk disjoint lines.

    lines[k] = (plane, id, display_id, timestamp_ns, duration_ps, 0, events of the line);
    line_names[k] = (name start, name end, display start, display end); from chunks[chunk_base
    [k]] on, the line's chunks (line, byte offset of its first event's field, line end, first
    event within the line, events): its events cut every `chunk_events`, what `fill_events`
    decodes. chunk_base leaves a line room for payload // (2 * chunk_events) + 1 chunks (an
    event record takes 2 bytes or more). Returns (status, error offset) of the first
    malformed field among the lines walked (the later lines are not walked).
    """
    cdef int64_t j, k, where = 0
    cdef int status = C_OK
    if (lines.shape[1] < 7 or line_names.shape[1] < 4 or chunks.shape[1] < 5
            or line_spans.shape[1] < 3 or chunk_events < 1):
        raise ValueError("scan_lines: arrays of the wrong width")
    for j in range(which.shape[0]):
        k = which[j]
        if not (0 <= k < line_spans.shape[0] and k < lines.shape[0] and k < line_names.shape[0]
                and k < chunk_base.shape[0]
                and 0 <= line_spans[k, 1] <= line_spans[k, 2] <= buf.shape[0]
                and 0 <= chunk_base[k] and chunk_base[k] + (line_spans[k, 2] - line_spans[k, 1])
                // (2 * chunk_events) + 1 <= chunks.shape[0]):
            raise ValueError(f"scan_lines: line {k} outside the tables or the bytes")
    with nogil:
        for j in range(which.shape[0]):
            status = _scan_line(_data(buf), which[j], line_spans, chunk_events, lines,
                                line_names, chunk_base, chunks, &where)
            if status != C_OK:
                break
    return status, where


cdef int _scan_line(const uint8_t* buf, int64_t k, const int64_t[:, ::1] line_spans,
                    int64_t chunk_events, int64_t[:, ::1] lines, int64_t[:, ::1] line_names,
                    const int64_t[::1] chunk_base, int64_t[:, ::1] chunks,
                    int64_t* where) noexcept nogil:
    cdef int64_t l_start = line_spans[k, 1], l_end = line_spans[k, 2]
    cdef int64_t pos = l_start, lf_start, e_end, s, e, lwt, lfield, signed
    cdef int64_t n_events = 0, chunk = chunk_base[k] - 1
    cdef int64_t line_id = 0, display_id = 0, timestamp_ns = 0, duration_ps = 0
    cdef int64_t name_s = l_start, name_e = l_start, disp_s = l_start, disp_e = l_start
    cdef uint64_t tag, value
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
            if len_field(buf, pos, l_end, &e_end) < 0:
                where[0] = lf_start
                return C_TRUNCATED
            if n_events % chunk_events == 0:  # a new chunk opens here
                chunk += 1
                chunks[chunk, 0] = k
                chunks[chunk, 1] = lf_start
                chunks[chunk, 2] = l_end
                chunks[chunk, 3] = n_events
                chunks[chunk, 4] = 0
            chunks[chunk, 4] += 1
            n_events += 1
            pos = e_end
        else:
            pos = skip_field(buf, pos, l_end, lwt)
            if pos < 0:
                where[0] = lf_start
                return C_TRUNCATED
    lines[k, 0] = line_spans[k, 0]
    lines[k, 1] = line_id
    lines[k, 2] = display_id
    lines[k, 3] = timestamp_ns
    lines[k, 4] = duration_ps
    lines[k, 5] = 0
    lines[k, 6] = n_events
    line_names[k, 0] = name_s
    line_names[k, 1] = name_e
    line_names[k, 2] = disp_s
    line_names[k, 3] = disp_e
    return C_OK


def fill_events(const uint8_t[::1] buf, const int64_t[:, ::1] chunks,
                const int64_t[::1] plane_of_line, const int64_t[:, ::1] plane_rows,
                const int32_t[::1] table, const int64_t[::1] ids, int64_t time_limit,
                int32_t[::1] meta_rows, int64_t[::1] raw_ids, int64_t[::1] ev_offset,
                int64_t[::1] ev_duration, record_t[::1] ev_record):
    """Decodes the events of `chunks` (rows of scan_layout's table) into the columns at their
    final places, without the GIL, so threads may fill disjoint chunks of one set of columns.

    Each event's metadata id becomes its metadata row through its plane's row of plane_rows,
    (dense base, dense length, sorted start, sorted end, first row): a dense plane looks the
    id up in table[dense base + id] (-1: none); another (dense length -1) searches its ids,
    ids[sorted start:sorted end], sorted, the k-th being row first row + k; a plane of dense
    length -2 maps every id to row 0 (its events are dropped after). With raw_ids non-empty
    the ids are written there instead, unmapped. Also writes offset_ps, duration_ps and the
    byte offset of each event's record. Returns (status, error offset, ids without a row,
    events whose times reach `time_limit`: a negative or too long duration, a far offset).
    """
    cdef int64_t counts[2]
    cdef int64_t where = 0
    cdef int64_t c, total = 0
    cdef int status
    cdef bint raw = raw_ids.shape[0] > 0
    if chunks.shape[0] and chunks.shape[1] < 5 or plane_rows.shape[1] < 5:
        raise ValueError("fill_events: tables of the wrong width")
    for c in range(chunks.shape[0]):
        if chunks[c, 3] < 0 or chunks[c, 4] < 0 or chunks[c, 0] < 0 or \
                chunks[c, 0] >= plane_of_line.shape[0]:
            raise ValueError("fill_events: a chunk outside the line table")
        total = chunks[c, 3] + chunks[c, 4]
        if total > ev_offset.shape[0] or total > ev_duration.shape[0] or \
                total > ev_record.shape[0] or total > (raw_ids.shape[0] if raw
                                                       else meta_rows.shape[0]):
            raise ValueError("fill_events: a chunk past the end of the columns")
        if not 0 <= plane_of_line[chunks[c, 0]] < plane_rows.shape[0]:
            raise ValueError("fill_events: a line of an unknown plane")
    for c in range(plane_rows.shape[0]):
        if plane_rows[c, 1] >= 0 and not (0 <= plane_rows[c, 0]
                                          and plane_rows[c, 0] + plane_rows[c, 1] <= table.shape[0]):
            raise ValueError("fill_events: a dense plane outside the table")
        if plane_rows[c, 1] == -1 and not (0 <= plane_rows[c, 2] <= plane_rows[c, 3]
                                           <= ids.shape[0]):
            raise ValueError("fill_events: a sorted plane outside the ids")
    counts[0] = counts[1] = 0
    with nogil:
        status = _fill_events(_data(buf), buf.shape[0], chunks, plane_of_line, plane_rows, table,
                              ids, time_limit, raw, meta_rows, raw_ids, ev_offset, ev_duration,
                              ev_record, counts, &where)
    return status, where, counts[0], counts[1]


cdef int _fill_events(const uint8_t* buf, int64_t end, const int64_t[:, ::1] chunks,
                      const int64_t[::1] plane_of_line, const int64_t[:, ::1] plane_rows,
                      const int32_t[::1] table, const int64_t[::1] ids, int64_t time_limit,
                      bint raw, int32_t[::1] meta_rows, int64_t[::1] raw_ids,
                      int64_t[::1] ev_offset, int64_t[::1] ev_duration, record_t[::1] ev_record,
                      int64_t* counts, int64_t* where) noexcept nogil:
    cdef int64_t c, k, pos, l_end, lf_start, e_start, e_end, ef_start, lwt, lfield, ewt, efield
    cdef int64_t meta, offset, duration, p, lo, hi, mid, dense_base, dense_len
    cdef int64_t missing = 0, far = 0
    cdef int32_t row
    cdef uint64_t tag, value
    for c in range(chunks.shape[0]):
        p = plane_of_line[chunks[c, 0]]
        dense_base = plane_rows[p, 0]
        dense_len = plane_rows[p, 1]
        pos = chunks[c, 1]
        l_end = chunks[c, 2] if chunks[c, 2] <= end else end
        k = chunks[c, 3]
        while k < chunks[c, 3] + chunks[c, 4]:
            if pos >= l_end:
                where[0] = pos
                return C_TRUNCATED
            lf_start = pos
            pos = read_varint(buf, pos, l_end, &tag)
            if pos < 0:
                where[0] = lf_start
                return C_VARINT
            lwt = <int64_t>(tag & 7)
            lfield = <int64_t>(tag >> 3)
            if lwt != 2 or lfield != 4:  # another field of the line, between its events
                pos = skip_field(buf, pos, l_end, lwt)
                if pos < 0:
                    where[0] = lf_start
                    return C_TRUNCATED
                continue
            e_start = len_field(buf, pos, l_end, &e_end)
            if e_start < 0:
                where[0] = lf_start
                return C_TRUNCATED
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
            if raw:
                raw_ids[k] = meta
            else:
                row = -1
                if dense_len == -2:
                    row = 0
                elif dense_len >= 0:
                    if 0 <= meta < dense_len:
                        row = table[dense_base + meta]
                else:
                    lo = plane_rows[p, 2]
                    hi = plane_rows[p, 3]
                    while lo < hi:
                        mid = (lo + hi) >> 1
                        if ids[mid] < meta:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo < plane_rows[p, 3] and ids[lo] == meta:
                        row = <int32_t>(plane_rows[p, 4] + lo - plane_rows[p, 2])
                if row < 0:
                    missing += 1
                meta_rows[k] = row
            if (duration < 0 or duration >= time_limit or offset <= -time_limit
                    or offset >= time_limit):
                far += 1
            ev_offset[k] = offset
            ev_duration[k] = duration
            ev_record[k] = <record_t>lf_start
            k += 1
            pos = e_end
    counts[0] = missing
    counts[1] = far
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
    bounds = np.ascontiguousarray(line_bounds, dtype=np.int64)
    unordered = line_depths(start, duration, bounds, depth,
                            np.arange(bounds.shape[0], dtype=np.int64))
    return order_lines(start, duration, bounds, depth, unordered)


def order_lines(start, duration, line_bounds, depth, unordered):
    """Sorts the lines line_depths left unordered and fills their depth: the permutation
    applied (empty when `unordered` is)."""
    perm = np.empty(0, dtype=np.int64)
    for k in unordered.tolist():
        lo, hi = int(line_bounds[k, 0]), int(line_bounds[k, 1])
        if perm.shape[0] == 0:
            perm = np.arange(start.shape[0])
        by_duration = np.argsort(-duration[lo:hi], kind="mergesort")
        local = by_duration[np.argsort(start[lo:hi][by_duration], kind="mergesort")]
        start[lo:hi] = start[lo:hi][local]
        duration[lo:hi] = duration[lo:hi][local]
        perm[lo:hi] = lo + local
    if unordered.shape[0] and line_depths(start, duration, line_bounds, depth,
                                          unordered).shape[0]:
        raise AssertionError("order_lines: a sorted line is not in order")
    return perm


def line_depths(int64_t[::1] start, int64_t[::1] duration, const int64_t[:, ::1] line_bounds,
                int16_t[::1] depth, const int64_t[::1] which):
    """Fills the depth of the lines `which` whose events are already in (start, longest first)
    order, without the GIL (threads may fill disjoint lines of one column); returns the lines
    that are not in order, untouched. Its scratch grows with the deepest nesting, not the
    events: a line of millions of events nests a few dozen deep."""
    cdef int64_t n = start.shape[0]
    cdef int64_t j, k, lo, hi, n_unordered = 0
    cdef int status = 0
    cdef _Stack stack
    if duration.shape[0] != n or depth.shape[0] != n:
        raise ValueError("order_and_depth: start, duration and depth differ in length")
    for j in range(which.shape[0]):
        k = which[j]
        if not (0 <= k < line_bounds.shape[0] and line_bounds.shape[1] >= 2
                and 0 <= line_bounds[k, 0] <= line_bounds[k, 1] <= n):
            raise ValueError(f"order_and_depth: line {k} is not a range of the {n} events")
    out = np.empty(which.shape[0], dtype=np.int64)
    cdef int64_t[::1] unordered = out
    stack.cap = 0
    stack.end = NULL
    stack.depth = NULL
    stack.last_end = NULL
    with nogil:
        for j in range(which.shape[0]):
            k = which[j]
            lo = line_bounds[k, 0]
            hi = line_bounds[k, 1]
            if not _is_ordered(start, duration, lo, hi):
                unordered[n_unordered] = k
                n_unordered += 1
                continue
            status = _fill_depth(start, duration, lo, hi, &stack, depth)
            if status != 0:
                break
        free(stack.end)
        free(stack.depth)
        free(stack.last_end)
    if status != 0:
        raise MemoryError("order_and_depth: no memory for the nesting stack")
    return out[:n_unordered]


cdef struct _Stack:
    int64_t cap
    int64_t* end
    int64_t* depth
    int64_t* last_end


cdef int _grow(_Stack* stack) noexcept nogil:
    """Doubles the stack's capacity; -1 when out of memory (the old buffers stay valid)."""
    cdef int64_t cap = stack.cap * 2 if stack.cap else 64
    cdef void* grown
    grown = realloc(stack.end, cap * sizeof(int64_t))
    if grown == NULL:
        return -1
    stack.end = <int64_t*>grown
    grown = realloc(stack.depth, cap * sizeof(int64_t))
    if grown == NULL:
        return -1
    stack.depth = <int64_t*>grown
    grown = realloc(stack.last_end, cap * sizeof(int64_t))
    if grown == NULL:
        return -1
    stack.last_end = <int64_t*>grown
    stack.cap = cap
    return 0


cdef bint _is_ordered(int64_t[::1] start, int64_t[::1] duration, int64_t lo,
                      int64_t hi) noexcept nogil:
    cdef int64_t i
    for i in range(lo + 1, hi):
        if start[i] < start[i - 1] or (start[i] == start[i - 1]
                                       and duration[i] > duration[i - 1]):
            return False
    return True


cdef int _fill_depth(int64_t[::1] start, int64_t[::1] duration, int64_t lo, int64_t hi,
                     _Stack* stack, int16_t[::1] depth) noexcept nogil:
    cdef int64_t i, end, d
    cdef int64_t top = 0
    cdef int64_t used = 0  # depths seen on this line
    for i in range(lo, hi):
        end = start[i] + duration[i]
        while top > 0 and stack.end[top - 1] < end:
            top -= 1
        d = stack.depth[top - 1] + 1 if top > 0 else 0
        while d < used and stack.last_end[d] > end:
            d += 1
        if d == used:
            used += 1
        if used > stack.cap or top >= stack.cap:
            if _grow(stack) != 0:
                return -1
        stack.last_end[d] = end
        depth[i] = <int16_t>(d if d < 32767 else 32767)
        if duration[i] > 0:  # an instant holds nothing
            stack.end[top] = end
            stack.depth[top] = d
            top += 1
    return 0


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


ctypedef fused range_t:
    int16_t
    int64_t


def range_max(const range_t[::1] values, const int64_t[::1] second, const int64_t[::1] first,
              const int64_t[::1] end):
    """max(values[i] + second[i]) over each non-empty range [first[k], end[k]) (second empty:
    of values alone), int64: a track's last end or deepest nesting with no column-sized sum or
    copy made for it."""
    cdef int64_t n = values.shape[0]
    cdef int64_t k, i
    cdef int64_t best, v
    cdef bint add = second.shape[0] > 0
    if first.shape[0] != end.shape[0] or (add and second.shape[0] != n):
        raise ValueError("range_max: columns of different lengths")
    for k in range(first.shape[0]):
        if not 0 <= first[k] < end[k] <= n:
            raise ValueError(f"range_max: range {k} ({first[k]}..{end[k]}) is empty or not "
                             f"within the {n} values")
    out = np.empty(first.shape[0], dtype=np.int64)
    cdef int64_t[::1] result = out
    with nogil:
        for k in range(first.shape[0]):
            best = values[first[k]] + (second[first[k]] if add else 0)
            for i in range(first[k] + 1, end[k]):
                v = values[i] + (second[i] if add else 0)
                if v > best:
                    best = v
            result[k] = best
    return out


def count_rows(const int32_t[::1] meta, int64_t[::1] counts):
    """counts[m] += how many of the events name metadata row m: np.bincount without its int64
    copy of the column, and without the GIL, so lines count on worker threads. A row outside
    counts is an error."""
    cdef int64_t n = meta.shape[0], rows = counts.shape[0], i, bad = -1
    cdef int32_t r
    with nogil:
        for i in range(n):
            r = meta[i]
            if r < 0 or r >= rows:
                bad = i
                break
            counts[r] += 1
    if bad >= 0:
        raise ValueError(f"count_rows: event {bad} names metadata row {meta[bad]}, outside the "
                         f"{rows} rows")


def metadata_ids(const uint8_t[::1] buf, const int64_t[:, ::1] spans):
    """The keys of the event_metadata map entries (XPlane field 4) among a plane's header
    fields (scan_layout's header_spans rows of one plane), in file order, repeats kept; None
    when a field is malformed (upb's parse then says why). The ids alone give each event its
    metadata row, so events can be decoded while the headers are still being parsed."""
    cdef int64_t n = 0, j, pos, end, field_start, entry_end, wt, field
    cdef uint64_t tag, key
    cdef const uint8_t* data = _data(buf)
    for j in range(spans.shape[0]):
        if spans.shape[1] < 3 or not 0 <= spans[j, 1] <= spans[j, 2] <= buf.shape[0]:
            raise ValueError("metadata_ids: a span outside the bytes")
    out = np.empty(spans.shape[0], dtype=np.int64)
    cdef int64_t[::1] keys = out
    for j in range(spans.shape[0]):
        pos = spans[j, 1]
        end = spans[j, 2]
        pos = read_varint(data, pos, end, &tag)
        if pos < 0:
            return None
        if (tag >> 3) != 4 or (tag & 7) != 2:
            continue
        pos = len_field(data, pos, end, &entry_end)
        if pos < 0:
            return None
        key = 0
        while pos < entry_end:
            field_start = pos
            pos = read_varint(data, pos, entry_end, &tag)
            if pos < 0:
                return None
            wt = <int64_t>(tag & 7)
            field = <int64_t>(tag >> 3)
            if field == 1 and wt == 0:
                pos = read_varint(data, pos, entry_end, &key)
            else:
                pos = skip_field(data, pos, entry_end, wt)
            if pos < 0:
                return None
        keys[n] = <int64_t>key
        n += 1
    return out[:n]
