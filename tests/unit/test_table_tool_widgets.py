"""The framework op stats, kernel stats, HLO stats and roofline widgets: their answers, CSV
files, chart documents (valid for the installed bokeh) and their places in the tool registry."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import traitlets
from bokeh_doc import models as doc_models

import xprof_widgets as xw
from xprof_widgets.tools import offered, tool

DATA = Path(__file__).parents[1] / "data"
TPU = DATA / "tpu_v6e_inference.xplane.pb"
SYNTHETIC_TPU = DATA / "synthetic_tpu.xplane.pb"
GPU = DATA / "synthetic_gpu.xplane.pb"


def assert_valid_charts(charts: list[dict]) -> None:
    import bokeh.models  # registers every model class
    import bokeh.plotting  # noqa: F401
    from bokeh.model import Model

    known = Model.model_class_reverse_map
    for chart in charts:
        item = chart["item"]
        json.dumps(item, allow_nan=False)
        models = doc_models(item["doc"])
        assert len({m["id"] for m in models}) == len(models), chart["key"]
        for m in models:
            assert m["name"] in known, (chart["key"], m["name"])
            assert not set(m["attributes"]) - set(known[m["name"]].properties()), m["name"]


def test_framework_op_stats_widget(tmp_path):
    w = xw.FrameworkOpStats(TPU)
    content, _ = w._call("table", {"include_idle": False})
    assert "IDLE" not in content["rows"]["type"]
    assert [c["key"] for c in content["charts"]] == ["device_operation", "device_type"]
    assert_valid_charts(content["charts"])  # the host has no busy time: no host pie
    assert w._summary["device_ops"] == 15 and w._summary["device_kind"] == "TPU"
    w.include_idle = False
    w.to_csv(tmp_path / "fw.csv")
    back = pd.read_csv(tmp_path / "fw.csv", keep_default_na=False)
    assert list(back.columns) == list(w.to_dataframe().columns)
    assert back["operation"].tolist() == w.to_dataframe()["operation"].tolist()
    assert "IDLE" in set(w.to_dataframe(include_idle=True)["type"])


def test_kernel_stats_widget_on_gpu_and_tpu():
    w = xw.KernelStats(GPU)
    content, _ = w._call("table", {})
    assert len(content["rows"]["kernel_name"]) == len(w.to_dataframe()) == w._summary["kernels"]
    assert_valid_charts(content["charts"])
    assert 0 < w._summary["tensor_core_share"] < 1
    tpu = xw.KernelStats(TPU)
    assert tpu._summary["kind"] == "none" and tpu.to_dataframe().empty


def test_hlo_stats_widget():
    w = xw.HloStats(TPU)
    content, _ = w._call("table", {})
    assert content["rows"]["hlo_op_name"][0] == "copy-done.4"
    assert_valid_charts(content["charts"])


def test_roofline_widget_steps_memories_and_chart():
    w = xw.RooflineModel(SYNTHETIC_TPU)
    assert w._summary["steps"][0] == "Average" and len(w._summary["steps"]) == 64
    content, _ = w._call("roofline", {"include_infeed_outfeed": False, "step": "5",
                                      "memory": "HBM"})
    assert_valid_charts(content["charts"])
    rows = pd.DataFrame(content["rows"])
    assert not rows["include_infeed_outfeed"].any()
    assert (rows["category"] == "Program").sum() == 65  # Total, Average and 63 steps
    assert content["intensity"] == "hbm_operational_intensity"
    doc = json.dumps(content["charts"][0]["item"])
    assert '"name": "ops"' in doc and "star" in doc
    w.step = "Average"
    with pytest.raises(traitlets.TraitError):
        w.step = "999"
    tpu = xw.RooflineModel(TPU)
    assert [c["memory"] for c in tpu.ceilings().to_dict("records")] == [
        "HBM", "VMEM Read", "VMEM Write"]
    content, _ = tpu._call("roofline", {"include_infeed_outfeed": True, "step": "Total",
                                        "memory": "VMEM Read"})
    assert content["intensity"] == "vmem_read_operational_intensity"
    assert_valid_charts(content["charts"])


def test_the_registry_offers_each_tool_where_it_has_data():
    def keys(path):
        return {t.key for t in offered(xw.open_profile(path))}

    assert {"framework_op_stats", "hlo_stats", "roofline"} <= keys(TPU)
    assert "kernel_stats" not in keys(TPU)
    assert {"kernel_stats", "roofline"} <= keys(GPU)
    cpu = keys(DATA / "jax_cpu_demo.xplane.pb")
    assert {"framework_op_stats", "hlo_stats"} <= cpu and not {"roofline", "kernel_stats"} & cpu
    tf = keys(DATA / "tf_keras_cpu_fast.xplane.pb")
    assert "framework_op_stats" in tf and not {"hlo_stats", "roofline", "kernel_stats"} & tf
    from xprof_widgets.widgets.hlo_stats import RooflineModel

    assert tool("roofline").name == "RooflineModel" and xw.RooflineModel is RooflineModel
