# cython: language_level=3, wraparound=False, initializedcheck=False
"""Stack walks over time-sorted intervals: binding flow points to the slices that hold them
(`profile/chrome.py`) and self times of nested input ops (`analysis/input_pipeline.py`).
Array accesses stay bounds-checked (indices come from the caller). Bool arrays are read as
bytes.
"""

from libc.stdint cimport int64_t

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
