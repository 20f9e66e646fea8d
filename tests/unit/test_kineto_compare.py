"""`xw.compare` on two PyTorch traces: the report's Ops tab is the trace diff, with what was
compared, and the summary says it in words (its numbers are HTA's: tests/differential); which
profiler step each event of a small made-up trace belongs to, as HTA assigns it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.compare import COUNT_CHANGES, TRACE_COLUMNS
from xprof_widgets.analysis.kineto.trace_diff import step_events, trace_ops

HTA = Path(__file__).resolve().parents[1] / "data" / "public" / "hta"


@pytest.fixture(scope="module")
def kineto_pair():
    return xw.compare(HTA / "trace_compare" / "base", HTA / "trace_compare" / "test")


def test_the_report_of_two_pytorch_traces_is_their_trace_diff(kineto_pair):
    report = kineto_pair.view._report()
    ops = report["ops"]
    assert ops["kind"] == "trace"
    assert ops["scope"] == {"ranks_before": [1], "steps_before": [1009], "ranks_after": [1],
                            "steps_after": [1009]}
    diff = kineto_pair.trace_diff()
    assert list(diff.columns) == TRACE_COLUMNS
    assert ops["rows"]["name"] == diff["name"].tolist()
    assert set(diff["count_change"]) <= set(COUNT_CHANGES)
    assert "Ops and kernels (rank 1 step 1009 against rank 1 step 1009)" in report["summary"]


def test_a_later_step_and_one_device(kineto_pair):
    gpu = kineto_pair.trace_diff(device="gpu", iteration_before=1010, iteration_after=1010)
    assert set(gpu["device"]) == {"gpu"} and len(gpu)
    with pytest.raises(xw.ProfileError, match=r"no profiler step \[1020\]; steps: \[1009, 1010\]"):
        kineto_pair.trace_diff(iteration_after=1020)
    with pytest.raises(xw.ProfileError, match=r"no rank \[0\]; ranks: \[1\]"):
        kineto_pair.trace_diff(rank_before=0)
    with pytest.raises(ValueError, match="device must be one of all, cpu, gpu"):
        kineto_pair.trace_diff(device="tpu")


def _trace(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0},
                                "traceEvents": events}))
    return path


def _x(name: str, cat: str | None, ts: float, dur: float, tid: int = 1, pid: int = 1,
       **args) -> dict:
    event = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if cat is not None:
        event["cat"] = cat
    if args:
        event["args"] = args
    return event


def test_which_step_each_event_belongs_to(tmp_path):
    events = [
        _x("ProfilerStep#7", "user_annotation", 100, 100),
        _x("ProfilerStep#8", "user_annotation", 200, 100),
        _x("aten::mm", "cpu_op", 150, 10),                    # step 7 by its start
        _x("aten::mm", "cpu_op", 200, 10),                    # step 8: a step's end is open
        _x("aten::mm", "cpu_op", 400, 10),                    # after every step: none
        _x("cudaLaunchKernel", "cuda_runtime", 160, 5, correlation=11),
        _x("cudaLaunchKernel", "cuda_runtime", 260, 5, correlation=12),
        _x("gemm", "kernel", 290, 50, tid=7, pid=0, stream=7, correlation=11),  # launched in 7
        _x("gemm", "kernel", 350, 50, tid=7, pid=0, stream=7, correlation=12),  # launched in 8
        _x("gemm", "kernel", 180, 5, tid=7, pid=0, stream=7, correlation=99),   # no launch
        _x("untyped", None, 150, 10),                         # no category: not counted
        _x("PyTorch Profiler (0)", "Trace", 100, 300),        # the profiler's span: not counted
        _x("aten::add", "cpu_op", 120, 4, stream="x7"),       # not a number: on the CPU
    ]
    profile = xw.open_profile(_trace(tmp_path / "t.json", events))
    found = step_events(profile)
    names = profile.metadata["name"].to_numpy(dtype=object)[profile.meta[found["event"]]]
    got = sorted(zip(names.tolist(), found["iteration"].tolist(),
                     (profile.start_ps[found["event"]] // 10**6).tolist(), strict=True))
    assert got == [("ProfilerStep#7", 7, 0), ("ProfilerStep#8", 8, 100), ("aten::add", 7, 20),
                   ("aten::mm", -1, 300), ("aten::mm", 7, 50), ("aten::mm", 8, 100),
                   ("cudaLaunchKernel", 7, 60), ("cudaLaunchKernel", 8, 160),
                   ("gemm", -1, 80), ("gemm", 7, 190), ("gemm", 8, 250)]
    step7 = trace_ops(profile).set_index("name")
    assert step7["occurrences"].to_dict() == {"ProfilerStep#7": 1, "aten::add": 1,
                                              "aten::mm": 1, "cudaLaunchKernel": 1, "gemm": 1}
    assert step7.loc["gemm", "device"] == "gpu" and step7.loc["gemm", "time_us"] == 50.0
    both = trace_ops(profile, iteration=[7, 8], device="cpu").set_index("name")
    assert both.loc["aten::mm", "occurrences"] == 2 and "gemm" not in both.index


def test_a_gpu_side_step_annotation_wins_over_the_cpu_step(tmp_path):
    # Kineto writes CPU events first: where a GPU ProfilerStep annotation also holds a CPU
    # event's start, HTA's last match is the GPU one
    events = [
        _x("ProfilerStep#1", "user_annotation", 0, 100),
        _x("ProfilerStep#2", "user_annotation", 100, 100),
        _x("aten::mm", "cpu_op", 120, 10),
        _x("ProfilerStep#1", "gpu_user_annotation", 50, 100, tid=7, pid=0, stream=7),
    ]
    profile = xw.open_profile(_trace(tmp_path / "t.json", events))
    assert trace_ops(profile, iteration=1)["name"].tolist() == [
        "ProfilerStep#1", "ProfilerStep#2", "aten::mm"]  # as HTA 0.5 counts them
    empty = trace_ops(profile, iteration=2)  # a step HTA lists although nothing falls in it
    assert list(empty.columns) == ["name", "device", "occurrences", "time_us"] and not len(empty)
