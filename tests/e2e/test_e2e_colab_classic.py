"""Colab's widget stack in the classic Notebook 6.5 front end (issue 23, item 5).

Colab runs ipywidgets 7.7.1, anywidget 0.9.21 and IPython 7.34 with a front end of its own that
no test can start; notebook 6.5 with widgetsnbextension 3.6.10 is the nearest one that runs here.
`make test-colab` runs this module in .venv-colab, which holds Colab's pins (tests/colab/pins.txt)
and the package installed from its wheel; elsewhere (notebook 7) it is skipped.

The Trace Viewer and the Op Profile draw (the roofline's BokehJS too, with RequireJS on the page),
W/S/A/D zoom and pan the timeline and none of them reaches the notebook, a held W zooms on, Escape
hands the keys to the cell; the Profiler shows its tabs' titles (ipywidgets 7's `set_title`) and
every tab draws when clicked.
"""

from __future__ import annotations

import harness
import pytest
from test_e2e_keys import STAGE_FOCUSED, click_timeline, hold_w_zooms, press_and_check
from test_e2e_trace_viewer import READY, kernel_window

TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
OP_READY = ".xw-op-profile[data-ready='1']"
ROOFLINE = ".xw-op-profile[data-roofline='1']"
# Keys as the keys test starts (W W W W D D, D D being the notebook's delete-cell chord), then
# every W/S/A/D again; A, S and D are also the notebook's insert-above, save and delete keys.
KEYS = "wwwwdd" + "sadwasdw"
# The view in the tab shown: each tool's view marks itself drawn (or failed: wait_ready fails then).
SHOWN_TAB_READY = (".widget-tab-contents > :not(.lm-mod-hidden)[data-ready='1'],"
                   " .widget-tab-contents > :not(.lm-mod-hidden) [data-ready='1']")
CELLS = "() => Jupyter.notebook.get_cells().map((c) => [c.cell_type, c.get_text()])"
TAB_TITLES = "() => [...document.querySelectorAll('.widget-tab .lm-TabBar-tabLabel')]" \
             ".map((label) => label.textContent)"


def _classic_notebook() -> bool:
    try:
        import notebook
    except ImportError:
        return False
    return notebook.__version__.startswith("6.")


pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not _classic_notebook(), reason="needs notebook 6.5, Colab's stack: "
                       "`make test-colab` runs this module in .venv-colab"),
]


def test_trace_viewer_keys_and_op_profile_draw(classic):
    cells = [
        "x = 1  # the user's code above",
        f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(TPU)!r}, height=400)\ntv",
        f"op = xw.OpProfile({str(TPU)!r})\nop",
        "y = x + 1",
    ]
    page = classic.open_and_run(classic.notebook("colab_tv_op.ipynb", cells))
    classic.wait_ready(page, READY, timeout=180)
    classic.wait_ready(page, OP_READY, timeout=120)
    classic.wait_ready(page, ROOFLINE, timeout=120)
    page.wait_for_function("() => !Jupyter.notebook.kernel_busy")
    before_cells = page.evaluate(CELLS)
    widget = page.locator(".xw-trace-viewer")

    click_timeline(page, widget)
    assert page.evaluate("() => Jupyter.notebook.mode") == "command"  # so a leaked key would act
    for key in KEYS:
        press_and_check(page, widget, key)
        page.wait_for_timeout(150)

    held = hold_w_zooms(page, widget, settle_ms=300)

    assert page.evaluate(CELLS) == before_cells  # no key reached the notebook
    page.wait_for_timeout(300)  # the window reaches the kernel 120 ms after the last change
    assert kernel_window(page) == pytest.approx(held, rel=1e-9)

    page.keyboard.press("Escape")  # gives the keys back, to the widget's cell
    assert not page.evaluate(STAGE_FOCUSED)
    assert page.evaluate("() => document.activeElement.classList.contains('cell')")
    assert page.evaluate(CELLS) == before_cells
    harness.screenshot(widget, "colab_classic_trace_viewer")
    harness.screenshot(page.locator(".xw-op-profile"), "colab_classic_op_profile")


def test_profiler_tabs_have_titles_and_draw(classic):
    import xprof_widgets as xw
    from xprof_widgets import tools

    titles = [tool.title for tool in tools.offered(xw.open_profile(TPU))]
    cells = [f"import xprof_widgets as xw\nsuite = xw.Profiler({str(TPU)!r})\nsuite"]
    page = classic.open_and_run(classic.notebook("colab_suite.ipynb", cells))
    classic.wait_ready(page, ".xw-overview .xw-ov-card", timeout=180)
    assert page.evaluate(TAB_TITLES) == titles
    suite = page.locator(".widget-tab")

    suite.locator(".lm-TabBar-tab", has_text="Trace Viewer").click()
    classic.wait_ready(page, READY)
    widget = page.locator(".xw-trace-viewer")
    click_timeline(page, widget)
    press_and_check(page, widget, "w")

    suite.locator(".lm-TabBar-tab", has_text="Op Profile").click()
    classic.wait_ready(page, OP_READY)
    harness.screenshot(suite, "colab_classic_profiler")

    for title in titles:  # every other tab draws too
        suite.locator(".lm-TabBar-tab", has_text=title).click()
        classic.wait_ready(page, SHOWN_TAB_READY)
