"""The Memory view against PyTorch's TensorBoard plugin (torch-tb-profiler 0.4.3), run live.

For every Kineto trace under tests/data with `[memory]` events (HTA's df_index_resolver, the
CPU traces made here with profile_memory=True, and tests/data/torch_memory_no_addr: the same
CUDA run in the shape older PyTorch wrote, without addresses or totals), the plugin's loader
(`RunProfileData.from_json`, as its server calls it) builds its memory snapshot, and its Memory
View (`MemorySnapshot.get_memory_statistics`: per device and op, self and inclusive increase,
allocation size and count, calls) is compared with ours (`DeviceMemory.ops`), number for
number; its peaks (`get_peak_memory`, the largest `Total Allocated` per device) with ours.
The one difference is a named rule of docs/memory_profile.md, applied to the plugin's input so
that what remains must match:

- ONLY_CHILD_MERGED: where an op's only child op has its name, the plugin (like PyTorch's
  key_averages()) merges the two into one call; we count both calls, and the child's memory
  events in the inclusive figures of each (self figures are the same either way). Applied by
  renaming, in the plugin's input, each op whose parent op on its thread has its name, and
  adding its rows back under the name.

The plugin names devices `CPU` and `GPU<n>` (ours `cpu`, `cuda:<n>`) and reads no other device
type; ours counts frees too (free_count, free_bytes: allocation less increase), checked here
against its numbers.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path

import pytest
from references import read_json, traces_holding

import xprof_widgets as xw
from xprof_widgets.analysis.memory_profile import analyze_memory_profile
from xprof_widgets.errors import ProfileError

pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler, the reference for the Memory "
                    "view, is not installed (pip install torch-tb-profiler)")
from torch_tb_profiler.profiler.data import RunProfileData

DATA = Path(__file__).resolve().parents[1] / "data"
RENAMED = "\u2060"
"""Appended to an op's name in the plugin's input where its parent op has the same name."""
PLUGIN_METRICS = ("self_increase_bytes", "self_allocation_bytes", "self_allocation_count",
                  "increase_bytes", "allocation_bytes", "allocation_count", "calls")
"""The plugin's MemoryMetrics order, then its calls."""


TRACES = traces_holding(DATA, b'"traceEvents"', b'"[memory]"')


def test_the_traces_compared():
    names = {p.relative_to(DATA).as_posix() for p in TRACES}
    assert {"public/hta/df_index_resolver/df_index_resolver.json.gz",
            "torch_memory_no_addr/trace.json.gz", "torch_hta/rank-0.json.gz"} <= names


def _rename_only_children(doc: dict) -> Counter:
    """ONLY_CHILD_MERGED, in place: each cpu_op whose innermost enclosing cpu_op on its thread
    has its name gets RENAMED appended. Returns how many were renamed, by name."""
    by_thread = defaultdict(list)
    for ev in doc["traceEvents"]:
        if ev.get("ph") == "X" and ev.get("cat") in ("cpu_op", "Operator"):
            by_thread[(ev["pid"], ev["tid"])].append(ev)
    renamed: Counter = Counter()
    for ops in by_thread.values():
        ops.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for ev in ops:
            while stack and ev["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
                stack.pop()
            if stack and stack[-1]["name"].rstrip(RENAMED) == ev["name"]:
                renamed[ev["name"]] += 1
                ev["name"] += RENAMED
            stack.append(ev)
    return renamed


@cache
def plugin_memory(path: Path) -> tuple[dict, dict, int]:
    """The plugin's memory statistics {device: {op: [metrics..., calls]}} with renamed ops
    added back under their name, its peaks {device: bytes}, and how many ops were renamed.
    A renamed op the plugin does not list on a device (no memory event of its own there)
    still adds its calls to its name's row there, as ours counts every call of a name."""
    doc = read_json(path)
    renamed = _rename_only_children(doc)
    logging.disable(logging.CRITICAL)
    try:
        run = RunProfileData.from_json("worker0", 0, doc)
    finally:
        logging.disable(logging.NOTSET)
    stats = run.memory_snapshot.get_memory_statistics(run.tid2tree)
    merged: dict[str, dict[str, list[int]]] = {}
    for device, ops in stats.items():
        merged[device] = defaultdict(lambda: [0] * len(PLUGIN_METRICS))
        for name, values in ops.items():
            row = merged[device][name.rstrip(RENAMED)]
            for k, v in enumerate(values):
                row[k] += v
        for name, calls in renamed.items():
            if name in ops and name + RENAMED not in ops:
                merged[device][name][-1] += calls
    names = {0: "CPU", 1: "GPU"}
    peaks = {names[int(t)] + ("" if int(t) == 0 else str(i)): v
             for (t, i), v in run.memory_snapshot.get_peak_memory().items()}
    return merged, peaks, sum(renamed.values())


def _plugin_device(memory_id: str) -> str | None:
    if memory_id == "cpu":
        return "CPU"
    return "GPU" + memory_id.split(":")[1] if memory_id.startswith("cuda:") else None


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.relative_to(DATA).as_posix())
def test_memory_view_equals_the_plugins(path):
    theirs, peaks, _ = plugin_memory(path)
    analysis = analyze_memory_profile(xw.open_profile(path))
    compared = 0
    for (_, memory_id), memory in analysis.allocators.items():
        device = _plugin_device(memory_id)
        ours = memory.ops.set_index("op_name")
        expected = theirs.get(device, {})
        assert sorted(ours.index) == sorted(expected), memory_id
        for name, values in expected.items():
            row = ours.loc[name]
            assert [int(row[m]) for m in PLUGIN_METRICS] == values, (memory_id, name)
            assert row["free_bytes"] == row["allocation_bytes"] - row["increase_bytes"]
            assert row["self_free_bytes"] == (row["self_allocation_bytes"]
                                              - row["self_increase_bytes"])
            compared += 1
        summary = memory.summary()
        if device in peaks:  # the plugin's peak needs Total Allocated
            assert summary["peak_bytes"] == peaks[device]
        else:
            assert memory.snapshots["reserved_bytes"].isna().all()
    assert compared > 0


def test_only_child_merged_is_seen():
    """The rule above is not idle: HTA's df_index_resolver has aten::sum inside aten::sum
    (5 calls per step), where the plugin counts 5 calls fewer."""
    _, _, renamed = plugin_memory(DATA / "public" / "hta" / "df_index_resolver"
                                  / "df_index_resolver.json.gz")
    assert renamed > 0


def test_the_raw_memory_timeline_is_not_a_trace():
    """HTA's memory_analysis file is PyTorch's raw memory timeline (export_memory_timeline),
    which neither the plugin nor we read as a trace: ours says what it is."""
    path = DATA / "public" / "hta" / "memory_analysis" / "memory_timeline.raw.gz"
    with pytest.raises(ProfileError) as refused:
        xw.open_profile(path)
    assert "raw memory timeline" in str(refused.value) and "profile_memory=True" in str(
        refused.value)
    with pytest.raises(AttributeError):  # it expects a trace's object, finds a list
        RunProfileData.from_json("worker0", 0, read_json(path))
