"""Compiled scanners over the raw XSpace wire format.

A Python loop over 5e6 parsed events costs seconds; these numba kernels walk the bytes once and
fill numpy columns directly, so no message tree of events ever exists. Only the event-level
structure is scanned here; the small plane headers (metadata maps, plane stats) are handed to
upb by the caller. Every kernel validates lengths and reports malformed input by returning a
negative error code (with the byte offset) instead of reading out of bounds.
"""

from __future__ import annotations

import numba
import numpy as np

# Error codes returned by the scanners (with the offset where they occurred).
OK = 0
ERR_TRUNCATED = -1  # a field runs past the end of its message
ERR_WIRETYPE = -2  # a wire type that protobuf does not define
ERR_VARINT = -3  # a varint longer than 10 bytes

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _varint(buf, pos, end):
    """Reads a varint at pos; returns (value as uint64, next pos) or (0, -1) on malformed input."""
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
            return np.uint64(0), -1
    return np.uint64(0), -1


@_jit
def _skip(buf, pos, end, wire_type):
    """Skips one field value of wire_type; returns the next pos or -1."""
    if wire_type == 0:
        _, pos = _varint(buf, pos, end)
        return pos
    if wire_type == 1:
        return pos + 8 if pos + 8 <= end else -1
    if wire_type == 5:
        return pos + 4 if pos + 4 <= end else -1
    if wire_type == 2:
        length, pos = _varint(buf, pos, end)
        if pos < 0 or length > np.uint64(end - pos):
            return -1
        return pos + np.int64(length)
    return -1


@_jit
def _len_field(buf, pos, end):
    """Reads a length prefix; returns (payload start, payload end) or (-1, -1)."""
    length, pos = _varint(buf, pos, end)
    if pos < 0 or length > np.uint64(end - pos):
        return -1, -1
    return pos, pos + np.int64(length)


@_jit
def scan_xspace(buf, fill, planes, header_spans, lines, line_names, ev_meta, ev_offset,
                ev_duration, ev_record):
    """Walks an XSpace; counts (fill=False) or fills (fill=True) the output arrays.

    planes[k] = (start, end) of plane k's bytes; header_spans[j] = (plane, start, end) of every
    plane field that is not a line, and of every top-level field that is not a plane (plane -1);
    lines[k] = (plane, id, display_id, timestamp_ns, duration_ps, first event, end event);
    line_names[k] = (name start, name end, display start, display end);
    events: metadata id, offset_ps, duration_ps, and the byte offset of the event's record.
    Returns (status, error offset, n_planes, n_spans, n_lines, n_events).
    """
    n_planes = 0
    n_spans = 0
    n_lines = 0
    n_events = 0
    end = buf.shape[0]
    pos = 0
    while pos < end:
        field_start = pos
        tag, pos = _varint(buf, pos, end)
        if pos < 0:
            return ERR_VARINT, field_start, 0, 0, 0, 0
        wire_type = np.int64(tag & np.uint64(7))
        field = np.int64(tag >> np.uint64(3))
        if field != 1 or wire_type != 2:
            pos = _skip(buf, pos, end, wire_type)
            if pos < 0:
                return ERR_TRUNCATED, field_start, 0, 0, 0, 0
            if fill:
                header_spans[n_spans, 0] = -1
                header_spans[n_spans, 1] = field_start
                header_spans[n_spans, 2] = pos
            n_spans += 1
            continue
        p_start, p_end = _len_field(buf, pos, end)
        if p_start < 0:
            return ERR_TRUNCATED, field_start, 0, 0, 0, 0
        if fill:
            planes[n_planes, 0] = p_start
            planes[n_planes, 1] = p_end
        pos = p_start
        while pos < p_end:
            pf_start = pos
            ptag, pos = _varint(buf, pos, p_end)
            if pos < 0:
                return ERR_VARINT, pf_start, 0, 0, 0, 0
            pwt = np.int64(ptag & np.uint64(7))
            pfield = np.int64(ptag >> np.uint64(3))
            if pfield != 3 or pwt != 2:
                pos = _skip(buf, pos, p_end, pwt)
                if pos < 0:
                    return ERR_TRUNCATED, pf_start, 0, 0, 0, 0
                if fill:
                    header_spans[n_spans, 0] = n_planes
                    header_spans[n_spans, 1] = pf_start
                    header_spans[n_spans, 2] = pos
                n_spans += 1
                continue
            l_start, l_end = _len_field(buf, pos, p_end)
            if l_start < 0:
                return ERR_TRUNCATED, pf_start, 0, 0, 0, 0
            first_event = n_events
            line_id = np.int64(0)
            display_id = np.int64(0)
            timestamp_ns = np.int64(0)
            duration_ps = np.int64(0)
            name_s = name_e = disp_s = disp_e = l_start
            pos = l_start
            while pos < l_end:
                lf_start = pos
                ltag, pos = _varint(buf, pos, l_end)
                if pos < 0:
                    return ERR_VARINT, lf_start, 0, 0, 0, 0
                lwt = np.int64(ltag & np.uint64(7))
                lfield = np.int64(ltag >> np.uint64(3))
                if lwt == 0 and (lfield == 1 or lfield == 3 or lfield == 9 or lfield == 10):
                    value, pos = _varint(buf, pos, l_end)
                    if pos < 0:
                        return ERR_VARINT, lf_start, 0, 0, 0, 0
                    signed = np.int64(value)
                    if lfield == 1:
                        line_id = signed
                    elif lfield == 3:
                        timestamp_ns = signed
                    elif lfield == 9:
                        duration_ps = signed
                    else:
                        display_id = signed
                elif lwt == 2 and (lfield == 2 or lfield == 11):
                    s, e = _len_field(buf, pos, l_end)
                    if s < 0:
                        return ERR_TRUNCATED, lf_start, 0, 0, 0, 0
                    if lfield == 2:
                        name_s, name_e = s, e
                    else:
                        disp_s, disp_e = s, e
                    pos = e
                elif lwt == 2 and lfield == 4:
                    e_start, e_end = _len_field(buf, pos, l_end)
                    if e_start < 0:
                        return ERR_TRUNCATED, lf_start, 0, 0, 0, 0
                    if not fill:  # counting: the record's length is all we need
                        n_events += 1
                        pos = e_end
                        continue
                    meta = np.int64(0)
                    offset = np.int64(0)
                    duration = np.int64(0)
                    pos = e_start
                    while pos < e_end:
                        ef_start = pos
                        etag, pos = _varint(buf, pos, e_end)
                        if pos < 0:
                            return ERR_VARINT, ef_start, 0, 0, 0, 0
                        ewt = np.int64(etag & np.uint64(7))
                        efield = np.int64(etag >> np.uint64(3))
                        if ewt == 0 and efield <= 3:
                            value, pos = _varint(buf, pos, e_end)
                            if pos < 0:
                                return ERR_VARINT, ef_start, 0, 0, 0, 0
                            if efield == 1:
                                meta = np.int64(value)
                            elif efield == 2:
                                offset = np.int64(value)
                            elif efield == 3:
                                duration = np.int64(value)
                        else:
                            pos = _skip(buf, pos, e_end, ewt)
                            if pos < 0:
                                return ERR_TRUNCATED, ef_start, 0, 0, 0, 0
                    ev_meta[n_events] = meta
                    ev_offset[n_events] = offset
                    ev_duration[n_events] = duration
                    ev_record[n_events] = lf_start
                    n_events += 1
                    pos = e_end
                else:
                    pos = _skip(buf, pos, l_end, lwt)
                    if pos < 0:
                        return ERR_TRUNCATED, lf_start, 0, 0, 0, 0
            if fill:
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
    return OK, 0, n_planes, n_spans, n_lines, n_events


@_jit
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
    n = start.shape[0]
    perm = np.empty(0, dtype=np.int64)
    stack_end = np.empty(n, dtype=np.int64)
    stack_depth = np.empty(n, dtype=np.int64)
    last_end = np.empty(n + 1, dtype=np.int64)  # per depth: the end of its latest event
    for k in range(line_bounds.shape[0]):
        lo = line_bounds[k, 0]
        hi = line_bounds[k, 1]
        ordered = True
        for i in range(lo + 1, hi):
            if start[i] < start[i - 1] or (start[i] == start[i - 1]
                                           and duration[i] > duration[i - 1]):
                ordered = False
                break
        if not ordered:
            if perm.shape[0] == 0:
                perm = np.arange(n)
            by_duration = np.argsort(-duration[lo:hi], kind="mergesort")
            by_start = np.argsort(start[lo:hi][by_duration], kind="mergesort")
            local = by_duration[by_start]
            start[lo:hi] = start[lo:hi][local]
            duration[lo:hi] = duration[lo:hi][local]
            perm[lo:hi] = lo + local
        top = 0
        used = 0  # depths seen on this line
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
            depth[i] = min(d, 32767)
            if duration[i] > 0:  # an instant holds nothing
                stack_end[top] = end
                stack_depth[top] = d
                top += 1
    return perm


@_jit
def scan_stat(buf, records, targets, any_numeric, kind, int_value, float_value, span):
    """Finds, for each event record, the stat whose metadata id equals targets[k].

    With any_numeric, takes instead the first stat holding a number (a counter's value).
    kind[k]: 0 absent, 2 double, 3 uint64, 4 int64, 5 str, 6 bytes, 7 ref (the XStat field
    number); the value lands in int_value, float_value, or span (start, end) for str/bytes.
    Returns a status code.
    """
    end = buf.shape[0]
    for k in range(records.shape[0]):
        kind[k] = 0
        pos = records[k]
        _, pos = _varint(buf, pos, end)  # the event's tag
        if pos < 0:
            return ERR_VARINT
        e_start, e_end = _len_field(buf, pos, end)
        if e_start < 0:
            return ERR_TRUNCATED
        pos = e_start
        while pos < e_end:
            tag, pos = _varint(buf, pos, e_end)
            if pos < 0:
                return ERR_VARINT
            wt = np.int64(tag & np.uint64(7))
            field = np.int64(tag >> np.uint64(3))
            if field != 4 or wt != 2:
                pos = _skip(buf, pos, e_end, wt)
                if pos < 0:
                    return ERR_TRUNCATED
                continue
            s_start, s_end = _len_field(buf, pos, e_end)
            if s_start < 0:
                return ERR_TRUNCATED
            status = _read_stat(buf, s_start, s_end, targets[k], any_numeric, k, kind,
                                int_value, float_value, span)
            if status < 0:
                return status
            pos = s_end
    return OK


@_jit
def _read_stat(buf, pos, end, target, any_numeric, k, kind, int_value, float_value, span):
    meta = np.int64(0)
    value_kind = 0
    ivalue = np.int64(0)
    fvalue = 0.0
    s = e = 0
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        if pos < 0:
            return ERR_VARINT
        wt = np.int64(tag & np.uint64(7))
        field = np.int64(tag >> np.uint64(3))
        if wt == 0:
            value, pos = _varint(buf, pos, end)
            if pos < 0:
                return ERR_VARINT
            if field == 1:
                meta = np.int64(value)
            else:
                value_kind = field
                ivalue = np.int64(value)
        elif wt == 1:
            if pos + 8 > end:
                return ERR_TRUNCATED
            if field == 2:
                value_kind = 2
                fvalue = buf[pos:pos + 8].copy().view(np.float64)[0]
            pos += 8
        elif wt == 2:
            s, e = _len_field(buf, pos, end)
            if s < 0:
                return ERR_TRUNCATED
            value_kind = field
            pos = e
        else:
            pos = _skip(buf, pos, end, wt)
            if pos < 0:
                return ERR_TRUNCATED
    numeric = value_kind == 2 or value_kind == 3 or value_kind == 4
    wanted = (kind[k] == 0 and numeric) if any_numeric else meta == target
    if wanted and value_kind != 0:
        kind[k] = value_kind
        int_value[k] = ivalue
        float_value[k] = fvalue
        span[k, 0] = s
        span[k, 1] = e
    return OK
