"""`Window`: one level-of-detail answer, as columns; its pandas face is `to_frames()`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US, Profile


def window_bounds(start_us: float, end_us: float, width_px: int) -> tuple[int, int, int]:
    """(lo, hi) in ps and the width of a window asked for; a ValueError for an empty one."""
    width = int(width_px)
    lo, hi = round(start_us * PS_PER_US), round(end_us * PS_PER_US)
    if width < 1 or hi <= lo:
        raise ValueError(f"a window needs end_us > start_us and width_px >= 1; got "
                         f"[{start_us}, {end_us}] at {width_px} px")
    return lo, hi, width


def shown_tracks(profile: Profile, tracks: list[int] | None, collapsed: list[int]
                 ) -> np.ndarray:
    """Which of the profile's tracks a window shows, in full (`tracks`; None: all) or in a
    collapsed section's row."""
    sections = profile.tracks["section_id"].to_numpy(np.int64)
    shown = np.isin(sections, np.asarray(collapsed, np.int64))
    shown[np.arange(sections.shape[0]) if tracks is None else np.asarray(tracks, np.int64)] = True
    return shown


@dataclass
class Window:
    """What `TraceIndex.window` answers. Times are integer ps after the profile start.

    Slices are grouped by track (in `track_ids` order), then depth, then time. A slice with
    count k > 1 is a run of k events narrower than a pixel; `slice_event` is then its longest.
    """

    profile: Profile
    start_ps: int
    end_ps: int
    width_px: int
    track_ids: np.ndarray  # requested tracks not in a collapsed section, in answer order
    slice_track: np.ndarray
    slice_depth: np.ndarray
    slice_start_ps: np.ndarray
    slice_end_ps: np.ndarray
    slice_count: np.ndarray
    slice_event: np.ndarray
    counter_track: np.ndarray
    counter_t_ps: np.ndarray
    counter_min: np.ndarray
    counter_max: np.ndarray
    counter_last: np.ndarray
    summary_sections: np.ndarray  # collapsed section ids, in answer order
    summary_section: np.ndarray
    summary_start_ps: np.ndarray
    summary_end_ps: np.ndarray
    flow_edges: np.ndarray  # rows of the FlowIndex
    flow_from_event: np.ndarray
    flow_to_event: np.ndarray
    flow_from_track: np.ndarray
    flow_to_track: np.ndarray
    flow_from_depth: np.ndarray
    flow_to_depth: np.ndarray
    flow_from_ps: np.ndarray
    flow_to_ps: np.ndarray
    flow_kind: np.ndarray
    events_in_window: int
    query_ms: float

    @property
    def px_ps(self) -> float:
        """One pixel, in ps: the level-of-detail threshold of this answer."""
        return (self.end_ps - self.start_ps) / self.width_px

    @property
    def slice_name(self) -> np.ndarray:
        """Name id (metadata row) of each slice: its event's, for a run its longest event's."""
        return self.profile.meta[self.slice_event]

    def per_track(self, column: np.ndarray) -> np.ndarray:
        """How many entries of a track column (slice_track, counter_track) each answer track has."""
        pos = np.searchsorted(self.track_ids, column)
        return np.bincount(pos, minlength=self.track_ids.shape[0]).astype(np.int64)

    def per_section(self) -> np.ndarray:
        pos = np.searchsorted(self.summary_sections, self.summary_section)
        return np.bincount(pos, minlength=self.summary_sections.shape[0]).astype(np.int64)

    def to_frames(self) -> dict[str, pd.DataFrame]:
        """slices, counters, flows, summaries as DataFrames (times in us)."""
        names = self.profile.display_names
        slices = pd.DataFrame({
            "track": self.slice_track, "depth": self.slice_depth,
            "start_us": self.slice_start_ps / PS_PER_US, "end_us": self.slice_end_ps / PS_PER_US,
            "name": names[self.slice_name] if self.slice_event.shape[0] else [],
            "count": self.slice_count, "event": self.slice_event})
        counters = pd.DataFrame({
            "track": self.counter_track, "t_us": self.counter_t_ps / PS_PER_US,
            "min": self.counter_min, "max": self.counter_max, "last": self.counter_last})
        flows = pd.DataFrame({
            "from_event": self.flow_from_event, "to_event": self.flow_to_event,
            "from_track": self.flow_from_track, "to_track": self.flow_to_track,
            "from_depth": self.flow_from_depth, "to_depth": self.flow_to_depth,
            "from_us": self.flow_from_ps / PS_PER_US, "to_us": self.flow_to_ps / PS_PER_US,
            "kind": self.flow_kind})
        summaries = pd.DataFrame({
            "section": self.summary_section, "start_us": self.summary_start_ps / PS_PER_US,
            "end_us": self.summary_end_ps / PS_PER_US})
        return {"slices": slices, "counters": counters, "flows": flows, "summaries": summaries}
