"""A host's busy time at any resolution, without its trace index: what one row per host of a
distributed profile draws (widgets/pod_trace_viewer.py), so a pod's hosts are listed without
building every host's index.

The union of the host's device op events (lines other than NON_OP_LINES; every slice of a host
without devices) is taken once;
coarser copies merge the gaps narrower than 4**L ps. A window at pixel size px reads the coarsest
copy whose gaps merged are all narrower than px and merges the rest of the gaps narrower than px:
inside the window, the union with every gap of a pixel or more kept (at its edges a busy interval
may end short of a sub-pixel gap), in time bounded by the copy's intervals in the window.
"""

from __future__ import annotations

import numpy as np

from .._native.intervals import union_intervals
from ..analysis.input_pipeline import NON_OP_LINES
from ..profile.model import Profile

_MIN_INTERVALS = 256


def busy_index(profile: Profile) -> BusyIndex:
    """The profile's BusyIndex, built on first use and kept on the profile."""
    return profile.memo(("busy_index",), lambda: BusyIndex(profile))


class BusyIndex:
    """Disjoint busy intervals of one host's devices, at resolutions 4**L ps."""

    def __init__(self, profile: Profile):
        tracks = profile.tracks
        slices = tracks["kind"] == "slices"
        ops = slices & (tracks["section_kind"] == "device") & ~tracks["name"].isin(NON_OP_LINES)
        chosen = tracks[ops if ops.any() else slices]
        first = chosen["first_event"].to_numpy(np.int64)
        end = chosen["end_event"].to_numpy(np.int64)
        events = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in
                                 zip(first.tolist(), end.tolist(), strict=True)]) \
            if len(chosen) else np.empty(0, np.int64)
        start = profile.start_ps[events]
        a, b, _ = union_intervals(start, start + profile.duration_ps[events])
        self.levels: list[tuple[float, np.ndarray, np.ndarray]] = [(0.0, a, b)]
        threshold = 4.0
        while a.shape[0] > _MIN_INTERVALS:
            merged = _merge_gaps(a, b, threshold)
            if merged[0].shape[0] < a.shape[0]:
                a, b = merged
                self.levels.append((threshold, a, b))
            threshold *= 4

    def query(self, lo: int, hi: int, px: float) -> tuple[np.ndarray, np.ndarray]:
        """Busy intervals overlapping [lo, hi] ps, gaps of `px` ps or more kept."""
        _, a, b = next(level for level in reversed(self.levels) if level[0] <= px)
        first = int(np.searchsorted(b, lo, side="left"))
        last = int(np.searchsorted(a, hi, side="right"))
        return _merge_gaps(a[first:last], b[first:last], px)


def _merge_gaps(a: np.ndarray, b: np.ndarray, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint intervals with the gaps narrower than `gap` closed."""
    if not a.shape[0]:
        return a, b
    heads = np.flatnonzero(np.concatenate([[True], a[1:] - b[:-1] >= gap]))
    tails = np.concatenate([heads[1:] - 1, [a.shape[0] - 1]])
    return a[heads], b[tails]
