"""`Profile`: one run's events from every host, as flat columns and small tables.

Events live in numpy columns (start, duration, metadata row, depth), grouped by track and
ordered by start within a track; tracks, sections and event metadata are DataFrames. Times
are integer picoseconds after the earliest event, so nothing is lost to float rounding.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ._wire import count_rows, range_max
from .cache import PROFILES
from .clock import start_time_ns, wall_offset_ns
from .release import release_memory
from .trace_data import HostTrace

PS_PER_US = 1_000_000
_EVENT_PROPERTIES = ("metadata", "display_names", "events_per_meta_row", "derived",
                     "duration_us", "_track_by_first")
"""What derive_rows makes again: the cached properties that read the events or metadata."""
T = TypeVar("T")


class Profile:
    """A decoded profile; build it with `xprof_widgets.open_profile`."""

    def __init__(self, hosts: list[HostTrace], source: str, run: str | None = None,
                 runs: pd.DataFrame | None = None):
        if not hosts:
            raise ProfileError(f"{source}: no host profile to open.")
        self.source = source
        self.run = run
        self.runs = runs if runs is not None else pd.DataFrame(
            {"run": [run], "hosts": [[h.host for h in hosts]], "path": [source]})
        self.hosts = [h.host for h in hosts]
        if len(hosts) > 1:  # rows made later would move every later host's events
            hosts = [h.with_derived_rows() for h in hosts]
        self._hosts = hosts
        self._deriving = threading.Lock()
        self._section_base = np.cumsum([0] + [len(h.sections) for h in hosts])
        self._set_events()
        self.start_ps, self.duration_ps, self.meta, self.depth = self._merge_columns()
        self.sections = self._section_table()
        self._set_tracks()
        if not len(self._tracks):
            raise ProfileError(
                f"{source}: the profile holds no events (planes: "
                f"{', '.join(self.sections['name']) or 'none'}). Capture again while the program "
                "runs, e.g. with jax.profiler.trace around a few training steps.")

    # ---- tracks and the rows made on first use -----------------------------------------------
    @property
    def tracks(self) -> pd.DataFrame:
        """Every track, in XProf's order: a line (XSpace) or thread (Chrome trace), and each row
        XProf derives (framework, source code, host offload, GPU `from #N`), made now if not
        yet (`derive_rows`)."""
        self.derive_rows()
        return self._tracks

    @property
    def built_tracks(self) -> pd.DataFrame:
        """The tracks whose events are made, without making more: the files' own tracks, and
        the derived rows once `derive_rows` has made them. What the tools read: none of them
        counts derived events, so none has the rows made."""
        return self._tracks

    @property
    def file_tracks(self) -> pd.DataFrame:
        """The tracks read from the files (no derived rows); the ids are those of `tracks`
        once the rows are made, so they may change then."""
        return self._tracks[~self._derived_tracks]

    @property
    def host_sources(self) -> list[str]:
        """Each host's file (path or URL), in host order."""
        return [h.source for h in self._hosts]

    @property
    def file_zero_ps(self) -> int:
        """A single host's time 0 as its file's own clock reads it, in ps: a Chrome event's
        `ts` is (file_zero_ps + start_ps) / 1e6 us. What writes events back into the file."""
        if len(self._hosts) != 1:
            raise ValueError(f"{self.source}: file_zero_ps is a single host's (per_host()).")
        return int(self.origin_ps) - self._hosts[0].ts_base_ns * 1000

    def derive_rows(self) -> None:
        """Makes the rows of TPU cores and GPU streams XProf derives from their ops, if not made
        yet. A single host's decode leaves them out; the first use of `tracks`, `events`, SQL,
        search or the timeline makes them, so a profile opened for its tools never does. Their
        events come after the file's, so no event id changes; track ids may, and the analyses
        kept in `memo` are dropped with them."""
        if self._hosts[0].deferred is None:
            return
        with self._deriving:
            if self._hosts[0].deferred is None:
                return
            self._hosts = [self._hosts[0].with_derived_rows(self._t0_ps)]
            h = self._hosts[0]
            self.start_ps, self.duration_ps, self.meta, self.depth = (
                h.start_ps, h.duration_ps, h.meta, h.depth)
            for name in (*_EVENT_PROPERTIES, "_memo"):
                self.__dict__.pop(name, None)
            self._set_events()
            self._set_tracks()

    def _set_events(self) -> None:
        hosts = self._hosts
        self._event_base = np.cumsum([0] + [h.n_events for h in hosts])
        self._meta_base = np.cumsum([0] + [len(h.names) for h in hosts])
        self.warnings = [w for h in hosts for w in h.warnings]

    def _set_tracks(self) -> None:
        self._tracks, self._derived_tracks = self._track_table()

    # ---- building -------------------------------------------------------------------------
    def _merge_columns(self) -> tuple[np.ndarray, ...]:
        if len(self._hosts) == 1:
            h = self._hosts[0]
            t0 = int(h.start_ps.min()) if h.n_events else 0
            h.start_ps -= t0
            self._t0_ps = t0  # the rows made later move by it too
            self.origin_ns = h.base_ns + t0 / 1000
            self.origin_ps = h.base_ns * 1000 + t0
            self.clock_ps = self.origin_ps + wall_offset_ns(h) * 1000
            self.host_shifts_ps = [0]
            return h.start_ps, h.duration_ps, h.meta, h.depth
        # Hosts are placed on the wall clock when every file states its start (clock.py), else
        # on their files' own clocks; the hosts' columns stay as decoded for `per_host`.
        on_wall = all(start_time_ns(h) for h in self._hosts)
        clocks = [h.base_ns + (wall_offset_ns(h) if on_wall else 0) for h in self._hosts]
        base_ns = min(clocks)
        shifts = [(c - base_ns) * 1000 for c in clocks]
        firsts = [int(h.start_ps.min()) + s if h.n_events else None
                  for h, s in zip(self._hosts, shifts, strict=True)]
        t0 = min((f for f in firsts if f is not None), default=0)
        self.origin_ns = base_ns + t0 / 1000
        self.origin_ps = self.clock_ps = base_ns * 1000 + t0
        # what turns a host's own times (after its first event, `per_host`) into this profile's
        self.host_shifts_ps = [0 if f is None else f - t0 for f in firsts]
        meta = np.concatenate([h.meta + np.int32(b)
                               for h, b in zip(self._hosts, self._meta_base[:-1], strict=True)])
        return (np.concatenate([h.start_ps + np.int64(s - t0)
                                for h, s in zip(self._hosts, shifts, strict=True)]),
                np.concatenate([h.duration_ps for h in self._hosts]), meta,
                np.concatenate([h.depth for h in self._hosts]))

    def _section_table(self) -> pd.DataFrame:
        rows = [{"host": h.host, "name": s.name, "kind": s.kind, "stats": s.stats}
                for h in self._hosts for s in h.sections]
        return pd.DataFrame(rows, columns=["host", "name", "kind", "stats"])

    def _track_table(self) -> tuple[pd.DataFrame, np.ndarray]:
        """The tracks table, and which of its tracks are derived rows."""
        rows = []
        for hi, h in enumerate(self._hosts):
            for t in h.tracks:
                section = h.sections[t.section]
                rows.append({
                    "host": h.host, "section": section.name, "section_kind": section.kind,
                    "name": t.name, "kind": t.kind,
                    "section_id": self._section_base[hi] + t.section,
                    "first_event": self._event_base[hi] + t.first,
                    "end_event": self._event_base[hi] + t.end, "line_id": t.line_id,
                    "_derived": t.derived, "_order": (hi, section.sort_key, t.section,
                                                      t.sort_key)})
        columns = ["host", "section", "section_kind", "name", "kind", "n_events", "start_us",
                   "end_us", "max_depth", "section_id", "first_event", "end_event", "line_id"]
        if not rows:
            return pd.DataFrame(columns=columns), np.zeros(0, bool)
        rows.sort(key=lambda r: r.pop("_order"))
        table = pd.DataFrame(rows)
        derived = table.pop("_derived").to_numpy(bool)
        first = table["first_event"].to_numpy(np.int64)
        end = table["end_event"].to_numpy(np.int64)
        table["n_events"] = end - first
        table["start_us"] = self.start_ps[first] / PS_PER_US
        table["end_us"] = range_max(self.start_ps, self.duration_ps, first, end) / PS_PER_US
        table["max_depth"] = range_max(self.depth, np.empty(0, np.int64), first, end)
        table.index.name = "track"
        return table[columns], derived

    def per_host(self) -> list[Profile]:
        """The hosts as single-host profiles sharing this one's decoded columns (hosts without
        events left out): an analysis that sums over hosts runs its per-host part on each, as a
        Dask worker runs it on the host it holds, and combines the parts (analysis/hosts.py)."""
        if len(self._hosts) == 1:
            return [self]
        return self.memo(("per_host",), lambda: [
            Profile([h], source=h.source, run=self.run, runs=self.runs)
            for h in self._hosts if h.tracks])

    # ---- derived data shared by the tools ----------------------------------------------------
    def memo(self, key: tuple, build: Callable[[], T]) -> T:
        """`build()` once per key for this profile: the trace index and the analyses are made
        once and shared by every widget on the profile (the suite's tabs, the overview)."""
        cache = self.__dict__.setdefault("_memo", {})
        if key not in cache:
            made = build()  # may make the derived rows, which drop what is kept here
            cache = self.__dict__.setdefault("_memo", {})
            cache[key] = made
        return cache[key]

    def sql(self, query: str) -> pd.DataFrame:
        """A DuckDB SQL query over this profile (tables slice, track, args, step, op, ...; times
        in ns, as in Perfetto), answered as a DataFrame; see `profile/sql.py`, docs/sql.md."""
        from .sql import run_query

        return run_query(self, query)

    # ---- metadata -------------------------------------------------------------------------
    @cached_property
    def metadata(self) -> pd.DataFrame:
        """One row per event metadata: name (full, e.g. HLO text), display_name, section, stats."""
        return pd.DataFrame({
            "name": [n for h in self._hosts for n in h.names],
            "display_name": [n for h in self._hosts for n in h.display_names],
            "section_id": np.concatenate([h.meta_section + b for h, b in
                                          zip(self._hosts, self._section_base[:-1], strict=True)]),
            "stats": [s for h in self._hosts for s in h.meta_stats],
        })

    @cached_property
    def display_names(self) -> np.ndarray:
        """Short name per metadata row, as an object array indexable by `meta`."""
        return np.array([n for h in self._hosts for n in h.display_names], dtype=object)

    @cached_property
    def events_per_meta_row(self) -> np.ndarray:
        """How many events each metadata row names, in one compiled pass (np.bincount would
        make an int64 copy of `meta`: 400 MB at 5e7 events)."""
        counts = np.zeros(len(self.metadata), np.int64)
        count_rows(np.ascontiguousarray(self.meta), counts)
        return counts

    @cached_property
    def derived(self) -> np.ndarray:
        """Per event: True where the event is made from others as XProf's trace viewer derives
        it (step names aside: framework rows, thread-pool regions), not read from the file."""
        return np.concatenate([h.derived if h.derived is not None else
                               np.zeros(h.n_events, bool) for h in self._hosts])

    @property
    def n_events(self) -> int:
        return int(self.start_ps.shape[0])

    @cached_property
    def duration_us(self) -> float:
        """The last event's end: one compiled pass, no column-sized sum made for it."""
        if not self.n_events:
            raise ValueError(f"{self.source}: the profile has no events, so no duration")
        whole = np.array([0, self.n_events], np.int64)
        return float(range_max(self.start_ps, self.duration_ps, whole[:1], whole[1:])[0]) / PS_PER_US

    # ---- events ---------------------------------------------------------------------------
    def track_ids(self, track: int | str | list | None = None) -> np.ndarray:
        """Track ids for an id, a name (`"XLA Ops"` or `"/device:TPU:0/XLA Ops"`), or a list."""
        if track is None:
            return self.tracks.index.to_numpy()
        if isinstance(track, (list, tuple, np.ndarray, pd.Index)):
            return np.unique(np.concatenate([self.track_ids(t) for t in track]))
        if isinstance(track, (int, np.integer)):
            if track not in self.tracks.index:
                raise KeyError(f"no track {track}; tracks are 0..{len(self.tracks) - 1}")
            return np.array([track])
        full = self.tracks["section"] + "/" + self.tracks["name"]
        hits = self.tracks.index[(self.tracks["name"] == track) | (full == track)].to_numpy()
        if not hits.shape[0]:
            raise KeyError(f"no track named {track!r}; see Profile.tracks for the names")
        return hits

    def event_indices(self, start: float | None = None, end: float | None = None,
                      track: int | str | list | None = None, name: str | None = None) -> np.ndarray:
        """Global indices of events overlapping [start, end] (us) on the tracks, name matching."""
        ids = self.track_ids(track)
        first = self.tracks.loc[ids, "first_event"].to_numpy(np.int64)
        end_event = self.tracks.loc[ids, "end_event"].to_numpy(np.int64)
        ranges = [np.arange(a, b) for a, b in zip(first, end_event, strict=True)]
        idx = np.concatenate(ranges) if ranges else np.empty(0, np.int64)
        keep = np.ones(idx.shape[0], bool)
        if start is not None:
            keep &= self.start_ps[idx] + self.duration_ps[idx] >= round(start * PS_PER_US)
        if end is not None:
            keep &= self.start_ps[idx] <= round(end * PS_PER_US)
        if name is not None:
            keep &= self.name_mask(name)[self.meta[idx]]
        return idx[keep]

    def name_mask(self, pattern: str, regex: bool = True) -> np.ndarray:
        """Which metadata rows match: by regex search over both full and display names."""
        matcher = re.compile(pattern if regex else re.escape(pattern))
        md = self.metadata
        pairs = zip(md["name"], md["display_name"], strict=True)
        return np.fromiter((bool(matcher.search(a) or matcher.search(b)) for a, b in pairs),
                           bool, len(md))

    def events(self, start: float | None = None, end: float | None = None,
               track: int | str | list | None = None, name: str | None = None) -> pd.DataFrame:
        """Events as a DataFrame (`start_us`, `duration_us`, name, track, depth), in track order."""
        return self.events_frame(self.event_indices(start, end, track, name))

    def events_frame(self, idx: np.ndarray) -> pd.DataFrame:
        """The DataFrame face of given global event indices."""
        self.derive_rows()  # before track_of: making them may change the tracks' ids
        idx = np.asarray(idx, np.int64)
        tracks = self.track_of(idx)
        return pd.DataFrame({
            "event": idx,
            "track": tracks,
            "track_name": self.tracks["name"].to_numpy()[tracks],
            "section": self.tracks["section"].to_numpy()[tracks],
            "host": self.tracks["host"].to_numpy()[tracks],
            "name": self.display_names[self.meta[idx]],
            "start_us": self.start_ps[idx] / PS_PER_US,
            "duration_us": self.duration_ps[idx] / PS_PER_US,
            "depth": self.depth[idx].astype(np.int64),
        })

    @cached_property
    def _track_by_first(self) -> tuple[np.ndarray, np.ndarray]:
        firsts = self._tracks["first_event"].to_numpy(np.int64)  # no rows made for a lookup
        order = np.argsort(firsts)
        return firsts[order], order

    def track_of(self, idx: np.ndarray) -> np.ndarray:
        """Track id of each global event index."""
        firsts, order = self._track_by_first
        return order[np.searchsorted(firsts, idx, side="right") - 1]

    # ---- details --------------------------------------------------------------------------
    def _local(self, event: int) -> tuple[HostTrace, int, int]:
        hi = int(np.searchsorted(self._event_base, event, side="right") - 1)
        return self._hosts[hi], event - int(self._event_base[hi]), hi

    def event_stats(self, event: int) -> dict[str, Any]:
        """Every stat of one event, refs resolved and flows unpacked (decoded on demand)."""
        host, local, _ = self._local(int(event))
        return host.details.stats(local)

    def metadata_stats(self, event: int) -> dict[str, Any]:
        """Stats shared by every event of this event's metadata (flops, hlo_category, ...)."""
        return self.metadata["stats"].iat[int(self.meta[event])]

    def stat_column(self, events: np.ndarray, name: str) -> np.ndarray:
        """One stat for many events: an object array, None where an event lacks it."""
        events = np.asarray(events, np.int64)
        out = np.full(events.shape[0], None, dtype=object)
        hosts = np.searchsorted(self._event_base, events, side="right") - 1
        for hi in np.unique(hosts).tolist():
            mine = hosts == hi
            out[mine] = self._hosts[hi].details.stat_column(
                events[mine] - self._event_base[hi], name)
        return out

    def stat_ints(self, events: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        """One integer stat for many events as arrays, for scans over millions of events:
        (present bool, value as uint64 bits; int64 values read through `.view(np.int64)`)."""
        events = np.asarray(events, np.int64)
        if len(self._hosts) == 1:
            return self._hosts[0].details.stat_ints(events, name)
        present = np.zeros(events.shape[0], bool)
        values = np.zeros(events.shape[0], np.uint64)
        hosts = np.searchsorted(self._event_base, events, side="right") - 1
        for hi in np.unique(hosts).tolist():
            mine = hosts == hi
            present[mine], values[mine] = self._hosts[hi].details.stat_ints(
                events[mine] - self._event_base[hi], name)
        return present, values

    def counter_values(self, events: np.ndarray) -> np.ndarray:
        """The value of counter events (NaN for events that are not counter samples)."""
        events = np.asarray(events, np.int64)
        out = np.full(events.shape[0], np.nan)
        hosts = np.searchsorted(self._event_base, events, side="right") - 1
        for hi in np.unique(hosts).tolist():
            values = self._hosts[hi].counter_values
            if values is not None:
                mine = hosts == hi
                out[mine] = values[events[mine] - self._event_base[hi]]
        return out

    def flow_edges(self) -> np.ndarray:
        """Flows the source format states explicitly (Chrome `s`/`f`): rows of (from, to, id)."""
        parts = [h.flow_edges + [b, b, 0]
                 for h, b in zip(self._hosts, self._event_base[:-1], strict=True)
                 if h.flow_edges is not None and len(h.flow_edges)]
        return np.concatenate(parts) if parts else np.empty((0, 3), np.int64)

    # ---- HLO ------------------------------------------------------------------------------
    @cached_property
    def hlo_modules(self) -> pd.DataFrame:
        """HLO modules whose protos the profile carries: program_id, name, host, and `label`,
        XProf's name for the module (`jit_train_step(32)`)."""
        rows = [{"program_id": pid, "name": name, "host": h.host, "label": f"{name}({pid})"}
                for h in self._hosts for pid, (name, _) in sorted(h.hlo_protos.items())]
        return pd.DataFrame(rows, columns=["program_id", "name", "host", "label"])

    def hlo_proto(self, module: int | str) -> Any:
        """The `xla.HloProto` of a module, by program id or name, decoded on demand."""
        pid, name, data, source = self._hlo_entry(module)
        return self._decode_hlo(pid, name, data, source)

    def hlo_proto_bytes(self, module: int | str) -> bytes:
        """The serialized `xla.HloProto` of a module, for readers faster than a full parse."""
        return self._hlo_entry(module)[2]

    def _hlo_entry(self, module: int | str) -> tuple[int, str, bytes, str]:
        for h in self._hosts:
            for pid, (name, data) in h.hlo_protos.items():
                if module in (pid, name, f"{name}({pid})"):
                    return pid, name, data, h.source
        known = ", ".join(self.hlo_modules["label"])
        raise ProfileError(f"{self.source}: no HLO proto for module {module!r}. The profile "
                           f"carries: {known or 'none'}. " + _HLO_HINT)

    def _decode_hlo(self, pid: int, name: str, data: bytes, source: str) -> Any:
        cache = self.__dict__.setdefault("_hlo_cache", {})
        if pid not in cache:
            from .schema import HloProto
            try:
                cache[pid] = HloProto.FromString(data)
            except Exception as exc:  # upb raises DecodeError; older runtimes other types
                raise ProfileError(f"{source}: the HLO proto of {name} ({pid}) is corrupt: "
                                   f"{exc}") from exc
        return cache[pid]

    # ---- releasing -------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the decoded data for good: the kernel's shared copy (profile/cache.py) goes
        now, not when the last widget showing it does; the next open decodes the files again.
        Using this profile afterwards raises a ProfileError."""
        PROFILES.forget(self)
        kept = {"source": self.source, "run": self.run, "_closed": True}
        self.__dict__.clear()  # columns, tables, the trace index and analyses in `memo`
        self.__dict__.update(kept)
        release_memory(collect=False)  # what the profile held is freed now, no cycle left

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not set: after `close`, every one of the data's.
        if self.__dict__.get("_closed"):
            raise ProfileError(f"{self.source}: this profile was closed (xw.close) and its data "
                               f"freed; open it again with xw.open_profile({self.source!r}).")
        raise AttributeError(f"'Profile' object has no attribute {name!r}")

    def __repr__(self) -> str:
        if self.__dict__.get("_closed"):
            return f"<Profile {self.source!r} run={self.run!r} closed>"
        kinds = self.sections["kind"].value_counts().to_dict()
        return (f"<Profile {self.source!r} run={self.run!r} hosts={len(self.hosts)} "
                f"sections={kinds} tracks={len(self.tracks)} events={self.n_events:,} "
                f"duration={self.duration_us / 1000:.3f} ms>")


_HLO_HINT = ("HLO protos are written into `/host:metadata` by jax.profiler.trace on every "
             "backend (XLA's xla_enable_dumping / enable_hlo_proto must not be turned off).")
