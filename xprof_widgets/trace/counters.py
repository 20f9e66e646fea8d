"""Counter tracks reduced to one (min, max, last) point per pixel bucket.

A counter's samples are its track's events (sorted by time); the value of each comes from
`Profile.counter_values`. Block minima and maxima (a small pyramid, like the slices' range
maximum) keep a bucket's min/max cheap however many samples fall in it, so a window costs
O(buckets) whatever the sample count.
"""

from __future__ import annotations

import numba
import numpy as np

from ..profile.model import Profile

_jit = numba.njit(cache=True, nogil=True)
_BLOCK = 64
_LEVELS = 3


class CounterIndex:
    """The samples of every counter track, concatenated, with their min/max pyramid."""

    def __init__(self, profile: Profile):
        tracks = profile.tracks
        ids = tracks.index[tracks["kind"] == "counter"].to_numpy(np.int64)
        first = tracks.loc[ids, "first_event"].to_numpy(np.int64)
        end = tracks.loc[ids, "end_event"].to_numpy(np.int64)
        self.track_ids = ids
        self.offset = np.zeros(ids.shape[0] + 1, np.int64)
        np.cumsum(end - first, out=self.offset[1:])
        events = np.concatenate([np.arange(a, b) for a, b in zip(first, end, strict=True)]
                                ) if ids.shape[0] else np.empty(0, np.int64)
        self.times = profile.start_ps[events]
        self.values = profile.counter_values(events)
        sizes = [max(1, -(-self.values.shape[0] // _BLOCK ** (k + 1))) for k in range(_LEVELS)]
        self.block_min = tuple(np.empty(s) for s in sizes)
        self.block_max = tuple(np.empty(s) for s in sizes)
        if self.values.shape[0]:
            _build(self.values, self.block_min, self.block_max)
        self._slot = {int(t): k for k, t in enumerate(ids.tolist())}

    def query(self, track_ids: np.ndarray, lo: int, hi: int, px: float, width: int
              ) -> tuple[np.ndarray, ...]:
        """Points of the given counter tracks over [lo, hi] ps: (n per track, t_ps, min, max,
        last). The first point of a track may precede lo: the value in force at lo."""
        slots = np.array([self._slot[int(t)] for t in track_ids], np.int64)
        sizes = np.minimum(self.offset[slots + 1] - self.offset[slots], width + 2)
        cap = int(sizes.sum())
        out_t = np.empty(cap, np.int64)
        out_min, out_max, out_last = np.empty(cap), np.empty(cap), np.empty(cap)
        counts = np.zeros(slots.shape[0], np.int64)
        _query(self.times, self.values, self.block_min, self.block_max, self.offset, slots,
               sizes, lo, hi, px, out_t, out_min, out_max, out_last, counts)
        n = int(counts.sum())
        return counts, out_t[:n], out_min[:n], out_max[:n], out_last[:n]


@_jit
def _build(values, block_min, block_max):
    for level in range(len(block_min)):
        lows, highs = block_min[level], block_max[level]
        for j in range(lows.shape[0]):
            lo_v, hi_v = np.nan, np.nan
            a = j * _BLOCK
            if level == 0:
                for i in range(a, min(a + _BLOCK, values.shape[0])):
                    lo_v, hi_v = _fold(lo_v, hi_v, values[i], values[i])
            else:
                below_min, below_max = block_min[level - 1], block_max[level - 1]
                for i in range(a, min(a + _BLOCK, below_min.shape[0])):
                    lo_v, hi_v = _fold(lo_v, hi_v, below_min[i], below_max[i])
            lows[j], highs[j] = lo_v, hi_v


@_jit
def _fold(lo_v, hi_v, a, b):
    """Min/max that skip NaN (a sample without a value)."""
    if not np.isnan(a) and not a >= lo_v:
        lo_v = a
    if not np.isnan(b) and not b <= hi_v:
        hi_v = b
    return lo_v, hi_v


@_jit
def _range_min_max(values, block_min, block_max, a, b):
    lo_v, hi_v = np.nan, np.nan
    i = a
    while i <= b:
        step = 1
        low, high = values[i], values[i]
        size = _BLOCK
        for level in range(len(block_min)):
            if i % size != 0 or i + size - 1 > b:
                break
            low, high = block_min[level][i // size], block_max[level][i // size]
            step = size
            size *= _BLOCK
        lo_v, hi_v = _fold(lo_v, hi_v, low, high)
        i += step
    return lo_v, hi_v


@_jit
def _query(times, values, block_min, block_max, offset, slots, caps, lo, hi, px, out_t, out_min,
           out_max, out_last, counts):
    n = 0
    for k in range(slots.shape[0]):
        a, b = offset[slots[k]], offset[slots[k] + 1]
        i = a + np.searchsorted(times[a:b], lo)
        last = a + np.searchsorted(times[a:b], hi, side="right")
        if i > a:  # the sample in force when the window opens
            out_t[n] = times[i - 1]
            out_min[n] = out_max[n] = out_last[n] = values[i - 1]
            n += 1
            counts[k] += 1
        while i < last:
            limit = (np.floor((times[i] - lo) / px) + 1.0) * px
            j_lo, j_hi = i + 1, last
            if counts[k] + 1 >= caps[k]:  # float rounding can never overrun the output
                j_lo = last
            while j_lo < j_hi:  # first sample of a later bucket
                mid = (j_lo + j_hi) >> 1
                if times[mid] - lo < limit:
                    j_lo = mid + 1
                else:
                    j_hi = mid
            out_t[n] = times[i]
            out_min[n], out_max[n] = _range_min_max(values, block_min, block_max, i, j_lo - 1)
            out_last[n] = values[j_lo - 1]
            n += 1
            counts[k] += 1
            i = j_lo
