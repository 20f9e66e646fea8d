"""Conformance on the public corpus (tests/data/public): profiles real programs wrote elsewhere.

Every file opens, or is refused with a ProfileError that names the file and says what it is;
what opens has the rows a brute-force recount of the file itself finds; every tool of the
registry, and the suite, answers it with data or with a ProfileError saying why it has none.
Nothing else may be raised.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixture_files import CHROME
from recount import brute_depths, our_rows, recount_chrome, recount_xspace, shuffled_chrome

import xprof_widgets as xw
from xprof_widgets.analysis.kineto.operators import has_operators
from xprof_widgets.tools import TOOLS
from xprof_widgets.widgets.profiler import Profiler

PUBLIC = Path(__file__).parents[1] / "data" / "public"
ANSWERS = {"README.md", "result_check_file.txt"}
"""Not profiles: the corpus's notes, and torch-tb-profiler's kept answers for its ResNet50 run."""
FILES = sorted(p for p in PUBLIC.rglob("*") if p.is_file() and p.name not in ANSWERS)
NOT_TRACES = {
    "hta/execution_trace/benchmark_simple_add_et.json.gz": "execution trace",
    "hta/memory_analysis/memory_timeline.raw.gz": "memory timeline",
}
TRACES = [p for p in FILES if str(p.relative_to(PUBLIC)) not in NOT_TRACES]
SMALL_CHROME = [p for p in TRACES if p.stat().st_size < 200_000 and ".json" in p.name]
"""Chrome traces small enough to decode a shuffled copy of in a few seconds (test_invariants.py
shuffles the xplanes' planes and lines)."""


def ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(PUBLIC)) for p in paths]


@lru_cache(maxsize=4)
def opened(path: Path) -> xw.Profile:
    return xw.open_profile(path)


def test_the_corpus_is_all_here():
    """The README lists every folder, and every folder holds profiles: a file that went missing
    would quietly shrink every test below."""
    readme = (PUBLIC / "README.md").read_text()
    assert len(FILES) >= 33
    for top in {p.relative_to(PUBLIC).parts[0] for p in FILES}:
        assert f"`{top}/" in readme


@pytest.mark.parametrize("name", sorted(NOT_TRACES))
def test_what_is_not_a_trace_is_refused_by_name(name):
    path = PUBLIC / name
    with pytest.raises(xw.ProfileError) as refused:
        xw.open_profile(path)
    message = str(refused.value)
    assert str(path) in message
    assert NOT_TRACES[name] in message
    assert "not a" in message


@pytest.mark.parametrize("path", TRACES, ids=ids(TRACES))
def test_rows_equal_a_brute_force_recount(path):
    """Per row: the same events, starts exact to the picosecond on the file's own clock,
    durations and nesting depths; rows made only of derived events are XProf's (parity tests)."""
    profile = opened(path)
    data = path.read_bytes()
    recount = recount_xspace(data) if path.name.endswith(".xplane.pb") else recount_chrome(data)
    ours = {key: events for key, events in our_rows(profile).items()
            if not all(derived for *_, derived in events)}
    assert set(ours) == {key for key, events in recount.items() if events}
    origin = int(profile.origin_ps)
    for key, events in ours.items():
        derived = [(s, d) for s, d, _, made in events if made]
        expected = brute_depths([(s - origin, d) for s, d in recount[key]] + derived)
        assert [e[:3] for e in events] == expected, key


@pytest.mark.parametrize("path", SMALL_CHROME, ids=ids(SMALL_CHROME))
def test_event_order_in_the_file_changes_nothing(path, tmp_path):
    moved = tmp_path / path.name
    moved.write_bytes(shuffled_chrome(path.read_bytes(), random.Random(path.name)))
    assert our_rows(opened(path)) == our_rows(xw.open_profile(moved))


def answer(tool_name: str, widget) -> object:
    """What the tool's view shows, through its public face."""
    if tool_name == "TraceViewer":
        profile = widget.profile
        window = widget.window_data(0.0, profile.duration_us, 1600)
        assert len(window["slices"]) + len(window["counters"]) > 0
        return widget.events()
    if tool_name == "Overview":
        return widget.data.to_dict()
    return widget.to_dataframe()


@pytest.mark.parametrize("path", TRACES, ids=ids(TRACES))
def test_every_tool_answers_or_says_why_not(path):
    profile = opened(path)
    answered = []
    for entry in TOOLS:
        try:
            widget = getattr(xw, entry.name)(profile)
            result = answer(entry.name, widget)
        except xw.ProfileError as refused:
            assert str(profile.source) in str(refused) or str(path) in str(refused), entry.key
            continue
        assert isinstance(result, (pd.DataFrame, dict)), entry.key
        answered.append(entry.key)
    assert "trace" in answered and "overview" in answered


@pytest.mark.parametrize("path", TRACES, ids=ids(TRACES))
def test_the_suite_makes_every_tab_without_a_failure(path):
    profile = opened(path)
    suite = Profiler(profile)
    try:
        for key in suite.tab_keys:
            suite.tool(key)
        failures = [w for w in profile.warnings if "failed on this profile" in w
                    or "could not tell whether" in w]
        assert failures == []
    finally:
        suite.close()


# Issue 30 on every real GPU trace: what PyTorch users check first reads sensibly. Each check is
# recounted from the file itself or bounded by a definition, not by our own code's answer.
CHROME_TRACES = [p for p in TRACES if ".json" in p.name]
GPU_XSPACES = [p for p in TRACES if p.name.endswith(".xplane.pb") and "tpu" not in str(p)]
LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}
SURELY_TENSOR_CORES = re.compile(r"tensorop|wgmma|hmma|s1688|h884|_MI\d+x\d+x")
"""Kernel names that can only mean MMA instructions (CUTLASS tensorop, Hopper wgmma, PTX hmma,
cuBLAS's 1688/884 tile shapes, AMD MFMA tiles)."""
NOT_PYTORCH_WORDS = ("tf.data", "grain", "TensorFlow", "XLA", "TPU", "tf.function")
EPS_US = 1e-3  # 1 ns


def kineto_events(path: Path) -> list[dict]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = json.loads(data)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


@pytest.mark.parametrize("path", CHROME_TRACES, ids=ids(CHROME_TRACES))
def test_pytorch_numbers_read_sensibly(path):
    """Self time within total time (operators and XProf's table), device shares within 100% of
    the GPU (however many streams overlap), every kernel whose launch call is in the file has an
    owner, Tensor Core use is yes/no/unknown and yes where the name can only mean MMA, and the
    advice speaks PyTorch, not TensorFlow or XLA."""
    profile = opened(path)
    stats = xw.FrameworkOpStats(profile)
    table = stats.to_dataframe()
    assert (table["total_self_time_us"] <= table["total_time_us"] + EPS_US).all()
    for side in ("device", "host"):
        shares = table.loc[table["host_or_device"].str.lower() == side,
                           f"{side}_total_self_time_pct"]
        assert ((shares >= 0) & (shares <= 100 + 1e-9)).all(), side
        assert shares.sum() <= 100 + 1e-6 * len(shares), side
    if has_operators(profile):
        ops = stats.to_dataframe(group_by="op")
        assert (ops["host_self_time_us"] <= ops["host_total_time_us"] + EPS_US).all()
        assert (ops["device_self_time_us"] <= ops["device_total_time_us"] + EPS_US).all()

    events = [e for e in kineto_events(path) if isinstance(e, dict) and e.get("ph") == "X"]
    kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel")]
    if kernels:
        launched = {e["args"]["correlation"] for e in events
                    if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {})}
        orphans = sum(e.get("args", {}).get("correlation") not in launched for e in kernels)
        rows = xw.KernelStats(profile).to_dataframe()
        assert rows.loc[rows["op_name"] == "", "occurrences"].sum() <= orphans
        use = rows["is_kernel_using_tensor_core"]
        assert use.map(lambda v: v is None or isinstance(v, (bool, np.bool_))).all()
        surely = rows["kernel_name"].str.contains(SURELY_TENSOR_CORES)
        said_yes = use.map(lambda v: v is not None and bool(v))
        assert said_yes[surely].all(), rows.loc[surely & ~said_yes, "kernel_name"].tolist()

    advice = " ".join([r["text"] for r in xw.Overview(profile).data.recommendations]
                      + [xw.InputPipeline(profile).recommendation()])
    assert not [w for w in NOT_PYTORCH_WORDS if w in advice], advice


@pytest.mark.parametrize("path", GPU_XSPACES, ids=ids(GPU_XSPACES))
def test_device_shares_of_gpu_xspaces_stay_within_the_gpu(path):
    table = xw.FrameworkOpStats(opened(path)).to_dataframe()
    assert (table["total_self_time_us"] <= table["total_time_us"] + EPS_US).all()
    shares = table.loc[table["host_or_device"] == "Device", "device_total_self_time_pct"]
    assert ((shares >= 0) & (shares <= 100 + 1e-9)).all() and shares.sum() <= 100 + 1e-6 * len(shares)


MEMORY_TRACES = [*CHROME_TRACES, *(p for p in CHROME if "torch" in p.name or "torch" in p.parent.name)]
"""Besides the public traces, the PyTorch fixtures made here (the no-Addr one among them)."""


@pytest.mark.parametrize("path", MEMORY_TRACES, ids=[p.name if p.parent.name == "data" else
                                                     f"{p.parent.name}/{p.name}" for p in MEMORY_TRACES])
def test_pytorch_memory_pairs_allocations_sanely(path):
    """Where a trace has [memory] events: each free is paired at most once, with an allocation of
    its size made before it; the curve never goes below 0; the peak's table (live allocations plus
    what predates the trace, never negative) sums to the peak."""
    profile = opened(path)
    if b"[memory]" not in (gzip.decompress(path.read_bytes()) if path.suffix == ".gz"
                           else path.read_bytes()):
        pytest.skip("no [memory] events (recorded without profile_memory=True)")
    memory = xw.MemoryProfile(profile)
    for row in memory.summary().itertuples():
        timeline = memory.timeline(row.memory_id)
        assert (timeline["heap_allocated_bytes"] >= 0).all(), row.memory_id
        frees = timeline[timeline["activity"] != "allocation"]
        paired = frees.loc[frees["paired_event"] >= 0]
        assert paired["paired_event"].is_unique, row.memory_id
        made = timeline.set_index("event").loc[paired["paired_event"]]
        assert (made["activity"] == "allocation").all()
        assert (made["allocation_bytes"].to_numpy() == paired["allocation_bytes"].to_numpy()).all()
        assert (made["time_us"].to_numpy() <= paired["time_us"].to_numpy()).all()
        table = memory.breakdown(row.memory_id)
        assert (table["allocation_bytes"] >= 0).all()
        assert int((table["allocation_bytes"] * table["occurrences"]).sum()) == row.peak_heap_bytes
        assert row.live_allocations <= row.num_allocs
