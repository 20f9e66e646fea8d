"""The Profiler suite in JupyterLab: tabs, and an op followed from the Op Profile to the trace."""

from __future__ import annotations

import harness
import pytest

TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"


@pytest.mark.e2e
def test_an_op_card_link_opens_the_trace_viewer_on_that_op(lab):
    cells = [f"import xprof_widgets as xw\nsuite = xw.Profiler({str(TPU)!r}, tool='op')\nsuite"]
    page = lab.show("suite_links.ipynb", cells, ".xw-op-profile[data-ready='1']")
    table = page.locator(".xw-op-profile")
    table.locator("tr[data-kind='group']", has_text="loop fusion").locator("[data-toggle]").click()
    op = table.locator("tr[data-kind='op']").first
    op.locator("td.xw-op-name").click()  # pins the card
    card = table.locator(".xw-op-card:not([hidden])")
    name = card.locator(".xw-op-card-title span").first.inner_text()
    card.locator("button.xw-link", has_text="Show in Trace Viewer").click()

    lab.wait_ready(page, ".xw-trace-viewer[data-ready='1']")
    viewer = page.locator(".xw-trace-viewer")
    page.wait_for_function("() => Number(document.querySelector('.xw-trace-viewer')"
                           "?.dataset.selected || 0) > 0", timeout=30_000)
    details = viewer.locator(".xw-tv-detail, .xw-tv-aggregate, .xw-tv-details").first
    details.wait_for(timeout=30_000)
    assert name in details.inner_text()
    harness.screenshot(viewer, "suite_op_in_trace")


@pytest.mark.e2e
def test_the_overview_tab_draws_first(lab):
    synthetic = harness.REPO / "tests" / "data" / "synthetic_tpu.xplane.pb"
    cells = [f"import xprof_widgets as xw\nxw.Profiler({str(synthetic)!r})"]
    page = lab.show("suite_overview.ipynb", cells, ".xw-overview")
    page.wait_for_selector("[data-ready='1'] .xw-overview, .xw-overview", timeout=30_000)
    page.wait_for_function("() => document.querySelector('.xw-overview .xw-ov-card')",
                           timeout=30_000)
    overview = page.locator(".xw-overview")
    text = overview.inner_text()
    assert "TPU v6 Lite" in text and "Step time" in text and "Top ops by time" in text
    harness.screenshot(page.locator(".jp-OutputArea-output:not(.lm-mod-hidden)").last,
                       "suite_overview")
