# cython: language_level=3, wraparound=False, initializedcheck=False
"""Sweeps over time-sorted intervals: binding flow points to the slices that hold them
(`profile/chrome.py`), self times of nested input ops, and the unions of interval classes
that split step time (`analysis/input_pipeline.py`, `analysis/pod_viewer.py`).
Array accesses stay bounds-checked (indices come from the caller). Bool arrays are read as
bytes.
"""

cimport cython
from libc.math cimport log1p
from libc.stdint cimport int8_t, int32_t, int64_t

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


def covered_before(list runs, int n_levels, times):
    """covered[k, i] = how much of the time before times[i] the union of the [start, start +
    duration) intervals of the events of level <= k covers.

    Each run is (start, duration, level) arrays of one length, sorted by start: a track's events
    (views of the profile's columns) or a sorted subset. The runs are merged as they are read, in
    one sweep that keeps an open interval per level and answers each time once every event
    starting before it is in; nothing of the runs' size is copied, sorted or made. Levels
    outside 0..n_levels-1 count in none.
    """
    if not 0 < n_levels <= 64:
        raise ValueError(f"covered_before: n_levels must be 1..64, got {n_levels}")
    kept = []
    for start, duration, level in runs:
        start = np.ascontiguousarray(start, np.int64)
        duration = np.ascontiguousarray(duration, np.int64)
        level = np.ascontiguousarray(level, np.int8)
        if not start.shape[0] == duration.shape[0] == level.shape[0]:
            raise ValueError("covered_before: a run's start, duration and level differ in length")
        if start.shape[0]:
            kept.append((start, duration, level))
    times = np.asarray(times, np.int64)
    order = np.argsort(times, kind="stable")
    sorted_times = np.ascontiguousarray(times[order])
    answers = np.zeros((len(order), n_levels), np.int64)
    cdef _Runs merged = _Runs(kept)
    cdef const int64_t[::1] t = sorted_times
    cdef int64_t[:, ::1] out = answers
    if _sweep_runs(merged, len(kept), n_levels, t, out) < 0:
        raise ValueError("covered_before: a run is not sorted by start")
    covered = np.empty((n_levels, len(order)), np.int64)
    covered[:, order] = answers.T
    return covered


cdef class _Runs:
    """The runs' columns as C pointers (the arrays are kept alive here)."""
    cdef list arrays
    cdef size_t[::1] starts, durations, levels, lengths

    def __init__(self, list runs):
        self.arrays = runs
        k = len(runs)
        starts = np.empty(max(k, 1), np.uintp)
        durations = np.empty(max(k, 1), np.uintp)
        levels = np.empty(max(k, 1), np.uintp)
        lengths = np.empty(max(k, 1), np.uintp)
        for r, (start, duration, level) in enumerate(runs):
            starts[r] = start.ctypes.data
            durations[r] = duration.ctypes.data
            levels[r] = level.ctypes.data
            lengths[r] = start.shape[0]
        self.starts, self.durations, self.levels, self.lengths = starts, durations, levels, lengths


cdef int _sweep_runs(_Runs runs, Py_ssize_t k, int n_levels, const int64_t[::1] t,
                     int64_t[:, ::1] out) except -2:
    """The k-way merge of the runs by start, answering the sorted times t into out (a row per
    time, a column per level). -1: a run is not sorted."""
    cdef const int64_t** S = <const int64_t**>&runs.starts[0]
    cdef const int64_t** D = <const int64_t**>&runs.durations[0]
    cdef const int8_t** L = <const int8_t**>&runs.levels[0]
    cdef size_t* N = &runs.lengths[0]
    cdef size_t[::1] pos_a = np.zeros(max(k, 1), np.uintp)
    cdef Py_ssize_t[::1] heap_a = np.arange(max(k, 1), dtype=np.intp)
    cdef int64_t[::1] state = np.zeros(4 * n_levels, np.int64)  # open start, end, total, open
    cdef size_t* pos = &pos_a[0]
    cdef Py_ssize_t* heap = &heap_a[0]
    cdef int64_t* ga = &state[0]
    cdef int64_t* gb = &state[n_levels]
    cdef int64_t* total = &state[2 * n_levels]
    cdef int64_t* is_open = &state[3 * n_levels]
    cdef Py_ssize_t size = k, i, r, q = 0, n_times = t.shape[0]
    cdef int64_t s, e
    cdef int c, level
    with nogil:
        for i in range(k // 2 - 1, -1, -1):
            _sift_down(heap, size, i, S, pos)
        while size > 0:
            r = heap[0]
            s = S[r][pos[r]]
            while q < n_times and t[q] <= s:  # every event starting before t[q] is in
                _answer(n_levels, t[q], ga, gb, total, is_open, &out[q, 0])
                q += 1
            e = s + D[r][pos[r]]
            c = L[r][pos[r]]
            pos[r] += 1
            if pos[r] < N[r]:
                if S[r][pos[r]] < s:
                    return -1
            else:
                size -= 1
                heap[0] = heap[size]
            if size > 0:
                _sift_down(heap, size, 0, S, pos)
            if c < 0:
                continue
            for level in range(c, n_levels):
                if not is_open[level]:
                    ga[level] = s
                    gb[level] = e
                    is_open[level] = 1
                elif s > gb[level]:  # a gap: the open interval is closed
                    total[level] += gb[level] - ga[level]
                    ga[level] = s
                    gb[level] = e
                elif e > gb[level]:
                    gb[level] = e
        while q < n_times:
            _answer(n_levels, t[q], ga, gb, total, is_open, &out[q, 0])
            q += 1
    return 0


cdef inline void _answer(int n_levels, int64_t t, const int64_t* ga, const int64_t* gb,
                         const int64_t* total, const int64_t* is_open,
                         int64_t* row) noexcept nogil:
    """Each level's covered time before t: its closed intervals and the open one up to t."""
    cdef int level
    cdef int64_t inside
    for level in range(n_levels):
        row[level] = total[level]
        if is_open[level]:
            inside = min(t, gb[level]) - ga[level]
            if inside > 0:
                row[level] += inside


cdef inline void _sift_down(Py_ssize_t* heap, Py_ssize_t size, Py_ssize_t i,
                            const int64_t** S, size_t* pos) noexcept nogil:
    """Restore the min-heap of run ids (keyed by each run's next start) below i."""
    cdef Py_ssize_t child, top = heap[i]
    cdef int64_t key = S[top][pos[top]]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and S[heap[child + 1]][pos[heap[child + 1]]] < \
                S[heap[child]][pos[heap[child]]]:
            child += 1
        if S[heap[child]][pos[heap[child]]] >= key:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = top


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


def tally_op_line(const int64_t[:] start, const int64_t[:] duration,
                  const int64_t[:] trace_duration, const int32_t[:] meta,
                  const int32_t[:] op_of_meta, const int64_t[:] order, double[:] op_time,
                  int64_t[:] op_count, double[:] log_sum, double[:] log_sq, double[:] span_time,
                  unsigned char[:] parents):
    """One `XLA Ops` line added to the op tallies (indexed by op + 1; 0: not an op): time,
    count, the sums of ln(1 + ps) and its square, and the events' own trace spans, in event
    order (the order np.bincount sums in, so the floats are the same); then, visiting the
    events by `order` (by start, longest first; empty: they are in that order), XProf's
    nesting: an event whose end is within the outermost one before it is inside it, and that
    one's op is a parent. Returns the line's busy time: the durations of events inside none.
    """
    cdef Py_ssize_t n = start.shape[0], i, k, holder = 0
    cdef int64_t o, end, reach = 0, busy = 0
    cdef double d, lg
    cdef bint ordered = order.shape[0] == 0
    with nogil:
        for i in range(n):
            o = op_of_meta[meta[i]] + 1
            d = <double>duration[i]
            op_time[o] += d
            op_count[o] += 1
            lg = log1p(d)
            log_sum[o] += lg
            log_sq[o] += lg * lg
            span_time[o] += <double>trace_duration[i]
        for k in range(n):
            i = k if ordered else order[k]
            end = start[i] + duration[i]
            if k > 0 and reach >= end:
                parents[op_of_meta[meta[holder]] + 1] = 1
            else:
                busy += duration[i]
            if k == 0 or end >= reach:
                reach = end
                holder = i
    return busy
