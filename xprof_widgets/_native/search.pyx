# cython: language_level=3, wraparound=False, initializedcheck=False
"""Search kernels: count and list, in time order, the events whose metadata row matches; see
`trace/search.py`. Array accesses stay bounds-checked (rows, bounds and metadata ids come from
the caller). `rows` is a numpy bool array (read as bytes).
"""

from libc.stdint cimport int32_t, int64_t

import numpy as np

ctypedef fused meta_t:
    int32_t
    int64_t


def first_hits(const meta_t[:] meta, const int64_t[:] start, const unsigned char[:] rows,
               const int64_t[:, :] bounds, int64_t[:] out):
    """Counts the hits of every track and writes the first out.shape[0] of them by (start,
    event) into out. Returns (hits in all, hits written)."""
    cdef int64_t n_tracks = bounds.shape[0], total = 0, t, e, size = 0, n = 0, top
    cdef int64_t[:] pos = np.empty(n_tracks, np.int64)  # each track's next hit (or its end)
    cdef int64_t[:] heap = np.empty(n_tracks, np.int64)  # tracks with a next hit, earliest first
    with nogil:
        for t in range(n_tracks):
            for e in range(bounds[t, 0], bounds[t, 1]):
                if rows[meta[e]]:
                    total += 1
        for t in range(n_tracks):
            pos[t] = _next_match(meta, rows, bounds[t, 0], bounds[t, 1])
            if pos[t] < bounds[t, 1]:
                heap[size] = t
                size += 1
                _sift_up(heap, size - 1, pos, start)
        while n < out.shape[0] and size > 0:
            top = heap[0]
            out[n] = pos[top]
            n += 1
            pos[top] = _next_match(meta, rows, pos[top] + 1, bounds[top, 1])
            if pos[top] >= bounds[top, 1]:
                size -= 1
                heap[0] = heap[size]
            _sift_down(heap, size, pos, start)
    return total, n


cdef int64_t _next_match(const meta_t[:] meta, const unsigned char[:] rows, int64_t e,
                         int64_t end) except? -2 nogil:
    while e < end and not rows[meta[e]]:
        e += 1
    return e


cdef inline int _before(int64_t a, int64_t b, const int64_t[:] pos,
                        const int64_t[:] start) except -1 nogil:
    cdef int64_t ea = pos[a], eb = pos[b]
    return start[ea] < start[eb] or (start[ea] == start[eb] and ea < eb)


cdef int _sift_up(int64_t[:] heap, int64_t i, const int64_t[:] pos,
                  const int64_t[:] start) except -1 nogil:
    cdef int64_t parent
    while i > 0:
        parent = (i - 1) >> 1
        if not _before(heap[i], heap[parent], pos, start):
            break
        heap[i], heap[parent] = heap[parent], heap[i]
        i = parent
    return 0


cdef int _sift_down(int64_t[:] heap, int64_t size, const int64_t[:] pos,
                    const int64_t[:] start) except -1 nogil:
    cdef int64_t i = 0, child
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _before(heap[child + 1], heap[child], pos, start):
            child += 1
        if not _before(heap[child], heap[i], pos, start):
            break
        heap[i], heap[child] = heap[child], heap[i]
        i = child
    return 0


def step(const meta_t[:] meta, const int64_t[:] start, const unsigned char[:] rows,
         const int64_t[:, :] bounds, int64_t t, bint after):
    """The earliest hit starting after t (after=True) or the latest starting before t, or -1.
    Per track: binary search to t, then walk to the nearest hit."""
    cdef int64_t best = -1, k, a, b, lo, hi, mid, e
    with nogil:
        for k in range(bounds.shape[0]):
            a = bounds[k, 0]
            b = bounds[k, 1]
            lo = a
            hi = b
            while lo < hi:  # first event starting after t (after) / at or after t
                mid = (lo + hi) >> 1
                if start[mid] < t or (after and start[mid] == t):
                    lo = mid + 1
                else:
                    hi = mid
            if after:
                e = _next_match(meta, rows, lo, b)
                if e < b and (best < 0 or start[e] < start[best]):
                    best = e
            else:
                e = lo - 1
                while e >= a and not rows[meta[e]]:
                    e -= 1
                if e >= a and (best < 0 or start[e] >= start[best]):
                    best = e
    return best
