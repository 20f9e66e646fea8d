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
