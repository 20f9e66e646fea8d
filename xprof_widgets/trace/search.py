"""Search over every event of a profile by name, hits in time order.

Names are matched once per metadata row (thousands), not per event (millions); a compiled pass
over `Profile.meta` then counts the matching events and lists the first `limit` in time order:
a track's events are already in time order, so that is a k-way merge of per-track cursors.
No array of all hits is ever built (at 5e7 events a common name has tens of millions);
`next_after`/`previous_before` walk from a time with the same cursors.

A hit matched its event's name (what the timeline shows), else its full name (the HLO text of an
XLA op), else one of the text stats its metadata carries (an XLA op's framework op `tf_op`, its
`source` line, `hlo_category`, `shape_with_layout`): the kinds are counted apart, and `match`
lists one kind, so `fusion.1` does not mix the op `broadcast_add_fusion.1` with every op that
reads `%fusion.1`, and `train.py` finds the ops that line made. The query syntax is the search
box's: `/.../` is a regular expression.
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

MATCHES = ("any", "name", "text", "stats")
"""What a hit matched: any of these, the name shown, only the full name (HLO text), or only a
text stat of its metadata."""
KINDS = MATCHES[1:]


def parse_query(text: str, regex: bool | None = None) -> tuple[str, bool]:
    """(pattern, regex) of a query as the search box reads it: `/.../` is a regular expression,
    anything else a substring; an explicit `regex` takes the text as it is."""
    if regex is not None:
        return text, bool(regex)
    if len(text) > 2 and text.startswith("/") and text.endswith("/"):
        return text[1:-1], True
    return text, False


def _matcher(pattern: str, regex: bool, case: bool):
    try:
        return re.compile(pattern if regex else re.escape(pattern), 0 if case else re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression {pattern!r}: {exc}") from exc


def matched_kind(shown_names: pd.Series, pattern: str, regex: bool = False, case: bool = False
                 ) -> np.ndarray:
    """What hits with these shown names matched ("name", else "text"), for a hit list that
    knows only the names it shows (a pod's)."""
    search = _matcher(pattern, regex, case).search
    codes, names = pd.factorize(shown_names)
    shown = np.fromiter((bool(search(str(n))) for n in names), bool, len(names))
    return np.where(shown[codes], "name", "text").astype(object)


def matched_rows(profile: Profile, pattern: str, regex: bool = False, case: bool = False
                 ) -> dict[str, np.ndarray]:
    """Per metadata row and kind (KINDS): the shown name matches; else the full name; else a
    text stat."""
    search = _matcher(pattern, regex, case).search
    md = profile.metadata
    by_name = np.fromiter((bool(search(short)) for short in md["display_name"]), bool, len(md))
    by_text = np.fromiter((not shown and bool(search(full)) for full, shown in
                           zip(md["name"], by_name.tolist(), strict=True)), bool, len(md))
    taken = (by_name | by_text).tolist()
    by_stats = np.fromiter((not done and any(isinstance(v, str) and search(v) for v in
                                             stats.values())
                            for stats, done in zip(md["stats"], taken, strict=True)), bool,
                           len(md))
    return {"name": by_name, "text": by_text, "stats": by_stats}


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
    kind_of_row: np.ndarray  # per metadata row: the index in KINDS of what it matched by
    n_by: dict[str, int]  # hits of each kind over the whole trace: {"name": n, "text": n, ...}
    _bounds: np.ndarray  # (first, end) event of every track, by first event

    def matched(self) -> np.ndarray:
        """What each listed hit matched: "name", "text" (its full name, the HLO text) or
        "stats" (a text stat of its metadata)."""
        return np.asarray(KINDS, dtype=object)[self.kind_of_row[self.profile.meta[self.event]]]

    def frame(self) -> pd.DataFrame:
        """The listed hits as `Profile.events_frame` rows, with what each `matched`."""
        frame = self.profile.events_frame(self.event)
        frame["matched"] = self.matched()
        return frame

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


def search(profile: Profile, pattern: str, regex: bool | None = None, case: bool = False,
           limit: int = MAX_HITS, match: str = "any") -> SearchResult:
    """Every event whose display or full name matches `pattern` (`/.../`: a regular expression,
    unless `regex` says), in time order; `match` keeps one kind of hit (MATCHES)."""
    if match not in MATCHES:
        raise ValueError(f"match={match!r}: expected one of {', '.join(MATCHES)}")
    profile.derive_rows()  # the timeline's rows are searched, derived ones too
    kinds = matched_rows(profile, *parse_query(pattern, regex), case)
    rows = np.logical_or.reduce(list(kinds.values())) if match == "any" else kinds[match]
    bounds = profile.tracks[["first_event", "end_event"]].to_numpy(np.int64)
    bounds = np.ascontiguousarray(bounds[np.argsort(bounds[:, 0])])
    out = np.empty(max(0, int(limit)), np.int64)
    if rows.any():
        n_hits, n = _first_hits(profile.meta, profile.start_ps, rows, bounds, out)
    else:
        n_hits, n = 0, 0
    per_row = profile.events_per_meta_row
    n_by = {kind: int(per_row[rows_of_kind].sum()) for kind, rows_of_kind in kinds.items()}
    kind_of_row = np.argmax(np.stack(list(kinds.values())), axis=0)
    ordered = out[:n].copy()
    return SearchResult(
        profile=profile, pattern=pattern, event=ordered,
        start_us=profile.start_ps[ordered] / PS_PER_US,
        track=profile.track_of(ordered).astype(np.int64), n_hits=int(n_hits),
        truncated=n < n_hits, rows=rows, kind_of_row=kind_of_row, n_by=n_by, _bounds=bounds)
