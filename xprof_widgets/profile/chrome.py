"""Decoding Chrome trace JSON (jax.profiler's `.trace.json.gz`, PyTorch's `.pt.trace.json`).

Processes become sections, threads become tracks, `C` counters become counter tracks and
`s`/`t`/`f` flow events become explicit flow edges. Event args are kept as one JSON text per
event in a single byte blob, decoded only when an event's details are asked for.
"""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import numpy as np

from ..errors import ProfileError
from . import _wire
from .ordering import natural_key, plane_kind
from .trace_data import HostTrace, Section, Track

_SLICE_PHASES = {"X", "B", "E", "i", "I", "n"}


def decode_chrome(data: bytes, source: str, host: str) -> HostTrace:
    """Decodes a Chrome trace (optionally gzipped); `source` names the file in errors."""
    return _Builder(source, host).build(_load_events(data, source))


def _load_events(data: bytes, source: str) -> list:
    if not data:
        raise ProfileError(f"{source}: the file is empty (0 bytes); expected Chrome trace JSON.")
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ProfileError(f"{source}: the gzip stream is truncated or corrupt ({exc}); copy "
                               "the file again or capture a new profile.") from exc
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProfileError(f"{source}: not valid JSON ({exc}). Expected a Chrome trace: "
                           '{"traceEvents": [...]} or a JSON list of events.') from exc
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ProfileError(f"{source}: JSON without a `traceEvents` list; not a Chrome trace.")
    return events


class _Builder:
    def __init__(self, source: str, host: str):
        self.source = source
        self.host = host
        self.process_names: dict[Any, str] = {}
        self.process_order: dict[Any, float] = {}
        self.thread_names: dict[tuple, str] = {}
        self.thread_order: dict[tuple, float] = {}
        self.track_index: dict[tuple, int] = {}
        self.track_keys: list[tuple] = []  # (pid, tid or counter name, is_counter)
        self.name_index: dict[str, int] = {}
        self.names: list[str] = []
        self.name_pid: list[Any] = []
        self.rows: list[tuple] = []  # (track, ts_us, dur_us, name row, args json or b"")
        self.counter_rows: list[float] = []
        self.flow_points: list[tuple] = []  # (flow key, phase, track, ts_us, binds to enclosing)
        self.open_slices: dict[int, list] = {}
        self.skipped = 0

    def build(self, events: list) -> HostTrace:
        for ev in events:
            if isinstance(ev, dict):
                self._add(ev)
            else:
                self.skipped += 1
        return self._finish()

    def _track(self, pid: Any, tid: Any, counter: bool = False) -> int:
        key = (pid, tid, counter)
        index = self.track_index.get(key)
        if index is None:
            index = self.track_index[key] = len(self.track_keys)
            self.track_keys.append(key)
        return index

    def _name(self, name: str, pid: Any) -> int:
        index = self.name_index.get(name)
        if index is None:
            index = self.name_index[name] = len(self.names)
            self.names.append(name)
            self.name_pid.append(pid)
        return index

    def _add(self, ev: dict) -> None:
        ph = ev.get("ph")
        pid, tid = ev.get("pid", 0), ev.get("tid", 0)
        if ph == "M":
            self._metadata(ev, pid, tid)
            return
        try:
            ts = float(ev.get("ts", 0))
        except (TypeError, ValueError):
            self.skipped += 1
            return
        name = str(ev.get("name", ""))
        args = ev.get("args")
        if ph in _SLICE_PHASES:
            track = self._track(pid, tid)
            if ph == "B":
                self.open_slices.setdefault(track, []).append((ts, name, args))
                return
            if ph == "E":
                stack = self.open_slices.get(track)
                if not stack:
                    self.skipped += 1
                    return
                begin, name, begin_args = stack.pop()
                merged = {**(begin_args or {}), **(args or {})}
                self._row(track, begin, ts - begin, name, pid, merged)
                return
            self._row(track, ts, float(ev.get("dur", 0) or 0), name, pid, args)
        elif ph == "C":
            for key, value in (args or {}).items():
                if isinstance(value, (int, float)):
                    label = name if len(args) == 1 else f"{name} {key}"
                    self._row(self._track(pid, label, True), ts, 0.0, label, pid, None,
                              float(value))
        elif ph in ("s", "t", "f"):
            flow_key = (ev.get("cat"), ev.get("id"), ev.get("id2") and str(ev.get("id2")))
            enclosing = ph != "f" or ev.get("bp") == "e"
            self.flow_points.append((flow_key, ph, self._track(pid, tid), ts, enclosing))
        else:
            self.skipped += 1

    def _row(self, track: int, ts: float, dur: float, name: str, pid: Any, args: Any,
             value: float = np.nan) -> None:
        blob = json.dumps(args, default=str).encode() if args else b""
        self.rows.append((track, ts, dur, self._name(name, pid), blob))
        self.counter_rows.append(value)

    def _metadata(self, ev: dict, pid: Any, tid: Any) -> None:
        args = ev.get("args") or {}
        kind = ev.get("name")
        if kind == "process_name":
            self.process_names[pid] = str(args.get("name", pid))
        elif kind == "process_sort_index":
            self.process_order[pid] = args.get("sort_index", 0)
        elif kind == "thread_name":
            self.thread_names[(pid, tid)] = str(args.get("name", tid))
        elif kind == "thread_sort_index":
            self.thread_order[(pid, tid)] = args.get("sort_index", 0)

    def _finish(self) -> HostTrace:
        for track, stack in self.open_slices.items():  # B without E: runs to the trace end
            for begin, name, args in stack:
                self.rows.append((track, begin, np.nan, self._name(name, None),
                                  json.dumps(args, default=str).encode() if args else b""))
                self.counter_rows.append(np.nan)
        n = len(self.rows)
        if n == 0:
            raise ProfileError(f"{self.source}: the Chrome trace holds no events (slices or "
                               "counters). Capture again while the program runs.")
        track_col = np.fromiter((r[0] for r in self.rows), np.int64, n)
        ts = np.fromiter((r[1] for r in self.rows), np.float64, n)
        dur = np.fromiter((r[2] for r in self.rows), np.float64, n)
        meta = np.fromiter((r[3] for r in self.rows), np.int64, n)
        t_min = ts.min()
        start = np.rint((ts - t_min) * 1e6).astype(np.int64)
        trace_end = int(np.nanmax(start + np.nan_to_num(dur, nan=0.0) * 1e6))
        duration = np.where(np.isnan(dur), trace_end - start, np.rint(dur * 1e6)).astype(np.int64)
        order = np.lexsort((-duration, start, track_col))
        start, duration, track_col, meta = (a[order] for a in (start, duration, track_col, meta))
        blobs = [self.rows[i][4] for i in order.tolist()]
        counters = np.asarray(self.counter_rows, np.float64)[order]
        self.rows = []

        firsts = np.searchsorted(track_col, np.arange(len(self.track_keys)))
        ends = np.searchsorted(track_col, np.arange(len(self.track_keys)), side="right")
        depth = np.empty(n, np.int16)
        _wire.order_and_depth(start, duration, np.stack([firsts, ends], axis=1), depth)

        sections, section_of_pid = self._sections()
        tracks = [self._track_info(k, key, section_of_pid, int(firsts[k]), int(ends[k]))
                  for k, key in enumerate(self.track_keys)]
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum([len(b) for b in blobs], out=offsets[1:])
        flows = self._flow_edges(start, duration, depth, firsts, ends, t_min)
        return HostTrace(
            host=self.host, source=self.source, base_ns=0, start_ps=start, duration_ps=duration,
            meta=meta.astype(np.int32), depth=depth, sections=sections, tracks=tracks,
            names=self.names, display_names=list(self.names),
            meta_section=np.array([section_of_pid.get(p, 0) for p in self.name_pid], np.int32),
            meta_stats=[{} for _ in self.names],
            details=ChromeArgs(b"".join(blobs), offsets),
            counter_values=counters if np.isfinite(counters).any() else None,
            flow_edges=flows,
            warnings=[f"{self.source}: skipped {self.skipped} events of unsupported phases"]
            if self.skipped else [])

    def _sections(self) -> tuple[list[Section], dict]:
        pids = list(dict.fromkeys(key[0] for key in self.track_keys))
        sections, section_of_pid = [], {}
        for pid in pids:
            name = self.process_names.get(pid, f"Process {pid}")
            section_of_pid[pid] = len(sections)
            kind = plane_kind(name) if name.startswith("/") else (
                "device" if name.split(" ")[0].upper() in ("GPU", "TPU", "CUDA") else "host")
            sections.append(Section(name=name, kind=kind,
                                    sort_key=(self.process_order.get(pid, 0), kind != "device",
                                              natural_key(name))))
        return sections, section_of_pid

    def _track_info(self, k: int, key: tuple, section_of_pid: dict, first: int, end: int) -> Track:
        pid, tid, counter = key
        name = str(tid) if counter else self.thread_names.get((pid, tid), f"Thread {tid}")
        return Track(section=section_of_pid[pid], name=name,
                     kind="counter" if counter else "slices", first=first, end=end,
                     sort_key=(counter, self.thread_order.get((pid, tid), 0), natural_key(name)))

    def _flow_edges(self, start: np.ndarray, duration: np.ndarray, depth: np.ndarray,
                    firsts: np.ndarray, ends: np.ndarray, t_min: float) -> np.ndarray:
        """Binds each flow point to a slice of its thread and links consecutive points."""
        by_flow: dict[tuple, list[tuple[float, int]]] = {}
        for flow_key, _, track, ts, enclosing in self.flow_points:
            at = round((ts - t_min) * 1e6)
            lo, hi = int(firsts[track]), int(ends[track])
            event = _enclosing_slice(start, duration, depth, lo, hi, at) if enclosing else -1
            if event < 0:  # next slice starting at or after the point
                nxt = lo + int(np.searchsorted(start[lo:hi], at))
                event = nxt if nxt < hi else -1
            if event >= 0:
                by_flow.setdefault(flow_key, []).append((ts, event))
        edges = [(a[1], b[1], i) for i, points in enumerate(by_flow.values())
                 for a, b in zip(sorted(points), sorted(points)[1:], strict=False) if a[1] != b[1]]
        return np.array(edges, np.int64).reshape(-1, 3)


def _enclosing_slice(start: np.ndarray, duration: np.ndarray, depth: np.ndarray, lo: int,
                     hi: int, at: int) -> int:
    """The deepest slice of [lo, hi) containing `at` (the latest-starting one), or -1.

    Top-level slices do not overlap, so the walk back stops at the first top-level one.
    """
    i = lo + int(np.searchsorted(start[lo:hi], at, side="right")) - 1
    while i >= lo:
        if start[i] + duration[i] >= at:
            return i
        if depth[i] == 0:
            break
        i -= 1
    return -1


class ChromeArgs:
    """Per-event args as JSON texts in one blob; decoded one event at a time."""

    def __init__(self, blob: bytes, offsets: np.ndarray):
        self._blob = blob
        self._offsets = offsets

    def stats(self, event: int) -> dict[str, Any]:
        raw = self._blob[self._offsets[event]:self._offsets[event + 1]]
        return json.loads(raw) if raw else {}

    def stat_ints(self, events: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        column = self.stat_column(events, name)
        present = np.fromiter((isinstance(v, int) and not isinstance(v, bool) for v in column),
                              bool, column.shape[0])
        values = np.zeros(column.shape[0], np.uint64)
        values[present] = [v & 0xFFFF_FFFF_FFFF_FFFF for v in column[present].tolist()]
        return present, values

    def stat_column(self, events: np.ndarray, name: str) -> np.ndarray:
        needle = json.dumps(name).encode()
        out = np.full(len(events), None, dtype=object)
        for k, event in enumerate(np.asarray(events, np.int64).tolist()):
            raw = self._blob[self._offsets[event]:self._offsets[event + 1]]
            if needle in raw:
                out[k] = json.loads(raw).get(name)
        return out
