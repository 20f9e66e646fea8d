"""GraphViewer in real JupyterLab and Notebook 7 on the TPU fixture: the graph draws around a
named op with the nodes Python lists, the op outlined, fills by share of device time; hovering a
node shows its card (numbers and HLO), W zooms, unticking "Merge fusions" draws the fusion's body
as a cluster, search + Enter centres on another op, and setting `op` from Python redraws."""

from __future__ import annotations

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
