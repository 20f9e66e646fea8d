"""Small XSpace files written with the schema classes, for tests that need exact content."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from xprof_widgets.opening import open_profile
from xprof_widgets.profile.model import Profile
from xprof_widgets.profile.schema import XSpace


class _PlaneWriter:
    """Interns stat and event metadata names of one plane as ids."""

    def __init__(self, plane: Any):
        self.plane = plane
        self.stat_ids: dict[str, int] = {}
        self.meta_ids: dict[str, int] = {}

    def stat_id(self, name: str) -> int:
        if name not in self.stat_ids:
            sid = self.stat_ids[name] = len(self.stat_ids) + 1
            self.plane.stat_metadata[sid].id = sid
            self.plane.stat_metadata[sid].name = name
        return self.stat_ids[name]

    def meta_id(self, name: str, display_name: str = "") -> int:
        if name not in self.meta_ids:
            mid = self.meta_ids[name] = len(self.meta_ids) + 1
            md = self.plane.event_metadata[mid]
            md.id, md.name, md.display_name = mid, name, display_name
        return self.meta_ids[name]

    def add_stats(self, target: Any, stats: dict) -> None:
        for key, value in stats.items():
            stat = target.add(metadata_id=self.stat_id(key))
            if isinstance(value, tuple) and value[0] == "ref":
                stat.ref_value = self.stat_id(value[1])
            elif isinstance(value, tuple) and value[0] == "int64":
                stat.int64_value = value[1]
            elif isinstance(value, int):
                if value < 0:
                    stat.int64_value = value
                else:
                    stat.uint64_value = value
            elif isinstance(value, float):
                stat.double_value = value
            elif isinstance(value, bytes):
                stat.bytes_value = value
            else:
                stat.str_value = value


def build_xspace(planes: list[dict]) -> bytes:
    """planes: [{name, stats, metadata: {name: {display_name, stats}},
    lines: [{name, timestamp_ns, events: [(name, offset_ps, dur_ps, stats)]}]}];
    stat values: int (uint64 unless negative), float, str, bytes, ("int64", n) or ("ref", "text")."""
    space = XSpace()
    for p, spec in enumerate(planes):
        writer = _PlaneWriter(space.planes.add(id=p, name=spec["name"]))
        writer.add_stats(writer.plane.stats, spec.get("stats", {}))
        for name, meta in spec.get("metadata", {}).items():
            mid = writer.meta_id(name, meta.get("display_name", ""))
            writer.add_stats(writer.plane.event_metadata[mid].stats, meta.get("stats", {}))
        for k, line_spec in enumerate(spec.get("lines", [])):
            line = writer.plane.lines.add(id=k + 1, name=line_spec["name"],
                                          timestamp_ns=line_spec.get("timestamp_ns", 0))
            for name, offset, dur, stats in line_spec["events"]:
                event = line.events.add(metadata_id=writer.meta_id(name), offset_ps=offset,
                                        duration_ps=dur)
                writer.add_stats(event.stats, stats)
    return space.SerializeToString()


def open_planes(planes: list[dict], directory: Path | None = None,
                name: str = "host0.xplane.pb") -> Profile:
    """A Profile of the planes (as `build_xspace` takes them), through a real file
    `directory/name` (a temporary directory's when None) and `open_profile`."""
    if directory is None:
        with tempfile.TemporaryDirectory() as tmp:
            return open_planes(planes, Path(tmp), name)
    path = directory / name
    path.write_bytes(build_xspace(planes))
    return open_profile(path)
