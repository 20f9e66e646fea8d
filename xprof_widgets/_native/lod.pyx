# cython: language_level=3, wraparound=False, initializedcheck=False
"""Kernels of the slice level-of-detail structure; `trace/index.py` explains the design.

Positions index `perm`, the events of every (track, depth) segment laid out by start time. A
"cut" at position i separates event i from event i + 1 of the same segment; its value
v = max(dur[i], dur[i + 1], gap between them) is the smallest pixel size at which the two stay
apart. A level keeps the cuts with v >= 4**L ps; the items between kept cuts are runs whose
longest event is stored with the cut.

Indices here come from the index's own arrays, not from checks of this code, so array accesses
stay bounds-checked (an inconsistent index raises IndexError instead of reading stray memory).
"""

from libc.math cimport log2
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t

import numpy as np

N_LEVELS = 32
"""Level L >= 1 merges at threshold 4**L ps; level 0 is the raw events."""
SEGMENT_END = 127
"""The level of the cut after a segment's last event: it survives every level."""
RMQ_BLOCK = 64
MIN_ITEMS = 32
"""A segment stores no coarser level once its items number this few."""

cdef enum:
    C_LEVELS = 32
    C_SEGMENT_END = 127
    C_BLOCK = 64
    C_MIN_ITEMS = 32
    C_MAX_RMQ = 8  # block levels a range-maximum pyramid may have

ctypedef fused pos_t:
    int32_t
    int64_t


cdef inline int _level_of(int64_t v) noexcept nogil:
    cdef int level
    if v < 4:
        return 0
    level = (<int>log2(<double>v)) >> 1
    while level < C_LEVELS - 1 and (<int64_t>1 << (2 * level + 2)) <= v:
        level += 1
    while level > 0 and (<int64_t>1 << (2 * level)) > v:
        level -= 1
    return level


def level_of(int64_t v):
    """The coarsest level L with 4**L <= v (0 when v < 4)."""
    return _level_of(v)


def count_segments(const int64_t[:] track_first, const int64_t[:] track_end,
                   const int64_t[:] track_segment, const int16_t[:] depth,
                   const int64_t[:] which, int64_t[:] seg_size):
    """Adds to seg_size[s + 1] the events of segment s, over the tracks in `which`: tracks own
    disjoint segments, so threads may count disjoint track sets into one array."""
    cdef int64_t k, t, i, base
    with nogil:
        for k in range(which.shape[0]):
            t = which[k]
            base = track_segment[t]
            for i in range(track_first[t], track_end[t]):
                seg_size[base + depth[i] + 1] += 1


def place_segments(const int64_t[:] track_first, const int64_t[:] track_end,
                   const int64_t[:] track_segment, const int16_t[:] depth,
                   const int64_t[:] which, int64_t[:] fill, pos_t[:] perm):
    """Lays out the events of the tracks in `which` by segment (stable, so in start order):
    fill[s] is the next free position of segment s (its first, from count_segments' sums)."""
    cdef int64_t k, t, i, s, base
    with nogil:
        for k in range(which.shape[0]):
            t = which[k]
            base = track_segment[t]
            for i in range(track_first[t], track_end[t]):
                s = base + depth[i]
                perm[fill[s]] = <pos_t>i
                fill[s] += 1


def cut_levels(const pos_t[:] perm, const int64_t[:] seg_start, const int64_t[:] start,
               const int64_t[:] dur, const int64_t[:] which, int8_t[:] cut_level,
               int64_t[:, :] hist):
    """For the segments in `which`: cut_level[i], the level of the cut after position i, and
    hist[s, L], the segment's cuts of level L."""
    cdef int64_t k, s, a, b, i, e0, e1, v
    cdef int level
    with nogil:
        for k in range(which.shape[0]):
            s = which[k]
            a = seg_start[s]
            b = seg_start[s + 1]
            for i in range(a, b - 1):
                e0 = perm[i]
                e1 = perm[i + 1]
                v = max(dur[e0], dur[e1], start[e1] - start[e0] - dur[e0])
                level = _level_of(v)
                cut_level[i] = level
                hist[s, level] += 1
            if b > a:
                cut_level[b - 1] = C_SEGMENT_END


def plan_levels(const int64_t[:] seg_size, const int64_t[:, :] items, int32_t[:, :] seg_list,
                int64_t[:] list_seg, int64_t[:] list_level, int64_t[:] list_off):
    """Chooses the levels each segment stores: one whose items number at most half of the
    last stored one's, while that one had more than MIN_ITEMS.

    items[s, L] is the item count of segment s at level L. Fills seg_list[s, L] with the list
    to read at level L (-1: the raw events) and returns the number of lists; with list_seg None
    only counts them and the total items.
    """
    cdef bint store = list_seg is not None
    cdef bint map_levels = seg_list is not None
    if store and (list_level is None or list_off is None):
        raise ValueError("plan_levels: list_seg, list_level and list_off go together")
    cdef int64_t n_lists = 0, total = 0, s, size, current
    cdef int level
    with nogil:
        for s in range(seg_size.shape[0]):
            current = -1
            size = seg_size[s]
            for level in range(C_LEVELS):
                if level > 0 and size > C_MIN_ITEMS and items[s, level] * 2 <= size:
                    size = items[s, level]
                    current = n_lists
                    if store:
                        list_seg[n_lists] = s
                        list_level[n_lists] = level
                        list_off[n_lists] = total
                    n_lists += 1
                    total += size
                if map_levels:
                    seg_list[s, level] = <int32_t>current
    return n_lists, total


def build_lists(const pos_t[:] perm, const int64_t[:] seg_start, const int64_t[:] dur,
                const int8_t[:] cut_level, const int64_t[:] list_seg,
                const int64_t[:] list_level, const int64_t[:] list_off, const int64_t[:] which,
                pos_t[:] cuts, pos_t[:] longest):
    """Fills the stored lists in `which` (ascending, each segment's lists all together), each
    from its segment's previous one (or the segment's raw events)."""
    cdef int64_t previous = -1, w, j, s, level, lo, hi, out, best, k, cut, item_best
    with nogil:
        for w in range(which.shape[0]):
            j = which[w]
            s = list_seg[j]
            level = list_level[j]
            if w == 0 or list_seg[which[w - 1]] != s:
                previous = -1
            if previous < 0:
                lo = seg_start[s]
                hi = seg_start[s + 1]
            else:  # the segment's lists are stored one after the other
                lo = list_off[previous]
                hi = list_off[j]
            out = list_off[j]
            best = -1
            for k in range(lo, hi):
                if previous < 0:
                    cut = k
                    item_best = k
                else:
                    cut = cuts[k]
                    item_best = longest[k]
                if best < 0 or dur[perm[item_best]] > dur[perm[best]]:
                    best = item_best
                if cut_level[cut] >= level:
                    cuts[out] = <pos_t>cut
                    longest[out] = <pos_t>best
                    out += 1
                    best = -1
            previous = j


def build_rmq(const pos_t[:] perm, const int64_t[:] dur, tuple blocks):
    """blocks[0][j] = position of the longest event among positions [64 j, 64 j + 64)
    (earliest on ties); blocks[k] = the same over 64 entries of blocks[k - 1]."""
    cdef pos_t[:] out
    cdef const pos_t[:] below = perm
    cdef int level
    for level in range(len(blocks)):
        out = blocks[level]
        if out.shape[0] * C_BLOCK < below.shape[0]:
            raise ValueError(f"build_rmq: block level {level} holds {out.shape[0]} entries, "
                             f"too few for {below.shape[0]}")
        with nogil:
            _rmq_level(perm, dur, below, out, level == 0)
        below = out


cdef int _rmq_level(const pos_t[:] perm, const int64_t[:] dur, const pos_t[:] below,
                    pos_t[:] out, bint first_level) except -1 nogil:
    cdef int64_t j, lo, i, best, candidate
    for j in range(out.shape[0]):
        best = -1
        lo = j * C_BLOCK
        for i in range(lo, min(lo + C_BLOCK, below.shape[0])):
            candidate = i if first_level else below[i]
            if best < 0 or dur[perm[candidate]] > dur[perm[best]]:
                best = candidate
        out[j] = <pos_t>best
    return 0


cdef struct Pyramid:
    int n_levels
    const void* level[C_MAX_RMQ]  # pos_t arrays, each checked to cover the positions


cdef int _pyramid(tuple blocks, const pos_t[:] perm, Pyramid* out) except -1:
    cdef const pos_t[::1] block
    cdef int64_t need = perm.shape[0]
    cdef int k
    if len(blocks) > C_MAX_RMQ:
        raise ValueError(f"a range-maximum pyramid of at most {C_MAX_RMQ} levels, not "
                         f"{len(blocks)}")
    out.n_levels = len(blocks)
    for k in range(out.n_levels):
        block = blocks[k]
        need = (need + C_BLOCK - 1) // C_BLOCK
        if block.shape[0] < need:
            raise ValueError(f"range-maximum level {k} holds {block.shape[0]} entries, "
                             f"fewer than the {need} its positions need")
        out.level[k] = &block[0] if block.shape[0] else NULL
    return 0


cdef int64_t _range_argmax(const pos_t[:] perm, const int64_t[:] dur, Pyramid* blocks,
                           int64_t a, int64_t b) except? -2 nogil:
    """The position of the longest event in positions [a, b] (earliest on ties)."""
    cdef int64_t best = -1, i = a, step, candidate, size
    cdef int level
    if a < 0 or b >= perm.shape[0]:
        with gil:
            raise IndexError(f"positions [{a}, {b}] outside 0..{perm.shape[0] - 1}")
    while i <= b:
        step = 1
        candidate = i
        size = C_BLOCK
        for level in range(blocks.n_levels):
            if i % size != 0 or i + size - 1 > b:
                break
            # in range: i + size - 1 <= b < len(perm), and level k covers len(perm) / 64**(k+1)
            candidate = (<const pos_t*>blocks.level[level])[i // size]
            step = size
            size *= C_BLOCK
        if best < 0 or dur[perm[candidate]] > dur[perm[best]]:
            best = candidate
        i += step
    return best


def window_ranges(const int64_t[:] segs, const int64_t[:] seg_start,
                  const int32_t[:, :] seg_list, const int64_t[:] list_off,
                  const int64_t[:] list_len, const pos_t[:] cuts, const pos_t[:] perm,
                  const int64_t[:] start, const int64_t[:] dur, int64_t lo_t, int64_t hi_t,
                  int level, int64_t[:, :] ranges):
    """Per selected segment: ranges[k] = (first, end) positions of the events overlapping
    [lo_t, hi_t], (first, last) item of the level read, and its list (-1: raw events).
    Returns (total items, total events)."""
    cdef int64_t n_items = 0, n_events = 0, k, s, a, b, lo, hi, mid, e, first, end, off
    cdef int64_t j
    with nogil:
        for k in range(segs.shape[0]):
            s = segs[k]
            a = seg_start[s]
            b = seg_start[s + 1]
            lo = a
            hi = b
            while lo < hi:  # ends are sorted within a segment: first event ending at/after lo_t
                mid = (lo + hi) >> 1
                e = perm[mid]
                if start[e] + dur[e] < lo_t:
                    lo = mid + 1
                else:
                    hi = mid
            first = lo
            hi = b
            while lo < hi:  # first event starting after hi_t
                mid = (lo + hi) >> 1
                if start[perm[mid]] <= hi_t:
                    lo = mid + 1
                else:
                    hi = mid
            end = lo
            j = seg_list[s, level]
            ranges[k, 0] = first
            ranges[k, 1] = end
            ranges[k, 4] = j
            if first >= end:
                ranges[k, 2] = 0
                ranges[k, 3] = -1
                continue
            n_events += end - first
            if j < 0:
                ranges[k, 2] = first
                ranges[k, 3] = end - 1
            else:
                off = list_off[j]
                ranges[k, 2] = _first_at_least(cuts, off, off + list_len[j], first) - off
                ranges[k, 3] = _first_at_least(cuts, off, off + list_len[j], end - 1) - off
            n_items += ranges[k, 3] - ranges[k, 2] + 1
    return n_items, n_events


cdef int64_t _first_at_least(const pos_t[:] values, int64_t lo, int64_t hi,
                             int64_t x) except? -2 nogil:
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def window_runs(const int64_t[:] segs, const int64_t[:, :] ranges, const int64_t[:] seg_start,
                const int64_t[:] list_off, const pos_t[:] cuts, const pos_t[:] longest,
                const pos_t[:] perm, const int64_t[:] start, const int64_t[:] dur,
                tuple blocks, double px, int64_t[:] out_seg, int64_t[:] out_start,
                int64_t[:] out_end, int64_t[:] out_count, int64_t[:] out_event):
    """Re-merges the items of each segment at pixel size px: a run breaks at a cut whose
    value is >= px. Items cut by the window edges are clipped to the events inside.
    Returns the number of runs written."""
    cdef Pyramid pyramid
    _pyramid(blocks, perm, &pyramid)
    cdef int64_t n = 0, k, first, end, k_lo, k_hi, j, off, seg_first, run_first, run_last
    cdef int64_t run_best, item, a, b, best, e0, e1, v
    with nogil:
        for k in range(segs.shape[0]):
            first = ranges[k, 0]
            end = ranges[k, 1]
            k_lo = ranges[k, 2]
            k_hi = ranges[k, 3]
            j = ranges[k, 4]
            if first >= end:
                continue
            off = list_off[j] if j >= 0 else 0
            seg_first = seg_start[segs[k]]
            run_first = -1
            run_last = -1
            run_best = -1
            for item in range(k_lo, k_hi + 1):
                if j < 0:
                    a = item
                    b = item
                    best = item
                else:
                    a = cuts[off + item - 1] + 1 if item > 0 else seg_first
                    b = cuts[off + item]
                    best = longest[off + item]
                if a < first or b > end - 1:
                    a = max(a, first)
                    b = min(b, end - 1)
                    if best < a or best > b:
                        best = _range_argmax(perm, dur, &pyramid, a, b)
                if run_first >= 0:
                    e0 = perm[run_last]
                    e1 = perm[a]
                    v = max(dur[e0], dur[e1], start[e1] - start[e0] - dur[e0])
                    if <double>v >= px:
                        n = _emit(n, segs[k], run_first, run_last, run_best, perm, start, dur,
                                  out_seg, out_start, out_end, out_count, out_event)
                        run_first = -1
                if run_first < 0:
                    run_first = a
                    run_best = best
                elif dur[perm[best]] > dur[perm[run_best]]:
                    run_best = best
                run_last = b
            n = _emit(n, segs[k], run_first, run_last, run_best, perm, start, dur,
                      out_seg, out_start, out_end, out_count, out_event)
    return n


cdef int64_t _emit(int64_t n, int64_t seg, int64_t first, int64_t last, int64_t best,
                   const pos_t[:] perm, const int64_t[:] start, const int64_t[:] dur,
                   int64_t[:] out_seg, int64_t[:] out_start, int64_t[:] out_end,
                   int64_t[:] out_count, int64_t[:] out_event) except? -2 nogil:
    out_seg[n] = seg
    out_start[n] = start[perm[first]]
    out_end[n] = start[perm[last]] + dur[perm[last]]
    out_count[n] = last - first + 1
    out_event[n] = perm[best]
    return n + 1
