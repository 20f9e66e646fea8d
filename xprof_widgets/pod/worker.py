"""What runs on a Dask worker: a host decoded into a `Profile` that stays there, its summary for
the kernel, and `HostServer`, the actor that answers the Trace Viewer's requests from that host's
trace index. Everything returned is plain data in the host's own frame (its times after its first
event, its own event, track, section and name ids); pod/profile.py and pod/trace.py move it into
the whole run's frame.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..profile.clock import START_STAT, TASK_ENVIRONMENT
from ..profile.locate import HostFile
from ..profile.model import PS_PER_US, Profile
from ..profile.open import open_host
from ..profile.ranks import RankFile, trace_rank
from ..trace import trace_index
from ..trace.details import box_events, name_sums
from ..trace.pivot import selection_pivot
from .busy import busy_index

WINDOW_ARRAYS = ("track_ids", "slice_track", "slice_depth", "slice_start_ps", "slice_end_ps",
                 "slice_count", "slice_event", "counter_track", "counter_t_ps", "counter_min",
                 "counter_max", "counter_last", "summary_sections", "summary_section",
                 "summary_start_ps", "summary_end_ps", "flow_edges", "flow_from_event",
                 "flow_to_event", "flow_from_track", "flow_to_track", "flow_from_depth",
                 "flow_to_depth", "flow_from_ps", "flow_to_ps", "flow_kind")
"""The array columns of a `trace.window.Window`, as a host answers them."""


@dataclass(frozen=True)
class HostSummary:
    """What the kernel keeps of a host: its small tables and where it sits on the clock."""

    host: str
    sections: pd.DataFrame  # Profile.sections
    tracks: pd.DataFrame  # Profile.tracks, plus start_ps / end_ps (exact, host frame)
    n_events: int
    n_names: int  # metadata rows
    origin_ps: int  # Profile.origin_ps: the file's clock
    clock_ps: int  # Profile.clock_ps: the wall clock where the file states its start
    states_start: bool  # whether the file states its profile start time
    end_ps: int  # end of the host's last event
    hlo_modules: pd.DataFrame
    warnings: list[str]
    nbytes: int
    derived_tracks: np.ndarray  # bool per track: a row XProf derives (Profile.file_tracks)
    rank_file: RankFile  # what naming a run's ranks reads (profile/ranks.py)


def decode_host(file: HostFile) -> Profile:
    """Opens one host's file here, on the worker, as host `file.host`; the Profile stays in the
    worker's memory."""
    _count_profiles_by_size()
    return open_host(file)


def rename_host(profile: Profile, host: str) -> Profile:
    """The host's Profile under the name the kernel gave it once every rank was known (a trace
    may state its rank after its events, past the bytes the listing reads): a new Profile over
    the same columns but the start times (a Profile moves them in place, so the decoded one, a
    Dask result, is left as it is). Only Chrome traces are renamed: no rows left to derive."""
    trace = profile._hosts[0]
    t0 = int(profile.origin_ps) - trace.base_ns * 1000  # what the Profile took off the starts
    return Profile([replace(trace, host=host, start_ps=trace.start_ps + t0)],
                   source=profile.source)


def summarize_host(profile: Profile) -> HostSummary:
    tracks = profile.tracks.copy()
    first = tracks["first_event"].to_numpy(np.int64)
    end = tracks["end_event"].to_numpy(np.int64)
    stop = profile.start_ps + profile.duration_ps
    tracks["start_ps"] = profile.start_ps[first]
    tracks["end_ps"] = np.array([int(stop[a:b].max()) for a, b in
                                 zip(first.tolist(), end.tolist(), strict=True)], np.int64)
    env = profile.sections.loc[profile.sections["name"] == TASK_ENVIRONMENT, "stats"]
    return HostSummary(
        host=profile.hosts[0], sections=profile.sections, tracks=tracks,
        n_events=profile.n_events, n_names=len(profile.display_names),
        origin_ps=int(profile.origin_ps), clock_ps=int(profile.clock_ps),
        states_start=any(int(s.get(START_STAT) or 0) > 0 for s in env), end_ps=int(stop.max()),
        hlo_modules=profile.hlo_modules, warnings=list(profile.warnings),
        nbytes=profile_nbytes(profile),
        derived_tracks=~tracks.index.isin(profile.file_tracks.index), rank_file=_rank_file(profile))


def _rank_file(profile: Profile) -> RankFile:
    """The host's RankFile: its first event on its file's clock is where the Profile starts."""
    trace = profile._hosts[0]
    first = int(profile.origin_ps) if profile.n_events else None
    return RankFile(trace.source, trace_rank(trace), first)


def profile_nbytes(profile: Profile) -> int:
    """Bytes a decoded host holds: its columns and the file bytes details are read from."""
    arrays = [profile.start_ps, profile.duration_ps, profile.meta, profile.depth]
    for trace in profile._hosts:
        arrays += [a for a in (trace.counter_values, trace.flow_edges, trace.derived)
                   if a is not None]
    data = sum(len(getattr(t.details, "data", b"")) for t in profile._hosts)
    return int(sum(a.nbytes for a in arrays) + data)


def busy_rows(profiles: list[Profile], lo_ps: list[int], hi_ps: list[int], px: float
              ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Busy intervals of each host over its [lo, hi] ps, gaps of `px` or more kept (pod/busy.py):
    one task for every host a worker holds, so a pod's rows cost a task per worker."""
    return [busy_index(p).query(lo, hi, px) for p, lo, hi in
            zip(profiles, lo_ps, hi_ps, strict=True)]


def hlo_bytes(profile: Profile, program_id: int) -> bytes:
    return profile.hlo_proto_bytes(int(program_id))


def _count_profiles_by_size() -> None:
    """Tells the worker's memory accounting a Profile's real size (done here, on the worker, so
    that the kernel never imports Dask for it)."""
    from dask.sizeof import sizeof

    sizeof.register(Profile)(profile_nbytes)


class HostServer:
    """A Dask actor next to one host's Profile: the Trace Viewer's requests answered from its
    trace index (built here on first use), in milliseconds, without a trip through the
    scheduler. Ids and times in and out are the host's own."""

    def __init__(self, profile: Profile):
        self.profile = profile

    @property
    def index(self) -> Any:
        return trace_index(self.profile)

    def warm(self) -> int:
        """Builds the trace index; its size in bytes."""
        return self.index.nbytes

    def window(self, lo_ps: int, hi_ps: int, width_px: int, tracks: list[int],
               collapsed: list[int], flows: bool) -> bytes:
        """The level-of-detail window of the tracks (and collapsed sections), from the trace
        index (built on first use). Pickled here: one buffer travels back faster than Dask's
        framing of some thirty arrays."""
        if tracks or collapsed:  # only a host's rows asked for: no trace index needed
            index = self.index
            window = index.window(lo_ps / PS_PER_US, hi_ps / PS_PER_US, width_px, tracks=tracks,
                                  collapsed=collapsed, flows=flows)
            index.prepare_flows()
            out = {key: value for key, value in vars(window).items()
                   if isinstance(value, np.ndarray)}
            out["events_in_window"] = window.events_in_window
        else:
            out = {key: np.empty(0, np.int64) for key in WINDOW_ARRAYS}
            out["flow_kind"] = np.empty(0, object)
            out["events_in_window"] = 0
        out["slice_name"] = self.profile.meta[out["slice_event"]]
        names = np.unique(out["slice_name"])
        out["names"] = names
        out["texts"] = self.profile.display_names[names].tolist()
        return pickle.dumps(out, protocol=5)

    def search(self, pattern: str, regex: bool, case: bool, limit: int) -> dict[str, Any]:
        found = self.index.search(pattern, regex=regex, case=case, limit=limit)
        return {"event": found.event, "start_ps": self.profile.start_ps[found.event],
                "track": found.track, "n_hits": found.n_hits}

    def details(self, event: int) -> dict[str, Any]:
        return self.index.details(int(event))

    def aggregate(self, events: list[int]) -> pd.DataFrame:
        """Per name: count, total, min and max duration and device time (us) of the events."""
        return name_sums(self.profile, np.unique(np.asarray(events, np.int64)))

    def span_ps(self, events: list[int]) -> tuple[int, int]:
        idx = np.asarray(events, np.int64)
        p = self.profile
        return int(p.start_ps[idx].min()), int((p.start_ps[idx] + p.duration_ps[idx]).max())

    def pivot(self, events: list[int], by: tuple[str, ...]) -> pd.DataFrame:
        return selection_pivot(self.profile, np.asarray(events, np.int64), by)

    def select_box(self, lo_ps: int, hi_ps: int, rows: list[list[int]]) -> np.ndarray:
        """Events of the (track, min depth, max depth) rows overlapping [lo, hi]."""
        return box_events(self.profile, lo_ps, hi_ps, rows)

    def event_rows(self, events: list[int]) -> dict[str, np.ndarray]:
        """`Profile.events_frame` columns of the events, times as exact ps."""
        p = self.profile
        idx = np.asarray(events, np.int64)
        tracks = p.track_of(idx)
        return {"event": idx, "track": tracks,
                "track_name": p.tracks["name"].to_numpy()[tracks],
                "section": p.tracks["section"].to_numpy()[tracks],
                "host": p.tracks["host"].to_numpy()[tracks],
                "name": p.display_names[p.meta[idx]], "start_ps": p.start_ps[idx],
                "duration_ps": p.duration_ps[idx], "depth": p.depth[idx].astype(np.int64)}

    def event_rows_in(self, lo_ps: int | None, hi_ps: int | None, tracks: list[int],
                      name: str | None) -> dict[str, np.ndarray]:
        """`event_rows` of the events of the tracks overlapping [lo, hi], names matching."""
        p = self.profile
        start = None if lo_ps is None else lo_ps / PS_PER_US
        end = None if hi_ps is None else hi_ps / PS_PER_US
        return self.event_rows(p.event_indices(start, end, tracks, name).tolist())

    def event_stats(self, event: int) -> dict[str, Any]:
        return self.profile.event_stats(int(event))
