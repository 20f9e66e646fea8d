"""The utilization viewer and megascale stats in a real JupyterLab and Notebook 7, on their
synthetic profiles (tests/data/xprof_counters): the bar chart draws, the table lists every row,
narrows by a facet and the filter box, and sorts."""

from __future__ import annotations

import harness
import pytest
from test_e2e_table_tools import APPS, column, open_tool, picture, rows_shown

DATA = harness.REPO / "tests" / "data" / "xprof_counters"


def open_drawn(request, app_name: str, variable: str, widget: str, fixture: str, root: str,
               chart: str):
    """The widget opened in that app, its one chart drawn."""
    app = request.getfixturevalue(app_name)
    page, view = open_tool(app, f"{variable}_{app_name}", (
        f"import xprof_widgets as xw\n{variable} = xw.{widget}({str(DATA / fixture)!r})\n"
        f"{variable}"), root)
    assert [c.get_attribute("data-chart") for c in
            view.locator(".xw-chart[data-drawn='1']").all()] == [chart]
    return page, view


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", APPS)
def test_utilization_viewer(request, app_name):
    page, widget = open_drawn(request, app_name, "uv", "UtilizationViewer",
                              "synthetic_tpu_counters.xplane.pb", ".xw-uv", "units")
    assert rows_shown(widget) == 562
    assert "Chips\n3" in widget.locator(".xw-tiles").inner_text()
    widget.locator("select[data-facet='device']").select_option("1")
    widget.locator("select[data-facet='sample']").select_option("2")
    assert rows_shown(widget) == 56  # no HBM traffic in that sample: no read/write split
    widget.locator(".xw-dt-filter").fill("MXU")
    assert rows_shown(widget) == 10
    assert column(widget, "name")[:2] == ["No MXU Busy", "1 MXU Busy"]  # XProf's order
    assert all(v.endswith("%") for v in column(widget, "utilization"))
    widget.locator(".xw-dt-filter").fill("")
    widget.locator("select[data-facet='sample']").select_option("")
    widget.locator("select[data-facet='device']").select_option("2")  # the TPU v7x
    widget.locator("select[data-facet='sample']").select_option("1")
    assert rows_shown(widget) == 120
    widget.locator("select[data-facet='sample']").select_option("")
    widget.locator("select[data-facet='device']").select_option("")
    if app_name == "lab":
        picture(page, widget, "utilization_viewer")


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", APPS)
def test_megascale_stats(request, app_name):
    page, widget = open_drawn(request, app_name, "ms", "MegascaleStats",
                              "synthetic_megascale.xplane.pb", ".xw-ms", "stall")
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


@pytest.mark.e2e
def test_both_as_tabs_of_the_suite(lab):
    cells = [("import xprof_widgets as xw\n"
             f"suite = xw.Profiler({str(DATA / 'synthetic_megascale.xplane.pb')!r}, "
             "tool='megascale_stats')\nsuite")]
    page = lab.show("suite_megascale.ipynb", cells, ".xw-ms[data-ready='1']")
    assert rows_shown(page.locator(".xw-ms")) == 4
    assert page.get_by_role("tab", name="Megascale Stats").count() == 1
    assert page.get_by_role("tab", name="Utilization Viewer").count() == 0  # no counters here
