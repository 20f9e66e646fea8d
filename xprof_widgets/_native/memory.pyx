# cython: language_level=3, wraparound=False, initializedcheck=False
"""Memory-analysis kernels: the heap-simulator replay and byte-span hashes; see
`analysis/memory.py`. Array accesses stay bounds-checked (rows come from the caller).
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t

import numpy as np

# replay status codes (analysis/memory.py names them)
cdef enum:
    C_OK = 0
    C_FREED_TWICE = 1
    C_NEGATIVE_HEAP = 2
    C_SHARE_CYCLE = 3


cdef int64_t _root(int64_t[:] canonical, int64_t row, int64_t limit) except? -2 nogil:
    cdef int64_t steps = 0
    while canonical[row] >= 0:
        row = canonical[row]
        steps += 1
        if steps > limit:
            return -1
    return row


def replay(const int64_t[:] kinds, const int64_t[:] rows, const int64_t[:] share_rows,
           const int64_t[:] sizes, const int64_t[:] unpadded):
    """Replays heap-simulator events over logical-buffer rows (-1: unknown buffer, skipped).

    Returns (status, failing event, heap after each event, unpadded heap after each event, peak,
    unpadded at peak, peak event (-1 if the heap never grew), push root, push display row, push
    event, kill event, span start, span end). A push is a buffer becoming live (ALLOC, or a
    SHARE_WITH that revives a freed canonical buffer); its display row is the buffer now using
    that memory; kill is the event that freed it (n if never).
    """
    cdef int64_t n = kinds.shape[0]
    cdef int64_t n_lb = sizes.shape[0]
    if rows.shape[0] < n or share_rows.shape[0] < n or unpadded.shape[0] < n_lb:
        raise ValueError("replay: rows and share_rows need a row per event, unpadded one per "
                         "buffer")
    heap_a = np.zeros(n, np.int64)
    heap_u_a = np.zeros(n, np.int64)
    span_start_a = np.full(n_lb, -1, np.int64)
    span_end_a = np.full(n_lb, -1, np.int64)
    push_root_a = np.empty(n, np.int64)
    push_display_a = np.empty(n, np.int64)
    push_at_a = np.empty(n, np.int64)
    kill_at_a = np.full(n, n, np.int64)
    cdef int64_t[:] heap = heap_a, heap_u = heap_u_a
    cdef int64_t[:] span_start = span_start_a, span_end = span_end_a
    cdef int64_t[:] push_root = push_root_a, push_display = push_display_a
    cdef int64_t[:] push_at = push_at_a, kill_at = kill_at_a
    cdef int64_t[:] ref = np.zeros(n_lb, np.int64)
    cdef int64_t[:] canonical = np.full(n_lb, -1, np.int64)
    cdef int64_t[:] display = np.full(n_lb, -1, np.int64)
    cdef int64_t[:] last_push = np.full(n_lb, -1, np.int64)
    cdef int64_t[:] prev_push = np.full(n, -1, np.int64)
    cdef int64_t n_push = 0, cur = 0, cur_u = 0, peak = 0, peak_u = 0, peak_at = -1
    cdef int64_t failed = -1, t, r, grew, kind, root, k, c
    cdef int status = C_OK
    with nogil:
        for t in range(n):
            r = rows[t]
            grew = -1
            if r >= 0:
                kind = kinds[t]
                if kind == 0:  # ALLOC
                    root = _root(canonical, r, n_lb)
                    if root < 0:
                        status = C_SHARE_CYCLE
                        failed = t
                        break
                    ref[root] += 1
                    grew = r
                    span_start[r] = t
                    span_end[r] = n - 1
                elif kind == 1:  # FREE
                    root = _root(canonical, r, n_lb)
                    if root < 0:
                        status = C_SHARE_CYCLE
                        failed = t
                        break
                    ref[root] -= 1
                    if ref[root] < 0:
                        status = C_FREED_TWICE
                        failed = t
                        break
                    if ref[root] == 0:
                        cur -= sizes[root]
                        cur_u -= unpadded[root]
                        if cur < 0:
                            status = C_NEGATIVE_HEAP
                            failed = t
                            break
                        # a canonical buffer's lifetime ends once; a revived region's lifetime
                        # is its reviving sharer's (as XProf 2.24 reports them)
                        if span_start[root] >= 0 and span_end[root] == n - 1:
                            span_end[root] = t
                        k = last_push[root]
                        while k >= 0 and kill_at[k] == n:
                            kill_at[k] = t
                            k = prev_push[k]
                    if span_start[r] >= 0 and canonical[r] >= 0:
                        span_end[r] = t
                elif kind == 2 and share_rows[t] >= 0:  # SHARE_WITH
                    c = share_rows[t]
                    canonical[r] = c
                    root = _root(canonical, c, n_lb)
                    if root < 0:
                        status = C_SHARE_CYCLE
                        failed = t
                        break
                    ref[root] += 1
                    if ref[root] == 1:  # the canonical buffer had been freed: memory comes back
                        display[root] = r
                        span_start[r] = t
                        span_end[r] = n - 1
                        grew = root
            if grew >= 0:
                cur += sizes[grew]
                cur_u += unpadded[grew]
                if cur > peak:
                    peak = cur
                    peak_u = cur_u
                    peak_at = t
                push_root[n_push] = grew
                push_display[n_push] = display[grew] if display[grew] >= 0 else grew
                push_at[n_push] = t
                prev_push[n_push] = last_push[grew]
                last_push[grew] = n_push
                n_push += 1
            heap[t] = cur
            heap_u[t] = cur_u
    return (status, failed, heap_a, heap_u_a, peak, peak_u, peak_at, push_root_a[:n_push],
            push_display_a[:n_push], push_at_a[:n_push], kill_at_a[:n_push], span_start_a,
            span_end_a)


def span_hashes(const uint8_t[::1] buf, const int64_t[:, :] spans):
    """64-bit FNV-1a of each byte span: equal names get equal keys without making strings."""
    cdef int64_t n = spans.shape[0], k, i, s, e
    if n and spans.shape[1] < 2:
        raise ValueError("span_hashes: spans are (start, end) rows")
    out = np.empty(n, np.uint64)
    cdef uint64_t[:] hashes = out
    cdef uint64_t h
    with nogil:
        for k in range(n):
            s = spans[k, 0]
            e = spans[k, 1]
            if s < 0 or e > buf.shape[0]:
                with gil:
                    raise IndexError(f"span [{s}, {e}) outside the {buf.shape[0]} bytes")
            h = 14695981039346656037ULL
            for i in range(s, e):
                h = (h ^ buf[i]) * 1099511628211ULL
            hashes[k] = h
    return out
