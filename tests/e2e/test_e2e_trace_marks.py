"""Pinned and hidden tracks and bookmarks in the Trace Viewer, in JupyterLab and Notebook 7
(issue 32, item 4).

On the 4-GPU synthetic profile: the pin button of a GPU stream's label pins it, and it stays at
the top while the tracks scroll under it; H hides another stream; B adds two bookmarks at the
mouse, ] and [ go between them, the Bookmarks menu goes to one; the kernel holds all of it, a
new viewer on the profile comes back with it, and no key reached the notebook.
"""

from __future__ import annotations

import json
import time

import harness
import pytest
from test_e2e_keys import CELLS
from test_e2e_trace_viewer import (
    AXIS_H,
    DEPTH_H,
    LABEL_W,
    READY,
    SECTION_H,
    TRACK_PAD,
    kernel_window,
    track_centre_y,
    tracks_of,
    view_window,
    wait_data,
)

GPU = harness.REPO / "tests" / "data" / "synthetic_gpu.xplane.pb"
ROW = DEPTH_H + 2 * TRACK_PAD
PIN_X = LABEL_W - 6 - 16 - 8  # the pin button (layout.js labelButtonAt), the hide one after it


def label_tip(page, widget, y: float) -> str:
    """The name the tooltip shows for the track label at canvas height y."""
    box = widget.locator("canvas").bounding_box()
    page.mouse.move(box["x"] + 60, box["y"] + y)
    name = widget.locator(".xw-tv-tip .xw-tv-tip-name")
    name.wait_for(state="visible", timeout=5_000)
    return name.inner_text()


def kernel_json(page, expression: str):
    return json.loads(harness.run_in_kernel(page, f"import json; print(json.dumps({expression}))"))


def kernel_reaches(page, expression: str, expected, timeout_s: float = 10.0):
    """The expression's value in the kernel once it equals `expected` (a change the view made
    reaches the kernel on the comm, which may be handled after a cell run just asked for)."""
    deadline = time.monotonic() + timeout_s
    while (value := kernel_json(page, expression)) != expected and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    return value


def view_reaches(page, widget, centre: float, timeout_s: float = 5.0) -> tuple[float, float]:
    """The view's window once it is centred on `centre` (the view moves on the frame after
    the state that asked for it is set), or as it is at the timeout."""
    deadline = time.monotonic() + timeout_s
    while (sum(window := view_window(widget)) / 2 != pytest.approx(centre, rel=1e-9)
           and time.monotonic() < deadline):
        page.wait_for_timeout(100)
    return window


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_pin_hide_and_bookmarks(app_name, request):
    app = request.getfixturevalue(app_name)
    cells = [f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(GPU)!r}, height=420)\ntv",
             "x = 1  # a cell below"]
    page = app.open_and_run(app.notebook(f"trace_marks_{app_name}.ipynb", cells))
    app.wait_ready(page, READY)
    widget = page.locator(".xw-trace-viewer")
    # Command mode, where the notebook's own B (a cell below), H, P... would act if they leaked.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
    cells_before = page.evaluate(CELLS)
    tracks = tracks_of(page)
    nccl = next(t for t in tracks if t["section"] == "/device:GPU:0" and t["name"] == "Stream #15(Nccl)")
    d2h = next(t for t in tracks if t["section"] == "/device:GPU:0" and t["name"] == "Stream #14(MemcpyD2H)")
    box = widget.locator("canvas").bounding_box()

    # Pin: hover the stream's label, click its pin button.
    y = track_centre_y(tracks, nccl["id"])
    assert label_tip(page, widget, y) == "Stream #15(Nccl)"
    page.mouse.move(box["x"] + PIN_X, box["y"] + y)
    page.wait_for_function("() => document.querySelector('.xw-tv-tip')?.textContent.includes('Pin:')")
    harness.screenshot(widget, f"trace_marks_pin_button_{app_name}")
    page.mouse.click(box["x"] + PIN_X, box["y"] + y)
    pinned_label = "/device:GPU:0 · Stream #15(Nccl)"
    wait_data(page, "pinned", f"v === '{nccl['id']}'")
    assert wait_data(page, "topRow", f"v === '{pinned_label}'") == pinned_label
    assert kernel_reaches(page, "tv.pinned_tracks", [nccl["id"]]) == [nccl["id"]]

    # Hide: H with the mouse on the D2H stream's label (below the pinned row and GPU 0's header).
    order = [t["id"] for t in tracks if t["section"] == "/device:GPU:0" and t["id"] != nccl["id"]]
    y = AXIS_H + ROW + SECTION_H + order.index(d2h["id"]) * ROW + ROW / 2
    assert label_tip(page, widget, y) == "Stream #14(MemcpyD2H)"
    widget.locator(".xw-tv-stage").focus()
    page.keyboard.press("h")
    wait_data(page, "hidden", f"v === '{d2h['id']}'")
    assert kernel_reaches(page, "tv.hidden_tracks", [d2h["id"]]) == [d2h["id"]]
    assert "1 pinned · 1 hidden" in widget.locator(".xw-tv-tracks-menu summary").inner_text()

    # Scroll the tracks: the pinned stream stays at the top, the rows under it move.
    under = label_tip(page, widget, AXIS_H + ROW + 4)
    page.mouse.move(box["x"] + LABEL_W + 300, box["y"] + 250)
    page.mouse.wheel(0, 300)
    wait_data(page, "scrollY", "Number(v) > 100")
    assert widget.get_attribute("data-top-row") == pinned_label
    assert label_tip(page, widget, AXIS_H + ROW / 2) == pinned_label
    assert label_tip(page, widget, AXIS_H + ROW + 4) != under
    page.mouse.move(box["x"] + 5, box["y"] + box["height"] + 30)  # off the canvas: no tooltip
    widget.locator(".xw-tv-tip").wait_for(state="hidden", timeout=5_000)
    harness.screenshot(widget, f"trace_marks_pinned_{app_name}")

    # Bookmarks: B at a quarter and at six tenths of the timeline.
    start, end = view_window(widget)
    width = box["width"] - LABEL_W
    times = []
    for frac in (0.25, 0.6):
        page.mouse.move(box["x"] + LABEL_W + frac * width, box["y"] + 250)
        page.keyboard.press("b")
        times.append(start + frac * (end - start))
    wait_data(page, "bookmarks", "v === 'bookmark 1|bookmark 2'")
    names = kernel_reaches(page, "tv.bookmarks.name.tolist()", ["bookmark 1", "bookmark 2"])
    assert names == ["bookmark 1", "bookmark 2"]
    marks = kernel_json(page, "tv.bookmarks.to_dict('records')")
    assert [m["name"] for m in marks] == ["bookmark 1", "bookmark 2"]
    for mark, t in zip(marks, times, strict=True):
        assert mark["start_us"] == mark["end_us"] == pytest.approx(t, abs=(end - start) / width * 2)

    # ] and [ go between them, the zoom kept; the kernel's window follows.
    span = (end - start) / 20
    harness.run_in_kernel(page, f"tv.window = (0.0, {span!r})")
    wait_data(page, "window", f"Math.abs(Number(v.split(',')[1]) - {span!r}) < 1e-6 * {span!r}")
    centre = []
    for key in ("]", "]", "["):
        page.keyboard.press(key)
        page.wait_for_timeout(150)
        s, e = view_window(widget)
        assert e - s == pytest.approx(span, rel=1e-6)
        centre.append((s + e) / 2)
    assert centre == pytest.approx([marks[0]["start_us"], marks[1]["start_us"],
                                    marks[0]["start_us"]], rel=1e-9)
    page.wait_for_timeout(300)  # the window reaches the kernel 120 ms after the last change
    assert sum(kernel_window(page)) / 2 == pytest.approx(marks[0]["start_us"], rel=1e-9)

    # The Bookmarks menu lists them and goes to one.
    widget.locator(".xw-tv-bookmarks-menu summary").click()
    widget.locator(".xw-tv-bookmarks-menu button[data-go='bookmark 2']").click()
    wait_data(page, "bookmark", "v === 'bookmark 2'")
    s, e = view_reaches(page, widget, marks[1]["start_us"])
    assert (s + e) / 2 == pytest.approx(marks[1]["start_us"], rel=1e-9)
    harness.screenshot(widget, f"trace_marks_bookmarks_{app_name}")
    widget.locator(".xw-tv-bookmarks-menu summary").click()

    # Kept per profile: another viewer of it comes back with them; no key reached the notebook.
    again = kernel_json(page, "(lambda v: [v.pinned_tracks, v.hidden_tracks, "
                              "v.bookmarks.name.tolist()])(xw.TraceViewer(tv.profile))")
    assert again == [[nccl["id"]], [d2h["id"]], ["bookmark 1", "bookmark 2"]]
    assert page.evaluate(CELLS) == cells_before

    # The Tracks menu shows the hidden stream again.
    widget.locator(".xw-tv-tracks-menu summary").click()
    widget.locator(f".xw-tv-tracks-menu button[data-show='{d2h['id']}']").click()
    wait_data(page, "hidden", "v === ''")
    assert kernel_reaches(page, "tv.hidden_tracks", []) == []
