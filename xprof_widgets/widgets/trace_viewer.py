"""`TraceViewer`: XProf's trace viewer in a notebook cell.

The widget syncs only a small summary of the profile (its tracks and sections), the visible time
window and the selected event ids. The view asks for everything else on request, in the wire
format of docs/dev/trace_protocol.md: windows at the view's pixel resolution, details, search
hits, aggregates. The trace index is built on the first request, after the widget renders.

    tv = xw.TraceViewer("/logs/run")
    tv.window = (1_000, 2_500)        # microseconds after the profile start: the view moves
    tv.selection                      # DataFrame of the events selected in the view

The same class serves a PodProfile (hosts on Dask workers): what it asks of the profile goes
through a trace source, `LocalTraceSource` here or `PodTraceSource` (pod_trace_viewer.py).
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..analysis.kineto.trace_diff import is_kineto
from ..analysis.source import event_stack, source_answer
from ..opening import is_pod, open_profile
from ..profile.model import PS_PER_US, Profile
from ..trace import (
    StringTracker,
    TraceIndex,
    aggregate_content,
    answer_search,
    answer_window,
    trace_index,
)
from ..trace.details import box_events
from ..trace.marks import (
    TraceMarks,
    bookmark_records,
    bookmarks_from_view,
    free_name,
    keep,
    kept,
)
from ..trace.order import display_order
from ..trace.overlay import FlowOverlay, Overlays, encode_overlay, parse_edges
from ..trace.pivot import LEVELS, selection_pivot
from ..trace.window import shown_tracks
from ._base import RequestWidget, handler
from ._table import columnar

MAX_BOX_EVENTS = 50_000
"""Most events a box selection syncs (its list of ids travels to the view and back)."""
_EVENT_COLUMNS = ("event", "id", "slice_id", "arg_set_id")
"""Columns `show` reads event ids from, in this order."""
_MAX_VIEWS = 16
"""Views whose sent names are remembered (one per display of the widget)."""


class TraceViewer(RequestWidget):
    """A zoomable timeline of a profile's events, one section per device core and host.

    Args:
        path_or_profile: a logdir, run directory, `.xplane.pb` / `.trace.json.gz` file, fsspec
            URL, or a `Profile` from `xprof_widgets.open_profile`.
        run, host: which run and host(s) to open (default: the newest run, every host).
        height: the timeline's height in pixels (it is shorter when the tracks need less);
            the handle under the timeline changes it, and `height` follows.
    """

    _bundle = "trace_viewer.js"

    window = traitlets.Tuple(traitlets.Float(), traitlets.Float(),
                             help="Visible time window (start_us, end_us) after the profile "
                                  "start; setting it moves the view.").tag(sync=True)
    selected_events = traitlets.List(traitlets.Int(),
                                     help="Global ids of the events selected in the view."
                                     ).tag(sync=True)
    height = traitlets.Int(600, help="Timeline height in pixels (the view's drag handle sets "
                                     "it).").tag(sync=True)
    _summary = traitlets.Dict().tag(sync=True)
    pinned_tracks = traitlets.List(traitlets.Int(), help="Track ids drawn above the others, in "
                                   "this order, staying there while the tracks scroll (`pin`)."
                                   ).tag(sync=True)
    hidden_tracks = traitlets.List(traitlets.Int(), help="Track ids not drawn (`hide`; the "
                                   "view's Tracks menu lists them).").tag(sync=True)
    _bookmarks = traitlets.List(traitlets.Dict(), help="{name, start_us, end_us} by time: "
                                "`bookmarks`.").tag(sync=True)
    hosts = traitlets.List(traitlets.Unicode(), help="A PodProfile's hosts shown in full; the "
                           "others are one row of busy time each.").tag(sync=True)
    _overlays = traitlets.List(traitlets.Dict(), help="{name, edges, shown, version} of each "
                               "flow overlay: `overlays`.").tag(sync=True)

    def __init__(self, path_or_profile: str | os.PathLike | Profile, run: str | None = None,
                 host: str | list[str] | None = None, *, height: int = 600,
                 hosts: list[str] | None = None, **kwargs: Any):
        profile = open_profile(path_or_profile, run=run, host=host)
        self._source = trace_source(profile, host, self._report_progress)
        self.profile = self._source.profile
        picked = list(hosts or [])
        summary = self._source.summary(picked)
        super().__init__(_summary=summary, window=(summary["start_us"], summary["end_us"]),
                         height=height, hosts=picked, **kwargs)
        self._restore_marks()
        self._sent: OrderedDict[str, Any] = OrderedDict()

    def _release(self) -> None:
        super()._release()
        self.__dict__.pop("_sent", None)  # the names each view was sent
        self.__dict__.pop("_source", None)  # and what held the profile for it

    # ---- the index --------------------------------------------------------------------------
    @property
    def index(self) -> TraceIndex | Any:
        """The trace index, built on first use (the view's first request, or a query here); a
        pod's PodTrace, which asks each host's index on its worker."""
        return self._source.index

    def _report_progress(self, fraction: float) -> None:
        # Runs inside the view's first request, so the message reaches it while the index builds.
        self.send({"kind": "progress", "text": f"Indexing the trace: {fraction:.0%}"})

    @traitlets.validate("window")
    def _check_window(self, proposal: dict) -> tuple[float, float]:
        start, end = (float(v) for v in proposal["value"])
        if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
            raise traitlets.TraitError(
                f"window must be (start_us, end_us) with start < end, got {proposal['value']!r}")
        return start, end

    @traitlets.validate("hosts")
    def _check_hosts(self, proposal: dict) -> list[str]:
        wanted = list(dict.fromkeys(proposal["value"]))
        problem = self._source.unknown_hosts(wanted) if "_source" in self.__dict__ else None
        if problem:
            raise traitlets.TraitError(problem)
        return wanted

    @traitlets.observe("hosts")
    def _hosts_changed(self, change: dict) -> None:
        if "_source" in self.__dict__:
            self._summary = self._source.summary(list(change["new"]))

    def _strings(self, view: str) -> Any:
        """The names sent to one view (each display of the widget is a view of its own)."""
        strings = self._sent.pop(view, None) or self._source.new_strings()
        self._sent[view] = strings
        while len(self._sent) > _MAX_VIEWS:
            self._sent.popitem(last=False)
        return strings

    # ---- requests from the view ---------------------------------------------------------------
    @handler("window")
    def _window(self, start_us: float, end_us: float, width_px: int,
                tracks: list[int] | None = None, collapsed: list[int] | None = None,
                flows: bool = False, reset_strings: bool = False, view: str = "") -> tuple:
        answer = self._source.window(self._strings(view), start_us, end_us, int(width_px),
                                     tracks, collapsed or [], bool(flows), bool(reset_strings),
                                     list(self.hosts))
        return self._with_overlays(answer, *self._overlay_rows(tracks, collapsed or []))

    @handler("details")
    def _details(self, event: int) -> dict:
        return {**self._source.details(int(event)),
                "overlays": self._flow_overlays.of_event(int(event))}

    @handler("source")
    def _source_lines(self, event: int, frame: int = 0) -> dict:
        """The source stack of the XLA op an event ran and the lines around one frame."""
        return source_answer(event_stack(self.profile, int(event)), frame)

    @handler("search")
    def _search(self, pattern: str, regex: bool = False, case: bool = False,
                match: str = "any") -> tuple:
        return self._source.search(pattern, bool(regex), bool(case), str(match),
                                   list(self.hosts))

    @handler("aggregate")
    def _aggregate(self, events: list[int]) -> dict:
        """The protocol's rows, plus the span of the events (for the view's `m` and `f`)."""
        return self._with_span(aggregate_content(self._source.aggregate(events)), events)

    @handler("pivot")
    def _pivot(self, events: list[int]) -> dict:
        """The selection's pivot by section, track and name (columnar), and its span."""
        return self._with_span({"rows": columnar(self._source.pivot(events))}, events)

    def _with_span(self, content: dict, events: list[int]) -> dict:
        span = self._span_us(events)
        if span is not None:
            content["start_us"], content["end_us"] = span
        return content

    @handler("select_box")
    def _select_box(self, start_us: float, end_us: float, rows: list[list[int]],
                    add: list[int] | None = None) -> dict:
        """Events of the given (track, min depth, max depth) rows overlapping [start, end]."""
        lo, hi = round(start_us * PS_PER_US), round(end_us * PS_PER_US)
        found = np.unique(np.concatenate([np.asarray(add or [], np.int64),
                                          self._source.box(lo, hi, rows)]))
        truncated = found.shape[0] > MAX_BOX_EVENTS
        found = found[:MAX_BOX_EVENTS]
        span = self._source.span_us(found) if found.shape[0] else None
        if span is None:
            return {"events": [], "truncated": False, "start_us": start_us, "end_us": end_us}
        return {"events": found.tolist(), "truncated": bool(truncated), "start_us": span[0],
                "end_us": span[1]}

    # ---- the pandas face ----------------------------------------------------------------------
    @property
    def selection(self) -> pd.DataFrame:
        """The events selected in the view (click, Ctrl-click, box), as `Profile.events` rows."""
        return self._source.events_frame(self.selected_events)

    def selection_pivot(self, by: tuple[str, ...] = LEVELS) -> pd.DataFrame:
        """The selected events grouped by section, track and name (or those of `by`): count,
        total_us, self_us (minus what is nested one level deeper), avg_us; as the details panel
        shows after a box selection."""
        return self._source.pivot(self.selected_events, by)

    def show(self, frame: pd.DataFrame, column: str | None = None) -> None:
        """Selects the events of a DataFrame (its `event`, `id`, `slice_id` or `arg_set_id`
        column, or `column`: e.g. a `Profile.sql` or `search` result) and moves the view to
        them. At most MAX_BOX_EVENTS are selected."""
        idx = event_ids(frame, column, self.profile.n_events)
        if not idx.shape[0]:
            self.selected_events = []
            return
        self.hosts = self._source.reveal(idx, list(self.hosts))
        start, end = self._source.span_us(idx)
        pad = max((end - start) * 0.05, 1.0)
        self.window = (start - pad, end + pad)
        self.selected_events = idx.tolist()

    def events(self, start: float | None = None, end: float | None = None,
               track: int | str | list | None = None, name: str | None = None) -> pd.DataFrame:
        """Events overlapping [start, end] (us) on the tracks (a pod's: by default the shown
        hosts'), name matching (`Profile.events`)."""
        return self._source.events(start, end, track, name, list(self.hosts))

    def search(self, pattern: str, regex: bool | None = None, case: bool = False,
               match: str = "any") -> pd.DataFrame:
        """Events whose name (shown or full, e.g. HLO text) matches, over the whole trace, in
        time order, as the search box reads the query: a substring, `/.../` a regular expression
        (or say `regex`). Column `matched` says which name matched; `match="name"` or `"text"`
        keeps one kind (a pod's search, over its shown hosts, lists every kind)."""
        return self._source.search_frame(pattern, regex, case, match, list(self.hosts))

    def window_data(self, start_us: float, end_us: float, width_px: int = 1600,
                    flows: bool = False) -> dict[str, pd.DataFrame]:
        """What the view draws for [start_us, end_us] at `width_px` pixels: the index's
        `slices`, `counters`, `flows` and `summaries` tables (merged runs have count > 1)."""
        return self._source.window_data(start_us, end_us, int(width_px), flows,
                                        list(self.hosts))

    # ---- pinned and hidden tracks, bookmarks (kept per profile: trace/marks.py) -------------
    def pin(self, track: int | str | list) -> None:
        """Draws the tracks (an id, a name as `events` takes it, or a list) above the others,
        where they stay while the rest scroll; after those pinned before."""
        self._set_marks(self._marks.pin(self._track_list(track)))

    def unpin(self, track: int | str | list | None = None) -> None:
        """Puts pinned tracks back in their sections (every one when `track` is None)."""
        ids = None if track is None else self._track_list(track)
        self._set_marks(self._marks.unpin(ids))

    def hide(self, track: int | str | list) -> None:
        """Stops drawing the tracks (`unhide` or the view's Tracks menu brings them back)."""
        self._set_marks(self._marks.hide(self._track_list(track)))

    def unhide(self, track: int | str | list | None = None) -> None:
        """Draws hidden tracks again (every one when `track` is None)."""
        ids = None if track is None else self._track_list(track)
        self._set_marks(self._marks.unhide(ids))

    def bookmark(self, name: str | None = None,
                 at: float | tuple[float, float] | None = None) -> str:
        """Adds a bookmark (a name used before moves it) at `at` µs after the profile start, or
        over an (start_us, end_us) span; None: the span of the selected events, else the middle
        of the window. Returns its name (`bookmark N` when none is given)."""
        if at is None:
            span = self._span_us(self.selected_events) if self.selected_events else None
            start, end = span if span is not None else (sum(self.window) / 2,) * 2
        elif isinstance(at, (tuple, list)):
            start, end = (float(v) for v in at)
        else:
            start = end = float(at)
        name = free_name(self._marks.names()) if name is None else str(name)
        self._set_marks(self._marks.bookmark(name, start, end))
        return name

    def remove_bookmark(self, name: str) -> None:
        self._set_marks(self._marks.remove_bookmark(name))

    def goto(self, name: str) -> None:
        """Moves the view to a bookmark: a span fills the view, a time is centred in it (the
        zoom kept), as `[` and `]` in the view do."""
        _, start, end = self._marks.find(name)
        if end > start:
            pad = max((end - start) * 0.05, 1e-3)
            self.window = (start - pad, end + pad)
        else:
            half = (self.window[1] - self.window[0]) / 2
            self.window = (start - half, start + half)

    @property
    def bookmarks(self) -> pd.DataFrame:
        """The bookmarks by time: name, start_us, end_us (end_us == start_us for a time)."""
        return self._marks.frame()

    @property
    def _marks(self) -> TraceMarks:
        return TraceMarks(tuple(self.pinned_tracks), tuple(self.hidden_tracks),
                          tuple((b["name"], b["start_us"], b["end_us"]) for b in self._bookmarks))

    def _set_marks(self, marks: TraceMarks) -> None:
        with self.hold_sync():
            self.pinned_tracks = list(marks.pinned)
            self.hidden_tracks = list(marks.hidden)
            self._bookmarks = bookmark_records(marks.bookmarks)

    def _span_us(self, events: list[int]) -> tuple[float, float] | None:
        """(first start, last end) of the events in µs after the profile start."""
        return self._source.span_us(events)

    def _restore_marks(self) -> None:
        """Takes the marks kept for this profile (another viewer's, or an earlier run's)."""
        self._set_marks(kept(self.profile))

    def _track_list(self, track: int | str | list) -> list[int]:
        """Track ids of `track` in the order given (a name: every track of that name)."""
        items = track if isinstance(track, (list, tuple)) else [track]
        return [int(t) for item in items for t in self.profile.track_ids(item)]

    @traitlets.validate("pinned_tracks", "hidden_tracks")
    def _check_tracks(self, proposal: dict) -> list[int]:
        ids = [int(t) for t in dict.fromkeys(proposal["value"])]
        if "profile" in self.__dict__:
            unknown = sorted(set(ids) - set(self.profile.tracks.index.tolist()))
            if unknown:
                raise traitlets.TraitError(
                    f"{proposal['trait'].name}: no track {unknown} in {self.profile.source!r} "
                    f"(ids are 0..{len(self.profile.tracks) - 1})")
        return ids

    @traitlets.validate("_bookmarks")
    def _check_bookmarks(self, proposal: dict) -> list[dict]:
        try:
            return bookmark_records(bookmarks_from_view(proposal["value"]))
        except (TypeError, ValueError) as exc:
            raise traitlets.TraitError(str(exc)) from None

    @traitlets.observe("pinned_tracks", "hidden_tracks", "_bookmarks")
    def _keep_marks(self, _change: dict) -> None:
        if "profile" in self.__dict__:  # not while closing, nor before the profile is known
            keep(self.profile, self._marks)

    # ---- flow overlays: edges an analysis lays over the view (trace/overlay.py) -------------
    def overlay_flows(self, name: str, edges: pd.DataFrame, shown: bool = True) -> None:
        """Lays a named set of edges over the view, drawn as flow arrows (in the overlay's own
        colour, whether or not the view's Flow events are on). `edges`: columns `src` and `dst`,
        global event ids (on a pod too, across hosts), and optionally `label`, which the
        details of either end show with the overlay's name. A name laid before is replaced.
        Only the edges meeting the view's window travel to it. Analyses lay their links this
        way: `DistributedView.link_collectives`, and a critical path's edges
        (docs/trace_viewer.md, "Flow overlays")."""
        src, dst, codes, labels = parse_edges(name, edges, self.profile.n_events,
                                              str(self.profile.source))
        self._flow_overlays.add(FlowOverlay(str(name), src, dst, codes, labels, self._locate),
                                shown)
        self._overlays = self._flow_overlays.synced()

    def show_overlay(self, name: str, shown: bool = True) -> None:
        """Draws (or, with shown=False, stops drawing) an overlay laid before."""
        self._flow_overlays.show(name, shown)
        self._overlays = self._flow_overlays.synced()

    def remove_overlay(self, name: str) -> None:
        """Takes an overlay off the view (a KeyError for a name not laid)."""
        self._flow_overlays.remove(name)
        self._overlays = self._flow_overlays.synced()

    @property
    def overlays(self) -> pd.DataFrame:
        """The overlays laid: name, edges, shown, labels (distinct), in the order laid."""
        return self._flow_overlays.frame()

    def overlay_edges(self, name: str) -> pd.DataFrame:
        """One overlay's edges by time: overlay, label, from/to event, track and us."""
        return self._flow_overlays.get(name).frame()

    @traitlets.observe("_overlays")
    def _overlays_from_view(self, change: dict) -> None:
        """The view's overlay checkboxes: the `shown` flags it sends are the kernel's."""
        for entry in change["new"]:
            if entry.get("name") in self._flow_overlays.by_name:
                self._flow_overlays.shown[entry["name"]] = bool(entry.get("shown"))

    @property
    def _flow_overlays(self) -> Overlays:
        return self.__dict__.setdefault("_overlay_store", Overlays())

    def _locate(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each event's track, depth and start (ps), where an overlay draws its ends."""
        return self._source.locate(events)

    def _overlay_rows(self, tracks: list[int] | None, collapsed: list[int]
                      ) -> tuple[np.ndarray, np.ndarray | None]:
        """(mask of the tracks a window shows, in full or in a collapsed section's row; the row
        each track is drawn on, None: its own)."""
        return self._source.overlay_rows(tracks, collapsed, list(self.hosts))

    def _with_overlays(self, answer: tuple, visible: np.ndarray, remap: np.ndarray | None
                       ) -> tuple:
        """A window answer with the shown overlays' edges in it (encode_overlay)."""
        content, buffers = answer
        if not any(self._flow_overlays.shown.values()):
            return answer
        lo = round(content["start_us"] * PS_PER_US)
        hi = round(content["end_us"] * PS_PER_US)
        edges = self._flow_overlays.window(lo, hi, (hi - lo) / content["width_px"], visible)
        extra, more = encode_overlay(edges, lo, hi, remap)
        return {**content, **extra}, [*buffers, *more]

    def __repr__(self) -> str:
        start, end = self.window
        return (f"<TraceViewer {self.profile.source!r}{self._source.label(list(self.hosts))} "
                f"window=({start:.3f}, {end:.3f}) us selected={len(self.selected_events)}>")


def trace_source(profile: Any, host: str | list[str] | None,
                 progress: Callable[[float], None]) -> Any:
    """What a Trace Viewer reads its profile through: a PodProfile's hosts live on Dask workers
    (pod_trace_viewer.PodTraceSource asks them), a Profile is here (LocalTraceSource)."""
    if is_pod(profile):
        from .pod_trace_viewer import PodTraceSource

        return PodTraceSource(profile, host)
    return LocalTraceSource(profile, progress)


class LocalTraceSource:
    """What the Trace Viewer of a Profile in the kernel reads: its trace index and columns.
    A local profile has no hosts to pick (`hosts` stays empty)."""

    def __init__(self, profile: Profile, progress: Callable[[float], None]):
        self.profile = profile
        self._progress = progress

    @property
    def index(self) -> TraceIndex:
        return trace_index(self.profile, self._progress)

    def summary(self, hosts: list[str]) -> dict:
        return summarize(self.profile)

    def new_strings(self) -> StringTracker:
        return StringTracker(self.profile)

    def unknown_hosts(self, hosts: list[str]) -> str | None:
        return (f"hosts: {self.profile.source!r} is not a PodProfile; its hosts are all shown"
                if hosts else None)

    def window(self, strings: StringTracker, start_us: float, end_us: float, width_px: int,
               tracks: list[int] | None, collapsed: list[int], flows: bool,
               reset_strings: bool, hosts: list[str]) -> tuple:
        index = self.index
        answer = answer_window(index, strings, start_us, end_us, width_px, tracks=tracks,
                               collapsed=collapsed, flows=flows, reset_strings=reset_strings)
        index.prepare_flows()  # after the first picture: details and arrows need them next
        return answer

    def details(self, event: int) -> dict:
        return self.index.details(event)

    def locate(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p = self.profile
        return (p.track_of(events).astype(np.int64), p.depth[events].astype(np.int64),
                p.start_ps[events].astype(np.int64))

    def overlay_rows(self, tracks: list[int] | None, collapsed: list[int], hosts: list[str]
                     ) -> tuple[np.ndarray, np.ndarray | None]:
        return shown_tracks(self.profile, tracks, collapsed), None

    def search(self, pattern: str, regex: bool, case: bool, match: str, hosts: list[str]
               ) -> tuple:
        return answer_search(self.index, pattern, regex=regex, case=case, match=match)

    def aggregate(self, events: list[int]) -> pd.DataFrame:
        return self.index.aggregate(events)

    def pivot(self, events: list[int], by: tuple[str, ...] = LEVELS) -> pd.DataFrame:
        return selection_pivot(self.profile, np.asarray(events, np.int64), by)

    def span_us(self, events: list[int] | np.ndarray) -> tuple[float, float] | None:
        idx = np.asarray(events, np.int64)
        if not idx.shape[0]:
            return None
        p = self.profile
        return (int(p.start_ps[idx].min()) / PS_PER_US,
                int((p.start_ps[idx] + p.duration_ps[idx]).max()) / PS_PER_US)

    def box(self, lo_ps: int, hi_ps: int, rows: list[list[int]]) -> np.ndarray:
        return box_events(self.profile, lo_ps, hi_ps, rows)

    def events_frame(self, events: list[int]) -> pd.DataFrame:
        return self.profile.events_frame(np.asarray(events, np.int64))

    def reveal(self, events: np.ndarray, hosts: list[str]) -> list[str]:
        return hosts

    def events(self, start: float | None, end: float | None, track: int | str | list | None,
               name: str | None, hosts: list[str]) -> pd.DataFrame:
        return self.profile.events(start, end, track, name)

    def search_frame(self, pattern: str, regex: bool | None, case: bool, match: str,
                     hosts: list[str]) -> pd.DataFrame:
        return self.index.search(pattern, regex=regex, case=case, match=match).frame()

    def window_data(self, start_us: float, end_us: float, width_px: int, flows: bool,
                    hosts: list[str]) -> dict[str, pd.DataFrame]:
        return self.index.window(start_us, end_us, width_px, flows=flows).to_frames()

    def label(self, hosts: list[str]) -> str:
        return ""


def event_ids(frame: pd.DataFrame, column: str | None, n_events: int) -> np.ndarray:
    """The sorted event ids of a frame's `column` (or first event-id column), at most
    MAX_BOX_EVENTS of them."""
    names = [column] if column else [c for c in _EVENT_COLUMNS if c in frame.columns][:1]
    if not names or names[0] not in frame.columns:
        have = ", ".join(map(str, frame.columns))
        raise KeyError(f"no event column in the frame (columns: {have}); expected one of "
                       f"{', '.join(_EVENT_COLUMNS)} or column=")
    idx = np.unique(pd.to_numeric(frame[names[0]], errors="coerce").dropna().to_numpy(np.int64))
    if idx.shape[0] and (idx[0] < 0 or idx[-1] >= n_events):
        raise KeyError(f"event ids must be in 0..{n_events - 1}")
    return idx[:MAX_BOX_EVENTS]


def summarize(profile: Profile) -> dict:
    """The synced description of a profile: sections and tracks (columnar), its time range."""
    tracks = profile.tracks[profile.tracks["kind"] != "hidden"]  # as XProf: not drawn
    # a PyTorch trace's GPU rows first, ranks in order (trace/order.py); XProf's order otherwise
    tracks = tracks.iloc[display_order(tracks, profile.hosts, is_kineto(profile))]
    used = sorted(set(tracks["section_id"].tolist()))
    sections = profile.sections.loc[used]
    return {
        "n_events": profile.n_events,
        "start_us": 0.0,
        "end_us": max(profile.duration_us, 1e-3),
        "sections": {
            "id": [int(i) for i in used],
            "name": sections["name"].astype(str).tolist(),
            "kind": sections["kind"].astype(str).tolist(),
            "host": sections["host"].astype(str).tolist(),
        },
        "tracks": {
            "id": [int(i) for i in tracks.index],
            "section": tracks["section"].astype(str).tolist(),
            "section_id": [int(i) for i in tracks["section_id"]],
            "name": tracks["name"].astype(str).tolist(),
            "kind": tracks["kind"].astype(str).tolist(),
            "max_depth": [int(i) for i in tracks["max_depth"]],
            "n_events": [int(i) for i in tracks["n_events"]],
        },
    }

