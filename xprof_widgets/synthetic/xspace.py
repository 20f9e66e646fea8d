"""Writes an XSpace file plane by plane, with each line's events spooled to disk in chunks.

The events of a line arrive as columns (metadata id, start, duration, stats) and are encoded at
once by `wire`; a line's bytes wait in a temporary file until the plane is complete, because a
length-delimited field needs its size first. Metadata, stats and everything else small are upb
messages from `xprof_widgets.profile.schema`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..profile.schema import XEventMetadata, XStat, XStatMetadata
from . import wire

_STAT_FIELD = {"double": 2, "uint64": 3, "int64": 4, "str": 5, "ref": 7}


@dataclass
class Stat:
    """A stat column: one value per event (or per row where `present`).

    kind is int64, uint64, double, ref (values are stat-metadata ids whose names are the
    strings) or str (values are codes into `table`).
    """

    metadata_id: int
    values: np.ndarray
    kind: str = "int64"
    table: Sequence[str] = ()
    present: np.ndarray | None = None


def encode_events(metadata_id, offset_ps, duration_ps, stats: Sequence[Stat] = ()) -> bytes:
    """The `XLine.events` fields (number 4) of these events, in the order given."""
    metadata_id = np.asarray(metadata_id)
    n = len(metadata_id)
    parts = [
        wire.varint_field(1, metadata_id),
        wire.varint_field(2, offset_ps),
        wire.varint_field(3, duration_ps, implicit=True),
    ]
    for stat in stats:
        field = _STAT_FIELD[stat.kind]
        if stat.kind == "double":
            value = wire.double_field(field, stat.values)
        elif stat.kind == "str":
            value = wire.table_field(field, stat.values, [s.encode() for s in stat.table])
        else:
            value = wire.varint_field(field, stat.values)
        md = wire.varint_field(1, np.full(n, stat.metadata_id, dtype=np.int64))
        parts.append(wire.message_field(4, [md, value], present=stat.present))
    return wire.to_bytes(wire.message_field(4, parts))


class Line:
    """One XLine. Events are added chunk by chunk in time order and spooled to a temp file."""

    def __init__(
        self, line_id: int, name: str, timestamp_ns: int, tmpdir: Path, display_name: str = ""
    ):
        self.id, self.name, self.timestamp_ns = line_id, name, timestamp_ns
        self.display_name = display_name
        self.count = 0
        self._last_start = -1
        self._spool = tempfile.TemporaryFile(dir=tmpdir)  # noqa: SIM115 - closed by write_to
        self._size = 0

    def add(self, metadata_id, start_ps, duration_ps, stats: Sequence[Stat] = ()) -> None:
        """Adds events at absolute times (ps); sorts them by start, parents before children."""
        start_ps = np.asarray(start_ps, dtype=np.int64)
        duration_ps = np.asarray(duration_ps, dtype=np.int64)
        if len(start_ps) == 0:
            return
        metadata_id = np.asarray(metadata_id)
        step = np.diff(start_ps)
        if (step < 0).any() or ((step == 0) & (np.diff(duration_ps) > 0)).any():
            order = np.lexsort((-duration_ps, start_ps))
            start_ps, duration_ps, metadata_id = (
                start_ps[order],
                duration_ps[order],
                metadata_id[order],
            )
            stats = [
                Stat(
                    s.metadata_id,
                    np.asarray(s.values)[order],
                    s.kind,
                    s.table,
                    None if s.present is None else np.asarray(s.present)[order],
                )
                for s in stats
            ]
        offset = start_ps - self.timestamp_ns * 1000
        if offset[0] < 0 or start_ps[0] < self._last_start or duration_ps.min() < 0:
            raise ValueError(f"line {self.name!r}: events out of order or before the line start")
        self._last_start = int(start_ps[-1])
        payload = encode_events(metadata_id, offset, duration_ps, stats)
        self._spool.write(payload)
        self._size += len(payload)
        self.count += len(start_ps)

    def _head(self) -> bytes:
        head = wire.varint_scalar(1, self.id) if self.id else b""
        head += wire.len_delimited(2, self.name.encode())
        if self.timestamp_ns:
            head += wire.varint_scalar(3, self.timestamp_ns)
        return head

    def _tail(self) -> bytes:
        return wire.len_delimited(11, self.display_name.encode()) if self.display_name else b""

    def size(self) -> int:
        return len(self._head()) + self._size + len(self._tail())

    def write_to(self, out: BinaryIO) -> None:
        out.write(wire.key(3, 2) + wire.encode_varint(self.size()) + self._head())
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, out, 1 << 24)
        self._spool.close()
        out.write(self._tail())


class Plane:
    """One XPlane: its metadata tables, stats and lines."""

    def __init__(self, plane_id: int, name: str, tmpdir: Path):
        self.id, self.name, self._tmpdir = plane_id, name, tmpdir
        self.lines: list[Line] = []
        self.stats: list[XStat] = []
        self._stat_ids: dict[str, int] = {}
        self._event_ids: dict[tuple[str, str], int] = {}
        self._event_md: dict[int, XEventMetadata] = {}

    def stat_id(self, name: str) -> int:
        """The XStatMetadata id of `name`, created on first use (ids count from 1)."""
        if name not in self._stat_ids:
            self._stat_ids[name] = len(self._stat_ids) + 1
        return self._stat_ids[name]

    def stat(self, name: str, value, kind: str = "") -> XStat:
        """An XStat; kind defaults from the value (int -> int64, float, str, bytes)."""
        kind = kind or {int: "int64", float: "double", str: "str", bytes: "bytes"}[type(value)]
        stat = XStat(metadata_id=self.stat_id(name))
        if kind == "ref":
            stat.ref_value = self.stat_id(value)
        else:
            setattr(stat, f"{kind}_value", value)
        return stat

    def event_id(
        self,
        name: str,
        display_name: str = "",
        stats: Sequence[XStat] = (),
        metadata_id: int | None = None,
    ) -> int:
        """The XEventMetadata id for (name, display_name), created on first use."""
        found = self._event_ids.get((name, display_name))
        if found is not None and metadata_id is None:
            return found
        if metadata_id is None:
            metadata_id = len(self._event_md) + 1
            while metadata_id in self._event_md:
                metadata_id += 1
        self._event_md[metadata_id] = XEventMetadata(
            id=metadata_id, name=name, display_name=display_name, stats=stats
        )
        self._event_ids[(name, display_name)] = metadata_id
        return metadata_id

    def line(self, line_id: int, name: str, timestamp_ns: int = 0, display_name: str = "") -> Line:
        line = Line(line_id, name, timestamp_ns, self._tmpdir, display_name)
        self.lines.append(line)
        return line

    @property
    def event_count(self) -> int:
        return sum(line.count for line in self.lines)

    def _tables(self) -> bytes:
        out = bytearray()
        for key in sorted(self._event_md):
            entry = wire.varint_scalar(1, key) + wire.len_delimited(
                2, self._event_md[key].SerializeToString(deterministic=True)
            )
            out += wire.len_delimited(4, entry)
        for name, sid in sorted(self._stat_ids.items(), key=lambda kv: kv[1]):
            value = XStatMetadata(id=sid, name=name).SerializeToString(deterministic=True)
            out += wire.len_delimited(5, wire.varint_scalar(1, sid) + wire.len_delimited(2, value))
        for stat in self.stats:
            out += wire.len_delimited(6, stat.SerializeToString(deterministic=True))
        return bytes(out)

    def write_to(self, out: BinaryIO) -> None:
        """Writes the XSpace `planes` field (number 1) holding this plane."""
        head = (wire.varint_scalar(1, self.id) if self.id else b"") + wire.len_delimited(
            2, self.name.encode()
        )
        tables = self._tables()
        lines_size = 0
        for line in self.lines:
            size = line.size()
            lines_size += 1 + len(wire.encode_varint(size)) + size
        out.write(wire.key(1, 2) + wire.encode_varint(len(head) + lines_size + len(tables)))
        out.write(head)
        for line in self.lines:
            line.write_to(out)
        out.write(tables)


def write_xspace(path: Path, planes: Sequence[Plane], hostnames: Sequence[str]) -> None:
    with open(path, "wb") as out:
        for plane in planes:
            plane.write_to(out)
        out.writelines(wire.len_delimited(4, host.encode()) for host in hostnames)
