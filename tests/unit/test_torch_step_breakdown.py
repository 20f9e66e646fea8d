"""The PyTorch TensorBoard plugin's step breakdown and GPU figures (analysis/kineto/step_breakdown.py)
on synthetic Kineto traces whose answers are worked out by hand below; the live comparison with
the plugin on real traces is tests/differential/test_torch_plugin_overview.py.

GPU trace, times in us: ProfilerStep#1 over [0, 100); a DataLoader `__next__` [0, 8); aten::mm
[10, 40) launching (cudaLaunchKernel [20, 25)) a GEMM that runs [30, 60) (0.5 blocks per SM,
occupancy 40%) and a copy (cudaMemcpyAsync [45, 48)) running [50, 70); aten::add [60, 90)
launching (cudaLaunchKernel [62, 64)) a DeepEP dispatch running [80, 110) (2 blocks per SM,
occupancy 20%). The step is stretched to the last GPU work it launched: [0, 110). Then:
Kernel [30, 60) = 30; Memcpy [60, 70) = 10; Communication [80, 110) = 30 (the plugin: Kernel,
as no host `nccl:` op launched it); Runtime [20, 25) = 5 (the other calls lie under GPU work);
DataLoader [0, 8) = 8; CPU Exec [10, 20) + [25, 30) + [70, 80) = 25; Other [8, 10) = 2.
GPU utilization 60 / 110; SM efficiency (0.5 * 30 + min(2, 1) * 30) / 110; occupancy
(40 * 30 + 20 * 30) / 60 = 30%.
"""

from __future__ import annotations

import gzip
import json

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.kineto.overview import plugin_breakdown
from xprof_widgets.analysis.kineto.step_breakdown import PART_COLUMNS, torch_step_breakdown
from xprof_widgets.analysis.overview import overview

HOST, GPU = 1, 0
NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _write(tmp_path, events) -> str:
    meta = [{"ph": "M", "name": "process_name", "pid": HOST, "args": {"name": "python"}},
            {"ph": "M", "name": "process_name", "pid": GPU, "args": {"name": "GPU 0"}}]
    path = tmp_path / "run.pt.trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": meta + events}, f)
    return str(path)


def _host(cat, name, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": HOST, "tid": HOST, "ts": ts, "dur": dur,
            "args": args}


def _gpu(cat, name, ts, dur, corr, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": GPU, "tid": 7, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "stream": 7, "device": 0, **args}}


GPU_TRACE = [
    _host("user_annotation", "ProfilerStep#1", 0, 100), _host("user_annotation", NEXT, 0, 8),
    _host("cpu_op", "aten::mm", 10, 30), _host("cuda_runtime", "cudaLaunchKernel", 20, 5,
                                                correlation=1),
    _host("cuda_runtime", "cudaMemcpyAsync", 45, 3, correlation=2),
    _host("cpu_op", "aten::add", 60, 30), _host("cuda_runtime", "cudaLaunchKernel", 62, 2,
                                                 correlation=3),
    _gpu("kernel", "gemm", 30, 30, 1, **{"blocks per SM": 0.5, "est. achieved occupancy %": 40}),
    _gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 50, 20, 2),
    _gpu("kernel", "dpsk::ep::dispatch", 80, 30, 3,
         **{"blocks per SM": 2.0, "est. achieved occupancy %": 20}),
]


def test_each_instant_goes_to_the_first_category_that_covers_it(tmp_path):
    result = torch_step_breakdown(xw.open_profile(_write(tmp_path, GPU_TRACE)))
    row = result.steps.iloc[0]
    assert (row["step"], row["start_us"], row["duration_us"]) == ("1", 0.0, 110.0)
    assert row[PART_COLUMNS].tolist() == [30.0, 10.0, 0.0, 30.0, 5.0, 8.0, 25.0, 2.0]
    assert result.average()[["duration_us", *PART_COLUMNS]].iloc[0].tolist() == \
        [110.0, 30.0, 10.0, 0.0, 30.0, 5.0, 8.0, 25.0, 2.0]
    assert result.to_dataframe()["step"].tolist() == ["1", "average"]


def test_gpu_figures(tmp_path):
    gpu = torch_step_breakdown(xw.open_profile(_write(tmp_path, GPU_TRACE))).gpu
    assert gpu["device"].tolist() == [0]
    assert gpu["gpu_utilization"].iat[0] == pytest.approx(60 / 110)
    assert gpu["est_sm_efficiency"].iat[0] == pytest.approx(45 / 110)
    assert gpu["est_achieved_occupancy_pct"].iat[0] == pytest.approx(30.0)


def test_estimates_are_unknown_where_no_kernel_states_them(tmp_path):
    plain = [e if e.get("cat") != "kernel" else {**e, "args": {
        k: v for k, v in e["args"].items() if k in ("correlation", "stream", "device")}}
        for e in GPU_TRACE]
    gpu = torch_step_breakdown(xw.open_profile(_write(tmp_path, plain))).gpu
    assert gpu["gpu_utilization"].iat[0] == pytest.approx(60 / 110)
    assert gpu["est_sm_efficiency"].isna().all() and gpu["est_achieved_occupancy_pct"].isna().all()


def test_a_cpu_only_trace_has_the_host_parts_only(tmp_path):
    path = _write(tmp_path, [_host("user_annotation", "ProfilerStep#4", 0, 100),
                             _host("cpu_op", "aten::add", 10, 20),
                             _host("user_annotation", NEXT, 40, 20)])
    result = torch_step_breakdown(xw.open_profile(path))
    assert result.steps[["dataloader_us", "cpu_exec_us", "other_us"]].iloc[0].tolist() == \
        [20.0, 20.0, 60.0]
    assert result.gpu.empty and not result.has_gpu
    shown = plugin_breakdown(xw.open_profile(path))
    assert [p["label"] for p in shown["parts"]] == ["DataLoader", "CPU Exec", "Other"]
    assert shown["gpu"] == []


def test_the_overview_carries_it_for_pytorch_only(tmp_path, tpu_path):
    data = overview(xw.open_profile(_write(tmp_path, GPU_TRACE))).to_dict()
    assert [p["label"] for p in data["torch"]["parts"]] == [
        "Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec",
        "Other"]
    assert data["torch"]["gpu"][0]["est_achieved_occupancy_pct"] == pytest.approx(30.0)
    assert overview(xw.open_profile(tpu_path)).torch is None


def test_the_widget_has_a_pandas_face(tmp_path):
    widget = xw.Overview(_write(tmp_path, GPU_TRACE))
    table = widget.torch_step_breakdown()
    assert table["step"].tolist() == ["1", "average"]
    assert table["communication_us"].tolist() == [30.0, 30.0]
    assert widget.torch_gpu_metrics()["device"].tolist() == [0]
