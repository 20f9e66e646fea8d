"""One event's details (for a click) and the aggregate of a selection (for a drag)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from ..analysis.source import event_stack, frames_json
from ..profile.model import PS_PER_US
from . import _lod

if TYPE_CHECKING:
    from ..profile.model import Profile
    from .flows import FlowIndex


class TraceIndex(Protocol):
    """What details and aggregates read of a trace index. index.TraceIndex is one, and answers
    its `details` and `aggregate` with this module, so this module names the shape it reads
    rather than import the index back."""

    profile: Profile
    flows: FlowIndex
    track_depths: np.ndarray
    track_segment: np.ndarray
    seg_start: np.ndarray
    seg_list: np.ndarray
    list_off: np.ndarray
    list_len: np.ndarray
    cuts: np.ndarray
    perm: np.ndarray

_JS_SAFE_INT = 2**53
"""JavaScript numbers hold integers exactly up to here; larger ids travel as strings."""


def json_value(value: Any) -> Any:
    """A stat value as JSON the view can show: bytes summarized, huge ints as strings."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return "0x" + raw.hex() if len(raw) <= 32 else f"<{len(raw)} bytes>"
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _JS_SAFE_INT:
        return str(value)
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value


def self_time_ps(index: TraceIndex, event: int) -> int:
    """Duration minus the time covered one level down (depth + 1, same track, clipped to the
    event, each instant once): the event's direct children."""
    profile = index.profile
    track = int(profile.track_of(np.array([event]))[0])
    depth = int(profile.depth[event])
    start = int(profile.start_ps[event])
    end = start + int(profile.duration_ps[event])
    if depth + 1 >= index.track_depths[track]:
        return end - start
    seg = np.array([index.track_segment[track] + depth + 1], np.int64)
    ranges = np.empty((1, 5), np.int64)
    _lod.window_ranges(seg, index.seg_start, index.seg_list, index.list_off, index.list_len,
                       index.cuts, index.perm, profile.start_ps, profile.duration_ps, start,
                       end, 0, ranges)
    children = index.perm[ranges[0, 0]:ranges[0, 1]]
    c_start = np.maximum(profile.start_ps[children], start)
    c_end = np.minimum(profile.start_ps[children] + profile.duration_ps[children], end)
    # Children start in order but may overlap (siblings of an improperly nested pair): count
    # each instant once.
    reached = np.concatenate([[start], np.maximum.accumulate(c_end)[:-1]])
    covered = np.clip(c_end - np.maximum(c_start, reached), 0, None).sum()
    return end - start - int(covered)


def details(index: TraceIndex, event: int) -> dict[str, Any]:
    """Everything the details panel shows about one event, JSON-ready (times in us)."""
    profile = index.profile
    event = int(event)
    if not 0 <= event < profile.n_events:
        raise KeyError(f"no event {event}; events are 0..{profile.n_events - 1}")
    track = int(profile.track_of(np.array([event]))[0])
    row = profile.tracks.iloc[track]
    meta = int(profile.meta[event])
    md = profile.metadata
    flows_in, flows_out = index.flows.of_event(event)
    return {
        "event": event,
        "name": md["display_name"].iat[meta],
        "full_name": md["name"].iat[meta],
        "track": track,
        "track_name": row["name"],
        "section": row["section"],
        "host": row["host"],
        "start_us": int(profile.start_ps[event]) / PS_PER_US,
        "duration_us": int(profile.duration_ps[event]) / PS_PER_US,
        "self_us": self_time_ps(index, event) / PS_PER_US,
        "depth": int(profile.depth[event]),
        "stats": json_value(profile.event_stats(event)),
        "metadata_stats": json_value(profile.metadata_stats(event)),
        "flows_in": _flow_ends(index, index.flows.from_event[flows_in]),
        "flows_out": _flow_ends(index, index.flows.to_event[flows_out]),
        "source_stack": frames_json(event_stack(profile, event)),
    }


def _flow_ends(index: TraceIndex, events: np.ndarray) -> list[dict[str, Any]]:
    profile = index.profile
    tracks = profile.track_of(events)
    return [{"event": int(e), "name": profile.display_names[profile.meta[e]], "track": int(t),
             "start_us": int(profile.start_ps[e]) / PS_PER_US}
            for e, t in zip(events.tolist(), tracks.tolist(), strict=True)]


def name_sums(profile: Profile, events: np.ndarray) -> pd.DataFrame:
    """Per name over the events: count, total/min/max span (us) and `device_total_us`, the
    device time the ops measured themselves (`device_duration_ps`, what the Op Profile sums;
    NaN where none says). A TPU op's span can differ from its own device time."""
    present, device_ps = profile.stat_ints(events, "device_duration_ps")
    frame = pd.DataFrame({"name": profile.display_names[profile.meta[events]],
                          "duration_us": profile.duration_ps[events] / PS_PER_US,
                          "device_ps": np.where(present, device_ps.view(np.int64), 0),
                          "measured": present})
    table = frame.groupby("name", sort=False).agg(
        count=("duration_us", "size"), total_us=("duration_us", "sum"),
        min_us=("duration_us", "min"), max_us=("duration_us", "max"),
        device_ps=("device_ps", "sum"), measured=("measured", "any")).reset_index()
    table["device_total_us"] = (table["device_ps"] / PS_PER_US).where(table["measured"])
    return table.drop(columns=["device_ps", "measured"])


def by_total(table: pd.DataFrame) -> pd.DataFrame:
    """AGGREGATE_COLUMNS, the largest total first."""
    table = table.copy()
    table["avg_us"] = table["total_us"] / table["count"]
    table = table.sort_values(["total_us", "count"], ascending=False, kind="stable")
    return table[AGGREGATE_COLUMNS].reset_index(drop=True)


AGGREGATE_COLUMNS = ["name", "count", "total_us", "avg_us", "min_us", "max_us", "device_total_us"]


def aggregate(index: TraceIndex, events: np.ndarray) -> pd.DataFrame:
    """Per name over the given events: count, total/avg/min/max span (us) and the device time
    the ops measured (see name_sums), by total."""
    profile = index.profile
    events = np.unique(np.asarray(events, np.int64))
    if events.shape[0] and (events[0] < 0 or events[-1] >= profile.n_events):
        raise KeyError(f"event ids must be in 0..{profile.n_events - 1}")
    return by_total(name_sums(profile, events))


def box_events(profile: Profile, lo_ps: int, hi_ps: int, rows: list[list[int]]) -> np.ndarray:
    """The events of the (track, min depth, max depth) rows overlapping [lo_ps, hi_ps]: a drag's
    box, sorted."""
    parts = [np.empty(0, np.int64)]
    for track, depth_lo, depth_hi in rows:
        first, end = profile.tracks.loc[int(track), ["first_event", "end_event"]]
        idx = np.arange(int(first), int(end))
        start = profile.start_ps[idx]
        keep = (start <= hi_ps) & (start + profile.duration_ps[idx] >= lo_ps)
        keep &= (profile.depth[idx] >= depth_lo) & (profile.depth[idx] <= depth_hi)
        parts.append(idx[keep])
    return np.unique(np.concatenate(parts))
