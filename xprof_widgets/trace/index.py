"""The in-kernel trace index: any window at any zoom, answered in time bounded by pixels.

Level-of-detail contract (docs/dev/trace_protocol.md): per track and depth, among the events
overlapping the window, every event at least one pixel (px) wide is sent as itself, narrower
ones merge into runs carrying a count, and a gap of a pixel or more is never covered.

Design. Events at one depth of one track never overlap, so a (track, depth) "segment" sorted
by start has sorted ends too. For two consecutive events of a segment let
v = max(dur_a, dur_b, gap between them). The contract merges them exactly when v < px. So a
window's answer is its segment events cut wherever v >= px, each piece a run (a piece of one
event is that event).

Level L (L >= 1) keeps the cuts with v >= 4**L ps and, for each item between two kept cuts,
its longest event. A query at pixel size px reads the coarsest level with 4**L <= px and
re-merges its items at px: between two items it cuts iff the v of the cut separating them is
>= px. This is exact: inside an item every v is < 4**L <= px, so no cut at px falls inside an
item, and every cut at px (v >= px >= 4**L) separates two items. Items clipped by the window
edges are reduced to their events inside the window (their longest found by a block
range-maximum). An answer holds at most about 3 runs per pixel per segment: every run but the
last ends at a wide event (at most one per pixel) or a wide gap.

A segment stores a level only while its item count at least halves (and exceeds MIN_ITEMS),
so the levels together hold at most as many items as events (8 bytes each); the event order
`perm` adds 4 bytes per event.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US, Profile
from ..profile.threads import balanced, decode_threads, run_parts
from . import _lod
from .counters import CounterIndex
from .details import aggregate, details
from .flows import KINDS, FlowIndex
from .search import MAX_HITS, SearchResult, search
from .window import Window, window_bounds

_RMQ_LEVELS = 3


def _parts(ids: np.ndarray, weights: np.ndarray, threads: int) -> list[np.ndarray]:
    """`ids` in up to `threads` groups of about equal weight (events), each ascending."""
    groups = balanced(weights.tolist(), threads) if ids.shape[0] else [[]]
    return [ids[np.asarray(group, np.int64)] for group in groups]


def _on_parts(kernel: Callable, before: tuple, parts: list[np.ndarray], after: tuple) -> None:
    """kernel(*before, part, *after) for every part, one thread each (run_parts)."""
    run_parts(lambda part: kernel(*before, part, *after), parts)


def trace_index(profile: Profile, progress: Callable[[float], None] | None = None
                ) -> TraceIndex:
    """The profile's `TraceIndex`, built on first use and kept on the profile."""
    profile.derive_rows()  # before the index is kept: making them drops what the profile kept
    return profile.memo(("trace_index",), lambda: TraceIndex(profile, progress))


class TraceIndex:
    """Per-(track, depth) event order plus coarser levels; see the module docstring."""

    def __init__(self, profile: Profile, progress: Callable[[float], None] | None = None):
        started = time.perf_counter()
        report = progress or (lambda fraction: None)
        report(0.0)
        self.profile = profile
        tracks = profile.tracks
        self.track_section = tracks["section_id"].to_numpy(np.int64)
        is_slices = (tracks["kind"] == "slices").to_numpy()
        self.is_counter = (tracks["kind"] == "counter").to_numpy()
        first = tracks["first_event"].to_numpy(np.int64)
        end = tracks["end_event"].to_numpy(np.int64)
        self.track_depths = np.where(is_slices, tracks["max_depth"].to_numpy(np.int64) + 1, 0)
        self.track_segment = np.cumsum(self.track_depths) - self.track_depths
        n_seg = int(self.track_depths.sum())
        self.seg_track = np.repeat(np.arange(len(tracks)), self.track_depths)
        self.seg_depth = np.arange(n_seg) - np.repeat(self.track_segment, self.track_depths)

        n = int((end - first)[is_slices].sum())
        pos = np.int32 if n < np.iinfo(np.int32).max else np.int64
        # The kernels run per track or segment on worker threads (they release the GIL), on
        # disjoint parts of the same arrays, so the result is the one-thread result.
        threads = decode_threads()
        slices = np.flatnonzero(is_slices)
        track_parts = _parts(slices, (end - first)[slices], threads)
        self.seg_start = np.zeros(n_seg + 1, np.int64)
        common = (first, end, self.track_segment, profile.depth)
        _on_parts(_lod.count_segments, common, track_parts, (self.seg_start,))
        np.cumsum(self.seg_start, out=self.seg_start)
        fill = self.seg_start[:-1].copy()
        self.perm = np.empty(n, pos)
        _on_parts(_lod.place_segments, common, track_parts, (fill, self.perm))
        del fill
        report(0.3)
        start, dur = profile.start_ps, profile.duration_ps
        seg_size = np.diff(self.seg_start)
        seg_parts = _parts(np.arange(n_seg), seg_size, threads)
        cut_level = np.empty(n, np.int8)
        hist = np.zeros((n_seg, _lod.N_LEVELS), np.int64)
        _on_parts(_lod.cut_levels, (self.perm, self.seg_start, start, dur), seg_parts,
                  (cut_level, hist))
        report(0.6)
        items = np.where(seg_size[:, None] > 0, 1 + np.cumsum(hist[:, ::-1], axis=1)[:, ::-1], 0)
        n_lists, total = _lod.plan_levels(seg_size, items, None, None, None, None)
        self.seg_list = np.empty((n_seg, _lod.N_LEVELS), np.int32)
        list_seg = np.empty(n_lists, np.int64)
        self.list_level = np.empty(n_lists, np.int64)
        self.list_off = np.empty(n_lists, np.int64)
        _lod.plan_levels(seg_size, items, self.seg_list, list_seg, self.list_level,
                         self.list_off)
        self.list_len = np.diff(np.append(self.list_off, total))
        self.cuts = np.empty(total, pos)
        self.longest = np.empty(total, pos)
        in_part = np.zeros(n_seg, np.int64)
        for k, part in enumerate(seg_parts):
            in_part[part] = k
        list_parts = [np.flatnonzero(in_part[list_seg] == k) for k in range(len(seg_parts))]
        _on_parts(_lod.build_lists, (self.perm, self.seg_start, dur, cut_level, list_seg,
                                     self.list_level, self.list_off), list_parts,
                  (self.cuts, self.longest))
        del cut_level
        report(0.85)
        self.rmq = tuple(np.empty(max(1, -(-n // _lod.RMQ_BLOCK ** (k + 1))), pos)
                         for k in range(_RMQ_LEVELS))
        if n:
            _lod.build_rmq(self.perm, dur, self.rmq)
        self.counters = CounterIndex(profile)
        self._flows: FlowIndex | None = None
        self._flows_lock = threading.Lock()
        self.build_seconds = time.perf_counter() - started
        report(1.0)

    # ---- size -----------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes the index keeps (not counting the profile it reads)."""
        arrays = [self.perm, self.seg_start, self.seg_list, self.list_off, self.list_len,
                  self.cuts, self.longest, *self.rmq, self.counters.times,
                  self.counters.values, *self.counters.block_min, *self.counters.block_max]
        return int(sum(a.nbytes for a in arrays))

    def levels(self) -> pd.DataFrame:
        """The stored levels: threshold, segments storing it, and their items in all."""
        frame = pd.DataFrame({"level": self.list_level, "items": self.list_len})
        frame = frame.groupby("level").agg(segments=("items", "size"), items=("items", "sum"))
        frame.insert(0, "threshold_us", 4.0 ** frame.index.to_numpy() / PS_PER_US)
        return frame.reset_index()

    # ---- queries --------------------------------------------------------------------------
    @property
    def flows(self) -> FlowIndex:
        """The flow edges, found on first use (or waited for, if a background build runs)."""
        with self._flows_lock:
            if self._flows is None:
                tracks = self.profile.tracks[self.track_depths > 0]
                self._flows = FlowIndex(self.profile, tracks[["first_event", "end_event"]]
                                        .to_numpy(np.int64))
        return self._flows

    def prepare_flows(self) -> None:
        """Finds the flow edges in a background thread, so the first click or flow toggle does
        not wait for the stat scans (they release the GIL, so a notebook stays responsive)."""
        if self._flows is None and not self._flows_lock.locked():
            threading.Thread(target=self._flows_in_background, name="xprof-widgets-flows",
                             daemon=True).start()

    def _flows_in_background(self) -> None:
        """self.flows, its failure kept quiet: the profile may be closed, or its file changed,
        before the scans end. The first use in the foreground tries again and raises there,
        where the user sees why (a thread's traceback would land in some other cell's log)."""
        with contextlib.suppress(Exception):
            _ = self.flows

    def segments(self, track_ids: np.ndarray, depth0_only: bool = False) -> np.ndarray:
        """Segment ids of the given tracks, in (track, depth) order."""
        track_ids = np.asarray(track_ids, np.int64)
        if depth0_only:
            return self.track_segment[track_ids[self.track_depths[track_ids] > 0]]
        depths = self.track_depths[track_ids]
        base = np.repeat(self.track_segment[track_ids], depths)
        offset = np.arange(base.shape[0]) - np.repeat(np.cumsum(depths) - depths, depths)
        return base + offset

    def runs(self, segs: np.ndarray, lo: int, hi: int, px: float
             ) -> tuple[tuple[np.ndarray, ...], int]:
        """The level-of-detail runs of the given segments over [lo, hi] ps at pixel size px:
        ((segment, start_ps, end_ps, count, event), events overlapping the window)."""
        level = _lod.level_of(int(px))
        ranges = np.empty((segs.shape[0], 5), np.int64)
        start, dur = self.profile.start_ps, self.profile.duration_ps
        n_items, n_events = _lod.window_ranges(
            segs, self.seg_start, self.seg_list, self.list_off, self.list_len, self.cuts,
            self.perm, start, dur, lo, hi, level, ranges)
        out = (np.empty(n_items, np.int64), np.empty(n_items, np.int64),
               np.empty(n_items, np.int64), np.empty(n_items, np.int64),
               np.empty(n_items, np.int64))
        n = _lod.window_runs(segs, ranges, self.seg_start, self.list_off, self.cuts,
                             self.longest, self.perm, start, dur, self.rmq, px, *out)
        return tuple(a[:n] for a in out), int(n_events)

    def window(self, start_us: float, end_us: float, width_px: int,
               tracks: Iterable[int] | None = None, collapsed: Sequence[int] = (),
               flows: bool = False) -> Window:
        """The level-of-detail answer for [start_us, end_us] drawn `width_px` pixels wide.

        tracks: track ids to answer (None: all); collapsed: section ids drawn as one summary
        row of busy intervals instead of their tracks; flows: add the flow arrows.
        """
        started = time.perf_counter()
        lo, hi, width = window_bounds(start_us, end_us, width_px)
        px = (hi - lo) / width
        n_tracks = self.track_section.shape[0]
        ids = np.arange(n_tracks) if tracks is None else np.unique(np.asarray(
            list(tracks), np.int64))
        if ids.shape[0] and (ids[0] < 0 or ids[-1] >= n_tracks):
            raise KeyError(f"track ids must be in 0..{n_tracks - 1}; got {ids.tolist()}")
        sections = np.unique(np.asarray(list(collapsed), np.int64))
        ids = ids[~np.isin(self.track_section[ids], sections)]

        (seg, s_start, s_end, s_count, s_event), n_events = self.runs(
            self.segments(ids), lo, hi, px)
        counter_ids = ids[self.is_counter[ids]]
        counts, c_t, c_min, c_max, c_last = self.counters.query(counter_ids, lo, hi, px, width)
        summary = self._summaries(sections, lo, hi, px)
        edges = self._flow_edges(ids, lo, hi, px) if flows else np.empty(0, np.int64)
        flow = self._flow_columns(edges)
        return Window(
            profile=self.profile, start_ps=lo, end_ps=hi, width_px=width, track_ids=ids,
            slice_track=self.seg_track[seg], slice_depth=self.seg_depth[seg],
            slice_start_ps=s_start, slice_end_ps=s_end, slice_count=s_count, slice_event=s_event,
            counter_track=np.repeat(counter_ids, counts), counter_t_ps=c_t, counter_min=c_min,
            counter_max=c_max, counter_last=c_last,
            summary_sections=sections, summary_section=summary[0], summary_start_ps=summary[1],
            summary_end_ps=summary[2], flow_edges=edges, **flow,
            events_in_window=n_events, query_ms=(time.perf_counter() - started) * 1e3)

    def window_frames(self, start_us: float, end_us: float, width_px: int = 1600,
                      **kwargs) -> dict[str, pd.DataFrame]:
        """`window(...).to_frames()`: what a view of that width draws, as DataFrames."""
        return self.window(start_us, end_us, width_px, **kwargs).to_frames()

    def search(self, pattern: str, regex: bool | None = None, case: bool = False,
               limit: int = MAX_HITS, match: str = "any") -> SearchResult:
        """Events whose display or full name matches, in time order (see search.search)."""
        return search(self.profile, pattern, regex=regex, case=case, limit=limit, match=match)

    def details(self, event: int) -> dict:
        """One event's details, JSON-ready (see details.details)."""
        return details(self, event)

    def aggregate(self, events: Iterable[int]) -> pd.DataFrame:
        """name, count, total/avg/min/max duration (us) over the given events."""
        return aggregate(self, np.fromiter(events, np.int64))

    def _summaries(self, sections: np.ndarray, lo: int, hi: int, px: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Busy intervals of each collapsed section: the union of its tracks' depth-0 runs,
        merged across gaps narrower than a pixel."""
        parts: list[tuple[np.ndarray, ...]] = []
        for section in sections.tolist():
            own = np.flatnonzero(self.track_section == section)
            (_, start, end, _, _), _ = self.runs(self.segments(own, depth0_only=True), lo, hi, px)
            if not start.shape[0]:
                continue
            order = np.argsort(start, kind="stable")
            start, end = start[order], end[order]
            reach = np.maximum.accumulate(end)
            opens = np.concatenate([[True], start[1:] - reach[:-1] >= px])
            heads = np.flatnonzero(opens)
            parts.append((np.full(heads.shape[0], section), start[heads],
                          np.maximum.reduceat(end, heads)))
        if not parts:
            empty = np.empty(0, np.int64)
            return empty, empty, empty
        return tuple(np.concatenate(c) for c in zip(*parts, strict=True))

    def _flow_columns(self, edges: np.ndarray) -> dict[str, np.ndarray]:
        columns = ("from_event", "to_event", "from_track", "to_track", "from_depth", "to_depth",
                   "from_ps", "to_ps")
        f = self._flows
        out = {f"flow_{c}": getattr(f, c)[edges] if f is not None else np.empty(0, np.int64)
               for c in columns}
        kinds = f.kind[edges] if f is not None else np.empty(0, np.int64)
        out["flow_kind"] = np.asarray(KINDS, dtype=object)[kinds]
        return out

    def _flow_edges(self, ids: np.ndarray, lo: int, hi: int, px: float) -> np.ndarray:
        visible = np.zeros(self.track_section.shape[0], bool)
        visible[ids] = True
        return self.flows.window(lo, hi, px, visible)
