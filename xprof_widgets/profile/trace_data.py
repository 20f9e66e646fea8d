"""The columnar form every decoder produces for one host's file.

One row per event in flat numpy columns, events of a track contiguous and ordered by start;
tracks, sections and event metadata as small tables. `Profile` stitches several of these
together (one per host).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


class EventDetails(Protocol):
    """Per-event stats kept in their source form, decoded only when asked for."""

    def stats(self, event: int) -> dict[str, Any]:
        """Every stat of one event (file-local index), refs resolved, flows unpacked."""

    def stat_column(self, events: np.ndarray, name: str) -> np.ndarray:
        """One stat for many events (file-local indices); an object array, None where absent."""

    def stat_ints(self, events: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        """One integer stat for many events, no Python objects: (present, uint64 bits)."""


@dataclass
class Section:
    """A plane (XSpace) or process (Chrome trace)."""

    name: str
    kind: str  # "device", "host" or "other"
    stats: dict[str, Any] = field(default_factory=dict)
    sort_key: tuple = ()


@dataclass
class Track:
    """A line (XSpace) or thread (Chrome trace): events [first, end) of the host's columns."""

    section: int
    name: str
    kind: str  # "slices" or "counter"
    first: int
    end: int
    sort_key: tuple = ()
    line_id: int = -1  # the XLine's id (XSpace); -1 where the format has none
    derived: bool = False  # a row XProf derives (made here from other events), not a line


@dataclass
class HostTrace:
    """Everything decoded from one host's file; times are picoseconds after `base_ns`."""

    host: str
    source: str
    base_ns: int
    start_ps: np.ndarray  # int64
    duration_ps: np.ndarray  # int64
    meta: np.ndarray  # int32 row of `names`
    depth: np.ndarray  # int16
    sections: list[Section]
    tracks: list[Track]
    names: list[str]  # per metadata row: the name as written (full HLO text on TPU)
    display_names: list[str]  # per metadata row: the short name shown on the timeline
    meta_section: np.ndarray  # int32 section of each metadata row
    meta_stats: list[dict[str, Any]]  # per metadata row: stats shared by its events
    details: EventDetails
    hlo_protos: dict[int, tuple[str, bytes]] = field(default_factory=dict)
    counter_values: np.ndarray | None = None  # float64 per event, NaN outside counter tracks
    flow_edges: np.ndarray | None = None  # int64 rows (from event, to event, flow id)
    derived: np.ndarray | None = None  # bool per event: made here as XProf derives it, not read
    warnings: list[str] = field(default_factory=list)
    ts_base_ns: int = 0  # the epoch ns a Chrome file's own `ts` values count from (its header's)
    # Makes the rows XProf derives for TPU cores and GPU streams, left out of the decode until
    # first needed: (this trace, ps its times were moved back by) -> the trace with them.
    deferred: Callable[[HostTrace, int], HostTrace] | None = None

    @property
    def n_events(self) -> int:
        return int(self.start_ps.shape[0])

    def with_derived_rows(self, shift_ps: int = 0) -> HostTrace:
        """This trace with its deferred rows made (itself when it has none)."""
        return self if self.deferred is None else self.deferred(self, shift_ps)
