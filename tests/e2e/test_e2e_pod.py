"""A 16-host run on a Dask LocalCluster started in the notebook: the Trace Viewer lists the hosts as
rows and streams a picked host from its worker (JupyterLab); the suite on the pod, its host
picker included (Notebook 7)."""

from __future__ import annotations

import harness
import pytest

READY = ".xw-trace-viewer[data-ready='1']"
AXIS_H, SECTION_H = 30, 24
SETUP = """\
import contextlib, io, tempfile
from dask.distributed import Client, LocalCluster
import xprof_widgets as xw
from xprof_widgets.synthetic import write_synthetic
run = write_synthetic(tempfile.mkdtemp(), 16 * 6000, "tpu", hosts=16)
client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                             dashboard_address=":0"))  # a busy 8787 warns on stderr
with contextlib.redirect_stderr(io.StringIO()):  # the progress line of a slow open: stderr,
    pod = xw.open_profile(run, client=client)  # which the harness takes for a failure
"""


def rows(page) -> int:
    return int(page.locator(".xw-trace-viewer").get_attribute("data-rows") or 0)


@pytest.mark.e2e
def test_the_pod_trace_viewer_lists_hosts_and_streams_a_picked_one(lab):
    cells = [SETUP, "tv = xw.TraceViewer(pod, height=500)\ntv"]
    page = lab.open_and_run(lab.notebook("pod_trace.ipynb", cells), timeout=120)
    lab.wait_ready(page, READY, timeout=180)
    viewer = page.locator(".xw-trace-viewer")
    menu = viewer.locator(".xw-tv-host-menu summary")
    assert menu.inner_text() == "Hosts (0 of 16 shown)"
    assert rows(page) == 16  # one row per host
    page.wait_for_timeout(500)
    harness.screenshot(viewer, "pod_trace_hosts")
    harness.run_in_kernel(page, "tv.hosts = [pod.hosts[0]]")
    page.wait_for_function("() => document.querySelector('.xw-tv-host-menu summary').textContent"
                           ".startsWith('Hosts (1 of 16')", timeout=60_000)
    before = rows(page)

    # a click on a host's row (the filter leaves only that row) picks it
    viewer.locator(".xw-tv-filter").fill("w-7")
    page.wait_for_function("() => document.querySelector('.xw-trace-viewer').dataset.rows === '1'",
                           timeout=30_000)
    viewer.locator("canvas").click(position={"x": 40, "y": AXIS_H + SECTION_H / 2})
    page.wait_for_function("() => document.querySelector('.xw-tv-host-menu summary').textContent"
                           ".startsWith('Hosts (2 of 16')", timeout=60_000)
    assert "t1v-n-00000000-w-7" in harness.run_in_kernel(page, "print(tv.hosts)")
    page.wait_for_function("() => Number(document.querySelector('.xw-trace-viewer')"
                           ".dataset.rows) > 1", timeout=60_000)
    page.wait_for_timeout(1000)
    harness.screenshot(viewer, "pod_trace_picked")  # the host streamed from its worker
    viewer.locator(".xw-tv-filter").fill("")
    page.wait_for_function(f"() => Number(document.querySelector('.xw-trace-viewer')"
                           f".dataset.rows) > {before}", timeout=60_000)

    # the Hosts menu drops it again; search looks through the picked hosts
    menu.click()
    viewer.locator("input[data-host='t1v-n-00000000-w-7']").uncheck()
    page.wait_for_function("() => document.querySelector('.xw-tv-host-menu summary').textContent"
                           ".startsWith('Hosts (1 of 16')", timeout=60_000)
    menu.click()
    search = viewer.locator(".xw-tv-search")
    search.fill("fusion.1")
    search.press("Enter")
    page.wait_for_function("() => /\\d/.test(document.querySelector('.xw-tv-hits').textContent)",
                           timeout=60_000)
    hits = harness.run_in_kernel(page, "print(len(tv.search('fusion.1')))").strip()
    assert hits in viewer.locator(".xw-tv-hits").inner_text().replace(",", "")
    viewer.locator("canvas").click(position={"x": 600, "y": 80})
    harness.run_in_kernel(page, "pod.close(); client.close()")


@pytest.mark.e2e
def test_the_suite_on_a_pod_draws_and_picks_a_host(notebook7):
    cells = [SETUP, "suite = xw.Profiler(pod)\nsuite"]
    page = notebook7.open_and_run(notebook7.notebook("pod_suite.ipynb", cells), timeout=120)
    notebook7.wait_ready(page, ".xw-overview .xw-ov-card", timeout=180)
    assert "t1v-n-00000000-w-0" in page.locator(".xw-overview").inner_text()
    page.locator(".lm-TabBar-tab", has_text="Op Profile").click()
    notebook7.wait_ready(page, ".xw-op-profile[data-ready='1']", timeout=120)
    assert "× 64" in page.locator(".xw-op-profile .xw-op-overview").inner_text()
    harness.run_in_kernel(page, "suite.host_picker.value = pod.hosts[3]")
    page.locator(".lm-TabBar-tab", has_text="Op Profile").click()
    page.wait_for_function("() => [...document.querySelectorAll('.xw-op-profile .xw-op-tile')]"
                           ".some((t) => t.textContent.includes('× 4'))", timeout=120_000)
    out = harness.run_in_kernel(page, "print(suite.profile.hosts, suite.tool('op').overview()"
                                      "['devices'])")
    assert "t1v-n-00000000-w-11" in out and out.strip().endswith("4")
    harness.screenshot(page.locator(".jp-OutputArea-output").last, "pod_suite")
    harness.run_in_kernel(page, "pod.close(); client.close()")
