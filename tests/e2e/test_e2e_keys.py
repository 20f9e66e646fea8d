"""The Trace Viewer owns its keys, in real JupyterLab and Notebook 7 (issue 23, item 1).

A user clicks the timeline of a large synthetic profile and presses W/S/A/D with pauses of 10 ms
to 1 s between them, and the notebook's own command-mode keys in between (A, B, D D, X, M, Y, Z,
Enter, Shift+Enter). Every W/S/A/D press must move the view, also while the kernel's answer is on
its way (drawn at once from the answers the view holds), none may be undone later, a held key
zooms on, focus must stay on the timeline, and the notebook's cells must be as they were. Escape
gives the keys back; a click on the timeline takes them from a cell being edited.
$XPROF_WIDGETS_KEYS_EVENTS sets the profile's size (default 5e6).
"""

from __future__ import annotations

import os
import random

import harness
import pytest
from test_e2e_trace_viewer import LABEL_W, READY, kernel_window, view_window

from xprof_widgets.synthetic import write_synthetic

N_EVENTS = int(float(os.environ.get("XPROF_WIDGETS_KEYS_EVENTS", "5e6")))
PRESSES = 60
VIEW_KEYS = {"w", "s", "a", "d"}
NOTEBOOK_KEYS = ["b", "x", "m", "y", "z", "Enter", "Shift+Enter"]
SEED = 23

# The notebook's cells as its model holds them (type and text), whatever the windowing shows.
CELLS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  return Array.from({length: cells.length}, (_, i) => [cells.get(i).type, cells.get(i).sharedModel.getSource()]);
}"""
NOTEBOOK_MODE = "() => window.jupyterapp.shell.currentWidget.content.mode"
STAGE_FOCUSED = "() => document.activeElement?.classList.contains('xw-tv-stage') ?? false"
# Every window answer takes 4 s (ipykernel 7 answers comms while a cell runs, so the index is slowed).
SLOW_ANSWERS = """import time
_window = tv.index.window
tv.index.window = lambda *a, **k: (time.sleep(4), _window(*a, **k))[1]"""
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
        key = rng.choice(sorted(VIEW_KEYS))
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


def press_and_check(page, widget, key: str) -> tuple[tuple[float, float], float]:
    """Presses a W/S/A/D key; the drawn view once it moved and the milliseconds that took."""
    drawn = widget.get_attribute("data-window")
    before = view_window(widget)
    page.keyboard.press(key)
    pressed = page.evaluate("() => performance.now()")
    page.wait_for_function(WINDOW_CHANGED, arg=drawn, timeout=10_000, polling="raf")
    latency = page.evaluate("(t) => performance.now() - t", pressed)
    after = view_window(widget)
    assert moved_as_pressed(key, before, after), (key, before, after)
    assert page.evaluate(STAGE_FOCUSED), f"focus left the timeline after {key}"
    return after, latency


def hold_w_zooms(page, widget, settle_ms: int) -> tuple[float, float]:
    """Holds W for a second: the view zooms in by more than 1.25**1.5 (several repeats, not one
    press). Returns the window it settled on `settle_ms` after the key was let go."""
    before = view_window(widget)
    page.keyboard.down("w")
    page.wait_for_timeout(1000)
    page.keyboard.up("w")
    page.wait_for_timeout(settle_ms)
    held = view_window(widget)
    assert (before[1] - before[0]) > 1.25**1.5 * (held[1] - held[0]), (before, held)
    return held


def click_timeline(page, widget) -> None:
    """Clicks the middle of the timeline; the mouse stays there, so W/S zoom around the centre."""
    box = widget.locator("canvas").bounding_box()
    page.mouse.click(box["x"] + (LABEL_W + box["width"]) / 2, box["y"] + box["height"] / 2)


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

    click_timeline(page, widget)
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
        assert view_window(widget) == view, f"the view moved by itself before press {i} ({key})"
        view, latency = press_and_check(page, widget, key)
        latencies.append(latency)
        pause(page, rng)
    assert view_window(widget) == view
    latencies.sort()
    timings.add(app.name, "key press to drawn view p50", latencies[len(latencies) // 2] / 1000)
    timings.add(app.name, "key press to drawn view max", latencies[-1] / 1000)

    # While an answer is on its way, every press still moves the view at once: twelve W zoom in
    # past what the last answer serves (4x), so a window is asked for while the presses go on.
    harness.run_in_kernel(page, SLOW_ANSWERS)
    for key in "w" * 12 + "ddaadsws":
        view, latency = press_and_check(page, widget, key)
        assert latency < 1000, (key, latency)
        page.wait_for_timeout(rng.randint(10, 200))
    page.wait_for_selector(".xw-trace-viewer[data-busy='busy']", timeout=5_000)

    # The next frame comes from what the view holds: seven W zoom past what the last answer
    # serves, and the frame after the seventh shows that answer scaled while the new one is on its
    # way (4 s). Seven S then come back: from the fourth on an answer held from before serves the
    # view in full, so every S shows a settled picture at once, without asking the kernel.
    page.wait_for_selector(".xw-trace-viewer[data-settled='1']", timeout=20_000)
    for key in "w" * 7:
        view, _ = press_and_check(page, widget, key)
    assert widget.get_attribute("data-settled") == "0"
    assert int(widget.get_attribute("data-slices")) > 0
    page.wait_for_selector(".xw-trace-viewer[data-settled='1']", timeout=20_000)
    for i in range(7):
        view, _ = press_and_check(page, widget, "s")
        assert widget.get_attribute("data-settled") == "1", f"S {i + 1} waits for the kernel"
    harness.run_in_kernel(page, "del tv.index.window")
    page.wait_for_selector(".xw-trace-viewer:not([data-busy])", timeout=15_000)
    assert view_window(widget) == view

    # Held, a key zooms on until it is let go.
    held = hold_w_zooms(page, widget, settle_ms=200)
    page.wait_for_timeout(300)
    assert view_window(widget) == held

    # None of it reached the notebook; the kernel's window is the view's.
    assert page.evaluate(CELLS) == before_cells
    page.wait_for_timeout(300)  # the window reaches the kernel 120 ms after the last change
    assert kernel_window(page) == pytest.approx(held, rel=1e-9)
    harness.screenshot(widget, f"trace_viewer_keys_{app_name}")
    harness.screenshot(page.locator(".jp-NotebookPanel"), f"trace_viewer_keys_{app_name}_notebook")

    # Focus survives the widget's own re-renders: the help closed by its button, a box's pivot
    # with one of its groups closed (the button clicked is replaced).
    page.keyboard.press("?")
    widget.locator(".xw-tv-help .xw-tv-close").click()
    press_and_check(page, widget, "s")
    box = widget.locator("canvas").bounding_box()
    left, right = LABEL_W + 0.3 * (box["width"] - LABEL_W), LABEL_W + 0.7 * (box["width"] - LABEL_W)
    page.mouse.move(box["x"] + left, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(box["x"] + right, box["y"] + 200, steps=5)
    page.mouse.up()
    toggle = widget.locator(".xw-tv-pivot .xw-tv-toggle").first
    toggle.wait_for(timeout=15_000)
    toggle.click()
    page.wait_for_function("() => !document.querySelector('.xw-tv-pivot .xw-tv-toggle')?.matches(':focus')")
    press_and_check(page, widget, "a")
    harness.screenshot(widget, f"trace_viewer_keys_{app_name}_pivot")

    # Escape gives the keys back to the notebook.
    page.keyboard.press("Escape")
    assert not page.evaluate(STAGE_FOCUSED)
    assert page.evaluate(CELLS) == before_cells

    # From a cell being edited too: a click on the timeline takes the keys from the editor.
    page.evaluate("""() => {
        const notebook = window.jupyterapp.shell.currentWidget.content;
        notebook.activeCellIndex = 0;
        notebook.mode = "edit";
    }""")
    click_timeline(page, widget)
    assert page.evaluate(STAGE_FOCUSED)
    for key in ["a", "d", "d", "Enter", "w", "Shift+Enter", "s"]:
        if key in VIEW_KEYS:
            press_and_check(page, widget, key)
        else:
            page.keyboard.press(key)
        page.wait_for_timeout(100)
    assert page.evaluate(STAGE_FOCUSED)
    assert page.evaluate(CELLS) == before_cells
