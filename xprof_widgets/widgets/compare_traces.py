"""The two Trace Viewers of `xw.compare`, drawing the same rows in the same order.

Each viewer's synced summary lists the comparison's matched rows (analysis/compare_rows.py):
its own tracks where it has them, and where only the other run has a track (or a whole
section), an empty row of the same height named after it, "... · only in after". Those rows
carry negative ids; the kernel drops them from the view's requests (no events live there).
A matched pair is drawn as deep as the deeper of its two tracks, so rows line up in y too.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..profile.model import Profile
from .trace_viewer import TraceViewer

OTHER = {"before": "after", "after": "before"}


class MatchedTraceViewer(TraceViewer):
    """A Trace Viewer of one side ("before" or "after") of a comparison, drawing `rows`."""

    def __init__(self, profile: Profile, rows: pd.DataFrame, side: str, *, height: int = 360,
                 **kwargs: Any):
        super().__init__(profile, height=height, **kwargs)
        self.side = side
        self._summary = matched_summary(self._summary, rows, side)

    def _window(self, start_us: float, end_us: float, width_px: int,
                tracks: list[int] | None = None, collapsed: list[int] | None = None,
                **kwargs: Any) -> tuple:
        return super()._window(start_us, end_us, width_px,
                               tracks=None if tracks is None else [t for t in tracks if t >= 0],
                               collapsed=[s for s in collapsed or [] if s >= 0], **kwargs)

    def _select_box(self, start_us: float, end_us: float, rows: list[list[int]],
                    add: list[int] | None = None) -> dict:
        return super()._select_box(start_us, end_us, [r for r in rows if r[0] >= 0], add)


def matched_summary(summary: dict, rows: pd.DataFrame, side: str) -> dict:
    """`summary` (trace_viewer.summarize's) with its tracks and sections as `rows`
    (compare_rows.match_rows) list them for `side`: a track or section only the other side has
    becomes an empty placeholder of negative id, named after the other's."""
    other = OTHER[side]
    own = pd.DataFrame(summary["tracks"]).set_index("id")
    known = pd.DataFrame(summary["sections"]).set_index("id")  # the side's own names and hosts
    drawn: dict[tuple, int] = {}  # (section name, before's id, after's id) -> the id drawn
    sections: dict[str, list] = {"id": [], "name": [], "kind": [], "host": []}
    tracks: dict[str, list] = {k: [] for k in summary["tracks"]}
    for i, row in enumerate(rows.to_dict("records")):
        track, section = row[f"track_{side}"], row[f"section_{side}"]
        key = (row["section"], row["section_before"], row["section_after"])
        if key not in drawn:
            drawn[key] = section if section >= 0 else -1 - len(drawn)
            sections["id"].append(drawn[key])
            sections["name"].append(known.loc[section, "name"] if section >= 0
                                    else f"{row['section']} · only in {other}")
            sections["kind"].append(row["section_kind"])
            sections["host"].append(known.loc[section, "host"] if section >= 0 else "")
        tracks["id"].append(track if track >= 0 else -1 - i)
        tracks["section"].append(own.loc[track, "section"] if track >= 0 else row["section"])
        tracks["section_id"].append(drawn[key])
        tracks["name"].append(row[f"name_{side}"] if track >= 0
                              else f"{row[f'name_{other}']} · only in {other}")
        tracks["kind"].append(row["kind"])
        tracks["max_depth"].append(row["max_depth"])
        tracks["n_events"].append(int(own.loc[track, "n_events"]) if track >= 0 else 0)
    return {**summary, "sections": sections, "tracks": tracks}
