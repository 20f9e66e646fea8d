"""The Distributed view on PARAM's 8-rank DLRM run on V100s (tests/data/public/param): opened
locally in JupyterLab (each rank's GPU time as stacked bars, the waiting each rank caused, the
three tables), and as the suite's tab on a pod opened on a Dask LocalCluster in Notebook 7."""

from __future__ import annotations

import harness
import pytest

DLRM = harness.REPO / "tests" / "data" / "public" / "param" / "dlrm_v100_8rank"
READY = ".xw-dv[data-ready='1'][data-charts='2']"
RANKS = [f"rank {r}" for r in range(8)]


def chart_rows(page, key: str) -> list[str]:
    return page.evaluate("""(key) => {
      const host = document.querySelector(`.xw-dv [data-chart='${key}']`);
      const plot = [...window.Bokeh.index].find((v) => host.contains(v.el));
      return [...plot.model.y_range.factors];
    }""", key)


def check_view(page) -> None:
    """What both apps must show of the DLRM run."""
    widget = page.locator(".xw-dv")
    tiles = widget.locator(".xw-tiles").inner_text()
    assert "Ranks\n8" in tiles and "Collective kernels\n64" in tiles
    assert "Worst straggler\nrank 7" in tiles
    assert sorted(chart_rows(page, "ranks")) == RANKS
    assert sorted(chart_rows(page, "stragglers")) == RANKS
    kinds = widget.locator("[data-table='kinds'] .xw-dt")
    assert kinds.get_attribute("data-rows") == "2"
    assert "all_to_all" in kinds.inner_text() and "GB/s" in kinds.inner_text()
    assert widget.locator("[data-table='skew'] .xw-dt").get_attribute("data-rows") == "8"
    stragglers = widget.locator("[data-table='stragglers'] tbody tr")
    assert stragglers.first.inner_text().startswith("rank 7")  # most waiting caused first


@pytest.mark.e2e
def test_the_distributed_view_draws_the_dlrm_ranks_in_lab(lab):
    cells = [f"import xprof_widgets as xw\ndv = xw.DistributedView({str(DLRM)!r})\ndv"]
    page = lab.show("distributed_dlrm.ipynb", cells, READY)
    check_view(page)
    skew = page.locator(".xw-dv [data-table='skew'] .xw-dt")
    skew.locator("select[data-facet='kind']").select_option("all_reduce")
    assert skew.get_attribute("data-rows") == "3"
    skew.locator("select[data-facet='kind']").select_option("")
    harness.picture(page, page.locator(".xw-dv"), "distributed_dlrm_lab")


SETUP = f"""\
import contextlib, io
from dask.distributed import Client, LocalCluster
import xprof_widgets as xw
client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                             dashboard_address=":0"))  # any free port
with contextlib.redirect_stderr(io.StringIO()):  # an open's progress line is stderr
    pod = xw.open_profile({str(DLRM)!r}, client=client)
"""


@pytest.mark.e2e
def test_the_suite_tab_on_the_dlrm_ranks_on_dask_in_notebook7(notebook7):
    cells = [SETUP, "suite = xw.Profiler(pod)\nsuite"]
    page = notebook7.open_and_run(notebook7.notebook("distributed_pod.ipynb", cells), timeout=120)
    notebook7.wait_ready(page, ".xw-overview .xw-ov-card", timeout=180)
    page.locator(".lm-TabBar-tab", has_text="Distributed").click()
    notebook7.wait_ready(page, READY, timeout=120)
    check_view(page)
    harness.picture(page, page.locator(".xw-dv"), "distributed_dlrm_dask_notebook7")
    harness.run_in_kernel(page, "pod.close(); client.close()")
