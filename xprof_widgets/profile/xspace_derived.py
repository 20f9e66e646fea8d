"""Which planes of an XSpace being decoded get which rows XProf derives, each family isolated.

derived.py makes each family from columns; this module picks the planes and events for it,
once per plane. A family that fails on a plane (any exception) is left out of that plane with
a warning naming the file, the plane and the rows, and everything else opens as if that family
were turned off: degrade, don't die. A file its profiler already grouped gets none of them
(`already_grouped`), as in XProf.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ..errors import ProfileError
from .derived import (
    DerivedRow,
    MetadataRows,
    framework_rows,
    gpu_stream_rows,
    host_offload_rows,
    offload_metadata,
    region_marks,
    step_rows,
    threadpool_regions,
)
from .memory_guard import (
    DERIVED_ROWS_PEAK_PER_EVENT,
    DERIVED_ROWS_PEAK_PER_EVENT_IN_FLIGHT,
    LIMIT_ENV,
    shortfall,
    size_text,
)
from .ordering import GPU_PREFIX, GPU_STREAM_STRIDE, HOST_THREADS, is_derived_line
from .threads import each_balanced, threads_for
from .xspace_details import XSpaceDetails

T = TypeVar("T")
_TENSOR_CORE = re.compile(r"/device:TPU:\d+")
_XLA_MODULES = "XLA Modules"
_GROUP_ID = "group_id"
_CORE_ROWS = "Framework Ops, Framework Name Scope, Source code and Host Offload Ops rows"
_STREAM_ROWS = "XLA Modules and XLA Ops rows of GPU streams"
FRAMEWORK_ROWS_LIMIT = 2_000_000
"""Up to this many TPU op events a file gets XProf's framework rows (they add about one slice
per op and row, as many events again); above it they are left out unless
XPROF_WIDGETS_FRAMEWORK_ROWS=always, and a warning says so. GPU stream rows share it."""


def already_grouped(stat_names: list[dict[int, str]]) -> bool:
    """Whether every plane declares a `group_id` stat. XProf 2.24 then takes the file as
    grouped into steps by the profiler that wrote it (TensorFlow 2's profiler wrote its own
    Steps and TensorFlow Ops rows so) and derives nothing: no step names, thread-pool regions
    or derived rows, and GPU streams keep their own line ids for their order. (Found by
    running it: one plane without the stat, an empty one even, makes it derive them all.)"""
    return bool(stat_names) and all(_GROUP_ID in names.values() for names in stat_names)


@dataclass
class Decoding:
    """One file's columns as the derived families read them while it is decoded."""

    source: str
    headers: list  # XPlane headers, no events
    lines: np.ndarray  # the scanner's line table (plane, id, ..., first event, end event)
    line_names: list[str]  # each line's display name, else its name
    scan: XSpaceDetails
    start: np.ndarray
    duration: np.ndarray
    meta_rows: np.ndarray
    rows: MetadataRows
    section_of_plane: dict[int, int]
    warnings: list[str]

    def own_lines(self, plane: int) -> list[int]:
        return np.flatnonzero(self.lines[:, 0] == plane).tolist()

    def plane_events(self, plane: int) -> slice:
        """A plane's events: contiguous, as the scanner numbers events in file order."""
        own = self.lines[self.lines[:, 0] == plane]
        if not own.shape[0]:
            return slice(0, 0)
        return slice(int(own[:, 5].min()), int(own[:, 6].max()))

    def isolated(self, plane: int, what: str, build: Callable[[], T], fallback: T) -> T:
        """build(), or `fallback` and a warning when it fails; metadata rows it added are
        taken back, so the rest decodes as if it had not run."""
        size = len(self.rows.names)
        try:
            return build()
        except Exception as exc:  # noqa: BLE001 - any failure of a family leaves only it out
            self.rows.truncate(size)
            self.warnings.append(f"{self.source}: plane {self.headers[plane].name}: the {what} "
                                 f"were left out ({type(exc).__name__}: {exc})")
            return fallback


# ---- step names and thread-pool regions --------------------------------------------------------
def name_step_roots(d: Decoding) -> None:
    """Names host step roots (`_r` with a `step_num`) `<name> <step_num>`, as XProf does."""
    for p, plane in enumerate(d.headers):
        if plane.name.startswith(HOST_THREADS) and {"_r", "step_num"} <= set(d.scan.stat_names(p)):
            roots, named = d.isolated(p, "step names", partial(_step_names, d, p), (None, None))
            if roots is not None:
                d.meta_rows[roots] = named


def _step_names(d: Decoding, plane: int) -> tuple[np.ndarray, np.ndarray]:
    mine = d.plane_events(plane)
    events = np.arange(mine.start, mine.stop)
    python_frames = np.fromiter((n.startswith("$") for n in d.rows.names), bool,
                                len(d.rows.names))
    events = events[~python_frames[d.meta_rows[events]]]
    is_root, level = d.scan.stat_ints(events, "_r")
    roots = events[is_root & (level != 0)]
    numbered, step = d.scan.stat_ints(roots, "step_num")
    roots = roots[numbered]
    return roots, step_rows(d.meta_rows[roots], step[numbered].view(np.int64), d.rows)


def regions(d: Decoding, group: np.ndarray) -> tuple[np.ndarray, ...]:
    """XProf's ThreadpoolListener::Region slices of every plane: (start, duration, group,
    metadata row)."""
    marks = region_marks(d.rows)
    parts = []
    if marks.any():
        for p in range(len(d.headers)):
            mine = d.plane_events(p)
            if mine.stop > mine.start:
                parts.append(d.isolated(p, "thread-pool regions", partial(
                    threadpool_regions, marks, d.meta_rows[mine], d.start[mine], group[mine],
                    d.rows), None))
    parts = [part for part in parts if part is not None]
    if not parts:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, empty
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


# ---- rows derived for TPU cores and GPU streams --------------------------------------------------
class _Stacked:
    """A list read through: the shared rows made before (read only), then rows of its own."""

    def __init__(self, shared: list):
        self.shared, self.own = shared, []
        self.base = len(shared)

    def __len__(self) -> int:
        return self.base + len(self.own)

    def __getitem__(self, i: int) -> Any:
        return self.shared[i] if i < self.base else self.own[i - self.base]

    def __setitem__(self, i: int, value: Any) -> None:
        if i < self.base:
            raise IndexError("the shared rows are read only")
        self.own[i - self.base] = value

    def __delitem__(self, cut: slice) -> None:  # MetadataRows.truncate: only own rows go
        del self.own[max(0, cut.start - self.base):]

    def __iter__(self) -> Iterator:
        return chain(self.shared, self.own)

    def append(self, value: Any) -> None:
        self.own.append(value)


def _each_plane(d: Decoding, planes: list[int],
                build: Callable[[Decoding, int], list[tuple[int, DerivedRow, int]]]
                ) -> list[tuple[int, DerivedRow, int]]:
    """build(view, plane) for every plane, planes on worker threads (about equal events each);
    each view reads the metadata rows made so far and numbers the ones it makes as if they
    came next, and has its own warnings. The views' rows and warnings join `d` in plane order,
    their slices renumbered, so the result is what one thread gives."""
    def run(plane: int) -> tuple[Decoding, list]:
        rows = d.rows
        view = replace(d, rows=MetadataRows(*(_Stacked(c) for c in (
            rows.names, rows.display_names, rows.sections, rows.stats))), warnings=[])
        return view, build(view, plane)

    out = []
    for view, rows in each_balanced(run, planes, [d.plane_events(p).stop - d.plane_events(p).start
                                                  for p in planes]):
        base, offset = view.rows.names.base, len(d.rows.names) - view.rows.names.base
        for shared, own in zip((d.rows.names, d.rows.display_names, d.rows.sections,
                                d.rows.stats), (view.rows.names, view.rows.display_names,
                                                view.rows.sections, view.rows.stats),
                               strict=True):
            shared += own.own
        for _, row, _ in rows:
            row.meta = np.where(row.meta >= base, row.meta + offset, row.meta)
        d.warnings += view.warnings
        out += rows
    return out


def core_rows(d: Decoding) -> tuple[list[tuple[int, DerivedRow, int]], str]:
    """The framework and host offload rows XProf derives for each TPU core (TensorCore planes
    only), each op attributed to the run of its `XLA Modules` event; and a note when they
    were left out. Rows come as (plane, row, sort key)."""
    cores, note = _core_planes(d)
    if note is not None:
        return [], note
    offload = offload_metadata(d.rows)

    def plane_rows(v: Decoding, p: int) -> list[tuple[int, DerivedRow, int]]:
        mine = v.plane_events(p)
        events = np.arange(mine.start, mine.stop)
        return [*v.isolated(p, "Host Offload Ops rows", partial(
                    _host_offload_rows, v, p, events[offload[v.meta_rows[events]]]), []),
                *v.isolated(p, "Framework Name Scope, Framework Ops and Source code rows",
                            partial(_framework_rows, v, p, cores[p], events), [])]

    planes = [p for p in cores if d.plane_events(p).stop > d.plane_events(p).start]
    return _each_plane(d, planes, plane_rows), ""


def _framework_rows(d: Decoding, plane: int, own: list[int],
                    events: np.ndarray) -> list[tuple[int, DerivedRow, int]]:
    start, duration = d.start, d.duration
    events = _time_order(events, start, duration)
    modules = np.concatenate([np.arange(d.lines[k, 5], d.lines[k, 6]) for k in own
                              if d.line_names[k] == _XLA_MODULES] or [np.empty(0, np.int64)])
    modules = modules[np.argsort(start[modules], kind="stable")]
    module = np.full(events.shape[0], -1)
    if modules.shape[0]:
        at = np.searchsorted(start[modules], start[events], side="right") - 1
        ends = (start[modules] + duration[modules])[np.maximum(at, 0)]
        module = np.where((at >= 0) & (start[events] <= ends), at, -1)
    is_async = d.scan.stat_ints(events, "_a")[0]
    rows = framework_rows(events, start, duration, d.meta_rows, module, is_async, d.rows,
                          d.section_of_plane[plane])
    return [(plane, row, row.line_id) for row in rows]


def _time_order(events: np.ndarray, start: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """The events by start, the longest first at one start, then in file order: what
    lexsort((-duration, start)) gives, by a stable sort of the starts (nearly in order already,
    so some 30 times faster) with only the events sharing a start sorted again."""
    at = start[events]
    order = np.argsort(at, kind="stable")
    at = at[order]
    tied = np.flatnonzero(at[1:] == at[:-1])
    if tied.shape[0]:
        runs = np.unique(np.concatenate([tied, tied + 1]))  # positions of each tie, in runs
        mine = order[runs]
        order[runs] = mine[np.lexsort((mine, -duration[events[mine]], at[runs]))]
    return events[order]


def _host_offload_rows(d: Decoding, plane: int,
                       events: np.ndarray) -> list[tuple[int, DerivedRow, int]]:
    """The Host Offload Ops rows of one TPU core, from its host offload ops (`events`)."""
    # At one instant the shorter first (a copy's start, an instant, before a done that
    # begins with it, so they pair as XProf pairs them), then the later in the file: the
    # order that also packs the rows as XProf does on the real TPU profile.
    start, duration = d.start, d.duration
    events = events[np.lexsort((-events, duration[events], start[events]))]
    events = events[~(d.scan.has_stat(events, "_a") | _meta_has(d.rows, d.meta_rows[events],
                                                                  "_a"))]
    rows = host_offload_rows(events, start, duration, d.meta_rows, d.rows,
                             d.section_of_plane[plane])
    return [(plane, row, row.line_id) for row in rows]


def stream_rows(d: Decoding, line_keys: list[int]) -> tuple[list[tuple[int, DerivedRow, int]], str]:
    """The XLA rows XProf derives after each GPU stream, from its kernels (events with
    `kernel_details`, or CUDA graph launches); each row's sort key places it after its stream.
    Up to FRAMEWORK_ROWS_LIMIT kernels, like the TPU framework rows."""
    planes, note = _stream_planes(d)
    if note is not None:
        return [], note
    return _each_plane(d, [p for p, streams in planes.items() if streams], lambda v, p: v.isolated(
        p, "XLA Modules and XLA Ops rows", partial(_plane_stream_rows, v, p, planes[p],
                                                   line_keys), [])), ""


def _plane_stream_rows(d: Decoding, plane: int, streams: list[int],
                       line_keys: list[int]) -> list[tuple[int, DerivedRow, int]]:
    scan, rows, start, duration = d.scan, d.rows, d.start, d.duration
    mine = d.plane_events(plane)
    group_of = _plane_groups(d, mine)
    out = []
    for k in streams:
        events = np.arange(d.lines[k, 5], d.lines[k, 6])
        events = _time_order(events, start, duration)
        kernel = scan.has_stat(events, "kernel_details") | _meta_has(rows, d.meta_rows[events],
                                                                     "kernel_details")
        kernel |= scan.has_stat(events, "cuda_graph_exec_id")
        events = events[kernel]
        if not events.shape[0]:
            continue
        module = _text_stat(d, events, "hlo_module")
        op = _text_stat(d, events, "hlo_op")
        present, program = scan.stat_ints(events, "program_id")
        group = pd.factorize(group_of[events - mine.start])[0].astype(np.int64)
        key = line_keys[k]
        derived = gpu_stream_rows(events, start, duration, module,
                                  np.where(present, program.view(np.int64), -1), op, group,
                                  rows, d.section_of_plane[plane], int(d.lines[k, 1]),
                                  key // GPU_STREAM_STRIDE - 1)
        out += [(plane, row, key + 1 + i) for i, row in enumerate(derived)]
    return out


def _core_planes(d: Decoding) -> tuple[dict[int, list[int]], str | None]:
    """The TPU cores (TensorCore planes) and their lines, and a note when their rows are not
    derived (None when they are)."""
    cores = {p: d.own_lines(p) for p, plane in enumerate(d.headers)
             if _TENSOR_CORE.fullmatch(plane.name)}
    n_ops = sum(int(d.lines[k, 6] - d.lines[k, 5]) for own in cores.values() for k in own)
    return cores, _rows_refused(n_ops, "TPU op events", _CORE_ROWS)


def _stream_planes(d: Decoding) -> tuple[dict[int, list[int]], str | None]:
    """The GPU planes and their streams (lines the profiler wrote), and a note when their rows
    are not derived (None when they are; "" when there are no streams)."""
    planes = {p: [k for k in d.own_lines(p) if not is_derived_line(int(d.lines[k, 1]))]
              for p, plane in enumerate(d.headers) if plane.name.startswith(GPU_PREFIX)}
    if not any(planes.values()):
        return planes, ""
    n_events = sum(int(d.lines[k, 6] - d.lines[k, 5]) for own in planes.values() for k in own)
    return planes, _rows_refused(n_events, "GPU stream events", _STREAM_ROWS)


# ---- the rows of cores and streams, deferred to their first use ---------------------------------
@dataclass(repr=False)  # its columns and headers are no one's to read in a repr
class PendingRows:
    """What the rows of TPU cores and GPU streams are made from, kept from the decode until
    something first needs them: the deriving planes' events in file order (copies of their
    columns, as the trace's own get sorted), their lines and sort keys."""

    decoding: Decoding
    line_keys: list[int]
    _made: tuple[list[tuple[int, DerivedRow, int]], list[str]] | None = None

    def rows(self) -> tuple[list[tuple[int, DerivedRow, int]], list[str]]:
        """Every derived row as (plane, row, sort key), and the warnings made on the way; made
        once, with their metadata rows in `decoding.rows`, after which the copied columns go."""
        if self._made is None:
            d = self.decoding
            refused = _no_room(d)
            if refused:
                self._made = [], [refused]
                return self._made
            r = d.rows  # the decoded trace's tables stay as they are: the rows go on copies
            d.rows = MetadataRows(list(r.names), list(r.display_names), list(r.sections),
                                  list(r.stats))
            made = []
            for family, note in (core_rows(d), stream_rows(d, self.line_keys)):
                made += family
                if note:
                    d.warnings.append(f"{d.source}: {note}")
            self._made = made, d.warnings
            empty = np.empty(0, np.int64)
            d.start = d.duration = d.meta_rows = empty
        return self._made


def pending_rows(d: Decoding, line_keys: list[int], scan_of: Callable[[np.ndarray], Any]
                 ) -> tuple[PendingRows | None, list[str]]:
    """The rows of cores and streams, to be made later: a PendingRows holding the planes that
    will get rows (None when none will), and the notes of families left out now, so a file
    over FRAMEWORK_ROWS_LIMIT keeps no copy. `scan_of(records)` reads events' stats by their
    records in the file."""
    cores, core_note = _core_planes(d)
    streams, stream_note = _stream_planes(d)
    notes = [f"{d.source}: {n}" for n in (core_note, stream_note) if n]
    planes = sorted({*(cores if core_note is None else ()),
                     *(p for p, own in streams.items() if own and stream_note is None)})
    if not planes:
        return None, notes
    kept = np.flatnonzero(np.isin(d.lines[:, 0], planes))
    lines = d.lines[kept].copy()
    sizes = lines[:, 6] - lines[:, 5]
    events = np.concatenate([np.arange(a, b) for a, b in lines[:, 5:7].tolist()]
                            or [np.empty(0, np.int64)])
    lines[:, 6] = np.cumsum(sizes)
    lines[:, 5] = lines[:, 6] - sizes
    compact = Decoding(d.source, d.headers, lines, [d.line_names[k] for k in kept.tolist()],
                       scan_of(d.scan.records(events)), d.start[events], d.duration[events],
                       d.meta_rows[events], d.rows, d.section_of_plane, [])
    return PendingRows(compact, [line_keys[k] for k in kept.tolist()]), notes


def _in_flight(d: Decoding) -> int:
    """The most events the planes made at once hold: the largest planes, one a thread."""
    if not d.lines.shape[0]:
        return 0
    _, plane = np.unique(d.lines[:, 0], return_inverse=True)
    sizes = np.bincount(plane, weights=d.lines[:, 6] - d.lines[:, 5]).astype(np.int64)
    return int(np.sort(sizes)[::-1][:threads_for(sizes.tolist())].sum())


def _no_room(d: Decoding) -> str:
    """Why the rows are not made now ("" when they are): they fit in no memory the kernel has,
    or the file they read stats from changed on disk. A warning, so the timeline opens
    without them instead of the kernel being killed."""
    try:
        d.scan.ensure_intact()
    except ProfileError as exc:
        return f"{_families(d)} were not derived: {str(exc).removeprefix(d.source + ': ')}"
    need = d.start.shape[0] * DERIVED_ROWS_PEAK_PER_EVENT + \
        _in_flight(d) * DERIVED_ROWS_PEAK_PER_EVENT_IN_FLIGHT
    available = shortfall(need)
    if available is None:
        return ""
    return (f"{_families(d)} were not derived: making them from "
            f"{d.start.shape[0]:,} events needs about {size_text(need)} of memory, and this "
            f"kernel has {size_text(available)} "
            "available. Close profiles you are done with (xw.close) and open this one again, "
            f"or set {LIMIT_ENV}=off to make them anyway.")


def _families(d: Decoding) -> str:
    """`<file>: the <rows>` of the families the deriving planes would get."""
    kinds = {d.headers[p].name.startswith(GPU_PREFIX) for p in set(d.lines[:, 0].tolist())}
    what = " and the ".join(name for gpu, name in ((False, _CORE_ROWS), (True, _STREAM_ROWS))
                            if gpu in kinds)
    return f"{d.source}: the {what}"


def _rows_refused(n_events: int, counted: str, what: str) -> str | None:
    """None when rows are derived (XPROF_WIDGETS_FRAMEWORK_ROWS: auto, always or never), else
    why not: "" when turned off, a note when the file is too large for them."""
    wanted = os.environ.get("XPROF_WIDGETS_FRAMEWORK_ROWS", "auto")
    if wanted == "never":
        return ""
    if wanted != "always" and n_events > FRAMEWORK_ROWS_LIMIT:
        return (f"the {what} were not derived: {n_events:,} {counted} (over "
                f"{FRAMEWORK_ROWS_LIMIT:,}) would double the memory the trace takes; set "
                "XPROF_WIDGETS_FRAMEWORK_ROWS=always to derive them.")
    return None


def _plane_groups(d: Decoding, mine: slice) -> np.ndarray:
    """The `group_id` of each of a plane's events (-1 for none), where an event without one
    takes the one before it in the plane's time order, as XProf groups GPU events before it
    derives their rows."""
    events = np.arange(mine.start, mine.stop)
    events = _time_order(events, d.start, d.duration)
    present, value = d.scan.stat_ints(events, _GROUP_ID)
    last = np.maximum.accumulate(np.where(present, np.arange(events.shape[0]), -1))
    group_of = np.full(mine.stop - mine.start, -1, np.int64)
    group_of[events - mine.start] = np.where(last >= 0,
                                             value.view(np.int64)[np.maximum(last, 0)], -1)
    return group_of


def _meta_has(rows: MetadataRows, meta: np.ndarray, name: str) -> np.ndarray:
    """Which events' metadata carry the stat."""
    return np.fromiter((name in st for st in rows.stats), bool, len(rows.stats))[meta]


def _text_stat(d: Decoding, events: np.ndarray, name: str) -> Any:
    """A text stat of each event, from the event or else its metadata ("" for none)."""
    own = d.scan.stat_column(events, name)
    from_meta = np.array([str(st.get(name, "")) for st in d.rows.stats],
                         dtype=object)[d.meta_rows[events]]
    return np.where(own == None, from_meta, own.astype(str)).astype(object)  # elementwise
