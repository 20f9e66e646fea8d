"""A profile that opened with parts left out says so under every view: a damaged real trace in
JupyterLab and Notebook 7 shows its note, as text (the file's name is markup-like), under the
Trace Viewer and a table tool."""

from __future__ import annotations

import harness
import pytest

TRACE = harness.REPO / "tests" / "data" / "torch_tiny_mlp.pt.trace.json.gz"
APPS = ["lab", "notebook7"]


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", APPS)
def test_notes_show_under_the_views(request, app_name, tmp_path):
    app = request.getfixturevalue(app_name)
    data = TRACE.read_bytes()
    damaged = tmp_path / "<img src=x onerror=alert(1)>.pt.trace.json.gz"
    damaged.write_bytes(data[: len(data) * 2 // 3])  # a copy cut short
    first = (f"import xprof_widgets as xw\np = xw.open_profile({str(damaged)!r})\n"
             "tv = xw.TraceViewer(p)\ntv")
    page = app.open_and_run(app.notebook(f"notes_{app_name}.ipynb",
                                         [first, "xw.InputPipeline(p)"]))
    app.wait_ready(page, ".xw-trace-viewer[data-ready='1']")
    strips = page.locator(".xw-notes")
    strips.first.wait_for(state="visible", timeout=30_000)
    page.wait_for_function("() => document.querySelectorAll('.xw-notes').length === 2",
                           timeout=30_000)
    expected = harness.run_in_kernel(page, "print(p.warnings[0])").strip()
    for strip in strips.all():
        assert strip.is_visible()
        text = strip.inner_text()
        assert "1 note on this profile" in text
        assert expected in text and "gzip stream is truncated" in text
        assert strip.locator("img").count() == 0  # the name stayed text
    if app_name == "lab":
        harness.screenshot(page.locator(".xw-trace-viewer").first.locator(".."),
                           "notes_under_trace_viewer")
