"""What a user marks on a profile's timeline: pinned tracks, hidden tracks and bookmarks.

They belong to the profile, not to one widget: a new `TraceViewer` on the same opened profile
(and on the same files opened again while the first profile lives, profile/cache.py) comes back
with them. They are held in a weak mapping keyed by the profile object, so they go when the
profile does, and re-running a cell replaces its entry instead of adding one. Not in
`Profile.memo`: making a profile's derived rows drops that, and a viewer has made them already
(its summary reads the tracks), so the track ids kept here stay valid.

    marks = kept(profile).pin([3]).bookmark("step 2", 1200.0, 1850.0)
    keep(profile, marks)
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

MAX_BOOKMARKS = 500
"""Most bookmarks a profile keeps (a name used again replaces its bookmark, so re-running a
cell that adds one does not add another)."""
BOOKMARK_COLUMNS = ("name", "start_us", "end_us")

_STORE: weakref.WeakKeyDictionary[Any, TraceMarks] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class TraceMarks:
    """Pinned track ids in the order pinned (drawn in that order above the others), hidden
    track ids, and bookmarks (name, start_us, end_us; end_us == start_us for a point) sorted by
    time. Each change returns a new TraceMarks."""

    pinned: tuple[int, ...] = ()
    hidden: tuple[int, ...] = ()
    bookmarks: tuple[tuple[str, float, float], ...] = ()

    def pin(self, tracks: Iterable[int]) -> TraceMarks:
        """Pinned after those pinned before; a hidden track that is pinned shows again."""
        pinned = _appended(self.pinned, tracks)
        return replace(self, pinned=pinned, hidden=_without(self.hidden, pinned))

    def unpin(self, tracks: Iterable[int] | None = None) -> TraceMarks:
        """Back in their sections (every pinned track when `tracks` is None)."""
        return replace(self, pinned=_without(self.pinned, self.pinned if tracks is None
                                             else tracks))

    def hide(self, tracks: Iterable[int]) -> TraceMarks:
        """Hidden (and no longer pinned)."""
        hidden = _appended(self.hidden, tracks)
        return replace(self, hidden=hidden, pinned=_without(self.pinned, hidden))

    def unhide(self, tracks: Iterable[int] | None = None) -> TraceMarks:
        """Shown again (every hidden track when `tracks` is None)."""
        return replace(self, hidden=_without(self.hidden, self.hidden if tracks is None
                                             else tracks))

    def bookmark(self, name: str | None, start_us: float, end_us: float | None = None
                 ) -> TraceMarks:
        """A bookmark at a time or over a span; a name used before moves that bookmark; no name:
        `bookmark N`, N the smallest not taken (as the view names those made with B)."""
        end = start_us if end_us is None else end_us
        if not (math.isfinite(start_us) and math.isfinite(end)) or end < start_us:
            raise ValueError(f"a bookmark needs finite times with start <= end, got "
                             f"({start_us!r}, {end_us!r})")
        name = free_name(self.names()) if name is None else str(name)
        if not name.strip():
            raise ValueError("a bookmark's name must not be empty")
        others = [b for b in self.bookmarks if b[0] != name]
        if len(others) >= MAX_BOOKMARKS:
            raise ValueError(f"a profile keeps at most {MAX_BOOKMARKS} bookmarks; remove some "
                             "first (TraceViewer.remove_bookmark)")
        return replace(self, bookmarks=sort_bookmarks([*others, (name, float(start_us),
                                                                float(end))]))

    def remove_bookmark(self, name: str) -> TraceMarks:
        self.find(name)
        return replace(self, bookmarks=tuple(b for b in self.bookmarks if b[0] != name))

    def find(self, name: str) -> tuple[str, float, float]:
        """The bookmark named `name`; a KeyError lists the names there are."""
        for b in self.bookmarks:
            if b[0] == name:
                return b
        have = ", ".join(repr(n) for n in self.names()) or "none yet"
        raise KeyError(f"no bookmark {name!r}; bookmarks: {have}")

    def names(self) -> list[str]:
        return [b[0] for b in self.bookmarks]

    def frame(self) -> pd.DataFrame:
        """The bookmarks as a DataFrame: name, start_us, end_us (µs after the profile start)."""
        return pd.DataFrame(list(self.bookmarks), columns=list(BOOKMARK_COLUMNS))


def _appended(ids: tuple[int, ...], more: Iterable[int]) -> tuple[int, ...]:
    """`ids` then those of `more` not in it, in order, once each."""
    return tuple(dict.fromkeys([*ids, *more]))


def _without(ids: tuple[int, ...], drop: Iterable[int]) -> tuple[int, ...]:
    gone = set(drop)
    return tuple(t for t in ids if t not in gone)


def free_name(taken: Sequence[str]) -> str:
    """`bookmark N` with the smallest N >= 1 not in `taken`."""
    used = set(taken)
    n = 1
    while f"bookmark {n}" in used:
        n += 1
    return f"bookmark {n}"


def sort_bookmarks(bookmarks: Iterable[tuple[str, float, float]]
                   ) -> tuple[tuple[str, float, float], ...]:
    return tuple(sorted(bookmarks, key=lambda b: (b[1], b[2], b[0])))


def bookmarks_from_view(records: Any) -> tuple[tuple[str, float, float], ...]:
    """The synced form (a list of {name, start_us, end_us}) checked: unique non-empty names,
    finite times with start <= end, at most MAX_BOOKMARKS."""
    if not isinstance(records, (list, tuple)):
        raise TypeError(f"bookmarks must be a list of {{name, start_us, end_us}}, got "
                         f"{type(records).__name__}")
    marks = TraceMarks()
    for record in records:
        if not isinstance(record, dict) or not {"name", "start_us"} <= record.keys():
            raise ValueError(f"a bookmark is {{name, start_us, end_us}}, got {record!r}")
        if str(record["name"]) in marks.names():
            raise ValueError(f"two bookmarks are named {record['name']!r}")
        marks = marks.bookmark(str(record["name"]), float(record["start_us"]),
                               float(record.get("end_us", record["start_us"])))
    return marks.bookmarks


def bookmark_records(bookmarks: Iterable[tuple[str, float, float]]) -> list[dict]:
    """The synced form of bookmarks: a list of {name, start_us, end_us}."""
    return [dict(zip(BOOKMARK_COLUMNS, b, strict=True)) for b in bookmarks]


def kept(profile: Any) -> TraceMarks:
    """The marks kept for this profile (none yet: an empty TraceMarks)."""
    with _LOCK:
        return _STORE.get(profile, TraceMarks())


def keep(profile: Any, marks: TraceMarks) -> None:
    """Keeps `marks` for this profile while it lives."""
    with _LOCK:
        _STORE[profile] = marks


def n_kept() -> int:
    """How many profiles have marks kept (the weak mapping's size)."""
    with _LOCK:
        return len(_STORE)
