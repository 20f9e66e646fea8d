"""Source stacks in the browser: a tiny JAX program (written to a temporary file whose name is
full of HTML) is profiled here, so its frames name a file on this machine. In JupyterLab the
Trace Viewer's details of one of its XLA ops and the Graph Viewer's card of the same op show the
stack innermost first and the lines around the chosen frame, its line marked; another frame's
row shows that frame's lines; the file name stays text."""

from __future__ import annotations

import subprocess
import sys

import harness
import numpy as np
import pytest

SCRIPT = """\
import sys

import jax
import jax.numpy as jnp


def scale(x):
    return jnp.tanh(x * 3.0) + 1.0  # the scaled op


@jax.jit
def step(x):
    return scale(x @ x).sum()


x = jnp.ones((64, 64))
step(x).block_until_ready()
with jax.profiler.trace(sys.argv[1]):
    for _ in range(3):
        step(x).block_until_ready()
"""
HTML_FILE = "<img src=x onerror=window.__xwSourceXss=1>.py"
TV_READY = ".xw-trace-viewer[data-ready='1']"
GV_READY = ".xw-gv[data-ready='1']"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """(logdir, an XLA op event whose two innermost frames lie in the script, its op name,
    its frames)."""
    from xprof_widgets.analysis.source import event_stack
    from xprof_widgets.opening import open_profile

    where = tmp_path_factory.mktemp("source_program")
    script = where / HTML_FILE
    script.write_text(SCRIPT)
    logdir = where / "logs"
    subprocess.run([sys.executable, str(script), str(logdir)], check=True, timeout=300,
                   capture_output=True)
    profile = open_profile(logdir)
    ops = profile.stat_column(np.arange(profile.n_events), "hlo_op")
    for event in np.flatnonzero(ops != None).tolist():  # an object array: None where none
        frames = event_stack(profile, event)
        if len(frames) >= 2 and {f.file for f in frames[:2]} == {str(script)}:
            return logdir, event, str(ops[event]), frames
    raise AssertionError("no XLA op of the program has two frames in it")


def marked_line(panel) -> str:
    return panel.locator(".xw-src-code .xw-src-here").inner_text()


def code_of(frame) -> str:
    """The script's own text at a frame's line."""
    return SCRIPT.splitlines()[frame.line - 1].strip()


def check_panel(page, panel, frames) -> None:
    """The stack innermost first, the first frame's line marked; the second frame's row shows
    its own line; the file's HTML name is text, never markup."""
    panel.locator(".xw-src-code .xw-src-here").wait_for(timeout=20_000)
    rows = panel.locator(".xw-src-frame")
    assert rows.count() == len(frames)
    for k in (0, 1):
        assert rows.nth(k).locator(".xw-src-fn").inner_text() == frames[k].function
        assert rows.nth(k).locator(".xw-src-loc").inner_text() == (
            f"{frames[k].file}:{frames[k].line}")
    assert rows.nth(0).get_attribute("data-chosen") == "1"
    assert code_of(frames[0]) in marked_line(panel)
    assert marked_line(panel).lstrip().startswith(f"{frames[0].line} ")
    rows.nth(1).click()
    page.wait_for_function("([el, text]) => el.querySelector('.xw-src-here')?.textContent"
                           ".includes(text)", arg=[panel.element_handle(), code_of(frames[1])],
                           timeout=20_000)
    assert marked_line(panel).lstrip().startswith(f"{frames[1].line} ")
    assert rows.nth(1).get_attribute("data-chosen") == "1"
    assert panel.locator("img").count() == 0
    assert page.evaluate("window.__xwSourceXss") is None


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_source_lines_in_trace_details_and_graph_card(app_fixture, request, program):
    app = request.getfixturevalue(app_fixture)
    logdir, event, op, frames = program
    cells = [f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(logdir)!r}, height=320)\ntv",
             f"g = xw.GraphViewer({str(logdir)!r}, op={op!r}, width=1)\ng"]
    page = app.open_and_run(app.notebook(f"source_stacks_{app.server.app}.ipynb", cells))
    app.wait_ready(page, TV_READY)
    app.wait_ready(page, GV_READY)
    suffix = "" if app.server.app == "lab" else f"_{app.server.app}"

    # The Trace Viewer: the op's details carry its source panel.
    harness.run_in_kernel(page, f"tv.selected_events = [{event}]")
    details = page.locator(".xw-trace-viewer .xw-tv-details")
    panel = details.locator(".xw-tv-source .xw-src")
    check_panel(page, panel, frames)
    block = details.locator(".xw-tv-source")
    block.scroll_into_view_if_needed()
    harness.screenshot(block, f"source_trace_details{suffix}")

    # The Graph Viewer: the op's card (pinned by a click) shows the same stack.
    graph = page.locator(".xw-gv").first
    node = graph.locator(f".xw-gv-node[data-name='{op}']")
    node.scroll_into_view_if_needed()
    node.click()
    card = graph.locator(f".xw-gv-card[data-name='{op}']")
    card.wait_for(timeout=10_000)
    check_panel(page, card.locator(".xw-gv-source .xw-src"), frames)
    harness.screenshot(graph, f"source_graph_card{suffix}")


@pytest.mark.e2e
def test_trace_details_say_when_the_file_is_not_here(lab):
    """The TPU fixture's frames name files of the machine that ran it: the panel lists them
    and says the lines are not on this machine."""
    tpu = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
    cell = (f"import numpy as np\nimport xprof_widgets as xw\ntv = xw.TraceViewer({str(tpu)!r})\n"
            "names = tv.profile.display_names[tv.profile.meta]\n"
            "tv.selected_events = [int(np.flatnonzero(names == 'broadcast.2')[0])]\ntv")
    cells = [cell]
    page = lab.open_and_run(lab.notebook("source_not_here.ipynb", cells))
    lab.wait_ready(page, TV_READY)
    panel = page.locator(".xw-tv-details .xw-tv-source .xw-src")
    panel.locator(".xw-src-missing", has_text="not on this machine").wait_for(timeout=20_000)
    rows = panel.locator(".xw-src-frame")
    assert rows.nth(0).locator(".xw-src-fn").inner_text() == "main"
    assert rows.nth(0).locator(".xw-src-loc").inner_text().endswith(
        "host_offload_stress_test.py:37")
    assert rows.count() == 6
    harness.screenshot(panel, "source_trace_not_here")
