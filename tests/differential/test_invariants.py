"""Invariants of decoding and drawing on every fixture, checked against a brute-force recount
of the file itself (upb's parse of the XSpace, `json` for Chrome traces), also after shuffling
the order planes, lines and events are stored in: storage order must change nothing.

- Per row: event count, first start, last end and deepest nesting equal the recount.
- Rows come out in the same order, with the same events, however the file is ordered.
- In a window over the whole trace, every event lies in a drawn run of its own row and depth.
"""

from __future__ import annotations

import gzip
import json
import random
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import fixture_files
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xprof_widgets as xw
from xprof_widgets.profile.ordering import INTERNAL_EVENTS
from xprof_widgets.profile.schema import XSpace
from xprof_widgets.trace import TraceIndex

SHUFFLES = settings(max_examples=3, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---- brute force -------------------------------------------------------------------------------
def recount_xspace(data: bytes) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(plane, line) -> every event the file holds and XProf draws, as (absolute start ps,
    duration ps), from upb."""
    rows: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for plane in XSpace.FromString(data).planes:
        if plane.name == "/host:metadata":
            continue
        for line in plane.lines:
            name = line.display_name or line.name
            for event in line.events:
                event_name = plane.event_metadata[event.metadata_id].name
                if event_name not in INTERNAL_EVENTS:
                    at = line.timestamp_ns * 1000 + event.offset_ps
                    rows[(plane.name, name)].append((at, event.duration_ps))
    return rows


def recount_chrome(data: bytes) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(process, thread) -> every complete event and instant as (start ps, duration ps)."""
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data,
                     parse_float=Decimal)  # epoch microseconds: exact, not float64's 0.24 ns
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    process, thread = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            process[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            thread[(e["pid"], e["tid"])] = e["args"]["name"]
    rows: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e.get("ph") in ("X", "i", "I"):  # complete events and instants
            key = (process.get(e["pid"], f"Process {e['pid']}"),
                   thread.get((e["pid"], e["tid"]), f"Thread {e['tid']}"))
            duration = Decimal(e.get("dur", 0)) if e["ph"] == "X" else Decimal(0)
            rows[key].append((round(Decimal(e["ts"]) * 10**6), round(duration * 10**6)))
    return rows


def brute_depths(events: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(start, duration, depth) by the nesting rule, written out plainly: an event lies under the
    latest-starting earlier event that contains it (instants contain nothing), one level deeper
    when the last event at that depth would contain it."""
    ordered = sorted(events, key=lambda e: (e[0], -e[1]))
    out, containers, last_end = [], [], {}
    for start, duration in ordered:
        end = start + duration
        containers = [c for c in containers if c[0] >= end]
        depth = containers[-1][1] + 1 if containers else 0
        while last_end.get(depth, -1) > end:
            depth += 1
        last_end[depth] = end
        out.append((start, duration, depth))
        if duration > 0:
            containers.append((end, depth))
    return sorted(out)


def our_rows(profile: xw.Profile) -> dict[tuple[str, str], list[tuple[int, int, int, bool]]]:
    """(section, track) -> every drawn event as (start ps, duration ps, depth, derived)."""
    drawn = profile.tracks[profile.tracks["kind"] == "slices"]
    rows = {}
    for _, row in drawn.iterrows():
        idx = np.arange(row["first_event"], row["end_event"])
        rows[(row["section"], row["name"])] = sorted(zip(
            profile.start_ps[idx].tolist(), profile.duration_ps[idx].tolist(),
            profile.depth[idx].tolist(), profile.derived[idx].tolist(), strict=True))
    return rows


# ---- shuffled copies ------------------------------------------------------------------------------
def shuffled_xspace(data: bytes, rng: random.Random) -> bytes:
    space = XSpace.FromString(data)
    planes = list(space.planes)
    rng.shuffle(planes)
    out = XSpace()
    out.CopyFrom(space)
    del out.planes[:]
    for plane in planes:
        copy = out.planes.add()
        copy.CopyFrom(plane)
        lines = list(plane.lines)
        rng.shuffle(lines)
        del copy.lines[:]
        for line in lines:
            copy.lines.add().CopyFrom(line)
    return out.SerializeToString()


def shuffled_chrome(data: bytes, rng: random.Random) -> bytes:
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    rng.shuffle(events)
    return json.dumps(doc).encode()


FIXTURES = fixture_files.XSPACE + fixture_files.CHROME


def open_bytes(tmp_path: Path, name: str, data: bytes) -> xw.Profile:
    path = tmp_path / name
    path.write_bytes(data)
    return xw.open_profile(path)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_files.ids(FIXTURES))
def test_rows_equal_a_brute_force_recount(path):
    """Rows of the file's events; the events derived as XProf derives them (checked against
    XProf in test_trace_parity.py) take part in the nesting, and rows made only of them are
    left out here."""
    profile = xw.open_profile(path)
    data = path.read_bytes()
    recount = recount_xspace(data) if path.name.endswith(".xplane.pb") else recount_chrome(data)
    ours = {key: events for key, events in our_rows(profile).items()
            if not all(derived for *_, derived in events)}
    origin = min(min(s for s, _ in events) for events in recount.values() if events)
    assert set(ours) == {key for key, events in recount.items() if events}
    table = profile.tracks[profile.tracks["kind"] == "slices"].set_index(["section", "name"])
    for key, events in ours.items():
        derived = [(s, d) for s, d, _, made in events if made]
        expected = brute_depths([(s - origin, d) for s, d in recount[key]] + derived)
        assert [e[:3] for e in events] == expected, key
        row = table.loc[key]
        assert row["n_events"] == len(expected)
        assert row["start_us"] * 1e6 == pytest.approx(min(s for s, _, _ in expected), abs=0.5)
        assert row["end_us"] * 1e6 == pytest.approx(max(s + d for s, d, _ in expected), abs=0.5)
        assert row["max_depth"] == max(depth for _, _, depth in expected)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_files.ids(FIXTURES))
@SHUFFLES
@given(seed=st.integers(0, 2**32 - 1))
def test_storage_order_changes_nothing(path, tmp_path_factory, seed):
    data = path.read_bytes()
    rng = random.Random(seed)
    shuffled = shuffled_xspace(data, rng) if path.name.endswith(".xplane.pb") else \
        shuffled_chrome(data, rng)
    tmp = tmp_path_factory.mktemp("shuffled")
    original, moved = xw.open_profile(path), open_bytes(tmp, path.name, shuffled)
    columns = ["section", "name", "kind", "n_events", "start_us", "end_us", "max_depth"]
    if path.name.endswith(".xplane.pb"):  # Chrome: a thread's place follows its first event
        assert original.tracks[columns].equals(moved.tracks[columns])
    assert our_rows(original) == our_rows(moved)


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_files.ids(FIXTURES))
def test_every_event_is_drawn_on_its_own_row(path):
    profile = xw.open_profile(path)
    index = TraceIndex(profile)
    window = index.window(0.0, profile.duration_us, 4000)
    drawn = profile.tracks[profile.tracks["kind"] == "slices"]
    assert window.events_in_window == int(drawn["n_events"].sum())
    runs = {}
    for track, depth, start, end in zip(window.slice_track.tolist(), window.slice_depth.tolist(),
                                        window.slice_start_ps.tolist(),
                                        window.slice_end_ps.tolist(), strict=True):
        runs.setdefault((track, depth), []).append((start, end))
    for track, row in drawn.iterrows():
        idx = np.arange(row["first_event"], row["end_event"])
        for depth in np.unique(profile.depth[idx]).tolist():
            mine = idx[profile.depth[idx] == depth]
            spans = np.array(runs[(track, depth)])
            at = np.searchsorted(spans[:, 0], profile.start_ps[mine], side="right") - 1
            assert (at >= 0).all()
            assert (spans[at, 1] >= profile.start_ps[mine] + profile.duration_ps[mine]).all()

