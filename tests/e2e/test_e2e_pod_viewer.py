"""PodViewer in real JupyterLab and Notebook 7: a four-host synthetic TPU pod (heatmap by host,
each step's breakdown, the table with its facets) and a CPU run with a host that straggles."""

from __future__ import annotations

import sys

import harness
import pytest

READY = ".xw-pv[data-ready='1']"
CHARTS = ".xw-pv[data-charts='2']"


def picture(page, widget, name: str) -> None:
    height = widget.evaluate("(el) => el.getBoundingClientRect().height")
    page.set_viewport_size({"width": 1280, "height": int(height) + 400})
    widget.scroll_into_view_if_needed()
    page.wait_for_timeout(600)  # Bokeh redraws at the new size
    harness.screenshot(widget, name)


def heatmap_rows(page) -> list[str]:
    return page.evaluate("""() => {
      const host = document.querySelector(".xw-pv [data-chart='heatmap']");
      const plot = [...window.Bokeh.index].find((v) => host.contains(v.el));
      return [...plot.model.y_range.factors];
    }""")


@pytest.mark.e2e
def test_pod_viewer_on_a_four_host_pod(lab):
    from xprof_widgets.synthetic import write_synthetic

    logdir = lab.server.root / "pod4"
    logdir.mkdir()
    run = write_synthetic(logdir, 40_000, kind="tpu", hosts=4, devices=2)
    cells = [f"import xprof_widgets as xw\npv = xw.PodViewer({str(run)!r})\npv"]
    page = lab.open_and_run(lab.notebook("pod_viewer_pod.ipynb", cells))
    lab.wait_ready(page, READY)
    page.wait_for_selector(CHARTS, timeout=30_000)
    widget = page.locator(".xw-pv")
    assert widget.get_attribute("data-by") == "host"
    tiles = widget.locator(".xw-pv-tiles").inner_text()
    assert "Hosts\n4" in tiles and "Cores\n8" in tiles and "Device compute" in tiles
    assert sorted(heatmap_rows(page)) == [f"t1v-n-00000000-w-{k}" for k in range(4)]
    table = widget.locator(".xw-dt")
    rows = int(harness.run_in_kernel(page, "print(len(pv.to_dataframe()))"))
    assert int(table.get_attribute("data-rows")) == rows
    table.locator("select[data-facet='host']").select_option("t1v-n-00000000-w-2")
    assert int(table.get_attribute("data-rows")) == rows // 4
    table.locator("select[data-facet='host']").select_option("")
    picture(page, widget, "pod_viewer_tpu_pod")


@pytest.mark.e2e
def test_pod_viewer_flags_a_straggling_host_in_notebook7(notebook7, make_logdir):
    sys.path.insert(0, str(harness.REPO / "tests" / "unit"))
    from test_pod_viewer import host_file

    normal, slow = host_file([1000] * 6), host_file([1000, 1000, 2500, 1000, 1000, 1000])
    logdir = notebook7.server.root / "stragglers"
    run = logdir / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    for name, data in (("w0", normal), ("w1", normal), ("w2", slow), ("w3", normal)):
        (run / f"{name}.xplane.pb").write_bytes(data)
    cells = [f"import xprof_widgets as xw\npv = xw.PodViewer({str(logdir)!r})\npv"]
    page = notebook7.open_and_run(notebook7.notebook("pod_viewer_stragglers.ipynb", cells))
    notebook7.wait_ready(page, READY)
    page.wait_for_selector(CHARTS, timeout=30_000)
    widget = page.locator(".xw-pv")
    assert "Straggling steps of a host\n1" in widget.locator(".xw-pv-tiles").inner_text()
    table = widget.locator(".xw-dt")
    table.locator("select[data-facet='straggler']").select_option("true")
    assert table.get_attribute("data-rows") == "1"
    assert "w2" in table.locator("tbody").inner_text()
    table.locator("select[data-facet='straggler']").select_option("")
    picture(page, widget, "pod_viewer_stragglers_notebook7")
