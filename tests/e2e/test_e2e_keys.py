"""The Trace Viewer owns its keys, in real JupyterLab and Notebook 7 (issue 23, item 1).

A user clicks the timeline of a large synthetic profile and presses W/S/A/D with pauses of 10 ms
to 1 s between them, and the notebook's own command-mode keys in between (A, B, D D, X, M, Y, Z,
Enter, Shift+Enter). Every W/S/A/D press must move the view, none may be undone later, focus must
stay on the timeline, and the notebook's cells must be as they were. Escape then gives the keys
back. $XPROF_WIDGETS_KEYS_EVENTS sets the profile's size (default 5e6 events).
"""

from __future__ import annotations

import os
import random

import harness
import pytest
from test_e2e_trace_viewer import READY, kernel_window, view_window

from xprof_widgets.synthetic import write_synthetic

N_EVENTS = int(float(os.environ.get("XPROF_WIDGETS_KEYS_EVENTS", "5e6")))
PRESSES = 60
NOTEBOOK_KEYS = ["b", "x", "m", "y", "z", "Enter", "Shift+Enter"]
SEED = 23

# The notebook's cells as its model holds them (type and text), whatever the windowing shows.
CELLS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  return Array.from({length: cells.length}, (_, i) => [cells.get(i).type, cells.get(i).sharedModel.getSource()]);
}"""
NOTEBOOK_MODE = "() => window.jupyterapp.shell.currentWidget.content.mode"
STAGE_FOCUSED = "() => document.activeElement?.classList.contains('xw-tv-stage') ?? false"
WINDOW_CHANGED = "(before) => document.querySelector('.xw-trace-viewer').dataset.window !== before"


@pytest.fixture(scope="module")
def large_profile(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "keys.xplane.pb"
    write_synthetic(path, N_EVENTS, kind="tpu")
    return path


def key_sequence(rng: random.Random) -> list[str]:
    """PRESSES of W/S/A/D that never reach a limit of the view (so each one must move it): zoomed
    in at least 3 steps (a pan of the whole trace does nothing), at most 4 pans off centre (the
    view's centre stays on the trace). Starts as the user's report did: W W W W D D (D D being the
    notebook's delete-cell chord)."""
    keys, level, offset = list("wwwwdd"), 4, 2
    while len(keys) < PRESSES:
        key = rng.choice("wsad")
        if key == "s" and level <= 3 or key == "w" and level >= 14:
            continue
        if key == "a" and offset <= -4 or key == "d" and offset >= 4:
            continue
        level += {"w": 1, "s": -1}.get(key, 0)
        offset += {"a": -1, "d": 1}.get(key, 0)
        keys.append(key)
    return keys


def moved_as_pressed(key: str, before: tuple[float, float], after: tuple[float, float]) -> bool:
    span0, span1 = before[1] - before[0], after[1] - after[0]
    same_span = abs(span1 - span0) <= 1e-6 * span0
    return {
        "w": span1 < 0.9 * span0,
        "s": span1 > 1.1 * span0,
        "a": after[0] < before[0] and same_span,
        "d": after[0] > before[0] and same_span,
    }[key]


def pause(page, rng: random.Random) -> None:
    page.wait_for_timeout(int(1000 * 10 ** rng.uniform(-2, 0)))  # 10 ms to 1 s, log-uniform


@pytest.mark.e2e
@pytest.mark.parametrize("app_name", ["lab", "notebook7"])
def test_keys_stay_in_the_timeline(app_name, request, large_profile, timings):
    app = request.getfixturevalue(app_name)
    cells = [
        "x = 1  # the user's code above",
        "def f(n):\n    return n * 2",
        f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(large_profile)!r}, height=400)\ntv",
        "y = f(x)",
        "# a comment cell",
        "print(y)",
        "z = [x, y]  # the last cell",
    ]
    page = app.open_and_run(app.notebook(f"keys_{app_name}.ipynb", cells))
    app.wait_ready(page, READY, timeout=180)
    widget = page.locator(".xw-trace-viewer")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:enter-command-mode')")
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.session"
                           ".kernel.status === 'idle'")
    before_cells = page.evaluate(CELLS)
    assert len(before_cells) == len(cells)

    # Click the middle of the timeline: the mouse stays there, so W/S zoom around the centre.
    box = widget.locator("canvas").bounding_box()
    page.mouse.click(box["x"] + (210 + box["width"]) / 2, box["y"] + box["height"] / 2)
    assert page.evaluate(STAGE_FOCUSED)
    assert page.evaluate(NOTEBOOK_MODE) == "command"  # so a key that leaked would act

    rng = random.Random(SEED)
    keys = key_sequence(rng)
    extra = dict(zip(rng.sample(range(5, PRESSES), len(NOTEBOOK_KEYS)), NOTEBOOK_KEYS))
    latencies = []
    view = view_window(widget)
    for i, key in enumerate(keys):
        if i in extra:
            page.keyboard.press(extra[i])
            pause(page, rng)
            assert page.evaluate(STAGE_FOCUSED), f"focus left the timeline after {extra[i]}"
        before = view_window(widget)
        assert before == view, f"the view moved by itself before press {i} ({key})"
        page.keyboard.press(key)
        pressed = page.evaluate("() => performance.now()")
        page.wait_for_function(WINDOW_CHANGED, arg=",".join(repr(v) for v in before),
                               timeout=10_000, polling="raf")
        latencies.append(page.evaluate("(t) => performance.now() - t", pressed))
        view = view_window(widget)
        assert moved_as_pressed(key, before, view), (i, key, before, view)
        assert page.evaluate(STAGE_FOCUSED), f"focus left the timeline after press {i} ({key})"
        pause(page, rng)
    assert view_window(widget) == view
    latencies.sort()
    timings.add(app.name, "key press to drawn view p50", latencies[len(latencies) // 2] / 1000)
    timings.add(app.name, "key press to drawn view max", latencies[-1] / 1000)

    # Held, a key zooms on until it is let go.
    before = view_window(widget)
    page.keyboard.down("w")
    page.wait_for_timeout(1000)
    page.keyboard.up("w")
    page.wait_for_timeout(200)
    held = view_window(widget)
    assert (before[1] - before[0]) > 1.25**1.5 * (held[1] - held[0]), (before, held)
    page.wait_for_timeout(300)
    assert view_window(widget) == held

    # None of it reached the notebook; the kernel's window is the view's.
    assert page.evaluate(CELLS) == before_cells
    page.wait_for_timeout(300)  # the window reaches the kernel 120 ms after the last change
    assert kernel_window(page) == pytest.approx(held, rel=1e-9)
    harness.screenshot(widget, f"trace_viewer_keys_{app_name}")
    harness.screenshot(page.locator(".jp-NotebookPanel"), f"trace_viewer_keys_{app_name}_notebook")

    # Escape gives the keys back to the notebook.
    page.keyboard.press("Escape")
    assert not page.evaluate(STAGE_FOCUSED)
    assert page.evaluate(CELLS) == before_cells
