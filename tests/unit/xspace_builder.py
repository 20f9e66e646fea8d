"""Small XSpace files written with the schema classes, for tests that need exact content."""

from __future__ import annotations

from xprof_widgets.profile.schema import XSpace


def build_xspace(planes: list[dict]) -> bytes:
    """planes: [{name, lines: [{name, timestamp_ns, events: [(name, offset_ps, dur_ps, stats)]}],
    stats: {name: value}}]; stats values: int, float, str, bytes, or ("ref", "text")."""
    space = XSpace()
    for p, spec in enumerate(planes):
        plane = space.planes.add(id=p, name=spec["name"])
        stat_ids: dict[str, int] = {}
        meta_ids: dict[str, int] = {}

        def stat_id(name: str) -> int:
            if name not in stat_ids:
                stat_ids[name] = len(stat_ids) + 1
                plane.stat_metadata[stat_ids[name]].id = stat_ids[name]
                plane.stat_metadata[stat_ids[name]].name = name
            return stat_ids[name]

        def add_stats(target, stats: dict) -> None:
            for key, value in stats.items():
                stat = target.add(metadata_id=stat_id(key))
                if isinstance(value, tuple) and value[0] == "ref":
                    stat.ref_value = stat_id(value[1])
                elif isinstance(value, bool) or isinstance(value, int):
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

        add_stats(plane.stats, spec.get("stats", {}))
        for mname, mspec in spec.get("metadata", {}).items():
            meta_ids[mname] = len(meta_ids) + 1
            md = plane.event_metadata[meta_ids[mname]]
            md.id = meta_ids[mname]
            md.name = mname
            md.display_name = mspec.get("display_name", "")
            add_stats(md.stats, mspec.get("stats", {}))
        for k, lspec in enumerate(spec.get("lines", [])):
            line = plane.lines.add(id=k + 1, name=lspec["name"],
                                   timestamp_ns=lspec.get("timestamp_ns", 0))
            for name, offset, dur, stats in lspec["events"]:
                if name not in meta_ids:
                    meta_ids[name] = len(meta_ids) + 1
                    plane.event_metadata[meta_ids[name]].id = meta_ids[name]
                    plane.event_metadata[meta_ids[name]].name = name
                event = line.events.add(metadata_id=meta_ids[name], offset_ps=offset,
                                        duration_ps=dur)
                add_stats(event.stats, stats)
    return space.SerializeToString()
