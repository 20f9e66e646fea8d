"""Search over every event of a profile by name, hits in time order.

Names are matched once per metadata row (thousands), not per event (millions): a lookup table
over `Profile.meta` then selects the events. A track's hits are already in time order, so time
order over the whole trace is a k-way merge of per-track runs, stopped after `limit` hits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US, Profile

_jit = numba.njit(cache=True, nogil=True)
MAX_HITS = 200_000
"""Hits listed in time order by default; `n_hits` still counts them all."""


def name_rows(profile: Profile, pattern: str, regex: bool = False, case: bool = False
              ) -> np.ndarray:
    """Which metadata rows match, searching full names (HLO text) and display names.

    Substring by default; `regex` for a regular expression (re.search); `case` to match case.
    """
    flags = 0 if case else re.IGNORECASE
    try:
        matcher = re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression {pattern!r}: {exc}") from exc
    md = profile.metadata
    search = matcher.search
    return np.fromiter((bool(search(full) or search(short)) for full, short in
                        zip(md["name"], md["display_name"], strict=True)), bool, len(md))


@dataclass
class SearchResult:
    """Hits of one search. `event`, `start_us`, `track`: the first `limit` hits in time order;
    `n_hits` counts all of them, and `next_after`/`previous_before` walk all of them."""

    profile: Profile
    pattern: str
    event: np.ndarray
    start_us: np.ndarray
    track: np.ndarray
    n_hits: int
    truncated: bool
    _all: np.ndarray  # every hit, by event index (so each track's hits are in time order)
    _runs: np.ndarray  # (start, end) in _all of each track's hits

    def frame(self) -> pd.DataFrame:
        """The listed hits as `Profile.events_frame` rows."""
        return self.profile.events_frame(self.event)

    def next_after(self, t_us: float) -> int | None:
        """The first hit starting after t_us (event index), or None."""
        event = _next_hit(self._all, self._runs, self.profile.start_ps,
                          round(t_us * PS_PER_US), True)
        return None if event < 0 else int(event)

    def previous_before(self, t_us: float) -> int | None:
        """The last hit starting before t_us (event index), or None."""
        event = _next_hit(self._all, self._runs, self.profile.start_ps,
                          round(t_us * PS_PER_US), False)
        return None if event < 0 else int(event)


def search(profile: Profile, pattern: str, regex: bool = False, case: bool = False,
           limit: int = MAX_HITS) -> SearchResult:
    """Every event whose full or display name matches `pattern`, in time order."""
    rows = name_rows(profile, pattern, regex, case)
    hits = np.flatnonzero(rows[profile.meta]) if rows.any() else np.empty(0, np.int64)
    bounds = profile.tracks[["first_event", "end_event"]].to_numpy(np.int64)
    bounds = bounds[np.argsort(bounds[:, 0])]
    runs = np.searchsorted(hits, bounds)
    if int((runs[:, 1] - runs[:, 0]).sum()) < hits.shape[0]:  # events of no track (skipped)
        hits = np.concatenate([hits[a:b] for a, b in runs.tolist()] or [hits[:0]])
        runs = np.searchsorted(hits, bounds)
    n = min(int(limit), hits.shape[0])
    ordered = np.empty(n, np.int64)
    _merge_runs(hits, runs, profile.start_ps, ordered)
    return SearchResult(
        profile=profile, pattern=pattern, event=ordered,
        start_us=profile.start_ps[ordered] / PS_PER_US,
        track=profile.track_of(ordered).astype(np.int64), n_hits=int(hits.shape[0]),
        truncated=n < hits.shape[0], _all=hits, _runs=runs)


@_jit
def _merge_runs(hits, runs, start, out):
    """The first out.shape[0] hits by (start, event), merging sorted runs with a heap."""
    n_runs = runs.shape[0]
    heap = np.empty(n_runs, np.int64)  # run ids, ordered by their next hit
    pos = runs[:, 0].copy()
    size = 0
    for r in range(n_runs):
        if pos[r] < runs[r, 1]:
            heap[size] = r
            size += 1
            _sift_up(heap, size - 1, pos, hits, start)
    for k in range(out.shape[0]):
        r = heap[0]
        out[k] = hits[pos[r]]
        pos[r] += 1
        if pos[r] >= runs[r, 1]:
            size -= 1
            heap[0] = heap[size]
        _sift_down(heap, size, pos, hits, start)


@_jit
def _before(a, b, pos, hits, start):
    ea, eb = hits[pos[a]], hits[pos[b]]
    return start[ea] < start[eb] or (start[ea] == start[eb] and ea < eb)


@_jit
def _sift_up(heap, i, pos, hits, start):
    while i > 0:
        parent = (i - 1) >> 1
        if not _before(heap[i], heap[parent], pos, hits, start):
            break
        heap[i], heap[parent] = heap[parent], heap[i]
        i = parent


@_jit
def _sift_down(heap, size, pos, hits, start):
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _before(heap[child + 1], heap[child], pos, hits, start):
            child += 1
        if not _before(heap[child], heap[i], pos, hits, start):
            break
        heap[i], heap[child] = heap[child], heap[i]
        i = child


@_jit
def _next_hit(hits, runs, start, t, after):
    """The earliest hit starting after t (after=True) or latest starting before t, or -1."""
    best = -1
    for r in range(runs.shape[0]):
        lo, hi = runs[r, 0], runs[r, 1]
        while lo < hi:  # first hit of the run starting after t (after) / at or after t
            mid = (lo + hi) >> 1
            if start[hits[mid]] < t or (after and start[hits[mid]] == t):
                lo = mid + 1
            else:
                hi = mid
        if after:
            if lo < runs[r, 1] and (best < 0 or start[hits[lo]] < start[best]):
                best = hits[lo]
        elif lo > runs[r, 0] and (best < 0 or start[hits[lo - 1]] >= start[best]):
            best = hits[lo - 1]
    return best
