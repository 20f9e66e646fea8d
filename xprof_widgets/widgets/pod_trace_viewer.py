"""The Trace Viewer's answers on a PodProfile: what `xw.TraceViewer(pod_profile)` asks of it.

The view is the Trace Viewer's own. Its hosts are listed one row each, a host's busy time at the
window's resolution; the hosts picked (`hosts`, the view's Hosts menu, or a click on a host's
row) show every section and track. Windows, search (over the picked hosts), details, aggregates
and box selections are answered by the workers holding those hosts (pod/trace.py): the kernel
never holds their events.

    tv = xw.TraceViewer(pod)          # every host one row of busy time
    tv.hosts = pod.hosts[:4]          # four hosts in full
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..pod.profile import PodProfile
from ..pod.trace import PodStrings, PodTrace
from ..trace import encode_window
from ..trace.pivot import LEVELS
from ..trace.search import MAX_HITS, matched_kind, parse_query
from ..trace.window import shown_tracks

POD_HOST = "pod-host"
"""Section kind of a host shown as one row."""


class PodTraceSource:
    """What the Trace Viewer of a PodProfile reads, over the hosts picked (see the module doc);
    trace_viewer.LocalTraceSource answers the same calls for a Profile in the kernel."""

    def __init__(self, pod: PodProfile, host: str | list[str] | None = None):
        self.profile = pod.select(host) if host is not None else pod
        self.trace = PodTrace(self.profile)

    @property
    def index(self) -> PodTrace:
        """The PodTrace answering for the hosts' trace indexes (built on their workers)."""
        return self.trace

    def summary(self, hosts: list[str]) -> dict:
        return pod_summary(self.profile, hosts)

    def new_strings(self) -> PodStrings:
        return PodStrings(self.trace.names)

    def unknown_hosts(self, hosts: list[str]) -> str | None:
        unknown = sorted(set(hosts) - set(self.profile.hosts))
        return f"no host {unknown}; hosts: {', '.join(self.profile.hosts)}" if unknown else None

    def _split(self, tracks: list[int] | None, collapsed: list[int], hosts: list[str]
               ) -> tuple[list[int], list[int], dict[int, str]]:
        """Real tracks, real collapsed sections, and the host rows asked for."""
        n_tracks, n_sections = len(self.profile.tracks), len(self.profile.sections)
        if tracks is None:
            tracks = self.picked_tracks(hosts).tolist()
        rows = {s: self.profile.hosts[s - n_sections] for s in collapsed if s >= n_sections}
        return ([t for t in tracks if t < n_tracks], [s for s in collapsed if s < n_sections],
                rows)

    def picked_tracks(self, hosts: list[str]) -> np.ndarray:
        t = self.profile.tracks
        return t.index[t["host"].isin(hosts).to_numpy()].to_numpy()

    # ---- the view's requests ------------------------------------------------------------------
    def window(self, strings: PodStrings, start_us: float, end_us: float, width_px: int,
               tracks: list[int] | None, collapsed: list[int], flows: bool,
               reset_strings: bool, hosts: list[str]) -> tuple:
        real, sections, rows = self._split(tracks, collapsed, hosts)
        if reset_strings:
            strings.reset()
        window = self.trace.window(start_us, end_us, int(width_px), tracks=real,
                                   collapsed=sections, flows=bool(flows), summaries=rows)
        return encode_window(window, strings)

    def details(self, event: int) -> dict:
        return self.trace.details(int(event))

    def locate(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each event's track, depth and start (ps, on the pod's clock), asked of its host."""
        unique, back = np.unique(events, return_inverse=True)
        rows = self.trace.events_frame(unique)
        return (rows["track"].to_numpy(np.int64)[back], rows["depth"].to_numpy(np.int64)[back],
                np.round(rows["start_us"].to_numpy(np.float64) * 1e6).astype(np.int64)[back])

    def overlay_rows(self, tracks: list[int] | None, collapsed: list[int], hosts: list[str]
                     ) -> tuple[np.ndarray, np.ndarray]:
        """The picked hosts' tracks as a local window shows them; a host shown as one row
        draws its overlay ends on that row (its track past the real ids)."""
        real, sections, rows = self._split(tracks, collapsed, hosts)
        visible = shown_tracks(self.profile, real, sections)
        n = visible.shape[0]
        host = self.trace.host_of_tracks(range(n))
        one_row = np.isin(host, [self.profile.hosts.index(h) for h in rows.values()])
        return visible | one_row, np.where(one_row, n + host, np.arange(n))

    def search(self, pattern: str, regex: bool, case: bool, match: str, hosts: list[str]
               ) -> tuple:
        """The search box's answer over the picked hosts (names of every kind: `match` is the
        local viewer's)."""
        events, start_ps, track, n_hits = self.trace.search(pattern, hosts, bool(regex),
                                                            bool(case), MAX_HITS)
        return ({"n_hits": n_hits, "truncated": events.shape[0] < n_hits},
                [events.astype(np.uint32), start_ps / 1e6, track.astype(np.uint32)])

    def aggregate(self, events: list[int]) -> pd.DataFrame:
        return self.trace.aggregate(events)

    def pivot(self, events: list[int], by: tuple[str, ...] = LEVELS) -> pd.DataFrame:
        return self.trace.pivot(events, by)

    def span_us(self, events: list[int] | np.ndarray) -> tuple[float, float] | None:
        return self.trace.span_us(events)

    def box(self, lo_ps: int, hi_ps: int, rows: list[list[int]]) -> np.ndarray:
        n_tracks = len(self.profile.tracks)
        return self.trace.select_box(lo_ps, hi_ps, [r for r in rows if int(r[0]) < n_tracks])

    # ---- the pandas face ----------------------------------------------------------------------
    def events_frame(self, events: list[int]) -> pd.DataFrame:
        return self.trace.events_frame(events)

    def reveal(self, events: np.ndarray, hosts: list[str]) -> list[str]:
        """The hosts to show so that the events are drawn: those shown and theirs."""
        picked = set(hosts) | {self.profile.hosts[h] for h in
                               np.unique(self.profile.host_of_events(events)).tolist()}
        return [h for h in self.profile.hosts if h in picked]

    def events(self, start: float | None, end: float | None, track: int | str | list | None,
               name: str | None, hosts: list[str]) -> pd.DataFrame:
        """Events overlapping [start, end] (us) on the tracks (default: the picked hosts'),
        name matching; `Profile.events` rows."""
        tracks = self.picked_tracks(hosts) if track is None else self.profile.track_ids(track)
        return self.trace.events(start, end, tracks, name)

    def search_frame(self, pattern: str, regex: bool | None, case: bool, match: str,
                     hosts: list[str]) -> pd.DataFrame:
        """Events of the picked hosts whose name matches, in time order."""
        pattern, regex = parse_query(pattern, regex)
        events, _, _, _ = self.trace.search(pattern, hosts, regex, case, MAX_HITS)
        frame = self.trace.events_frame(events)
        frame["matched"] = matched_kind(frame["name"], pattern, regex, case)
        return frame

    def window_data(self, start_us: float, end_us: float, width_px: int, flows: bool,
                    hosts: list[str]) -> dict[str, pd.DataFrame]:
        return self.trace.window(start_us, end_us, int(width_px),
                                 tracks=self.picked_tracks(hosts), flows=flows).to_frames()

    def label(self, hosts: list[str]) -> str:
        return f" on {len(self.profile.hosts)} hosts ({len(hosts)} shown)"


def pod_summary(pod: PodProfile, picked: list[str]) -> dict:
    """The synced description: the picked hosts' sections and tracks, one row for each other
    host (a section of kind `pod-host` past the real ids, holding one track), in host order."""
    tracks = pod.tracks[pod.tracks["kind"] != "hidden"]
    n_sections, n_tracks = len(pod.sections), len(pod.tracks)
    sections = {"id": [], "name": [], "kind": [], "host": []}
    rows = {"id": [], "section": [], "section_id": [], "name": [], "kind": [], "max_depth": [],
            "n_events": []}
    events = tracks.groupby("host")["n_events"].sum()
    for position, host in enumerate(pod.hosts):
        if host in picked:
            mine = tracks[tracks["host"] == host]
            used = sorted(set(mine["section_id"].tolist()))
            table = pod.sections.loc[used]
            sections["id"] += [int(i) for i in used]
            sections["name"] += table["name"].astype(str).tolist()
            sections["kind"] += table["kind"].astype(str).tolist()
            sections["host"] += table["host"].astype(str).tolist()
            rows["id"] += [int(i) for i in mine.index]
            rows["section"] += mine["section"].astype(str).tolist()
            rows["section_id"] += [int(i) for i in mine["section_id"]]
            rows["name"] += mine["name"].astype(str).tolist()
            rows["kind"] += mine["kind"].astype(str).tolist()
            rows["max_depth"] += [int(i) for i in mine["max_depth"]]
            rows["n_events"] += [int(i) for i in mine["n_events"]]
            continue
        section = n_sections + position
        sections["id"].append(section)
        sections["name"].append(host)
        sections["kind"].append(POD_HOST)
        sections["host"].append(host)
        for key, value in (("id", n_tracks + position), ("section", host),
                           ("section_id", section), ("name", "busy"), ("kind", "slices"),
                           ("max_depth", 0), ("n_events", int(events.get(host, 0)))):
            rows[key].append(value)
    return {"n_events": pod.n_events, "start_us": 0.0,
            "end_us": max(pod.duration_us, 1e-3) if math.isfinite(pod.duration_us) else 1e-3,
            "sections": sections, "tracks": rows,
            "pod": {"hosts": list(pod.hosts), "picked": list(picked)}}
