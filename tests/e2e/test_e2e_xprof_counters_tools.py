"""The utilization viewer and megascale stats in a real JupyterLab and Notebook 7, on their
synthetic profiles (tests/data/xprof_counters): the bar chart draws, the table lists every row,
narrows by a facet and the filter box, and sorts."""

from __future__ import annotations

import harness
import pytest
from test_e2e_table_tools import APPS, column, open_tool, picture, rows_shown

DATA = harness.REPO / "tests" / "data" / "xprof_counters"


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", APPS)
def test_utilization_viewer(request, app_name):
    app = request.getfixturevalue(app_name)
    page, widget = open_tool(app, f"uv_{app_name}", (
        "import xprof_widgets as xw\n"
        f"uv = xw.UtilizationViewer({str(DATA / 'synthetic_tpu_counters.xplane.pb')!r})\nuv"),
        ".xw-uv")
    assert [c.get_attribute("data-chart") for c in
            widget.locator(".xw-chart[data-drawn='1']").all()] == ["units"]
    assert rows_shown(widget) == 262
    assert "Chips\n2" in widget.locator(".xw-tiles").inner_text()
    widget.locator("select[data-facet='device']").select_option("1")
    widget.locator("select[data-facet='sample']").select_option("2")
    assert rows_shown(widget) == 56  # no HBM traffic in that sample: no read/write split
    widget.locator(".xw-dt-filter").fill("MXU")
    assert rows_shown(widget) == 10
    assert column(widget, "name")[:2] == ["No MXU Busy", "1 MXU Busy"]  # XProf's order
    assert all(v.endswith("%") for v in column(widget, "utilization"))
    widget.locator(".xw-dt-filter").fill("")
    widget.locator("select[data-facet='sample']").select_option("")
    widget.locator("select[data-facet='device']").select_option("")
    assert "TPU v7x" in page.locator(".xw-notes").inner_text()  # the plane left out, said
    if app_name == "lab":
        picture(page, widget, "utilization_viewer")


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", APPS)
def test_megascale_stats(request, app_name):
    app = request.getfixturevalue(app_name)
    page, widget = open_tool(app, f"ms_{app_name}", (
        "import xprof_widgets as xw\n"
        f"ms = xw.MegascaleStats({str(DATA / 'synthetic_megascale.xplane.pb')!r})\nms"),
        ".xw-ms")
    assert [c.get_attribute("data-chart") for c in
            widget.locator(".xw-chart[data-drawn='1']").all()] == ["stall"]
    assert rows_shown(widget) == 4
    assert column(widget, "rendezvous")[0] == harness.run_in_kernel(
        page, "print(ms.to_dataframe().sort_values('total_stall_ms').rendezvous.iloc[-1])").strip()
    widget.locator("select[data-facet='transfer_type']").select_option("ALL_REDUCE")
    assert rows_shown(widget) == 1
    assert column(widget, "bytes_transmitted") == ["1.50 MiB"]
    widget.locator("select[data-facet='transfer_type']").select_option("")
    widget.locator("th[data-key='slack_time_ms']").click()
    assert len(set(column(widget, "slack_time_ms"))) == 4
    if app_name == "lab":
        picture(page, widget, "megascale_stats")
