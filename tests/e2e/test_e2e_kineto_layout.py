"""Kernel Stats and the Trace Viewer on PyTorch (Kineto) traces at 1,400 px (issue 30 item 8):
time columns in view, kernel names that keep their function's name, occupancy the trace does not
state reading unknown; the timeline's GPU rows first, ranks in order, its height dragged."""

from __future__ import annotations

import harness
import pytest

PUBLIC = harness.REPO / "tests" / "data" / "public"
NCCL = PUBLIC / "hta" / "nccl_parser_config" / "nccl_data.json.gz"
DLRM = PUBLIC / "param" / "dlrm_v100_8rank"
WIDTH = 1400


def picture(page, locator, name: str) -> None:
    """Screenshot a widget at 1,400 px (harness.picture)."""
    harness.picture(page, locator, name, width=WIDTH)


def kernel(page, code: str) -> str:
    return harness.run_in_kernel(page, code).strip()


@pytest.mark.e2e
def test_kernel_stats_kineto_layout(app):
    cells = [f"import xprof_widgets as xw\nks = xw.KernelStats({str(NCCL)!r})\nks"]
    page = app.show(f"kineto_layout_ks_{app.key}.ipynb", cells, ".xw-ks[data-ready='1']", width=WIDTH)
    widget = page.locator(".xw-ks")
    widget.locator("tbody tr").first.wait_for(timeout=30_000)
    widget.locator(".xw-chart[data-drawn='1'] .xw-pie-legend").wait_for(timeout=30_000)
    picture(page, widget, "kineto_layout_kernel_stats" + ("" if app.key == "lab" else f"_{app.key}"))

    # the plugin's kernel view columns: blocks per SM, est. achieved occupancy, Tensor Cores used
    shown = widget.locator("thead th").evaluate_all(
        "(ths) => ths.filter((th) => !th.hidden).map((th) => th.dataset.key)")
    assert {"mean_blocks_per_sm", "mean_est_achieved_occupancy_pct",
            "is_kernel_using_tensor_core"} <= set(shown)
    # the pie's legend keeps a kernel's function, cut as the table cuts; the full name on hover
    legend = widget.locator(".xw-pie-legend li")
    assert legend.count() == 11 and legend.last.inner_text().startswith("(other) (")
    entry = legend.filter(has_text="vectorized_elementwise_kernel<").first
    assert entry.inner_text().startswith("vectorized_elementwise_kernel<4, ")
    assert entry.get_attribute("title").startswith("void at::native::vectorized_elementwise_kernel<4, ")
    assert legend.first.inner_text().startswith("ncclKernel_AllReduce_RING_LL_Sum_float")

    # every time column is in view beside the name, no sideways scroll needed
    box = widget.locator(".xw-dt-scroll").bounding_box()
    for key in ("total_duration_us", "avg_duration_us", "min_duration_us", "max_duration_us"):
        head = widget.locator(f"th[data-key='{key}']").bounding_box()
        assert head["x"] + head["width"] <= box["x"] + box["width"], key
    # a cut name keeps its function's name; the whole name on hover
    cell = widget.locator("td[title*='vectorized_elementwise_kernel<']").first
    assert "vectorized_elementwise_kernel" in cell.inner_text()
    assert len(cell.inner_text()) <= 48 < len(cell.get_attribute("title"))
    # an occupancy the trace does not state reads unknown, never 0%
    unstated = int(kernel(page, "print(int(ks.to_dataframe()['occupancy_pct'].isna().sum()))"))
    hidden = widget.locator(".xw-dt").get_attribute("data-hidden-columns").split(",")
    if "occupancy_pct" not in hidden:
        index = widget.locator("thead th").evaluate_all(
            "(ths) => ths.findIndex((th) => th.dataset.key === 'occupancy_pct')")
        texts = widget.locator(f"tbody tr td:nth-child({index + 1})").all_inner_texts()
        assert texts.count("unknown") == unstated


@pytest.mark.e2e
def test_trace_viewer_kineto_layout(lab):
    cells = [f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(DLRM)!r})\ntv"]
    page = lab.show("kineto_layout_tv.ipynb", cells, ".xw-trace-viewer[data-ready='1']", width=WIDTH)
    page.wait_for_timeout(1000)
    widget = page.locator(".xw-trace-viewer")
    picture(page, widget, "kineto_layout_trace_viewer")

    # the GPU rows of the 8 ranks come first, in rank order
    sections = kernel(page, "s = tv._summary['tracks']; print('|'.join(dict.fromkeys(s['section'])))")
    assert sections.split("|")[:8] == [f"python3 ({r}) GPU {r}" for r in range(8)]

    # the handle under the timeline makes it taller; the kernel keeps the height
    canvas = widget.locator("canvas")
    assert canvas.evaluate("(c) => c.clientHeight") == 600
    handle = widget.locator(".xw-tv-resize").bounding_box()
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y + 120, steps=5)
    page.mouse.move(x, y + 250, steps=5)
    page.mouse.up()
    assert canvas.evaluate("(c) => c.clientHeight") == 850
    for _ in range(40):
        if kernel(page, "print(tv.height)") == "850":
            break
        page.wait_for_timeout(100)
    assert kernel(page, "print(tv.height)") == "850"
    picture(page, widget, "kineto_layout_trace_viewer_taller")


# The major ticks BokehJS draws on each step axis of the page's charts, over its x range as drawn.
STEP_TICKS = """() => {
  const out = [];
  for (const doc of window.Bokeh.documents) {
    for (const model of doc.all_models) {
      if (model.type !== "Figure") continue;
      for (const axis of model.below) {
        if (!/\\bstep\\b/i.test(axis.axis_label ?? "")) continue;
        const range = model.x_range;
        const ticks = axis.ticker.get_ticks(range.start, range.end, range, NaN);
        out.push({label: axis.axis_label, start: range.start, end: range.end, major: [...ticks.major]});
      }
    }
  }
  return out;
}"""


@pytest.mark.e2e
def test_one_step_charts_tick_whole_steps(lab):
    trace = next(DLRM.glob("worker0_*"))
    cells = [f"import xprof_widgets as xw\nip = xw.InputPipeline({str(trace)!r})\nip"]
    page = lab.show("kineto_layout_ip.ipynb", cells, ".xw-ip[data-ready='1']", width=WIDTH)
    widget = page.locator(".xw-ip")
    assert "1 step" in widget.locator(".xw-ip-summary").inner_text()
    page.locator(".xw-ip [data-chart='steps'] canvas").first.wait_for(timeout=30_000)
    picture(page, widget.locator(".xw-ip-device"), "kineto_layout_one_step")
    axes = page.evaluate(STEP_TICKS)
    assert len(axes) == 2, axes  # step time and the input share of each step
    for axis in axes:
        assert axis["end"] - axis["start"] < 2  # one step: a fractional axis without the ticker
        assert axis["major"] and all(t == int(t) for t in axis["major"]), axis


RESNET50 = (PUBLIC / "torch_tb_plugin"
            / "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz")
NARROW = 1100


def _inside(widget, inner: str, outer: str) -> list[str]:
    """The `inner` elements of `widget` whose right edge passes `outer`'s (cut, or off to the
    side), by their text."""
    return widget.evaluate("""(el, [inner, outer]) => {
      const box = el.querySelector(outer).getBoundingClientRect();
      return [...el.querySelectorAll(inner)].filter((x) => !x.hidden && x.offsetParent !== null
        && x.getBoundingClientRect().right > box.right + 0.5).map((x) => x.textContent);
    }""", [inner, outer])


@pytest.mark.e2e
def test_resnet50_v100_layout(app):
    """torch-tb-profiler's ResNet50 V100 sample at 1,100 px: the Overview's top framework ops
    card shows its last column, Kernel Stats' Tensor Core columns are in view beside the kernel
    names, and the Trace Viewer has no row headed only `Process` / `Thread` (issue 30)."""
    cells = ["import xprof_widgets as xw",
             f"ov = xw.Overview({str(RESNET50)!r})\nov",
             f"ks = xw.KernelStats({str(RESNET50)!r})\nks",
             f"tv = xw.TraceViewer({str(RESNET50)!r})\ntv"]
    page = app.show(f"kineto_layout_rn50_{app.key}.ipynb", cells,
                    ".xw-trace-viewer[data-ready='1']", width=NARROW)
    suffix = "" if app.key == "lab" else f"_{app.key}"

    overview = page.locator(".xw-overview")
    card = overview.locator("[data-card='framework-ops']")
    card.wait_for(timeout=30_000)
    harness.picture(page, overview, f"kineto_layout_rn50_overview{suffix}", width=NARROW)
    assert _inside(card, "th, td", ".xw-ov-scroll") == []
    scroll = card.locator(".xw-ov-scroll")
    assert scroll.evaluate("(s) => s.scrollWidth <= s.clientWidth")
    # ... and the names keep room: the card has a row of its own
    name = card.locator("td.xw-ov-name").first
    assert name.evaluate("(td) => td.clientWidth") >= 200
    assert card.evaluate("(c) => c.clientWidth") >= overview.evaluate("(o) => o.clientWidth") - 4

    ks = page.locator(".xw-ks")
    ks.locator("tbody tr").first.wait_for(timeout=30_000)
    harness.picture(page, ks, f"kineto_layout_rn50_kernel_stats{suffix}", width=NARROW)
    # Tensor Core use right after the times, before the op's long name: at 1,100 px in
    # Notebook 7 everything up to it is in view
    shown = ks.locator("thead th").evaluate_all(
        "(ths) => ths.filter((th) => !th.hidden).map((th) => th.dataset.key)")
    assert shown.index("is_op_tensor_core_eligible") < shown.index("op_name")
    # in JupyterLab (~650 px) names are cut to 32 characters (a function's name whole), so the
    # times up to Min stay in view
    keys = shown[:shown.index("op_name" if app.key == "notebook7" else "min_duration_us") + 1]
    cut = _inside(ks, ", ".join(f"th[data-key='{k}']" for k in keys if k != "op_name"),
                  ".xw-dt-scroll")
    assert cut == [], cut

    tv = page.locator(".xw-trace-viewer")
    harness.picture(page, tv, f"kineto_layout_rn50_trace_viewer{suffix}", width=NARROW)
    rows = kernel(page, "s = tv._summary['tracks']; "
                  "print('|'.join(f'{a}/{b}' for a, b in zip(s['section'], s['name'])))")
    for row in rows.split("|"):
        section, name = row.split("/", 1)
        assert section.strip() not in ("", "Process") and name.strip() not in ("", "Thread"), row
