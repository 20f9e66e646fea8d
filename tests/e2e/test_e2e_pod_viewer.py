"""PodViewer in real JupyterLab and Notebook 7: a four-host synthetic TPU pod (heatmap by host,
each host's and each step's breakdown, the table with its facets), a CPU run with a host that
straggles, and the two ranks of a PyTorch run opened as one run (with its Trace Viewer, a host
section per rank)."""

from __future__ import annotations

import shutil
import sys

import harness
import pytest

READY = ".xw-pv[data-ready='1']"
CHARTS = ".xw-pv[data-charts='3']"  # a multi-host run: heatmap, each host, each step
RANKS = [harness.REPO / "tests" / "data" / "public" / "hta" / "trace_filter" /
         f"sampled_rank-{rank}.json.gz" for rank in (0, 1)]


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
    page = lab.show("pod_viewer_pod.ipynb", cells, READY)
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
    harness.picture(page, widget, "pod_viewer_tpu_pod")


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
    page = notebook7.show("pod_viewer_stragglers.ipynb", cells, READY)
    page.wait_for_selector(CHARTS, timeout=30_000)
    widget = page.locator(".xw-pv")
    assert "Straggling steps of a host\n1" in widget.locator(".xw-pv-tiles").inner_text()
    table = widget.locator(".xw-dt")
    table.locator("select[data-facet='straggler']").select_option("true")
    assert table.get_attribute("data-rows") == "1"
    assert "w2" in table.locator("tbody").inner_text()
    table.locator("select[data-facet='straggler']").select_option("")
    harness.picture(page, widget, "pod_viewer_stragglers_notebook7")


def chart_rows(page, key: str) -> list[str]:
    return page.evaluate("""(key) => {
      const host = document.querySelector(`.xw-pv [data-chart='${key}']`);
      const plot = [...window.Bokeh.index].find((v) => host.contains(v.el));
      return [...plot.model.y_range.factors];
    }""", key)


def trace_rows(page, text: str) -> int:
    """The Trace Viewer's rows once its filter holds `text`."""
    viewer = page.locator(".xw-trace-viewer")
    viewer.locator(".xw-tv-filter").fill(text)
    page.wait_for_timeout(300)
    return int(viewer.get_attribute("data-rows"))


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_the_ranks_of_a_pytorch_run_as_one_pod(request, app_name):
    app = request.getfixturevalue(app_name)
    run = app.server.root / f"ranks_{app_name}"
    run.mkdir()
    for path in RANKS:
        shutil.copyfile(path, run / path.name)
    cells = [f"import xprof_widgets as xw\npv = xw.PodViewer({str(run)!r})\npv",
             "tv = xw.TraceViewer(pv.profile)\ntv"]
    page = app.show(f"pod_viewer_ranks_{app_name}.ipynb", cells, READY)
    page.wait_for_selector(CHARTS, timeout=30_000)
    widget = page.locator(".xw-pv")
    assert widget.get_attribute("data-by") == "host"
    tiles = widget.locator(".xw-pv-tiles").inner_text()
    assert "Hosts\n2" in tiles and "Steps\n2" in tiles and "Host compute" in tiles
    assert sorted(heatmap_rows(page)) == ["rank 0", "rank 1"]
    assert sorted(chart_rows(page, "hosts")) == ["rank 0", "rank 1"]
    table = widget.locator(".xw-dt")
    assert table.get_attribute("data-rows") == "4"  # two steps of two ranks
    table.locator("select[data-facet='host']").select_option("rank 1")
    assert table.get_attribute("data-rows") == "2"
    table.locator("select[data-facet='host']").select_option("")
    harness.picture(page, widget, f"pod_viewer_pytorch_ranks_{app_name}")

    # The Trace Viewer: each rank is its own host, its sections labelled with it.
    app.wait_ready(page, ".xw-trace-viewer[data-ready='1']")
    viewer = page.locator(".xw-trace-viewer")
    everything = int(viewer.get_attribute("data-rows"))
    ranks = [trace_rows(page, f"rank {rank}") for rank in (0, 1)]
    assert ranks[0] > 0 and ranks[1] > 0 and ranks[0] + ranks[1] == everything
    assert trace_rows(page, "rank 2") == 0
    trace_rows(page, "")
    page.set_viewport_size({"width": 1280, "height": 1000})
    viewer.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    harness.screenshot(viewer, f"trace_viewer_pytorch_ranks_{app_name}")
