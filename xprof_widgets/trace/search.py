"""Search over every event of a profile by name, hits in time order.

Names are matched once per metadata row (thousands), not per event (millions); a compiled pass
over `Profile.meta` then counts the matching events and lists the first `limit` in time order:
a track's events are already in time order, so that is a k-way merge of per-track cursors.
No array of all hits is ever built (at 5e7 events a common name has tens of millions);
`next_after`/`previous_before` walk from a time with the same cursors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._native.search import first_hits as _first_hits
from .._native.search import step as _step
from ..profile.model import PS_PER_US, Profile

MAX_HITS = 200_000
"""Hits listed in time order by default; `n_hits` still counts them all."""


def name_rows(profile: Profile, pattern: str, regex: bool = False, case: bool = False
              ) -> np.ndarray:
    """Which metadata rows match, searching full names (HLO text) and display names.

    Substring by default; `regex` for a regular expression (re.search); `case` to match case.
    """
    flags = 0 if case else re.IGNORECASE
    try:
        matcher = re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression {pattern!r}: {exc}") from exc
    md = profile.metadata
    search = matcher.search
    return np.fromiter((bool(search(full) or search(short)) for full, short in
                        zip(md["name"], md["display_name"], strict=True)), bool, len(md))


@dataclass
class SearchResult:
    """Hits of one search. `event`, `start_us`, `track`: the first `limit` hits in time order;
    `n_hits` counts all of them, and `next_after`/`previous_before` walk all of them."""

    profile: Profile
    pattern: str
    event: np.ndarray
    start_us: np.ndarray
    track: np.ndarray
    n_hits: int
    truncated: bool
    rows: np.ndarray  # which metadata rows match
    _bounds: np.ndarray  # (first, end) event of every track, by first event

    def frame(self) -> pd.DataFrame:
        """The listed hits as `Profile.events_frame` rows."""
        return self.profile.events_frame(self.event)

    def next_after(self, t_us: float) -> int | None:
        """The first hit starting after t_us (event index), or None."""
        event = _step(self.profile.meta, self.profile.start_ps, self.rows, self._bounds,
                      round(t_us * PS_PER_US), True)
        return None if event < 0 else int(event)

    def previous_before(self, t_us: float) -> int | None:
        """The last hit starting before t_us (event index), or None."""
        event = _step(self.profile.meta, self.profile.start_ps, self.rows, self._bounds,
                      round(t_us * PS_PER_US), False)
        return None if event < 0 else int(event)


def search(profile: Profile, pattern: str, regex: bool = False, case: bool = False,
           limit: int = MAX_HITS) -> SearchResult:
    """Every event whose full or display name matches `pattern`, in time order."""
    rows = name_rows(profile, pattern, regex, case)
    bounds = profile.tracks[["first_event", "end_event"]].to_numpy(np.int64)
    bounds = np.ascontiguousarray(bounds[np.argsort(bounds[:, 0])])
    out = np.empty(max(0, int(limit)), np.int64)
    if rows.any():
        n_hits, n = _first_hits(profile.meta, profile.start_ps, rows, bounds, out)
    else:
        n_hits, n = 0, 0
    ordered = out[:n].copy()
    return SearchResult(
        profile=profile, pattern=pattern, event=ordered,
        start_us=profile.start_ps[ordered] / PS_PER_US,
        track=profile.track_of(ordered).astype(np.int64), n_hits=int(n_hits),
        truncated=n < n_hits, rows=rows, _bounds=bounds)
