"""Graph Viewer scale: the neighbourhood of an op in a large synthetic HLO module.

    python tests/bench/bench_graph.py [--instructions 20000] [--repeat 5] [--browser]
        [--elkjs DIR] [--graphviz DIR]   (DIR: the package's folder under node_modules of
        `npm install --prefix X elkjs @hpcc-js/wasm-graphviz`)

A synthetic TPU training program (xprof_widgets/synthetic) with about --instructions
instructions in its entry computation (fusion bodies come on top). Rows, each the median of
--repeat runs, wall and CPU seconds:
- cold: from the serialized HloProto to the first neighbourhood's nodes() and edges() (parse,
  scan, index of the op's computation, walk, rows);
- warm: another op's neighbourhood on the indexed module, nodes() + edges() + to_dot();
  width 3, fusions merged and expanded; and the whole entry computation, fusions merged (the
  view's `whole_module`: all its instructions, one row each);
- the widget's graph reply: its bytes (JSON header and binary columns) and Python seconds;
- layout: js/src/graph_viewer/layout.js on those graphs under Node.js (dagre up to 400 nodes, the
  layered layout beyond), one run each; with --elkjs / --graphviz, ELK's layered layout and
  Graphviz's dot on the same graphs (dot on their `to_dot()`);
- with --browser, in real JupyterLab in headless Chromium (tests/e2e/harness.py), from the trait
  change to the graph drawn, on the page's clock: the neighbourhood at width 3 end to end (kernel,
  transfer, layout in the worker, draw), and the whole module: time to the first nodes drawn, to
  the last, the longest gap between two animation frames and the longest task (over 50 ms, the
  page's `longtask` entries) meanwhile; then the whole module fitted (F).
Nothing here asserts; the issue's target is 200 ms for width 3.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import table

from xprof_widgets.analysis.graph import ModuleGraph, Neighbourhood
from xprof_widgets.profile.schema import HloProto
from xprof_widgets.synthetic.hlo import build_hlo_proto
from xprof_widgets.synthetic.program import layers_for, make_program
from xprof_widgets.widgets.graph_viewer import graph_reply


def _module(instructions: int) -> bytes:
    program = make_program("jit_big", "tpu", layers_for(instructions), 1, True, 1e14, 1e12)
    return build_hlo_proto(program)


def _graph(data: bytes) -> ModuleGraph:
    return ModuleGraph(HloProto.FromString(data), data, 1, "jit_big(1)")


def _draw(graph: ModuleGraph, op: str, merge: bool) -> int:
    nb = Neighbourhood(graph, op, 3, merge)
    nb.edges()
    nb.to_dot()
    return len(nb.nodes())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instructions", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--browser", action="store_true",
                        help="also time the view in JupyterLab (headless Chromium)")
    parser.add_argument("--elkjs", type=Path, help="an elkjs package folder (npm install "
                        "elkjs): also time ELK's layered layout on the same graphs")
    parser.add_argument("--graphviz", type=Path, help="an @hpcc-js/wasm-graphviz package "
                        "folder: also time Graphviz's dot (WASM) on the same graphs' DOT")
    parser.add_argument("--layout-timeout", type=float, default=300,
                        help="seconds before an ELK or Graphviz layout counts as not finished")
    args = parser.parse_args()
    data = _module(args.instructions)
    proto = HloProto.FromString(data)
    entry = next(c for c in proto.hlo_module.computations
                 if c.name == proto.hlo_module.entry_computation_name)
    total = sum(len(c.instructions) for c in proto.hlo_module.computations)
    names = [i.name for i in entry.instructions]
    fusions = [i.name for i in entry.instructions if i.opcode == "fusion"]
    ops = [fusions[len(fusions) // 2], names[len(names) // 3]]
    rows = []
    for merge in (True, False):
        cold, warm, shown = [], [], 0
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            graph = _graph(data)
            nb = Neighbourhood(graph, ops[0], 3, merge)
            nb.nodes()
            nb.edges()
            cold.append((time.perf_counter() - wall, time.process_time() - cpu))
            wall, cpu = time.perf_counter(), time.process_time()
            shown = _draw(graph, ops[1], merge)
            warm.append((time.perf_counter() - wall, time.process_time() - cpu))
        rows.append([f"width 3, fusions {'merged' if merge else 'expanded'}", len(names), total,
                     shown, *_medians(cold), *_medians(warm)])
    cold, warm = [], []
    for _ in range(args.repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        graph = _graph(data)
        whole = Neighbourhood(graph, ops[0], 3, True, whole=True)
        whole.nodes()
        whole.edges()
        cold.append((time.perf_counter() - wall, time.process_time() - cpu))
        wall, cpu = time.perf_counter(), time.process_time()
        whole = Neighbourhood(graph, ops[1], 3, True, whole=True)
        whole.nodes()
        whole.edges()
        warm.append((time.perf_counter() - wall, time.process_time() - cpu))
    rows.append(["whole module, fusions merged", len(names), total, len(whole.nodes()),
                 *_medians(cold), *_medians(warm)])
    print(table(["case", "entry instructions", "module instructions", "nodes shown",
                 "cold s", "cold CPU s", "warm s", "warm CPU s"], rows))
    graph = _graph(data)
    print(table(["the widget's graph reply", "nodes", "edges", "bytes", "Python s", "CPU s"],
                [_reply(graph, ops[1], whole) for whole in (False, True)]))
    cases = [("width 3, fusions merged", Neighbourhood(graph, ops[0], 3, True)),
             ("width 3, fusions expanded", Neighbourhood(graph, ops[0], 3, False)),
             ("whole module, fusions merged", Neighbourhood(graph, ops[0], 3, True, whole=True))]
    layouts = [[name, *_node_layout(nb)] for name, nb in cases]
    for engine, package in [("elk", args.elkjs), ("graphviz", args.graphviz)]:
        if package:
            layouts += [[name, *_node_layout(nb, engine, package, args.layout_timeout)]
                        for name, nb in cases]
    print(table(["layout under Node.js", "nodes", "edges", "layout", "ms"], layouts))
    if args.browser and args.elkjs:
        print(table(["ELK in its worker in Chromium", "nodes", "edges", "ms"],
                    _elk_in_chromium(cases, args.elkjs)))
    if args.browser:
        print(table(["in JupyterLab (Chromium)", "nodes", "layout ms", "first nodes ms",
                     "drawn ms", "longest frame gap ms", "longest task ms"], _browser(data, ops[0])))
    print(f"load average {os.getloadavg()[0]:.1f}: CPU seconds are what wall seconds come to "
          "on an idle machine")


def _reply(graph: ModuleGraph, op: str, whole: bool) -> list:
    """[case, nodes, edges, bytes, wall s, CPU s] of the view's graph reply (fusions merged, width
    3 or the whole module: `graph_reply`, binary columns), on a module already indexed and its
    sources scanned (so what a second graph costs)."""
    graph_reply(Neighbourhood(graph, op, 3, True, whole=whole))
    wall, cpu = time.perf_counter(), time.process_time()
    header, buffers = graph_reply(Neighbourhood(graph, op, 3, True, whole=whole))
    took = [time.perf_counter() - wall, time.process_time() - cpu]
    size = len(json.dumps(header)) + sum(len(b) for b in buffers)
    return ["whole module" if whole else "width 3", header["nodes"], header["edges"], size, *took]


LAYOUT_JS = Path(__file__).resolve().parents[2] / "js" / "src" / "graph_viewer" / "layout.js"
NODE_TIMING = """
import { readFileSync } from "node:fs";
import { DAGRE_MAX, layout } from "%s";
const { nodes, edges } = JSON.parse(readFileSync(process.argv[1], "utf8"));
const t = performance.now();
const out = layout(nodes, edges);
const ms = performance.now() - t;
console.log(JSON.stringify({ ms, edges: out.edges.length, dagre: nodes.length <= DAGRE_MAX }));
"""


# ELK's layered algorithm on the same boxes (layout.js's boxOf), fusion clusters as nested
# children, edges routed across them; elkjs from --elkjs (it is not a dependency of the view).
ELK_TIMING = """
import { readFileSync } from "node:fs";
import { boxOf } from "%s";
import ELK from "%s";
const { nodes, edges } = JSON.parse(readFileSync(process.argv[1], "utf8"));
const byName = new Map();
const root = { id: "root", children: [], edges: [], layoutOptions: {
  "elk.algorithm": "layered", "elk.direction": "DOWN", "elk.hierarchyHandling": "INCLUDE_CHILDREN",
  "elk.spacing.nodeNode": "18", "elk.layered.spacing.nodeNodeBetweenLayers": "34" } };
for (const node of nodes) {
  const { width, height } = node.expanded ? {} : boxOf(node, false);  // ELK reads a key set to undefined
  byName.set(node.name, node.expanded ? { id: node.name, children: [] } : { id: node.name, width, height });
}
for (const node of nodes) (node.fusion == null ? root : byName.get(node.fusion)).children.push(byName.get(node.name));
const parent = new Map(nodes.map((node) => [node.name, node.fusion]));
const chain = (name) => { const up = []; for (let p = parent.get(name); p != null; p = parent.get(p)) up.push(p); return up; };
edges.forEach((e, i) => {  // each edge in the innermost cluster holding both ends
  if (!byName.has(e.source) || !byName.has(e.target)) return;
  const above = new Set(chain(e.source));
  const common = chain(e.target).find((p) => above.has(p));
  const holder = common == null ? root : byName.get(common);
  (holder.edges ??= []).push({ id: "e" + i, sources: [e.source], targets: [e.target] });
});
if (process.argv[2] === "graph") {  // the ELK graph itself, for the run in Chromium's worker
  console.log(JSON.stringify(root));
} else {
  const elk = new ELK();
  await elk.knownLayoutAlgorithms(); // started and registered before the clock, as in Chromium
  const t = performance.now();
  await elk.layout(root);
  console.log(JSON.stringify({ ms: performance.now() - t, edges: edges.filter((e) => byName.has(e.source) && byName.has(e.target)).length }));
}
"""


# Graphviz's dot (compiled to WASM, @hpcc-js/wasm-graphviz) on the graph's DOT (`to_dot()`, as
# the view's DOT button saves it), to positions in Graphviz's JSON; the load is not timed.
GRAPHVIZ_TIMING = """
import { readFileSync } from "node:fs";
import { Graphviz } from "%s";
const dot = readFileSync(process.argv[1], "utf8");
const graphviz = await Graphviz.load();
const t = performance.now();
const out = JSON.parse(graphviz.layout(dot, "json", "dot"));
console.log(JSON.stringify({ ms: performance.now() - t, edges: (out.edges ?? []).length }));
"""

ENGINES = {"elk": "ELK layered", "graphviz": "Graphviz dot (WASM)"}


def _node(script: str, text: str, *args: str, timeout: float = 300
          ) -> subprocess.CompletedProcess:
    """`script` run by Node.js on a file holding `text` (its first argument, then `args`)."""
    with tempfile.NamedTemporaryFile("w", suffix=".in") as f:
        f.write(text)
        f.flush()
        return subprocess.run([shutil.which("node") or "node", "--input-type=module", "-e",
                               script, f.name, *args], check=False, capture_output=True,
                              text=True, timeout=timeout)


def _layout_input(nb: Neighbourhood) -> str:
    """The graph as the Node.js scripts read it: {nodes, edges} rows."""
    frame = nb.nodes()
    nodes = frame.assign(fusion=frame["fusion"].where(frame["fusion"].notna(), None))
    rows = nodes[["name", "opcode", "shape", "fusion", "expanded"]].to_dict("records")
    return json.dumps({"nodes": rows, "edges": nb.edges().to_dict("records")})


def _elk_uri(package: Path) -> str:
    return (package / "lib" / "elk.bundled.js").as_uri()


def _node_layout(nb: Neighbourhood, engine: str = "ours", package: Path | None = None,
                 timeout: float = 300) -> list:
    """[nodes, edges, which layout, ms] of `nb` laid out under Node.js by the view's layout
    (`ours`: dagre or the layered one), ELK (`elk`) or Graphviz (`graphviz`) from the npm
    `package` folder; ms None when it runs past `timeout` seconds, the error when it fails."""
    frame = nb.nodes()
    edges = nb.edges()
    scripts = {"ours": lambda: NODE_TIMING % LAYOUT_JS.as_uri(),
               "elk": lambda: ELK_TIMING % (LAYOUT_JS.as_uri(), _elk_uri(package)),
               "graphviz": lambda: GRAPHVIZ_TIMING % (package / "dist" / "index.js").as_uri()}
    shown = int((~frame["expanded"]).sum())
    try:
        done = _node(scripts[engine](), nb.to_dot() if engine == "graphviz" else _layout_input(nb),
                     timeout=timeout)
    except subprocess.TimeoutExpired:
        return [shown, len(edges), ENGINES[engine], None]
    if done.returncode and engine != "ours":  # ELK's recursion overflows on a long chain
        errors = re.findall(r"^\s*(\w*Error\b.{0,80})", done.stderr, re.MULTILINE)
        return [shown, len(edges), ENGINES[engine], errors[0] if errors else "failed"]
    if done.returncode:
        raise RuntimeError(done.stderr)
    out = json.loads(done.stdout)
    which = ENGINES.get(engine) or ("dagre" if out["dagre"] else "layered")
    return [shown, out["edges"], which, round(out["ms"], 1)]


# The page's clock for one redraw: from data-ready "0" (the view asked the kernel) to "1" (the
# last element drawn); the first nodes drawn (the first animation frame after the layout with a
# node in the page); the longest gap between two animation frames from the start.
WATCH = """() => {
  const el = document.querySelector('.xw-gv');
  const rec = (window.__gvBench = { start: null, laid: null, first: null, done: null, gap: 0, longest: 0 });
  window.__gvLongTasks?.disconnect();
  window.__gvLongTasks = new PerformanceObserver((list) => {
    for (const t of list.getEntries()) if (rec.start !== null) rec.longest = Math.max(rec.longest, t.duration);
  });
  window.__gvLongTasks.observe({ type: 'longtask' });
  new MutationObserver(() => {
    const now = performance.now();
    const state = el.dataset.ready;
    if (state === '0') rec.start ??= now;
    if (state === 'layout' && rec.start !== null) rec.laid = 'busy';
    else if (rec.laid === 'busy') rec.laid = now;
    if (state === '1' && rec.start !== null) rec.done ??= now;
  }).observe(el, { attributes: true, attributeFilter: ['data-ready'] });
  let last = null;
  const tick = () => {
    const now = performance.now();
    if (rec.start !== null) {
      if (last !== null) rec.gap = Math.max(rec.gap, now - last);
      last = now;
      if (rec.first === null && typeof rec.laid === 'number'
          && el.querySelector('.xw-gv-node')) rec.first = now;
    }
    if (rec.done === null || rec.first === null) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


# Fitting the whole module brings every node into view: from the F key to the last node drawn
# (as SVG, or painted on the overview's canvas when zoomed out that far), and the longest gap
# between two animation frames meanwhile.
FIT_WATCH = """(total) => {
  const el = document.querySelector('.xw-gv');
  const rec = (window.__gvFit = { start: performance.now(), first: null, done: null, gap: 0, longest: 0 });
  window.__gvLongTasks?.disconnect();
  window.__gvLongTasks = new PerformanceObserver((list) => {
    for (const t of list.getEntries()) rec.longest = Math.max(rec.longest, t.duration);
  });
  window.__gvLongTasks.observe({ type: 'longtask' });
  const before = el.querySelectorAll('.xw-gv-node').length;
  let last = rec.start;
  const tick = () => {
    const now = performance.now();
    rec.gap = Math.max(rec.gap, now - last);
    last = now;
    const painted = Number(el.querySelector('.xw-gv-overview')?.dataset.painted ?? 0);
    const drawn = Math.max(painted, el.querySelectorAll('.xw-gv-node').length);
    if (rec.first === null && drawn > before) rec.first = now;
    if (drawn === total) rec.done = now;
    else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  el.querySelector('.xw-gv-stage').dispatchEvent(new KeyboardEvent('keydown', { key: 'f', bubbles: true }));
}"""


# ELK's own worker (elk-worker.min.js, started from a Blob URL as the view starts its own) laying
# out one graph in Chromium: the page's clock from the layout request to its answer.
ELK_WORKER = """async ([source, graph]) => {
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  const worker = new Worker(url);
  const call = (message) => new Promise((resolve) => {
    worker.onmessage = (event) => resolve(event.data);
    worker.onerror = (event) => resolve({ error: event.message || 'worker error' });
    worker.postMessage(message);
  });
  await call({ id: 0, cmd: 'register', algorithms: ['layered'] });
  const started = performance.now();
  const answer = await call({ id: 1, cmd: 'layout', graph: JSON.parse(graph), layoutOptions: {}, options: {} });
  const ms = performance.now() - started;
  worker.terminate();
  const error = answer.error ? String(answer.error.message ?? answer.error).slice(0, 80) : null;
  return { ms, error };
}"""


def _elk_in_chromium(cases: list[tuple[str, Neighbourhood]], package: Path) -> list[list]:
    """Rows [graph, nodes, edges, ms or ELK's error] of ELK's layered layout in its Web Worker
    in headless Chromium, on the graphs ELK_TIMING builds."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
    import harness
    from playwright.sync_api import sync_playwright

    source = (package / "lib" / "elk-worker.min.js").read_text(encoding="utf-8")
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=harness.find_chromium(),
                                             headless=True, args=harness.CHROMIUM_ARGS)
        page = browser.new_page()
        for name, nb in cases:
            built = _node(ELK_TIMING % (LAYOUT_JS.as_uri(), _elk_uri(package)), _layout_input(nb),
                          "graph")
            out = page.evaluate(ELK_WORKER, [source, built.stdout])
            rows.append([name, int((~nb.nodes()["expanded"]).sum()), len(nb.edges()),
                         out["error"] or round(out["ms"], 1)])
        browser.close()
    return rows


def _browser(data: bytes, op: str) -> list[list]:
    """Rows of the browser part: width 3 end to end, then the whole module."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
    import harness
    from playwright.sync_api import sync_playwright

    chromium = harness.find_chromium()
    if chromium is None:
        raise SystemExit(f"no Chromium at {' or '.join(harness.CHROMIUM_PATHS)}")
    subprocess.run([shutil.which("node") or "node", "build.mjs"], cwd=harness.REPO / "js",
                   check=True, capture_output=True)
    fixture = harness.REPO / "tests" / "data" / "tpu_v6e_inference.xplane.pb"
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        module = Path(tmp) / "big.pb"
        module.write_bytes(data)
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=harness.CHROMIUM_ARGS)
        server = harness.JupyterServer("lab", Path(tmp) / "lab")
        server.start()
        try:
            app = harness.NotebookApp(server, browser, harness.Timings())
            cells = [(f"import xprof_widgets as xw\np = xw.open_profile({str(fixture)!r})\n"
                      f"p._hosts[0].hlo_protos[1] = ('jit_big', open({str(module)!r}, 'rb').read())"
                      "\np.__dict__.pop('hlo_modules', None)\n"
                      f"g = xw.GraphViewer(p, module='jit_big(1)', op={op!r}, width=1)\ng")]
            page = app.open_and_run(app.notebook("bench_graph.ipynb", cells))
            app.wait_ready(page, ".xw-gv[data-ready='1']", timeout=300)
            for name, change in [("width 3, fusions merged", "g.width = 3"),
                                 ("whole module, fusions merged", "g.whole_module = True")]:
                page.evaluate(WATCH)
                harness.run_in_kernel(page, change)
                page.wait_for_function("() => window.__gvBench.done !== null"
                                       " && window.__gvBench.first !== null", timeout=600_000)
                rec = page.evaluate("() => window.__gvBench")
                el = page.locator(".xw-gv").first
                rows.append([name, int(el.get_attribute("data-nodes")),
                             float(el.get_attribute("data-layout-ms")),
                             round(rec["first"] - rec["start"], 1) if rec["first"] else None,
                             round(rec["done"] - rec["start"], 1), round(rec["gap"], 1),
                             round(rec["longest"], 1)])
            total = int(harness.run_in_kernel(page, "print(len(g.nodes()))"))
            page.locator(".xw-gv-stage").click(position={"x": 5, "y": 5})
            page.evaluate(FIT_WATCH, total)
            page.wait_for_function("() => window.__gvFit.done !== null", timeout=600_000)
            rec = page.evaluate("() => window.__gvFit")
            rows.append(["whole module fitted (F: every node shown)", total, "",
                         round(rec["first"] - rec["start"], 1) if rec["first"] else None,
                         round(rec["done"] - rec["start"], 1), round(rec["gap"], 1),
                         round(rec["longest"], 1)])
            app.close()
        finally:
            server.stop()
            browser.close()
    return rows


def _medians(runs: list[tuple[float, float]]) -> list[float]:
    return [statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)]


if __name__ == "__main__":
    main()
