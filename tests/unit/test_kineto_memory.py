"""The memory profile of PyTorch (Kineto) traces against a brute-force reading of the JSON.

On every fixture whose file holds `[memory]` events, recounted in plain Python from json + gzip
(times as exact decimals): per device, the snapshots in order with `Total Allocated` (equal to
the running sum of `Bytes`) and `Total Reserved`; the peak; the allocations live at the peak with
their address, size, time and the innermost `cpu_op` around them on their thread; the step.
Then the widget's face of it: the tab, the view's answer, the chart template.
"""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.kineto.memory import (
    BEFORE_TRACE,
    DEVICE_BREAKDOWN_COLUMNS,
    DEVICE_SNAPSHOT_COLUMNS,
    DEVICE_SUMMARY_COLUMNS,
    OP_COLUMNS,
    device_name,
)
from xprof_widgets.analysis.memory_profile import analyze_memory_profile, memory_profile_available
from xprof_widgets.errors import ProfileError
from xprof_widgets.tools import tool
from xprof_widgets.widgets.memory_profile import chart_template

DATA = Path(__file__).parents[1] / "data"
PS_PER_US = Decimal(10**6)


def _raw(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _memory_fixtures() -> list[Path]:
    """Files with `[memory]` events as PyTorch 1.10+ writes them (addresses and totals; the
    older shape, tests/data/torch_memory_no_addr, is tested in test_kineto_memory_pairing)."""
    files = sorted(p for p in DATA.rglob("*") if p.name.endswith((".json", ".json.gz")))
    return [p for p in files if b'"[memory]"' in _raw(p) and b'"Addr"' in _raw(p)]


FIXTURES = _memory_fixtures()
DF_INDEX = DATA / "public" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"


def test_the_fixtures_with_memory_events():
    names = {p.relative_to(DATA).as_posix() for p in FIXTURES}
    assert {"torch_hta/rank-0.json.gz", "torch_export/trace.json",
            "public/hta/df_index_resolver/df_index_resolver.json.gz"} <= names
    assert "torch_tiny_mlp.pt.trace.json.gz" not in names  # made without profile_memory


class Recount:
    """The file's `[memory]` events per device in (ts, Ev Idx) order, and its cpu_ops and steps,
    read with nothing but json."""

    def __init__(self, path: Path):
        doc = json.loads(_raw(path), parse_float=Decimal)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        self.devices: dict[str, list[dict]] = defaultdict(list)
        self.ops: dict[tuple, list[tuple[Decimal, Decimal, str]]] = defaultdict(list)
        self.steps: list[tuple[Decimal, Decimal, int]] = []
        for ev in events:
            if ev.get("name") == "[memory]" and ev.get("ph") == "i":
                a = ev["args"]
                self.devices[device_name(a["Device Type"], a["Device Id"])].append(ev)
            elif ev.get("ph") == "X" and ev.get("cat") in ("cpu_op", "Operator"):
                start = Decimal(ev["ts"])
                self.ops[(ev["pid"], ev["tid"])].append(
                    (start, start + Decimal(ev.get("dur", 0)), ev["name"]))
            elif ev.get("ph") == "X" and str(ev.get("name", "")).startswith("ProfilerStep#"):
                start = Decimal(ev["ts"])
                self.steps.append((start, start + Decimal(ev["dur"]),
                                   int(ev["name"].split("#")[1])))
        for evs in self.devices.values():
            evs.sort(key=lambda e: (Decimal(e["ts"]), e["args"]["Ev Idx"]))
        for ops in self.ops.values():
            ops.sort(key=lambda op: (op[0], op[0] - op[1]))  # by start, the longest first
        self.starts = {thread: [op[0] for op in ops] for thread, ops in self.ops.items()}

    def innermost_op(self, ev: dict) -> str:
        """The cpu_op on the event's thread that spans it and starts last (the shortest of
        those starting together): the innermost, as ops on one thread nest. Walks back from
        the last op starting at or before the event to the first that still spans it."""
        t = Decimal(ev["ts"])
        thread = (ev["pid"], ev["tid"])
        ops = self.ops[thread]
        for k in range(bisect.bisect_right(self.starts.get(thread, []), t) - 1, -1, -1):
            if ops[k][1] > t:
                return ops[k][2]
        return ""

    def step_of(self, ev: dict) -> int | None:
        t = Decimal(ev["ts"])
        inside = [n for start, end, n in self.steps if start <= t <= end]
        return inside[0] if inside else None


@pytest.fixture(scope="module", params=FIXTURES, ids=lambda p: p.name)
def case(request):
    profile = xw.open_profile(request.param)
    return profile, analyze_memory_profile(profile), Recount(request.param)


def test_devices_and_their_snapshots(case):
    profile, analysis, recount = case
    assert memory_profile_available(profile) and analysis.kind == "kineto"
    host = profile.hosts[0]
    assert sorted(m for _, m in analysis.allocators) == sorted(recount.devices)
    first = next(m for _, m in analysis.allocators)
    assert first == min(recount.devices, key=lambda d: (d == "cpu", d))  # accelerators first
    for memory_id, evs in recount.devices.items():
        s = analysis.allocator(memory_id, host).snapshots
        assert s.columns.tolist() == DEVICE_SNAPSHOT_COLUMNS
        args = [e["args"] for e in evs]
        assert s["address"].tolist() == [a["Addr"] for a in args]
        sizes = [a["Bytes"] for a in args]
        assert s["allocation_bytes"].tolist() == [abs(b) for b in sizes]
        assert s["activity"].tolist() == ["allocation" if b > 0 else "deallocation"
                                          for b in sizes]
        allocated = [a["Total Allocated"] for a in args]
        assert s["heap_allocated_bytes"].tolist() == allocated == s["in_use_bytes"].tolist()
        running, total = [], allocated[0] - sizes[0]
        for b in sizes:
            total += b
            running.append(total)
        assert allocated == running  # Total Allocated is the running sum of Bytes
        reserved = [a["Total Reserved"] for a in args]
        assert s["reserved_bytes"].tolist() == reserved
        assert s["free_memory_bytes"].tolist() == [max(r - a, 0)
                                                   for r, a in zip(reserved, allocated)]
        # times: exact, relative to the first event of the file's timeline
        t0 = Decimal(evs[0]["ts"])
        start = profile.start_ps[s["event"].to_numpy()]
        assert (start - start[0]).tolist() == [int((Decimal(e["ts"]) - t0) * PS_PER_US)
                                               for e in evs]
        assert s["cpu_op"].tolist() == [recount.innermost_op(e) for e in evs]
        steps = [recount.step_of(e) for e in evs]
        assert all(got == want for got, want in zip(s["step"].tolist(), steps)
                   if want is not None)


def _brute_live(evs: list[dict], peak: int) -> dict[int, dict]:
    live: dict[int, dict] = {}
    for ev in evs[:peak + 1]:
        if ev["args"]["Bytes"] > 0:
            live[ev["args"]["Addr"]] = ev
        else:
            live.pop(ev["args"]["Addr"], None)
    return live


def test_the_peak_and_what_is_live_there(case):
    profile, analysis, recount = case
    for memory_id, evs in recount.devices.items():
        memory = analysis.allocator(memory_id, profile.hosts[0])
        allocated = [e["args"]["Total Allocated"] for e in evs]
        top = max(allocated)
        peak = max(k for k, v in enumerate(allocated) if v == top)  # the latest of the ties
        summary = memory.summary()
        assert list(summary) == DEVICE_SUMMARY_COLUMNS
        assert summary["peak_bytes"] == top and memory.peak == peak
        t0_us = memory.snapshots["time_us"].iat[0]
        assert summary["peak_time_us"] - t0_us == pytest.approx(
            float(Decimal(evs[peak]["ts"]) - Decimal(evs[0]["ts"])), abs=1e-6)
        assert summary["peak_reserved_bytes"] == evs[peak]["args"]["Total Reserved"]
        assert summary["max_reserved_bytes"] == max(e["args"]["Total Reserved"] for e in evs)
        live = _brute_live(evs, peak)
        assert summary["live_allocations"] == len(live)
        assert summary["num_allocs"] == sum(e["args"]["Bytes"] > 0 for e in evs)

        table = memory.breakdown()
        assert table.columns.tolist() == DEVICE_BREAKDOWN_COLUMNS
        rows = table[table["op_name"] != BEFORE_TRACE]
        assert sorted(zip(rows["address"], rows["allocation_bytes"], strict=True)) == sorted(
            (addr, ev["args"]["Bytes"]) for addr, ev in live.items())
        assert rows["allocation_bytes"].is_monotonic_decreasing
        by_address = rows.set_index("address")
        for addr, ev in live.items():
            assert by_address.at[addr, "op_name"] == recount.innermost_op(ev)
            assert by_address.at[addr, "thread"].startswith(f"thread {ev['tid']} ")
            assert by_address.at[addr, "allocated_us"] - t0_us == pytest.approx(
                float(Decimal(ev["ts"]) - Decimal(evs[0]["ts"])), abs=1e-6)
        before = top - sum(ev["args"]["Bytes"] for ev in live.values())
        extra = table[table["op_name"] == BEFORE_TRACE]
        assert before >= 0  # every fixture's frees match allocations it made, or older ones
        assert extra["allocation_bytes"].tolist() == ([before] if before > 0 else [])
        assert int(table["allocation_bytes"].sum()) == top


def test_a_free_takes_its_allocations_op():
    profile = xw.open_profile(DATA / "torch_export" / "trace.json")
    s = analyze_memory_profile(profile).allocator("cpu").snapshots
    alloc_op: dict[int, str] = {}
    checked = 0
    for activity, addr, op in zip(s["activity"], s["address"], s["op_name"], strict=True):
        if activity == "allocation":
            alloc_op[addr] = op
        elif addr in alloc_op:
            assert op == alloc_op.pop(addr)
            checked += 1
        else:
            assert op == ""
    assert checked > 100


def test_two_threads_one_device_in_record_order():
    """df_index_resolver's cuda:1 allocations come from the forward and the backward thread,
    172 of them at the timestamp of the one before: in (ts, Ev Idx) order Total Allocated moves
    by each event's Bytes; the peak, in step 6, holds ~3.8 GB from before the trace."""
    profile = xw.open_profile(DF_INDEX)
    memory = analyze_memory_profile(profile).allocator("cuda:1")
    s = memory.snapshots
    assert s["thread"].nunique() == 2
    signed = np.where(s["activity"] == "allocation", 1, -1) * s["allocation_bytes"].to_numpy()
    allocated = s["heap_allocated_bytes"].to_numpy()
    assert np.array_equal(np.diff(allocated), signed[1:])
    summary = memory.summary()
    assert (summary["peak_bytes"], summary["peak_reserved_bytes"]) == (6629508096, 12782141440)
    assert summary["peak_step"] == 6
    table = memory.breakdown()
    assert table["op_name"].iat[-1] == BEFORE_TRACE  # ~4 GB held from before the profile
    assert int(table["allocation_bytes"].sum()) == summary["peak_bytes"]


def test_profiles_without_memory_events():
    profile = xw.open_profile(DATA / "torch_tiny_mlp.pt.trace.json.gz")
    assert not memory_profile_available(profile)
    assert not tool("memory_profile").offered_for(profile)
    mp = xw.MemoryProfile(profile)
    assert "profile_memory=True" in mp._error and "MemoryAllocation" in mp._error


def test_the_widget_on_a_pytorch_trace():
    path = DATA / "torch_hta" / "rank-0.json.gz"
    profile = xw.open_profile(path)
    assert tool("memory_profile").offered_for(profile)
    mp = xw.MemoryProfile(profile)
    assert (mp.memory_id, mp._kind, mp._choices) == ("cpu", "kineto", {"rank-0": ["cpu"]})
    assert mp.summary().columns.tolist() == DEVICE_SUMMARY_COLUMNS
    pd.testing.assert_frame_equal(mp.to_dataframe(), mp.breakdown())
    content, buffers = mp._call("view", {})
    t = content["timeline"]
    assert content["kind"] == "kineto"
    assert t["extra"] == {"floats": ["reserved_bytes", "address"], "texts": ["cpu_op", "thread"]}
    assert len(buffers) == 7 + 2 + 5 + 2 + 2
    snaps = mp.timeline()
    n = t["points"]
    assert n == len(snaps) == 431
    heap, reserved, address = buffers[2], buffers[14], buffers[15]
    assert np.array_equal(heap * content["scale"], snaps["heap_allocated_bytes"].to_numpy())
    assert np.array_equal(address, snaps["address"].to_numpy(np.float64))
    assert np.array_equal(reserved * content["scale"], snaps["reserved_bytes"].to_numpy())
    ops = np.array(t["texts"]["cpu_op"])[buffers[16]]
    assert ops.tolist() == snaps["cpu_op"].tolist()
    table = pd.DataFrame(content["breakdown"])
    assert table.columns.tolist() == DEVICE_BREAKDOWN_COLUMNS
    assert int(table["allocation_bytes"].sum()) == content["summary"]["peak_bytes"]
    assert content["summary"]["peak_fragmentation"] is None  # unknown: NaN, sent as null
    ops = pd.DataFrame(content["ops"])
    assert ops.columns.tolist() == OP_COLUMNS and len(ops) == 37
    pd.testing.assert_frame_equal(ops, mp.memory_by_op(), check_dtype=False)
    assert ops.iloc[0].tolist()[:4] == ["aten::mm", 57, 57, 150528]
    with pytest.raises(ProfileError, match="memory per op"):
        xw.MemoryProfile(DATA / "tf_keras_cpu_slow_map.xplane.pb").memory_by_op()


def test_the_pytorch_chart_template():
    kinds = {}
    for kind in ("allocator", "kineto"):
        text = json.dumps(chart_template(kind))
        kinds[kind] = text
        for name in ("timeline", "x_axis", "y_axis", "peak", "peak_label", "free_area", "hover"):
            assert f'"name": "{name}"' in text
    assert "reserved, not allocated" in kinds["kineto"]
    assert "fragmentation (%)" not in kinds["kineto"] and "stack (reserved)" not in kinds["kineto"]
    assert "stack (reserved)" in kinds["allocator"] and "fragmentation (%)" in kinds["allocator"]


def test_the_suite_shows_an_allocation_in_the_trace():
    from xprof_widgets.widgets.profiler import Profiler

    suite = Profiler(DATA / "torch_hta" / "rank-0.json.gz", tool="memory_profile")
    try:
        assert "memory_profile" in suite.tab_keys
        row = suite.tool("memory_profile").breakdown().iloc[1]
        suite.show_moment_in_trace(float(row["allocated_us"]), int(row["event"]))
        assert suite.tab_keys[suite.tabs.selected_index] == "trace"
        start, end = suite.tool("trace").window
        assert start < row["allocated_us"] < end
        names = set(suite.profile.events_frame(suite.tool("trace").selected_events)["name"])
        assert {row["op_name"], "[memory]", "ProfilerStep#3"} <= names
    finally:
        suite.close()


def _memory(ts: float, addr: int, size: int, **args) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1,
            "tid": 1, "ts": ts, "args": {"Addr": addr, "Bytes": size, "Device Type": 1,
                                         "Device Id": 0, **args}}


def test_events_without_totals_count_from_zero(tmp_path):
    """`[memory]` events without totals (as an older PyTorch may write): allocated is the running
    sum from 0 (no free before the first total lacks its allocation), and from a stated total
    where one appears; reserved is unknown (NaN, None in the summary) where not stated; an
    event without Bytes is left out."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 10,
         "dur": 5},
        _memory(11, 0xA0, 100), _memory(12, 0xB0, 50), _memory(20, 0xA0, -100),
        _memory(21, 0xC0, 30, **{"Total Allocated": 1000, "Total Reserved": 2048}),
        _memory(22, 0xD0, 40), _memory(23, 0xD0, "40"),
    ]
    path = tmp_path / "old_torch.json"
    path.write_text(json.dumps({"traceEvents": events}))
    memory = analyze_memory_profile(xw.open_profile(path)).allocator("cuda:0")
    s = memory.snapshots
    assert s["heap_allocated_bytes"].tolist() == [100, 150, 50, 1000, 1040]
    assert np.array_equal(s["reserved_bytes"], [np.nan, np.nan, np.nan, 2048, np.nan],
                          equal_nan=True)
    assert np.isnan(s["free_memory_bytes"].to_numpy()[[0, 1, 2, 4]]).all()
    assert s["free_memory_bytes"].iat[3] == 2048 - 1000
    summary = memory.summary()
    assert summary["peak_reserved_bytes"] is None and summary["capacity_bytes"] is None
    assert summary["peak_free_bytes"] is None and summary["max_reserved_bytes"] == 2048
    assert (summary["pairing"], summary["peak_op"]) == ("address", "")
    assert s["cpu_op"].tolist() == ["aten::empty", "aten::empty", "", "", ""]
    assert s["op_name"].tolist() == ["aten::empty", "aten::empty", "aten::empty", "", ""]
    table = memory.breakdown()
    assert memory.summary()["peak_bytes"] == 1040
    assert table["address"].tolist() == [0xB0, 0xD0, 0xC0, 0]
    assert table["op_name"].tolist() == ["aten::empty", "", "", BEFORE_TRACE]
    assert table["allocation_bytes"].tolist() == [50, 40, 30, 920]
