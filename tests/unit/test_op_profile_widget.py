"""The OpProfile widget's kernel side: synced state, request handlers, the roofline, no ops."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import traitlets
from xspace_builder import build_xspace

import xprof_widgets as xw
from xprof_widgets.errors import ProfileError
from xprof_widgets.widgets._base import STATIC_DIR, encode_response

ROOT = Path(__file__).resolve().parents[2]
TPU = ROOT / "tests/data/tpu_v6e_inference.xplane.pb"
CONTROLS = {"group_by": "category", "sort_by": "time", "ops_shown": 10, "top_90": False,
            "exclude_idle": False, "name_filter": ""}


@pytest.fixture(autouse=True)
def bundle(monkeypatch):
    """The widget reads its JavaScript bundle when constructed; a stand-in when none is built."""
    if not (STATIC_DIR / "op_profile.js").exists():
        from xprof_widgets.widgets import op_profile

        monkeypatch.setattr(op_profile.OpProfile, "_esm", "export default {}")


@pytest.fixture(scope="module")
def widget():
    return xw.OpProfile(TPU)


def ask(widget, method: str, **params):
    content, buffers = widget._call(method, params)
    list(encode_response(1, content, buffers))  # JSON without NaN, chunked: what the view gets
    return json.loads(json.dumps(content, allow_nan=False))


def test_public_name_and_small_synced_state(widget):
    assert "OpProfile" in xw.__all__
    state = widget.get_state()
    assert len(json.dumps(state["_summary"])) < 8_000
    summary = state["_summary"]
    assert summary["device_type"] == "TPU v6 Lite" and summary["has_peaks"]
    assert summary["suggestions"] and summary["read"].startswith("`XLA Ops` lines of 4")
    assert repr(widget).startswith("<OpProfile") and "TPU v6 Lite x4" in repr(widget)


def test_table_request_is_columnar_json(widget):
    rows = ask(widget, "table", **CONTROLS)["rows"]
    n = len(rows["row"])
    assert all(len(values) == n for values in rows.values())
    assert rows["label"][0] == "copy-done" and rows["kind"][0] == "group"
    assert rows["label"][-1] == "IDLE" and rows["flops_utilization"][-1] == 0.0
    grouped = ask(widget, "table", **{**CONTROLS, "group_by": "program"})["rows"]
    assert grouped["label"][0] == "jit_f" and grouped["level"][1] == 1


def test_a_bad_filter_is_reported_not_raised(widget):
    answer = ask(widget, "table", **{**CONTROLS, "name_filter": "(("})
    assert answer["rows"] == [] and "not a regular expression" in answer["problem"]


def test_details_and_fusion_contents(widget):
    ops = widget.analysis.ops
    index = int(ops.index[ops["name"] == "broadcast_add_fusion"][0])
    details = ask(widget, "details", op=index)
    assert details["name"] == "broadcast_add_fusion" and details["has_peaks"]
    fused = ask(widget, "fused", op=index)["rows"]
    assert sorted(fused["name"]) == ["add.3", "broadcast.7", "constant.8"]


def test_roofline_is_a_bokeh_item_with_the_ops(widget):
    item = ask(widget, "roofline")["item"]
    text = json.dumps(item)
    assert item["doc"]["roots"] and "broadcast_add_fusion" in text
    assert "ridge point" in text and "arithmetic intensity" in text


def test_controls_are_traits_and_python_calls_follow_them(widget):
    widget.ops_shown = 1000
    assert widget.ops_shown == 100
    widget.ops_shown = 10
    widget.group_by = "program"
    try:
        assert widget.table()["label"].iloc[0] == "jit_f"
    finally:
        widget.group_by = "category"
    with pytest.raises(traitlets.TraitError):
        widget.sort_by = "name"
    frame = widget.to_dataframe()
    assert frame["name"].iloc[0] == "copy-done.4"
    assert widget.details("broadcast_add_fusion.1")["category"] == "loop fusion"
    assert len(widget.fused_ops("broadcast_add_fusion.1")) == 3


def test_a_profile_without_ops_renders_a_message(tmp_path):
    host = {"name": "/host:CPU", "lines": [{"name": "python", "events": [("step", 0, 100, {})]}]}
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(build_xspace([host]))
    widget = xw.OpProfile(path)
    error = widget.get_state()["_summary"]["error"]
    assert "no XLA ops" in error and "/host:CPU" in error and str(path) in error
    assert "no ops" in repr(widget)
    with pytest.raises(ProfileError, match="no XLA ops"):
        widget.to_dataframe()


def test_cpu_without_peaks_says_so(tmp_path):
    host = {"name": "/host:CPU", "lines": [{"name": "tf_XLAEigen/1", "events": [
        ("f", 0, 1000, {"hlo_op": ("ref", "fusion.1"), "hlo_module": ("ref", "jit_g")})]}]}
    path = tmp_path / "cpu.xplane.pb"
    path.write_bytes(build_xspace([host]))
    widget = xw.OpProfile(path)
    assert not widget.get_state()["_summary"]["has_peaks"]
    rows = ask(widget, "table", **CONTROLS)["rows"]
    assert rows["flops_utilization"][1] is None  # the op row: no number invented
    item = ask(widget, "roofline")["item"]
    assert "no peak known" in json.dumps(item)
    given = xw.OpProfile(path, peak_tflops=2.0, peak_gbps=50.0)
    assert given.get_state()["_summary"]["peak_source"] == "argument"
