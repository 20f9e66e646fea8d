"""TraceViewer in a real JupyterLab: drawing, keys, selection, search, flows, Python sync, themes.

Row positions below mirror js/src/trace_viewer/layout.js (axis 30 px, section header 24 px, 18 px
per depth plus 3 px padding above and below each track).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import harness
import pytest

TPU = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
READY = ".xw-trace-viewer[data-ready='1']"
AXIS_H, LABEL_W, SECTION_H, DEPTH_H, TRACK_PAD = 30, 210, 24, 18, 3
HTML_NAME = "<img src=x onerror=alert(1)>"


# Distinct colours and non-background pixels of the timeline area of the canvas.
CANVAS_PIXELS = """([x0, y0]) => {
  const canvas = document.querySelector(".xw-trace-viewer canvas");
  const ctx = canvas.getContext("2d");
  const dpr = canvas.width / canvas.clientWidth;
  const w = canvas.width - Math.ceil(x0 * dpr), h = canvas.height - Math.ceil(y0 * dpr);
  const data = ctx.getImageData(Math.ceil(x0 * dpr), Math.ceil(y0 * dpr), w, h).data;
  const bg = data.slice(0, 3).join(",");
  const colours = new Set();
  let painted = 0;
  for (let i = 0; i < data.length; i += 4) {
    const key = `${data[i]},${data[i + 1]},${data[i + 2]}`;
    colours.add(key);
    if (key !== bg) painted++;
  }
  return {colours: colours.size, painted, total: w * h, dpr};
}"""

# Pixels close to a colour, in the timeline area.
COLOUR_PIXELS = """([r, g, b]) => {
  const canvas = document.querySelector(".xw-trace-viewer canvas");
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) < 40) n++;
  }
  return n;
}"""


def open_viewer(lab, name: str, source: str, height: int = 420, prelude: str = "",
                before_ready=None):
    cells = [f"{prelude}import xprof_widgets as xw\ntv = xw.TraceViewer({source}, height={height})\ntv"]
    page = lab.open_and_run(lab.notebook(f"{name}.ipynb", cells))
    if before_ready:
        before_ready(page)
    lab.wait_ready(page, READY)
    return page, page.locator(".xw-trace-viewer")


# Makes building the index take 2 s (once), reporting half way, as a large profile would.
SLOW_INDEX = """import time
import xprof_widgets.widgets.trace_viewer as viewer_module
_real_index = viewer_module.trace_index
def _slow_index(profile, progress=None, _slept=[]):
    if not _slept:
        _slept.append(True)
        progress(0.5)
        time.sleep(2)
    return _real_index(profile, progress)
viewer_module.trace_index = _slow_index
"""


def view_window(widget) -> tuple[float, float]:
    start, end = widget.get_attribute("data-window").split(",")
    return float(start), float(end)


def wait_window_change(page, before: tuple[float, float]) -> tuple[float, float]:
    page.wait_for_function(
        "(before) => document.querySelector('.xw-trace-viewer').dataset.window !== before",
        arg=",".join(repr(v) for v in before), timeout=10_000)
    page.wait_for_timeout(300)  # the window reaches the kernel 120 ms after the last change
    return view_window(page.locator(".xw-trace-viewer"))


def kernel_window(page) -> tuple[float, float]:
    return tuple(json.loads(harness.run_in_kernel(page, "import json; print(json.dumps(list(tv.window)))")))


def track_centre_y(summary_tracks: list[dict], track: int, depth: int = 0) -> float:
    """Canvas y of a depth band of a track, all sections of the TPU fixture's devices expanded."""
    y = AXIS_H
    section = None
    for t in summary_tracks:
        if t["section_id"] != section:
            section = t["section_id"]
            y += SECTION_H
        if t["id"] == track:
            return y + TRACK_PAD + (depth + 0.5) * DEPTH_H
        y += (t["max_depth"] + 1) * DEPTH_H + 2 * TRACK_PAD
    raise KeyError(track)


def tracks_of(page) -> list[dict]:
    code = ("import json; s = tv._summary['tracks']; "
            "print(json.dumps([dict(zip(s, v)) for v in zip(*s.values())]))")
    return json.loads(harness.run_in_kernel(page, code))


def event_row(page, code: str) -> dict:
    return json.loads(harness.run_in_kernel(page, f"import json; r = {code}; print(r.to_json())"))


def show_event(page, widget, event: dict, margin: float = 0.5) -> None:
    """Move the view (from Python) so the event fills the middle of the timeline."""
    d = event["duration_us"]
    target = (event["start_us"] - margin * d, event["start_us"] + (1 + margin) * d)
    harness.run_in_kernel(page, f"tv.window = {target!r}")
    page.wait_for_function(
        """([s, e]) => {
            const [a, b] = document.querySelector('.xw-trace-viewer').dataset.window.split(',');
            return Math.abs(a - s) + Math.abs(b - e) < 1e-6 * (e - s);
        }""", arg=list(target), timeout=10_000)
    page.wait_for_timeout(400)


def click_at(page, widget, x: float, y: float, modifier: str | None = None) -> None:
    box = widget.locator("canvas").bounding_box()
    if modifier:
        page.keyboard.down(modifier)
    page.mouse.click(box["x"] + x, box["y"] + y)
    if modifier:
        page.keyboard.up(modifier)


@pytest.mark.e2e
def test_tpu_timeline_draws_navigates_selects_and_searches(lab):
    page, widget = open_viewer(lab, "trace_tpu", repr(str(TPU)))
    canvas = widget.locator("canvas")
    pixels = page.evaluate(CANVAS_PIXELS, [LABEL_W + 2, AXIS_H + 2])
    assert pixels["colours"] > 20 and pixels["painted"] > 0.1 * pixels["total"], pixels
    assert int(widget.get_attribute("data-frames")) >= 1
    harness.screenshot(widget, "trace_viewer_tpu")
    cells_before = page.locator(".jp-Notebook .jp-Cell").count()

    # W/S zoom around the mouse, A/D pan; the kernel's `window` follows.
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + LABEL_W + (box["width"] - LABEL_W) / 2, box["y"] + 100)
    widget.locator(".xw-tv-stage").focus()
    for key, check in [
        ("w", lambda a, b: (b[1] - b[0]) < 0.9 * (a[1] - a[0])),
        ("w", lambda a, b: (b[1] - b[0]) < 0.9 * (a[1] - a[0])),
        ("s", lambda a, b: (b[1] - b[0]) > 1.1 * (a[1] - a[0])),
        ("d", lambda a, b: b[0] > a[0] and abs((b[1] - b[0]) - (a[1] - a[0])) < 1e-6 * a[1]),
        ("a", lambda a, b: b[0] < a[0]),
    ]:
        before = view_window(widget)
        page.keyboard.press(key)
        after = wait_window_change(page, before)
        assert check(before, after), (key, before, after)
        kernel = kernel_window(page)
        assert kernel == pytest.approx(after, rel=1e-9), (key, kernel, after)
    # Those keys were the widget's: JupyterLab did not add or delete cells.
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells_before

    # Python moves the view; a click on an event shows its details.
    tracks = tracks_of(page)
    module = event_row(page, "tv.profile.events(track=0).iloc[10]")
    show_event(page, widget, module)
    width = box["width"]
    x_mid = LABEL_W + (width - LABEL_W) / 2
    click_at(page, widget, x_mid, track_centre_y(tracks, 0))
    title = widget.locator(".xw-tv-details .xw-tv-title")
    title.wait_for(timeout=10_000)
    assert title.inner_text() == module["name"]
    assert json.loads(harness.run_in_kernel(page, "print(tv.selected_events)")) == [module["event"]]
    harness.screenshot(widget, "trace_viewer_details")

    # Ctrl-click adds the same module's run on the next chip: the aggregate table appears.
    other = event_row(
        page, f"tv.profile.events(start={module['start_us'] + module['duration_us'] / 2}, "
              f"end={module['start_us'] + module['duration_us'] / 2}, track=4).iloc[0]")
    click_at(page, widget, x_mid, track_centre_y(tracks, 4), modifier="Control")
    table = widget.locator(".xw-tv-details .xw-tv-agg")
    table.wait_for(timeout=10_000)
    assert widget.get_attribute("data-selected") == "2"
    selected = json.loads(harness.run_in_kernel(page, "print(tv.selection['event'].tolist())"))
    assert sorted(selected) == sorted([module["event"], other["event"]])
    assert table.locator("tbody tr").count() >= 1
    harness.screenshot(widget, "trace_viewer_aggregate")

    # `m` marks the selection's span, `f` zooms to it; the flow toggle draws the links.
    page.mouse.move(box["x"] + x_mid, box["y"] + 100)
    widget.locator(".xw-tv-stage").focus()
    page.keyboard.press("m")
    span_start = min(module["start_us"], other["start_us"])
    span_end = max(module["start_us"] + module["duration_us"],
                   other["start_us"] + other["duration_us"])
    page.wait_for_function("() => document.querySelector('.xw-trace-viewer').dataset.mark",
                           timeout=5_000)
    assert float(widget.get_attribute("data-mark")) == pytest.approx(span_end - span_start)
    before = view_window(widget)
    page.keyboard.press("f")
    after = wait_window_change(page, before)
    assert after[0] <= span_start and after[1] >= span_end
    assert after[1] - after[0] == pytest.approx((span_end - span_start) * 1.1, rel=0.01)
    widget.locator("label.xw-tv-check input").check()
    page.wait_for_function(
        "() => Number(document.querySelector('.xw-trace-viewer').dataset.flows) > 0",
        timeout=10_000)
    harness.screenshot(widget, "trace_viewer_tpu_flows")
    widget.locator("label.xw-tv-check input").uncheck()
    widget.locator(".xw-tv-stage").focus()
    page.keyboard.press("4")
    assert widget.locator("button[data-tool='timing']").get_attribute("aria-pressed") == "true"
    page.keyboard.press("1")

    # A selection made in Python shows in the view.
    harness.run_in_kernel(page, f"tv.selected_events = [{module['event']}]")
    page.wait_for_function("() => document.querySelector('.xw-trace-viewer').dataset.selected "
                           "=== '1'", timeout=5_000)

    # Search runs over the whole trace: a hit outside the view moves the view to it.
    show_event(page, widget, module)
    start, end = view_window(widget)
    later = event_row(page, f"""next(
        h[h.start_us > {end!r}].iloc[0]
        for h in (tv.search(n) for n in tv.profile.events(start={end!r})['name'].unique())
        if not ((h.start_us + h.duration_us >= {start!r}) & (h.start_us <= {end!r})).any()
        and (h.start_us > {end!r}).any())""")
    widget.locator(".xw-tv-search").fill(later["name"])
    before = view_window(widget)
    widget.locator(".xw-tv-search").press("Enter")
    after = wait_window_change(page, before)
    assert after[0] <= later["start_us"] <= after[1], (after, later)
    page.wait_for_function(
        "(name) => document.querySelector('.xw-tv-details .xw-tv-title')?.textContent === name",
        arg=later["name"], timeout=10_000)
    assert widget.locator(".xw-tv-hits").inner_text().split(" / ")[0].isdigit()
    harness.screenshot(widget, "trace_viewer_search")

    # The help overlay lists the keys.
    widget.locator(".xw-tv-stage").focus()
    page.keyboard.press("?")
    assert widget.locator(".xw-tv-help").is_visible()
    assert "zoom" in widget.locator(".xw-tv-help").inner_text()
    harness.screenshot(widget, "trace_viewer_help")
    page.keyboard.press("Escape")

    # An answer that takes seconds (a busy kernel: ipykernel 7 still answers comms while a cell
    # sleeps, so the index itself is slowed): the view says so, then catches up.
    harness.run_in_kernel(page, "import time\n_window = tv.index.window\n"
                    "tv.index.window = lambda *a, **k: (time.sleep(2), _window(*a, **k))[1]")
    widget.locator(".xw-tv-stage").focus()
    page.keyboard.press("0")  # the whole trace: a window the view has not fetched
    page.wait_for_selector(".xw-trace-viewer[data-busy='busy']", timeout=5_000)
    assert "busy" in widget.locator(".xw-tv-banner").inner_text()
    harness.screenshot(widget, "trace_viewer_busy")
    page.wait_for_selector(".xw-trace-viewer:not([data-busy])", timeout=15_000)
    harness.run_in_kernel(page, "del tv.index.window")

    # Dark theme: the canvas follows JupyterLab's colours.
    light_bg = page.evaluate(CANVAS_PIXELS, [0, 0])
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', "
                  "{theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'",
                           timeout=15_000)
    page.wait_for_timeout(800)
    dark_corner = page.evaluate(
        "() => Array.from(document.querySelector('.xw-trace-viewer canvas').getContext('2d')"
        ".getImageData(3, 3, 1, 1).data)")
    assert sum(dark_corner[:3]) < 3 * 110, dark_corner
    assert light_bg["colours"] > 1
    harness.screenshot(widget, "trace_viewer_dark")
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', "
                  "{theme: 'JupyterLab Light'})")


def html_profile(path: Path) -> Path:
    """A tiny XSpace: one device core whose ops carry HTML-looking names, linked by flows."""
    from xprof_widgets.profile.schema import XSpace

    space = XSpace()
    plane = space.planes.add(id=1, name="/device:TPU:0")
    names = [HTML_NAME, "<b>bold?</b>", "fusion.1", "all-reduce.2"]
    for mid, name in enumerate(names, start=1):
        plane.event_metadata[mid].id = mid
        plane.event_metadata[mid].name = name
    for sid, name in enumerate(["_p", "_c", "_pt", "_ct"], start=1):
        plane.stat_metadata[sid].id = sid
        plane.stat_metadata[sid].name = name
    ops = plane.lines.add(id=1, name="XLA Ops", timestamp_ns=0)
    steps = plane.lines.add(id=2, name="XLA Modules", timestamp_ns=0)
    for k in range(8):
        start = k * 1_000_000_000  # ps: one event per ms
        event = ops.events.add(metadata_id=1 + k % 4, offset_ps=start, duration_ps=700_000_000)
        if k % 4 == 0:  # producer: flows to the module below it one step later
            event.stats.add(metadata_id=1, uint64_value=k + 1)
            event.stats.add(metadata_id=3, uint64_value=1)
        step = steps.events.add(metadata_id=3, offset_ps=start + 500_000_000,
                                duration_ps=400_000_000)
        if k % 4 == 0:
            step.stats.add(metadata_id=2, uint64_value=k + 1)
            step.stats.add(metadata_id=4, uint64_value=1)
    path.write_bytes(space.SerializeToString())
    return path


@pytest.mark.e2e
def test_html_names_are_text_and_flows_draw(lab):
    dialogs: list[str] = []
    path = html_profile(lab.server.root / "html.xplane.pb")
    page, widget = open_viewer(lab, "trace_html", repr(str(path)), height=300)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    tracks = tracks_of(page)
    ops = next(t["id"] for t in tracks if t["name"] == "XLA Ops")
    first = event_row(page, f"tv.profile.events(track={ops}).iloc[0]")
    assert first["name"] == HTML_NAME
    show_event(page, widget, first, margin=0.3)
    click_at(page, widget, LABEL_W + (widget.locator("canvas").bounding_box()["width"] - LABEL_W)
             / 2, track_centre_y(tracks, ops))
    title = widget.locator(".xw-tv-details .xw-tv-title")
    title.wait_for(timeout=10_000)
    assert title.text_content() == HTML_NAME
    assert widget.locator("img").count() == 0 and widget.locator("b").count() == 0
    harness.screenshot(widget, "trace_viewer_html_names")

    # The flow toggle asks for flows and draws arrows (in the flow colour).
    harness.run_in_kernel(page, "tv.window = (0.0, 8000.0)")
    page.wait_for_timeout(600)
    flow_colour = [216, 67, 21]
    before = page.evaluate(COLOUR_PIXELS, flow_colour)
    widget.locator("label.xw-tv-check input").check()
    page.wait_for_function(
        "() => Number(document.querySelector('.xw-trace-viewer').dataset.flows) > 0",
        timeout=10_000)
    page.wait_for_timeout(300)
    assert page.evaluate(COLOUR_PIXELS, flow_colour) > before + 50
    harness.screenshot(widget, "trace_viewer_flows")
    time.sleep(0.2)
    assert not dialogs


def chrome_trace(path: Path) -> Path:
    """A small Chrome trace: nested steps on `main`, kernels on `worker` linked by flows, and a
    memory counter. Times in us; a step every 1200 us."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "host"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "worker"}},
    ]
    for k in range(4):
        t = 1200 * k
        events += [
            {"ph": "X", "name": "step", "pid": 1, "tid": 1, "ts": t, "dur": 1000},
            {"ph": "X", "name": "load", "pid": 1, "tid": 1, "ts": t, "dur": 300},
            {"ph": "X", "name": "compute", "pid": 1, "tid": 1, "ts": t + 400, "dur": 500},
            {"ph": "X", "name": "kernel", "pid": 1, "tid": 2, "ts": t + 450, "dur": 400},
            {"ph": "s", "name": "launch", "cat": "k", "id": k, "pid": 1, "tid": 1,
             "ts": t + 450},
            {"ph": "f", "name": "launch", "cat": "k", "id": k, "pid": 1, "tid": 2,
             "ts": t + 460, "bp": "e"},
        ]
    events += [{"ph": "C", "name": "memory", "pid": 1, "ts": 50 * i,
                "args": {"MiB": float((i * 37) % 100)}} for i in range(96)]
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    return path


def drag(page, widget, x0: float, y0: float, x1: float, y1: float) -> None:
    box = widget.locator("canvas").bounding_box()
    page.mouse.move(box["x"] + x0, box["y"] + y0)
    page.mouse.down()
    page.mouse.move(box["x"] + (x0 + x1) / 2, box["y"] + (y0 + y1) / 2, steps=4)
    page.mouse.move(box["x"] + x1, box["y"] + y1, steps=4)
    page.mouse.up()


@pytest.mark.e2e
def test_counters_tools_filter_and_collapse_on_a_chrome_trace(lab):
    path = chrome_trace(lab.server.root / "small.trace.json")
    progress: list[str] = []

    def index_progress(page) -> None:  # shown while the index builds, after a second
        banner = page.locator(".xw-trace-viewer[data-busy='progress'] .xw-tv-banner")
        banner.wait_for(timeout=30_000)
        progress.append(banner.inner_text())

    page, widget = open_viewer(lab, "trace_chrome", repr(str(path)), height=360,
                               prelude=SLOW_INDEX, before_ready=index_progress)
    assert progress[0].startswith("Indexing the trace: 50%"), progress
    assert widget.locator(".xw-tv-banner").is_hidden()
    tracks = tracks_of(page)
    assert [(t["name"], t["kind"]) for t in tracks] == [
        ("main", "slices"), ("worker", "slices"), ("memory", "counter")]
    width = widget.locator("canvas").bounding_box()["width"]
    start, end = view_window(widget)
    x_of = lambda us: LABEL_W + (us - start) / (end - start) * (width - LABEL_W)

    # The counter is a step area with its value on hover.
    assert page.evaluate(COLOUR_PIXELS, [21, 101, 192]) > 100
    counter_y = AXIS_H + SECTION_H + 2 * (2 * DEPTH_H + 2 * TRACK_PAD) + 20
    box = widget.locator("canvas").bounding_box()
    page.mouse.move(box["x"] + x_of(1010), box["y"] + counter_y)
    tip = widget.locator(".xw-tv-tip")
    tip.wait_for(state="visible", timeout=5_000)
    assert "memory" in tip.inner_text() and "value 40" in tip.inner_text()  # sample 20: 740 % 100
    harness.screenshot(widget, "trace_viewer_counter")

    # Box select over main's depth 1 in the second step: load and compute, aggregated.
    main_d1 = track_centre_y(tracks, 0, depth=1)
    drag(page, widget, x_of(1150), main_d1 - 4, x_of(2150), main_d1 + 4)
    table = widget.locator(".xw-tv-details .xw-tv-agg")
    table.wait_for(timeout=10_000)
    names = sorted(table.locator("tbody td.xw-tv-name").all_inner_texts())
    assert names == ["compute", "load"]
    selected = harness.run_in_kernel(page, "import json; print(json.dumps(sorted(tv.selection['name'])))")
    assert json.loads(selected) == ["compute", "load"]

    # Timing tool: a drag marks an interval and says how long it is.
    widget.locator(".xw-tv-stage").focus()
    page.keyboard.press("4")
    drag(page, widget, x_of(1200), 100, x_of(2200), 100)
    page.wait_for_function("() => document.querySelector('.xw-trace-viewer').dataset.mark",
                           timeout=5_000)
    assert float(widget.get_attribute("data-mark")) == pytest.approx(1000, rel=0.02)
    harness.screenshot(widget, "trace_viewer_timing")

    # Zoom tool: a dragged region becomes the view.
    page.keyboard.press("3")
    before = view_window(widget)
    drag(page, widget, x_of(2400), 100, x_of(3400), 100)
    after = wait_window_change(page, before)
    assert after == pytest.approx((2400, 3400), abs=0.02 * 1000)
    assert kernel_window(page) == pytest.approx(after, rel=1e-9)

    # Flows from main to worker.
    widget.locator("label.xw-tv-check input").check()
    page.wait_for_function(
        "() => Number(document.querySelector('.xw-trace-viewer').dataset.flows) > 0",
        timeout=10_000)

    # The filter hides what does not match; a section header collapses its tracks.
    rows = int(widget.get_attribute("data-rows"))
    widget.locator(".xw-tv-filter").fill("work")
    page.wait_for_function("() => document.querySelector('.xw-trace-viewer').dataset.rows === '2'",
                           timeout=5_000)
    widget.locator(".xw-tv-filter").fill("")
    page.wait_for_function(
        f"() => document.querySelector('.xw-trace-viewer').dataset.rows === '{rows}'",
        timeout=5_000)
    click_at(page, widget, 60, AXIS_H + SECTION_H / 2)
    page.wait_for_function("() => document.querySelector('.xw-trace-viewer').dataset.rows === '1'",
                           timeout=5_000)
    page.wait_for_timeout(500)
    assert page.evaluate(CANVAS_PIXELS, [LABEL_W + 2, AXIS_H + 2])["painted"] > 100  # summary
    harness.screenshot(widget, "trace_viewer_collapsed")


@pytest.mark.e2e
def test_draws_in_notebook7_and_follows_the_wheel(notebook7):
    page, widget = open_viewer(notebook7, "trace_nb7", repr(str(TPU)))
    pixels = page.evaluate(CANVAS_PIXELS, [LABEL_W + 2, AXIS_H + 2])
    assert pixels["colours"] > 20 and pixels["painted"] > 0.1 * pixels["total"], pixels
    harness.screenshot(widget, "trace_viewer_notebook7")

    box = widget.locator("canvas").bounding_box()
    page.mouse.move(box["x"] + LABEL_W + (box["width"] - LABEL_W) / 2, box["y"] + AXIS_H + 40)
    start, end = view_window(widget)
    page.keyboard.down("Control")  # Ctrl + wheel zooms around the mouse
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    zoomed = wait_window_change(page, (start, end))
    assert zoomed[1] - zoomed[0] < 0.8 * (end - start)
    assert start <= zoomed[0] and zoomed[1] <= end  # around the mouse, inside the old view
    page.mouse.wheel(300, 0)  # a horizontal wheel pans later in time
    panned = wait_window_change(page, zoomed)
    assert panned[0] > zoomed[0]
    assert panned[1] - panned[0] == pytest.approx(zoomed[1] - zoomed[0], rel=1e-6)
    assert kernel_window(page) == pytest.approx(panned, rel=1e-6)  # synced to Python


DRAW_TIMES = "() => performance.getEntriesByName('xw-trace-draw').map((e) => e.duration)"
WATCH_FRAMES = """() => {
  const el = document.querySelector('.xw-trace-viewer');
  window.__xwSlices = [];
  const tick = () => {
    window.__xwSlices.push(Number(el.dataset.slices));
    if (window.__xwWatching) requestAnimationFrame(tick);
  };
  window.__xwWatching = true;
  requestAnimationFrame(tick);
}"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@pytest.mark.e2e
def test_draw_time_over_a_scripted_pan_on_a_large_profile(lab, timings):
    """Measures (prints, never asserts) the draw time of a ~1600x900 canvas while W/D/A/S are
    held over a 2-host synthetic TPU profile of 5e6 events ($XPROF_WIDGETS_DRAW_EVENTS sets
    another size, e.g. 5e7); checks no frame is blank meanwhile."""
    from xprof_widgets.synthetic import write_synthetic

    n_events = int(float(os.environ.get("XPROF_WIDGETS_DRAW_EVENTS", "5e6")))
    logdir = lab.server.root / "large"
    logdir.mkdir()
    write_synthetic(logdir, n_events, kind="tpu", hosts=2)
    page = lab.open_and_run(lab.notebook("trace_large.ipynb", [
        f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(logdir)!r}, height=900)\ntv"]))
    page.set_viewport_size({"width": 1900, "height": 1250})
    page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
    lab.wait_ready(page, READY, timeout=180)
    widget = page.locator(".xw-trace-viewer")
    page.wait_for_timeout(800)
    box = widget.locator("canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 300)
    widget.locator(".xw-tv-stage").focus()
    rows = []
    for label, key, seconds in [("zoom in (W)", "w", 2.5), ("pan right (D)", "d", 4.0),
                                ("pan left (A)", "a", 2.0), ("zoom out (S)", "s", 2.5)]:
        page.evaluate("() => performance.clearMeasures('xw-trace-draw')")
        page.evaluate(WATCH_FRAMES)
        page.keyboard.down(key)
        page.wait_for_timeout(int(seconds * 1000))
        page.keyboard.up(key)
        page.wait_for_timeout(300)
        page.evaluate("() => { window.__xwWatching = false; }")
        draws = page.evaluate(DRAW_TIMES)
        slices = page.evaluate("() => window.__xwSlices")
        # Frames drawn while the key was held (how many depends on the machine's load).
        assert len(draws) >= 3 and min(slices) > 0, (label, len(draws), min(slices))
        rows.append({"what": label, "frames": len(draws), "p50_ms": percentile(draws, 0.5),
                     "p95_ms": percentile(draws, 0.95), "max_ms": max(draws)})
        timings.add(lab.name, f"draw p95 {label}", rows[-1]["p95_ms"] / 1000)
    # Answers dropped while the keys were held took names with them: the view asked again.
    page.wait_for_timeout(500)
    assert widget.get_attribute("data-missing-names") == "0"
    report = {"canvas_css_px": [box["width"], box["height"]], "events": n_events, "rows": rows}
    (harness.ARTIFACTS / "trace_viewer_draw_times.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    harness.screenshot(widget, "trace_viewer_large")


THEME = "(name) => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})"
THEME_SETTINGS = "/lab/api/settings/@jupyterlab/apputils-extension:themes"
# Share of the canvas's pixels that are light (luminance over 70%).
LIGHT_SHARE = """() => {
  const canvas = document.querySelector(".xw-trace-viewer canvas");
  const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let light = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (0.2126 * data[i] + 0.7152 * data[i + 1] + 0.0722 * data[i + 2] > 0.7 * 255) light++;
  }
  return light / (data.length / 4);
}"""


def set_theme(lab, page, name: str) -> None:
    """Switches JupyterLab's theme and waits until the server holds it (new pages start in it)."""
    page.evaluate(THEME, name)
    deadline = time.monotonic() + 15
    while lab.server.api("GET", THEME_SETTINGS)["settings"].get("theme") != name:
        assert time.monotonic() < deadline, f"JupyterLab did not save the theme {name!r}"
        time.sleep(0.2)


@pytest.mark.e2e
def test_dark_from_the_start(lab):
    """JupyterLab in dark before the widget exists (issue 22, item 3): the timeline is dark between
    the dark toolbar and details, not light; switched to light, it follows."""
    first = lab.open_and_run(lab.notebook("theme_switch.ipynb", ["1"]))
    set_theme(lab, first, "JupyterLab Dark")
    try:
        page, widget = open_viewer(lab, "trace_dark", repr(str(TPU)))
        assert page.evaluate("() => document.body.dataset.jpThemeLight") == "false"
        page.wait_for_timeout(300)
        assert page.evaluate(LIGHT_SHARE) < 0.05
        toolbar = widget.locator(".xw-tv-toolbar").evaluate("(el) => getComputedStyle(el).backgroundColor")
        assert sum(int(v) for v in toolbar[toolbar.index("(") + 1:-1].split(",")[:3]) < 3 * 110, toolbar
        pixels = page.evaluate(CANVAS_PIXELS, [LABEL_W + 2, AXIS_H + 2])
        assert pixels["colours"] > 20 and pixels["painted"] > 0.1 * pixels["total"], pixels
        harness.screenshot(widget, "trace_viewer_dark_from_start")
        page.evaluate(THEME, "JupyterLab Light")
        page.wait_for_function(f"() => ({LIGHT_SHARE})() > 0.5", timeout=15_000)
    finally:
        set_theme(lab, first, "JupyterLab Light")


def wait_data(page, attr: str, predicate: str, timeout: int = 15_000) -> str:
    """Waits until the viewer's data-<attr> satisfies `predicate` (JS, of v) and returns it."""
    page.wait_for_function(
        f"() => {{ const v = document.querySelector('.xw-trace-viewer')?.dataset.{attr}; "
        f"return v !== undefined && ({predicate}); }}", timeout=timeout)
    kebab = "".join(f"-{c.lower()}" if c.isupper() else c for c in attr)
    return page.locator(".xw-trace-viewer").get_attribute(f"data-{kebab}")


def check_search_labels_and_numbers(app, name: str) -> None:
    """Issue 22 items 5, 6, 7, 10 on the TPU fixture: search split and marks, the label column,
    the axis's unit, one start in the tooltip and the details, _ps stats, device time vs spans."""
    page, widget = open_viewer(app, name, repr(str(TPU)), height=520)
    search = widget.locator(".xw-tv-search")

    # fusion.1: 400 hits by name (broadcast_add_fusion.1), 500 only through their HLO text.
    search.fill("fusion.1")
    search.press("Enter")
    split = wait_data(page, "hitSplit", "v.length > 0")
    assert split == "400 name · 500 HLO text"
    assert widget.locator(".xw-tv-split").inner_text() == split
    page.wait_for_function("() => document.querySelector('.xw-tv-hits').textContent.endsWith('/ 900')",
                           timeout=10_000)
    widget.locator(".xw-tv-match").select_option("name")
    page.wait_for_function("() => document.querySelector('.xw-tv-hits').textContent.endsWith('/ 400')",
                           timeout=10_000)
    assert widget.get_attribute("data-hits") == "400"
    title = widget.locator(".xw-tv-details .xw-tv-title")
    page.wait_for_function(
        "() => document.querySelector('.xw-tv-details .xw-tv-title')?.textContent === "
        "'broadcast_add_fusion.1'", timeout=10_000)
    # Enter steps through names only.
    for _ in range(3):
        search.press("Enter")
        page.wait_for_timeout(250)
        assert title.inner_text() == "broadcast_add_fusion.1"
    # The whole trace: every hit drawn is marked (far more than the current one), and the
    # tracks holding hits are ticked.
    widget.locator(".xw-tv-stage").focus()
    page.keyboard.press("0")
    marked = int(wait_data(page, "hitsMarked", "Number(v) > 1 && "
                           "document.querySelector('.xw-trace-viewer').dataset.settled === '1'"))
    assert marked <= int(widget.get_attribute("data-slices"))
    assert int(widget.get_attribute("data-hit-rows")) >= 1
    harness.screenshot(widget, f"{name}_search_marks")
    search.fill("")
    wait_data(page, "hitsMarked", "v === '0'")

    # The label column: dragged 120 px wider from its edge; the timeline starts there.
    box = widget.locator("canvas").bounding_box()
    page.mouse.move(box["x"] + LABEL_W, box["y"] + 120)
    page.mouse.down()
    page.mouse.move(box["x"] + LABEL_W + 60, box["y"] + 120)
    page.mouse.move(box["x"] + LABEL_W + 120, box["y"] + 120)
    page.mouse.up()
    assert wait_data(page, "labelWidth", "v === '330'") == "330"
    harness.screenshot(widget, f"{name}_labels_wide")
    wide = LABEL_W + 120

    # The axis at a 1.75 s span reads in seconds.
    harness.run_in_kernel(page, "tv.window = (19.0e6, 20.75e6)")
    axis = wait_data(page, "axis", "v.startsWith('19')").split("|")
    assert len(axis) >= 3 and all(label.endswith(" s") for label in axis), axis
    assert axis[:2] in (["19.0 s", "19.2 s"], ["19.0 s", "19.5 s"]), axis

    # One copy-done.4: the tooltip and the details print the same start.
    event = event_row(page, "(lambda h: h[(h.name == 'copy-done.4') & (h.track == 1)].iloc[0])"
                            "(tv.search('copy-done.4'))")
    show_event(page, widget, event)
    page.mouse.move(box["x"] + wide + 50, box["y"] + 200)
    page.mouse.wheel(0, -20_000)  # the search scrolled the tracks: back to the top
    wait_data(page, "scrollY", "v === '0'")
    tracks = tracks_of(page)
    x_mid = wide + (box["width"] - wide) / 2
    y = track_centre_y(tracks, event["track"], event["depth"])
    page.mouse.move(box["x"] + x_mid, box["y"] + y)
    tip = widget.locator(".xw-tv-tip")
    tip.wait_for(state="visible", timeout=10_000)
    assert tip.locator(".xw-tv-tip-name").inner_text() == "copy-done.4"
    tip_start = tip.inner_text().split(" at ")[1].split("\n")[0].strip()
    click_at(page, widget, x_mid, y)
    page.wait_for_function(
        "() => document.querySelector('.xw-tv-details .xw-tv-title')?.textContent === 'copy-done.4'",
        timeout=10_000)
    kv = widget.locator(".xw-tv-details .xw-tv-kv").first
    rows = dict(zip(kv.locator("th").all_inner_texts(), kv.locator("td").all_inner_texts(),
                    strict=True))
    assert rows["Start"] == tip_start, (rows, tip_start)
    assert "Event" not in rows  # no internal id
    # device_duration_ps as a duration, its raw picoseconds on hover.
    stat = widget.locator(".xw-tv-details tr", has_text="device_duration_ps").locator("td")
    assert stat.inner_text().endswith(" ms"), stat.inner_text()
    assert stat.get_attribute("title").endswith(" ps")
    harness.screenshot(widget, f"{name}_details")

    # All 400 copy-done.4: the summary names the device time (what the Op Profile counts) and
    # the spans, which differ here (77.773 s against 70.5 s).
    harness.run_in_kernel(page, "h = tv.search('copy-done.4'); "
                                "tv.selected_events = h[h.name == 'copy-done.4'].event.tolist()")
    agg = widget.locator(".xw-tv-details .xw-tv-agg")
    agg.wait_for(timeout=15_000)
    head = widget.locator(".xw-tv-details .xw-tv-title").first.inner_text()
    assert "device time 77.773 s (what the Op Profile counts) · spans 70.539 s" in head, head
    assert "Device time" in agg.locator("thead").inner_text()
    harness.screenshot(widget, f"{name}_device_time")

    # The source file of the fixture's test: host threads named after it, and the XLA ops it
    # made through their `source` stat; then the op-stats kind alone.
    widget.locator(".xw-tv-match").select_option("any")
    search.fill("host_offload_stress")
    search.press("Enter")
    split = wait_data(page, "hitSplit", "v.includes('op stats')")
    assert split == "413 name · 1,213 op stats"
    widget.locator(".xw-tv-match").select_option("stats")
    page.wait_for_function("() => document.querySelector('.xw-tv-hits').textContent.endsWith('/ 1,213')",
                           timeout=10_000)
    harness.screenshot(widget, f"{name}_search_stats")


@pytest.mark.e2e
def test_search_labels_and_numbers_in_jupyterlab(lab):
    check_search_labels_and_numbers(lab, "trace_h10_lab")


@pytest.mark.e2e
def test_search_labels_and_numbers_in_notebook7(notebook7):
    check_search_labels_and_numbers(notebook7, "trace_h10_nb7")


LONG_THREADS = ["tf_XLAEigen/-8948125363344516372",
                "pyper:trainer:0:0 (4037) data loader worker thread pool · rank 1"]


@pytest.mark.e2e
def test_long_labels_shortened_with_the_full_name_on_hover(lab):
    events = [{"ph": "M", "name": "process_name", "pid": 1,
               "args": {"name": "trainer host with a long name · rank 1"}}]
    for tid, name in enumerate(LONG_THREADS, start=1):
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
                       "args": {"name": name}})
        events += [{"ph": "X", "name": f"op{k}", "pid": 1, "tid": tid, "ts": 100 * k, "dur": 80}
                   for k in range(10)]
    path = lab.server.root / "long_labels.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    page, widget = open_viewer(lab, "trace_long_labels", repr(str(path)), height=200)
    order = [t["name"] for t in tracks_of(page)]
    assert sorted(order) == sorted(LONG_THREADS)
    box = widget.locator("canvas").bounding_box()
    # Narrowed to 150 px from the column's edge: the labels are cut in the middle to fit.
    page.mouse.move(box["x"] + LABEL_W, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(box["x"] + 150, box["y"] + 60)
    page.mouse.up()
    assert wait_data(page, "labelWidth", "v === '150'") == "150"
    harness.screenshot(widget, "trace_viewer_long_labels")
    tip = widget.locator(".xw-tv-tip")
    for k, name in enumerate(order):
        page.mouse.move(box["x"] + 60, box["y"] + AXIS_H + SECTION_H + k * (DEPTH_H + 2 * TRACK_PAD) + 10)
        tip.wait_for(state="visible", timeout=5_000)
        page.wait_for_function("(name) => document.querySelector('.xw-tv-tip .xw-tv-tip-name')"
                               "?.textContent === name", arg=name, timeout=5_000)
    # The timeline starts at the new edge: a click there selects the first op.
    click_at(page, widget, 150 + 12, AXIS_H + SECTION_H + 10)
    page.wait_for_function(
        "() => document.querySelector('.xw-tv-details .xw-tv-title')?.textContent === 'op0'",
        timeout=10_000)
