"""Counter tracks reduced to one (min, max, last) point per pixel bucket.

A counter's samples are its track's events (sorted by time); the value of each comes from
`Profile.counter_values`. Block minima and maxima (a small pyramid, like the slices' range
maximum) keep a bucket's min/max cheap however many samples fall in it, so a window costs
O(buckets) whatever the sample count.
"""

from __future__ import annotations

import numpy as np

from .._native.counters import build as _build
from .._native.counters import query as _query
from ..profile.model import Profile

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
