"""The overview summarizes the other analyses and says why when a part is missing."""

from __future__ import annotations

import json

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.overview import overview
from xprof_widgets.widgets._base import jsonable


def test_a_tpu_profile_has_device_ops_and_steps(tpu_path):
    data = overview(xw.open_profile(tpu_path.parent / "synthetic_tpu.xplane.pb"))
    assert data.run["device_type"] == "TPU v6 Lite" and data.run["devices"] == 4
    assert data.steps["count"] > 10
    assert data.step_breakdown["share_of_step_time"].sum() == pytest.approx(1.0, abs=0.02)
    assert len(data.top_ops) == 10
    assert data.top_ops["time_us"].is_monotonic_decreasing
    assert 0 < data.run["flops_utilization"] <= 1
    assert any("input" in r["text"] for r in data.recommendations)
    assert data.recommendations[0]["tool"] == "input"
    assert {r["tool"] for r in data.recommendations[1:]} == {"op"}


def test_the_demo_profile_finds_its_input_bound_steps(tpu_path):
    data = overview(xw.open_profile(tpu_path.parent / "jax_cpu_demo.xplane.pb"))
    assert data.run["device_type"] == "CPU"
    assert data.steps["count"] == 6  # 8 found; XProf's rule leaves out the first and last
    assert data.steps["verdict"] == "HIGHLY"
    assert jsonable(data.run)["flops_utilization"] is None  # no CPU peak: no made-up number


def test_a_profile_without_steps_says_how_to_mark_them(tpu_path):
    data = overview(xw.open_profile(tpu_path))
    assert data.steps is None
    assert any("StepTraceAnnotation" in note for note in data.notes)


def test_the_overview_is_json_for_the_view(tpu_path):
    data = overview(xw.open_profile(tpu_path.parent / "synthetic_gpu.xplane.pb"))
    content = jsonable(data.to_dict())
    assert json.loads(json.dumps(content, allow_nan=False)) == content  # plain JSON values only
    assert content["run"]["device_kind"] == "GPU" and content["run"]["devices"] == 4
    assert len(content["top_ops"]) == 10 and content["steps"]["count"] > 0
    assert type(content["run"]["flops_utilization"]) is float  # no numpy scalar left


def test_the_widget_names_and_colours_step_parts_as_the_input_pipeline_does(tpu_path):
    from xprof_widgets.widgets.input_pipeline import PARTS
    from xprof_widgets.widgets.overview import Overview

    content = Overview(tpu_path.parent / "synthetic_tpu.xplane.pb")._overview()
    parts = content["step_breakdown"]
    # The parts that hold time, in the step breakdown's order, named and coloured as there.
    held = [part for part in PARTS if part[0] in {"compute_us", "collectives_us", "other_us"}]
    assert [(p["part"], p["label"], p["color"]) for p in parts] == held
    assert all(p["avg_ms"] > 0 for p in parts)


def test_run_environment_framework_ops_and_precision(tpu_path):
    data = overview(xw.open_profile(tpu_path.parent / "synthetic_tpu.xplane.pb"))
    assert (data.run["host_count"], data.run["device_core_count"]) == (1, 4)
    ops = data.top_framework_ops
    assert len(ops) == 10 and ops["self_time_us"].is_monotonic_decreasing
    assert ops["cumulative_share_of_framework_self_time"].iat[-1] == pytest.approx(
        ops["share_of_framework_self_time"].sum())
    assert ops["operation"].iat[0].startswith("jit(train_step)/")
    p = data.precision  # the synthetic program computes in bf16, keeps a few f32 ops
    assert p["compute_16bit_share"] > 0.99 and p["statement"] == ""
    assert p["compute_16bit_share"] + p["compute_32bit_share"] == pytest.approx(1.0)
    cpu = overview(xw.open_profile(tpu_path.parent / "jax_cpu_demo.xplane.pb"))
    assert cpu.run["device_core_count"] == 0  # XLA threads on a CPU are no device cores
    assert cpu.precision["compute_16bit_share"] == 0.0
    assert cpu.precision["statement"].startswith("Only 0.0% of host computation is 16 bit")
    assert cpu.precision["where"] == "host" and p["where"] == "device"
    assert cpu.recommendations[-1] == {"text": cpu.precision["statement"], "tool": "op",
                                       "rule": "LowPrecisionShare"}
    host_only = overview(xw.open_profile(tpu_path.parent / "tf_keras_cpu_fast.xplane.pb"))
    assert host_only.precision is None and host_only.top_framework_ops.empty


def test_precision_reads_the_result_type_and_skips_communication():
    from types import SimpleNamespace

    import pandas as pd

    from xprof_widgets.analysis.overview import _precision

    class Ops:
        ops = pd.DataFrame({
            "name": ["fusion", "dot", "all-reduce", "copy-start", "convert"],
            "category": ["loop fusion", "convolution", "all-reduce", "copy-start", "convert"],
            "shape": ["bf16[8]{0}", "", "bf16[8]{0}", "f32[8]", "(f16[2], u32[])"],
            "expression": ["", "%dot = f32[4,4]{1,0} dot(...)", "", "", ""],
            "time_ps": [3e6, 1e6, 50e6, 50e6, 1e6]})
        device = SimpleNamespace(kind="TPU")

    p = _precision(Ops())
    assert p["compute_us"] == 5.0  # the collective and the copy are not compute
    assert p["compute_16bit_share"] == pytest.approx(0.8)  # fusion (bf16) and convert (f16)


def test_a_pytorch_trace_names_its_gpu_and_is_not_told_it_lacks_xla_ops():
    import gzip
    from pathlib import Path

    path = Path(__file__).parent.parent / "data/public/hta/nccl_parser_config/nccl_data.json.gz"
    header = json.loads(gzip.decompress(path.read_bytes()))["deviceProperties"]
    data = overview(xw.open_profile(path))
    assert data.run["device_type"] == header[0]["name"] == "NVIDIA A100-PG509-200"
    assert not any("XLA" in note for note in data.notes)


def test_each_share_says_what_it_is_a_share_of(tpu_path):
    """copy-done.4 of the TPU run is 21.4% in the HLO op table and 24.7% in the framework op
    table beside it: the first is of the device time (idle included), the second of the
    device's framework-op self time (idle excluded). The view's headers say which."""
    from xprof_widgets.analysis.op_profile import analyze_op_profile
    from xprof_widgets.analysis.overview import SHARE_LABELS
    from xprof_widgets.widgets.overview import Overview

    content = Overview(tpu_path.parent / "tpu_v6e_inference.xplane.pb")._overview()
    hlo = {op["name"]: op for op in content["top_ops"]}["copy-done.4"]
    framework = {op["operation"]: op
                 for op in content["top_framework_ops"]}["copy-done.4"]
    assert round(100 * hlo["share_of_device_time"], 1) == 21.4
    assert round(100 * framework["share_of_framework_self_time"], 1) == 24.7
    assert content["share_labels"] == SHARE_LABELS
    assert content["share_labels"]["share_of_device_time"] == "% of device time"
    assert content["share_labels"]["share_of_framework_self_time"] == \
        "% of framework-op self time"
    assert content["share_labels"]["share_of_step_time"] == "% of step time"
    assert "idle included" in content["share_titles"]["share_of_device_time"]
    assert "idle excluded" in content["share_titles"]["share_of_framework_self_time"]
    # The two denominators: device time, and device time less idle.
    ops = analyze_op_profile(xw.open_profile(tpu_path.parent / "tpu_v6e_inference.xplane.pb"))
    assert hlo["share_of_device_time"] / (1 - ops.idle_time_ps / ops.total_time_ps) == \
        pytest.approx(framework["share_of_framework_self_time"], rel=1e-3)
    # No share column is left unnamed.
    shares = [c for part in ("top_ops", "top_framework_ops") for c in content[part][0]
              if "share" in c]
    assert shares and all(c in SHARE_LABELS for c in shares)
    steps = Overview(tpu_path.parent / "jax_cpu_demo.xplane.pb")._overview()["step_breakdown"]
    assert all("share_of_step_time" in p and "share" not in p for p in steps)
