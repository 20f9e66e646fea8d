"""The Trace Viewer on a PodProfile: what `xw.TraceViewer(pod_profile)` makes.

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
from collections import OrderedDict
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..pod.profile import PodProfile
from ..pod.trace import PodStrings, PodTrace
from ..trace import aggregate_content, encode_window
from ..trace.pivot import LEVELS
from ..trace.search import MAX_HITS, matched_kind, parse_query
from ._base import RequestWidget, handler
from ._table import columnar
from .trace_viewer import MAX_BOX_EVENTS, TraceViewer, event_ids

POD_HOST = "pod-host"
"""Section kind of a host shown as one row."""


class PodTraceViewer(TraceViewer):
    """The Trace Viewer of a PodProfile (see the module docstring); made by `TraceViewer`."""

    hosts = traitlets.List(traitlets.Unicode(), help="The hosts shown in full; the others are "
                           "one row of busy time each.").tag(sync=True)

    def __init__(self, path_or_profile: PodProfile, run: str | None = None,
                 host: str | list[str] | None = None, *, height: int = 600,
                 hosts: list[str] | None = None, **kwargs: Any):
        pod = path_or_profile.select(host) if host is not None else path_or_profile
        picked = list(hosts) if hosts is not None else []
        summary = pod_summary(pod, picked)
        RequestWidget.__init__(self, _summary=summary, window=(0.0, summary["end_us"]),
                               height=height, hosts=picked, **kwargs)
        self.profile = pod
        self.trace = PodTrace(pod)
        self._restore_marks()
        self._sent: OrderedDict[str, PodStrings] = OrderedDict()

    @traitlets.validate("hosts")
    def _check_hosts(self, proposal: dict) -> list[str]:
        known = self.profile.hosts if hasattr(self, "profile") else None
        wanted = list(dict.fromkeys(proposal["value"]))
        unknown = sorted(set(wanted) - set(known)) if known is not None else []
        if unknown:
            raise traitlets.TraitError(f"no host {unknown}; hosts: {', '.join(known)}")
        return wanted

    @traitlets.observe("hosts")
    def _hosts_changed(self, change: dict) -> None:
        if hasattr(self, "profile"):
            self._summary = pod_summary(self.profile, list(change["new"]))

    @property
    def index(self) -> PodTrace:
        """The PodTrace answering for the hosts' trace indexes (built on their workers)."""
        return self.trace

    def _strings(self, view: str) -> PodStrings:
        strings = self._sent.pop(view, None) or PodStrings(self.trace.names)
        self._sent[view] = strings
        while len(self._sent) > 16:
            self._sent.popitem(last=False)
        return strings

    def _split(self, tracks: list[int] | None, collapsed: list[int]
               ) -> tuple[list[int], list[int], dict[int, str]]:
        """Real tracks, real collapsed sections, and the host rows asked for."""
        n_tracks, n_sections = len(self.profile.tracks), len(self.profile.sections)
        if tracks is None:
            tracks = self._picked_tracks().tolist()
        rows = {s: self.profile.hosts[s - n_sections] for s in collapsed if s >= n_sections}
        return ([t for t in tracks if t < n_tracks], [s for s in collapsed if s < n_sections],
                rows)

    def _picked_tracks(self) -> np.ndarray:
        t = self.profile.tracks
        return t.index[t["host"].isin(self.hosts).to_numpy()].to_numpy()

    # ---- requests from the view ---------------------------------------------------------------
    @handler("window")
    def _window(self, start_us: float, end_us: float, width_px: int,
                tracks: list[int] | None = None, collapsed: list[int] | None = None,
                flows: bool = False, reset_strings: bool = False, view: str = "") -> tuple:
        real, sections, rows = self._split(tracks, collapsed or [])
        strings = self._strings(view)
        if reset_strings:
            strings.reset()
        window = self.trace.window(start_us, end_us, int(width_px), tracks=real,
                                   collapsed=sections, flows=bool(flows), summaries=rows)
        return self._with_overlays(encode_window(window, strings),
                                   *self._overlay_rows(tracks, collapsed or []))

    @handler("details")
    def _details(self, event: int) -> dict:
        return {**self.trace.details(int(event)),
                "overlays": self._flow_overlays.of_event(int(event))}

    def _locate(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each event's track, depth and start (ps, on the pod's clock), asked of its host."""
        unique, back = np.unique(events, return_inverse=True)
        rows = self.trace.events_frame(unique)
        return (rows["track"].to_numpy(np.int64)[back], rows["depth"].to_numpy(np.int64)[back],
                np.round(rows["start_us"].to_numpy(np.float64) * 1e6).astype(np.int64)[back])

    def _overlay_rows(self, tracks: list[int] | None, collapsed: list[int]
                      ) -> tuple[np.ndarray, np.ndarray | None]:
        """The picked hosts' tracks as TraceViewer's; a host shown as one row draws its
        overlay ends on that row (its track past the real ids)."""
        real, sections, rows = self._split(tracks, collapsed)
        visible, _ = super()._overlay_rows(real, sections)
        n = visible.shape[0]
        host = self.trace.host_of_tracks(range(n))
        one_row = np.isin(host, [self.profile.hosts.index(h) for h in rows.values()])
        return visible | one_row, np.where(one_row, n + host, np.arange(n))

    @handler("search")
    def _search(self, pattern: str, regex: bool = False, case: bool = False) -> tuple:
        events, start_ps, track, n_hits = self.trace.search(pattern, self.hosts, bool(regex),
                                                            bool(case), MAX_HITS)
        return ({"n_hits": n_hits, "truncated": events.shape[0] < n_hits},
                [events.astype(np.uint32), start_ps / 1e6, track.astype(np.uint32)])

    @handler("aggregate")
    def _aggregate(self, events: list[int]) -> dict:
        content = aggregate_content(self.trace.aggregate(events))
        return self._with_span(content, events)

    @handler("pivot")
    def _pivot(self, events: list[int]) -> dict:
        return self._with_span({"rows": columnar(self.trace.pivot(events))}, events)

    def _span_us(self, events: list[int]) -> tuple[float, float] | None:
        return self.trace.span_us(events)

    @handler("select_box")
    def _select_box(self, start_us: float, end_us: float, rows: list[list[int]],
                    add: list[int] | None = None) -> dict:
        lo, hi = round(start_us * 1e6), round(end_us * 1e6)
        n_tracks = len(self.profile.tracks)
        found = np.unique(np.concatenate([
            np.asarray(add or [], np.int64),
            self.trace.select_box(lo, hi, [r for r in rows if int(r[0]) < n_tracks])]))
        truncated = found.shape[0] > MAX_BOX_EVENTS
        found = found[:MAX_BOX_EVENTS]
        span = self.trace.span_us(found) if found.shape[0] else None
        if span is None:
            return {"events": [], "truncated": False, "start_us": start_us, "end_us": end_us}
        return {"events": found.tolist(), "truncated": bool(truncated), "start_us": span[0],
                "end_us": span[1]}

    # ---- the pandas face ----------------------------------------------------------------------
    @property
    def selection(self) -> pd.DataFrame:
        """The events selected in the view, as `Profile.events` rows."""
        return self.trace.events_frame(self.selected_events)

    def selection_pivot(self, by: tuple[str, ...] = LEVELS) -> pd.DataFrame:
        """The selected events grouped by section, track and name (see TraceViewer)."""
        return self.trace.pivot(self.selected_events, by)

    def show(self, frame: pd.DataFrame, column: str | None = None) -> None:
        """Selects the events of a DataFrame and moves the view to them (see TraceViewer)."""
        idx = event_ids(frame, column, self.profile.n_events)
        if not idx.shape[0]:
            self.selected_events = []
            return
        picked = set(self.hosts) | {self.profile.hosts[h] for h in
                                    np.unique(self.profile.host_of_events(idx)).tolist()}
        self.hosts = [h for h in self.profile.hosts if h in picked]
        start, end = self.trace.span_us(idx)
        pad = max((end - start) * 0.05, 1.0)
        self.window = (start - pad, end + pad)
        self.selected_events = idx.tolist()

    def events(self, start: float | None = None, end: float | None = None,
               track: int | str | list | None = None, name: str | None = None) -> pd.DataFrame:
        """Events overlapping [start, end] (us) on the tracks (default: the picked hosts'),
        name matching; `Profile.events` rows."""
        tracks = self._picked_tracks() if track is None else self.profile.track_ids(track)
        return self.trace.events(start, end, tracks, name)

    def search(self, pattern: str, regex: bool | None = None, case: bool = False
               ) -> pd.DataFrame:
        """Events of the picked hosts whose name matches, in time order (the query as the
        search box reads it: `/.../` is a regular expression)."""
        pattern, regex = parse_query(pattern, regex)
        events, _, _, _ = self.trace.search(pattern, self.hosts, regex, case, MAX_HITS)
        frame = self.trace.events_frame(events)
        frame["matched"] = matched_kind(frame["name"], pattern, regex, case)
        return frame

    def window_data(self, start_us: float, end_us: float, width_px: int = 1600,
                    flows: bool = False) -> dict[str, pd.DataFrame]:
        """What the view draws for the picked hosts over [start_us, end_us] (see TraceViewer)."""
        return self.trace.window(start_us, end_us, int(width_px), tracks=self._picked_tracks(),
                                 flows=flows).to_frames()

    def __repr__(self) -> str:
        start, end = self.window
        return (f"<TraceViewer {self.profile.source!r} on {len(self.profile.hosts)} hosts "
                f"({len(self.hosts)} shown) window=({start:.3f}, {end:.3f}) us "
                f"selected={len(self.selected_events)}>")


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
