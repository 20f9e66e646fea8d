"""The roofline model of a PyTorch (Kineto) GPU trace in JupyterLab and Notebook 7: op FLOPs and
bytes from shapes (HTA's trace_diff control run, an A100) drawn against the GPU's roofs from the
table of known GPUs; the op table's facets narrow the points; empty HLO columns are hidden."""

from __future__ import annotations

import harness
import pytest
from test_e2e_table_tools import open_tool, picture, rows_shown

A100 = harness.REPO / "tests" / "data" / "public" / "hta" / "trace_diff" / "control" / \
    "control.json.gz"


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_kineto_roofline(request, app_name):
    app = request.getfixturevalue(app_name)
    page, widget = open_tool(app, f"torch_roof_{app_name}", (
        f"import xprof_widgets as xw\nroof = xw.RooflineModel({str(A100)!r})\nroof"), ".xw-roof")
    page.wait_for_function("() => Number(document.querySelector('.xw-roof').dataset.points) > 0",
                           timeout=20_000)
    points = int(widget.get_attribute("data-points"))
    assert rows_shown(widget, 0) == 1 and rows_shown(widget, 1) >= points > 10
    head = widget.locator(".xw-tool-head").inner_text()
    assert "A100" in head and "HBM roof" in head
    assert not widget.locator(".xw-controls input[type='checkbox']").count()  # no infeed here
    hidden = widget.locator(".xw-dt").nth(1).get_attribute("data-hidden-columns")
    assert {"program_id", "source_info"} <= set(hidden.split(","))
    widget.locator(".xw-dt").nth(1).locator("select[data-facet='category']").select_option("GEMM")
    gemm = rows_shown(widget, 1)
    page.wait_for_function(
        f"() => document.querySelector('.xw-roof').dataset.points === '{gemm}'", timeout=10_000)
    assert 0 < gemm < points
    widget.locator(".xw-dt").nth(1).locator("select[data-facet='category']").select_option("")
    if app_name == "lab":
        picture(page, widget, "roofline_model_torch")


def _hidden(widget) -> set[str]:
    return set((widget.locator(".xw-dt").nth(0).get_attribute("data-hidden-columns") or "")
               .split(","))


COST = {"measured_flop_rate_gflops", "model_flop_rate_gflops", "measured_memory_bw_gbps",
        "operational_intensity", "bound_by"}


@pytest.mark.e2e
def test_framework_op_stats_cost_columns(lab):
    """Filled on PARAM's DLRM run (shapes recorded, a V100), hidden on HTA's nccl_data trace
    (no shapes: every cost unknown)."""
    dlrm = harness.REPO / "tests" / "data" / "public" / "param" / "dlrm_v100_8rank" / \
        "worker0_step_12.1694128201545.pt.trace.json.gz"
    nccl = harness.REPO / "tests" / "data" / "public" / "hta" / "nccl_parser_config" / \
        "nccl_data.json.gz"
    page, widget = open_tool(lab, "torch_fw_costs", (
        f"import xprof_widgets as xw\nxw.FrameworkOpStats({str(dlrm)!r})"), ".xw-fw")
    assert not COST & _hidden(widget)
    picture(page, widget, "framework_op_stats_torch_flops")
    page, widget = open_tool(lab, "torch_fw_no_costs", (
        f"import xprof_widgets as xw\nxw.FrameworkOpStats({str(nccl)!r})"), ".xw-fw")
    assert COST <= _hidden(widget)
