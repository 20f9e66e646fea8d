"""Chrome trace events into a HostTrace: the rules for each event, and the columns they make.

Two readers feed one builder. The compiled scanner (chrome_scan.py) hands over the common
events as columns; `ChromeBuilder.add` takes the rest one parsed event at a time (metadata,
B/E pairs, counters, odd field types), and takes every event when the Python reader runs alone
(chrome.py's `decode_chrome_python`, the scanner's test oracle). `finish` joins both: tracks
and name rows are numbered by the first event that uses them, and events sort by track, start,
longest first, then file order, so either reader makes the same trace.

Traces come from many writers and are often hand-edited or cut short, so every field is checked:
an event that cannot be placed on the timeline is dropped and counted (one warning per file says
how many and why), odd but usable values are kept (a list as a thread id becomes its JSON text).
Times that do not fit the int64 picosecond columns are dropped, never wrapped.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._native.intervals import bind_flow_points as _bind_flow_points
from ..errors import ProfileError
from . import _wire
from .chrome_args import ChromeArgs
from .chrome_time import ExactFloat, exact_us, is_number, picoseconds
from .ordering import natural_key, plane_kind
from .trace_data import HostTrace, Section, Track

_DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation",
                                "mtia_ccp_events"})
"""Kineto's categories of work that runs on an accelerator: their process is a device."""
_SLICE_PHASES = frozenset({"X", "B", "E", "i", "I", "n"})
_FLOW_PHASES = frozenset({"s", "t", "f"})
_MAX_SPAN_US = 2.0**61 / 1e6
"""How far (26.7 days) an event may start from the trace's median start, and how long it may
last: start + duration then always fits int64 picoseconds."""
_PS_PER_US = 10**6
_ARGS_JSON = json.JSONEncoder(default=str)
"""One encoder for the args of the events parsed in Python (json.dumps makes one per call)."""
_FAR = "event{s} more than 26 days away from the trace's other events"
_LONG = "event{s} with a dur over 26 days"


def number(value: Any) -> float | None:
    """A JSON number (or numeric string, as Perfetto accepts) as a float; None when it is not."""
    kind = type(value)
    if kind is float or kind is ExactFloat:
        return value
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            return math.inf
    if kind is str:
        try:
            return float(value)
        except ValueError:
            return None
    return None


_DECIMAL = re.compile(r"-?(0|[1-9][0-9]{0,17})")


def same_id(value: Any) -> Any:
    """A pid or tid written as decimal text ("25738") as the number it spells: PyTorch 1.8 writes
    an op's tid as text and its memory events' as a number, one thread (JavaScript viewers key
    both alike)."""
    return int(value) if type(value) is str and _DECIMAL.fullmatch(value) else value


def _key(value: Any, default: Any, coerced: Counter, field: str) -> Any:
    """A pid/tid/flow id usable as a dict key: lists and objects become their JSON text; a
    pid or tid in decimal text is its number (same_id)."""
    kind = type(value)
    if kind is str:
        return same_id(value) if field in ("pid", "tid") else value
    if kind is int:
        return value
    if value is None:
        return default
    if kind is float or kind is ExactFloat:
        if value.is_integer():
            return int(value)
        return value if math.isfinite(value) else str(value)
    if kind is bool:
        return str(value).lower()
    coerced[field] += 1
    return json.dumps(value, sort_keys=True, default=str)


def _counter_name(name: str, counter_id: Any) -> str:
    """A counter's track: its name, and its `id` where it has one (one series per id, named
    as Perfetto names it)."""
    if counter_id is None or isinstance(counter_id, (dict, list)):
        return name
    return f"{name} id: {counter_id}"


def _name(value: Any, coerced: Counter) -> str:
    if type(value) is str:
        return value
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        coerced["name"] += 1
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


class _Drops:
    """Events left out, by reason, with the index of the first one for each reason."""

    def __init__(self) -> None:
        self.count: Counter = Counter()
        self.first: dict[str, int] = {}

    def add(self, reason: str, index: int, n: int = 1) -> None:
        self.count[reason] += n
        self.first[reason] = min(index, self.first.get(reason, index))

    def total(self) -> int:
        return sum(self.count.values())

    def summary(self) -> str:
        parts = []
        for reason, n in sorted(self.count.items(), key=lambda item: self.first[item[0]]):
            first = self.first[reason]
            where = f"event {first}" if n == 1 else f"first: event {first}"
            text = reason.format(s="" if n == 1 else "s", are="is" if n == 1 else "are")
            parts.append(f"{n} {text} ({where})")
        return ", ".join(parts)


@dataclass
class Rows:
    """Events as columns, in the builder's track and name-row numbering.

    Times are exact: whole microseconds (floored) plus picoseconds 0..999999 for the start,
    picoseconds for the duration; args are ranges into a ChromeArgs's buffers.
    """

    event: np.ndarray  # int64 index of the event in the file
    track: np.ndarray  # int64 builder track
    name: np.ndarray  # int64 builder name row
    ts_us: np.ndarray  # int64
    ts_ps: np.ndarray  # int64
    dur_ps: np.ndarray  # int64
    args_at: np.ndarray  # int64 offset into the args' main buffer, -1 - offset into the side one
    args_len: np.ndarray  # int64
    hot: dict[str, tuple[np.ndarray, np.ndarray]]  # arg -> (scanned rows, uint64 bits), sorted


@dataclass
class FlowPoints:
    """Flow points as columns: a flow's key number, its thread's track, exact time, whether it
    binds to a slice enclosing it, the event's index in the file."""

    key: np.ndarray  # int64, numbered by ChromeBuilder.flow_number
    track: np.ndarray  # int64 builder track
    ts_us: np.ndarray  # int64
    ts_ps: np.ndarray  # int64
    encloses: np.ndarray  # bool
    event: np.ndarray  # int64


class ChromeBuilder:
    """Collects one file's events, then `finish` makes its HostTrace."""

    def __init__(self, source: str, host: str):
        self.source = source
        self.host = host
        self.base_ns = 0  # the epoch ns that `ts` counts from (Kineto's baseTimeNanoseconds)
        self.section_stats: dict[str, Any] = {}  # from the trace's header, on every process
        self.device_properties: dict[int, dict] = {}  # Kineto's GPUs by id (= their pid)
        self.process_names: dict[Any, str] = {}
        self.process_labels: dict[Any, str] = {}  # Kineto's `process_labels`: "GPU 0", "CPU"
        self.device_pids: set = set()  # processes holding kernels, copies or memsets
        self.process_order: dict[Any, float] = {}
        self.thread_names: dict[tuple, str] = {}
        self.thread_order: dict[tuple, float] = {}
        self.track_index: dict[tuple, int] = {}
        self.track_keys: list[tuple] = []  # (pid, tid or counter name, is_counter)
        self.name_index: dict[tuple[str, str | None], int] = {}  # by (name, Kineto's cat)
        self.names: list[tuple[str, str | None]] = []
        # flows: numbers of the keys (category, id, id2) of the points parsed here, after
        # those of the scanner's points (`known_flows`, which `known_flow` looks keys up in)
        self.flow_numbers: dict[tuple, int] = {}
        self.known_flows = 0
        self.known_flow: Any = None
        # the rows of events parsed in Python: track, ts and dur (finite numbers as the JSON
        # wrote them, see chrome_time), name row, args JSON (or b""), counter value, index of
        # the event in the file
        self.r_track: list[int] = []
        self.r_ts: list[Any] = []
        self.r_dur: list[Any] = []
        self.r_name: list[int] = []
        self.r_args: list[bytes] = []
        self.r_value: list[float] = []
        self.r_event: list[int] = []
        self.open_rows: list[int] = []  # rows of B events that no E closed: run to the trace end
        self.flow_points: list[tuple] = []  # (flow key, track key, ts, ts_us, encloses, index)
        self.open_slices: dict[tuple, list] = {}
        self.unsupported: Counter = Counter()
        self.drops = _Drops()
        self.coerced: Counter = Counter()
        self.notes: list[str] = []
        self.n_events = 0

    # ---- numbering ------------------------------------------------------------------------------
    def track(self, key: tuple) -> int:
        """The builder's number of a (pid, tid or counter name, is_counter) track."""
        index = self.track_index.get(key)
        if index is None:
            index = self.track_index[key] = len(self.track_keys)
            self.track_keys.append(key)
        return index

    def name_row(self, name: str, category: str | None) -> int:
        """The metadata row of a name in a category: Kineto writes `ProfilerStep#1` both as a
        CPU user_annotation and a gpu_user_annotation, which tools tell apart by category."""
        key = (name, category)
        index = self.name_index.get(key)
        if index is None:
            index = self.name_index[key] = len(self.names)
            self.names.append(key)
        return index

    def flow_number(self, key: tuple) -> int:
        """The number of a flow's (category, id, id2) key."""
        known = -1 if self.known_flow is None else self.known_flow(key)
        if known >= 0:
            return known
        return self.known_flows + self.flow_numbers.setdefault(key, len(self.flow_numbers))

    # ---- one parsed event ----------------------------------------------------------------------
    def add(self, ev: Any, index: int) -> None:
        """One event as json.loads gave it."""
        if type(ev) is not dict:
            self.drops.add("event{s} that {are} not a JSON object", index)
            return
        if not ev:  # jax closes its event list with an empty object
            return
        ph = ev.get("ph")
        if type(ph) is not str:
            self.drops.add("event{s} without a phase (`ph`)" if ph is None else
                           "event{s} whose `ph` is not text",
                           index)
            return
        coerced = self.coerced
        pid = _key(ev.get("pid"), 0, coerced, "pid")
        tid = _key(ev.get("tid"), 0, coerced, "tid")
        if ph == "M":
            self._metadata(ev, pid, tid, index)
            return
        if ph not in _SLICE_PHASES and ph != "C" and ph not in _FLOW_PHASES:
            self.unsupported[ph] += 1
            self.drops.add("event{s} of unsupported phases", index)
            return
        raw_ts = ev.get("ts")
        ts = number(raw_ts)
        if ts is None or not math.isfinite(ts):
            self.drops.add(f"{ph} event{{s}} without ts" if raw_ts is None else
                           "event{s} with a non-numeric ts" if ts is None else
                           "event{s} with a non-finite ts",
                           index)
            return
        if ph in _FLOW_PHASES:
            self._flow(ev, ph, pid, tid, raw_ts, ts, index)
            return
        name = _name(ev.get("name"), coerced)
        category = ev.get("cat")
        if type(category) is not str:
            category = None
        args = ev.get("args")
        if args is not None and type(args) is not dict:
            coerced["args"] += 1
            args = {"args": args}
        if ph == "C":
            self._counter(_counter_name(name, ev.get("id")), category, pid, raw_ts, args, index)
            return
        key = (pid, tid, False)
        if ph == "B":
            self.open_slices.setdefault(key, []).append((raw_ts, ts, name, category, args,
                                                         index))
            return
        if ph == "E":
            stack = self.open_slices.get(key)
            if not stack:
                self.drops.add("E event{s} without a matching B", index)
                return
            raw_begin, begin, name, category, begin_args, begin_index = stack.pop()
            if ts < begin:
                self.drops.add("E event{s} earlier than the matching B", index)
                return
            merged = {**begin_args, **args} if begin_args and args else (begin_args or args)
            self._row(self.track(key), raw_begin, exact_us(raw_ts) - exact_us(raw_begin),
                      (name, category), merged, begin_index)
            return
        raw_dur = 0
        if ph == "X":
            raw = ev.get("dur")
            if raw is not None:
                dur = number(raw)
                if dur is None or not math.isfinite(dur):
                    self.drops.add("X event{s} with a non-numeric dur" if dur is None else
                                   "X event{s} with a non-finite dur", index)
                    return
                if dur < 0:
                    self.drops.add("X event{s} with a negative dur", index)
                    return
                raw_dur = raw
        if category in _DEVICE_CATEGORIES:
            self.device_pids.add(pid)
        self._row(self.track(key), raw_ts, raw_dur, (name, category), args, index)

    def _row(self, track: int, ts: Any, dur: Any, name: tuple[str, str | None], args: Any,
             index: int, value: float = math.nan) -> None:
        """One row; `ts` and `dur` are checked finite numbers as the JSON wrote them, `name` is
        (name, category)."""
        self.r_track.append(track)
        self.r_ts.append(ts)
        self.r_dur.append(dur)
        self.r_name.append(self.name_row(*name))
        self.r_args.append(_ARGS_JSON.encode(args).encode() if args else b"")
        self.r_value.append(value)
        self.r_event.append(index)

    def _counter(self, name: str, category: str | None, pid: Any, ts: Any, args: dict | None,
                 index: int) -> None:
        values = [(k, n) for k, v in (args or {}).items() if is_number(v)
                  and (n := number(v)) is not None and math.isfinite(n)]
        if not values:
            self.drops.add("C event{s} without a finite numeric value", index)
            return
        for key, value in values:
            label = name if len(args) == 1 else f"{name} {key}"
            self._row(self.track((pid, label, True)), ts, 0, (label, category), None, index,
                      value)

    def _flow(self, ev: dict, ph: str, pid: Any, tid: Any, raw_ts: Any, ts: float,
              index: int) -> None:
        flow_id, id2 = ev.get("id"), ev.get("id2")
        if flow_id is None and id2 is None:
            self.drops.add("flow event{s} without id", index)
            return
        coerced = self.coerced
        flow_key = (_key(ev.get("cat"), None, coerced, "cat"), _key(flow_id, None, coerced, "id"),
                    None if id2 is None else json.dumps(id2, sort_keys=True, default=str))
        enclosing = ph != "f" or ev.get("bp") == "e"
        self.flow_points.append((flow_key, (pid, tid, False), raw_ts, ts, enclosing, index))

    def _metadata(self, ev: dict, pid: Any, tid: Any, index: int) -> None:
        args = ev.get("args")
        if args is None:
            args = {}
        elif type(args) is not dict:
            self.drops.add("M event{s} whose args {are} not an object", index)
            return
        kind = ev.get("name")
        if kind == "process_labels" and type(args.get("labels")) is str:
            self.process_labels[pid] = args["labels"].strip()
        elif kind in ("process_name", "thread_name"):
            name = args.get("name")
            if name is None:
                return
            text = _name(name, self.coerced).strip()  # Kineto writes "stream 7 "
            if kind == "process_name":
                self.process_names[pid] = text
            else:
                self.thread_names[(pid, tid)] = text
        elif kind in ("process_sort_index", "thread_sort_index"):
            order = number(args.get("sort_index"))
            if order is None or not math.isfinite(order):
                self.drops.add("M event{s} with a non-numeric sort_index", index)
            elif kind == "process_sort_index":
                self.process_order[pid] = order
            else:
                self.thread_order[(pid, tid)] = order

    def warnings(self) -> list[str]:
        parts = list(self.notes)
        n = self.drops.total()
        if n:
            text = f"skipped {n} of {self.n_events} events: {self.drops.summary()}"
            if self.unsupported:
                text += f" (phases: {', '.join(sorted(self.unsupported))})"
            parts.append(text)
        fields = ", ".join(f"{n} {field}" for field, n in self.coerced.items() if field != "args")
        if fields:
            parts.append(f"read lists or objects given as {fields} as their JSON text")
        if self.coerced["args"]:
            parts.append(f"kept args that are not a JSON object under the key 'args' "
                         f"({self.coerced['args']} events)")
        return [f"{self.source}: " + "; ".join(parts) + "."] if parts else []

    # ---- the trace ------------------------------------------------------------------------------
    def finish(self, args: ChromeArgs, fast: Rows | None = None,
               fast_flows: FlowPoints | None = None) -> HostTrace:
        """The HostTrace of every event added and the `fast` columns; `args` holds the fast
        rows' args (the rows parsed here add theirs to its side buffer)."""
        for key, stack in self.open_slices.items():  # B without E: runs to the trace end
            track = self.track(key)
            for raw_begin, _, name, category, begin_args, index in stack:
                self.open_rows.append(len(self.r_track))
                self._row(track, raw_begin, 0, (name, category), begin_args, index)
        self.open_slices = {}
        parsed, parsed_raw = self._parsed_rows(args)
        rows = parsed if fast is None else fast if not parsed.event.shape[0] else \
            concat_rows([fast, parsed])
        n_fast = 0 if fast is None else fast.event.shape[0]
        ts_f = rows.ts_us.astype(np.float64)
        ts_f += rows.ts_ps / 1e6
        dur_f = rows.dur_ps / 1e6
        if parsed_raw:  # times as the JSON wrote them, which may not fit the exact columns
            ts_f[n_fast:] = np.fromiter(map(float, parsed_raw[0]), np.float64, len(parsed_raw[0]))
            dur_f[n_fast:] = np.fromiter(map(float, parsed_raw[1]), np.float64,
                                         len(parsed_raw[1]))
        self._device_pids(rows)
        keep, anchor = self._keep_in_range(rows.event, ts_f, dur_f)
        if not keep.any():
            found = list(self.notes)
            if self.drops.total():
                found.append(f"skipped {self.drops.total()}: {self.drops.summary()}")
            raise ProfileError(f"{self.source}: the Chrome trace holds no events (slices or "
                               f"counters){' (' + '; '.join(found) + ')' if found else ''}. "
                               "Capture again while the program runs.")
        kept = np.flatnonzero(keep)
        start, shift = self._exact_starts(rows, kept, n_fast, parsed_raw)
        duration = rows.dur_ps[kept]
        if parsed_raw:
            parsed_kept = kept[kept >= n_fast]
            duration[kept >= n_fast] = np.fromiter(
                (picoseconds(parsed_raw[1][i - n_fast]) for i in parsed_kept.tolist()),
                np.int64, parsed_kept.shape[0])
        is_open = np.zeros(rows.event.shape[0], bool)
        is_open[np.asarray(self.open_rows, np.int64) + n_fast] = True
        is_open = is_open[kept]
        event = rows.event[kept]
        track_col, track_keys, _ = _first_use_numbering(rows.track[kept], event,
                                                        self.track_keys)
        name_col, names, name_first = _first_use_numbering(rows.name[kept], event, self.names)
        name_pid = [track_keys[t][0] for t in track_col[name_first].tolist()]
        trace_end = int((start + duration).max())
        duration[is_open] = trace_end - start[is_open]
        order = np.lexsort((event, -duration, start, track_col))
        rows_out = kept[order]
        start, duration, track_col, name_col = (a[order] for a in
                                                (start, duration, track_col, name_col))
        counters = self._counter_values(rows_out, n_fast)

        n_tracks = len(track_keys)
        firsts = np.searchsorted(track_col, np.arange(n_tracks))
        ends = np.searchsorted(track_col, np.arange(n_tracks), side="right")
        depth = np.empty(start.shape[0], np.int16)
        _wire.order_and_depth(start, duration, np.stack([firsts, ends], axis=1), depth)

        sections, section_of_pid = self._sections(track_keys)
        tracks = [self._track_info(k, key, section_of_pid, int(firsts[k]), int(ends[k]))
                  for k, key in enumerate(track_keys)]
        flows = self._flow_edges(fast_flows, start, duration, firsts, ends, anchor, shift,
                                 track_keys)
        args.set_rows(rows.args_at[rows_out], rows.args_len[rows_out], rows.hot,
                      np.where(rows_out < n_fast, rows_out, -1))
        return HostTrace(
            host=self.host, source=self.source, base_ns=self.base_ns + shift.total_ps // 1000,
            start_ps=start, duration_ps=duration,
            meta=name_col.astype(np.int32), depth=depth, sections=sections, tracks=tracks,
            names=[n for n, _ in names], display_names=[n for n, _ in names],
            meta_section=np.array([section_of_pid.get(p, 0) for p in name_pid], np.int32),
            meta_stats=[{} if c is None else {"category": c} for _, c in names],
            details=args,
            counter_values=counters if np.isfinite(counters).any() else None,
            flow_edges=flows, warnings=self.warnings(), ts_base_ns=self.base_ns)

    def _parsed_rows(self, args: ChromeArgs) -> tuple[Rows, tuple[list, list] | None]:
        """The rows of events parsed here as columns (times filled in later, from the raw
        values returned beside them); their args go to the side buffer."""
        n = len(self.r_track)
        at, length = args.add_side(self.r_args)
        empty = np.zeros(n, np.int64)
        rows = Rows(event=np.asarray(self.r_event, np.int64).reshape(n),
                    track=np.asarray(self.r_track, np.int64).reshape(n),
                    name=np.asarray(self.r_name, np.int64).reshape(n),
                    ts_us=empty, ts_ps=empty, dur_ps=empty.copy(), args_at=at, args_len=length,
                    hot={})
        raw = (self.r_ts, self.r_dur) if n else None
        self.parsed_values = np.asarray(self.r_value, np.float64).reshape(n)
        self.r_track = self.r_ts = self.r_dur = self.r_name = self.r_args = self.r_value = []
        self.r_event = []
        return rows, raw

    def _counter_values(self, rows_out: np.ndarray, n_fast: int) -> np.ndarray:
        values = np.full(rows_out.shape[0], np.nan)
        parsed = rows_out >= n_fast
        values[parsed] = self.parsed_values[rows_out[parsed] - n_fast]
        return values

    def _device_pids(self, rows: Rows) -> None:
        """Processes holding device work by category; the rows parsed here were counted as
        they were added, the fast ones are counted here."""
        device_names = [k for k, (_, cat) in enumerate(self.names) if cat in _DEVICE_CATEGORIES]
        if device_names:
            tracks = np.unique(rows.track[np.isin(rows.name, device_names)])
            self.device_pids.update(self.track_keys[t][0] for t in tracks.tolist())

    def _exact_starts(self, rows: Rows, kept: np.ndarray, n_fast: int,
                      parsed_raw: tuple[list, list] | None) -> tuple[np.ndarray, _Shift]:
        """The kept rows' starts after the origin (floored to the ns, which `base_ns` carries),
        exact in picoseconds (chrome_time)."""
        fast = kept[kept < n_fast]
        parsed = kept[kept >= n_fast]
        exact = ([picoseconds(parsed_raw[0][i - n_fast]) for i in parsed.tolist()]
                 if parsed_raw else [])
        lows = [divmod(min(exact), _PS_PER_US)[0]] if exact else []
        if fast.shape[0]:
            lows.append(int(rows.ts_us[fast].min()))
        whole = min(lows)  # the origin's microsecond
        start = np.empty(kept.shape[0], np.int64)
        is_fast = kept < n_fast
        start[is_fast] = (rows.ts_us[fast] - whole) * _PS_PER_US + rows.ts_ps[fast]
        start[~is_fast] = np.fromiter((t - whole * _PS_PER_US for t in exact), np.int64,
                                      len(exact))
        rest = int(start.min()) // 1000 * 1000
        start -= rest
        return start, _Shift(whole, rest)

    def _keep_in_range(self, events: np.ndarray, ts: np.ndarray,
                       dur: np.ndarray) -> tuple[np.ndarray, float]:
        """Rows whose start lies within reach of the trace's median start and whose duration
        fits; the others are dropped and counted (times must fit int64 picoseconds)."""
        if not ts.shape[0]:
            return np.zeros(0, bool), 0.0
        anchor = float(np.median(ts))
        far = np.abs(ts - anchor) > _MAX_SPAN_US
        long = dur > _MAX_SPAN_US
        for mask, reason in ((far, _FAR),
                             (long & ~far, _LONG)):
            hit = np.flatnonzero(mask)
            if hit.shape[0]:
                # a C event with several values is one event in the file
                self.drops.add(reason, int(events[hit].min()), int(np.unique(events[hit]).size))
        return ~(far | long), anchor

    def _sections(self, track_keys: list[tuple]) -> tuple[list[Section], dict]:
        """Processes in the trace's own `process_sort_index` order (those without one after
        them), devices first among equals."""
        pids = list(dict.fromkeys(key[0] for key in track_keys))
        named = Counter(self.process_names.get(pid) for pid in pids)
        sections, section_of_pid = [], {}
        for pid in pids:
            name = self._process_name(pid, named)
            label = self.process_labels.get(pid, "")
            section_of_pid[pid] = len(sections)
            kind = plane_kind(name) if name.startswith("/") else (
                "device" if pid in self.device_pids or _is_device(label) or _is_device(name)
                else "host")
            stats = dict(self.section_stats)
            gpu = self.device_properties.get(pid) if kind == "device" else None
            if gpu is not None:
                stats["device_name"] = str(gpu.get("name", ""))
                stats["device_properties"] = gpu
            sections.append(Section(name=name, kind=kind, stats=stats,
                                    sort_key=(pid not in self.process_order,
                                              self.process_order.get(pid, 0),
                                              # trace markers (_unnamed: text, no name) last
                                              type(pid) is str and pid not in self.process_names,
                                              kind != "device", natural_key(name))))
        return sections, section_of_pid

    def _process_name(self, pid: Any, named: Counter) -> str:
        """The process's name; with its pid where processes share a name (Kineto names the host
        process and each GPU `python3.10`) and its label where Kineto gives one (`GPU 0`)."""
        name = self.process_names.get(pid)
        if not name:
            return _unnamed("Process", pid)
        label = self.process_labels.get(pid, "")
        if label in ("CPU", name):
            label = ""
        if named[name] > 1 or label:
            name = f"{name} ({pid})"
        return f"{name} {label}" if label else name

    def _track_info(self, k: int, key: tuple, section_of_pid: dict, first: int, end: int) -> Track:
        pid, tid, counter = key
        name = str(tid) if counter else self.thread_names.get((pid, tid)) or _unnamed("Thread", tid)
        return Track(section=section_of_pid[pid], name=name,
                     kind="counter" if counter else "slices", first=first, end=end,
                     sort_key=(counter, self.thread_order.get((pid, tid), 0), natural_key(name)))

    def _parsed_flow_points(self) -> FlowPoints:
        points = self.flow_points
        self.flow_points = []
        exact = [divmod(picoseconds(p[2]), _PS_PER_US) if abs(p[3]) < 2.0**62 else (0, 0)
                 for p in points]
        n = len(points)
        return FlowPoints(
            key=np.fromiter((self.flow_number(p[0]) for p in points), np.int64, n),
            track=np.fromiter((self.track(p[1]) for p in points), np.int64, n),
            ts_us=np.fromiter((e[0] for e in exact), np.int64, n),
            ts_ps=np.fromiter((e[1] for e in exact), np.int64, n),
            encloses=np.fromiter((p[4] for p in points), bool, n),
            event=np.fromiter((p[5] for p in points), np.int64, n))

    def _flow_edges(self, fast: FlowPoints | None, start: np.ndarray, duration: np.ndarray,
                    firsts: np.ndarray, ends: np.ndarray, anchor: float, shift: _Shift,
                    track_keys: list[tuple]) -> np.ndarray:
        """Binds each flow point to a slice of its thread and links consecutive points.

        A point binds to the latest-starting slice that contains it (or, for `f` without
        `bp: "e"` and for points no slice contains, to the next slice starting on its thread).
        One sweep per thread over its slices and its points sorted by time: O(n log n).
        """
        parsed = self._parsed_flow_points()
        points = parsed if fast is None else concat_flow_points([fast, parsed])
        by_file = np.argsort(points.event, kind="stable")
        final_track = np.full(len(self.track_keys), -1, np.int64)
        final_track[[self.track_index[k] for k in track_keys]] = np.arange(len(track_keys))
        track_col = final_track[points.track[by_file]]
        on_slices = by_file[track_col >= 0]
        track_col = track_col[track_col >= 0]
        ts_f = points.ts_us[on_slices] + points.ts_ps[on_slices] / 1e6
        far = np.abs(ts_f - anchor) > _MAX_SPAN_US
        if far.any():
            hits = points.event[on_slices[far]]
            self.drops.add(_FAR, int(hits.min()), int(hits.shape[0]))
        chosen = on_slices[~far]
        track_col = track_col[~far]
        if not chosen.shape[0]:
            return np.zeros((0, 3), np.int64)
        fid_col = points.key[chosen]
        at = ((points.ts_us[chosen] - shift.whole_us) * _PS_PER_US + points.ts_ps[chosen]
              - shift.rest_ps)
        by_time = np.lexsort((at, track_col))
        event = np.full(fid_col.shape[0], -1, np.int64)
        _bind_flow_points(start, start + duration, firsts, ends, track_col, at,
                          points.encloses[chosen], by_time, event)
        bound = np.flatnonzero(event >= 0)
        # number flows by their first bound point, in file order
        uniq, first = np.unique(fid_col[bound], return_index=True)
        renumber = np.empty(int(fid_col.max()) + 1, np.int64)
        renumber[uniq[np.argsort(first, kind="stable")]] = np.arange(uniq.shape[0])
        pts = bound[np.lexsort((event[bound], at[bound], fid_col[bound]))]
        src, dst = pts[:-1], pts[1:]
        link = (fid_col[src] == fid_col[dst]) & (event[src] != event[dst])
        edges = np.stack([event[src][link], event[dst][link],
                          renumber[fid_col[src][link]]], axis=1)
        return edges[np.argsort(edges[:, 2], kind="stable")].astype(np.int64).reshape(-1, 3)


@dataclass
class _Shift:
    """What the columns subtract from each exact time: whole_us microseconds, then rest_ps."""

    whole_us: int
    rest_ps: int

    @property
    def total_ps(self) -> int:
        return self.whole_us * _PS_PER_US + self.rest_ps


_ROW_COLUMNS = ("event", "track", "name", "ts_us", "ts_ps", "dur_ps", "args_at", "args_len")


def concat_rows(parts: list[Rows]) -> Rows:
    """Rows one part after another (their hot rows already count the parts before)."""
    if len(parts) == 1:
        return parts[0]
    hot: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for part in parts:
        for name, (rows, values) in part.hot.items():
            before = hot.get(name)
            hot[name] = (rows, values) if before is None else (
                np.concatenate([before[0], rows]), np.concatenate([before[1], values]))
    return Rows(*(np.concatenate([getattr(p, f) for p in parts]) for f in _ROW_COLUMNS),
                hot=hot)


def concat_flow_points(parts: list[FlowPoints]) -> FlowPoints:
    if len(parts) == 1:
        return parts[0]
    return FlowPoints(*(np.concatenate([getattr(p, f) for p in parts])
                        for f in ("key", "track", "ts_us", "ts_ps", "encloses", "event")))


def _first_use_numbering(ids: np.ndarray, event: np.ndarray, keys: list
                         ) -> tuple[np.ndarray, list, np.ndarray]:
    """Renumbers ids by the first event (in file order) that uses each: the new ids, the keys
    in that order (those nobody uses are gone) and, per new id, the row of that first use."""
    never = np.iinfo(np.int64).max
    first = np.full(len(keys), never, np.int64)
    np.minimum.at(first, ids, event)
    used = np.flatnonzero(first < never)
    used = used[np.argsort(first[used], kind="stable")]
    renumber = np.full(len(keys), -1, np.int64)
    renumber[used] = np.arange(used.shape[0])
    hits = np.flatnonzero(event == first[ids])
    row_of = np.full(len(keys), -1, np.int64)
    row_of[ids[hits][::-1]] = hits[::-1]
    return renumber[ids], [keys[k] for k in used.tolist()], row_of[used]


def _unnamed(kind: str, key: Any) -> str:
    """A process or thread no metadata names: `Process 7` by its number, but by its own text
    where the writer gave text (Kineto's trace-level markers: pid `Traces`, tid `PyTorch
    Profiler`), and `Global` where it gave none (Kineto's `Record Window End`, a global-scope
    instant with pid and tid ""): never a row headed `Process ` / `Thread ` with nothing after."""
    if type(key) is str:
        return key.strip() or "Global"
    return f"{kind} {key}"


def _is_device(name: str) -> bool:
    return name.split(" ")[0].upper() in ("GPU", "TPU", "CUDA", "MTIA", "HPU", "XPU")
