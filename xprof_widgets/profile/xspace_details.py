"""An XSpace's per-event stats, read back from the file's bytes when asked (a click's details, a
tool's column), never for every event at decode: the decoder (xspace.py) and the derived rows
(xspace_derived.py) both hand these out, so they sit below both."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from . import _wire
from .mapped import ensure_intact, release
from .schema import XEvent
from .stats import stats_dict, unpack_flow

WIRE_ERRORS = {
    _wire.ERR_TRUNCATED: "a field runs past the end of the data (truncated or corrupt file)",
    _wire.ERR_WIRETYPE: "an unknown protobuf wire type (the file is not an XSpace)",
    _wire.ERR_VARINT: "a malformed varint (the file is corrupt or not an XSpace)",
}

_SCAN_CHUNK = 1 << 20
"""Events one stat scan reads at a time (its temporaries take some 100 bytes an event)."""


def no_record(record: np.ndarray) -> int:
    """The record offset given to derived events, which the file does not hold."""
    return int(np.iinfo(record.dtype).max)


_RELEASE_AFTER = 1 << 18
"""Events a stat scan reads beyond which it hands the mapped file's pages back afterwards;
smaller ones (a click's details, a window's events) keep them for the next."""


class XSpaceDetails:
    """Per-event stats read back from the file bytes by each event's record offset; derived
    events (no record) have none."""

    def __init__(self, data: bytes, record: np.ndarray, plane_starts: np.ndarray,
                 stat_names: list[dict[int, str]], source: str, has_derived: bool):
        self._data = data
        self._buf = np.frombuffer(data, np.uint8)
        self._record = record
        self._plane_starts = plane_starts
        self._stat_names = stat_names
        self._stat_ids = [{name: sid for sid, name in names.items()} for names in stat_names]
        self.source = source
        self._derived = has_derived  # some events have no record (no n-sized scan to know)

    def ensure_intact(self) -> None:
        """Raises a ProfileError naming the file if it changed on disk since it was mapped."""
        ensure_intact(self._data)

    def records(self, events: np.ndarray) -> np.ndarray:
        """Where each event's record starts in the file."""
        return self._record[events]

    def with_derived(self, n: int) -> XSpaceDetails:
        """These details with `n` derived events (no record) after the file's."""
        record = np.concatenate([self._record, np.full(n, no_record(self._record),
                                                       self._record.dtype)])
        return XSpaceDetails(self._data, record, self._plane_starts, self._stat_names,
                             self.source, self._derived or n > 0)

    def stat_names(self, plane: int) -> list[str]:
        """The stat names a plane declares."""
        return list(self._stat_names[plane].values())

    def _in_file(self, events: np.ndarray) -> np.ndarray:
        """Which of the events have a record in the file."""
        if not self._derived:
            return np.ones(events.shape[0], bool)
        return self._record[events] != no_record(self._record)

    def stats(self, event: int) -> dict[str, Any]:
        if not self._in_file(np.array([event]))[0]:
            return {}
        names = self._stat_names[int(self._plane_of(np.array([event]))[0])]
        ensure_intact(self._data)
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
        if events.shape[0] >= _RELEASE_AFTER:  # strings were read after _scan's hand-back
            release(self._data)
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
        ensure_intact(self._data)
        status = _wire.scan_stat(self._buf, self._record[events], targets, any_stat, kind,
                                 ivalue, fvalue, span)
        if status != _wire.OK:
            raise ProfileError(f"{self.source}: event stats are corrupt ({WIRE_ERRORS[status]}).")
        if n >= _RELEASE_AFTER:  # a tool's pass over many events: its pages go back
            release(self._data)
        return kind, ivalue, fvalue, span
