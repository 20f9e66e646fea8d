"""Compiled kernels of the slice level-of-detail structure; `index.py` explains the design.

Positions index `perm`, the events of every (track, depth) segment laid out by start time. A
"cut" at position i separates event i from event i + 1 of the same segment; its value
v = max(dur[i], dur[i + 1], gap between them) is the smallest pixel size at which the two stay
apart. A level keeps the cuts with v >= 4**L ps; the items between kept cuts are runs whose
longest event is stored with the cut.
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)

N_LEVELS = 32
"""Level L >= 1 merges at threshold 4**L ps; level 0 is the raw events."""
SEGMENT_END = 127
"""The level of the cut after a segment's last event: it survives every level."""
RMQ_BLOCK = 64
MIN_ITEMS = 32
"""A segment stores no coarser level once its items number this few."""


@_jit
def level_of(v):
    """The coarsest level L with 4**L <= v (0 when v < 4)."""
    if v < 4:
        return 0
    level = int(np.log2(np.float64(v))) >> 1
    while level < N_LEVELS - 1 and (np.int64(1) << (2 * level + 2)) <= v:
        level += 1
    while level > 0 and (np.int64(1) << (2 * level)) > v:
        level -= 1
    return level


@_jit
def sort_by_segment(track_first, track_end, track_segment, depth, perm, seg_start):
    """Fills perm with each segment's events (stable, so in start order) and seg_start[s] with
    the first position of segment s (seg_start[-1] = total)."""
    seg_start[:] = 0
    for t in range(track_first.shape[0]):
        base = track_segment[t]
        for i in range(track_first[t], track_end[t]):
            seg_start[base + depth[i] + 1] += 1
    for s in range(1, seg_start.shape[0]):
        seg_start[s] += seg_start[s - 1]
    fill = seg_start[:-1].copy()
    for t in range(track_first.shape[0]):
        base = track_segment[t]
        for i in range(track_first[t], track_end[t]):
            s = base + depth[i]
            perm[fill[s]] = i
            fill[s] += 1


@_jit
def cut_levels(perm, seg_start, start, dur, cut_level, hist):
    """cut_level[i]: the level of the cut after position i; hist[s, L]: cuts of level L."""
    for s in range(seg_start.shape[0] - 1):
        a, b = seg_start[s], seg_start[s + 1]
        for i in range(a, b - 1):
            e0 = perm[i]
            e1 = perm[i + 1]
            v = max(dur[e0], dur[e1], start[e1] - start[e0] - dur[e0])
            level = level_of(v)
            cut_level[i] = level
            hist[s, level] += 1
        if b > a:
            cut_level[b - 1] = SEGMENT_END


@_jit
def plan_levels(seg_size, items, seg_list, list_seg, list_level, list_off):
    """Chooses the levels each segment stores: one whose items number at most half of the
    last stored one's, while that one had more than MIN_ITEMS.

    items[s, L] is the item count of segment s at level L. Fills seg_list[s, L] with the list
    to read at level L (-1: the raw events) and returns the number of lists; with list_seg None
    only counts them and the total items.
    """
    n_lists = 0
    total = 0
    for s in range(seg_size.shape[0]):
        current = -1
        size = seg_size[s]
        for level in range(N_LEVELS):
            if level > 0 and size > MIN_ITEMS and items[s, level] * 2 <= size:
                size = items[s, level]
                current = n_lists
                if list_seg is not None:
                    list_seg[n_lists] = s
                    list_level[n_lists] = level
                    list_off[n_lists] = total
                n_lists += 1
                total += size
            if seg_list is not None:
                seg_list[s, level] = current
    return n_lists, total


@_jit
def build_lists(perm, seg_start, dur, cut_level, list_seg, list_level, list_off, cuts, longest):
    """Fills every stored list from the segment's previous one (or its raw events)."""
    previous = -1
    for j in range(list_seg.shape[0]):
        s = list_seg[j]
        level = list_level[j]
        if j == 0 or list_seg[j - 1] != s:
            previous = -1
        if previous < 0:
            lo, hi = seg_start[s], seg_start[s + 1]
        else:  # the segment's lists are stored one after the other
            lo, hi = list_off[previous], list_off[j]
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
                cuts[out] = cut
                longest[out] = best
                out += 1
                best = -1
        previous = j


@_jit
def build_rmq(perm, dur, blocks):
    """blocks[0][j] = position of the longest event among positions [64 j, 64 j + 64)
    (earliest on ties); blocks[k] = the same over 64 entries of blocks[k - 1]."""
    for level in range(len(blocks)):
        out = blocks[level]
        below = blocks[level - 1] if level > 0 else perm
        for j in range(out.shape[0]):
            best = -1
            lo = j * RMQ_BLOCK
            for i in range(lo, min(lo + RMQ_BLOCK, below.shape[0])):
                candidate = i if level == 0 else below[i]
                if best < 0 or dur[perm[candidate]] > dur[perm[best]]:
                    best = candidate
            out[j] = best


@_jit
def range_argmax(perm, dur, blocks, a, b):
    """The position of the longest event in positions [a, b] (earliest on ties)."""
    best = -1
    i = a
    while i <= b:
        step = 1
        candidate = i
        size = RMQ_BLOCK
        for level in range(len(blocks)):
            if i % size != 0 or i + size - 1 > b:
                break
            candidate = blocks[level][i // size]
            step = size
            size *= RMQ_BLOCK
        if best < 0 or dur[perm[candidate]] > dur[perm[best]]:
            best = candidate
        i += step
    return best


@_jit
def window_ranges(segs, seg_start, seg_list, list_off, list_len, cuts, perm, start, dur,
                  lo_t, hi_t, level, ranges):
    """Per selected segment: ranges[k] = (first, end) positions of the events overlapping
    [lo_t, hi_t], (first, last) item of the level read, and its list (-1: raw events).
    Returns (total items, total events)."""
    n_items = 0
    n_events = 0
    for k in range(segs.shape[0]):
        s = segs[k]
        a, b = seg_start[s], seg_start[s + 1]
        lo, hi = a, b
        while lo < hi:  # ends are sorted within a segment: first event ending at or after lo_t
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


@_jit
def _first_at_least(values, lo, hi, x):
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def window_runs(segs, ranges, seg_start, list_off, cuts, longest, perm, start, dur, blocks,
                px, out_seg, out_start, out_end, out_count, out_event):
    """Re-merges the items of each segment at pixel size px: a run breaks at a cut whose
    value is >= px. Items cut by the window edges are clipped to the events inside.
    Returns the number of runs written."""
    n = 0
    for k in range(segs.shape[0]):
        first, end, k_lo, k_hi, j = ranges[k]
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
                    best = range_argmax(perm, dur, blocks, a, b)
            if run_first >= 0:
                e0 = perm[run_last]
                e1 = perm[a]
                v = max(dur[e0], dur[e1], start[e1] - start[e0] - dur[e0])
                if v >= px:
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


@_jit
def _emit(n, seg, first, last, best, perm, start, dur, out_seg, out_start, out_end, out_count,
          out_event):
    out_seg[n] = seg
    out_start[n] = start[perm[first]]
    out_end[n] = start[perm[last]] + dur[perm[last]]
    out_count[n] = last - first + 1
    out_event[n] = perm[best]
    return n + 1
