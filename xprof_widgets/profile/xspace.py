"""Decoding one `.xplane.pb` (an XSpace) into columnar `HostTrace` form.

The event-level structure is walked by compiled scanners (`_wire`); each plane's header (its
metadata maps and stats, small next to its events) is parsed by upb from the header's bytes
alone. The parsed message tree never holds events, and nothing of it outlives this call.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
from google.protobuf.message import DecodeError

from ..errors import ProfileError
from . import _wire
from .derived import MetadataRows
from .ordering import (
    GPU_PREFIX,
    INTERNAL_EVENTS,
    gpu_line_keys,
    line_sort_key,
    plane_kind,
    plane_sort_keys,
)
from .schema import XEvent, XPlane, XSpace
from .stats import stats_dict, unpack_flow
from .trace_data import HostTrace, Section, Track
from .xspace_derived import (
    Decoding,
    already_grouped,
    core_rows,
    name_step_roots,
    regions,
    stream_rows,
)

_WIRE_ERRORS = {
    _wire.ERR_TRUNCATED: "a field runs past the end of the data (truncated or corrupt file)",
    _wire.ERR_WIRETYPE: "an unknown protobuf wire type (the file is not an XSpace)",
    _wire.ERR_VARINT: "a malformed varint (the file is corrupt or not an XSpace)",
}
_SKIPPED_PLANES = {"/host:metadata"}
_HLO_PROTO_STAT = "Hlo Proto"
_PROGRAM_ID_SUFFIX = re.compile(r"(.*)\((\d+)\)", re.DOTALL)
_COUNTER_LINES = {"_counters_", "LLO Utilization"}
"""Lines whose events are counter samples: `_counters_`, and the utilization of each execution
unit that TPU custom-call tracing writes (XProf 2.24's trace viewer draws the latter as instants;
its newer one, as counters)."""
_UINT64 = (1 << 64) - 1


def decode_xspace(data: bytes, source: str, host: str) -> HostTrace:
    """Decodes a serialized XSpace; `source` names the file in error messages."""
    if not data:
        raise ProfileError(f"{source}: the file is empty (0 bytes); expected a serialized XSpace. "
                           "Capture the profile again; the writer may have been interrupted.")
    buf = np.frombuffer(data, dtype=np.uint8)
    counts = _scan(buf, None, source)
    _, _, n_planes, n_spans, n_lines, n_events = counts
    planes = np.empty((n_planes, 2), np.int64)
    spans = np.empty((n_spans, 3), np.int64)
    lines = np.empty((n_lines, 7), np.int64)
    line_names = np.empty((n_lines, 4), np.int64)
    meta = np.empty(n_events, np.int64)
    offset = np.empty(n_events, np.int64)
    duration = np.empty(n_events, np.int64)
    record = np.empty(n_events, np.int64)
    _scan(buf, (planes, spans, lines, line_names, meta, offset, duration, record), source)

    if len(data) < 2**32 - 1:  # a file under 4 GiB needs 4 bytes per record offset, not 8
        record = record.astype(np.uint32)
    warnings: list[str] = []
    space, why = _parse_header(XSpace, data, spans[spans[:, 0] == -1])
    if why:
        warnings.append(f"{source}: the errors and warnings the profiler wrote were left out: "
                        f"they do not parse ({why}).")
    headers, unreadable = [], []
    for k in range(n_planes):
        plane, why = _parse_header(XPlane, data, spans[spans[:, 0] == k])
        if why:
            plane.name = f"<plane {k}, unreadable>"
            unreadable.append(k)
            warnings.append(f"{source}: plane {k} was left out with its events: its name or "
                            f"metadata do not parse ({why}).")
        headers.append(plane)
    if unreadable:
        on_plane = np.repeat(lines[:, 0], lines[:, 6] - lines[:, 5])
        lines, (meta, offset, duration, record) = _kept(
            lines, ~np.isin(on_plane, unreadable), (meta, offset, duration, record))
    return _assemble(data, source, host, space, headers, planes[:, 0].copy(), lines, line_names,
                     meta, offset, duration, record, warnings)


def _scan(buf: np.ndarray, out: tuple | None, source: str) -> tuple:
    if out is None:
        empty2 = np.empty((0, 2), np.int64)
        empty1 = np.empty(0, np.int64)
        out = (empty2, np.empty((0, 3), np.int64), np.empty((0, 7), np.int64),
               np.empty((0, 4), np.int64), empty1, empty1, empty1, empty1)
        result = _wire.scan_xspace(buf, False, *out)
    else:
        result = _wire.scan_xspace(buf, True, *out)
    status, where = result[0], result[1]
    if status != _wire.OK:
        raise ProfileError(
            f"{source}: not a readable XSpace: {_WIRE_ERRORS[status]} at byte {where} of "
            f"{buf.shape[0]}. Expected a complete `.xplane.pb` as written by jax.profiler or XProf; "
            "capture the profile again or copy the file completely.")
    return result


def _parse_header(message_class: Any, data: bytes, spans: np.ndarray) -> tuple[Any, str]:
    """The message in a header's bytes, or an empty one and why not (a name that is not
    UTF-8, say): that part of the file is left out, not the file."""
    raw = b"".join(data[s:e] for _, s, e in spans)
    try:
        return message_class.FromString(raw), ""
    except DecodeError as exc:
        return message_class(), str(exc) or "corrupt"


def _assemble(data: bytes, source: str, host: str, space: Any, headers: list,
              plane_starts: np.ndarray, lines: np.ndarray,
              line_names: np.ndarray, meta_ids: np.ndarray, offset: np.ndarray,
              duration: np.ndarray, record: np.ndarray, warnings: list[str]) -> HostTrace:
    warnings = [*space.errors, *space.warnings, *warnings]
    sections: list[Section] = []
    section_of_plane: dict[int, int] = {}
    names: list[str] = []
    display_names: list[str] = []
    meta_section: list[int] = []
    meta_stats: list[dict] = []
    meta_row_maps: list[tuple[np.ndarray, np.ndarray]] = []  # per plane: sorted ids, rows
    stat_names: list[dict[int, str]] = []
    hlo_protos: dict[int, tuple[str, bytes]] = {}

    plane_keys = plane_sort_keys([(plane.name, plane.id) for plane in headers])
    for k, plane in enumerate(headers):
        names_of_stats = {sid: sm.name for sid, sm in plane.stat_metadata.items()}
        stat_names.append(names_of_stats)
        if plane.name in _SKIPPED_PLANES:
            hlo_protos.update(_hlo_protos(plane, names_of_stats))
        section_of_plane[k] = len(sections)
        sections.append(Section(name=plane.name, kind=plane_kind(plane.name),
                                stats=stats_dict(plane.stats, names_of_stats),
                                sort_key=plane_keys[k]))
        ids = np.fromiter(plane.event_metadata.keys(), np.int64, len(plane.event_metadata))
        ids.sort()
        rows = np.arange(len(names), len(names) + ids.shape[0], dtype=np.int64)
        meta_row_maps.append((ids, rows))
        for mid in ids.tolist():
            md = plane.event_metadata[mid]
            names.append(md.name)
            display_names.append(md.display_name or _short_name(md.name))
            meta_section.append(section_of_plane[k])
            meta_stats.append(stats_dict(md.stats, names_of_stats))

    lines, shift_ps, (meta_ids, offset, duration, record), dropped = _times_in_range(
        lines, meta_ids, offset, duration, record)
    meta_rows = np.empty(meta_ids.shape[0], np.int32)
    for k, (ids, rows) in enumerate(meta_row_maps):
        own_lines = lines[lines[:, 0] == k]
        if not own_lines.shape[0]:
            continue
        # The scanner numbers events in file order, so a plane's events are contiguous.
        mine = slice(int(own_lines[:, 5].min()), int(own_lines[:, 6].max()))
        meta_rows[mine] = _rows_of(ids, rows, meta_ids[mine], names, display_names,
                                   meta_section, meta_stats, section_of_plane[k])

    # Absolute times can exceed int64 picoseconds (epoch nanoseconds); keep them relative.
    base_ns = _base_ns(lines)
    start = offset  # reused in place: start = line base + offset
    for k in np.flatnonzero(shift_ps).tolist():
        start[lines[k, 5]:lines[k, 6]] += shift_ps[k]
    rows = MetadataRows(names, display_names, meta_section, meta_stats)
    group = np.repeat(np.arange(lines.shape[0], dtype=np.int32) * 2, lines[:, 6] - lines[:, 5])
    text_of_lines = [_line_name(data, line_names, k) for k in range(lines.shape[0])]
    derives = not already_grouped(stat_names)
    decoding = Decoding(source, headers, lines, text_of_lines,
                        XSpaceDetails(data, record, plane_starts, stat_names, source), start,
                        duration, meta_rows, rows, section_of_plane, warnings)
    r_start = np.empty(0, np.int64)
    if derives:
        name_step_roots(decoding)
        r_start, r_duration, r_group, r_rows = regions(decoding, group)
        if r_start.shape[0]:  # derived slices have no record in the file
            start = np.concatenate([start, r_start])
            duration = np.concatenate([duration, r_duration])
            meta_rows = np.concatenate([meta_rows, r_rows])
            group = np.concatenate([group, r_group])
            record = np.concatenate([record, np.full(r_start.shape[0], _no_record(record),
                                                     record.dtype)])
    # Each line becomes a track of the events XProf draws, plus one of the events it keeps
    # out of the trace viewer (allocator and tf.data bookkeeping), so neither shifts the other.
    internal = np.fromiter((n in INTERNAL_EVENTS for n in names), bool, len(names))[meta_rows]
    group += internal
    line_keys = _line_keys(headers, lines, text_of_lines, renumber_gpu=derives)
    rows_of_tracks = [(int(lines[k, 0]), text_of_lines[k] or f"line {int(lines[k, 1])}",
                       line_keys[k], hidden, int(lines[k, 1]))
                      for k in range(lines.shape[0]) for hidden in (0, 1)]
    counters = _split_counters(rows_of_tracks, lines, group, meta_rows, display_names)
    derived: list = []
    if derives:  # the rows of cores and streams read the columns with the regions in
        decoding.scan = XSpaceDetails(data, record, plane_starts, stat_names, source)
        decoding.start, decoding.duration, decoding.meta_rows = start, duration, meta_rows
        for made, note in (core_rows(decoding), stream_rows(decoding, line_keys)):
            derived += made
            if note:
                warnings.append(f"{source}: {note}")
    if derived:  # rows XProf derives get tracks of their own, after the file's
        first = len(rows_of_tracks)
        rows_of_tracks += [(plane_index, row.name, key, 0, row.line_id)
                           for plane_index, row, key in derived]
        group = np.concatenate([group] + [np.full(row.start.shape[0], first + k, np.int32)
                                          for k, (_, row, _) in enumerate(derived)])
        start = np.concatenate([start] + [row.start for _, row, _ in derived])
        duration = np.concatenate([duration] + [row.duration for _, row, _ in derived])
        meta_rows = np.concatenate([meta_rows] + [row.meta for _, row, _ in derived])
        record = np.concatenate([record, np.full(start.shape[0] - record.shape[0],
                                                 _no_record(record), record.dtype)])
    if internal.any() or r_start.shape[0] or derived or counters:
        moved = np.argsort(group, kind="stable")
        meta_rows, record = meta_rows[moved], record[moved]
        start, duration = start[moved], duration[moved]
    sizes = np.bincount(group, minlength=len(rows_of_tracks))
    bounds = np.stack([np.cumsum(sizes) - sizes, np.cumsum(sizes)], axis=1)
    depth = np.empty(start.shape[0], np.int16)
    perm = _wire.order_and_depth(start, duration, bounds, depth)
    if perm.shape[0]:
        meta_rows = meta_rows[perm]
        record = record[perm]

    tracks: list[Track] = []
    for g, (plane_index, name, key, hidden, line_id) in enumerate(rows_of_tracks):
        lo, hi = int(bounds[g, 0]), int(bounds[g, 1])
        if lo == hi or headers[plane_index].name in _SKIPPED_PLANES:
            continue
        kind = "hidden" if hidden else "counter" if g in counters else "slices"
        tracks.append(Track(section=section_of_plane[plane_index], name=name, kind=kind,
                            first=lo, end=hi, sort_key=(kind != "counter", key, hidden),
                            line_id=line_id))

    details = XSpaceDetails(data, record, plane_starts, stat_names, source)
    counter_values = _counter_values(tracks, details, start.shape[0], sections, warnings)
    if dropped:
        warnings.append(f"{source}: skipped {dropped} events whose times do not fit: a negative "
                        "duration, or a start or end more than 26 days from the other events.")
    return HostTrace(
        host=host, source=source, base_ns=base_ns, start_ps=start, duration_ps=duration,
        meta=meta_rows.astype(np.int32, copy=False), depth=depth, sections=sections, tracks=tracks,
        names=names, display_names=display_names,
        meta_section=np.asarray(meta_section, np.int32), meta_stats=meta_stats,
        details=details, hlo_protos=hlo_protos, counter_values=counter_values,
        derived=record == _no_record(record), warnings=warnings)


def _split_counters(rows_of_tracks: list, lines: np.ndarray, group: np.ndarray,
                    meta_rows: np.ndarray, display_names: list[str]) -> set[int]:
    """A counter line holds one counter per event name, as XProf draws `_counters_`: its events
    move (in `group`) to a track of their own per name, appended to `rows_of_tracks`; returns
    the counter tracks' groups."""
    counters: set[int] = set()
    for k in range(lines.shape[0]):
        plane_index, name, key, _, line_id = rows_of_tracks[2 * k]
        if name not in _COUNTER_LINES:
            continue
        mine = np.arange(lines[k, 5], lines[k, 6])
        mine = mine[group[mine] == 2 * k]  # internal events stay on the hidden track
        for row in np.unique(meta_rows[mine]).tolist():
            rows_of_tracks.append((plane_index, display_names[row], key, 0, line_id))
            counters.add(len(rows_of_tracks) - 1)
            group[mine[meta_rows[mine] == row]] = len(rows_of_tracks) - 1
    return counters


def _line_name(data: bytes, line_names: np.ndarray, k: int) -> str:
    """A line's display name, else its name."""
    ns, ne, ds, de = line_names[k]
    return data[ds:de].decode("utf-8", "replace") or data[ns:ne].decode("utf-8", "replace")


def _line_keys(headers: list, lines: np.ndarray, names: list[str],
               renumber_gpu: bool) -> list[int]:
    """Each line's place in its plane, as XProf's trace viewer orders them: by display id,
    else id; GPU streams renumbered as XProf does where it derives their rows."""
    keys = [line_sort_key(int(lines[k, 1]), int(lines[k, 2])) for k in range(lines.shape[0])]
    for p, plane in enumerate(headers):
        if not renumber_gpu or not plane.name.startswith(GPU_PREFIX):
            continue
        own = np.flatnonzero(lines[:, 0] == p).tolist()
        described = [(int(lines[k, 1]), int(lines[k, 2]), names[k],
                      int(lines[k, 6] - lines[k, 5])) for k in own]
        for k, key in zip(own, gpu_line_keys(described), strict=True):
            keys[k] = key
    return keys


_SCAN_CHUNK = 1 << 20
_TIME_LIMIT_PS = 1 << 61  # 26 days: start + duration stays far inside int64


def _base_ns(lines: np.ndarray) -> int:
    """The line timestamp events are counted from: that of the median event, so that a line
    with a wild timestamp cannot push the other events out of range."""
    counts = lines[:, 6] - lines[:, 5]
    if not counts.sum():
        return int(lines[:, 3].min()) if lines.shape[0] else 0
    order = np.argsort(lines[:, 3], kind="stable")
    middle = np.searchsorted(np.cumsum(counts[order]), (counts.sum() + 1) // 2)
    return int(lines[order[middle], 3])


def _times_in_range(lines: np.ndarray, meta_ids: np.ndarray, offset: np.ndarray,
                    duration: np.ndarray, record: np.ndarray
                    ) -> tuple[np.ndarray, tuple[np.ndarray, ...], int]:
    """Drops events whose picosecond times would not fit (negative durations, times beyond
    +-26 days of the median event's line), so no sum wraps around; returns the lines with
    their event ranges renumbered, each line's shift from the median (ps), the kept columns
    and how many were dropped."""
    base = _base_ns(lines)
    shift = np.array([(int(ts) - base) * 1000 for ts in lines[:, 3].tolist()], dtype=object)
    far = np.array([abs(v) >= _TIME_LIMIT_PS for v in shift.tolist()], bool)
    counts = lines[:, 6] - lines[:, 5]
    # Offsets, durations and line shifts each under 2**61 keep every start and end under
    # 2**62.6, inside int64, and so does the later shift to the earliest start. Comparisons
    # only: no n-sized int64 temporaries (a 5e7-event file would pay 400 MB for each).
    keep = duration >= 0
    keep &= duration < _TIME_LIMIT_PS
    keep &= offset > -_TIME_LIMIT_PS
    keep &= offset < _TIME_LIMIT_PS
    if far.any():
        keep &= ~np.repeat(far, counts)
    near = np.where(far, 0, shift).astype(np.int64)
    dropped = int(keep.shape[0] - np.count_nonzero(keep))
    if not dropped:
        return lines, near, (meta_ids, offset, duration, record), 0
    lines, columns = _kept(lines, keep, (meta_ids, offset, duration, record))
    return lines, near, columns, dropped


def _kept(lines: np.ndarray, keep: np.ndarray, columns: tuple[np.ndarray, ...]
          ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The event columns without the events `keep` leaves out, and the lines with their
    event ranges renumbered."""
    counts = lines[:, 6] - lines[:, 5]
    kept_per_line = np.add.reduceat(keep.astype(np.int64), lines[:, 5]) if keep.shape[0] else \
        np.zeros(lines.shape[0], np.int64)
    kept_per_line[counts == 0] = 0
    lines = lines.copy()
    lines[:, 6] = np.cumsum(kept_per_line)
    lines[:, 5] = lines[:, 6] - kept_per_line
    return lines, tuple(column[keep] for column in columns)


def _rows_of(ids: np.ndarray, rows: np.ndarray, wanted: np.ndarray, names: list,
             display_names: list, meta_section: list, meta_stats: list,
             section: int) -> np.ndarray:
    """Maps metadata ids to table rows; ids missing from the plane get a placeholder row."""
    if ids.shape[0] and 0 <= ids[0] and ids[-1] < 8 * ids.shape[0] + 4096:
        # Writers number metadata 1..n: a lookup table is a plain gather, no binary search.
        table = np.full(int(ids[-1]) + 2, -1, np.int32)
        table[ids] = rows
        out = table[np.clip(wanted, -1, ids[-1] + 1)]
        found = out >= 0
    else:
        out = np.empty(wanted.shape[0], np.int32)
        pos = np.minimum(np.searchsorted(ids, wanted), max(ids.shape[0] - 1, 0))
        found = ids[pos] == wanted if ids.shape[0] else np.zeros(wanted.shape[0], bool)
        out[found] = rows[pos[found]]
    if not found.all():
        for mid in np.unique(wanted[~found]).tolist():
            names.append(f"<metadata {mid}>")
            display_names.append(f"<metadata {mid}>")
            meta_section.append(section)
            meta_stats.append({})
            out[wanted == mid] = len(names) - 1
    return out


def _short_name(name: str) -> str:
    """`%fusion.3 = f32[8]{0} fusion(...)` -> `fusion.3`; other names unchanged."""
    match = re.match(r"%?([\w.\-]+) = ", name)
    return match.group(1) if match else name


def _hlo_protos(plane: Any, stat_names: dict[int, str]) -> dict[int, tuple[str, bytes]]:
    """Program id -> (module name, serialized HloProto), ids as XProf reads them.

    The id is the `(N)` ending the metadata's name, else its `program_id` stat, else the
    metadata id: JAX numbers the metadata 1..n in its own order, so that id alone is not the
    id the ops' `program_id` stats use.
    """
    out = {}
    for mid, md in plane.event_metadata.items():
        stats = {stat_names.get(stat.metadata_id): stat for stat in md.stats}
        proto = stats.get(_HLO_PROTO_STAT)
        if proto is None:
            continue
        suffix = _PROGRAM_ID_SUFFIX.fullmatch(md.name)
        program = stats.get("program_id")
        if suffix:
            pid = int(suffix.group(2))
        elif program is not None and program.WhichOneof("value") in ("int64_value",
                                                                     "uint64_value"):
            pid = getattr(program, program.WhichOneof("value"))
        else:
            pid = int(mid)
        # Ids travel as int64 on the wire; program ids (the ops' uint64 `program_id` stat)
        # use all 64 bits, so keep them unsigned.
        name = suffix.group(1) if suffix else md.name
        out[pid & _UINT64] = (name, bytes(proto.bytes_value))
    return out


def _counter_values(tracks: list[Track], details: XSpaceDetails, n: int,
                    sections: list[Section], warnings: list[str]) -> np.ndarray | None:
    """Each counter sample's value; a counter whose stats are corrupt (the scanner skips stats,
    so a file can hold such) keeps its samples without values, and a warning says so."""
    counters = [t for t in tracks if t.kind == "counter"]
    if not counters:
        return None
    values = np.full(n, np.nan)
    for track in counters:
        idx = np.arange(track.first, track.end)
        try:
            values[idx] = details.first_numeric_stat(idx)
        except ProfileError as exc:
            warnings.append(f"{details.source}: plane {sections[track.section].name}: the values "
                            f"of counter {track.name} were left out "
                            f"({str(exc).removeprefix(details.source + ': ')})")
    return values


def _no_record(record: np.ndarray) -> int:
    """The record offset given to derived events, which the file does not hold."""
    return int(np.iinfo(record.dtype).max)


class XSpaceDetails:
    """Per-event stats read back from the file bytes by each event's record offset; derived
    events (no record) have none."""

    def __init__(self, data: bytes, record: np.ndarray, plane_starts: np.ndarray,
                 stat_names: list[dict[int, str]], source: str):
        self._data = data
        self._buf = np.frombuffer(data, np.uint8)
        self._record = record
        self._plane_starts = plane_starts
        self._stat_names = stat_names
        self._stat_ids = [{name: sid for sid, name in names.items()} for names in stat_names]
        self.source = source
        self._derived = bool((record == _no_record(record)).any())

    def stat_names(self, plane: int) -> list[str]:
        """The stat names a plane declares."""
        return list(self._stat_names[plane].values())

    def _in_file(self, events: np.ndarray) -> np.ndarray:
        """Which of the events have a record in the file."""
        if not self._derived:
            return np.ones(events.shape[0], bool)
        return self._record[events] != _no_record(self._record)

    def stats(self, event: int) -> dict[str, Any]:
        if not self._in_file(np.array([event]))[0]:
            return {}
        names = self._stat_names[int(self._plane_of(np.array([event]))[0])]
        pos = int(self._record[event])
        _, pos = _wire._varint(self._buf, pos, self._buf.shape[0])
        start, end = _wire._len_field(self._buf, pos, self._buf.shape[0])
        return stats_dict(XEvent.FromString(self._data[start:end]).stats, names)

    def stat_column(self, events: np.ndarray, name: str) -> np.ndarray:
        events = np.asarray(events, np.int64)
        in_file = self._in_file(events)
        if not in_file.all():
            out = np.full(events.shape[0], None, dtype=object)
            out[in_file] = self.stat_column(events[in_file], name)
            return out
        planes = self._plane_of(events)
        targets = np.array([self._stat_ids[p].get(name, -1) for p in range(len(self._stat_ids))],
                           np.int64)[planes] if events.shape[0] else np.empty(0, np.int64)
        out = np.full(events.shape[0], None, dtype=object)
        defined = np.flatnonzero(targets >= 0)
        if defined.shape[0] < events.shape[0]:  # planes that never name the stat: no scan
            if defined.shape[0]:
                out[defined] = self.stat_column(events[defined], name)
            return out
        kind, ivalue, fvalue, span = self._scan(events, targets)
        numeric = (kind == 3) | (kind == 4)
        out[numeric] = ivalue[numeric].tolist()
        out[kind == 3] = ivalue[kind == 3].view(np.uint64).tolist()
        out[kind == 2] = fvalue[kind == 2].tolist()
        if name == "flow":
            out[kind == 3] = [unpack_flow(v) for v in ivalue[kind == 3].view(np.uint64).tolist()]
        for code in (5, 6):  # each distinct string decoded once (a kernel's op names repeat)
            at = np.flatnonzero(kind == code)
            if not at.shape[0]:
                continue
            data = self._data
            raws = [data[a:b] for a, b in span[at].tolist()]
            codes, distinct = pd.factorize(np.array(raws, dtype=object))
            values = [r.decode("utf-8", "replace") for r in distinct] if code == 5 else list(distinct)
            out[at] = np.array(values, dtype=object)[codes]
        refs = np.flatnonzero(kind == 7)
        for value in np.unique(ivalue[refs]).tolist():
            hit = refs[ivalue[refs] == value]
            for p in np.unique(planes[hit]).tolist():
                chosen = hit[planes[hit] == p]
                out[chosen] = self._stat_names[p].get(value, f"<ref {value}>")
        return out

    def stat_ints(self, events: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        events = np.asarray(events, np.int64)
        present = np.zeros(events.shape[0], bool)
        values = np.zeros(events.shape[0], np.uint64)
        for at, kind, ivalue in self._scanned(events, name):
            found = (kind == 3) | (kind == 4)
            present[at[found]] = True
            values[at[found]] = ivalue[found].view(np.uint64)
        return present, values

    def has_stat(self, events: np.ndarray, name: str) -> np.ndarray:
        """Which events carry the stat on themselves (any value)."""
        events = np.asarray(events, np.int64)
        present = np.zeros(events.shape[0], bool)
        for at, kind, _ in self._scanned(events, name):
            present[at] = kind != 0
        return present

    def _scanned(self, events: np.ndarray, name: str):
        """(positions in events, kind, int value) of the stat, chunk by chunk: a scan's
        temporaries take some 100 bytes an event, and an op line has millions."""
        by_plane = np.array([ids.get(name, -1) for ids in self._stat_ids], np.int64)
        if not events.shape[0] or (by_plane < 0).all():
            return
        for lo in range(0, events.shape[0], _SCAN_CHUNK):
            part = events[lo:lo + _SCAN_CHUNK]
            targets = by_plane[self._plane_of(part)]
            defined = np.flatnonzero((targets >= 0) & self._in_file(part))
            kind, ivalue, _, _ = self._scan(part[defined], targets[defined])
            yield lo + defined, kind, ivalue

    def _plane_of(self, events: np.ndarray) -> np.ndarray:
        return np.searchsorted(self._plane_starts, self._record[events], side="right") - 1

    def first_numeric_stat(self, events: np.ndarray) -> np.ndarray:
        """The value of a counter event: its first numeric stat (NaN when none)."""
        targets = np.full(events.shape[0], -1, np.int64)
        kind, ivalue, fvalue, _ = self._scan(events, targets, any_stat=True)
        values = np.where(kind == 2, fvalue, ivalue.astype(np.float64))
        values[(kind != 2) & (kind != 3) & (kind != 4)] = np.nan
        return values

    def _scan(self, events: np.ndarray, targets: np.ndarray, any_stat: bool = False) -> tuple:
        n = events.shape[0]
        kind = np.zeros(n, np.int64)
        ivalue = np.zeros(n, np.int64)
        fvalue = np.zeros(n, np.float64)
        span = np.zeros((n, 2), np.int64)
        status = _wire.scan_stat(self._buf, self._record[events], targets, any_stat, kind,
                                 ivalue, fvalue, span)
        if status != _wire.OK:
            raise ProfileError(f"{self.source}: event stats are corrupt ({_WIRE_ERRORS[status]}).")
        return kind, ivalue, fvalue, span
