"""The memory profile against XProf's `memory_profile` on every XSpace fixture.

Equal: the memory ids; every snapshot (activity, stack, heap, free, fragmentation, lifetime
peak, requested and allocated bytes, address, and the op, region, data type and shape a
deallocation takes from its allocation) of the timeline, which both reduce to 1,000 snapshots
(the largest heap + stack per window; the synthetic GPU fixture has 1,123 per allocator); the
peak's stack, heap, free bytes, fragmentation and the memory capacity; the lifetime peak.
Differences we chose (docs/from_xprof.md, "Memory Profile"), asserted as rules:

- times: ours are the profile's timeline, XProf's each event's offset from its line; on these
  files every line has one timestamp, so the two differ by one constant;
- steps: ours are the steps' numbers, XProf's its step groups counted from 0 (0 for all when no
  step is marked): XProf's is the position of ours among the host's steps;
- counts: ours count every allocation and deallocation; XProf's page counts those of its
  reduced timeline (equal up to 1,000 snapshots);
- the peak: among snapshots tied at the largest heap + stack, XProf takes the step of the
  latest but the time of the last one in file order; we take the latest for both. XProf's
  breakdown is ours computed at its (time, step);
- the lifetime peak: XProf's is the allocator's `peak_bytes_in_use` at its last event in file
  order (on the TensorFlow GPU demo an earlier moment than the allocator's peak); ours is the
  largest.
"""

from __future__ import annotations

import fixture_files
import numpy as np
import pytest
import xprof_oracle

import xprof_widgets as xw
from xprof_widgets.analysis.allocator_memory import DEALLOCATION, NO_STEP, active_allocations
from xprof_widgets.analysis.memory_profile import analyze_memory_profile

pytest.importorskip("xprof.convert.raw_to_tool_data")

ACTIVITY = {"ALLOCATION": "allocation", DEALLOCATION.upper(): DEALLOCATION}
STATS = [("stackReservedBytes", "stack_reserved_bytes"),
         ("heapAllocatedBytes", "heap_allocated_bytes"),
         ("freeMemoryBytes", "free_memory_bytes"), ("peakBytesInUse", "peak_bytes_in_use")]
METADATA = [("requestedBytes", "requested_bytes", int), ("allocationBytes", "allocation_bytes", int),
            ("address", "address", int), ("tfOpName", "op_name", str),
            ("regionType", "region_type", str), ("dataType", "data_type", str),
            ("tensorShape", "shape", str)]


@pytest.fixture(scope="module", params=fixture_files.XSPACE,
                ids=fixture_files.ids(fixture_files.XSPACE))
def case(request):
    theirs = xprof_oracle.run(request.param, "memory_profile")
    profile = xw.open_profile(request.param)
    return profile, analyze_memory_profile(profile), theirs


def ordinal(steps: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """XProf's step id of each of our steps: its position among the host's step numbers."""
    if (steps == NO_STEP).all():
        return np.zeros(steps.shape[0], np.int64)
    return np.searchsorted(np.unique(numbers), steps)


def step_numbers(profile) -> np.ndarray:
    from xprof_widgets.analysis.steps import find_steps

    return find_steps(profile).markers["step"].to_numpy()


def test_memory_ids(case):
    _, ours, theirs = case
    assert ours.memory_ids == sorted(theirs.get("memoryIds", []))


def xprof_rows(snapshots: list[dict]) -> list[tuple]:
    rows = []
    for s in snapshots:
        stats, meta = s["aggregationStats"], s["activityMetadata"]
        rows.append((int(s["timeOffsetPs"]), ACTIVITY[meta["memoryActivity"]],
                     *(int(stats[k]) for k, _ in STATS), float(stats["fragmentation"]),
                     *(kind(meta[k]) for k, _, kind in METADATA), int(meta["stepId"])))
    return rows


def our_rows(snapshots, shift_ps: int, numbers: np.ndarray) -> list[tuple]:
    time = np.rint(snapshots["time_us"].to_numpy() * 1e6).astype(np.int64) + shift_ps
    step = ordinal(snapshots["step"].to_numpy(), numbers)
    columns = [snapshots[c].tolist() for _, c in STATS]
    frag = snapshots["fragmentation"].tolist()
    meta = [snapshots[c].tolist() for _, c, _ in METADATA]
    return [(int(time[k]), snapshots["activity"].iat[k], *(int(c[k]) for c in columns),
             float(frag[k]), *(kind(m[k]) for m, (_, _, kind) in zip(meta, METADATA,
                                                                      strict=True)),
             int(step[k])) for k in range(len(snapshots))]


def shift_of(mine, allocator: dict) -> int:
    """XProf's time minus ours (ps): one constant, the first snapshot is in both timelines."""
    first = int(allocator["sampledTimelineSnapshots"][0]["timeOffsetPs"])
    return first - round(mine.snapshots["time_us"].iat[0] * 1e6)


def allocators_of(ours, theirs: dict) -> dict:
    """XProf's allocators by memory id. A profile without allocator events (the JAX CPU runs,
    the synthetic GPU and TPU profiles) has none in XProf and none here: asserted, so that the
    tests below compare two empty profiles rather than loop over nothing."""
    found = theirs.get("memoryProfilePerAllocator") or {}
    if not found:
        assert theirs["memoryIds"] == [] and ours.allocators == {} and ours.summary().empty
    return found


def test_every_snapshot_of_the_timeline(case):
    profile, ours, theirs = case
    numbers = step_numbers(profile)
    for memory_id, allocator in allocators_of(ours, theirs).items():
        mine = ours.allocator(memory_id)
        want = xprof_rows(allocator["sampledTimelineSnapshots"])
        timeline = mine.timeline(1000)
        assert len(timeline) == len(want) == min(1000, len(mine.snapshots))
        assert our_rows(timeline, shift_of(mine, allocator), numbers) == want


def test_summary_and_peak(case):
    profile, ours, theirs = case
    numbers = step_numbers(profile)
    for memory_id, allocator in allocators_of(ours, theirs).items():
        mine = ours.allocator(memory_id)
        s, want = mine.summary(), allocator["profileSummary"]
        peak = want["peakStats"]
        assert s["peak_bytes"] == int(peak["peakBytesInUse"])
        assert s["peak_stack_bytes"] == int(peak["stackReservedBytes"])
        assert s["peak_heap_bytes"] == int(peak["heapAllocatedBytes"])
        assert s["peak_free_bytes"] == int(peak["freeMemoryBytes"])
        assert s["peak_fragmentation"] == float(peak["fragmentation"])
        assert s["capacity_bytes"] == int(want["memoryCapacity"])
        sampled = allocator["sampledTimelineSnapshots"]
        snaps = mine.snapshots
        # Rule: XProf's lifetime peak is that of the last event in file order; ours the largest.
        assert s["lifetime_peak_bytes"] == snaps["peak_bytes_in_use"].max()
        file_last = int(np.argmax(snaps["event"].to_numpy()))
        assert int(want["peakBytesUsageLifetime"]) == snaps["peak_bytes_in_use"].iat[file_last]
        assert s["num_allocs"] + s["num_deallocs"] == len(snaps)
        if len(snaps) <= 1000:  # Rule: XProf's page counts its reduced timeline
            assert s["num_allocs"] == sum(x["activityMetadata"]["memoryActivity"] == "ALLOCATION"
                                          for x in sampled)
        # Rule: XProf's peak step is that of the latest tie, as ours.
        special = allocator["specialAllocations"]
        if special:
            assert ordinal(np.array([s["peak_step"]]), numbers)[0] == int(special[0]["stepId"])
        # Rule: XProf's peak time is the last tie in file order (the largest event index).
        ties = np.flatnonzero(snaps["in_use_bytes"].to_numpy() == s["peak_bytes"])
        assert mine.peak == ties[-1]
        file_last = int(ties[np.argmax(snaps["event"].to_numpy()[ties])])
        assert int(want["peakStatsTimePs"]) == round(snaps["time_us"].iat[file_last] * 1e6) + \
            shift_of(mine, allocator)


def test_breakdown_at_xprofs_peak(case):
    _, ours, theirs = case
    for memory_id, allocator in allocators_of(ours, theirs).items():
        mine = ours.allocator(memory_id)
        snaps = mine.snapshots
        peak = mine.summary()
        ties = np.flatnonzero(snaps["in_use_bytes"].to_numpy() == peak["peak_bytes"])
        file_last = int(ties[np.argmax(snaps["event"].to_numpy()[ties])])
        table = active_allocations(snaps, file_last, peak["peak_step"])
        kept = allocator["memoryProfileSnapshots"]
        special = allocator["specialAllocations"]
        want = []
        for row in allocator["activeAllocations"]:
            index = int(row["snapshotIndex"])
            meta = kept[index]["activityMetadata"] if index >= 0 else \
                special[int(row["specialIndex"])]
            want.append((meta["tfOpName"], int(meta["allocationBytes"]),
                         int(meta["requestedBytes"]), int(row["numOccurrences"]),
                         meta["regionType"], meta["dataType"], meta["tensorShape"]))
        got = [tuple(r) for r in table.itertuples(index=False)]
        assert got == want
        if file_last == mine.peak:  # the same moment: the default breakdown is XProf's
            assert [tuple(r) for r in mine.breakdown().itertuples(index=False)] == want
