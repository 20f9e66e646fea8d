"""The pivot of a selection, as Perfetto's area selection shows it: events grouped by section,
track and name with their count, total, self and average time.

Self time is the details panel's (`details.self_time_ps`): an event's duration minus the time
its track's events one level deeper cover inside it, each instant once. Here it is computed for
many events at once, one union of deeper intervals per (track, depth) of the selection.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US, Profile

LEVELS = ("section", "track", "name")
PIVOT_COLUMNS = ["section", "track", "track_name", "name", "count", "total_us", "self_us",
                 "avg_us"]


def self_times_ps(profile: Profile, events: np.ndarray) -> np.ndarray:
    """Self time (ps) of each event, in the order given."""
    events = np.asarray(events, np.int64)
    start = profile.start_ps[events]
    end = start + profile.duration_ps[events]
    out = end - start
    if not events.shape[0]:
        return out
    tracks = profile.track_of(events)
    depth = profile.depth[events].astype(np.int64)
    first = profile.built_tracks["first_event"].to_numpy(np.int64)
    last = profile.built_tracks["end_event"].to_numpy(np.int64)
    for track, level in np.unique(np.stack([tracks, depth], axis=1), axis=0).tolist():
        mine = np.flatnonzero((tracks == track) & (depth == level))
        lo = int(first[track])
        # Track events are ordered by start: deeper events that can overlap these start before
        # the last of them ends.
        hi = lo + int(np.searchsorted(profile.start_ps[lo:last[track]], end[mine].max(),
                                      side="right"))
        below = np.flatnonzero(profile.depth[lo:hi] == level + 1) + lo
        if not below.shape[0]:
            continue
        c_start = profile.start_ps[below]
        union = _union(c_start, c_start + profile.duration_ps[below])
        out[mine] -= _covered(*union, end[mine]) - _covered(*union, start[mine])
    return out


def _union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covering [start, end) (sorted by start), and the covered
    length before each."""
    reach = np.maximum.accumulate(end)
    new = np.ones(start.shape[0], bool)
    new[1:] = start[1:] > reach[:-1]
    heads = np.flatnonzero(new)
    a, b = start[heads], np.maximum.reduceat(end, heads)
    return a, b, np.concatenate([[0], np.cumsum(b - a)[:-1]])


def _covered(a: np.ndarray, b: np.ndarray, before: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Length of the union covered before each time t."""
    k = np.searchsorted(a, t, side="right") - 1
    at = np.maximum(k, 0)
    inside = np.clip(np.minimum(t, b[at]) - a[at], 0, None)
    return np.where(k >= 0, before[at] + inside, 0)


def selection_pivot(profile: Profile, events: np.ndarray,
                    by: Sequence[str] = LEVELS) -> pd.DataFrame:
    """Per group of `by` (any of section, track, name, in that order of nesting): count,
    total_us, self_us, avg_us; largest total first. A track is its id and `track_name`."""
    unknown = [level for level in by if level not in LEVELS]
    if unknown or not by:
        raise ValueError(f"by: one or more of {', '.join(LEVELS)}, not {list(by)!r}")
    events = np.unique(np.asarray(events, np.int64))
    if events.shape[0] and (events[0] < 0 or events[-1] >= profile.n_events):
        raise KeyError(f"event ids must be in 0..{profile.n_events - 1}")
    tracks = profile.track_of(events)
    frame = pd.DataFrame({
        "section": profile.built_tracks["section"].to_numpy()[tracks], "track": tracks,
        "track_name": profile.built_tracks["name"].to_numpy()[tracks],
        "name": profile.display_names[profile.meta[events]],
        "total_us": profile.duration_ps[events] / PS_PER_US,
        "self_us": self_times_ps(profile, events) / PS_PER_US})
    keys = [level for level in LEVELS if level in by]
    if "track" in keys:
        keys.insert(keys.index("track") + 1, "track_name")
    table = frame.groupby(keys, sort=False).agg(count=("total_us", "size"),
                                                total_us=("total_us", "sum"),
                                                self_us=("self_us", "sum")).reset_index()
    table["avg_us"] = table["total_us"] / table["count"]
    table = table.sort_values(["total_us", "count"], ascending=False, kind="stable")
    return table[[c for c in PIVOT_COLUMNS if c in table.columns]].reset_index(drop=True)
