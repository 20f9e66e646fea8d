"""Flow arrows between events: the edge list and its window lookup.

Edges come from four sources, found by one compiled stat scan each (`Profile.stat_ints`, no
Python object per event) over every slice event the first time flows are asked for:
- XProf `flow` stats: events sharing (category, id) form a chain in time order; an edge joins
  consecutive events when the first sends (out, inout) and the second receives (in, inout).
- producer/consumer stats: an event with `_p`=X, `_pt`=T flows to every event with `_c`=X,
  `_ct`=T (from the latest such producer that started before the consumer).
- `correlation_id` (Kineto: `correlation`): a launch on a host section flows to the device
  events with the same id.
- Chrome trace `s`/`t`/`f` flows, which the decoder already resolved (`Profile.flow_edges`).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US, Profile

KINDS = ("flow", "producer", "correlation", "chrome")
_SEND_RANK = np.array([3, 2, 0, 1])  # by direction none, in, out, inout: senders first
MAX_ARROWS = 15_000
"""Flows one window answer carries at most (32 bytes each on the wire): keeps an answer with
flows under 1 MB at 1600 px. Beyond it, arrows are thinned evenly in time."""
_CHUNK = 1 << 20


class Edges:
    """Columnar edges between events, ordered by the earlier of their two times, with the window
    lookup the view's arrows come from. Columns: from/to event, track, depth and ps, plus any
    others a kind of edge carries (reordered with them)."""

    def __init__(self, columns: dict[str, np.ndarray]):
        lo = np.minimum(columns["from_ps"], columns["to_ps"])
        order = np.argsort(lo, kind="stable")
        for name, column in columns.items():
            setattr(self, name, np.asarray(column)[order])
        self._lo = lo[order]
        self._hi = np.maximum(self.from_ps, self.to_ps)
        span = self._hi - self._lo
        # Most flows are short: look those up by a window widened by the longest short span;
        # the few long ones (beyond the 99th percentile) are checked one by one.
        self._short_span = int(np.quantile(span, 0.99)) if span.shape[0] else 0
        self._long = np.flatnonzero(span > self._short_span)
        self._by_from = np.argsort(self.from_event, kind="stable")
        self._by_to = np.argsort(self.to_event, kind="stable")

    def __len__(self) -> int:
        return int(self.from_event.shape[0])

    def of_event(self, event: int) -> tuple[np.ndarray, np.ndarray]:
        """(incoming, outgoing) edge indices of one event."""
        def find(order: np.ndarray, column: np.ndarray) -> np.ndarray:
            keys = column[order]
            return order[np.searchsorted(keys, event):np.searchsorted(keys, event, "right")]
        return find(self._by_to, self.to_event), find(self._by_from, self.from_event)

    def window(self, lo: int, hi: int, px: float, visible: np.ndarray) -> np.ndarray:
        """Edges whose time span meets [lo, hi] ps with an end on a visible track (a boolean
        mask over track ids). Of edges joining the same two (track, depth) rows within the
        same pixel at both ends only one is kept: dense flows cost one arrow per
        pixel pair."""
        a = np.searchsorted(self._lo, lo - self._short_span)
        b = np.searchsorted(self._lo, hi, side="right")
        short = np.arange(a, b)
        short = short[(self._hi[short] >= lo) & (self._hi[short] - self._lo[short]
                                                 <= self._short_span)]
        long = self._long[(self._lo[self._long] <= hi) & (self._hi[self._long] >= lo)]
        cand = np.concatenate([short, long])
        cand = cand[visible[self.from_track[cand]] | visible[self.to_track[cand]]]
        if not cand.shape[0]:
            return cand
        width = int((hi - lo) / px)
        columns = [self.from_track[cand], self.from_depth[cand], self.to_track[cand],
                   self.to_depth[cand], _bucket(self.from_ps[cand], lo, px, width),
                   _bucket(self.to_ps[cand], lo, px, width)]
        sizes = [int(c.max()) + 1 for c in columns]
        if float(np.prod(np.array(sizes, np.float64))) < 2.0**62:  # one int64 key
            key = np.zeros(cand.shape[0], np.int64)
            for column, size in zip(columns, sizes, strict=True):
                key = key * size + column
            _, first = np.unique(key, return_index=True)
        else:
            order = np.lexsort(columns[::-1])
            stacked = np.stack(columns)[:, order]
            keep = np.ones(cand.shape[0], bool)
            keep[1:] = (np.diff(stacked, axis=1) != 0).any(axis=0)
            first = order[keep]
        kept = np.sort(cand[first])
        if kept.shape[0] > MAX_ARROWS:  # more than this many cover each other anyway
            kept = kept[np.linspace(0, kept.shape[0] - 1, MAX_ARROWS).astype(np.int64)]
        return kept


class FlowIndex(Edges):
    """The profile's own flows (the module docstring's four sources) as `Edges` with a kind
    and flow id."""

    def __init__(self, profile: Profile, ranges: np.ndarray):
        """ranges: (first, end) event of the tracks whose events may carry flows."""
        started = time.perf_counter()
        self.profile = profile
        parts = [_flow_stat_edges(profile, ranges), _producer_edges(profile, ranges),
                 _correlation_edges(profile, ranges)]
        explicit = profile.flow_edges()
        parts.append((explicit[:, 0], explicit[:, 1], np.full(explicit.shape[0], 3),
                      explicit[:, 2].astype(np.uint64)))
        src = np.concatenate([p[0] for p in parts]).astype(np.int64)
        dst = np.concatenate([p[1] for p in parts]).astype(np.int64)
        kind = np.concatenate([p[2] for p in parts]).astype(np.uint8)
        flow_id = np.concatenate([p[3] for p in parts]).astype(np.uint64)
        order = np.lexsort((dst, src))  # stable: of duplicate edges the first source wins
        first = np.ones(order.shape[0], bool)
        first[1:] = (src[order][1:] != src[order][:-1]) | (dst[order][1:] != dst[order][:-1])
        pick = np.sort(order[first & (src[order] != dst[order])])
        src, dst = src[pick], dst[pick]
        super().__init__({
            "from_event": src, "to_event": dst, "kind": kind[pick], "flow_id": flow_id[pick],
            "from_ps": profile.start_ps[src], "to_ps": profile.start_ps[dst],
            "from_track": profile.track_of(src).astype(np.int64),
            "to_track": profile.track_of(dst).astype(np.int64),
            "from_depth": profile.depth[src].astype(np.int64),
            "to_depth": profile.depth[dst].astype(np.int64)})
        self.build_seconds = time.perf_counter() - started

    def frame(self, edges: np.ndarray | None = None) -> pd.DataFrame:
        """Edges as a DataFrame: from/to event, track, depth, start_us, kind, flow id."""
        e = np.arange(len(self)) if edges is None else np.asarray(edges, np.int64)
        return pd.DataFrame({
            "from_event": self.from_event[e], "to_event": self.to_event[e],
            "from_track": self.from_track[e], "to_track": self.to_track[e],
            "from_depth": self.from_depth[e], "to_depth": self.to_depth[e],
            "from_us": self.from_ps[e] / PS_PER_US, "to_us": self.to_ps[e] / PS_PER_US,
            "kind": np.asarray(KINDS, dtype=object)[self.kind[e]],
            "flow_id": self.flow_id[e],
        })


def _bucket(t: np.ndarray, lo: int, px: float, width: int) -> np.ndarray:
    """Pixel column of each time, 0 for everything left of the window, width + 2 right of it."""
    return np.clip(np.floor((t - lo) / px) + 1, 0, width + 2).astype(np.int64)


def _hits(profile: Profile, ranges: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(events of the ranges holding integer stat `name`, its values as uint64 bits), scanned
    in chunks so the scan's per-event temporaries stay small."""
    found, values = [np.empty(0, np.int64)], [np.empty(0, np.uint64)]
    for first, end in ranges.tolist():
        for at in range(first, end, _CHUNK):
            chunk = np.arange(at, min(at + _CHUNK, end))
            present, value = profile.stat_ints(chunk, name)
            found.append(chunk[present])
            values.append(value[present])
    return np.concatenate(found), np.concatenate(values)


def _empty() -> tuple[np.ndarray, ...]:
    empty = np.empty(0, np.int64)
    return empty, empty, empty, np.empty(0, np.uint64)


def _flow_stat_edges(profile: Profile, ranges: np.ndarray) -> tuple[np.ndarray, ...]:
    hit, packed = _hits(profile, ranges, "flow")
    # direction in bits 0-1 (1 in, 2 out, 3 inout), a 56-bit id, the category on top
    fid = (packed >> np.uint64(2)) & np.uint64((1 << 56) - 1)
    category = packed >> np.uint64(58)
    rank = _SEND_RANK[(packed & np.uint64(3)).astype(np.int64)]
    order = np.lexsort((rank, profile.start_ps[hit], fid, category))
    hit, fid, category, rank = hit[order], fid[order], category[order], rank[order]
    link = ((fid[1:] == fid[:-1]) & (category[1:] == category[:-1])
            & (rank[:-1] <= 1) & (rank[1:] >= 1) & (rank[1:] <= 2))
    at = np.flatnonzero(link)
    return hit[at], hit[at + 1], np.zeros(at.shape[0], np.int64), fid[at]


def _producer_edges(profile: Profile, ranges: np.ndarray) -> tuple[np.ndarray, ...]:
    p_event, p_id = _hits(profile, ranges, "_p")
    c_event, c_id = _hits(profile, ranges, "_c")
    if not p_event.shape[0] or not c_event.shape[0]:
        return _empty()
    producers = pd.DataFrame({"t": profile.start_ps[p_event], "id": p_id,
                              "type": _types(profile, p_event, "_pt"), "src": p_event})
    consumers = pd.DataFrame({"t": profile.start_ps[c_event], "id": c_id,
                              "type": _types(profile, c_event, "_ct"), "dst": c_event})
    producers = producers.sort_values("t", kind="stable")
    consumers = consumers.sort_values("t", kind="stable")
    pairs = pd.merge_asof(consumers, producers, on="t", by=["type", "id"], direction="backward")
    missing = pairs["src"].isna().to_numpy()
    if missing.any():  # clocks of two sections may disagree: take the first producer after
        later = pd.merge_asof(consumers[missing], producers, on="t", by=["type", "id"],
                              direction="forward")
        pairs.loc[missing, "src"] = later["src"].to_numpy()
    pairs = pairs.dropna(subset=["src"])
    src = pairs["src"].to_numpy(np.int64)
    return src, pairs["dst"].to_numpy(np.int64), np.ones(src.shape[0], np.int64), \
        pairs["id"].to_numpy(np.uint64)


def _types(profile: Profile, events: np.ndarray, name: str) -> np.ndarray:
    """A producer's or consumer's type; a missing one reads as 0."""
    return profile.stat_ints(events, name)[1]


def _correlation_edges(profile: Profile, ranges: np.ndarray) -> tuple[np.ndarray, ...]:
    sections = profile.sections
    if not ((sections["kind"] == "device") & ~sections["name"].str.startswith("/device:TPU")
            ).any():  # correlation ids tie host launches to GPU kernels; TPUs have none
        return _empty()
    # XProf's stat, and Kineto's arg on CUDA/HIP/MTIA runtime calls and the kernels, copies
    # and memsets they launch (the `ac2g` flows some traces also write are the same edges)
    found = [_hits(profile, ranges, name) for name in ("correlation_id", "correlation")]
    hit = np.concatenate([events for events, _ in found])
    ids = np.concatenate([values for _, values in found])
    if not hit.shape[0]:
        return _empty()
    kinds = profile.tracks["section_kind"].to_numpy()[profile.track_of(hit)]
    frame = pd.DataFrame({"event": hit, "id": ids})
    host, device = frame[kinds == "host"], frame[kinds == "device"]
    pairs = host.merge(device, on="id", suffixes=("_from", "_to"))
    src = pairs["event_from"].to_numpy(np.int64)
    return src, pairs["event_to"].to_numpy(np.int64), np.full(src.shape[0], 2), \
        pairs["id"].to_numpy(np.uint64)
