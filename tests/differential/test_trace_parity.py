"""The Trace Viewer against XProf's `trace_viewer@` on every XSpace fixture, event by event.

Every slice XProf draws must be drawn by us on the same section and track, with the same name,
start, duration and nesting depth, and sections and tracks must come in XProf's order. Where we
differ on purpose (docs/from_xprof.md, "Trace Viewer"), the difference is stated here as a rule
and asserted, so a new difference fails:

- XProf draws an instant as a 1 ps slice; we keep its zero duration.
- The rows XProf derives we derive as XProf: Framework Name Scope, Framework Ops, Source code
  and Host Offload Ops row N (TPU cores), XLA Modules / XLA Ops after each GPU stream. Host
  offload slices are packed into rows in time order; where copies start or end at one instant
  XProf's (unstable) sort orders them its own way, so the same slices, as many rows, may sit on
  other Host Offload rows: they are compared per core, not per row.
- A file its profiler grouped (every plane declares `group_id`, as TensorFlow 2's did) gets no
  derived rows, names or regions, and its GPU streams keep their ids, in XProf and here: the
  public TensorFlow GPU demo, and copies of two fixtures made so (`GROUPED`).
- We draw `Async XLA Ops` (XProf shows them only with its "full DMA" option) and the planes
  XProf's trace viewer skips (`/host:CUPTI` and other planes that are neither `/host:CPU` nor a
  device).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import fixture_files
import numpy as np
import pandas as pd
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.profile.schema import XSpace

pytest.importorskip("xprof.convert.raw_to_tool_data")

XPROF_ONLY_ROWS = re.compile(r"^$")  # none: every row XProf draws we draw
HOST_OFFLOAD_ROW = re.compile(r"^Host Offload Ops row \d+$")
OURS_ONLY_ROWS = re.compile(r"^Async XLA Ops$")
XPROF_SHOWS_PLANE = re.compile(r"^(/host:CPU|/device:(GPU|TPU|CUSTOM):)")
XPROF_INSTANT_PS = 1


def our_slices(profile: xw.Profile) -> pd.DataFrame:
    """What our Trace Viewer draws, in XProf's naming (`<host> <plane>` sections)."""
    parts = []
    for track, row in profile.tracks[profile.tracks["kind"] == "slices"].iterrows():
        idx = np.arange(row["first_event"], row["end_event"])
        parts.append(pd.DataFrame({
            "section": f"{row['host']} {row['section']}", "plane": row["section"],
            "track": row["name"], "order": track, "name": profile.display_names[profile.meta[idx]],
            "start_ps": profile.start_ps[idx], "duration_ps": profile.duration_ps[idx],
            "depth": profile.depth[idx].astype(np.int64)}))
    return pd.concat(parts, ignore_index=True)


def nesting_depth(slices: pd.DataFrame) -> np.ndarray:
    """XProf's trace viewer nesting, computed from its own slices: on each track, a slice lies
    one level below the innermost earlier slice that contains it; instants contain nothing."""
    depth = np.zeros(len(slices), np.int64)
    for _, rows in slices.groupby(["section", "track"], sort=False):
        order = rows.sort_values(["start_ps", "duration_ps"], ascending=[True, False],
                                 kind="stable")
        stack: list[tuple[int, int]] = []  # (end, depth) of open containers
        for i, start, duration in zip(order.index, order["start_ps"], order["duration_ps"],
                                      strict=True):
            end = start + duration
            while stack and stack[-1][0] < end:
                stack.pop()
            depth[i] = stack[-1][1] + 1 if stack else 0
            if duration > 0:
                stack.append((end, depth[i]))
    return depth


GROUPED = ["synthetic_gpu.xplane.pb", "jax_cpu_demo.xplane.pb"]
"""Fixtures also compared as their profiler had grouped them (a `group_id` stat declared on every
plane): XProf then derives nothing, no XLA rows, step names or regions, and keeps the GPU
streams' line ids; so must we."""


def grouped_copy(name: str, folder: Path) -> Path:
    space = XSpace.FromString((fixture_files.DATA / name).read_bytes())
    for plane in space.planes:
        if "group_id" not in {m.name for m in plane.stat_metadata.values()}:
            sid = max(plane.stat_metadata, default=0) + 1
            plane.stat_metadata[sid].id, plane.stat_metadata[sid].name = sid, "group_id"
    path = folder / name
    path.write_bytes(space.SerializeToString())
    return path


@pytest.fixture(scope="module", params=[*fixture_files.XSPACE, *(("grouped", g) for g in GROUPED)],
                ids=[*fixture_files.ids(fixture_files.XSPACE), *(f"grouped-{g}" for g in GROUPED)])
def pair(request, tmp_path_factory):
    path = request.param
    if isinstance(path, tuple):
        path = grouped_copy(path[1], tmp_path_factory.mktemp("grouped"))
    theirs = xprof_oracle.trace_events(path)
    theirs["duration_ps"] = np.where(theirs["duration_ps"] == XPROF_INSTANT_PS, 0,
                                     theirs["duration_ps"])
    theirs["depth"] = nesting_depth(theirs)
    return our_slices(xw.open_profile(path)), theirs


def rows_of(frame: pd.DataFrame) -> set[tuple[str, str]]:
    return set(zip(frame["section"], frame["track"], strict=True))


def test_rows_are_xprofs_but_for_the_documented_ones(pair):
    ours, theirs = pair
    only_theirs = rows_of(theirs) - rows_of(ours)
    only_ours = rows_of(ours) - rows_of(theirs)
    assert all(XPROF_ONLY_ROWS.match(track) for _, track in only_theirs), only_theirs
    planes = dict(zip(ours["section"], ours["plane"], strict=True))
    assert all(OURS_ONLY_ROWS.match(track) or not XPROF_SHOWS_PLANE.match(planes[section])
               for section, track in only_ours), only_ours


def test_sections_and_tracks_in_xprofs_order(pair):
    ours, theirs = pair
    shared = rows_of(ours) & rows_of(theirs)
    xprof_order = theirs.drop_duplicates(["section", "track"]).sort_values(
        ["section_order", "track_order"], kind="stable")
    our_order = ours.drop_duplicates(["section", "track"]).sort_values("order", kind="stable")
    assert [r for r in zip(our_order["section"], our_order["track"], strict=True)
            if r in shared] == [r for r in zip(xprof_order["section"], xprof_order["track"],
                                               strict=True) if r in shared]


def test_every_slice_on_the_same_row_at_the_same_time_and_depth(pair):
    ours, theirs = pair
    shared = rows_of(ours) & rows_of(theirs)
    ours = ours[[r in shared for r in zip(ours["section"], ours["track"], strict=True)]]
    theirs = theirs[[r in shared for r in zip(theirs["section"], theirs["track"], strict=True)]]
    # XProf's times count from its own origin: shift by the first slice both draw.
    shift = int(theirs["start_ps"].min() - ours["start_ps"].min())
    ours, theirs = (frame.assign(track=frame["track"].str.replace(HOST_OFFLOAD_ROW, "Host Offload",
                                                                  regex=True))
                    for frame in (ours, theirs))
    keys = ["section", "track", "name", "start_ps", "duration_ps", "depth"]
    mine = Counter(zip(*(ours[k] for k in keys), strict=True))
    theirs = theirs.assign(start_ps=theirs["start_ps"] - shift)
    xprofs = Counter(zip(*(theirs[k] for k in keys), strict=True))
    assert sum(mine.values()) == sum(xprofs.values())
    assert mine == xprofs, (list((xprofs - mine).items())[:5], list((mine - xprofs).items())[:5])
