"""GraphViewer in real JupyterLab and Notebook 7 on the TPU fixture: the graph draws around a
named op with the nodes Python lists, the op outlined, fills by share of device time; hovering a
node shows its card (numbers and HLO), W zooms, unticking "Merge fusions" draws the fusion's body
as a cluster, search + Enter centres on another op, and setting `op` from Python redraws."""

from __future__ import annotations

import hashlib
import json
import re

import harness
import pytest

TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
READY = ".xw-gv[data-ready='1']"
OP = "broadcast_add_fusion.2"

SCALE = """() => {
  const t = document.querySelector('.xw-gv-stage svg > g').getAttribute('transform');
  return Number(/scale\\(([^)]+)\\)/.exec(t)[1]);
}"""


def drawn_names(widget) -> list[str]:
    return widget.locator(".xw-gv-node").evaluate_all("(els) => els.map((e) => e.dataset.name)")


def kernel_says(page, expression: str, expected: str, tries: int = 20) -> str:
    """`print(expression)` in the kernel until it prints `expected` (ipywidgets holds a view's
    trait update back while an earlier message of the model is unanswered)."""
    out = ""
    for _ in range(tries):
        out = harness.run_in_kernel(page, f"print({expression})").strip()
        if out == expected:
            break
        page.wait_for_timeout(250)
    return out


def wait_op(page, op: str) -> None:
    page.wait_for_function(
        "([op]) => { const el = document.querySelector(\".xw-gv[data-ready='1']\");"
        " return el && el.querySelector('.xw-gv-title').textContent.startsWith(op + ' in '); }",
        arg=[op], timeout=20_000)


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_graph_viewer_draws_around_an_op(app_fixture, request):
    app = request.getfixturevalue(app_fixture)
    opened = f"g = xw.GraphViewer({str(TPU)!r}, op={OP!r}, width=2)\ng"
    cells = ["import json\nimport xprof_widgets as xw\n" + opened]
    page = app.open_and_run(app.notebook(f"graph_viewer_{app.server.app}.ipynb", cells))
    app.wait_ready(page, READY)
    widget = page.locator(".xw-gv").first
    wait_op(page, OP)
    expected = json.loads(harness.run_in_kernel(
        page, "n = g.nodes(); print(json.dumps(n.loc[~n['expanded'], 'name'].tolist()))"))
    assert sorted(drawn_names(widget)) == sorted(expected)
    assert widget.locator(".xw-gv-node.xw-gv-centre").get_attribute("data-name") == OP
    assert widget.locator(".xw-gv-edge").count() == int(harness.run_in_kernel(
        page, "print(len(g.edges()))"))
    title = widget.locator(".xw-gv-title").inner_text()
    assert f"{OP} in jit_f(12190760917235803885)" in title
    # The fusion ran on the device: its fill is redder than the background (untimed: none).
    fill = widget.locator(f".xw-gv-node[data-name='{OP}'] rect").get_attribute("fill")
    assert fill and re.fullmatch(r"#[0-9a-f]{6}", fill) and fill[1:3] == "ff" and fill != "#ffffff"
    harness.screenshot(widget, f"graph_viewer_{app.server.app}")

    # Hover: the card with the op's profile numbers and its HLO line.
    widget.locator(f".xw-gv-node[data-name='{OP}']").hover()
    card = widget.locator(f".xw-gv-card[data-name='{OP}']")
    card.wait_for(timeout=10_000)
    text = card.inner_text()
    assert "share of device time" in text and "fusion(" in text and "kind=kLoop" in text
    # Its source file was on the machine that ran the program, not on this one: said so.
    card.locator(".xw-gv-source").filter(has_text="not on this machine").wait_for(timeout=10_000)
    harness.screenshot(widget, f"graph_viewer_{app.server.app}_card")

    # One fusion expanded from its pinned card, collapsed again from its cluster's title.
    widget.locator(f".xw-gv-node[data-name='{OP}']").click()
    card.get_by_role("button", name="Expand fusion").click()
    cluster = page.locator(f".xw-gv[data-ready='1'] .xw-gv-cluster[data-name='{OP}']")
    cluster.wait_for(timeout=20_000)
    assert kernel_says(page, "g.toggled_fusions", str([OP])) == str([OP])
    cluster.locator("text").click()
    page.wait_for_selector(f".xw-gv[data-ready='1'] .xw-gv-node[data-name='{OP}']",
                           timeout=20_000)
    assert kernel_says(page, "g.toggled_fusions", "[]") == "[]"

    # W zooms in (keys go to the widget once the stage has focus).
    widget.locator(".xw-gv-stage").click(position={"x": 5, "y": 5})
    before = page.evaluate(SCALE)
    page.keyboard.press("w")
    assert page.evaluate(SCALE) == pytest.approx(before * 1.25, rel=1e-3)

    # Fusions expanded: the op is a cluster holding its fused computation.
    widget.get_by_text("Merge fusions").click()
    page.wait_for_selector(f".xw-gv[data-ready='1'] .xw-gv-cluster[data-name='{OP}']",
                           timeout=20_000)
    assert kernel_says(page, "g.merge_fusions", "False") == "False"
    expanded = json.loads(harness.run_in_kernel(
        page, "n = g.nodes(); print(json.dumps(n.loc[~n['expanded'], 'name'].tolist()))"))
    assert sorted(drawn_names(widget)) == sorted(expanded)
    harness.screenshot(widget, f"graph_viewer_{app.server.app}_expanded")

    # Search + Enter centres on another op; Python follows, and Python can lead.
    box = widget.locator("input[type=search]")
    box.fill("copy-done.4")
    box.press("Enter")
    wait_op(page, "copy-done.4")
    assert kernel_says(page, "g.op", "copy-done.4") == "copy-done.4"
    harness.run_in_kernel(page, "g.op = 'copy-start.2'")
    wait_op(page, "copy-start.2")
    assert "copy-start.2" in drawn_names(widget)


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_a_page_without_workers_lays_the_graph_out_on_its_own_thread(app_fixture, request):
    """Where no Web Worker can start (a page policy forbidding them; here no `Worker` at all)
    the worker's code runs on the page's thread, with the same binary request and reply."""
    app = request.getfixturevalue(app_fixture)
    opened = f"g = xw.GraphViewer({str(TPU)!r}, op={OP!r}, width=2)\ng"
    cells = ["import json\nimport xprof_widgets as xw\n" + opened]
    page = app.open_and_run(app.notebook(f"graph_viewer_no_worker_{app.server.app}.ipynb", cells),
                            init_script="delete window.Worker;")
    app.wait_ready(page, READY)
    assert page.evaluate("() => typeof window.Worker") == "undefined"
    widget = page.locator(".xw-gv").first
    wait_op(page, OP)
    expected = json.loads(harness.run_in_kernel(
        page, "n = g.nodes(); print(json.dumps(n.loc[~n['expanded'], 'name'].tolist()))"))
    assert sorted(drawn_names(widget)) == sorted(expected)
    assert widget.locator(".xw-gv-edge").count() == int(harness.run_in_kernel(
        page, "print(len(g.edges()))"))
    # A second layout (fusions expanded) runs there too.
    widget.get_by_text("Merge fusions").click()
    page.wait_for_selector(f".xw-gv[data-ready='1'] .xw-gv-cluster[data-name='{OP}']",
                           timeout=20_000)
    harness.screenshot(widget, f"graph_viewer_no_worker_{app.server.app}")


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_op_profile_card_opens_the_op_in_the_graph_viewer(app_fixture, request):
    """Inside the suite: pin an op in the Op Profile, click 'Open in Graph Viewer': the Graph
    Viewer tab shows, drawn around that op; its card's 'Op Profile' button goes back."""
    app = request.getfixturevalue(app_fixture)
    cells = [f"import xprof_widgets as xw\nsuite = xw.Profiler({str(TPU)!r}, tool='op')\nsuite"]
    page = app.open_and_run(app.notebook(f"graph_viewer_suite_{app.server.app}.ipynb", cells))
    app.wait_ready(page, ".xw-op-profile[data-ready='1']")
    view = page.locator(".xw-op-profile")
    view.locator("tr[data-kind='group'] [data-toggle]").first.click()
    view.locator("tr[data-kind='op'] td.xw-op-name").first.click()
    card = view.locator(".xw-op-card:not([hidden])")
    card.wait_for(timeout=30_000)
    op = card.locator(".xw-op-card-title > span").first.inner_text()
    card.get_by_role("button", name="Open in Graph Viewer").click()
    wait_op(page, op)
    graph = page.locator(".xw-gv[data-ready='1']")
    assert graph.locator(".xw-gv-node.xw-gv-centre").get_attribute("data-name") == op
    assert kernel_says(page, "suite.tool('graph').op", op) == op
    harness.screenshot(graph, f"graph_viewer_from_op_profile_{app.server.app}")
    graph.locator(".xw-gv-node.xw-gv-centre").click()
    graph.locator(".xw-gv-card").get_by_role("button", name="Op Profile").click()
    page.wait_for_function("() => document.querySelector('.xw-op-profile').checkVisibility()",
                           timeout=20_000)
    assert kernel_says(page, "suite.tool('op').name_filter", f"^{re.escape(op)}$") \
        == f"^{re.escape(op)}$"


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_trace_viewer_details_open_the_xla_op_in_the_graph_viewer(app_fixture, request):
    """Inside the suite: click an XLA op on the Trace Viewer's timeline, its details' 'Open in
    Graph Viewer': the Graph Viewer tab shows, drawn around that op, the op outlined."""
    import test_e2e_trace_viewer as trace

    app = request.getfixturevalue(app_fixture)
    cells = [(f"import xprof_widgets as xw\nsuite = xw.Profiler({str(TPU)!r}, tool='trace')\n"
              "tv = suite.tool('trace')\nsuite")]
    page = app.open_and_run(app.notebook(f"graph_viewer_trace_{app.server.app}.ipynb", cells))
    app.wait_ready(page, trace.READY)
    widget = page.locator(".xw-trace-viewer")
    tracks = trace.tracks_of(page)
    ops_track = next(t["id"] for t in tracks if t["name"] == "XLA Ops")  # the first chip's
    ops = f"tv.profile.events(track={ops_track})"
    event = trace.event_row(page, f"{ops}[{ops}['name'].str.contains('fusion')].iloc[0]")
    op = event["name"]
    trace.show_event(page, widget, event)
    box = widget.locator("canvas").bounding_box()
    x_mid = trace.LABEL_W + (box["width"] - trace.LABEL_W) / 2
    trace.click_at(page, widget, x_mid, trace.track_centre_y(tracks, ops_track,
                                                             int(event["depth"])))
    details = widget.locator(".xw-tv-details")
    details.locator(".xw-tv-title").wait_for(timeout=10_000)
    assert details.locator(".xw-tv-title").inner_text().startswith(op)  # then its links
    assert kernel_says(page, "tv.selected_events", f"[{event['event']}]") == f"[{event['event']}]"
    details.get_by_role("button", name="Open in Graph Viewer").click()
    wait_op(page, op)
    graph = page.locator(".xw-gv[data-ready='1']")
    assert graph.is_visible() and not widget.is_visible()  # the Graph Viewer's tab, in front
    assert graph.locator(".xw-gv-node.xw-gv-centre").get_attribute("data-name") == op
    assert kernel_says(page, "suite.tool('graph').op", op) == op
    harness.screenshot(graph, f"graph_viewer_from_trace_viewer_{app.server.app}")


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_memory_viewer_card_opens_the_defining_instruction(app_fixture, request):
    """Inside the suite: the Memory Viewer's pinned buffer card, 'open in Graph Viewer': the
    Graph Viewer tab, the buffer's module, drawn around the instruction that defines it."""
    import test_e2e_memory_viewer as memory

    app = request.getfixturevalue(app_fixture)
    cells = [f"import xprof_widgets as xw\nsuite = xw.Profiler({str(TPU)!r}, tool='memory')\nsuite"]
    page = app.open_and_run(app.notebook(f"graph_viewer_memory_{app.server.app}.ipynb", cells))
    app.wait_ready(page, ".xw-mv[data-ready='1']")
    point = memory.bar_point(page, "size", 0)
    page.mouse.click(point["x"], point["y"])
    card = page.locator(".xw-mv-card[data-buffer]")
    card.wait_for(timeout=10_000)
    op = card.locator(".xw-mv-card-op code").inner_text()
    card.get_by_role("button", name="open in Graph Viewer").click()
    wait_op(page, op)
    graph = page.locator(".xw-gv[data-ready='1']")
    assert graph.locator(".xw-gv-node.xw-gv-centre").get_attribute("data-name") == op
    assert "jit_f(12190760917235803885)" in graph.locator(".xw-gv-title").inner_text()
    harness.screenshot(graph, f"graph_viewer_from_memory_viewer_{app.server.app}")


# A synthetic training module of 4,535 entry instructions beside the fixture's own (a real
# profile with a module this large is hundreds of MB): the graph viewer reads modules from
# the profile's HLO protos, so the test puts one there before the widget first lists them.
BIG = f"""import xprof_widgets as xw
from xprof_widgets.synthetic.hlo import build_hlo_proto
from xprof_widgets.synthetic.program import layers_for, make_program
p = xw.open_profile({str(TPU)!r})
p._hosts[0].hlo_protos[1] = ("jit_big", build_hlo_proto(
    make_program("jit_big", "tpu", layers_for(4000), 1, True, 1e14, 1e12)))
p.__dict__.pop("hlo_modules", None)
g = xw.GraphViewer(p, module="jit_big(1)", op="fusion.1332", width=2)
g"""

# Counts animation frames while the view lays out (data-ready="layout") and the longest gap
# between two frames then: the page's own clock.
FRAMES = """() => {
  const el = document.querySelector('.xw-gv');
  const rec = (window.__gvFrames = { frames: 0, gap: 0, start: null, end: null, last: null });
  const tick = () => {
    const now = performance.now();
    const busy = el.dataset.ready === 'layout';
    if (busy) {
      rec.start ??= now;
      if (rec.last !== null) rec.gap = Math.max(rec.gap, now - rec.last);
      rec.frames += 1;
      rec.last = now;
    } else if (rec.start !== null && rec.end === null) {
      rec.end = now;
    }
    if (rec.end === null) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


# While the view shows its preview (data-ready="preview"): the most nodes drawn, and how many
# its status says the preview holds. The whole layout may land before the preview's last batch
# is drawn (it then replaces it), so the drawn count is at most the preview's.
PREVIEW_WATCH = """() => {
  const el = document.querySelector('.xw-gv');
  window.__gvPreview = { drawn: 0, said: null };
  new MutationObserver(() => {
    if (el.dataset.ready === 'preview') {
      const rec = window.__gvPreview;
      rec.drawn = Math.max(rec.drawn, el.querySelectorAll('.xw-gv-node').length);
      const said = el.querySelector('.xw-gv-status').textContent.match(/the ([\\d,]+) within 3 hops/);
      if (said) rec.said = Number(said[1].replaceAll(',', ''));
    }
  }).observe(el, { attributes: true, childList: true, subtree: true, characterData: true });
}"""


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_large_layouts_leave_the_page_responsive_and_the_whole_module_draws(app_fixture,
                                                                            request):
    """Dagre on 340 nodes takes seconds: in its worker the page's animation frames keep
    coming meanwhile. The whole module (fusions merged) draws the op's neighbourhood while it
    is laid out, then opens around the op; fitted, every
    instruction of the entry computation is painted on the overview's canvas; the HLO
    downloads are the module's proto and texts."""
    app = request.getfixturevalue(app_fixture)
    page = app.open_and_run(app.notebook(f"graph_viewer_big_{app.server.app}.ipynb", [BIG]))
    app.wait_ready(page, READY)
    wait_op(page, "fusion.1332")
    widget = page.locator(".xw-gv").first

    page.evaluate(FRAMES)
    harness.run_in_kernel(page, "g.merge_fusions, g.width = False, 6")
    page.wait_for_function("() => window.__gvFrames.end !== null", timeout=120_000)
    page.wait_for_selector(READY, timeout=60_000)
    rec = page.evaluate("() => window.__gvFrames")
    took = rec["end"] - rec["start"]
    assert int(widget.get_attribute("data-nodes")) == int(harness.run_in_kernel(
        page, "n = g.nodes(); print((~n['expanded']).sum())"))
    # Laid out on the page's thread, one frame would span the whole layout.
    assert took > 200 and rec["frames"] >= 5 and rec["gap"] < took / 2, rec
    assert widget.locator(".xw-gv-cluster").count() > 0

    page.evaluate(PREVIEW_WATCH)
    widget.get_by_text("Whole module").click()
    page.wait_for_function(
        "() => { const el = document.querySelector(\".xw-gv[data-ready='1']\");"
        " return el && el.querySelector('.xw-gv-title').textContent.includes('(all of computation'); }",
        timeout=120_000)
    assert kernel_says(page, "g.whole_module", "True") == "True"
    # While all of it was laid out, the op's neighbourhood (3 hops) was drawn.
    near = int(harness.run_in_kernel(page, "n = g.nodes(); print(n['distance'].between(0, 3).sum())"))
    preview = page.evaluate("() => window.__gvPreview")
    assert preview["said"] == near and 0 < preview["drawn"] <= near, (preview, near)
    expected = int(harness.run_in_kernel(page, "print(len(g.nodes()))"))
    # Opened at reading size around the op: only what lies within a screen of the view is drawn.
    assert expected > 4000 and 0 < widget.locator(".xw-gv-node").count() < expected / 4
    harness.screenshot(widget, f"graph_viewer_whole_module_{app.server.app}")
    # A graph this large comes without HLO lines: the card asks for its node's.
    widget.locator(".xw-gv-node.xw-gv-centre").hover()
    page.wait_for_function("() => document.querySelector('.xw-gv-card:not([hidden]) > pre')"
                           "?.textContent.startsWith('%fusion.1332 = ')", timeout=20_000)
    # Fitted, all of it is in view, too small to read: every node and edge painted on the
    # overview's canvas, the SVG hidden (no more SVG elements made for it).
    drawn = widget.locator(".xw-gv-node").count()
    widget.locator(".xw-gv-stage").click(position={"x": 5, "y": 5})
    page.keyboard.press("f")
    edges = int(harness.run_in_kernel(page, "print(len(g.edges()))"))
    canvas = widget.locator("canvas.xw-gv-overview")
    page.wait_for_function(
        "([n, e]) => { const c = document.querySelector('canvas.xw-gv-overview');"
        " return c && !c.hidden && c.dataset.painted === String(n) && c.dataset.edges === String(e); }",
        arg=[expected, edges], timeout=60_000)
    assert widget.get_attribute("data-overview") == "1"
    assert not widget.locator(".xw-gv-stage svg").is_visible()
    assert widget.locator(".xw-gv-node").count() == drawn
    assert widget.locator("input[type=number]").is_disabled()  # no width for the whole module
    harness.screenshot(widget, f"graph_viewer_whole_module_fitted_{app.server.app}")
    # The SVG download holds the nodes drawn so far, shown (the page's SVG is hidden now).
    with page.expect_download() as info:
        widget.get_by_role("button", name="SVG").click()
    with open(info.value.path(), encoding="utf-8") as f:
        svg = f.read()
    assert "display: none" not in svg and svg.count('class="xw-gv-node') == drawn
    # Zoomed back in past the overview's zoom: SVG again, drawn where the view is.
    for _ in range(20):
        if widget.get_attribute("data-overview") == "0":
            break
        page.keyboard.press("w")
    page.wait_for_function("() => document.querySelector('.xw-gv-stage svg').checkVisibility()",
                           timeout=10_000)
    assert canvas.is_hidden() and widget.locator(".xw-gv-node").count() > 0

    for kind, method in [("pb", "g.download('pb')"), ("long_txt", "g.download('long_txt').encode()")]:
        with page.expect_download() as info:
            widget.locator("select[title^='download']").select_option(kind)
        saved = info.value
        assert saved.suggested_filename == f"jit_big(1).{'hlo_proto.pb' if kind == 'pb' else 'long.txt'}"
        digest = harness.run_in_kernel(
            page, f"import hashlib; print(hashlib.sha256({method}).hexdigest())").strip()
        with open(saved.path(), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest
