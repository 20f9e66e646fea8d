"""The pivot of a box selection in the Trace Viewer, in JupyterLab and Notebook 7: grouped by
section, track and name with count, total, self and average; regrouped from its menu; the same
table as `tv.selection_pivot()`."""

from __future__ import annotations

import json

import harness
import pytest
from test_e2e_trace_viewer import LABEL_W, READY, drag, track_centre_y, tracks_of, view_window

PROFILE = harness.REPO / "tests" / "data" / "compare" / "loader_fast.xplane.pb"


def open_step(app, name: str):
    """The viewer on step 3 of the fixture (python track 2 holds the steps)."""
    cells = [("import xprof_widgets as xw\n"
             f"tv = xw.TraceViewer({str(PROFILE)!r}, height=520)\n"
             "step = tv.profile.events(name='^train 3$').iloc[0]\n"
             "tv.window = (step.start_us - 100, step.start_us + step.duration_us + 100)\ntv")]
    page = app.open_and_run(app.notebook(f"{name}.ipynb", cells))
    app.wait_ready(page, READY)
    widget = page.locator(".xw-trace-viewer")
    page.wait_for_timeout(500)
    return page, widget


def box_over_the_step(page, widget) -> None:
    """A box from the thread above the python track down to the step's first level."""
    tracks = tracks_of(page)
    start, end = view_window(widget)
    width = widget.locator("canvas").bounding_box()["width"]
    step = json.loads(harness.run_in_kernel(page, "print(step.to_json())"))

    def x_of(us: float) -> float:
        return LABEL_W + (us - start) / (end - start) * (width - LABEL_W)

    top = track_centre_y(tracks, 1, depth=0)
    bottom = track_centre_y(tracks, 2, depth=1)
    drag(page, widget, x_of(step["start_us"] + 1), top, x_of(step["start_us"]
                                                          + step["duration_us"] - 1), bottom)


def pivot_rows(page) -> list[dict]:
    return page.evaluate("""() => [...document.querySelectorAll('.xw-tv-pivot tbody tr')].map((tr) =>
        ({kind: tr.dataset.kind, cells: [...tr.children].map((td) => td.innerText.trim())}))""")


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_a_box_selection_shows_its_pivot(app_fixture, request):
    app = request.getfixturevalue(app_fixture)
    page, widget = open_step(app, f"pivot_{app_fixture}")
    box_over_the_step(page, widget)
    widget.locator(".xw-tv-pivot").wait_for(timeout=10_000)
    selected = int(widget.get_attribute("data-selected"))
    assert selected > 2
    expected = json.loads(harness.run_in_kernel(
        page, "print(tv.selection_pivot().to_json(orient='records'))"))
    rows = pivot_rows(page)
    kinds = [r["kind"] for r in rows]
    assert kinds[0] == "section" and rows[0]["cells"][0].endswith("/host:CPU")
    assert kinds.count("track") == 2  # the thread above and the python track
    names = [r["cells"][0] for r in rows if r["kind"] == "name"]
    assert sorted(names) == sorted(e["name"] for e in expected)
    assert "train 3" in names and "load_batch" in names
    assert int(rows[0]["cells"][1].replace(",", "")) == selected == sum(
        e["count"] for e in expected)
    title = widget.locator(".xw-tv-pivot .xw-tv-title").inner_text()
    assert f"{selected} events selected" in title
    if app_fixture == "lab":
        page.set_viewport_size({"width": 1280, "height": 1200})  # the whole widget
        widget.scroll_into_view_if_needed()
        harness.screenshot(widget, "trace_viewer_pivot")

    # Regrouped by name: one row a name, over every track.
    widget.locator(".xw-tv-pivot-by").select_option("name")
    page.wait_for_function("() => [...document.querySelectorAll('.xw-tv-pivot tbody tr')]"
                           ".every((tr) => tr.dataset.kind === 'name')", timeout=10_000)
    by_name = json.loads(harness.run_in_kernel(
        page, "print(tv.selection_pivot(by=('name',)).to_json(orient='records'))"))
    assert [r["cells"][0] for r in pivot_rows(page)] == [e["name"] for e in by_name]

    # A group closes and opens again.
    widget.locator(".xw-tv-pivot-by").select_option("track,name")
    page.wait_for_function("() => document.querySelector(\".xw-tv-pivot tr[data-kind='track']\")",
                           timeout=10_000)
    before = len(pivot_rows(page))
    widget.locator(".xw-tv-pivot tr[data-kind='track'] .xw-tv-toggle").first.click()
    assert len(pivot_rows(page)) < before
    widget.locator(".xw-tv-pivot tr[data-kind='track'] .xw-tv-toggle").first.click()
    assert len(pivot_rows(page)) == before
