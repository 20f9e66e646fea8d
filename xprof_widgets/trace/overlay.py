"""Flow overlays: named sets of edges an analysis lays over a Trace Viewer (collectives linked
across ranks, a critical path), drawn like the profile's own flows.

An overlay is given as event ids (the profile's global ids, a pod's too) and kept as `Edges`
with its endpoints' tracks, depths and times, found once when it is laid; a window answer then
carries only the edges meeting the window (the flows' lookup, thinned the same way), so an
overlay of 100k edges costs what the visible ones cost. The wire form is three buffers after the
window's own (docs/dev/trace_protocol.md): times, places, and (overlay, label) of each edge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US
from .flows import Edges

Locate = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
"""Global event ids -> (track, depth, start_ps) of each, on the profile's one clock."""
MAX_DETAIL_EDGES = 50
"""Overlay edges of one event its details list (as the panel lists flows)."""
OVERLAY_COLUMNS = ["overlay", "label", "from_event", "to_event", "from_track", "to_track",
                   "from_us", "to_us"]


class FlowOverlay(Edges):
    """One named overlay: `Edges` with a label code per edge (`labels` holds the texts)."""

    def __init__(self, name: str, src: np.ndarray, dst: np.ndarray, codes: np.ndarray,
                 labels: np.ndarray, locate: Locate):
        track, depth, start = locate(np.concatenate([src, dst]))
        n = src.shape[0]
        super().__init__({"from_event": src, "to_event": dst, "label": codes,
                          "from_track": track[:n], "to_track": track[n:],
                          "from_depth": depth[:n], "to_depth": depth[n:],
                          "from_ps": start[:n], "to_ps": start[n:]})
        self.name = name
        self.labels = labels

    def frame(self, edges: np.ndarray | None = None) -> pd.DataFrame:
        """OVERLAY_COLUMNS of the edges (every one by default), by time."""
        e = np.arange(len(self)) if edges is None else np.asarray(edges, np.int64)
        return pd.DataFrame({
            "overlay": self.name, "label": self.labels[self.label[e]],
            "from_event": self.from_event[e], "to_event": self.to_event[e],
            "from_track": self.from_track[e], "to_track": self.to_track[e],
            "from_us": self.from_ps[e] / PS_PER_US, "to_us": self.to_ps[e] / PS_PER_US},
            columns=OVERLAY_COLUMNS)


def parse_edges(name: str, edges: pd.DataFrame, n_events: int, source: str
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, label codes, label texts) of an overlay's DataFrame (`src`, `dst`, optional
    `label`); a ValueError naming the profile and the overlay for anything else."""
    where = f"overlay {name!r} on {source}"
    if not isinstance(edges, pd.DataFrame) or not {"src", "dst"} <= set(edges.columns):
        have = list(edges.columns) if isinstance(edges, pd.DataFrame) else type(edges).__name__
        raise ValueError(f"{where}: edges must be a DataFrame with columns src and dst (global "
                         f"event ids) and optionally label; got {have}")
    ends = []
    for column in ("src", "dst"):
        values = pd.to_numeric(edges[column], errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(values) | (values != np.round(values)) | (values < 0) \
            | (values >= n_events)
        if bad.any():
            row = int(np.argmax(bad))
            value = edges[column].iloc[row]
            value = value.item() if isinstance(value, np.generic) else value
            raise ValueError(f"{where}: {int(bad.sum())} {column} value(s) are not event ids "
                             f"(0..{n_events - 1}), e.g. {value!r} in row {row}")
        ends.append(values.astype(np.int64))
    label = edges["label"] if "label" in edges.columns else pd.Series("", index=edges.index)
    codes, texts = pd.factorize(label.fillna("").astype(str), sort=False)
    return ends[0], ends[1], codes.astype(np.int64), np.asarray(texts, dtype=object)


@dataclass
class Overlays:
    """A viewer's overlays by name, in the order laid, and which are shown."""

    by_name: dict[str, FlowOverlay] = field(default_factory=dict)
    shown: dict[str, bool] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)

    def add(self, overlay: FlowOverlay, shown: bool = True) -> None:
        """Lays `overlay`; one of the same name is replaced."""
        self.by_name[overlay.name] = overlay
        self.shown[overlay.name] = bool(shown)
        self.versions[overlay.name] = self.versions.get(overlay.name, 0) + 1

    def get(self, name: str) -> FlowOverlay:
        if name not in self.by_name:
            raise KeyError(f"no overlay {name!r}; overlays: {', '.join(self.by_name) or 'none'}")
        return self.by_name[name]

    def remove(self, name: str) -> None:
        self.get(name)
        del self.by_name[name], self.shown[name]

    def show(self, name: str, shown: bool) -> None:
        self.get(name)
        self.shown[name] = bool(shown)

    def frame(self) -> pd.DataFrame:
        """name, edges, shown, labels (distinct) of each overlay, in the order laid."""
        return pd.DataFrame({
            "name": list(self.by_name), "edges": [len(o) for o in self.by_name.values()],
            "shown": [self.shown[n] for n in self.by_name],
            "labels": [len(o.labels) for o in self.by_name.values()]},
            columns=["name", "edges", "shown", "labels"])

    def synced(self) -> list[dict[str, Any]]:
        """What the view is told: {name, edges, shown, version} of each overlay."""
        return [{"name": n, "edges": len(o), "shown": self.shown[n], "version": self.versions[n]}
                for n, o in self.by_name.items()]

    def window(self, lo: int, hi: int, px: float, visible: np.ndarray) -> pd.DataFrame:
        """The shown overlays' edges meeting [lo, hi] ps with an end on a visible track (a
        mask over track ids), thinned per pixel pair as flows are: OVERLAY_COLUMNS plus
        from/to depth and ps."""
        parts = []
        for name, overlay in self.by_name.items():
            if self.shown[name] and len(overlay):
                e = overlay.window(lo, hi, px, visible)
                parts.append(overlay.frame(e).assign(
                    from_depth=overlay.from_depth[e], to_depth=overlay.to_depth[e],
                    from_ps=overlay.from_ps[e], to_ps=overlay.to_ps[e]))
        if not parts:
            return pd.DataFrame(columns=[*OVERLAY_COLUMNS, "from_depth", "to_depth", "from_ps",
                                         "to_ps"])
        return pd.concat(parts, ignore_index=True)

    def of_event(self, event: int) -> list[dict[str, Any]]:
        """The shown overlays' edges into and out of one event, for its details panel: the
        overlay, the edge's label, the direction and the other end."""
        out: list[dict[str, Any]] = []
        for name, overlay in self.by_name.items():
            if not self.shown[name]:
                continue
            incoming, outgoing = overlay.of_event(int(event))
            for direction, edges, other in (("in", incoming, overlay.from_event),
                                            ("out", outgoing, overlay.to_event)):
                tracks = overlay.from_track if direction == "in" else overlay.to_track
                times = overlay.from_ps if direction == "in" else overlay.to_ps
                out += [{"overlay": name, "label": str(overlay.labels[overlay.label[e]]),
                         "direction": direction, "event": int(other[e]),
                         "track": int(tracks[e]), "start_us": int(times[e]) / PS_PER_US}
                        for e in edges[:MAX_DETAIL_EDGES].tolist()]
        return out


def encode_overlay(edges: pd.DataFrame, start_ps: int, end_ps: int, remap: np.ndarray | None
                   ) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The overlay part of a window answer: content {overlays: [names], overlay_labels:
    [texts], n_overlay_flows} and buffers times (float32 pairs, us after start_ps, clipped to
    a window width beyond each edge), places (uint32 6-tuples as flow_where) and tags (uint32
    (overlay, label) pairs indexing those lists). `remap` maps a track to the row it is drawn
    on (a pod host shown as one row)."""
    names, overlay = np.unique(edges["overlay"].to_numpy(object).astype(str),
                               return_inverse=True)
    labels, label = np.unique(edges["label"].to_numpy(object).astype(str), return_inverse=True)
    span = end_ps - start_ps
    times = np.stack([edges["from_ps"].to_numpy(np.int64), edges["to_ps"].to_numpy(np.int64)],
                     axis=1).ravel()
    times = (np.clip(times, start_ps - span, end_ps + span) - start_ps) / PS_PER_US
    tracks = [edges[c].to_numpy(np.int64) for c in ("from_track", "to_track")]
    if remap is not None:
        tracks = [remap[t] for t in tracks]
    where = np.stack([tracks[0], edges["from_depth"].to_numpy(np.int64),
                      edges["from_event"].to_numpy(np.int64), tracks[1],
                      edges["to_depth"].to_numpy(np.int64), edges["to_event"].to_numpy(np.int64)],
                     axis=1).ravel()
    tags = np.stack([overlay, label], axis=1).ravel()
    content = {"overlays": names.tolist(), "overlay_labels": labels.tolist(),
               "n_overlay_flows": len(edges)}
    return content, [np.ascontiguousarray(times, np.float32),
                     np.ascontiguousarray(where, np.uint32), np.ascontiguousarray(tags, np.uint32)]
