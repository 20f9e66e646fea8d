"""Answers as (JSON content, binary buffers), exactly as docs/dev/trace_protocol.md lays out.

Times travel as float32 microseconds after the window start. A slice reaching far outside the
window is clipped to one window width beyond each edge on the wire, so float32 keeps sub-pixel
precision inside the window; `details` still gives its true times.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..profile.model import PS_PER_US, Profile
from .details import json_value
from .index import TraceIndex
from .search import MAX_HITS, search
from .window import Window


class StringTracker:
    """The names one view has been sent; each window sends only the new ones."""

    def __init__(self, profile: Profile):
        self._names = profile.display_names
        self._sent = np.zeros(self._names.shape[0], bool)

    def reset(self) -> None:
        self._sent[:] = False

    def take(self, name_ids: np.ndarray) -> list[list]:
        """[[name_id, text], ...] for the ids not sent yet; marks them sent."""
        ids = np.unique(np.asarray(name_ids, np.int64))
        new = ids[~self._sent[ids]]
        self._sent[new] = True
        return [[i, self._names[i]] for i in new.tolist()]


def _relative(t_ps: np.ndarray, window: Window) -> np.ndarray:
    span = window.end_ps - window.start_ps
    clipped = np.clip(t_ps, window.start_ps - span, window.end_ps + span)
    return ((clipped - window.start_ps) / PS_PER_US).astype(np.float32)


def encode_window(window: Window, strings: StringTracker | None = None
                  ) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The `window` answer; with `strings`, only names that view has not been sent."""
    slice_start = _relative(window.slice_start_ps, window)
    slice_dur = _relative(window.slice_end_ps, window) - slice_start
    names = window.slice_name
    summary_start = _relative(window.summary_start_ps, window)
    flow_t = np.stack([_relative(window.flow_from_ps, window),
                       _relative(window.flow_to_ps, window)], axis=1).ravel()
    flow_where = np.stack([window.flow_from_track, window.flow_from_depth,
                           window.flow_from_event, window.flow_to_track, window.flow_to_depth,
                           window.flow_to_event], axis=1).astype(np.uint32).ravel()
    content = {
        "start_us": window.start_ps / PS_PER_US,
        "end_us": window.end_ps / PS_PER_US,
        "width_px": window.width_px,
        "tracks": [[t, s, c] for t, s, c in zip(
            window.track_ids.tolist(), window.per_track(window.slice_track).tolist(),
            window.per_track(window.counter_track).tolist(), strict=True)],
        "summaries": [[s, k] for s, k in zip(window.summary_sections.tolist(),
                                             window.per_section().tolist(), strict=True)],
        "strings": (strings.take(names) if strings is not None else
                    [[i, window.profile.display_names[i]] for i in np.unique(names).tolist()]),
        "n_flows": int(window.flow_edges.shape[0]),
        "events_in_window": int(window.events_in_window),
        "query_ms": round(window.query_ms, 3),
    }
    buffers = [
        slice_start, slice_dur.astype(np.float32), names.astype(np.int32),
        window.slice_count.astype(np.uint32), window.slice_event.astype(np.uint32),
        window.slice_depth.astype(np.uint16),
        _relative(window.counter_t_ps, window), window.counter_min.astype(np.float64),
        window.counter_max.astype(np.float64), window.counter_last.astype(np.float64),
        flow_t.astype(np.float32), flow_where,
        summary_start, (_relative(window.summary_end_ps, window) - summary_start
                        ).astype(np.float32),
    ]
    return content, [np.ascontiguousarray(b) for b in buffers]


def answer_window(index: TraceIndex, strings: StringTracker, start_us: float, end_us: float,
                  width_px: int, tracks: list[int] | None = None, collapsed: list[int] = (),
                  flows: bool = False, reset_strings: bool = False
                  ) -> tuple[dict[str, Any], list[np.ndarray]]:
    """A `window` request's params in, its reply out."""
    if reset_strings:
        strings.reset()
    window = index.window(start_us, end_us, width_px, tracks=tracks, collapsed=collapsed or (),
                          flows=flows)
    return encode_window(window, strings)


def answer_search(index: TraceIndex, pattern: str, regex: bool = False, case: bool = False,
                  limit: int = MAX_HITS, match: str = "any"
                  ) -> tuple[dict[str, Any], list[np.ndarray]]:
    """A `search` request's reply: the first `limit` hits of one kind (`match`) in time order,
    with how many of each kind the whole trace has. The fourth buffer lists the matching name ids
    (metadata rows, the ids window slices carry), so a view marks every hit it draws."""
    result = search(index.profile, pattern, regex=regex, case=case, limit=limit, match=match)
    content = {"n_hits": result.n_hits, "truncated": result.truncated, "n_by": result.n_by}
    return content, [result.event.astype(np.uint32), result.start_us.astype(np.float64),
                     result.track.astype(np.uint32), np.flatnonzero(result.rows).astype(np.uint32)]


def aggregate_content(frame: pd.DataFrame) -> dict[str, Any]:
    """An `aggregate` reply: {"rows": [{name, count, total_us, avg_us, min_us, max_us}]}."""
    return {"rows": [{k: json_value(v) for k, v in row.items()}
                     for row in frame.to_dict("records")]}
