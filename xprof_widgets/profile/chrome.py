"""Decoding Chrome trace JSON (jax.profiler's `.trace.json.gz`, PyTorch's `.pt.trace.json`).

Processes become sections, threads become tracks, `C` counters become counter tracks and
`s`/`t`/`f` flow events become explicit flow edges. Event args are kept as one JSON text per
event in a single byte blob, decoded only when an event's details are asked for.

Traces come from many writers and are often hand-edited or cut short, so every field is checked:
an event that cannot be placed on the timeline is dropped and counted (one warning per file says
how many and why), odd but usable values are kept (a list as a thread id becomes its JSON text).
Times that do not fit the int64 picosecond columns are dropped, never wrapped.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections import Counter
from typing import Any

import numpy as np

from .._native.intervals import bind_flow_points as _bind_flow_points
from ..errors import ProfileError
from . import _wire
from .chrome_time import ExactFloat, exact_us, is_number, parse_float, picoseconds
from .ordering import natural_key, plane_kind
from .trace_data import HostTrace, Section, Track

_DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation",
                                "mtia_ccp_events"})
"""Kineto's categories of work that runs on an accelerator: their process is a device."""
_SLICE_PHASES = frozenset({"X", "B", "E", "i", "I", "n"})
_FLOW_PHASES = frozenset({"s", "t", "f"})
_EXPECTED = 'Expected a Chrome trace: {"traceEvents": [...]} or a JSON array of trace events.'
_MAX_SPAN_US = 2.0**61 / 1e6
"""How far (26.7 days) an event may start from the trace's median start, and how long it may
last: start + duration then always fits int64 picoseconds."""
_ARGS_JSON = json.JSONEncoder(default=str)
"""One encoder for every event's args (json.dumps makes a new one per call when given options)."""
_FAR = "event{s} more than 26 days away from the trace's other events"
_LONG = "event{s} with a dur over 26 days"


def decode_chrome(data: bytes, source: str, host: str) -> HostTrace:
    """Decodes a Chrome trace (optionally gzipped); `source` names the file in errors."""
    events, damage, header = _load_events(data, source)
    builder = _Builder(source, host)
    if damage:
        builder.notes.append(damage)
    builder.base_ns = _base_ns(header, builder.notes)
    if isinstance(header.get("distributedInfo"), dict):  # Kineto's rank, world size, backend
        builder.section_stats["distributedInfo"] = header["distributedInfo"]
    builder.device_properties = _device_properties(header)
    return builder.build(events)


# ---- reading the JSON ---------------------------------------------------------------------------
def _load_events(data: bytes, source: str) -> tuple[list, str, dict]:
    """The event list, a note when only a damaged file's intact start could be read, and the
    document's other keys (the trace's header)."""
    if not data:
        raise ProfileError(f"{source}: the file is empty (0 bytes). {_EXPECTED}")
    gzip_error = None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            gzip_error = exc
            data = _gunzip_prefix(data)
    try:
        doc, damage = _parse(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        events, at = _salvage(data)
        if not events:
            if gzip_error is not None:
                raise ProfileError(f"{source}: the gzip stream is truncated or corrupt "
                                   f"({gzip_error}) and no complete event precedes the damage; "
                                   "copy the file again or capture a new profile.") from exc
            raise ProfileError(f"{source}: not valid JSON ({_reason(exc)}). {_EXPECTED}") from exc
        what = (f"the gzip stream is truncated or corrupt ({gzip_error})" if gzip_error
                else f"the JSON breaks off at character {at} ({_reason(exc)})")
        return events, (f"{what}: kept the {len(events)} complete events before it; copy the "
                        "file again or capture a new profile for the rest"), {}
    if gzip_error is not None:  # the JSON happened to end where the gzip data broke off
        damage = f"the gzip stream is truncated or corrupt ({gzip_error})"
    known = _known_non_trace(doc)
    if known:
        raise ProfileError(f"{source}: {known}")
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if events is None:
            keys = ", ".join(list(map(str, doc))[:5])
            raise ProfileError(f"{source}: a JSON object without a `traceEvents` list (its keys: "
                               f"{keys or 'none'}); this is not a Chrome trace. {_EXPECTED}")
    else:
        events = doc
    header = doc if isinstance(doc, dict) else {}
    if not isinstance(events, list):
        what = "`traceEvents` is" if isinstance(doc, dict) else "the JSON document is"
        raise ProfileError(f"{source}: {what} a {_json_type(events)}, not a list of events; "
                           f"this is not a Chrome trace. {_EXPECTED}")
    return events, damage, header


def _known_non_trace(doc: Any) -> str:
    """What a JSON file that PyTorch's profiler writes beside its traces is, when it is one."""
    if isinstance(doc, dict) and "nodes" in doc and "schema" in doc and "traceEvents" not in doc:
        return ("a PyTorch execution trace (ExecutionTraceObserver's graph of operators), not a "
                "timeline; open the Kineto trace recorded with it (the profiler's "
                "export_chrome_trace or tensorboard_trace_handler output).")
    if (isinstance(doc, list) and doc and all(isinstance(row, list) for row in doc[:100])
            and all(len(row) == 4 and all(type(v) is int for v in row) for row in doc[:100])):
        return ("PyTorch's raw memory timeline (profile.export_memory_timeline: rows of time, "
                "action, bytes, category), not a trace; open the Kineto trace of the same run, "
                "recorded with profile_memory=True, for its memory events.")
    return ""


def _device_properties(header: dict) -> dict[int, dict]:
    """Kineto's `deviceProperties` (the GPU's name, memory, SM count) by device id, which is
    the pid of that GPU's process in the trace."""
    listed = header.get("deviceProperties")
    if not isinstance(listed, list):
        return {}
    return {d["id"]: d for d in listed if isinstance(d, dict) and type(d.get("id")) is int}


def _base_ns(header: dict, notes: list[str]) -> int:
    """Kineto's `baseTimeNanoseconds`: the epoch nanosecond its `ts` values count from."""
    value = header.get("baseTimeNanoseconds")
    if value is None:
        return 0
    if type(value) is int:
        return value
    if type(value) is str and value.strip().isdigit():
        return int(value)
    if type(value) is float and value.is_integer() and abs(value) < 2.0**63:
        return int(value)
    notes.append(f"ignored a baseTimeNanoseconds that is not an integer ({str(value)[:40]})")
    return 0


def _parse(data: bytes) -> tuple[Any, str]:
    try:
        return json.loads(data, parse_float=parse_float), ""
    except UnicodeDecodeError as exc:  # a bad byte in a name: read as a replacement character
        return json.loads(data.decode("utf-8", errors="replace"), parse_float=parse_float), (
            f"bytes that are not UTF-8 (the first at byte {exc.start}) were read as U+FFFD")


def _gunzip_prefix(data: bytes) -> bytes:
    """What a truncated or corrupt gzip stream yields before the damage."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = []
    for at in range(0, len(data), 1 << 20):
        try:
            out.append(inflater.decompress(data[at:at + (1 << 20)]))
        except zlib.error:
            break
        if inflater.eof:
            break
    return b"".join(out)


def _salvage(data: bytes) -> tuple[list, int]:
    """The complete events at the start of a damaged trace and the byte where reading stopped.

    Chrome's trace format lets a writer that crashed leave the closing `]` out; this reads any
    cut-off or corrupted file up to its first unreadable event, top level first.
    """
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    decoder = json.JSONDecoder(parse_float=parse_float)
    pos = _skip_ws(text, 0)
    if text.startswith("[", pos):
        return _salvage_array(text, pos, decoder)
    if not text.startswith("{", pos):
        return [], 0
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] == '"':
        try:
            key, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return [], pos
        pos = _skip_ws(text, pos)
        if not text.startswith(":", pos):
            return [], pos
        pos = _skip_ws(text, pos + 1)
        if key == "traceEvents" and text.startswith("[", pos):
            return _salvage_array(text, pos, decoder)
        try:
            _, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return [], pos
        pos = _skip_ws(text, pos)
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
    return [], pos


def _salvage_array(text: str, pos: int, decoder: json.JSONDecoder) -> tuple[list, int]:
    events: list = []
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] != "]":
        try:
            value, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        events.append(value)
        pos = _skip_ws(text, end)
        if not text.startswith(",", pos):
            break
        pos = _skip_ws(text, pos + 1)
    return events, pos


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text at byte {exc.start}"
    return str(exc)


def _json_type(value: Any) -> str:
    names = {dict: "JSON object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


# ---- checking fields ----------------------------------------------------------------------------
def _number(value: Any) -> float | None:
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


def _key(value: Any, default: Any, coerced: Counter, field: str) -> Any:
    """A pid/tid/flow id usable as a dict key: lists and objects become their JSON text."""
    kind = type(value)
    if kind is int or kind is str:
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
        self.first.setdefault(reason, index)

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


# ---- building the columns -----------------------------------------------------------------------
class _Builder:
    def __init__(self, source: str, host: str):
        self.source = source
        self.host = host
        self.base_ns = 0  # the epoch ns that `ts` counts from (Kineto's baseTimeNanoseconds)
        self.shift_ps = 0  # what the columns subtract from each exact time: the origin, floored
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
        self.names: list[str] = []
        self.name_pid: list[Any] = []
        self.name_stats: list[dict[str, Any]] = []
        # one entry per row: track, ts and dur (finite numbers as the JSON wrote them, see
        # chrome_time), name row, args JSON (or b""), counter value, index of the event in the file
        self.r_track: list[int] = []
        self.r_ts: list[Any] = []
        self.r_dur: list[Any] = []
        self.r_name: list[int] = []
        self.r_args: list[bytes] = []
        self.r_value: list[float] = []
        self.r_event: list[int] = []
        self.open_rows: list[int] = []  # rows of B events that no E closed: run to the trace end
        self.flow_points: list[tuple] = []  # (flow key, track key, ts_us, encloses, event index)
        self.open_slices: dict[tuple, list] = {}
        self.unsupported: Counter = Counter()
        self.drops = _Drops()
        self.coerced: Counter = Counter()
        self.notes: list[str] = []
        self.n_events = 0

    def build(self, events: list) -> HostTrace:
        self.n_events = len(events)
        for index, ev in enumerate(events):
            if type(ev) is dict:
                if ev:  # jax closes its event list with an empty object
                    self._add(ev, index)
            else:
                self.drops.add("event{s} that {are} not a JSON object", index)
        return self._finish()

    def _track(self, key: tuple) -> int:
        index = self.track_index.get(key)
        if index is None:
            index = self.track_index[key] = len(self.track_keys)
            self.track_keys.append(key)
        return index

    def _name_row(self, name: str, category: str | None, pid: Any) -> int:
        """The metadata row of a name in a category: Kineto writes `ProfilerStep#1` both as a
        CPU user_annotation and a gpu_user_annotation, which tools tell apart by category."""
        key = (name, category)
        index = self.name_index.get(key)
        if index is None:
            index = self.name_index[key] = len(self.names)
            self.names.append(name)
            self.name_pid.append(pid)
            self.name_stats.append({} if category is None else {"category": category})
        return index

    def _add(self, ev: dict, index: int) -> None:
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
        ts = _number(raw_ts)
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
            self._counter(name, category, pid, raw_ts, args, index)
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
            self._row(self._track(key), raw_begin, exact_us(raw_ts) - exact_us(raw_begin),
                      (name, category), pid, merged, begin_index)
            return
        raw_dur = 0
        if ph == "X":
            raw = ev.get("dur")
            if raw is not None:
                dur = _number(raw)
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
        self._row(self._track(key), raw_ts, raw_dur, (name, category), pid, args, index)

    def _row(self, track: int, ts: Any, dur: Any, name: tuple[str, str | None], pid: Any,
             args: Any, index: int, value: float = math.nan) -> None:
        """One row; `ts` and `dur` are checked finite numbers as the JSON wrote them, `name` is
        (name, category)."""
        self.r_track.append(track)
        self.r_ts.append(ts)
        self.r_dur.append(dur)
        self.r_name.append(self._name_row(*name, pid))
        self.r_args.append(_ARGS_JSON.encode(args).encode() if args else b"")
        self.r_value.append(value)
        self.r_event.append(index)

    def _counter(self, name: str, category: str | None, pid: Any, ts: Any, args: dict | None,
                 index: int) -> None:
        values = [(k, number) for k, v in (args or {}).items() if is_number(v)
                  and (number := _number(v)) is not None and math.isfinite(number)]
        if not values:
            self.drops.add("C event{s} without a finite numeric value", index)
            return
        for key, value in values:
            label = name if len(args) == 1 else f"{name} {key}"
            self._row(self._track((pid, label, True)), ts, 0, (label, category), pid, None, index,
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
            order = _number(args.get("sort_index"))
            if order is None or not math.isfinite(order):
                self.drops.add("M event{s} with a non-numeric sort_index", index)
            elif kind == "process_sort_index":
                self.process_order[pid] = order
            else:
                self.thread_order[(pid, tid)] = order

    def _warning(self) -> list[str]:
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

    def _finish(self) -> HostTrace:
        for key, stack in self.open_slices.items():  # B without E: runs to the trace end
            track = self._track(key)
            for raw_begin, _, name, category, args, index in stack:
                self.open_rows.append(len(self.r_track))
                self._row(track, raw_begin, 0, (name, category), key[0], args, index)
        self.open_slices = {}
        n = len(self.r_ts)
        ts = np.fromiter(map(float, self.r_ts), np.float64, n)
        dur = np.fromiter(map(float, self.r_dur), np.float64, n)
        keep, anchor = self._keep_in_range(ts, dur)
        if not keep.any():
            found = list(self.notes)
            if self.drops.total():
                found.append(f"skipped {self.drops.total()}: {self.drops.summary()}")
            raise ProfileError(f"{self.source}: the Chrome trace holds no events (slices or "
                               f"counters){' (' + '; '.join(found) + ')' if found else ''}. "
                               "Capture again while the program runs.")
        is_open = np.zeros(ts.shape[0], bool)
        is_open[self.open_rows] = True
        rows = np.flatnonzero(keep)
        ts, dur, is_open = ts[rows], dur[rows], is_open[rows]
        track_col = np.asarray(self.r_track, np.int64)[rows]
        meta = np.asarray(self.r_name, np.int64)[rows]
        counters = np.asarray(self.r_value, np.float64)[rows]

        used, track_col = np.unique(track_col, return_inverse=True)  # tracks that kept events
        self.track_keys = [self.track_keys[k] for k in used.tolist()]
        start, duration = self._exact_times(rows)
        trace_end = int((start + duration).max())
        duration[is_open] = trace_end - start[is_open]
        order = np.lexsort((-duration, start, track_col))
        start, duration, track_col, meta, counters = (
            a[order] for a in (start, duration, track_col, meta, counters))
        r_args = self.r_args
        blobs = [r_args[i] for i in rows[order].tolist()]
        self.r_track = self.r_ts = self.r_dur = self.r_name = self.r_args = self.r_value = []

        n_tracks = len(self.track_keys)
        firsts = np.searchsorted(track_col, np.arange(n_tracks))
        ends = np.searchsorted(track_col, np.arange(n_tracks), side="right")
        depth = np.empty(start.shape[0], np.int16)
        _wire.order_and_depth(start, duration, np.stack([firsts, ends], axis=1), depth)

        sections, section_of_pid = self._sections()
        tracks = [self._track_info(k, key, section_of_pid, int(firsts[k]), int(ends[k]))
                  for k, key in enumerate(self.track_keys)]
        offsets = np.zeros(start.shape[0] + 1, np.int64)
        np.cumsum([len(b) for b in blobs], out=offsets[1:])
        flows = self._flow_edges(start, duration, firsts, ends, anchor)
        return HostTrace(
            host=self.host, source=self.source, base_ns=self.base_ns + self.shift_ps // 1000,
            start_ps=start, duration_ps=duration,
            meta=meta.astype(np.int32), depth=depth, sections=sections, tracks=tracks,
            names=self.names, display_names=list(self.names),
            meta_section=np.array([section_of_pid.get(p, 0) for p in self.name_pid], np.int32),
            meta_stats=self.name_stats,
            details=ChromeArgs(b"".join(blobs), offsets),
            counter_values=counters if np.isfinite(counters).any() else None,
            flow_edges=flows, warnings=self._warning())

    def _exact_times(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The kept rows' starts after the origin (floored to the ns, which `base_ns` carries)
        and their durations, exact in picoseconds (chrome_time)."""
        r_ts, r_dur = self.r_ts, self.r_dur
        exact = [picoseconds(r_ts[i]) for i in rows.tolist()]
        self.shift_ps = min(exact) // 1000 * 1000
        shift = self.shift_ps
        start = np.fromiter((t - shift for t in exact), np.int64, len(exact))
        duration = np.fromiter((picoseconds(r_dur[i]) for i in rows.tolist()), np.int64,
                               len(exact))
        return start, duration

    def _keep_in_range(self, ts: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, float]:
        """Rows whose start lies within reach of the trace's median start and whose duration
        fits; the others are dropped and counted (times must fit int64 picoseconds)."""
        if not ts.shape[0]:
            return np.zeros(0, bool), 0.0
        anchor = float(np.median(ts))
        far = np.abs(ts - anchor) > _MAX_SPAN_US
        long = dur > _MAX_SPAN_US
        events = np.asarray(self.r_event, np.int64)
        for mask, reason in ((far, _FAR),
                             (long & ~far, _LONG)):
            hit = np.flatnonzero(mask)
            if hit.shape[0]:
                # a C event with several values is one event in the file
                self.drops.add(reason, int(events[hit].min()), int(np.unique(events[hit]).size))
        return ~(far | long), anchor

    def _sections(self) -> tuple[list[Section], dict]:
        """Processes in the trace's own `process_sort_index` order (those without one after
        them), devices first among equals."""
        pids = list(dict.fromkeys(key[0] for key in self.track_keys))
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
                                              self.process_order.get(pid, 0), kind != "device",
                                              natural_key(name))))
        return sections, section_of_pid

    def _process_name(self, pid: Any, named: Counter) -> str:
        """The process's name; with its pid where processes share a name (Kineto names the host
        process and each GPU `python3.10`) and its label where Kineto gives one (`GPU 0`)."""
        name = self.process_names.get(pid)
        if name is None:
            return f"Process {pid}"
        label = self.process_labels.get(pid, "")
        if label in ("CPU", name):
            label = ""
        if named[name] > 1 or label:
            name = f"{name} ({pid})"
        return f"{name} {label}" if label else name

    def _track_info(self, k: int, key: tuple, section_of_pid: dict, first: int, end: int) -> Track:
        pid, tid, counter = key
        name = str(tid) if counter else self.thread_names.get((pid, tid), f"Thread {tid}")
        return Track(section=section_of_pid[pid], name=name,
                     kind="counter" if counter else "slices", first=first, end=end,
                     sort_key=(counter, self.thread_order.get((pid, tid), 0), natural_key(name)))

    def _flow_edges(self, start: np.ndarray, duration: np.ndarray, firsts: np.ndarray,
                    ends: np.ndarray, anchor: float) -> np.ndarray:
        """Binds each flow point to a slice of its thread and links consecutive points.

        A point binds to the latest-starting slice that contains it (or, for `f` without
        `bp: "e"` and for points no slice contains, to the next slice starting on its thread).
        One sweep per thread over its slices and its points sorted by time: O(n log n).
        """
        track_of = {key: k for k, key in enumerate(self.track_keys)}
        flow_ids: dict[tuple, int] = {}
        fid, track, ts, enclosing = [], [], [], []
        for flow_key, track_key, raw_ts, point_ts, encloses, index in self.flow_points:
            k = track_of.get(track_key)
            if k is None:
                continue  # no slice on its thread
            if abs(point_ts - anchor) > _MAX_SPAN_US:
                self.drops.add(_FAR, index)
                continue
            fid.append(flow_ids.setdefault(flow_key, len(flow_ids)))
            track.append(k)
            ts.append(picoseconds(raw_ts) - self.shift_ps)
            enclosing.append(encloses)
        self.flow_points = []
        if not fid:
            return np.zeros((0, 3), np.int64)
        fid_col = np.asarray(fid, np.int64)
        track_col = np.asarray(track, np.int64)
        at = np.asarray(ts, np.int64)
        by_time = np.lexsort((at, track_col))
        event = np.full(fid_col.shape[0], -1, np.int64)
        _bind_flow_points(start, start + duration, firsts, ends, track_col, at,
                          np.asarray(enclosing, np.bool_), by_time, event)
        bound = np.flatnonzero(event >= 0)
        # number flows by their first bound point, in file order
        uniq, first = np.unique(fid_col[bound], return_index=True)
        renumber = np.empty(int(fid_col.max()) + 1, np.int64)
        renumber[uniq[np.argsort(first, kind="stable")]] = np.arange(uniq.shape[0])
        points = bound[np.lexsort((event[bound], at[bound], fid_col[bound]))]
        src, dst = points[:-1], points[1:]
        link = (fid_col[src] == fid_col[dst]) & (event[src] != event[dst])
        edges = np.stack([event[src][link], event[dst][link],
                          renumber[fid_col[src][link]]], axis=1)
        return edges[np.argsort(edges[:, 2], kind="stable")].astype(np.int64).reshape(-1, 3)


def _is_device(name: str) -> bool:
    return name.split(" ")[0].upper() in ("GPU", "TPU", "CUDA", "MTIA", "HPU", "XPU")


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
