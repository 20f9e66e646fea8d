"""The widget plumbing end to end: binary answers and a Bokeh chart in JupyterLab and Notebook 7."""

from __future__ import annotations

import harness
import pytest

N_VALUES = 1_500_000  # 6 MB of uint32: the answer arrives in two chunks

CELLS = [
    f"from echo_widget import EchoWidget\nwidget = EchoWidget(n={N_VALUES})\nwidget",
]


def check_echo(app: harness.NotebookApp, name: str) -> None:
    page = app.open_and_run(app.notebook(f"{name}.ipynb", CELLS))
    app.wait_ready(page, ".xw-echo[data-ready='1']")
    widget = page.locator(".xw-echo")
    assert widget.get_attribute("data-numbers") == str(N_VALUES)
    # Bokeh drew the figure (canvas) and the table from the kernel's own bokeh version.
    assert widget.locator("canvas").count() >= 1
    assert widget.locator(".slick-cell", has_text="convolution.1").count() == 1
    assert widget.get_attribute("data-bokeh") == app_bokeh_version()
    page.wait_for_selector(".xw-echo[data-checks]", timeout=30_000)
    assert widget.get_attribute("data-checks") == "ok"
    harness.screenshot(widget, f"echo_widget_{name}")


def app_bokeh_version() -> str:
    from xprof_widgets.widgets._bokeh import bokeh_js_version

    return bokeh_js_version()


@pytest.mark.e2e
def test_echo_widget_in_jupyterlab(lab, echo_bundle):
    check_echo(lab, "lab")


@pytest.mark.e2e
def test_echo_widget_in_notebook7(notebook7, echo_bundle):
    check_echo(notebook7, "notebook7")


@pytest.mark.e2e
def test_harness_fails_on_stderr_and_console_errors(notebook7):
    """The checks every browser test relies on do fire."""
    cells = [
        "from IPython.display import Javascript\n"
        + "display(Javascript(\"console.error('xw-harness-probe')\"))",
        "import sys\nprint('stderr-probe', file=sys.stderr)",
    ]
    page = notebook7.open_and_run(notebook7.notebook("harness_probe.ipynb", cells))
    with pytest.raises(AssertionError, match="stderr-probe"):
        notebook7.wait_ready(page, ".never-drawn")
    (watch,) = notebook7.watches
    with pytest.raises(AssertionError, match="console.error: xw-harness-probe"):
        watch.check()
    watch.errors.clear()
