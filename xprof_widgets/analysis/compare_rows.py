"""The rows two runs' timelines share, so that a compare draws them row for row.

Two runs of one program list the same threads under new ids (`tf_XLAEigen/-8948...` before,
`tf_XLAEigen/2708...` after) and in another order (XProf sorts a host's threads by id). A row
is keyed by its section (the host's rank in its run, the section's kind and name) and its
track's kind and name stem (the name with its long numbers, thread and process ids, made one
mark). Within a section, tracks of one name pair first, then tracks of one stem, busiest with
busiest; what is left is a row of one side only, drawn empty on the other.

    rows = match_rows(before, after)   # one row per timeline row, in the order both draw them
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Hashable, Sequence

import pandas as pd

from ..profile.model import Profile

ID_RUN = re.compile(r"-?\d{4,}")
"""A run of 4 or more digits: a thread or process id (a stream's '#12' is a name)."""
SIDES = ("before", "after")
COLUMNS = ("section", "section_kind", "track_before", "track_after", "name_before", "name_after",
           "section_before", "section_after", "kind", "max_depth", "matched_by")


def stem(name: str) -> str:
    """`name` with each id (a run of 4 or more digits) made '#': the part two runs share."""
    return ID_RUN.sub("#", name)


def match_rows(before: Profile, after: Profile) -> pd.DataFrame:
    """The rows both timelines draw, top to bottom: one per matched pair of tracks or track of
    one side only. Columns: section (its name), track_before / track_after (track ids, -1 where
    that side has none), name_before / name_after ("" there), section_before / section_after
    (section ids, -1 where that side lacks the whole section), kind, and matched_by ("name",
    "stem", "before only" or "after only")."""
    sides = [_drawn_tracks(before), _drawn_tracks(after)]
    grouped = [{key: part for key, part in t.groupby("section_key", sort=False)} for t in sides]
    rows: list[dict] = []
    for key in merged_order(*(list(g) for g in grouped)):
        parts = [g.get(key, sides[0].iloc[:0]) for g in grouped]
        sections = [int(p["section_id"].iloc[0]) if len(p) else -1 for p in parts]
        section = next(str(p["section"].iloc[0]) for p in parts if len(p))
        for pair, how in _pair_tracks(*parts):
            got = [parts[i].loc[t] for i, t in enumerate(pair) if t is not None]
            tracks = [int(parts[i].loc[t, "track"]) if t is not None else -1
                      for i, t in enumerate(pair)]
            names = [str(parts[i].loc[t, "name"]) if t is not None else ""
                     for i, t in enumerate(pair)]
            rows.append({"section": section, "section_kind": key[1],
                         "track_before": tracks[0], "track_after": tracks[1],
                         "name_before": names[0], "name_after": names[1],
                         "section_before": sections[0], "section_after": sections[1],
                         "kind": str(got[0]["kind"]),
                         "max_depth": max(int(g["max_depth"]) for g in got), "matched_by": how})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def merged_order(first: Sequence[Hashable], second: Sequence[Hashable]) -> list:
    """`first`'s items in its order, with `second`'s others each put right after the item
    `second` lists before it (at the start where none): both orders kept where they agree."""
    out = list(first)
    at = 0
    for item in second:
        if item in out:
            at = out.index(item) + 1
        else:
            out.insert(at, item)
            at += 1
    return out


def _drawn_tracks(profile: Profile) -> pd.DataFrame:
    """The tracks a Trace Viewer draws (not XProf's hidden ones), with their section's key and
    their own (kind, stem) group."""
    t = profile.tracks[profile.tracks["kind"] != "hidden"]
    hosts = {host: rank for rank, host in enumerate(dict.fromkeys(profile.sections["host"]))}
    out = pd.DataFrame({
        "track": t.index.to_numpy(), "section_id": t["section_id"].to_numpy(),
        "section": t["section"].astype(str).to_numpy(), "name": t["name"].astype(str).to_numpy(),
        "kind": t["kind"].astype(str).to_numpy(), "n_events": t["n_events"].to_numpy(),
        "max_depth": t["max_depth"].to_numpy()})
    out["section_key"] = [(hosts.get(h, 0), k, stem(s)) for h, k, s in
                          zip(t["host"], t["section_kind"].astype(str), out["section"], strict=True)]
    out["group"] = list(zip(out["kind"], out["name"].map(stem), strict=True))
    return out.reset_index(drop=True)


def _pair_tracks(before: pd.DataFrame, after: pd.DataFrame
                 ) -> list[tuple[tuple[int | None, int | None], str]]:
    """One section's rows: ((before row label, after row label), how matched), groups in the
    merged order of their first tracks, each group's rows busiest first."""
    sides = [{g: _busiest_first(part) for g, part in t.groupby("group", sort=False)}
             for t in (before, after)]
    names = [t["name"].to_dict() for t in (before, after)]
    out = []
    for group in merged_order(list(sides[0]), list(sides[1])):
        b, a = sides[0].get(group, []), sides[1].get(group, [])
        waiting: dict[str, deque] = defaultdict(deque)  # after's tracks by name, busiest first
        for j in a:
            waiting[names[1][j]].append(j)
        named = [((i, waiting[names[0][i]].popleft()), "name") for i in b if waiting[names[0][i]]]
        paired_b = {i for (i, _), _ in named}
        paired_a = {j for (_, j), _ in named}
        rest_b = [i for i in b if i not in paired_b]
        rest_a = [j for j in a if j not in paired_a]
        out += named + [((i, j), "stem") for i, j in zip(rest_b, rest_a, strict=False)]
        n = min(len(rest_b), len(rest_a))
        out += [((i, None), "before only") for i in rest_b[n:]]
        out += [((None, j), "after only") for j in rest_a[n:]]
    return out


def _busiest_first(tracks: pd.DataFrame) -> list[int]:
    return tracks.sort_values("n_events", ascending=False, kind="stable").index.tolist()
