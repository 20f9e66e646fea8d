# cython: language_level=3, wraparound=False, initializedcheck=False
"""Stack walks over time-sorted intervals: binding flow points to the slices that hold them
(`profile/chrome.py`) and self times of nested input ops (`analysis/input_pipeline.py`).
Array accesses stay bounds-checked (indices come from the caller). Bool arrays are read as
bytes.
"""

cimport cython
from libc.stdint cimport int8_t, int64_t

import numpy as np


def bind_flow_points(const int64_t[:] start, const int64_t[:] end, const int64_t[:] firsts,
                     const int64_t[:] ends, const int64_t[:] p_track, const int64_t[:] p_at,
                     const unsigned char[:] p_enclosing, const int64_t[:] by_time,
                     int64_t[:] out):
    """out[p] = the slice flow point p binds to, or -1 (see `_Builder._flow_edges`).

    Points are visited by (track, time). Slices that started by a point's time are kept on a
    stack in start order; one that ended before the point can hold no later point either, so it
    is popped for good when it reaches the top, and the top is then the latest-starting slice
    that contains the point.
    """
    cdef int64_t[:] stack = np.empty(start.shape[0], np.int64)
    cdef int64_t k = 0, m = by_time.shape[0], track, lo, hi, top, nxt, p, at, event, a, b, mid
    with nogil:
        while k < m:
            track = p_track[by_time[k]]
            lo = firsts[track]
            hi = ends[track]
            top = 0
            nxt = lo
            while k < m and p_track[by_time[k]] == track:
                p = by_time[k]
                at = p_at[p]
                while nxt < hi and start[nxt] <= at:
                    stack[top] = nxt
                    top += 1
                    nxt += 1
                while top > 0 and end[stack[top - 1]] < at:
                    top -= 1
                event = -1
                if p_enclosing[p] and top > 0:
                    event = stack[top - 1]
                if event < 0:
                    a = lo  # the first slice starting at or after the point
                    b = hi
                    while a < b:
                        mid = (a + b) >> 1
                        if start[mid] < at:
                            a = mid + 1
                        else:
                            b = mid
                    if a < hi:
                        event = a
                out[p] = event
                k += 1


def self_times(const int64_t[:] track, const int64_t[:] start, const int64_t[:] end,
               const int64_t[:] duration):
    """Duration minus the overlap of input ops nested directly inside (same track, in order)."""
    cdef int64_t n = start.shape[0], i, top = 0, parent
    if track.shape[0] < n or end.shape[0] < n or duration.shape[0] < n:
        raise ValueError("self_times: track, start, end and duration differ in length")
    result = np.array(duration[:n], np.int64)
    cdef int64_t[:] out = result
    cdef int64_t[:] stack = np.empty(n, np.int64)
    with nogil:
        for i in range(n):
            if i > 0 and track[i] != track[i - 1]:
                top = 0
            while top > 0 and end[stack[top - 1]] <= start[i]:
                top -= 1
            if top > 0:
                parent = stack[top - 1]
                out[parent] -= min(end[i], end[parent]) - start[i]
            stack[top] = i
            top += 1
    return np.maximum(result, 0)


def cumulative_unions(list classes, start_ps, duration_ps):
    """parts[k] = the union of the [start, start + duration) intervals of the events in
    classes[0..k], as (sorted disjoint starts, ends, length before each); touching intervals
    merge. One sort of all the events, then two sweeps in order per class (count, fill)."""
    cdef Py_ssize_t n_classes = len(classes), level
    if n_classes > 127:
        raise ValueError("cumulative_unions: at most 127 classes")
    cdef const int64_t[:] start_all = start_ps
    cdef const int64_t[:] duration_all = duration_ps
    cdef int64_t n = sum(len(c) for c in classes), k = 0, j, i, m
    cls_a = np.empty(n, np.int8)
    start_a = np.empty(n, np.int64)
    end_a = np.empty(n, np.int64)
    cdef int8_t[::1] cls = cls_a
    cdef int64_t[::1] s = start_a, e = end_a
    cdef const int64_t[::1] ev
    for level in range(n_classes):
        ev = np.ascontiguousarray(classes[level], np.int64)
        with nogil:
            for j in range(ev.shape[0]):
                i = ev[j]
                s[k] = start_all[i]
                e[k] = start_all[i] + duration_all[i]
                cls[k] = <int8_t>level
                k += 1
    order = np.argsort(start_a, kind="stable")  # then every sweep reads memory in order
    s = start_a = start_a[order]
    e = end_a = end_a[order]
    cls = cls_a = cls_a[order]
    del order
    cdef int64_t[::1] a
    cdef int64_t[::1] b
    cdef int64_t[::1] before
    parts = []
    for level in range(n_classes):
        with nogil:
            m = _sweep(s, e, cls, level, None, None, None)
        a_out = np.empty(m, np.int64)
        b_out = np.empty(m, np.int64)
        before_out = np.empty(m, np.int64)
        a = a_out
        b = b_out
        before = before_out
        with nogil:
            _sweep(s, e, cls, level, a, b, before)
        parts.append((a_out, b_out, before_out))
    return parts


@cython.boundscheck(False)
cdef int64_t _sweep(const int64_t[::1] s, const int64_t[::1] e, const int8_t[::1] cls,
                    int64_t level, int64_t[::1] a, int64_t[::1] b,
                    int64_t[::1] before) noexcept nogil:
    """The union of the intervals of class <= level (s sorted): its size, and (unless a is
    None) its intervals written to a, b, before. Unchecked: e and cls have s's length (made by
    the caller), and a, b, before hold the size the counting sweep returned."""
    cdef int64_t m = 0, i, group_a = 0, group_b = 0, reach = 0, total = 0
    cdef bint open_group = False
    cdef bint fill = a is not None
    for i in range(s.shape[0]):
        if cls[i] > level:
            continue
        if not open_group:
            group_a = s[i]
            group_b = e[i]
            reach = e[i]
            open_group = True
            continue
        if s[i] > reach:  # a gap: the group so far is one interval of the union
            if fill:
                a[m] = group_a
                b[m] = group_b
                before[m] = total
            total += group_b - group_a
            m += 1
            group_a = s[i]
            group_b = e[i]
        elif e[i] > group_b:
            group_b = e[i]
        if e[i] > reach:
            reach = e[i]
    if open_group:
        if fill:
            a[m] = group_a
            b[m] = group_b
            before[m] = total
        m += 1
    return m


def union_intervals(start, end):
    """The union of [start, end) intervals: sorted disjoint starts, ends, and the length before
    each (intervals that touch merge)."""
    cdef const int64_t[:] s = np.asarray(start, np.int64)
    cdef const int64_t[:] e = np.asarray(end, np.int64)
    cdef int64_t n = s.shape[0], m = 0, k, i, group_a, group_b, reach, total = 0
    if e.shape[0] != n:
        raise ValueError("union_intervals: start and end differ in length")
    if n == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    order = np.argsort(start, kind="stable")
    cdef const int64_t[:] o = order
    a_out = np.empty(n, np.int64)
    b_out = np.empty(n, np.int64)
    before_out = np.empty(n, np.int64)
    cdef int64_t[:] a = a_out, b = b_out, before = before_out
    with nogil:
        i = o[0]
        group_a = s[i]
        group_b = e[i]
        reach = e[i]
        for k in range(1, n):
            i = o[k]
            if s[i] > reach:  # a gap: the group so far is one interval of the union
                a[m] = group_a
                b[m] = group_b
                before[m] = total
                total += group_b - group_a
                m += 1
                group_a = s[i]
                group_b = e[i]
            elif e[i] > group_b:
                group_b = e[i]
            if e[i] > reach:
                reach = e[i]
        a[m] = group_a
        b[m] = group_b
        before[m] = total
        m += 1
    return a_out[:m].copy(), b_out[:m].copy(), before_out[:m].copy()
