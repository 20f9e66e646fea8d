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
    assert data.step_breakdown["share"].sum() == pytest.approx(1.0, abs=0.02)
    assert len(data.top_ops) == 10
    assert data.top_ops["time_us"].is_monotonic_decreasing
    assert 0 < data.run["flops_utilization"] <= 1
    assert any("input" in r for r in data.recommendations)


def test_the_demo_profile_finds_its_input_bound_steps(tpu_path):
    data = overview(xw.open_profile(tpu_path.parent / "jax_cpu_demo.xplane.pb"))
    assert data.run["device_type"] == "CPU"
    assert data.steps["count"] == 8
    assert data.steps["verdict"] == "HIGHLY"
    assert jsonable(data.run)["flops_utilization"] is None  # no CPU peak: no made-up number


def test_a_profile_without_steps_says_how_to_mark_them(tpu_path):
    data = overview(xw.open_profile(tpu_path))
    assert data.steps is None
    assert any("StepTraceAnnotation" in note for note in data.notes)


def test_the_overview_is_json_for_the_view(tpu_path):
    data = overview(xw.open_profile(tpu_path.parent / "synthetic_gpu.xplane.pb"))
    json.dumps(jsonable(data.to_dict()), allow_nan=False)


def test_the_widget_names_and_colours_step_parts_as_the_input_pipeline_does(tpu_path):
    from xprof_widgets.widgets.input_pipeline import PARTS
    from xprof_widgets.widgets.overview import Overview

    content = Overview(tpu_path.parent / "synthetic_tpu.xplane.pb")._overview()
    parts = content["step_breakdown"]
    assert [(p["part"], p["label"], p["color"]) for p in parts] == PARTS
