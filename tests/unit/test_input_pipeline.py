"""Input pipeline analysis on hand-built profiles whose every microsecond is known."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.analysis import input_events
from xprof_widgets.analysis import input_pipeline as ip
from xprof_widgets.analysis.input_pipeline import (
    ADVANCED,
    DEFAULT_INPUT_PATTERN,
    DEMANDED,
    ENQUEUE,
    HOST_CATEGORIES,
    OP_COLUMNS,
    OTHER_INPUT,
    PREPROCESSING,
    STEP_COLUMNS,
    STEP_PARTS,
    InputPipelineAnalysis,
    analyze_input_pipeline,
)

US = 1_000_000
STEPS = 3


def open_space(tmp_path, planes):
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(build_xspace(planes))
    return xw.open_profile(path)


def ev(name, start_us, dur_us, **stats):
    return (name, int(start_us * US), int(dur_us * US), stats)


def cpu_profile(tmp_path):
    """Steps of 100 us every 120 us. In each: load_batch 5-45 (decode 30-40 inside, and the
    Python frame of the function it annotates), DevicePut 46-48, XLA ops 20-30 and 50-90 on a
    worker thread; a prefetch thread reads 0-60 off the stepping thread. Between steps the loop's
    loader runs (its `__next__` frame, 15-5 us before each step but the first)."""
    python, xla, prefetch = [], [], []
    for k in range(STEPS):
        t = 120 * k
        python += [ev("train", t, 100, _r=1, step_num=k), ev("load_batch", t + 5, 40),
                   ev("decode", t + 30, 10), ev("DevicePut", t + 46, 2),
                   ev("Handle inputs", t + 46.5, 1), ev("$demo.py:1 load", t + 6, 38)]
        if k:
            python.append(ev("$loop.py:3 __next__", t - 15, 10))
        xla += [ev("fusion.1", t + 20, 10, hlo_op="fusion.1"),
                ev("dot.2", t + 50, 40, hlo_op="dot.2"), ev("ThreadpoolListener", t + 95, 1)]
        prefetch += [ev("read_shard", t, 60)]
    return open_space(tmp_path, [{"name": "/host:CPU", "lines": [
        {"name": "python", "events": python}, {"name": "tf_XLAEigen/1", "events": xla},
        {"name": "prefetch_thread", "events": prefetch}]}])


def test_cpu_step_breakdown_gives_each_instant_to_one_part(tmp_path):
    result = analyze_input_pipeline(cpu_profile(tmp_path))
    steps = result.steps
    assert list(steps.columns) == STEP_COLUMNS
    assert steps["step"].tolist() == list(range(STEPS))
    first, row = steps.iloc[0], steps.iloc[1]
    assert (first["start_us"], first["duration_us"], first["before_step_us"]) == (0, 100, 0)
    # A host step's period starts where the step before it ended: 100-220 us for step 1.
    assert row["start_us"] == pytest.approx(100)
    assert row["duration_us"] == pytest.approx(120)
    assert row["before_step_us"] == pytest.approx(20)
    assert row["host_to_device_us"] == pytest.approx(2)
    # load_batch covers 5-45 (the XLA op at 20-30 inside it too: input first, as XProf
    # ranks waiting for input above host compute); the loader's 10 us before the marker.
    assert row["input_us"] == pytest.approx(40 + 10)
    assert row["input_before_step_us"] == pytest.approx(10)
    # No device: the XLA ops the host's threads run are host compute (50-90).
    assert row["compute_us"] == row["device_to_device_us"] == 0
    assert row["host_compute_us"] == pytest.approx(40)
    assert row["other_us"] == pytest.approx(120 - 2 - 50 - 40)
    assert row["input_share"] == pytest.approx(52 / 120)
    assert np.allclose(steps[list(STEP_PARTS)].sum(axis=1), steps["duration_us"])
    assert result.input_share == pytest.approx((42 + 52 + 52) / 340)
    assert result.verdict == "HIGHLY"
    assert row["device"] == "/host:CPU"


def test_cpu_input_ops_with_self_time_and_categories(tmp_path):
    ops = analyze_input_pipeline(cpu_profile(tmp_path)).input_ops
    assert list(ops.columns) == OP_COLUMNS
    by_name = ops.set_index("input_op")
    # The frame under load_batch is its annotation's work, not an op of its own.
    assert set(by_name.index) == {"load_batch", "decode", "DevicePut", "read_shard",
                                  "$loop.py:3 __next__"}
    assert by_name.loc["read_shard", "category"] == ADVANCED  # read ahead, on another thread
    assert by_name.loc["load_batch", "category"] == DEMANDED  # read on the stepping thread
    assert by_name.loc["decode", "category"] == PREPROCESSING
    assert by_name.loc["DevicePut", "category"] == ENQUEUE
    assert by_name.loc["$loop.py:3 __next__", "category"] == OTHER_INPUT
    assert by_name.loc["$loop.py:3 __next__", "count"] == STEPS - 1
    assert by_name.loc["load_batch", "count"] == STEPS
    assert by_name.loc["load_batch", "total_time_ms"] == pytest.approx(STEPS * 0.040)
    assert by_name.loc["load_batch", "self_time_ms"] == pytest.approx(STEPS * 0.030)
    assert by_name.loc["decode", "self_time_ms"] == pytest.approx(STEPS * 0.010)
    total_self = STEPS * (60 + 30 + 10 + 2) + (STEPS - 1) * 10
    assert by_name.loc["read_shard", "self_time_pct"] == pytest.approx(100 * 60 * STEPS / total_self)
    assert ops["self_time_pct"].sum() == pytest.approx(100)
    assert ops["self_time_ms"].is_monotonic_decreasing


def test_host_breakdown_and_recommendation_name_the_largest_cost(tmp_path):
    result = analyze_input_pipeline(cpu_profile(tmp_path))
    breakdown = result.host_breakdown
    assert list(breakdown.index) == list(HOST_CATEGORIES)
    assert breakdown[ADVANCED] == pytest.approx(STEPS * 0.060)
    assert breakdown[OTHER_INPUT] == pytest.approx((STEPS - 1) * 0.010)
    assert result.largest_host_cost() == (ADVANCED, pytest.approx(180 / 326), "read_shard")
    text = result.recommendation()
    assert "HIGHLY input-bound" in text and "42.9%" in text  # (42 + 52 + 52) / 340
    assert "Advanced file read" in text and "read_shard" in text


def test_stats_of_step_time(tmp_path):
    stats = analyze_input_pipeline(cpu_profile(tmp_path)).step_time_stats()
    ms = np.array([0.100, 0.120, 0.120])
    assert stats["avg_ms"] == pytest.approx(ms.mean())
    assert stats["std_ms"] == pytest.approx(ms.std(ddof=1))
    assert (stats["min_ms"], stats["max_ms"]) == (pytest.approx(0.1), pytest.approx(0.12))


def tpu_profile(tmp_path):
    """One chip, steps of 100 us: infeed 0-20, fusion 20-70, all-reduce 70-80, outfeed 80-85,
    a host-to-device copy 90-95; the host waits in IteratorGetNext 0-25."""
    steps, ops, host = [], [], []
    for k in range(STEPS):
        t = 200 * k
        steps.append(ev(str(k), t, 100, group_id=k))
        ops += [ev("infeed.1", t, 20), ev("fusion.2", t + 20, 50), ev("all-reduce.3", t + 70, 10),
                ev("outfeed.4", t + 80, 5), ev("copy-start", t + 90, 5)]
        host += [ev("IteratorGetNext", t, 25), ev("Iterator::Root::Prefetch", t + 1, 20)]
    categories = {"infeed.1": "infeed", "fusion.2": "convolution fusion",
                  "all-reduce.3": "all-reduce", "outfeed.4": "outfeed",
                  "copy-start": "host to device"}
    return open_space(tmp_path, [
        {"name": "/device:TPU:0",
         "metadata": {n: {"display_name": n, "stats": {"hlo_category": c}}
                      for n, c in categories.items()},
         "lines": [{"name": "Steps", "events": steps}, {"name": "XLA Ops", "events": ops}]},
        {"name": "/host:CPU", "lines": [{"name": "tf_Compute", "events": host}]}])


def test_device_step_breakdown(tmp_path):
    result = analyze_input_pipeline(tpu_profile(tmp_path))
    assert result.step_markers.source == "device Steps line"
    row = result.steps.iloc[0]
    assert row["device"] == "/device:TPU:0"
    assert row["compute_us"] == pytest.approx(50)
    assert row["collectives_us"] == pytest.approx(10)  # the all-reduce
    assert row["device_to_device_us"] == 0
    assert row["host_to_device_us"] == pytest.approx(5)
    # infeed 0-20, and the host's wait in IteratorGetNext up to 25 (20-25 is not compute yet).
    assert row["input_us"] == pytest.approx(20)
    assert row["output_us"] == pytest.approx(5)  # the outfeed
    assert row["other_us"] == pytest.approx(10)
    assert row["input_share"] == pytest.approx(0.25)
    assert result.input_ops["input_op"].tolist() == ["Iterator::Root::Prefetch"]
    assert result.input_ops["category"].tolist() == [PREPROCESSING]


@pytest.mark.parametrize("name, category", [
    ("Iterator::Root::Prefetch::ParallelMapV2::TFRecord", ADVANCED),
    ("Iterator::Root::Interleave::TextLine", ADVANCED),
    ("Iterator::Root::Map::TFRecord", DEMANDED),
    ("Iterator::Root::FixedLengthRecord", DEMANDED),
    ("Iterator::Root::Batch", PREPROCESSING),
    ("Iterator::Root", PREPROCESSING),
])
def test_tf_data_categories_follow_xprof(name, category):
    assert input_events._tfdata_category(name) == category


@pytest.mark.parametrize("name", [
    "input_pipeline", "load_batch", "preprocess_batch", "data_loader", "dataloader", "next_batch",
    "get_batch", "read", "prefetch_to_device", "batch", "inputs", "tokenize", "data.load",
    "Load_Batch", "NextBatch", "_load_batch", "__next__", "DataLoader.__next__",
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
])
def test_default_pattern_matches_input_annotations(name):
    assert re.search(DEFAULT_INPUT_PATTERN, name)


@pytest.mark.parametrize("name", [
    "LoadProgram", "ReadSyncFlag", "Handle inputs", "batchnorm_expander", "train",
    "optimize_input_output_buffer_alias", "AllocateOutputBuffersWithInputReuse",
    "$demo.py:42 _load_batch", "loads", "dataflow", "update_data", "reload", "ReadVariableOp",
])
def test_default_pattern_leaves_runtime_events_alone(name):
    assert not re.search(DEFAULT_INPUT_PATTERN, name)


def test_custom_input_pattern(tmp_path):
    profile = cpu_profile(tmp_path)
    result = analyze_input_pipeline(profile, input_pattern=r"^decode$")
    assert set(result.input_ops["input_op"]) == {"decode", "DevicePut"}
    assert result.steps["input_us"].iloc[0] == pytest.approx(10)  # decode: 30-40
    assert result.input_pattern == r"^decode$"


def test_tensorflow_op_names_show_without_their_type(tmp_path):
    host = [ev("infeed_queue/enqueue:InfeedEnqueueTuple", 0, 5),
            ev("IteratorGetNext:IteratorGetNext", 10, 5)]
    result = analyze_input_pipeline(open_space(tmp_path, [
        {"name": "/host:CPU", "lines": [{"name": "tf_Compute", "events": host}]}]))
    assert result.input_ops["input_op"].tolist() == ["infeed_queue/enqueue"]
    assert result.input_ops["category"].tolist() == [ENQUEUE]


def test_tensorflow_gpu_hand_offs_are_not_transfers(tmp_path):
    """TF's host `MemcpyH2D` and `_Send` ops only hand tensors to the GPU stream (whose copies
    are the transfer); XProf counts host `MemcpyHToD` and infeed enqueues only."""
    host = [ev("train", 0, 100, _r=1, step_num=0),
            ev("dense/MatMul/MemcpyH2D:MemcpyH2D", 10, 20),
            ev("edge_3_dense/_Send:_Send", 40, 20), ev("x/MemcpyHToD:MemcpyHToD", 70, 5)]
    result = analyze_input_pipeline(open_space(tmp_path, [
        {"name": "/host:CPU", "lines": [{"name": "python", "events": host}]}]))
    assert result.input_ops["input_op"].tolist() == ["x/MemcpyHToD"]
    assert result.steps["host_to_device_us"].tolist() == [pytest.approx(5)]


def test_no_steps_still_shows_host_input_ops(tpu_path):
    result = analyze_input_pipeline(xw.open_profile(tpu_path))
    assert result.steps.empty and list(result.steps.columns) == STEP_COLUMNS
    assert result.verdict is None and np.isnan(result.input_share)
    assert result.input_ops["input_op"].tolist() == ["DevicePut"]
    message = result.no_steps_message()
    assert "No training steps found" in message
    assert "jax.profiler.StepTraceAnnotation" in message and "`_r`=1" in message
    assert "No steps were found" in result.recommendation()


def test_no_input_ops_at_all(tmp_path):
    steps = [ev("train", 100 * k, 50, _r=1, step_num=k) for k in range(3)]
    work = [ev("matmul", 100 * k + 10, 20) for k in range(3)]  # XProf counts steps that compute
    profile = open_space(tmp_path, [{"name": "/host:CPU", "lines": [{"name": "python",
                                                                     "events": steps + work}]}])
    result = analyze_input_pipeline(profile)
    assert result.input_ops.empty and list(result.input_ops.columns) == OP_COLUMNS
    assert result.host_breakdown.sum() == 0
    assert result.largest_host_cost() is None
    assert result.verdict == "NOT"
    assert "No input operations were found" in result.recommendation()


def fake(shares: list[float]) -> InputPipelineAnalysis:
    steps = pd.DataFrame({"duration_us": 100.0, "input_us": [100 * s for s in shares],
                          "host_to_device_us": 0.0, "input_share": shares})
    return InputPipelineAnalysis(steps, pd.DataFrame(columns=OP_COLUMNS),
                                 pd.Series(0.0, index=list(HOST_CATEGORIES)), None, "")


@pytest.mark.parametrize("shares, verdict", [
    ([0.2, 0.2], "HIGHLY"), ([0.3, 0.1], "HIGHLY"), ([0.05], "MODERATELY"),
    ([0.1, 0.0], "MODERATELY"), ([0.0499], "NOT"), ([0.0], "NOT"),
])
def test_verdict_thresholds(shares, verdict):
    assert fake(shares).verdict == verdict


intervals = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(intervals, st.lists(st.tuples(st.integers(0, 80), st.integers(0, 30)), min_size=1,
                           max_size=5))
def test_interval_union_measure_matches_counting(spans, windows):
    start = np.array([s for s, _ in spans], np.int64)
    end = start + np.array([d for _, d in spans], np.int64)
    merged = input_events._merge(start, end)
    w_start = np.array([s for s, _ in windows], np.int64)
    w_end = w_start + np.array([d for _, d in windows], np.int64)
    got = input_events._measure(*merged, w_start, w_end)
    covered = np.zeros(200, bool)
    for a, b in zip(start, end, strict=True):
        covered[a:b] = True
    expected = [covered[a:b].sum() for a, b in zip(w_start, w_end, strict=True)]
    assert got.tolist() == expected


def test_host_steps_on_several_gpus_average_the_chips(tmp_path):
    """JAX on GPUs: steps from the host; each chip is measured over the host's step."""
    python, gpu0, gpu1 = [], [], []
    for k in range(STEPS):
        t = 200 * k
        python += [ev("train", t, 100, _r=1, step_num=k), ev("load_batch", t, 10),
                   ev("cudaLaunchKernel", t + 92, 3, correlation_id=k)]
        gpu0 += [ev("sgemm", t + 10, 50), ev("ncclAllReduce", t + 60, 10)]
        gpu1 += [ev("sgemm", t + 10, 30), ev("MemcpyH2D", t + 45, 5)]
    result = analyze_input_pipeline(open_space(tmp_path, [
        {"name": "/device:GPU:0", "lines": [{"name": "Stream #1", "events": gpu0}]},
        {"name": "/device:GPU:1", "lines": [{"name": "Stream #1", "events": gpu1}]},
        {"name": "/host:CPU", "lines": [{"name": "python", "events": python}]}]))
    row = result.steps.iloc[0]
    assert row["duration_us"] == pytest.approx(100)
    assert row["compute_us"] == pytest.approx((50 + 30) / 2)
    assert row["collectives_us"] == pytest.approx(10 / 2)  # the NCCL all-reduce
    assert row["host_to_device_us"] == pytest.approx(5 / 2)
    assert row["input_us"] == pytest.approx(10)
    assert row["kernel_launch_us"] == pytest.approx(3)  # while both GPUs idle
    assert row["other_us"] == pytest.approx(100 - 40 - 5 - 2.5 - 10 - 3)


DATA = Path(__file__).parent.parent / "data"
ANNOTATIONS = {"jax.profiler.TraceAnnotation", "tf.profiler.experimental.Trace",
               "torch.profiler.record_function"}


def test_a_pytorch_trace_is_told_to_annotate_with_record_function_and_look_at_kernels():
    profile = xw.open_profile(DATA / "public/hta/nccl_parser_config/nccl_data.json.gz")
    analysis = ip.analyze_input_pipeline(profile)
    assert analysis.largest_host_cost() is None and analysis.verdict == ip.NOT
    text = analysis.recommendation()
    assert "torch.profiler.record_function" in text and "Kernel Stats" in text
    assert not any(other in text for other in ANNOTATIONS - {"torch.profiler.record_function"})
    assert "Op Profile" not in text


@pytest.mark.parametrize(("fixture", "expected"), [
    ("tf_keras_cpu_fast.xplane.pb", "tf.profiler.experimental.Trace"),
    ("jax_cpu_demo.xplane.pb", "jax.profiler.TraceAnnotation"),
    ("torch_hta/rank-0.json.gz", "torch.profiler.record_function"),
])
def test_each_framework_is_advised_its_own_annotation(fixture, expected):
    analysis = ip.analyze_input_pipeline(xw.open_profile(DATA / fixture))
    assert ip.annotation(analysis.framework) == expected
