"""HTA's critical path laid over our Trace Viewer in the browser (issue 31): on HTA's own
`simple_add` trace, `TraceAnalysis.show_critical_path` draws the path as the flow overlay
"critical path" (no trace file written), with its toolbar toggle, in JupyterLab and Notebook 7."""

from __future__ import annotations

import harness
import pytest

SIMPLE_ADD = harness.REPO / "tests" / "data" / "public" / "hta" / "critical_path" / "simple_add"
FORWARD = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
WIDTH = 1400


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_critical_path_drawn_as_an_overlay(request, app_name):
    app = request.getfixturevalue(app_name)
    cells = [(f"import xprof_widgets as xw\nta = xw.TraceAnalysis(trace_dir={str(SIMPLE_ADD)!r})\n"
              f"cp, ok = ta.critical_path_analysis(rank=0, annotation={FORWARD!r}, instance_id=1)\n"
              "edges = cp.overlay_edges()\n"
              "tv = ta.show_critical_path(cp)\n"
              "shown = tv.overlay_edges('critical path')\n"
              "tv.window = (shown['from_us'].min() - 20, shown['to_us'].max() + 20)\n"
              "tv")]
    page = app.show(f"critical_path_{app_name}.ipynb", cells,
                    ".xw-trace-viewer[data-ready='1']", width=WIDTH)
    widget = page.locator(".xw-trace-viewer")
    want = int(harness.run_in_kernel(page, "print(len(edges))").strip())
    assert want == 21  # HTA's own test: 21 edges of the types its overlay draws
    for _ in range(100):
        if int(widget.get_attribute("data-overlay-flows") or 0) > 0:
            break
        page.wait_for_timeout(200)
    assert 0 < int(widget.get_attribute("data-overlay-flows") or 0) <= want
    assert widget.get_attribute("data-overlays") == "critical path"
    toggle = widget.locator(".xw-tv-overlays label", has_text="critical path")
    assert toggle.count() == 1 and toggle.locator("input").is_checked()
    suffix = "" if app_name == "lab" else f"_{app_name}"
    harness.picture(page, widget, "critical_path_overlay" + suffix, width=WIDTH)
