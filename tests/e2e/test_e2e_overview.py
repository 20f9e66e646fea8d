"""The Overview in real JupyterLab and Notebook 7: the run environment, device compute precision,
the top framework ops beside the top HLO ops, and, in the suite, recommendation buttons that open
the tool each comes from."""

from __future__ import annotations

import harness
import pytest

DATA = harness.REPO / "tests" / "data"
READY = ".xw-overview .xw-ov-card"


def cards(page) -> dict[str, str]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        '.xw-overview .xw-ov-card[data-card]')].map((c) => [c.dataset.card, c.innerText]))""")


@pytest.mark.e2e
def test_overview_in_the_suite_links_recommendations_to_their_tools(lab):
    path = DATA / "synthetic_tpu.xplane.pb"
    cells = [f"import xprof_widgets as xw\nsuite = xw.Profiler({str(path)!r})\nsuite"]
    page = lab.show("overview_suite.ipynb", cells, READY)
    page.wait_for_selector(".xw-ov-card[data-card='framework-ops']", timeout=30_000)
    text = cards(page)
    assert "Run environment" in text["run"] and "Device cores\n4" in text["run"]
    assert "TPU v6 Lite" in text["run"]
    assert "16-bit compute\n99.7%" in text["precision"]
    assert "jit(train_step)/jit(main)/grad/layer_0/mlp/gelu_grad/fusion" in text["framework-ops"]
    rows = page.locator(".xw-ov-card[data-card='framework-ops'] tbody tr")
    assert rows.count() == 10
    assert page.locator(".xw-ov-card[data-card='hlo-ops'] tbody tr").count() == 10
    harness.picture(page, page.locator(".xw-overview"), "overview_tpu")

    assert page.locator(".xw-ov-advice .xw-ov-rule").first.inner_text() == "InputPipelineVerdict"
    buttons = page.locator(".xw-ov-advice button.xw-link")
    assert buttons.first.inner_text() == "Open Input Pipeline"
    buttons.first.click()
    lab.wait_ready(page, ".xw-ip[data-ready='1'], [data-ready='1'] .xw-ip")
    shown = harness.run_in_kernel(page, "print(suite.tab_keys[suite.tabs.selected_index])")
    assert shown.strip() == "input"
    harness.run_in_kernel(page, "suite.show('overview')")
    page.locator(".xw-ov-advice button.xw-link[data-tool='op']").first.click()
    for _ in range(50):
        shown = harness.run_in_kernel(page, "print(suite.tab_keys[suite.tabs.selected_index])")
        if shown.strip() == "op":
            break
        page.wait_for_timeout(100)
    assert shown.strip() == "op"


@pytest.mark.e2e
def test_overview_of_a_cpu_run_in_notebook7(notebook7):
    path = DATA / "jax_cpu_demo.xplane.pb"
    cells = [f"import xprof_widgets as xw\nxw.Overview({str(path)!r})"]
    page = notebook7.show("overview_cpu.ipynb", cells, READY)
    page.wait_for_selector(".xw-ov-card[data-card='precision']", timeout=30_000)
    text = cards(page)
    assert "none (CPU only)" in text["run"] and "XLA thread" in text["run"]
    assert "32-bit compute\n100%" in text["precision"].replace("100.0%", "100%")
    assert "Only 0.0% of host computation is 16 bit" in text["advice"]
    assert text["precision"].startswith("Host compute precision") and "Host compute time" in text["precision"]
    assert page.locator(".xw-ov-advice button").count() == 0  # no suite: nothing to open
    # each recommendation is tagged with its rule: XProf's smart suggestion first, then ours
    tags = page.locator(".xw-ov-advice .xw-ov-rule")
    assert tags.first.inner_text() == "HostProcessingBoundRule"
    assert tags.first.get_attribute("data-by") == "xprof"
    assert tags.last.inner_text() == "LowPrecisionShare" and tags.last.get_attribute("data-by") == "ours"
    assert "dot_general" in text["framework-ops"]
    harness.picture(page, page.locator(".xw-overview"), "overview_cpu_notebook7")
