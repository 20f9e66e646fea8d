"""`PodTrace`: the Trace Viewer's questions about a PodProfile, answered by the hosts' actors.

The kernel holds no event: a window is asked of every host it shows (at once), each answering
from its own trace index in its own ids and times; the answers are moved into the PodProfile's
ids and times and joined into one `Window`, which travels to the view exactly as a local one
(trace/encode.py). A host not shown in full can be one summary row: its busy intervals at the
window's pixel size, asked of each worker once for all the hosts it holds (pod/busy.py). Search,
details, aggregates and box selections go to the hosts concerned.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US
from ..trace.details import AGGREGATE_COLUMNS, by_total
from ..trace.pivot import LEVELS, PIVOT_COLUMNS
from ..trace.search import MAX_HITS
from ..trace.window import Window, window_bounds
from .profile import PodProfile
from .worker import WINDOW_ARRAYS

_ARRAYS = (*WINDOW_ARRAYS, "slice_name")

_EVENT_FIELDS = ("slice_event", "flow_from_event", "flow_to_event")
_TRACK_FIELDS = ("track_ids", "slice_track", "counter_track", "flow_from_track", "flow_to_track")
_TIME_FIELDS = ("slice_start_ps", "slice_end_ps", "counter_t_ps", "summary_start_ps",
                "summary_end_ps", "flow_from_ps", "flow_to_ps")
_SECTION_FIELDS = ("summary_sections", "summary_section")


class NameTable:
    """Names (metadata rows, PodProfile ids) met in answers so far: what a view needs to
    draw them and `Window.to_frames` to list them, without the kernel holding every host's."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}

    def add(self, ids: np.ndarray, texts: Sequence[str]) -> None:
        self.texts.update(zip(np.asarray(ids).tolist(), texts, strict=True))

    def __getitem__(self, ids: Any) -> Any:
        if np.ndim(ids) == 0:
            return self.texts[int(ids)]
        return np.array([self.texts[int(i)] for i in np.asarray(ids).tolist()], dtype=object)


class PodStrings:
    """`trace.encode.StringTracker` for a PodProfile: the names one view has been sent."""

    def __init__(self, names: NameTable):
        self._names = names
        self._sent: set[int] = set()

    def reset(self) -> None:
        self._sent.clear()

    def take(self, name_ids: np.ndarray) -> list[list]:
        new = sorted(set(np.unique(np.asarray(name_ids, np.int64)).tolist()) - self._sent)
        self._sent.update(new)
        return [[i, self._names.texts[i]] for i in new]


@dataclass
class _Names:
    """The `profile` a pod `Window` draws its names from."""

    display_names: NameTable


@dataclass
class PodWindow(Window):
    """A `Window` joined from the hosts' answers; it carries its slices' names."""

    slice_names: np.ndarray = None  # name id of each slice (PodProfile ids)

    @property
    def slice_name(self) -> np.ndarray:
        return self.slice_names


class PodTrace:
    """What `TraceViewer` asks of its trace index, for a PodProfile."""

    def __init__(self, pod: PodProfile):
        self.pod = pod
        self.names = NameTable()
        self._track_bases = np.array([f.track_base for f in pod.frames], np.int64)
        self._section_bases = np.array([f.section_base for f in pod.frames], np.int64)

    # ---- ids ----------------------------------------------------------------------------------
    def host_of_tracks(self, tracks: Iterable[int]) -> np.ndarray:
        return np.searchsorted(self._track_bases, np.asarray(list(tracks), np.int64),
                               side="right") - 1

    def _by_host(self, ids: Iterable[int], bases: np.ndarray) -> dict[int, np.ndarray]:
        ids = np.unique(np.asarray(list(ids), np.int64))
        hosts = np.searchsorted(bases, ids, side="right") - 1
        return {int(h): ids[hosts == h] - bases[h] for h in np.unique(hosts).tolist()}

    def _events_by_host(self, events: Iterable[int]) -> dict[int, np.ndarray]:
        events = np.unique(np.asarray(list(events), np.int64))
        if events.shape[0] and (events[0] < 0 or events[-1] >= self.pod.n_events):
            raise KeyError(f"event ids must be in 0..{self.pod.n_events - 1}")
        hosts = self.pod.host_of_events(events)
        return {int(h): events[hosts == h] - self.pod.frames[h].event_base
                for h in np.unique(hosts).tolist()}

    # ---- windows ------------------------------------------------------------------------------
    def window(self, start_us: float, end_us: float, width_px: int,
               tracks: Iterable[int] | None = None, collapsed: Sequence[int] = (),
               flows: bool = False, summaries: dict[int, str] | None = None) -> PodWindow:
        """The window over the tracks (None: every track of every host) and collapsed sections,
        plus one busy row per entry of `summaries` ({row section id: host})."""
        import time

        started = time.perf_counter()
        lo, hi, width = window_bounds(start_us, end_us, width_px)
        pod = self.pod
        track_ids = np.arange(len(pod.tracks)) if tracks is None else tracks
        by_track = self._by_host(track_ids, self._track_bases)
        by_section = self._by_host(collapsed, self._section_bases)
        rows = {pod.hosts.index(host): section for section, host in (summaries or {}).items()}
        asked = sorted(set(by_track) | set(by_section))
        requests = {}
        for h in asked:
            f = pod.frames[h]
            requests[pod.hosts[h]] = ("window", (
                lo - f.shift_ps, hi - f.shift_ps, width,
                by_track.get(h, np.empty(0, np.int64)).tolist(),
                by_section.get(h, np.empty(0, np.int64)).tolist(), bool(flows)))
        answers = {host: pickle.loads(data) for host, data in pod.calls(requests).items()}
        parts = [self._moved(answers[pod.hosts[h]], pod.frames[h]) for h in asked]
        joined = {key: np.concatenate([p[key] for p in parts]) if parts else np.empty(0, np.int64)
                  for key in _ARRAYS}
        if rows:  # hosts shown as one row each: their busy time, a task per worker
            order = sorted(rows)
            busy = pod.busy_rows([pod.hosts[h] for h in order],
                                 [lo - pod.frames[h].shift_ps for h in order],
                                 [hi - pod.frames[h].shift_ps for h in order], (hi - lo) / width)
            spans = [busy[pod.hosts[h]] for h in order]
            joined["summary_sections"] = np.concatenate(
                [joined["summary_sections"], np.array([rows[h] for h in order], np.int64)])
            joined["summary_section"] = np.concatenate(
                [joined["summary_section"], *[np.full(a.shape[0], rows[h], np.int64)
                                              for h, (a, _) in zip(order, spans, strict=True)]])
            for column, which in (("summary_start_ps", 0), ("summary_end_ps", 1)):
                joined[column] = np.concatenate(
                    [joined[column], *[span[which] + pod.frames[h].shift_ps
                                       for h, span in zip(order, spans, strict=True)]])
        for key in (*_TIME_FIELDS, *_SECTION_FIELDS, *_TRACK_FIELDS, *_EVENT_FIELDS):
            joined[key] = joined[key].astype(np.int64)
        return PodWindow(
            profile=_Names(self.names), start_ps=lo, end_ps=hi, width_px=width,
            events_in_window=int(sum(int(answers[pod.hosts[h]]["events_in_window"])
                                     for h in asked)),
            query_ms=(time.perf_counter() - started) * 1e3,
            slice_names=joined.pop("slice_name"), **joined)

    def _moved(self, answer: dict[str, Any], frame: Any) -> dict[str, np.ndarray]:
        """One host's answer in the PodProfile's ids and times."""
        out = {key: np.asarray(answer[key]) for key in _ARRAYS}
        for key in _EVENT_FIELDS:
            out[key] = out[key].astype(np.int64) + frame.event_base
        for key in _TRACK_FIELDS:
            out[key] = out[key].astype(np.int64) + frame.track_base
        for key in _SECTION_FIELDS:
            out[key] = out[key].astype(np.int64) + frame.section_base
        for key in _TIME_FIELDS:
            out[key] = out[key].astype(np.int64) + frame.shift_ps
        out["slice_name"] = out["slice_name"].astype(np.int64) + frame.name_base
        self.names.add(np.asarray(answer["names"], np.int64) + frame.name_base, answer["texts"])
        return out

    # ---- search, details, aggregates -----------------------------------------------------------
    def search(self, pattern: str, hosts: Sequence[str], regex: bool = False, case: bool = False,
               limit: int = MAX_HITS) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """The first `limit` hits over the hosts, in time order: (event, start_ps, track) and
        how many hits there are in all."""
        answers = self.pod.calls({h: ("search", (pattern, bool(regex), bool(case), int(limit)))
                                  for h in hosts})
        events, starts, tracks, n = [], [], [], 0
        for host in hosts:
            f, a = self.pod.frame_of(host), answers[host]
            events.append(np.asarray(a["event"], np.int64) + f.event_base)
            starts.append(np.asarray(a["start_ps"], np.int64) + f.shift_ps)
            tracks.append(np.asarray(a["track"], np.int64) + f.track_base)
            n += int(a["n_hits"])
        if not events:
            empty = np.empty(0, np.int64)
            return empty, empty, empty, 0
        event, start, track = (np.concatenate(c) for c in (events, starts, tracks))
        order = np.lexsort((event, start))[:max(0, int(limit))]
        return event[order], start[order], track[order], n

    def details(self, event: int) -> dict[str, Any]:
        ((h, local),) = self._events_by_host([event]).items()
        f = self.pod.frames[h]
        out = self.pod.call(self.pod.hosts[h], "details", int(local[0]))
        out = dict(out, event=int(out["event"]) + f.event_base,
                   track=int(out["track"]) + f.track_base,
                   start_us=self._us(out["start_us"], f))
        for key in ("flows_in", "flows_out"):
            out[key] = [dict(e, event=int(e["event"]) + f.event_base,
                             track=int(e["track"]) + f.track_base,
                             start_us=self._us(e["start_us"], f)) for e in out[key]]
        return out

    @staticmethod
    def _us(local_us: float, frame: Any) -> float:
        return (round(local_us * PS_PER_US) + frame.shift_ps) / PS_PER_US

    def aggregate(self, events: Iterable[int]) -> pd.DataFrame:
        """name, count, total/avg/min/max duration (us) over the events, largest total first."""
        by_host = self._events_by_host(events)
        answers = self.pod.calls({self.pod.hosts[h]: ("aggregate", (ids.tolist(),))
                                  for h, ids in by_host.items()})
        if not answers:
            return pd.DataFrame(columns=AGGREGATE_COLUMNS)
        frame = pd.concat([answers[self.pod.hosts[h]] for h in by_host], ignore_index=True)
        return by_total(frame.groupby("name", sort=False).agg(
            count=("count", "sum"), total_us=("total_us", "sum"), min_us=("min_us", "min"),
            max_us=("max_us", "max"),
            device_total_us=("device_total_us", lambda d: d.sum(min_count=1))).reset_index())

    def span_us(self, events: Iterable[int]) -> tuple[float, float] | None:
        """(start_us, end_us) of the events, None for none."""
        by_host = self._events_by_host(events)
        if not by_host:
            return None
        answers = self.pod.calls({self.pod.hosts[h]: ("span_ps", (ids.tolist(),))
                                  for h, ids in by_host.items()})
        spans = [(a + self.pod.frames[h].shift_ps, b + self.pod.frames[h].shift_ps)
                 for h in by_host for a, b in [answers[self.pod.hosts[h]]]]
        return min(a for a, _ in spans) / PS_PER_US, max(b for _, b in spans) / PS_PER_US

    def pivot(self, events: Iterable[int], by: Sequence[str] = LEVELS) -> pd.DataFrame:
        """`trace.pivot.selection_pivot` over hosts: each host's pivot, joined and regrouped."""
        by_host = self._events_by_host(events)
        answers = self.pod.calls({self.pod.hosts[h]: ("pivot", (ids.tolist(), tuple(by)))
                                  for h, ids in by_host.items()})
        frames = []
        for h in by_host:
            frame = answers[self.pod.hosts[h]].copy()
            if "track" in frame.columns:
                frame["track"] += self.pod.frames[h].track_base
            frames.append(frame)
        if not frames:
            return pd.DataFrame(columns=[c for c in PIVOT_COLUMNS if c in _keys(by)
                                         or c in ("count", "total_us", "self_us", "avg_us")])
        frame = pd.concat(frames, ignore_index=True)
        table = frame.groupby(_keys(by), sort=False).agg(
            count=("count", "sum"), total_us=("total_us", "sum"),
            self_us=("self_us", "sum")).reset_index()
        table["avg_us"] = table["total_us"] / table["count"]
        table = table.sort_values(["total_us", "count"], ascending=False, kind="stable")
        return table[[c for c in PIVOT_COLUMNS if c in table.columns]].reset_index(drop=True)

    def select_box(self, lo_ps: int, hi_ps: int, rows: list[list[int]]) -> np.ndarray:
        """Events of the (track, min depth, max depth) rows overlapping [lo, hi] ps."""
        by_host: dict[int, list[list[int]]] = {}
        for track, depth_lo, depth_hi in rows:
            h = int(self.host_of_tracks([track])[0])
            by_host.setdefault(h, []).append(
                [int(track) - self.pod.frames[h].track_base, depth_lo, depth_hi])
        answers = self.pod.calls({self.pod.hosts[h]: (
            "select_box", (lo_ps - self.pod.frames[h].shift_ps, hi_ps - self.pod.frames[h].shift_ps,
                           r)) for h, r in by_host.items()})
        parts = [np.asarray(answers[self.pod.hosts[h]], np.int64) + self.pod.frames[h].event_base
                 for h in sorted(by_host)]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    # ---- events as DataFrames ------------------------------------------------------------------
    def events_frame(self, events: Iterable[int]) -> pd.DataFrame:
        """`Profile.events_frame` of global event ids, in the order given."""
        wanted = np.asarray(list(events), np.int64)
        by_host = self._events_by_host(wanted)
        answers = self.pod.calls({self.pod.hosts[h]: ("event_rows", (ids.tolist(),))
                                  for h, ids in by_host.items()})
        frame = self._frame([(h, answers[self.pod.hosts[h]]) for h in by_host])
        return frame.set_index("event", drop=False).loc[wanted].reset_index(drop=True)

    def events(self, start_us: float | None, end_us: float | None, tracks: np.ndarray,
               name: str | None) -> pd.DataFrame:
        """`Profile.events` over the given global tracks."""
        requests = {}
        for h, local in self._by_host(tracks, self._track_bases).items():
            f = self.pod.frames[h]
            lo = None if start_us is None else round(start_us * PS_PER_US) - f.shift_ps
            hi = None if end_us is None else round(end_us * PS_PER_US) - f.shift_ps
            requests[self.pod.hosts[h]] = ("event_rows_in", (lo, hi, local.tolist(), name))
        answers = self.pod.calls(requests)
        return self._frame([(self.pod.hosts.index(host), answers[host]) for host in requests])

    def _frame(self, parts: list[tuple[int, dict[str, np.ndarray]]]) -> pd.DataFrame:
        frames = []
        for h, rows in parts:
            f = self.pod.frames[h]
            frames.append(pd.DataFrame({
                "event": np.asarray(rows["event"], np.int64) + f.event_base,
                "track": np.asarray(rows["track"], np.int64) + f.track_base,
                "track_name": rows["track_name"], "section": rows["section"],
                "host": rows["host"], "name": rows["name"],
                "start_us": (np.asarray(rows["start_ps"], np.int64) + f.shift_ps) / PS_PER_US,
                "duration_us": np.asarray(rows["duration_ps"], np.int64) / PS_PER_US,
                "depth": np.asarray(rows["depth"], np.int64)}))
        if not frames:
            return pd.DataFrame(columns=["event", "track", "track_name", "section", "host",
                                         "name", "start_us", "duration_us", "depth"])
        return pd.concat(frames, ignore_index=True)


def _keys(by: Sequence[str]) -> list[str]:
    keys = [level for level in LEVELS if level in by]
    if "track" in keys:
        keys.insert(keys.index("track") + 1, "track_name")
    return keys


