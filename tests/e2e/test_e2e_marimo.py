"""marimo: a `marimo run` app with the Trace Viewer and the Op Profile, in Chromium.

marimo renders anywidgets through `mo.ui.anywidget` with its own front end (no Jupyter widget
manager), so this is the third host of our views: the timeline draws and W zooms it, and the
Op Profile's table draws.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import harness
import pytest

FIXTURE = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
APP = '''import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo

    import xprof_widgets as xw

    profile = xw.open_profile({fixture!r})
    tv = mo.ui.anywidget(xw.TraceViewer(profile, height=360))
    ops = mo.ui.anywidget(xw.OpProfile(profile))
    mo.vstack([tv, ops])
    return


if __name__ == "__main__":
    app.run()
'''


def _wait_for_port(port: int, process: subprocess.Popen, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"marimo run exited ({process.returncode}): "
                                 f"{process.stderr.read().decode(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"marimo run did not answer on port {port} in {timeout_s} s")


@pytest.fixture
def marimo_app(tmp_path: Path, widget_bundles):
    app = tmp_path / "xprof_app.py"
    app.write_text(APP.format(fixture=str(FIXTURE)))
    port = harness.free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--host", "127.0.0.1",
         "--port", str(port), "--no-token", "--no-sandbox", "--no-check"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.e2e
def test_marimo_draws_the_timeline_zooms_on_w_and_draws_the_op_table(marimo_app, browser):
    page = browser.new_page(viewport={"width": 1300, "height": 1100})
    watch = harness.PageWatch()
    watch.attach(page)
    try:
        page.goto(marimo_app)
        viewer = page.locator(".xw-trace-viewer")
        viewer.wait_for(timeout=120_000)
        element = viewer.element_handle()  # marimo draws widgets in a shadow root
        page.wait_for_function("(el) => el.dataset.ready === '1'", arg=element, timeout=120_000)
        ops = page.locator(".xw-op-profile[data-ready='1'] table").first
        ops.wait_for(timeout=120_000)
        assert "copy-done" in ops.inner_text()
        box = viewer.locator("canvas").first.bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
        before = viewer.get_attribute("data-window")
        page.keyboard.press("w")
        page.wait_for_function("([el, before]) => el.dataset.window !== before",
                               arg=[element, before], timeout=10_000)
        start, end = (float(v) for v in viewer.get_attribute("data-window").split(","))
        first, last = (float(v) for v in before.split(","))
        assert end - start < last - first  # W zoomed in
        harness.screenshot(page.locator("body"), "marimo_trace_and_ops")
        watch.check()
    finally:
        page.close()
