"""The Trace Viewer in a 500 px cell (issue 22, layout): its toolbar stays one row that scrolls
sideways, the search box and its buttons side by side, and the timeline starts right under it."""

from __future__ import annotations

import harness
import pytest

TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
READY = ".xw-trace-viewer[data-ready='1']"
CELL_PX = 500

# Each toolbar control's box, the toolbar's and the timeline canvas's (page coordinates).
BOXES = """(viewer) => {
  const box = (e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; };
  const bar = viewer.querySelector('.xw-tv-toolbar');
  return { bar: box(bar), scroll: bar.scrollWidth, client: bar.clientWidth,
           controls: [...bar.children].filter((e) => e.offsetParent !== null)
             .map((e) => ({ ...box(e), what: e.className || e.tagName.toLowerCase() }))
             .sort((a, b) => a.x - b.x),
           canvas: box(viewer.querySelector('.xw-tv-stage canvas')) };
}"""


def one_row(page, viewer) -> dict:
    """Asserts the toolbar is one row above the timeline; returns its boxes."""
    got = page.evaluate(BOXES, viewer.element_handle())
    bar, controls = got["bar"], got["controls"]
    assert bar["width"] <= CELL_PX + 1, bar
    assert bar["height"] <= 40, f"the toolbar wrapped: {bar['height']} px high"
    middles = {round(c["y"] + c["height"] / 2) for c in controls}
    assert max(middles) - min(middles) <= 2, controls
    assert got["canvas"]["y"] >= bar["y"] + bar["height"] - 1, (got["canvas"], bar)
    return got


@pytest.mark.e2e
def test_the_toolbar_scrolls_in_a_500px_cell(lab):
    cells = [("import ipywidgets\nimport xprof_widgets as xw\ntv = xw.TraceViewer("
              f"{str(TPU)!r}, height=300)\n"
              f"ipywidgets.Box([tv], layout=ipywidgets.Layout(width='{CELL_PX}px'))")]
    page = lab.show("trace_narrow.ipynb", cells, READY)
    viewer = page.locator(".xw-trace-viewer")
    got = one_row(page, viewer)
    assert got["scroll"] > got["client"]  # more than fits: it scrolls, not wraps
    harness.screenshot(viewer, "trace_viewer_narrow")

    # A search: the box, its buttons and its hit count are in sight without scrolling, right
    # after the tools; the filter, flow switch and help come after them.
    search = viewer.locator(".xw-tv-search")
    search.fill("fusion")
    search.press("Enter")
    page.wait_for_function("(v) => Number(v.dataset.hits) > 0", arg=viewer.element_handle(),
                           timeout=30_000)
    got = one_row(page, viewer)
    bar, controls = got["bar"], got["controls"]
    at = [c["what"] for c in controls]
    search_at = at.index("xw-tv-search")
    cluster = controls[search_at:search_at + 4]  # the box, previous, next, the count
    assert [c["what"] for c in cluster] == ["xw-tv-search", "button", "button", "xw-tv-hits"], at
    assert all(c["x"] + c["width"] <= bar["x"] + bar["width"] + 1 for c in cluster), cluster
    assert at.index("xw-tv-filter") > search_at
    harness.screenshot(viewer, "trace_viewer_narrow_search")
    help_button = viewer.locator(".xw-tv-toolbar > button", has_text="?")
    help_button.scroll_into_view_if_needed()
    help_button.click()
    assert viewer.locator(".xw-tv-help").is_visible()
