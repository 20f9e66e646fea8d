"""Framework op stats, kernel stats, HLO stats and the roofline model in a real JupyterLab and
Notebook 7: pies and the roofline draw, the shared table sorts, filters, narrows by facets and
downloads its rows as CSV, the controls reach Python and back, and TPU custom calls are listed
(with "no cost model" in the op profile)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import harness
import pytest

DATA = harness.REPO / "tests" / "data"
TPU = DATA / "tpu_v6e_inference.xplane.pb"
SYNTHETIC_TPU = DATA / "synthetic_tpu.xplane.pb"
GPU = DATA / "synthetic_gpu.xplane.pb"
TF_CPU = DATA / "tf_keras_cpu_slow_map.xplane.pb"
APPS = ["lab", "notebook7"]

CANVAS_IN = """(selector) => {
  const walk = (n) => !!n && (n.tagName === 'CANVAS' || [...(n.shadowRoot?.children ?? []),
      ...n.children].some(walk));
  const boxes = [...document.querySelectorAll(selector)];
  return boxes.length > 0 && boxes.every(walk);
}"""


def open_tool(app, name: str, code: str, root: str):
    page = app.open_and_run(app.notebook(f"{name}.ipynb", [code]))
    app.wait_ready(page, f"{root}[data-ready='1']")
    widget = page.locator(root)
    page.wait_for_function(f"() => document.querySelector(\"{root}\").dataset.charts !== '0'",
                           timeout=30_000)
    page.wait_for_function(CANVAS_IN, arg=f"{root} .xw-chart", timeout=30_000)
    return page, widget


def rows_shown(widget, nth: int = 0) -> int:
    return int(widget.locator(".xw-dt").nth(nth).get_attribute("data-rows"))


def column(widget, key: str, nth: int = 0) -> list[str]:
    table = widget.locator(".xw-dt").nth(nth)
    index = table.locator("th").evaluate_all(
        f"(ths) => ths.findIndex((th) => th.dataset.key === {key!r})")
    return table.locator(f"tbody tr td:nth-child({index + 1})").all_inner_texts()


def download_csv(page, widget, nth: int = 0) -> list[dict]:
    with page.expect_download() as info:
        widget.locator(".xw-dt-csv").nth(nth).click()
    text = Path(info.value.path()).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def python_sees(page, expression: str, expected: str, tries: int = 20) -> bool:
    """Whether Python's value of `expression` becomes `expected`: a view's trait change reaches
    the kernel as its own message, which may come after the view's request is answered."""
    for _ in range(tries):
        if harness.run_in_kernel(page, f"print({expression})").strip() == expected:
            return True
        page.wait_for_timeout(250)
    return False


def picture(page, widget, name: str) -> None:
    """The whole widget in one picture, from its left edge."""
    page.mouse.move(0, 0)
    harness.picture(page, widget, name)
    page.set_viewport_size({"width": 1280, "height": 900})


@pytest.mark.e2e
def test_framework_op_stats(app):
    page, widget = open_tool(app, f"fw_{app.key}", (
        f"import xprof_widgets as xw\nfw = xw.FrameworkOpStats({str(TPU)!r})\nfw"), ".xw-fw")
    charts = widget.locator(".xw-chart[data-drawn='1']")
    # the host's only time is idle: no host pies (one slice says nothing)
    assert [c.get_attribute("data-chart") for c in charts.all()] == [
        "device_operation", "device_type"]
    assert rows_shown(widget) == 18
    assert column(widget, "operation")[:2] == ["copy-done.4", "copy-done.2"]
    head = widget.locator(".xw-tool-head").inner_text()
    assert "13.4%" in head  # device idle, as XProf's IDLE row

    # Sorting by clicking a title, then the filter box and a facet.
    widget.locator("th[data-key='occurrences']").click()
    assert column(widget, "occurrences")[0] == "400"
    widget.locator("th[data-key='total_self_time_us']").click()
    assert column(widget, "operation")[0] == "copy-done.4"
    widget.locator(".xw-dt-filter").fill("jit main")
    assert rows_shown(widget) == 3
    widget.locator(".xw-dt-filter").fill("")
    widget.locator("select[data-facet='host_or_device']").select_option("Host")
    assert set(column(widget, "host_or_device")) == {"Host"}
    rows = download_csv(page, widget)
    assert [r["operation"] for r in rows] == ["IDLE", "dummy"]
    assert list(rows[0]) == harness.run_in_kernel(
        page, "print(','.join(fw.to_dataframe().columns))").strip().split(",")
    widget.locator("select[data-facet='host_or_device']").select_option("")

    # Excluding idle from the view reaches Python; from Python the view follows.
    widget.locator(".xw-controls input[type='checkbox']").uncheck()
    page.wait_for_function("() => document.querySelector('.xw-fw .xw-dt').dataset.rows === '16'",
                           timeout=20_000)
    assert python_sees(page, "fw.include_idle", "False")
    harness.run_in_kernel(page, "fw.include_idle = True")
    page.wait_for_function("() => document.querySelector('.xw-fw .xw-dt').dataset.rows === '18'",
                           timeout=20_000)
    page.wait_for_function(CANVAS_IN, arg=".xw-fw .xw-chart", timeout=30_000)
    widget.locator("th[data-key='rank']").click()
    widget.locator("th[data-key='rank']").click()  # numbers sort largest first; again: 1, 2, ...
    assert column(widget, "rank")[:2] == ["1", "2"]
    if app.key == "lab":
        picture(page, widget, "framework_op_stats_tpu")


@pytest.mark.e2e
def test_framework_op_stats_of_tensorflow_on_the_host(notebook7):
    page, widget = open_tool(notebook7, "fw_tf", (
        f"import xprof_widgets as xw\nxw.FrameworkOpStats({str(TF_CPU)!r})"), ".xw-fw")
    charts = widget.locator(".xw-chart[data-drawn='1']")
    assert [c.get_attribute("data-chart") for c in charts.all()] == ["host_operation", "host_type"]
    assert set(column(widget, "host_or_device")) == {"Host"}
    picture(page, widget, "framework_op_stats_tf_cpu")


@pytest.mark.e2e
def test_kernel_stats(app):
    page, widget = open_tool(app, f"ks_{app.key}", (
        f"import xprof_widgets as xw\nks = xw.KernelStats({str(GPU)!r})\nks"), ".xw-ks")
    total = int(harness.run_in_kernel(page, "print(len(ks.to_dataframe()))"))
    assert rows_shown(widget) == total == 88
    widget.locator("select[data-facet='is_kernel_using_tensor_core']").select_option("true")
    using = int(harness.run_in_kernel(
        page, "print(int(ks.to_dataframe()['is_kernel_using_tensor_core'].sum()))"))
    assert rows_shown(widget) == using and set(column(widget, "is_kernel_using_tensor_core")) \
        == {"yes"}
    widget.locator("select[data-facet='is_kernel_using_tensor_core']").select_option("")
    widget.locator(".xw-dt-filter").fill("xmma_gemm")
    assert all("xmma_gemm" in name for name in column(widget, "kernel_name"))
    rows = download_csv(page, widget)
    assert len(rows) == rows_shown(widget) and rows[0]["block_dim"].count(",") == 2
    widget.locator(".xw-dt-filter").fill("")
    if app.key == "lab":
        picture(page, widget, "kernel_stats_gpu")


@pytest.mark.e2e
def test_tpu_custom_calls_have_no_cost_model(lab):
    sys.path.insert(0, str(harness.REPO / "tests" / "unit"))
    from xspace_builder import build_xspace

    kernel = ('%flash_attention = f32[8]{0} custom-call(f32[8]{0} %p), '
              'custom_call_target="tpu_custom_call"')
    metadata = {
        "fusion.1": {"display_name": "fusion.1", "stats": {
            "program_id": 7, "symbol_id": 1, "hlo_category": "loop fusion", "flops": 10_000,
            "bytes_accessed": 1000}},
        kernel: {"display_name": "flash_attention", "stats": {
            "program_id": 7, "symbol_id": 2, "hlo_category": "custom-call",
            "tf_op": "jit(f)/pallas_call:"}},
    }
    plane = {"name": "/device:TPU:0", "metadata": metadata,
             "stats": {"peak_teraflops_per_second": 100.0,
                       "peak_hbm_bw_gigabytes_per_second": 1000.0},
             "lines": [{"name": "XLA Ops", "events": [
                 ("fusion.1", 0, 2000, {}), (kernel, 2000, 30000, {}),
                 ("fusion.1", 40000, 2000, {}), (kernel, 42000, 50000, {})]}]}
    path = lab.server.root / "pallas.xplane.pb"
    path.write_bytes(build_xspace([plane]))
    code = (f"import xprof_widgets as xw\nks = xw.KernelStats({str(path)!r})\n"
            f"op = xw.OpProfile({str(path)!r})\ndisplay(ks)\ndisplay(op)")
    page = lab.open_and_run(lab.notebook("custom_calls.ipynb", [code]))
    lab.wait_ready(page, ".xw-ks[data-ready='1']")
    lab.wait_ready(page, ".xw-op-profile[data-ready='1']")
    widget = page.locator(".xw-ks")
    assert "TPU custom calls" in widget.locator(".xw-tool-title").inner_text()
    assert column(widget, "kernel_name") == ["flash_attention"]
    assert column(widget, "occurrences") == ["2"]
    assert widget.locator(".xw-chart").count() == 0  # one kernel: a table row says it all
    ops = page.locator(".xw-op-profile")
    ops.locator("tr[data-kind='group']", has_text="custom-call").locator("[data-toggle]").click()
    cell = ops.locator("tr[data-kind='op']").first.locator("td.xw-op-util").first
    cell.wait_for(timeout=10_000)
    assert cell.inner_text() == "no cost model"
    assert "no cost model" in ops.locator(".xw-op-read").inner_text()
    picture(page, widget, "kernel_stats_tpu_custom_calls")
    harness.screenshot(ops.locator(".xw-op-table"), "op_profile_no_cost_model")


@pytest.mark.e2e
def test_hlo_stats(app):
    page, widget = open_tool(app, f"hlo_{app.key}", (
        f"import xprof_widgets as xw\nxw.HloStats({str(TPU)!r})"), ".xw-hlo")
    assert rows_shown(widget) == 17
    widget.locator("select[data-facet='category']").select_option("copy-done")
    assert rows_shown(widget) == 6 and set(column(widget, "category")) == {"copy-done"}
    widget.locator("select[data-facet='category']").select_option("")
    widget.locator("select[data-facet='bound_by']").select_option("HBM")
    assert set(column(widget, "bound_by")) == {"HBM"}
    widget.locator("select[data-facet='bound_by']").select_option("")
    widget.locator(".xw-dt-filter").fill("broadcast_add")  # names, and HLO texts using them
    names = set(column(widget, "hlo_op_name"))
    assert {"broadcast_add_fusion", "broadcast_add_fusion.1", "broadcast_add_fusion.2"} <= names
    assert rows_shown(widget) < 17
    widget.locator(".xw-dt-filter").fill("")
    if app.key == "lab":
        picture(page, widget, "hlo_stats_tpu")


@pytest.mark.e2e
def test_roofline_model(app):
    page, widget = open_tool(app, f"roof_{app.key}", (
        f"import xprof_widgets as xw\nroof = xw.RooflineModel({str(SYNTHETIC_TPU)!r})\nroof"),
        ".xw-roof")
    page.wait_for_function("() => Number(document.querySelector('.xw-roof').dataset.points) > 0",
                           timeout=20_000)
    all_points = int(widget.get_attribute("data-points"))
    assert rows_shown(widget, 1) == 68 and rows_shown(widget, 0) == 65
    # Narrowing the op table narrows the chart's points.
    widget.locator(".xw-dt").nth(1).locator("select[data-facet='bound_by']").select_option(
        "Compute")
    compute = rows_shown(widget, 1)
    page.wait_for_function(
        f"() => document.querySelector('.xw-roof').dataset.points === '{compute}'",
        timeout=10_000)
    assert 0 < compute < all_points
    # The program picker and the infeed toggle reach Python; the chart redraws.
    widget.locator(".xw-controls select").first.select_option("7")
    page.wait_for_function("() => document.querySelector('.xw-roof').dataset.ready === '1'",
                           timeout=20_000)
    assert python_sees(page, "roof.step", "7")
    harness.run_in_kernel(page, "roof.include_infeed_outfeed = False")
    page.wait_for_function(CANVAS_IN, arg=".xw-roof .xw-chart", timeout=30_000)
    assert not widget.locator(".xw-controls input[type='checkbox']").is_checked()
    page.wait_for_function(
        f"() => document.querySelector('.xw-roof').dataset.points === '{compute}'",
        timeout=10_000)  # the facet choice stays across the new answer
    harness.run_in_kernel(page, "roof.include_infeed_outfeed = True")
    widget.locator(".xw-dt").nth(1).locator("select[data-facet='bound_by']").select_option("")
    page.wait_for_function(
        f"() => document.querySelector('.xw-roof').dataset.points === '{all_points}'",
        timeout=20_000)
    if app.key == "lab":
        picture(page, widget, "roofline_model_tpu")


@pytest.mark.e2e
def test_the_suite_shows_the_tools_that_have_data(lab):
    code = (f"import xprof_widgets as xw\nsuite = xw.Profiler({str(GPU)!r})\nsuite")
    page = lab.open_and_run(lab.notebook("suite_tools.ipynb", [code]))
    lab.wait_ready(page, ".xw-overview")
    titles = page.locator(".lm-TabBar-tab .lm-TabBar-tabLabel").all_inner_texts()
    assert {"Framework Op Stats", "Kernel Stats", "HLO Stats", "Roofline Model"} <= set(titles)
    for title, root in (("Kernel Stats", ".xw-ks"), ("Roofline Model", ".xw-roof")):
        page.locator(".lm-TabBar-tab", has_text=title).click()
        lab.wait_ready(page, f"{root}[data-ready='1']")
        page.wait_for_function(CANVAS_IN, arg=f"{root} .xw-chart", timeout=30_000)
    assert python_sees(page, "sorted(suite._tools)",
                       "['kernel_stats', 'overview', 'roofline']")
