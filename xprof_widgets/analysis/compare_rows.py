"""The rows two runs' timelines share, so that a compare draws them row for row.

Two runs of one program list the same threads under new ids (`tf_XLAEigen/-8948...` before,
`tf_XLAEigen/2708...` after) and in another order (XProf sorts a host's threads by id); two
ranks of a job name their GPU apart (`GPU 3`, `GPU 1`). Sections pair first by name (with the
host's rank in its run and the section's kind), then by name stem (the name with its numbers
made one mark) in the order each run lists them; within a section pair, tracks of one kind pair
by name, then by stem, busiest with busiest (time under top-level events). What is left is a row of one side only, drawn
empty on the other.

    rows = match_rows(before, after)   # one row per timeline row, in the order both draw them
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from ..profile.model import Profile

NUMBER = re.compile(r"-?\d+")
"""A number in a name: a thread or process id, a rank, a device or stream index."""
COLUMNS = ("section", "section_kind", "track_before", "track_after", "name_before", "name_after",
           "section_before", "section_after", "kind", "max_depth", "matched_by")
Pair = tuple[tuple[Hashable | None, Hashable | None], str]


def stem(name: str) -> str:
    """`name` with each number made '#': what two runs' names of one thing share."""
    return NUMBER.sub("#", name)


def match_rows(before: Profile, after: Profile) -> pd.DataFrame:
    """The rows both timelines draw, top to bottom: one per matched pair of tracks or track of
    one side only. Columns: section (its name), track_before / track_after (track ids, -1 where
    that side has none), name_before / name_after ("" there), section_before / section_after
    (section ids, -1 where that side lacks the whole section), section_kind, kind, max_depth
    (the deeper side's, so that both draw the row one height) and matched_by ("name", "stem",
    "before only" or "after only": how its tracks paired)."""
    sides = [_drawn_tracks(before), _drawn_tracks(after)]
    by_section = [dict(tuple(t.groupby("section_id", sort=False))) for t in sides]
    sections = [_keyed(t.drop_duplicates("section_id"), "section_id",
                       ("host_rank", "section_kind"), "section") for t in sides]
    rows: list[dict] = []
    for ids, _ in pair_in_order(*sections):
        parts = [by_section[k][i] if i is not None else sides[k].iloc[:0]
                 for k, i in enumerate(ids)]
        rows += _section_rows(parts, [-1 if i is None else int(i) for i in ids])
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _section_rows(parts: list[pd.DataFrame], section_ids: list[int]) -> list[dict]:
    """The rows of one pair of sections (one may be empty: a section of one run only)."""
    present = next(p for p in parts if len(p))
    tracks = [_keyed(_busiest_within_stems(p), None, ("kind",), "name") for p in parts]
    rows = []
    for pair, how in pair_in_order(*tracks):
        got = [parts[k].loc[t] if t is not None else None for k, t in enumerate(pair)]
        row = {"section": str(present["section"].iloc[0]),
               "section_kind": str(present["section_kind"].iloc[0]),
               "section_before": section_ids[0], "section_after": section_ids[1],
               "kind": next(str(g["kind"]) for g in got if g is not None),
               "max_depth": max(int(g["max_depth"]) for g in got if g is not None),
               "matched_by": how}
        for side, g in zip(("before", "after"), got, strict=True):
            row[f"track_{side}"] = int(g["track"]) if g is not None else -1
            row[f"name_{side}"] = str(g["name"]) if g is not None else ""
        rows.append(row)
    return rows


def _busiest_within_stems(tracks: pd.DataFrame) -> pd.DataFrame:
    """`tracks` with each stem's tracks together, busiest first, the stems in the run's order
    (XProf's order of a device's rows stays)."""
    stems = tracks["kind"] + "\n" + tracks["name"].map(stem)
    first = {s: k for k, s in enumerate(dict.fromkeys(stems))}
    return (tracks.assign(stem_order=stems.map(first))
            .sort_values(["stem_order", "busy_ps"], ascending=[True, False], kind="stable"))


def _keyed(frame: pd.DataFrame, id_column: str | None, fixed: tuple[str, ...], name: str
           ) -> dict[Hashable, tuple[tuple, tuple]]:
    """Each item of `frame` (its `id_column`, else its row label), in order, to its exact key
    (the `fixed` columns and the name) and its loose key (the same with the name's stem)."""
    ids = frame.index if id_column is None else frame[id_column]
    out = {}
    for item, *values in zip(ids, *(frame[c] for c in fixed), frame[name], strict=True):
        head, text = tuple(values[:-1]), str(values[-1])
        out[item] = ((*head, text), (*head, stem(text)))
    return out


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
    """The tracks a Trace Viewer draws (not XProf's hidden ones), each with its section's name,
    kind and its host's rank in the run."""
    t = profile.tracks[profile.tracks["kind"] != "hidden"]
    hosts = {host: rank for rank, host in enumerate(dict.fromkeys(profile.sections["host"]))}
    return pd.DataFrame({
        "track": t.index.to_numpy(), "section_id": t["section_id"].to_numpy(),
        "section": t["section"].astype(str).to_numpy(),
        "section_kind": t["section_kind"].astype(str).to_numpy(),
        "host_rank": [hosts.get(h, 0) for h in t["host"]],
        "name": t["name"].astype(str).to_numpy(), "kind": t["kind"].astype(str).to_numpy(),
        "busy_ps": _busy_ps(profile, t), "max_depth": t["max_depth"].to_numpy()})


def _busy_ps(profile: Profile, tracks: pd.DataFrame) -> np.ndarray:
    """Each track's time under its top-level events: a run's main thread (its steps span the
    run) outranks a busy worker, as in the other run."""
    out = np.zeros(len(tracks), np.int64)
    for k, (first, end) in enumerate(zip(tracks["first_event"], tracks["end_event"], strict=True)):
        top = profile.depth[first:end] == 0
        out[k] = int(profile.duration_ps[first:end][top].sum())
    return out


def pair_in_order(before: dict, after: dict) -> list[Pair]:
    """Pairs two runs' items: ((before's item or None, after's or None), how). `before` and
    `after` map each item, in their order, to its (exact key, loose key). Items of one exact key
    pair first, then of one loose key, each in its order; groups of one loose key come in the
    merged order of their first items, each its exact pairs, its loose ones, then the items of
    one side only."""
    groups: list[dict[Hashable, list]] = [defaultdict(list), defaultdict(list)]
    for side, items in enumerate((before, after)):
        for item, (_, loose) in items.items():
            groups[side][loose].append(item)
    out: list[Pair] = []
    for key in merged_order(list(groups[0]), list(groups[1])):
        b, a = groups[0].get(key, []), groups[1].get(key, [])
        waiting: dict[Hashable, deque] = defaultdict(deque)  # after's items by exact key
        for j in a:
            waiting[after[j][0]].append(j)
        named = [((i, waiting[before[i][0]].popleft()), "name") for i in b if waiting[before[i][0]]]
        paired = [{i for (i, _), _ in named}, {j for (_, j), _ in named}]
        rest_b = [i for i in b if i not in paired[0]]
        rest_a = [j for j in a if j not in paired[1]]
        n = min(len(rest_b), len(rest_a))
        out += named + [((i, j), "stem") for i, j in zip(rest_b[:n], rest_a[:n], strict=True)]
        out += [((i, None), "before only") for i in rest_b[n:]]
        out += [((None, j), "after only") for j in rest_a[n:]]
    return out
