"""The suite as one piece (issue 22): every tab of `xw.Profiler` in JupyterLab and Notebook 7,
dark from the start and then switched to light, on a TensorFlow CPU run and a TPU run.

Per tab: every table header's text fits its cell, the pinned op card covers neither the table
nor the roofline, the tab titles are whole, the suite offers no tab without data (TF CPU: no Op
Profile, no Memory Viewer), and in dark no large region is painted light (the screenshot's
tiles; the Trace Viewer's own canvas is that view's matter and is left out of the count).
"""

from __future__ import annotations

import io
import json

import harness
import pytest

DATA = harness.REPO / "tests" / "data"
PROFILES = {"tf_cpu": DATA / "tf_keras_cpu_slow_map.xplane.pb",
            "tpu": DATA / "tpu_v6e_inference.xplane.pb"}
THEME_SETTINGS = ("@jupyterlab", "apputils-extension", "themes.jupyterlab-settings")
SHOWN = ".widget-tab-contents > :not(.lm-mod-hidden)"
TILE = 48  # px: the side of the squares the light-region check looks at
LIGHT = 0.80  # luminance above which a pixel is light paint
LIGHT_SHARE = 0.9  # a tile this light is light background

CUT_HEADERS = """(root) => [...root.querySelectorAll("th")]
  .filter((th) => th.offsetParent !== null && th.scrollWidth > th.clientWidth + 1)
  .map((th) => `${th.textContent} (${th.scrollWidth} > ${th.clientWidth})`)"""
TAB_LABELS = """(suite) => [...suite.querySelectorAll(":scope > .lm-TabBar .lm-TabBar-tabLabel")]
  .map((label) => ({ text: label.textContent, cut: label.scrollWidth > label.clientWidth + 1
    || label.closest(".lm-TabBar-tab").scrollWidth > label.closest(".lm-TabBar-tab").clientWidth + 1,
    right: label.getBoundingClientRect().right, bar: suite.getBoundingClientRect().right }))"""


def set_start_theme(app, dark: bool) -> None:
    """The theme the next page opens in (the user's settings, as the menu would save them)."""
    path = app.server.log_path.parent / "lab-settings"
    path = path.joinpath(*THEME_SETTINGS)
    path.parent.mkdir(parents=True, exist_ok=True)
    if dark:
        path.write_text(json.dumps({"theme": "JupyterLab Dark"}), encoding="utf-8")
    else:
        path.unlink(missing_ok=True)


def light_tiles(png: bytes, masks: list[dict], origin: dict) -> list[tuple[int, int]]:
    """Top-left corners of the TILE-square tiles of a screenshot that are light paint, outside
    the masked boxes (page coordinates; `origin` is the screenshot's box)."""
    import numpy as np
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float32) / 255
    light = (0.2126 * rgb[..., 0] + 0.7152 * rgb[..., 1] + 0.0722 * rgb[..., 2]) > LIGHT
    keep = np.ones(light.shape, bool)
    for box in masks:
        x0, y0 = int(box["x"] - origin["x"]), int(box["y"] - origin["y"])
        keep[max(0, y0):max(0, y0 + int(box["height"])), max(0, x0):max(0, x0 + int(box["width"]))] = False
    found = []
    for y in range(0, light.shape[0] - TILE + 1, TILE):
        for x in range(0, light.shape[1] - TILE + 1, TILE):
            if keep[y:y + TILE, x:x + TILE].all() and light[y:y + TILE, x:x + TILE].mean() > LIGHT_SHARE:
                found.append((x, y))
    return found


def intersects(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def wait_drawn(page, suite) -> None:
    """The shown tab's view is drawn (data-ready='1'), its charts too."""
    view = suite.locator(f"{SHOWN}[data-ready='1'], {SHOWN} [data-ready='1'], {SHOWN} .xw-ov-card")
    view.first.wait_for(timeout=120_000)
    page.wait_for_function(
        """(suite) => {
          const shown = suite.querySelector(':scope > .widget-tab-contents > :not(.lm-mod-hidden)');
          return shown && !shown.querySelector("[data-ready='0'], [data-charts='0']")
            && !shown.querySelector(".xw-op-profile[data-ready='1']:not([data-roofline])");
        }""", arg=suite.element_handle(), timeout=60_000)
    page.wait_for_timeout(600)  # BokehJS paints on the next frames


def pin_an_op(page, suite) -> None:
    """Expand the first group of the Op Profile, pin its first op; the card must sit beside or
    below the table and the roofline, never over them."""
    view = suite.locator(f"{SHOWN} .xw-op-profile")
    view.locator("tr[data-kind='group'] [data-toggle]").first.click()
    view.locator("tr[data-kind='op'] td.xw-op-name").first.click()
    card = view.locator(".xw-op-card:not([hidden])")
    card.wait_for(timeout=30_000)
    assert "BW util" in card.inner_text() and "Memory util" not in card.inner_text()
    box = card.bounding_box()
    for other in (".xw-op-table-wrap", ".xw-op-roofline"):
        assert not intersects(box, view.locator(other).bounding_box()), other


def check_tab(page, app, suite, profile: str, key: str, title: str, dark: bool) -> list[str]:
    """One tab's checks; returns what was found wrong (asserted together by the caller). The
    card is pinned in the dark pass (the first: a second click would unpin it)."""
    suite.locator(":scope > .lm-TabBar .lm-TabBar-tab", has_text=title).first.click()
    wait_drawn(page, suite)
    shown = suite.locator(SHOWN).first
    problems = [f"{title}: header cut: {cut}"
                for cut in page.evaluate(CUT_HEADERS, shown.element_handle())]
    if key == "op" and dark:
        pin_an_op(page, suite)
    name = f"coherence_{app.server.app}_{profile}_{key}_{'dark' if dark else 'light'}"
    png = shown.screenshot()
    harness.screenshot(shown, name)
    if dark:
        masks = [b for b in (c.bounding_box() for c in shown.locator(".xw-tv-stage canvas").all()) if b]
        light = light_tiles(png, masks, shown.bounding_box())
        if key == "op":  # the roofline may sit below the cell's visible part: looked at alone
            roofline = shown.locator(".xw-op-roofline").first
            roofline.scroll_into_view_if_needed()
            light += light_tiles(roofline.screenshot(), [], roofline.bounding_box())
        if light:
            problems.append(f"{title}: {len(light)} light {TILE}px tiles in dark, first at {light[:3]} "
                            f"(tests/e2e/artifacts/{name}.png)")
    return problems


def run_suite(app, dark: bool):
    paths = {k: str(v) for k, v in PROFILES.items()}
    source = (f"import ipywidgets\nimport xprof_widgets as xw\n"
              f"suites = {{k: xw.Profiler(p) for k, p in {paths!r}.items()}}\n"
              "ipywidgets.VBox(list(suites.values()))")  # one output: both drawn together
    cells = [source]
    page = app.open_and_run(app.notebook(f"coherence_{'dark' if dark else 'light'}.ipynb", cells))
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{str(not dark).lower()}'",
                           timeout=30_000)
    second = ".widget-vbox:has(> .xw-suite-tabs) ~ .widget-vbox > .xw-suite-tabs"
    try:
        app.wait_ready(page, second, timeout=300)
    except Exception:  # what the page showed instead, for the failure's reader
        page.screenshot(path=str(harness.ARTIFACTS / f"coherence_{app.server.app}_not_drawn.png"))
        raise
    return page


def tabs_of(page, profile: str) -> list[tuple[str, str]]:
    """(key, title) of each tab the suite on that profile offers, asked of the kernel."""
    out = harness.run_in_kernel(page, f"print(*(f'{{t.key}}={{t.title}}' for t in "
                                      f"suites[{profile!r}]._offered), sep='\\n')")
    return [tuple(line.split("=", 1)) for line in out.splitlines() if "=" in line]


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_every_tab_fits_and_follows_the_theme(app_fixture, request):
    app = request.getfixturevalue(app_fixture)
    set_start_theme(app, dark=True)
    try:
        page = run_suite(app, dark=True)
        problems = []
        for index, profile in enumerate(PROFILES):
            suite = page.locator(".xw-suite-tabs").nth(index)
            tabs = tabs_of(page, profile)
            keys = [k for k, _ in tabs]
            if profile == "tf_cpu":  # no tab that would only say there is no data
                assert "op" not in keys and "memory" not in keys, keys
            labels = page.evaluate(TAB_LABELS, suite.element_handle())
            assert [label["text"] for label in labels] == [t for _, t in tabs]
            cut = [label["text"] for label in labels if label["cut"] or label["right"] > label["bar"] + 1]
            assert not cut, f"tab titles cut or off the bar: {cut}"
            harness.screenshot(suite.locator(":scope > .lm-TabBar"), f"coherence_{app.server.app}_tabs_{profile}")
            for key, title in tabs:
                problems += [f"{profile}: {p}" for p in check_tab(page, app, suite, profile, key, title, dark=True)]
        assert not problems, "\n".join(problems)

        # Switched to light while open: every tab again (screenshots), and the charts follow (a
        # BokehJS plot drawn dark is repainted light).
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', "
                      "{theme: 'JupyterLab Light'})")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)
        for index, profile in enumerate(PROFILES):
            suite = page.locator(".xw-suite-tabs").nth(index)
            for key, title in tabs_of(page, profile):
                problems += [f"{profile}: {p}" for p in check_tab(page, app, suite, profile, key, title, dark=False)]
        assert not problems, "\n".join(problems)
        suite.locator(":scope > .lm-TabBar .lm-TabBar-tab", has_text="Op Profile").first.click()
        wait_drawn(page, suite)
        roofline = suite.locator(f"{SHOWN} .xw-op-roofline").first
        png = roofline.screenshot()
        harness.screenshot(roofline, f"coherence_{app.server.app}_roofline_after_switch")
        assert light_tiles(png, [], roofline.bounding_box()), "the roofline stayed dark in light"
    finally:
        set_start_theme(app, dark=False)


# The shown BokehJS tooltip (a popover `bk-Tooltip` in the page's body): the computed background
# of its body and its text colour; and the colour of the toolbar icons under `root`.
BOKEH_CHROME = """(root) => {
  const all = [];
  const walk = (n) => { all.push(n); for (const c of [...(n.shadowRoot?.children ?? []), ...n.children]) walk(c); };
  walk(root);
  const shown = (e) => e.isConnected && getComputedStyle(e).display !== 'none' && e.getBoundingClientRect().width > 0;
  const tip = [...document.querySelectorAll('body > .bk-Tooltip')].find(shown);
  const body = tip?.shadowRoot?.querySelector('.bk-tooltip-content') ?? tip;
  let paint = body;
  while (paint && paint.parentElement && getComputedStyle(paint).backgroundColor === 'rgba(0, 0, 0, 0)') paint = paint.parentElement;
  if (paint && getComputedStyle(paint).backgroundColor === 'rgba(0, 0, 0, 0)') paint = tip;
  const icon = all.find((e) => e.classList?.contains('bk-tool-icon') && shown(e));
  return { tip: tip ? { background: getComputedStyle(paint).backgroundColor, text: getComputedStyle(body).color,
                        words: tip.shadowRoot?.textContent ?? '' } : null,
           icon: icon ? getComputedStyle(icon).backgroundColor : null };
}"""


def luminance(css: str, over: float = 0.0) -> float:
    """Luminance of a computed `rgb()`/`rgba()` colour, its alpha laid over a grey of `over`."""
    parts = [float(v) for v in css[css.index("(") + 1:css.index(")")].split(",")]
    alpha = parts[3] if len(parts) == 4 else 1.0
    r, g, b = (alpha * v / 255 + (1 - alpha) * over for v in parts[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.e2e
@pytest.mark.parametrize("app_fixture", ["lab", "notebook7"])
def test_a_chart_tooltip_and_toolbar_follow_the_dark_theme(app_fixture, request):
    """Dark from the start: hovering a bar of the compare step chart shows a dark tooltip with
    light text, the toolbar's icons are light; switched to light, the tooltip and icons turn
    light and dark. (The suite test above counts light tiles, which a tooltip shown only on
    hover never is.)"""
    app = request.getfixturevalue(app_fixture)
    set_start_theme(app, dark=True)
    try:
        pairs = DATA / "compare"
        cells = [(f"import xprof_widgets as xw\nxw.compare({str(pairs / 'loader_slow.xplane.pb')!r}, "
                  f"{str(pairs / 'loader_fast.xplane.pb')!r})")]
        page = app.open_and_run(app.notebook("coherence_tooltip.ipynb", cells))
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
        app.wait_ready(page, ".xw-compare[data-ready='1']")
        chart = page.locator(".xw-compare [data-chart='steps']")
        found = {}
        for theme in ("dark", "light"):
            if theme == "light":
                page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', "
                              "{theme: 'JupyterLab Light'})")
                page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'",
                                       timeout=30_000)
                page.wait_for_timeout(800)
            found[theme] = hover_a_bar(page, chart)
            harness.screenshot(chart, f"coherence_tooltip_{app.server.app}_{theme}")
        dark, light = found["dark"], found["light"]
        assert "step time" in dark["tip"]["words"]
        assert luminance(dark["tip"]["background"]) < 0.25, dark
        assert luminance(dark["tip"]["text"]) > 0.6, dark
        # The icons: the theme's secondary ink, lighter than Bokeh's own grey (#747679, 0.46) on
        # dark; on light, dark ink again.
        assert luminance(dark["icon"]) > 0.5 and luminance(light["icon"], over=1.0) < 0.5, found
        assert luminance(light["tip"]["background"]) > 0.8 and luminance(light["tip"]["text"]) < 0.4, light
    finally:
        set_start_theme(app, dark=False)


def hover_a_bar(page, chart) -> dict:
    """Moves the mouse across the chart's lower part until a tooltip shows; what it found."""
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    for k in range(60):
        page.mouse.move(box["x"] + box["width"] * (0.1 + 0.8 * k / 60), box["y"] + box["height"] * 0.7)
        page.wait_for_timeout(30)
        got = page.evaluate(BOKEH_CHROME, chart.element_handle())
        if got["tip"]:
            page.wait_for_timeout(200)
            return page.evaluate(BOKEH_CHROME, chart.element_handle())
    raise AssertionError("no tooltip showed over the step chart")
