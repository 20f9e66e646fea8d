"""Memory profile analysis on hand-written allocator events: snapshots, steps, the peak and its
breakdown, memory ids, the reduced timeline; and on the real TensorFlow fixture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis.allocator_memory import STACK, UNUSED_PREALLOCATED, timeline_rows
from xprof_widgets.analysis.memory_profile import (
    analyze_memory_profile,
    data_type_name,
    memory_profile_available,
)

DATA = Path(__file__).parents[1] / "data"
US = 1_000_000
MIB = 1 << 20


def alloc(t_us: float, heap: int, size: int, addr: int, op: str = "", **extra) -> tuple:
    stats = {"allocator_name": "GPU_0_bfc", "bytes_reserved": 0, "bytes_allocated": heap,
             "bytes_available": 100 * MIB - heap, "fragmentation": 0.25,
             "peak_bytes_in_use": 90 * MIB, "requested_bytes": size - 8,
             "allocation_bytes": size, "addr": addr, **extra}
    if op:
        stats.update(tf_op=op, region_type="output", data_type=14, shape="[4,8]")
    return ("MemoryAllocation", int(t_us * US), 0, stats)


def free(t_us: float, heap: int, size: int, addr: int) -> tuple:
    _, t, d, stats = alloc(t_us, heap, size, addr)
    return ("MemoryDeallocation", t, d, stats)


def profile_of(tmp_path: Path, events: list[tuple], steps=((10, 0), (11, 100))) -> xw.Profile:
    """A host with `train` steps (number, start us; 80 us long) on `python` and the allocator
    events on a thread of their own."""
    train = [("train", start * US, 80 * US, {"_r": 1, "step_num": n}) for n, start in steps]
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(build_xspace([{"name": "/host:CPU", "lines": [
        {"name": "python", "events": train},
        {"name": "tf_Compute/7", "events": sorted(events, key=lambda e: e[1])}]}]))
    return xw.open_profile(path)


def test_snapshots_steps_and_inherited_metadata(tmp_path):
    profile = profile_of(tmp_path, [
        alloc(1, 4 * MIB, 4 * MIB, 0x10, "dense/MatMul"),
        alloc(2, 6 * MIB, 2 * MIB, 0x20, "dense/BiasAdd"),
        free(50, 2 * MIB, 4 * MIB, 0x10),
        free(90, 0, 2 * MIB, 0x20),  # between the steps: the next step's
        alloc(200, 1 * MIB, 1 * MIB, 0x30, "late"),  # after every step: the last + 1
    ])
    assert memory_profile_available(profile)
    snaps = analyze_memory_profile(profile).allocator("GPU_0_bfc").snapshots
    assert snaps["step"].tolist() == [10, 10, 10, 11, 12]
    assert snaps["activity"].tolist() == ["allocation"] * 2 + ["deallocation"] * 2 + [
        "allocation"]
    assert snaps["op_name"].tolist() == ["dense/MatMul", "dense/BiasAdd", "dense/MatMul",
                                         "dense/BiasAdd", "late"]
    assert snaps["data_type"].tolist() == ["bfloat16"] * 5
    assert snaps["requested_bytes"].iat[0] == 4 * MIB - 8
    assert snaps["in_use_bytes"].tolist() == [4 * MIB, 6 * MIB, 2 * MIB, 0, MIB]
    assert snaps["time_us"].iat[0] == 1.0
    kinds = profile.tracks.loc[profile.tracks["name"] == "tf_Compute/7", "kind"]
    assert kinds.tolist() == ["hidden"]  # kept out of the trace viewer


def test_peak_is_the_latest_tie_and_its_breakdown(tmp_path):
    profile = profile_of(tmp_path, [
        alloc(1, 30 * MIB, 10 * MIB, 0xA, "persist"),  # before the peak's step: unmapped heap
        alloc(101, 40 * MIB, 10 * MIB, 0x1, "x"),
        alloc(102, 50 * MIB, 10 * MIB, 0x2, "x"),  # merged with the one at 0x1
        free(103, 40 * MIB, 10 * MIB, 0x2),
        alloc(104, 50 * MIB, 10 * MIB, 0x3, "x"),  # 50 MiB again: the latest tie is the peak
        alloc(105, 51 * MIB, 1 * MIB, 0x4, "y"),
        free(106, 50 * MIB, 1 * MIB, 0x4),
        free(107, 45 * MIB, 5 * MIB, 0xB),  # frees an allocation made before the profile
    ])
    memory = analyze_memory_profile(profile).allocator()
    s = memory.summary()
    assert (s["peak_bytes"], s["peak_time_us"], s["peak_step"]) == (51 * MIB, 105.0, 11)
    assert s["capacity_bytes"] == 100 * MIB and s["lifetime_peak_bytes"] == 90 * MIB
    assert (s["num_allocs"], s["num_deallocs"]) == (5, 3)
    table = memory.breakdown()
    assert table.columns.tolist() == ["op_name", "allocation_bytes", "requested_bytes",
                                      "occurrences", "region_type", "data_type", "shape"]
    rows = table[["op_name", "allocation_bytes", "occurrences"]].values.tolist()
    # heap 51 MiB = 20 MiB of "x" + 1 MiB of "y" + 30 MiB made before the step
    assert rows == [[UNUSED_PREALLOCATED, 30 * MIB, 1], ["x", 10 * MIB, 2], ["y", MIB, 1]]
    assert table["region_type"].iat[0] == "persist/dynamic"
    assert table["data_type"].iat[0] == "INVALID" and table["shape"].iat[0] == "unknown"


def test_stack_row_and_memory_ids_from_the_device_index(tmp_path):
    events = [alloc(1, 2 * MIB, 2 * MIB, 0x1, "a", allocator_name="", bytes_reserved=8 * MIB)]
    _, t, d, stats = events[0]
    stats = {k: v for k, v in stats.items() if k != "allocator_name"}
    profile = profile_of(tmp_path, [
        ("MemoryAllocation", t, d, {**stats, "index_on_host": 3}),
        ("MemoryAllocation", t + US, d, {**stats, "device_ordinal": 1, "addr": 0x2}),
    ])
    analysis = analyze_memory_profile(profile)
    assert analysis.memory_ids == ["1", "3"]
    table = analysis.allocator("3").breakdown()
    assert table["op_name"].tolist() == [STACK, "a"]
    assert table["allocation_bytes"].tolist() == [8 * MIB, 2 * MIB]
    with pytest.raises(KeyError, match="no allocator 'nope'"):
        analysis.allocator("nope")


def test_no_steps_and_no_events(tmp_path):
    profile = profile_of(tmp_path, [alloc(1, MIB, MIB, 0x1, "a")], steps=())
    assert analyze_memory_profile(profile).allocator().snapshots["step"].tolist() == [-1]
    plain = xw.open_profile(DATA / "jax_cpu_demo.xplane.pb")
    assert not memory_profile_available(plain)
    assert analyze_memory_profile(plain).summary().empty


def test_timeline_rows_keep_the_largest_of_each_window():
    in_use = np.array([1, 5, 2, 2, 9, 3, 0, 0, 7, 1, 1])
    # 11 into 4 windows: one of width 2, then three of width 3 (XProf's split)
    assert timeline_rows(in_use, 4).tolist() == [1, 4, 5, 8]
    assert timeline_rows(in_use, 20).tolist() == list(range(11))
    assert timeline_rows(in_use, None).tolist() == list(range(11))


def test_data_type_names():
    assert [data_type_name(c) for c in (0, 1, 14, 19, 101, 999)] == [
        "INVALID", "float", "bfloat16", "half", "float_ref", "unknown dtype enum (999)"]


def test_tensorflow_fixture():
    analysis = analyze_memory_profile(xw.open_profile(DATA / "tf_keras_cpu_slow_map.xplane.pb"))
    summary = analysis.summary()
    assert summary[["memory_id", "num_allocs", "num_deallocs", "peak_bytes"]].values.tolist() == [
        ["mklcpu", 96, 96, 7864320]]
    memory = analysis.allocator("mklcpu")
    assert memory.summary()["peak_step"] == 14  # the last step, train 14
    table = memory.breakdown()
    assert int(table["allocation_bytes"].sum()) == 7864320
    assert isinstance(memory.timeline(), pd.DataFrame) and len(memory.timeline()) == 192


def test_synthetic_allocators(tmp_path):
    from xprof_widgets.synthetic import write_synthetic
    from xprof_widgets.synthetic.allocator import ACTIVATIONS, TEMPS, WEIGHTS, Allocators

    path = write_synthetic(tmp_path / "tpu.xplane.pb", 3000, kind="tpu", devices=2,
                           allocator=True)
    profile = xw.open_profile(path)
    analysis = analyze_memory_profile(profile)
    assert analysis.memory_ids == ["0", "1"]  # index_on_host, as the TPU runtime writes
    memory = analysis.allocator("1")
    snaps = memory.snapshots
    steps = sorted(set(snaps["step"]))
    assert steps == list(range(len(steps)))  # every event inside its step's `train`
    assert len(snaps) == Allocators.event_count(len(steps), 1)
    per_step = snaps.groupby("step")["activity"].value_counts().unstack()
    assert per_step["deallocation"].eq(ACTIVATIONS + TEMPS).all()
    weights = int(Allocators._slot_bytes()[-WEIGHTS:].sum())
    ends = snaps.groupby("step")["heap_allocated_bytes"].last()
    assert ends.eq(weights).all()  # each step frees what it allocated; the weights stay
    assert (snaps["stack_reserved_bytes"] == 1 << 30).all()
    table = memory.breakdown()
    assert int(table["allocation_bytes"].sum()) == memory.summary()["peak_bytes"]
    assert STACK in table["op_name"].tolist()


def test_every_host_of_a_run(make_logdir):
    tf = DATA / "tf_keras_cpu_slow_map.xplane.pb"
    logdir = make_logdir({"2026_01_01_00_00_00": {"a.xplane.pb": tf, "b.xplane.pb": tf}})
    profile = xw.open_profile(logdir)
    analysis = analyze_memory_profile(profile)
    assert list(analysis.allocators) == [("a", "mklcpu"), ("b", "mklcpu")]
    assert analysis.hosts_of("mklcpu") == ["a", "b"]
    b = analysis.allocator("mklcpu", host="b").snapshots
    names = profile.display_names[profile.meta[b["event"].to_numpy()]]
    assert set(names) == {"MemoryAllocation", "MemoryDeallocation"}
    hosts = profile.tracks["host"].to_numpy()[profile.track_of(b["event"].to_numpy())]
    assert set(hosts) == {"b"}  # the ids are the whole profile's, on host b
    one = analyze_memory_profile(xw.open_profile(tf)).allocator().summary()
    assert analysis.allocator("mklcpu", host="b").summary()["peak_bytes"] == one["peak_bytes"]
