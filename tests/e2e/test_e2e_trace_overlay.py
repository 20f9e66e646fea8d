"""Flow overlays in the browser (issue 31): DLRM's 8 ranks on one clock with each collective's
kernels linked to its last arrival (`DistributedView.link_collectives`), drawn in the overlay's
colour; a click on an arrow selects its two kernels and the details name the overlay; the
toolbar's checkbox hides it, and the kernel hears."""

from __future__ import annotations

import harness
import pytest

DLRM = harness.REPO / "tests" / "data" / "public" / "param" / "dlrm_v100_8rank"
WIDTH = 1400


def kernel(page, code: str) -> str:
    return harness.run_in_kernel(page, code).strip()


def _curve(x0: float, y0: float, x1: float, y1: float, s: float) -> tuple[float, float]:
    """The point at s of the curve every flow arrow is drawn as (overlay.js bendOf)."""
    bend = max(12.0, min(80.0, abs(x1 - x0) / 2))
    xs, ys = (x0, x0 + bend, x1 - bend, x1), (y0, y0, y1, y1)
    b = ((1 - s) ** 3, 3 * (1 - s) ** 2 * s, 3 * (1 - s) * s ** 2, s ** 3)
    return sum(w * x for w, x in zip(b, xs, strict=True)), sum(w * y for w, y in zip(b, ys,
                                                                                   strict=True))


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_dlrm_collectives_linked_across_ranks(request, app_name):
    app = request.getfixturevalue(app_name)
    cells = [(f"import xprof_widgets as xw\np = xw.open_profile({str(DLRM)!r})\n"
             "dv = xw.DistributedView(p)\ntv = xw.TraceViewer(p, height=560)\n"
             "first = dv.collective(0)\n"
             "tv.window = (first['start_us'].min() - 500, first['start_us'].max() + 1500)\n"
             "dv.link_collectives(tv)\n"
             "tv.pin(sorted(set(p.track_of(first['event'].to_numpy()).tolist())))  # NCCL streams\n"
             "tv")]
    page = app.show(f"trace_overlay_{app_name}.ipynb", cells,
                    ".xw-trace-viewer[data-ready='1']", width=WIDTH)
    widget = page.locator(".xw-trace-viewer")
    for _ in range(100):
        if int(widget.get_attribute("data-overlay-flows") or 0) >= 7:
            break
        page.wait_for_timeout(200)
    state = widget.evaluate("(el) => ({...el.dataset})")
    assert int(state.get("overlayFlows") or 0) >= 7, state
    assert widget.get_attribute("data-overlays") == "collectives"
    toggle = widget.locator(".xw-tv-overlays label", has_text="collectives")
    assert toggle.count() == 1 and toggle.locator("input").is_checked()
    suffix = "" if app_name == "lab" else f"_{app_name}"
    harness.picture(page, widget, "trace_overlay_collectives" + suffix, width=WIDTH)

    # a click on an arrow (away from any slice) selects its two kernels; the details name it
    box = widget.locator("canvas").bounding_box()
    x0, y0, x1, y1 = (float(v) for v in widget.get_attribute("data-overlay-first").split(","))
    for s in [k / 40 for k in range(4, 37)]:  # the first point off every slice
        x, y = _curve(x0, y0, x1, y1, s)
        page.mouse.click(box["x"] + x, box["y"] + y)
        page.wait_for_timeout(200)
        if widget.locator(".xw-tv-details").get_attribute("data-overlay") == "collectives":
            break
    details = widget.locator(".xw-tv-details")
    assert details.get_attribute("data-overlay") == "collectives"
    assert "Overlay collectives · all_to_all #0 (last: rank 7)" in details.inner_text()
    for _ in range(30):
        chosen = kernel(page, "print(sorted(tv.selected_events))")
        if chosen != "[]":
            break
        page.wait_for_timeout(100)
    edges = kernel(page, "e = tv.overlay_edges('collectives'); "
                         "print(sorted(map(sorted, zip(e['from_event'], e['to_event']))))")
    assert chosen in edges  # the picked arrow's two ends, one of the overlay's edges
    harness.picture(page, widget, "trace_overlay_picked" + suffix, width=WIDTH)

    # the toolbar's checkbox hides the overlay; the kernel's table says so
    toggle.locator("input").uncheck()
    page.wait_for_function(
        "() => document.querySelector('.xw-trace-viewer')?.dataset.overlayFlows === '0'",
        timeout=10_000)
    for _ in range(30):
        if kernel(page, "print(bool(tv.overlays['shown'].iat[0]))") == "False":
            break
        page.wait_for_timeout(100)
    assert kernel(page, "print(bool(tv.overlays['shown'].iat[0]))") == "False"
