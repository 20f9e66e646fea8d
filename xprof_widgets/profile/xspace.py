"""Decoding one `.xplane.pb` (an XSpace) into columnar `HostTrace` form.

The event-level structure is walked by compiled scanners (`_wire`); each plane's header (its
metadata maps and stats, small next to its events) is parsed by upb from the header's bytes
alone. The parsed message tree never holds events, and nothing of it outlives this call.
"""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from itertools import pairwise
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import ProfileError
from . import _wire
from .derived import MetadataRows, region_marks
from .mapped import MappedFile, release
from .ordering import (
    GPU_PREFIX,
    INTERNAL_EVENTS,
    gpu_line_keys,
    line_sort_key,
    plane_kind,
    plane_sort_keys,
)
from .schema import XPlane, XSpace
from .stats import stats_dict
from .threads import balanced, decode_threads, run_parts
from .trace_data import HostTrace, Section, Track
from .xspace_derived import (
    Decoding,
    PendingRows,
    already_grouped,
    name_step_roots,
    pending_rows,
    regions,
)
from .xspace_details import WIRE_ERRORS, XSpaceDetails, no_record

_SKIPPED_PLANES = {"/host:metadata"}
_HLO_PROTO_STAT = "Hlo Proto"
_PROGRAM_ID_SUFFIX = re.compile(r"(.*)\((\d+)\)", re.DOTALL)
_COUNTER_LINES = {"_counters_", "LLO Utilization"}
"""Lines whose events are counter samples: `_counters_`, and the utilization of each execution
unit that TPU custom-call tracing writes (XProf 2.24's trace viewer draws the latter as instants;
its newer one, as counters)."""
_UINT64 = (1 << 64) - 1


def decode_xspace(data: bytes | MappedFile, source: str, host: str) -> HostTrace:
    """Decodes a serialized XSpace (its bytes, or a mapping of its file that the result keeps
    for the per-event details); `source` names the file in error messages."""
    if not data:
        raise ProfileError(f"{source}: the file is empty (0 bytes); expected a serialized XSpace. "
                           "Capture the profile again; the writer may have been interrupted.")
    buf = np.frombuffer(data, dtype=np.uint8)
    threads = decode_threads()
    planes, spans, lines, line_names, chunks = _layout(buf, source, threads)
    plane_spans = [spans[spans[:, 0] == k] for k in range(planes.shape[0])]
    release(data)  # the layout pass read every page; the fill reads each page once more
    events = _EventFill(data, buf, source, chunks, lines)
    # The events decode on worker threads from the metadata ids alone while this thread
    # parses the headers; should the parsed headers give other rows (a plane that does not
    # parse), they decode again.
    scanned = _scanned_row_maps(buf, plane_spans)
    with ThreadPoolExecutor(threads, thread_name_prefix="xprof-decode") if threads > 1 \
            else nullcontext() as pool:
        pending = events.start(_lookup(scanned, []), threads, pool) if scanned else None
        warnings: list[str] = []
        space, why = _parse_header(XSpace, data, spans[spans[:, 0] == -1])
        if why:
            warnings.append(f"{source}: the errors and warnings the profiler wrote were left "
                            f"out: they do not parse ({why}).")
        headers, unreadable = [], []
        for k in range(planes.shape[0]):
            plane, why = _parse_header(XPlane, data, plane_spans[k])
            if why:
                plane.name = f"<plane {k}, unreadable>"
                unreadable.append(k)
                warnings.append(f"{source}: plane {k} was left out with its events: its name "
                                f"or metadata do not parse ({why}).")
            headers.append(plane)
        tables = _PlaneTables(headers)
        results = events.wait(pending)
    if results is None or unreadable or not _same_rows(scanned, tables.row_maps):
        results = events.wait(events.start(_lookup(tables.row_maps, unreadable), threads,
                                           None))
    lines, shift_ps, columns, dropped = events.columns(results, tables, unreadable)
    trace = _assemble(data, source, host, space, headers, tables, planes[:, 0].copy(), lines,
                      line_names, shift_ps, columns, dropped, warnings)
    release(data)  # the decode read every page; the details will read back only a few
    return trace


_RELEASE_BATCH = 32
"""Chunks filled between two hand-backs of file pages (2M events, some 40 MB of file): few
enough calls that their cost is nothing, small enough that little of the file is resident."""
_CHUNK_EVENTS = 1 << 16
"""Events a worker thread decodes at a time: small enough to share a few lines among many
threads evenly, large enough that the chunk table stays small (800 rows for 5e7 events)."""


def _layout(buf: np.ndarray, source: str, threads: int) -> tuple[np.ndarray, ...]:
    """(planes, header spans, lines, line names, chunks): the planes and the byte range of
    each line walked on this thread, then the lines themselves (fields, events counted and
    cut into chunks) on worker threads; the first malformed field in file order is the error,
    as one walk from the start would find it."""
    sizes = (64, 4096, 4096)
    while True:
        planes, spans, line_spans = (np.empty((sizes[0], 2), np.int64),
                                     np.empty((sizes[1], 3), np.int64),
                                     np.empty((sizes[2], 3), np.int64))
        status, where, *counts = _wire.scan_planes(buf, planes, spans, line_spans)
        if all(n <= size for n, size in zip(counts, sizes, strict=True)):
            break
        sizes = tuple(max(n, size) for n, size in zip(counts, sizes, strict=True))
    n_planes, n_spans, n_lines = counts
    planes, spans, line_spans = planes[:n_planes], spans[:n_spans], line_spans[:n_lines]
    errors = [] if status == _wire.OK else [(where, status)]
    lines, line_names = np.empty((n_lines, 7), np.int64), np.empty((n_lines, 4), np.int64)
    room = (line_spans[:, 2] - line_spans[:, 1]) // (2 * _CHUNK_EVENTS) + 1
    chunk_base = np.cumsum(room) - room
    spare = np.empty((int(room.sum()), 5), np.int64)
    parts = [np.asarray(part, np.int64) for part in
             balanced((line_spans[:, 2] - line_spans[:, 1]).tolist(), threads)]
    for status, where in run_parts(lambda which: _wire.scan_lines(
            buf, line_spans, which, _CHUNK_EVENTS, lines, line_names, chunk_base, spare),
            parts):
        if status != _wire.OK:
            errors.append((where, status))
    if errors:
        where, status = min(errors)
        raise ProfileError(_unreadable(source, status, where, buf.shape[0]))
    counts = lines[:, 6].copy()
    lines[:, 6] = np.cumsum(counts)
    lines[:, 5] = lines[:, 6] - counts
    per_line = -(-counts // _CHUNK_EVENTS)
    firsts = np.cumsum(per_line) - per_line
    chunks = spare[np.repeat(chunk_base - firsts, per_line) + np.arange(int(per_line.sum()))]
    chunks[:, 3] += np.repeat(lines[:, 5], per_line)
    return planes, spans, lines, line_names, chunks


def _unreadable(source: str, status: int, where: int, size: int) -> str:
    return (f"{source}: not a readable XSpace: {WIRE_ERRORS[status]} at byte {where} of "
            f"{size}. Expected a complete `.xplane.pb` as written by jax.profiler or XProf; "
            "capture the profile again or copy the file completely.")


class _PlaneTables:
    """The planes' metadata as tables: every plane's event metadata in rows (names, stats),
    each plane's sorted ids and their rows (`row_maps`), the sections, stat names and HLO
    protos."""

    def __init__(self, headers: list):
        self.sections: list[Section] = []
        self.section_of_plane: dict[int, int] = {}
        self.names: list[str] = []
        self.display_names: list[str] = []
        self.meta_section: list[int] = []
        self.meta_stats: list[dict] = []
        self.row_maps: list[tuple[np.ndarray, np.ndarray]] = []  # per plane: sorted ids, rows
        self.stat_names: list[dict[int, str]] = []
        self.hlo_protos: dict[int, tuple[str, bytes]] = {}
        plane_keys = plane_sort_keys([(plane.name, plane.id) for plane in headers])
        for k, plane in enumerate(headers):
            names_of_stats = {sid: sm.name for sid, sm in plane.stat_metadata.items()}
            self.stat_names.append(names_of_stats)
            if plane.name in _SKIPPED_PLANES:
                self.hlo_protos.update(_hlo_protos(plane, names_of_stats))
            self.section_of_plane[k] = len(self.sections)
            self.sections.append(Section(name=plane.name, kind=plane_kind(plane.name),
                                         stats=stats_dict(plane.stats, names_of_stats),
                                         sort_key=plane_keys[k]))
            ids = np.fromiter(plane.event_metadata.keys(), np.int64, len(plane.event_metadata))
            ids.sort()
            first = len(self.names)
            self.row_maps.append((ids, np.arange(first, first + ids.shape[0], dtype=np.int64)))
            for mid in ids.tolist():
                md = plane.event_metadata[mid]
                self.names.append(md.name)
                self.display_names.append(md.display_name or _short_name(md.name))
                self.meta_section.append(self.section_of_plane[k])
                self.meta_stats.append(stats_dict(md.stats, names_of_stats))

    def rows(self) -> MetadataRows:
        return MetadataRows(self.names, self.display_names, self.meta_section, self.meta_stats)


def _lookup(row_maps: list[tuple[np.ndarray, np.ndarray]], skipped: list[int]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fill_events' (plane_rows, table, ids) from each plane's sorted metadata ids and their
    rows: a dense table where writers number metadata 1..n (a plain gather), the sorted ids
    to search elsewhere; `skipped` planes map every id to row 0 (their events are dropped)."""
    plane_rows = np.zeros((len(row_maps), 5), np.int64)
    dense: list[np.ndarray] = []
    dense_size = 0
    for k, (ids, rows) in enumerate(row_maps):
        first = int(rows[0]) if rows.shape[0] else 0
        if k in skipped:
            plane_rows[k] = (0, -2, 0, 0, 0)
        elif ids.shape[0] and 0 <= ids[0] and ids[-1] < 8 * ids.shape[0] + 4096:
            table = np.full(int(ids[-1]) + 1, -1, np.int32)
            table[ids] = rows
            plane_rows[k] = (dense_size, table.shape[0], 0, 0, first)
            dense.append(table)
            dense_size += table.shape[0]
        else:
            plane_rows[k] = (0, -1, 0, 0, first)
    sorted_ids = [np.empty(0, np.int64)]
    at = 0
    for k, (ids, _) in enumerate(row_maps):
        if plane_rows[k, 1] == -1:
            plane_rows[k, 2:4] = (at, at + ids.shape[0])
            sorted_ids.append(ids)
            at += ids.shape[0]
    table = np.concatenate(dense) if dense else np.empty(0, np.int32)
    return plane_rows, table, np.concatenate(sorted_ids)


def _scanned_row_maps(buf: np.ndarray, plane_spans: list[np.ndarray]
                      ) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Each plane's (sorted metadata ids, rows) as _PlaneTables will number them, read from
    the map keys in its header bytes; None when a header is malformed."""
    out, first = [], 0
    for spans in plane_spans:
        keys = _wire.metadata_ids(buf, spans)
        if keys is None:
            return None
        ids = np.unique(keys)
        out.append((ids, np.arange(first, first + ids.shape[0], dtype=np.int64)))
        first += ids.shape[0]
    return out


def _same_rows(scanned: list[tuple[np.ndarray, np.ndarray]] | None,
               parsed: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    return scanned is not None and len(scanned) == len(parsed) and all(
        np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        for a, b in zip(scanned, parsed, strict=True))


class _EventFill:
    """The event columns (metadata row, offset, duration, record), each allocated once at its
    final size and filled in place, chunk by chunk, on worker threads. Each batch of chunks
    hands its file pages back when done (mapped files), so the file and the columns are not
    resident together."""

    def __init__(self, data: bytes | MappedFile, buf: np.ndarray, source: str,
                 chunks: np.ndarray, lines: np.ndarray):
        self.data, self.buf, self.source, self.chunks, self.lines = data, buf, source, chunks, lines
        self.n = n = int(lines[-1, 6]) if lines.shape[0] else 0
        # A file under 4 GiB needs 4 bytes per record offset, not 8.
        self.record = np.empty(n, np.uint32 if buf.shape[0] < 2**32 - 1 else np.int64)
        self.meta = np.empty(n, np.int32)
        self.offset, self.duration = np.empty(n, np.int64), np.empty(n, np.int64)
        self.plane_of_line = np.ascontiguousarray(lines[:, 0])

    def _fill(self, lookup: tuple, part: np.ndarray, raw: np.ndarray | None = None) -> tuple:
        """fill_events over the part's chunks, _RELEASE_BATCH at a time; the first error, the
        ids without a row and the suspect times summed over the batches."""
        missing = suspect = 0
        for lo in range(0, part.shape[0], _RELEASE_BATCH):
            batch = part[lo:lo + _RELEASE_BATCH]
            status, where, no_row, odd = _wire.fill_events(
                self.buf, batch, self.plane_of_line, *lookup, _TIME_LIMIT_PS, self.meta,
                np.empty(0, np.int64) if raw is None else raw, self.offset, self.duration,
                self.record)
            if status != _wire.OK:
                return status, where, missing + no_row, suspect + odd
            missing, suspect = missing + no_row, suspect + odd
            after = part[lo + _RELEASE_BATCH:lo + _RELEASE_BATCH + 1]  # the next chunk, if any
            end = after[0, 1] if after.shape[0] and after[0, 0] == batch[-1, 0] else batch[-1, 2]
            release(self.data, int(batch[0, 1]), int(end))
        return _wire.OK, 0, missing, suspect

    def start(self, lookup: tuple, threads: int, pool: ThreadPoolExecutor | None) -> list:
        """Decodes every chunk with `lookup` (`_lookup`'s tables): on the pool's threads when
        there is a pool (returns at once), else on this one; what `wait` takes."""
        parts = _chunk_parts(self.chunks, threads)
        if pool is None:
            return run_parts(partial(self._fill, lookup), parts)
        return [pool.submit(self._fill, lookup, part) for part in parts]

    @staticmethod
    def wait(pending: list | None) -> list | None:
        if pending is None:
            return None
        return [r.result() if isinstance(r, Future) else r for r in pending]

    def columns(self, results: list, tables: _PlaneTables, unreadable: list[int]
                ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...], int]:
        """The columns with the lines and shifts of `_times_in_range`, or the first error in
        file order. Metadata ids without a row (rare: a writer's bug) are decoded again as
        ids and given placeholder rows after the events out of range are dropped."""
        for status, where, _, _ in results:
            if status != _wire.OK:
                raise ProfileError(_unreadable(self.source, status, where, self.buf.shape[0]))
        missing = sum(r[2] for r in results)
        suspect = sum(r[3] for r in results) > 0
        lines = self.lines
        columns = (self.meta, self.offset, self.duration, self.record)
        if missing:
            raw_ids = np.empty(self.n, np.int64)
            self._fill(_lookup(tables.row_maps, unreadable), self.chunks, raw_ids)
            columns = (raw_ids, *columns[1:])
        if unreadable:
            on_plane = np.repeat(lines[:, 0], lines[:, 6] - lines[:, 5])
            lines, columns = _kept(lines, ~np.isin(on_plane, unreadable), columns)
        lines, shift_ps, columns, dropped = _times_in_range(lines, *columns, suspect=suspect)
        if missing:
            columns = (_placeholder_rows(columns[0], lines, tables), *columns[1:])
        return lines, shift_ps, columns, dropped


def _placeholder_rows(meta_ids: np.ndarray, lines: np.ndarray, tables: _PlaneTables
                      ) -> np.ndarray:
    """The metadata row of each event by its id, a placeholder row for an id its plane lacks."""
    rows = np.empty(meta_ids.shape[0], np.int32)
    for k, (plane_ids, plane_rows) in enumerate(tables.row_maps):
        own_lines = lines[lines[:, 0] == k]
        if not own_lines.shape[0]:
            continue
        # The scanner numbers events in file order, so a plane's events are contiguous.
        mine = slice(int(own_lines[:, 5].min()), int(own_lines[:, 6].max()))
        rows[mine] = _rows_of(plane_ids, plane_rows, meta_ids[mine], tables.names,
                              tables.display_names, tables.meta_section, tables.meta_stats,
                              tables.section_of_plane[k])
    return rows


def _chunk_parts(chunks: np.ndarray, threads: int) -> list[np.ndarray]:
    """The chunk table cut into runs of about equal events, one per thread, in file order
    (the first error in file order is then the first part's that has one)."""
    if threads <= 1 or chunks.shape[0] <= 1:
        return [chunks]
    ends = np.cumsum(chunks[:, 4])
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, threads) / threads, side="right")
    bounds = np.unique(np.concatenate([[0], cuts, [chunks.shape[0]]]))
    return [chunks[a:b] for a, b in pairwise(bounds.tolist()) if b > a]


def _parse_header(message_class: Any, data: bytes, spans: np.ndarray) -> tuple[Any, str]:
    """The message in a header's bytes, or an empty one and why not (a name that is not
    UTF-8, say): that part of the file is left out, not the file."""
    raw = b"".join(data[s:e] for _, s, e in spans)
    try:
        return message_class.FromString(raw), ""
    except DecodeError as exc:
        return message_class(), str(exc) or "corrupt"


def _assemble(data: bytes, source: str, host: str, space: Any, headers: list,
              tables: _PlaneTables, plane_starts: np.ndarray, lines: np.ndarray,
              line_names: np.ndarray, shift_ps: np.ndarray, columns: tuple[np.ndarray, ...],
              dropped: int, warnings: list[str]) -> HostTrace:
    warnings = [*space.errors, *space.warnings, *warnings]
    sections, section_of_plane = tables.sections, tables.section_of_plane
    names, display_names, stat_names = tables.names, tables.display_names, tables.stat_names
    meta_rows, offset, duration, record = columns

    # Absolute times can exceed int64 picoseconds (epoch nanoseconds); keep them relative.
    base_ns = _base_ns(lines)
    start = offset  # reused in place: start = line base + offset
    for k in np.flatnonzero(shift_ps).tolist():
        start[lines[k, 5]:lines[k, 6]] += shift_ps[k]
    rows = tables.rows()
    text_of_lines = [_line_name(data, line_names, k) for k in range(lines.shape[0])]
    derives = not already_grouped(stat_names)
    decoding = Decoding(source, headers, lines, text_of_lines,
                        XSpaceDetails(data, record, plane_starts, stat_names, source, False),
                        start, duration, meta_rows, rows, section_of_plane, warnings)
    # Each line becomes a track of the events XProf draws, plus one of the events it keeps
    # out of the trace viewer (allocator and tf.data bookkeeping), so neither shifts the other.
    # `group` (each event's track) is made only where some event leaves its line's track.
    group = None
    if _moves_events(derives, rows, text_of_lines):
        group = np.repeat(np.arange(lines.shape[0], dtype=np.int32) * 2,
                          lines[:, 6] - lines[:, 5])
    r_start = np.empty(0, np.int64)
    if derives:
        name_step_roots(decoding)
        if group is not None:
            r_start, r_duration, r_group, r_rows = regions(decoding, group)
        if r_start.shape[0]:  # derived slices have no record in the file
            start = np.concatenate([start, r_start])
            duration = np.concatenate([duration, r_duration])
            meta_rows = np.concatenate([meta_rows, r_rows])
            group = np.concatenate([group, r_group])
            record = np.concatenate([record, np.full(r_start.shape[0], no_record(record),
                                                     record.dtype)])
    internal_rows = np.fromiter((n in INTERNAL_EVENTS for n in names), bool, len(names))
    internal = internal_rows[meta_rows] if group is not None and internal_rows.any() else None
    if internal is not None:
        group += internal
    line_keys = _line_keys(headers, lines, text_of_lines, renumber_gpu=derives)
    rows_of_tracks = [(int(lines[k, 0]), text_of_lines[k] or f"line {int(lines[k, 1])}",
                       line_keys[k], hidden, int(lines[k, 1]))
                      for k in range(lines.shape[0]) for hidden in (0, 1)]
    counters = set() if group is None else _split_counters(rows_of_tracks, lines, group,
                                                           meta_rows, display_names)
    pending = None
    if derives:  # the rows of cores and streams, made later from the file's own events
        pending, notes = pending_rows(decoding, line_keys, lambda records: XSpaceDetails(
            data, records, plane_starts, stat_names, source, False))
        warnings += notes
    # Tracks in file order: each line's events, then its hidden track (empty without a group).
    sizes = np.zeros(len(rows_of_tracks), np.int64)
    sizes[0:2 * lines.shape[0]:2] = lines[:, 6] - lines[:, 5]
    if group is not None:
        sizes = np.bincount(group, minlength=len(rows_of_tracks))
        if (internal is not None and internal.any()) or r_start.shape[0] or counters:
            moved = np.argsort(group, kind="stable")
            meta_rows, record = meta_rows[moved], record[moved]
            start, duration = start[moved], duration[moved]
    bounds = np.stack([np.cumsum(sizes) - sizes, np.cumsum(sizes)], axis=1)
    depth = np.empty(start.shape[0], np.int16)
    perm = _order_and_depth(start, duration, bounds, depth)
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

    is_derived = None
    if r_start.shape[0]:
        is_derived = record == no_record(record)
    details = XSpaceDetails(data, record, plane_starts, stat_names, source,
                            is_derived is not None)
    counter_values = _counter_values(tracks, details, start.shape[0], sections, warnings)
    if dropped:
        warnings.append(f"{source}: skipped {dropped} events whose times do not fit: a negative "
                        "duration, or a start or end more than 26 days from the other events.")
    return HostTrace(
        host=host, source=source, base_ns=base_ns, start_ps=start, duration_ps=duration,
        meta=meta_rows.astype(np.int32, copy=False), depth=depth, sections=sections, tracks=tracks,
        names=names, display_names=display_names,
        meta_section=np.asarray(tables.meta_section, np.int32), meta_stats=tables.meta_stats,
        details=details, hlo_protos=tables.hlo_protos, counter_values=counter_values,
        derived=is_derived, warnings=warnings,
        deferred=None if pending is None else partial(_with_derived_rows, pending))


def _with_derived_rows(pending: PendingRows, trace: HostTrace, shift_ps: int) -> HostTrace:
    """`trace` with the rows of its cores and streams made now: their events after every
    event of the file, one track per row, their times less `shift_ps` (what the Profile took
    off the trace's own). The same columns as making them during the decode gives."""
    made, notes = pending.rows()
    d = pending.decoding
    sizes = np.array([row.start.shape[0] for _, row, _ in made], np.int64)
    empty = np.empty(0, np.int64)
    start = np.concatenate([row.start for _, row, _ in made] or [empty]) - np.int64(shift_ps)
    duration = np.concatenate([row.duration for _, row, _ in made] or [empty])
    meta_rows = np.concatenate([row.meta for _, row, _ in made] or [empty])
    bounds = np.stack([np.cumsum(sizes) - sizes, np.cumsum(sizes)], axis=1)
    depth = np.empty(start.shape[0], np.int16)
    perm = _order_and_depth(start, duration, bounds, depth)
    if perm.shape[0]:
        meta_rows = meta_rows[perm]
    n = trace.n_events
    tracks = list(trace.tracks)
    for (plane, row, key), (lo, hi) in zip(made, bounds.tolist(), strict=True):
        if lo < hi:  # rows are made on TPU cores and GPUs only, never a skipped plane
            tracks.append(Track(section=d.section_of_plane[plane], name=row.name, kind="slices",
                                first=n + lo, end=n + hi, sort_key=(True, key, 0),
                                line_id=row.line_id, derived=True))
    derived = np.zeros(n, bool) if trace.derived is None else trace.derived
    counters = trace.counter_values
    return replace(
        trace, start_ps=np.concatenate([trace.start_ps, start]),
        duration_ps=np.concatenate([trace.duration_ps, duration]),
        meta=np.concatenate([trace.meta, meta_rows.astype(np.int32)]),
        depth=np.concatenate([trace.depth, depth]), tracks=tracks,
        names=d.rows.names, display_names=d.rows.display_names, meta_stats=d.rows.stats,
        meta_section=np.asarray(d.rows.sections, np.int32),
        details=trace.details.with_derived(start.shape[0]),
        counter_values=None if counters is None else np.concatenate(
            [counters, np.full(start.shape[0], np.nan)]),
        derived=np.concatenate([derived, np.ones(start.shape[0], bool)]),
        warnings=[*trace.warnings, *notes], deferred=None)


def _moves_events(derives: bool, rows: MetadataRows, line_names: list[str]) -> bool:
    """Whether some event may leave its line's track: an internal event (to the hidden track),
    a thread-pool region (made from marks, then sorted in) or a counter line's samples."""
    return ((derives and bool(region_marks(rows).any()))
            or any(n in INTERNAL_EVENTS for n in rows.names)
            or any(name in _COUNTER_LINES for name in line_names))


def _order_and_depth(start: np.ndarray, duration: np.ndarray, bounds: np.ndarray,
                     depth: np.ndarray) -> np.ndarray:
    """order_and_depth with the tracks' depths filled on worker threads (lines of about equal
    events each); the same permutation and depths as one thread."""
    sizes = (bounds[:, 1] - bounds[:, 0]).tolist()
    parts = [np.asarray(part, np.int64) for part in balanced(sizes, decode_threads())]
    unordered = run_parts(lambda which: _wire.line_depths(start, duration, bounds, depth, which),
                          parts)
    lines = np.sort(np.concatenate(unordered)) if unordered else np.empty(0, np.int64)
    return _wire.order_lines(start, duration, bounds, depth, lines)


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
                    duration: np.ndarray, record: np.ndarray, suspect: bool = True
                    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...], int]:
    """Drops events whose picosecond times would not fit (negative durations, times beyond
    +-26 days of the median event's line), so no sum wraps around; returns the lines with
    their event ranges renumbered, each line's shift from the median (ps), the kept columns
    and how many were dropped. Without `suspect` (fill_events counted no event out of range)
    only the lines' own times are checked: no n-sized mask."""
    base = _base_ns(lines)
    shift = np.array([(int(ts) - base) * 1000 for ts in lines[:, 3].tolist()], dtype=object)
    far = np.array([abs(v) >= _TIME_LIMIT_PS for v in shift.tolist()], bool)
    counts = lines[:, 6] - lines[:, 5]
    near = np.where(far, 0, shift).astype(np.int64)
    if not suspect and not (far & (counts > 0)).any():
        return lines, near, (meta_ids, offset, duration, record), 0
    # Offsets, durations and line shifts each under 2**61 keep every start and end under
    # 2**62.6, inside int64, and so does the later shift to the earliest start. Comparisons
    # only: no n-sized int64 temporaries (a 5e7-event file would pay 400 MB for each).
    keep = duration >= 0
    keep &= duration < _TIME_LIMIT_PS
    keep &= offset > -_TIME_LIMIT_PS
    keep &= offset < _TIME_LIMIT_PS
    if far.any():
        keep &= ~np.repeat(far, counts)
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
