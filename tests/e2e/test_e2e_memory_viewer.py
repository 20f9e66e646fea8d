"""MemoryViewer in a real JupyterLab: the summary and charts render, switching memory space and
module (from the dropdowns and from Python) redraws them, hovering a buffer shows its card and
its lifetime on the memory chart, the card's link sets `link`, and bad input says what is
missing."""

from __future__ import annotations

import sys

import harness
import pytest

TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
CPU = harness.REPO / "tests" / "data" / "jax_cpu_demo.xplane.pb"
TORCH = harness.REPO / "tests" / "data" / "torch_tiny_mlp.pt.trace.json.gz"
READY = ".xw-mv[data-ready='1']"


# Page coordinates of bar `i` of a bar chart, from the Bokeh view that drew it: the middle of
# the bar's x, just above the axis (the bars' hover answers anywhere on that vertical line).
BAR_POINT = """([key, i]) => {
  const host = document.querySelector(`.xw-mv [data-chart='${key}']`);
  const views = [...window.Bokeh.index];
  const plot = views.find((v) => host.contains(v.el));
  const source = plot.model.document.get_model_by_name("bars");
  const x = plot.frame.x_scale.compute(source.data.x[i]);
  const canvas = plot.canvas_view.el.getBoundingClientRect();
  return {x: canvas.left + x, y: canvas.top + plot.frame.bbox.bottom - 3};
}"""

# Column `name` of the data source named `source` in a chart.
SOURCE_COLUMN = """([key, source, name]) => {
  const host = document.querySelector(`.xw-mv [data-chart='${key}']`);
  const views = [...window.Bokeh.index];
  const plot = views.find((v) => host.contains(v.el));
  return [...plot.model.document.get_model_by_name(source).data[name]];
}"""

# Width in pixels of the plotting area of a chart, as Bokeh laid it out.
FRAME_WIDTH = """(key) => {
  const host = document.querySelector(`.xw-mv [data-chart='${key}']`);
  const plot = [...window.Bokeh.index].find((v) => host.contains(v.el));
  return plot.frame.bbox.width;
}"""



def open_viewer(lab, name: str, source: str, extra: str = ""):
    cells = [f"import xprof_widgets as xw\nmv = xw.MemoryViewer({source}{extra})\nmv"]
    page = lab.show(f"{name}.ipynb", cells, READY)
    return page, page.locator(".xw-mv")


def wait_drawn(page, module: str | None = None, space: str | None = None) -> None:
    selector = READY + (f"[data-module='{module}']" if module else "") + (
        f"[data-space='{space}']" if space else "")
    page.wait_for_selector(selector, timeout=20_000)


def bar_point(page, key: str, i: int) -> dict:
    page.locator(f".xw-mv [data-chart='{key}']").scroll_into_view_if_needed()
    return page.evaluate(BAR_POINT, [key, i])


def hover_bar(page, key: str, i: int) -> None:
    point = bar_point(page, key, i)
    page.mouse.move(point["x"], point["y"])


def canvases(widget, key: str) -> int:
    return widget.locator(f"[data-chart='{key}']").evaluate("""(host) => {
        const walk = (n) => (n.tagName === 'CANVAS' ? 1 : 0) + [...(n.shadowRoot?.children ?? []),
            ...n.children].reduce((sum, c) => sum + walk(c), 0);
        return walk(host);
    }""")


@pytest.mark.e2e
def test_memory_viewer_tpu_charts_hover_switch(lab):
    page, widget = open_viewer(lab, "memory_viewer_tpu", repr(str(TPU)))
    jit_f = "jit_f(12190760917235803885)"
    assert widget.get_attribute("data-module") == jit_f  # the largest peak: no step-like name
    assert widget.get_attribute("data-space") == "HBM"
    summary = widget.locator(".xw-mv-summary").inner_text()
    assert "20.00 GiB" in summary and "broadcast_add_fusion.2" in summary
    assert "program order\n3" in summary or "program order 3" in summary
    for key in ("curve", "program", "size", "padding"):
        assert canvases(widget, key) >= 1, key
    modules = widget.locator("select").first.locator("option").all_inner_texts()
    assert len(modules) == 4 and "jit_f (12190760917235803885)" in modules
    spaces = widget.locator("select").nth(1).locator("option").all_inner_texts()
    assert spaces == ["HBM", "SFlag", "Host"]

    # The curve: 12 steps, the peak line at step 3.
    assert page.evaluate(SOURCE_COLUMN, ["curve", "curve", "x"]) == list(range(12))

    # Hovering a bar of the size chart shows its card and its lifetime on the curve.
    hover_bar(page, "size", 0)
    card = widget.locator(".xw-mv-card[data-buffer]")
    card.wait_for(timeout=10_000)
    text = card.inner_text()
    assert "5.00 GiB" in text and "f32[5,1024,1024,256]{3,2,1,0:T(8,128)}" in text
    assert "temporary" in text and "show in Trace Viewer" in text
    name = card.get_attribute("data-buffer")
    lifetime = page.evaluate(SOURCE_COLUMN, ["curve", "lifetime", "left"])
    assert len(lifetime) == 1
    harness.picture(page, widget, "memory_viewer_tpu")

    # A click pins the card; the link asks for the defining op in the Trace Viewer.
    point = bar_point(page, "size", 0)
    page.mouse.click(point["x"], point["y"])
    hover_bar(page, "size", 3)
    assert card.get_attribute("data-buffer") == name  # pinned: hovering elsewhere keeps it
    card.locator("button").click()
    op = name.split("{")[0]
    wanted = str({"tool": "trace", "op": op})
    for _ in range(50):  # the view sends {} and then the request, one message after the other
        if harness.run_in_kernel(page, "print(mv.link)").strip() == wanted:
            break
        page.wait_for_timeout(100)
    assert harness.run_in_kernel(page, "print(mv.link)").strip() == wanted
    assert "link = " in card.inner_text()

    # Switching the memory space redraws everything; SFlag has no padding: no padding chart.
    widget.locator("select").nth(1).select_option("SFlag")
    wait_drawn(page, jit_f, "SFlag")
    assert "program order" in widget.locator(".xw-mv-summary").inner_text()
    assert widget.locator(".xw-mv-card[data-buffer]").count() == 0  # a new module: no card
    assert widget.get_attribute("data-padding") == "none"
    assert widget.locator("[data-chart='padding']").is_hidden()
    assert "carries padding" in widget.locator(".xw-mv-nopadding").inner_text()

    # Switching module from the dropdown: jit_broadcast_in_dim has no heap steps in HBM.
    widget.locator("select").first.select_option("jit_broadcast_in_dim(11287434908481120160)")
    wait_drawn(page, "jit_broadcast_in_dim(11287434908481120160)", "HBM")
    assert widget.get_attribute("data-curve") == "none"
    assert "allocates nothing on the heap" in widget.inner_text()
    assert widget.locator("select").nth(1).locator("option").all_inner_texts() == [
        "HBM", "SparseCore"]
    # The padding chart is back, drawn at full width (the small lump's 508 B of padding).
    assert widget.get_attribute("data-padding") == "drawn"
    assert page.evaluate(SOURCE_COLUMN, ["padding", "bars", "size"])[0] == 508
    page.wait_for_function(f"() => ({FRAME_WIDTH})('padding') > 300", timeout=10_000)

    # From Python: the view follows the traits.
    harness.run_in_kernel(page, "mv.module = 'jit_f'; mv.memory_space = 'Host'")
    wait_drawn(page, jit_f, "Host")
    assert "15.00 GiB" in widget.locator(".xw-mv-summary").inner_text()
    assert widget.locator("select").first.input_value() == jit_f
    harness.run_in_kernel(page, "mv.memory_space = 'HBM'")
    wait_drawn(page, jit_f, "HBM")
    assert widget.get_attribute("data-curve") == "drawn"
    assert canvases(widget, "curve") >= 1


@pytest.mark.e2e
def test_memory_viewer_cpu_profile(lab):
    page, widget = open_viewer(lab, "memory_viewer_cpu", repr(str(CPU)))
    assert widget.get_attribute("data-module") == "jit_train_step(8)"  # XProf's program id
    summary = widget.locator(".xw-mv-summary").inner_text()
    assert "13.41 MiB" in summary and "ynn_fusion.3" in summary
    hover_bar(page, "program", 8)
    card = widget.locator(".xw-mv-card[data-buffer]")
    card.wait_for(timeout=10_000)
    assert "demo.py" in card.inner_text()
    harness.picture(page, widget, "memory_viewer_cpu")


@pytest.mark.e2e
def test_memory_viewer_without_hlo_protos_says_how_to_get_them(lab):
    page, widget = open_viewer(lab, "memory_viewer_no_hlo", repr(str(TORCH)))
    assert widget.get_attribute("data-state") == "message"
    message = widget.locator(".xw-mv-message").inner_text()
    assert "no HLO protos" in message and "jax.profiler.trace" in message
    assert widget.locator(".xw-mv-body").is_hidden()
    assert widget.locator("select").first.is_hidden()  # no module to choose
    harness.picture(page, widget, "memory_viewer_no_hlo")


@pytest.mark.e2e
def test_memory_viewer_module_without_buffer_assignment(lab):
    sys.path.insert(0, str(harness.REPO / "tests" / "unit"))
    from xspace_builder import build_xspace

    from xprof_widgets.profile.schema import HloProto

    proto = HloProto()
    proto.hlo_module.name, proto.hlo_module.id = "jit_step", 1
    path = lab.server.root / "no_buffer_assignment.xplane.pb"
    path.write_bytes(build_xspace([
        {"name": "/host:CPU", "lines": [{"name": "python", "events": [("step", 0, 1000, {})]}]},
        {"name": "/host:metadata",
         "metadata": {"jit_step(1)": {"stats": {"Hlo Proto": proto.SerializeToString()}}}},
    ]))
    page, widget = open_viewer(lab, "memory_viewer_no_ba", repr(str(path)))
    assert widget.get_attribute("data-state") == "message"
    message = widget.locator(".xw-mv-message").inner_text()
    assert "jit_step(1)" in message and "buffer assignment" in message
    assert "jax.profiler.trace" in message
    harness.picture(page, widget, "memory_viewer_no_buffer_assignment")


@pytest.mark.e2e
def test_memory_viewer_large_module(lab):
    """20,000 buffers, 400 live at a time: the curve is decimated, each bar chart bounded."""
    sys.path.insert(0, str(harness.REPO / "tests" / "unit"))
    from test_memory_viewer_widget import profile_with, synthetic_module

    path = lab.server.root / "large_module.xplane.pb"
    path.write_bytes(profile_with({"jit_tiny(1)": synthetic_module(20, "jit_tiny"),
                                   "jit_large_step(2)": synthetic_module(20_000, live=400)}))
    page, widget = open_viewer(lab, "memory_viewer_large", repr(str(path)),
                               ", module='jit_tiny'")
    widget.locator("select").first.select_option("jit_large_step(2)")
    wait_drawn(page, "jit_large_step(2)", "HBM")
    points = page.evaluate(SOURCE_COLUMN, ["curve", "curve", "x"])
    assert 1000 < len(points) <= 8003 and points[-1] > 39_000
    for key in ("program", "size", "padding"):
        assert len(page.evaluate(SOURCE_COLUMN, [key, "bars", "row"])) == 256
    assert "each chart shows the 256 largest" in widget.inner_text()
    hover_bar(page, "padding", 0)
    card = widget.locator(".xw-mv-card[data-buffer]")
    card.wait_for(timeout=10_000)
    assert "extra" in card.inner_text() and "model.py:" in card.inner_text()
    assert len(page.evaluate(SOURCE_COLUMN, ["curve", "lifetime", "left"])) == 1
    harness.picture(page, widget, "memory_viewer_large")


@pytest.mark.e2e
def test_memory_viewer_in_the_suite_links_to_the_trace(lab):
    logdir = lab.logdir("suite_logdir", {"vm.xplane.pb": CPU})
    cells = [f"import xprof_widgets as xw\nsuite = xw.Profiler({logdir!r}, tool='overview')\nsuite"]
    page = lab.show("memory_viewer_suite.ipynb", cells, "[data-ready='1']")
    page.locator(".lm-TabBar-tab", has_text="Memory Viewer").click()
    lab.wait_ready(page, READY)
    # Drawn while its tab was being shown: Bokeh laid the charts out at the tab's width.
    page.wait_for_function(f"() => ({FRAME_WIDTH})('curve') > 600", timeout=10_000)
    # The largest buffer an op defines (parameters and constants have no op to show).
    first_op = harness.run_in_kernel(page, (
        "b = suite.tool('memory').to_dataframe(order='size')\n"
        "print(int((~b.allocation_type.isin(['parameter', 'constant'])).to_numpy().argmax()))"))
    hover_bar(page, "size", int(first_op))
    card = page.locator(".xw-mv-card[data-buffer]")
    card.wait_for(timeout=10_000)
    card.locator("button.xw-mv-link").click()
    page.wait_for_function("""() => [...document.querySelectorAll('.lm-TabBar-tab')]
        .some((t) => t.textContent.includes('Trace Viewer')
                     && t.classList.contains('lm-mod-current'))""", timeout=20_000)
    # The suite selects the op's runs once the trace index is built (seconds on a fresh machine,
    # where numba compiles it): wait for the view to show the selection, then ask the kernel.
    page.wait_for_function("() => Number(document.querySelector('.xw-trace-viewer')"
                           "?.dataset.selected || 0) > 0", timeout=60_000)
    assert harness.run_in_kernel(page, "print(len(suite.tool('trace').selected_events) > 0)"
                                 ).strip() == "True"
