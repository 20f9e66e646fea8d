"""The InputPipeline widget's kernel side: its pandas face and the report its view draws."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xprof_widgets as xw
from xprof_widgets.analysis.input_pipeline import HOST_CATEGORIES, OP_COLUMNS, STEP_COLUMNS
from xprof_widgets.errors import ProfileError
from xprof_widgets.widgets import input_pipeline
from xprof_widgets.widgets._base import STATIC_DIR, encode_response

DEMO = Path(__file__).resolve().parents[1] / "data" / "expected" / "input_pipeline_demo.xplane.pb"


@pytest.fixture(autouse=True, scope="module")
def bundle():
    """The widget reads its JavaScript bundle when constructed; a stand-in when none is built."""
    with pytest.MonkeyPatch.context() as patch:
        if not (STATIC_DIR / input_pipeline.InputPipeline._bundle).exists():
            patch.setattr(input_pipeline.InputPipeline, "_esm", "export default {}")
        yield


@pytest.fixture(scope="module")
def demo_widget(bundle):
    return xw.InputPipeline(DEMO)


def roundtrip(content: dict) -> dict:
    """What the view receives: the transport's JSON (no NaN allowed)."""
    (message, buffers), *rest = list(encode_response(1, content))
    assert not rest
    if message.get("content_buffer"):
        return json.loads(bytes(buffers[-1]))
    return message["content"]


def test_pandas_face(demo_widget):
    steps = demo_widget.to_dataframe()
    assert list(steps.columns) == STEP_COLUMNS and len(steps) == 14  # 16 found, XProf's rule
    left = demo_widget.left_out_steps()
    assert left["name"].tolist() == ["train 0", "train 15"]
    assert left["reason"].str.contains("of more than 5").all()
    ops = demo_widget.input_ops()
    assert list(ops.columns) == OP_COLUMNS
    assert ops["input_op"].iat[0] == "load_batch"
    steps["input_us"] = 0  # copies: the widget's own tables stay as they were
    assert demo_widget.to_dataframe()["input_us"].gt(0).all()
    assert list(demo_widget.host_breakdown().index) == list(HOST_CATEGORIES)
    assert demo_widget.verdict == "HIGHLY"
    assert 0.2 <= demo_widget.input_share <= 1
    assert demo_widget.step_time_stats()["max_ms"] > demo_widget.step_time_stats()["min_ms"]
    assert "HIGHLY input-bound" in repr(demo_widget)
    assert "run" not in demo_widget.title and demo_widget.title.endswith(".xplane.pb")


def test_report_of_a_profile_with_steps(demo_widget):
    report = roundtrip(demo_widget._call("report", {})[0])
    summary = report["summary"]
    assert summary["verdict"] == "HIGHLY" and summary["steps"] == 14
    assert [s["name"] for s in report["left_out"]] == ["train 0", "train 15"]
    assert report["left_out"][0]["reason"].startswith("first of more than 5 steps")
    assert summary["input_share_pct"] == pytest.approx(100 * demo_widget.input_share)
    assert summary["step_source"] == "host step roots"
    assert summary["largest_host_cost"] == "Demanded file read"
    assert "load_batch" in summary["recommendation"]
    assert report["no_steps"] is None
    assert set(report["stats"]) == {"avg_ms", "std_ms", "min_ms", "max_ms"}
    for name in ("steps", "share", "host"):
        item = report["charts"][name]
        assert item["doc"]["roots"], name  # a Bokeh JSON item
    assert [b["category"] for b in report["host_breakdown"]] == list(HOST_CATEGORIES)
    assert sum(b["pct"] for b in report["host_breakdown"]) == pytest.approx(100)
    ops = report["ops"]
    assert ops["columns"] == OP_COLUMNS and ops["titles"][0] == "Input Op"
    assert [row[0] for row in ops["rows"]] == demo_widget.input_ops()["input_op"].tolist()


def test_report_without_steps_says_how_to_mark_them(tpu_path):
    widget = xw.InputPipeline(xw.open_profile(tpu_path))
    assert widget.verdict is None
    report = roundtrip(widget._call("report", {})[0])
    assert report["summary"]["verdict"] is None
    assert report["summary"]["input_share_pct"] is None
    assert report["stats"] is None
    assert report["charts"]["steps"] is None and report["charts"]["share"] is None
    assert report["charts"]["host"] is not None, "host-side input ops are still shown"
    assert len(report["no_steps"]["looked_for"]) == 3
    assert "StepTraceAnnotation" in report["no_steps"]["how_to_mark"]
    assert [row[0] for row in report["ops"]["rows"]] == ["DevicePut"]
    assert "no steps" in repr(widget)


def test_input_pattern_reaches_the_analysis():
    widget = xw.InputPipeline(DEMO, input_pattern=r"^preprocess_batch$")
    assert set(widget.input_ops()["input_op"]) == {"preprocess_batch", "DevicePut"}
    assert widget.analysis.input_pattern == r"^preprocess_batch$"


def test_bad_path_is_a_profile_error(tmp_path):
    with pytest.raises(ProfileError):
        xw.InputPipeline(tmp_path / "nothing-here")
