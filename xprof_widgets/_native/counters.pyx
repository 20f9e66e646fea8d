# cython: language_level=3, wraparound=False, initializedcheck=False
"""Counter samples reduced to one (min, max, last) point per pixel bucket; see
`trace/counters.py`. Array accesses stay bounds-checked (indices come from the caller's
offsets); the min/max pyramid's levels are checked to cover the samples before it is read.
"""

from libc.math cimport NAN, floor, isnan
from libc.stdint cimport int64_t

cdef enum:
    C_BLOCK = 64
    C_MAX_LEVELS = 8


cdef struct Pyramid:
    int n_levels
    const double* low[C_MAX_LEVELS]
    const double* high[C_MAX_LEVELS]


cdef int _pyramid(tuple block_min, tuple block_max, int64_t n_values, Pyramid* out) except -1:
    cdef const double[::1] low
    cdef const double[::1] high
    cdef int64_t need = n_values
    cdef int k
    if len(block_min) != len(block_max) or len(block_min) > C_MAX_LEVELS:
        raise ValueError("block_min and block_max: as many levels, at most 8")
    out.n_levels = len(block_min)
    for k in range(out.n_levels):
        low = block_min[k]
        high = block_max[k]
        need = (need + C_BLOCK - 1) // C_BLOCK
        if low.shape[0] < need or high.shape[0] < need:
            raise ValueError(f"min/max level {k} holds fewer than the {need} entries its "
                             f"samples need")
        out.low[k] = &low[0] if low.shape[0] else NULL
        out.high[k] = &high[0] if high.shape[0] else NULL
    return 0


cdef inline void _fold(double* lo_v, double* hi_v, double a, double b) noexcept nogil:
    """Min/max that skip NaN (a sample without a value)."""
    if not isnan(a) and not a >= lo_v[0]:
        lo_v[0] = a
    if not isnan(b) and not b <= hi_v[0]:
        hi_v[0] = b


def build(const double[:] values, tuple block_min, tuple block_max):
    """block_min[0][j] / block_max[0][j]: min / max of values[64 j : 64 j + 64] (NaN skipped);
    block_min[k]: the same over 64 entries of level k - 1."""
    cdef double[:] lows
    cdef double[:] highs
    cdef const double[:] below_min = values
    cdef const double[:] below_max = values
    cdef int64_t j, a, i
    cdef double lo_v, hi_v
    cdef int level
    if len(block_min) != len(block_max):
        raise ValueError("block_min and block_max: as many levels")
    for level in range(len(block_min)):
        lows = block_min[level]
        highs = block_max[level]
        if lows.shape[0] * C_BLOCK < below_min.shape[0] or highs.shape[0] != lows.shape[0]:
            raise ValueError(f"min/max level {level} is too short for the level below")
        with nogil:
            for j in range(lows.shape[0]):
                lo_v = NAN
                hi_v = NAN
                a = j * C_BLOCK
                for i in range(a, min(a + C_BLOCK, below_min.shape[0])):
                    _fold(&lo_v, &hi_v, below_min[i], below_max[i])
                lows[j] = lo_v
                highs[j] = hi_v
        below_min = lows
        below_max = highs


cdef int _range_min_max(const double[:] values, Pyramid* blocks, int64_t a, int64_t b,
                        double* lo_v, double* hi_v) except -1 nogil:
    cdef int64_t i = a, step, size
    cdef double low, high
    cdef int level
    lo_v[0] = NAN
    hi_v[0] = NAN
    if a < 0 or b >= values.shape[0]:
        with gil:
            raise IndexError(f"samples [{a}, {b}] outside 0..{values.shape[0] - 1}")
    while i <= b:
        step = 1
        low = values[i]
        high = values[i]
        size = C_BLOCK
        for level in range(blocks.n_levels):
            if i % size != 0 or i + size - 1 > b:
                break
            # in range: i + size - 1 <= b < len(values), and level k covers len / 64**(k+1)
            low = blocks.low[level][i // size]
            high = blocks.high[level][i // size]
            step = size
            size *= C_BLOCK
        _fold(lo_v, hi_v, low, high)
        i += step
    return 0


cdef int64_t _search(const int64_t[:] times, int64_t lo, int64_t hi, int64_t x,
                     bint right) except? -2 nogil:
    """np.searchsorted(times[lo:hi], x, side) + lo."""
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if times[mid] < x or (right and times[mid] == x):
            lo = mid + 1
        else:
            hi = mid
    return lo


def query(const int64_t[:] times, const double[:] values, tuple block_min, tuple block_max,
          const int64_t[:] offset, const int64_t[:] slots, const int64_t[:] caps, int64_t lo,
          int64_t hi, double px, int64_t[:] out_t, double[:] out_min, double[:] out_max,
          double[:] out_last, int64_t[:] counts):
    """Per counter slot (samples offset[slot]..offset[slot + 1]), at most caps[k] points over
    [lo, hi]: the sample in force at lo, then one (first time, min, max, last) per bucket of
    px ps. counts[k]: points written for slot k."""
    cdef Pyramid pyramid
    _pyramid(block_min, block_max, values.shape[0], &pyramid)
    cdef int64_t n = 0, k, a, b, i, last, j_lo, j_hi, mid
    cdef double limit
    with nogil:
        for k in range(slots.shape[0]):
            a = offset[slots[k]]
            b = offset[slots[k] + 1]
            i = _search(times, a, b, lo, False)
            last = _search(times, a, b, hi, True)
            if i > a:  # the sample in force when the window opens
                out_t[n] = times[i - 1]
                out_min[n] = values[i - 1]
                out_max[n] = values[i - 1]
                out_last[n] = values[i - 1]
                n += 1
                counts[k] += 1
            while i < last:
                limit = (floor(<double>(times[i] - lo) / px) + 1.0) * px
                j_lo = i + 1
                j_hi = last
                if counts[k] + 1 >= caps[k]:  # float rounding can never overrun the output
                    j_lo = last
                while j_lo < j_hi:  # first sample of a later bucket
                    mid = (j_lo + j_hi) >> 1
                    if <double>(times[mid] - lo) < limit:
                        j_lo = mid + 1
                    else:
                        j_hi = mid
                out_t[n] = times[i]
                _range_min_max(values, &pyramid, i, j_lo - 1, &out_min[n], &out_max[n])
                out_last[n] = values[j_lo - 1]
                n += 1
                counts[k] += 1
                i = j_lo
