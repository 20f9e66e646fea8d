"""Key latency of the Trace Viewer in the browser: W/S/A/D to the first changed frame and to the
settled picture, in real JupyterLab and Notebook 7 (issue 23, item 2).

    python tests/bench/bench_keys_browser.py [--sizes 5e6 [5e7]] [--apps lab notebook]
        [--presses 60]

Times come from the page's own clock. A capture listener on `window` takes each key's
`event.timeStamp`; after every frame the view draws (its `data-frames` changes inside the
animation-frame callback that painted the canvas), the bench notes the time and asks for one
more animation frame: that one runs once the changed frame has gone to the screen. Columns, in
milliseconds from keydown, p50 / p95 over the presses:

- first: the frame after the first one that shows the view moved (drawn from what the view held);
- settled: the frame after the first one drawn from an answer that serves the view at full
  resolution (`data-settled="1"`): the same frame as `first` when what the view held serves it;
- drawn: when the first changed frame's callback finished (`first` less the wait for the screen);
- waited: presses whose settled picture came after the first frame (the kernel was asked).

Profiles are synthetic TPU traces cached by tests/bench/common.py ($XPROF_WIDGETS_BENCH_DIR; put
the 5e7 one, ~1 GB, on /tmp). Chromium runs headless without a GPU, as the browser tests do. No
asserts: a table to read beside the issue's targets (first within 16 ms, settled within 50 ms,
p95, at 5e7 events).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "e2e")]

import harness
from common import SIZES, synthetic_file, table

READY = ".xw-trace-viewer[data-ready='1']"
LABEL_W = 210
VIEW_KEYS = "wsad"

# Installs the page-side clock: one record per W/S/A/D keydown, filled in by the frames after it.
INSTALL = """() => {
  const el = document.querySelector(".xw-trace-viewer");
  const log = (window.__xwKeyLog = []);
  window.addEventListener("keydown", (e) => {
    if ("wsad".includes(e.key) && !e.repeat) {
      log.push({ key: e.key, t: e.timeStamp, window: el.dataset.window, drawn: null, first: null, settled: null });
    }
  }, { capture: true });
  new MutationObserver(() => {
    const now = performance.now();
    const entry = log[log.length - 1];
    if (!entry) return;
    const moved = entry.drawn === null && el.dataset.window !== entry.window;
    const settled = entry.settled === null && el.dataset.window !== entry.window && el.dataset.settled === "1";
    if (moved) entry.drawn = now;
    if (moved || settled) {
      requestAnimationFrame(() => {
        const shown = performance.now();
        if (moved) entry.first = shown;
        if (settled) entry.settled = shown;
      });
    }
  }).observe(el, { attributes: true, attributeFilter: ["data-frames"] });
}"""
LAST_SETTLED = "() => { const e = window.__xwKeyLog.at(-1); return e && e.settled !== null; }"


def key_sequence(rng: random.Random, presses: int) -> str:
    """`presses` W/S/A/D keys that keep the view inside the trace, zoomed in 3 to 14 steps (so
    each press moves it), starting W W W W D D as the user's report did."""
    keys, level, offset = list("wwwwdd"), 4, 2
    while len(keys) < presses:
        key = rng.choice(VIEW_KEYS)
        if key == "s" and level <= 3 or key == "w" and level >= 14:
            continue
        if key == "a" and offset <= -4 or key == "d" and offset >= 4:
            continue
        level += {"w": 1, "s": -1}.get(key, 0)
        offset += {"a": -1, "d": 1}.get(key, 0)
        keys.append(key)
    return "".join(keys)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure_app(app: harness.NotebookApp, path: Path, presses: int, seed: int) -> dict:
    """Opens the profile's Trace Viewer in `app`, presses the keys; p50/p95 per column (ms)."""
    cells = [f"import xprof_widgets as xw\ntv = xw.TraceViewer({str(path)!r}, height=500)\ntv"]
    page = app.open_and_run(app.notebook(f"bench_keys_{path.stem}.ipynb", cells))
    app.wait_ready(page, READY, timeout=900)
    widget = page.locator(".xw-trace-viewer")
    box = widget.locator("canvas").bounding_box()
    page.mouse.click(box["x"] + (LABEL_W + box["width"]) / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(500)
    page.evaluate(INSTALL)
    page.evaluate("() => performance.clearMeasures('xw-trace-draw')")
    rng = random.Random(seed)
    for key in key_sequence(rng, presses):
        page.keyboard.press(key)
        page.wait_for_function(LAST_SETTLED, timeout=30_000, polling=50)
        page.wait_for_timeout(rng.randint(30, 300))
    log = page.evaluate("() => window.__xwKeyLog")
    out = {"n": len(log), "log": log,
           "waited": sum(entry["settled"] > entry["first"] for entry in log)}
    draws = page.evaluate("() => performance.getEntriesByName('xw-trace-draw').map((m) => m.duration)")
    out["draw"] = (percentile(draws, 0.5), percentile(draws, 0.95))
    for column in ("first", "settled", "drawn"):
        values = [entry[column] - entry["t"] for entry in log]
        out[column] = (percentile(values, 0.5), percentile(values, 0.95))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["5e6"], choices=sorted(SIZES))
    parser.add_argument("--apps", nargs="+", default=["lab", "notebook"], choices=["lab", "notebook"])
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--verbose", action="store_true", help="print every press's times")
    args = parser.parse_args()
    chromium = harness.find_chromium()
    if chromium is None:
        raise SystemExit(f"no Chromium at {' or '.join(harness.CHROMIUM_PATHS)}")
    subprocess.run([shutil.which("node") or "node", "build.mjs"], cwd=harness.REPO / "js",
                   check=True, capture_output=True)
    paths = {label: synthetic_file(label) for label in args.sizes}
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as tmp:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=harness.CHROMIUM_ARGS)
        for app_name in args.apps:
            server = harness.JupyterServer(app_name, Path(tmp) / app_name)
            server.start()
            try:
                for label, path in paths.items():
                    app = harness.NotebookApp(server, browser, harness.Timings())
                    try:
                        r = measure_app(app, path, args.presses, args.seed)
                    finally:
                        app.close()
                    if args.verbose:
                        for e in r["log"]:
                            print(e["key"], *(f"{e[c] - e['t']:.1f}" for c in
                                              ("drawn", "first", "settled")))
                    rows.append([app.name, label, r["n"], r["waited"],
                                 *(f"{v:.1f}" for column in ("first", "settled", "drawn", "draw")
                                   for v in r[column])])
                    print(*rows[-1], flush=True)
            finally:
                server.stop()
        browser.close()
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(table(["app", "events", "presses", "waited", "first p50", "first p95", "settled p50",
                 "settled p95", "drawn p50", "drawn p95", "draw p50", "draw p95"], rows))


if __name__ == "__main__":
    main()
