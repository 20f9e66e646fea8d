// The Graph Viewer's controller: controls synced with the kernel's traits (module, op, width,
// merge_fusions, show_metadata, whole_module), the graph on one request channel (newest wins),
// laid out in a Web Worker (offthread.js) and drawn as SVG in batches of one frame's budget, so a
// whole module never freezes the page; pan and zoom (drag, wheel, W/S zoom, A/D pan, F fits), a
// hover card that a click pins, search, HLO text, SVG / DOT downloads and the module's HLO.
import { h } from "../lib/dom.js";
import { emptyState, EMPTY_CSS } from "../lib/empty.js";
import * as fmt from "../lib/format.js";
import { isTextField, ownKeys } from "../lib/keys.js";
import { linkButton } from "../lib/links.js";
import { sourcePanel } from "../lib/source_panel.js";
import { onThemeChange, palette } from "../lib/theme.js";
import { RequestError, request } from "../lib/transport.js";
import { shareFill } from "./fill.js";
import { LINE_H, labelLines } from "./labels.js";
import { Layouter } from "./offthread.js";
import { OVERVIEW_ZOOM, Overview } from "./overview.js";
import { unpackLayout } from "./packed.js";
import { CSS } from "./style.js";
import { decodeGraph } from "./wire.js";
import { onTraits, stopView } from "../lib/view_state.js";

const TRAITS = ["module", "op", "width", "merge_fusions", "show_metadata", "toggled_fusions", "whole_module"];
const UNTOGGLING = ["module", "op", "merge_fusions"]; // a new graph: every fusion back to the rule
const SVG_NS = "http://www.w3.org/2000/svg";
const SEARCH_DELAY_MS = 200;
const ZOOM_STEP = 1.25;
const MIN_ZOOM = 0.02;
const MAX_ZOOM = 8;
const LABEL_ROOM = 16; // a cluster's title sits above its body, not over its first node
const FRAME_BUDGET_MS = 10; // drawing a large graph yields to the page after this much per frame
const SHOW_FIRST_MS = 300; // ... and shows what it has drawn after this long, then twice as long
const BULK_EDGES = 1000;
const CULL_NODES = 2000; // a larger graph is drawn around the view only
const DOWNLOADS = [["pb", "HloProto (pb)"], ["pbtxt", "HloProto text (pbtxt)"],
  ["short_txt", "HLO text, short"], ["long_txt", "HLO text, long"]];

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));

function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function save(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

const fileName = (text) => String(text).replace(/[^\w.-]+/g, "_").slice(0, 80) || "graph";

export class GraphView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.disposed = false;
    this.graph = null; // {nodes, edges, hlo, layout, module, op}
    this.view = { x: 0, y: 0, k: 1 };
    this.pinned = null;
    this.refreshes = 0; // a newer refresh or draw supersedes the one in flight
    this.draws = 0;
    this.layouter = new Layouter();
    el.classList.add("xw-gv");
    const error = model.get("_error");
    if (error) {
      el.replaceChildren(h("style", {}, CSS + EMPTY_CSS), emptyState("No graph", error));
      el.dataset.ready = "no-graph";
      return;
    }
    this.build();
    onTraits(this, TRAITS, () => this.refresh());
    this.dropKeys = ownKeys(el, (e, target) => this.key(e, target));
    this.dropTheme = onThemeChange(() => { if (this.graph) this.draw(); });
    this.refresh();
  }

  dispose() {
    stopView(this);
    this.draws += 1;
    this.layouter.dispose();
    clearTimeout(this.searchTimer);
    this.dropKeys?.();
    this.dropTheme?.();
  }

  set(changes) {
    if (UNTOGGLING.some((t) => t in changes)) changes = { toggled_fusions: [], ...changes };
    for (const [k, v] of Object.entries(changes)) this.model.set(k, v);
    this.model.save_changes();
  }

  // ---- DOM --------------------------------------------------------------------------------
  build() {
    const m = this.model;
    this.moduleBox = h("select", { title: "HLO module", onchange: () => this.pickModule(this.moduleBox.value) },
      (m.get("_modules") ?? []).map((label) => h("option", { value: label }, label)));
    this.matches = h("datalist", { id: `xw-gv-ops-${Math.random().toString(36).slice(2)}` });
    this.searchBox = h("input", {
      type: "search", placeholder: "find an op (Enter centres on it)", list: this.matches.id,
      oninput: () => this.searchSoon(),
    });
    this.widthBox = h("input", { type: "number", min: 0, max: 10, step: 1, title: "hops from the op",
      onchange: () => this.set({ width: Math.max(0, Math.min(10, Number(this.widthBox.value) || 0)) }) });
    this.mergeBox = h("input", { type: "checkbox", onchange: () => this.set({ merge_fusions: this.mergeBox.checked }) });
    this.metaBox = h("input", { type: "checkbox", onchange: () => this.set({ show_metadata: this.metaBox.checked }) });
    this.wholeBox = h("input", { type: "checkbox", onchange: () => this.set({ whole_module: this.wholeBox.checked }) });
    this.downloadBox = h("select", { title: "download the module's HLO, as XProf offers it",
      onchange: () => { const kind = this.downloadBox.value; this.downloadBox.value = ""; if (kind) this.saveHlo(kind); } },
    h("option", { value: "" }, "Download HLO…"), DOWNLOADS.map(([kind, label]) => h("option", { value: kind }, label)));
    this.textPane = h("pre", { className: "xw-gv-text", hidden: true });
    const bar = h("div", { className: "xw-gv-bar" },
      h("label", {}, "Module", this.moduleBox), this.searchBox, this.matches,
      h("label", {}, "Width", this.widthBox),
      h("label", { title: "a fusion as one node; off: a cluster of its fused computation" }, this.mergeBox, "Merge fusions"),
      h("label", { title: "op names and source lines in the labels; long HLO text" }, this.metaBox, "Show metadata"),
      h("label", { title: "every instruction of the op's computation, fusions merged" }, this.wholeBox, "Whole module"),
      h("button", { type: "button", onclick: () => this.fit(), title: "fit the graph (F)" }, "Fit"),
      h("button", { type: "button", onclick: () => this.toggleText() }, "HLO text"),
      h("button", { type: "button", onclick: () => this.saveSvg() }, "SVG"),
      h("button", { type: "button", onclick: () => this.saveDot() }, "DOT"), this.downloadBox,
      h("span", { className: "xw-gv-legend", title: "fill: share of device time" }, "0%", h("span"), "100% of device time"));
    this.title = h("div", { className: "xw-gv-title" });
    this.svg = s("svg", { role: "img" });
    this.scene = s("g");
    this.svg.append(this.scene);
    this.stage = h("div", { className: "xw-gv-stage", tabIndex: 0 }, this.svg);
    this.overview = new Overview(this.stage);
    this.card = h("div", { className: "xw-gv-card", hidden: true });
    this.status = h("div", { className: "xw-gv-status" });
    this.el.replaceChildren(h("style", {}, CSS), bar, this.title, this.stage, this.card, this.textPane, this.status);
    this.stage.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    this.stage.addEventListener("pointerdown", (e) => this.dragStart(e));
    this.stage.addEventListener("click", (e) => { if ((e.target === this.svg || e.target === this.overview.canvas) && !this.dragged) this.unpin(); });
    // One listener each for every node (a whole module has tens of thousands): hover, leave, click.
    const nodeOf = (target) => target?.closest?.(".xw-gv-node");
    this.scene.addEventListener("mouseover", (e) => {
      const g = nodeOf(e.target);
      if (g && g !== nodeOf(e.relatedTarget) && this.pinned === null) this.showCard(Number(g.dataset.row));
    });
    this.scene.addEventListener("mouseout", (e) => {
      const g = nodeOf(e.target);
      if (g && g !== nodeOf(e.relatedTarget) && this.pinned === null && !this.card.contains(e.relatedTarget)) this.card.hidden = true;
    });
    this.scene.addEventListener("click", (e) => {
      const g = nodeOf(e.target);
      if (!g) return;
      e.stopPropagation();
      if (!this.dragged) this.pin(Number(g.dataset.row));
    });
    this.syncControls();
  }

  syncControls() {
    const m = this.model;
    this.moduleBox.value = m.get("module");
    this.widthBox.value = String(m.get("width"));
    this.mergeBox.checked = Boolean(m.get("merge_fusions"));
    this.metaBox.checked = Boolean(m.get("show_metadata"));
    this.wholeBox.checked = Boolean(m.get("whole_module"));
    this.widthBox.disabled = this.wholeBox.checked;
  }

  // ---- the graph ----------------------------------------------------------------------------
  params() {
    return Object.fromEntries(TRAITS.map((t) => [t, this.model.get(t)]));
  }

  async refresh() {
    if (this.disposed) return;
    const token = ++this.refreshes;
    this.syncControls();
    this.el.dataset.ready = "0";
    this.status.textContent = "Loading…";
    let answer;
    try {
      answer = await request(this.model, "graph", this.params(), {
        channel: "graph",
        onBusy: () => { this.status.textContent = "Waiting for the kernel (a cell may be running)…"; },
      });
    } catch (error) {
      this.status.replaceChildren(h("span", { className: "xw-gv-problem" },
        error instanceof RequestError ? error.message : String(error)));
      this.el.dataset.ready = "error";
      return;
    }
    if (answer === null || this.disposed || token !== this.refreshes) return;
    const c = answer.content;
    if (c.problem) {
      this.status.replaceChildren(h("span", { className: "xw-gv-problem" }, c.problem));
      this.el.dataset.ready = "problem";
      return;
    }
    const { nodes, edges, hlo } = decodeGraph(c, answer.buffers);
    const started = performance.now();
    this.el.dataset.ready = "layout";
    this.status.textContent = `Laying out ${nodes.length.toLocaleString()} nodes…`;
    const showMetadata = Boolean(this.model.get("show_metadata"));
    const adopt = (layout) => {
      this.graph = { nodes, edges, hlo, layout, showMetadata, module: c.module, op: c.op };
      this.pinned = null;
      this.card.hidden = true;
      this.culled = false; // until draw() knows the new graph's size
      this.fit(true);
    };
    // A large graph: the op's neighbourhood, laid out first by the worker, drawn meanwhile.
    const preview = (packed) => {
      if (this.disposed || token !== this.refreshes) return;
      adopt(unpackLayout(packed));
      this.el.dataset.ready = "preview";
      this.status.textContent = `Laying out ${nodes.length.toLocaleString()} nodes; the ` +
        `${this.graph.layout.nodes.length.toLocaleString()} within 3 hops of the op drawn meanwhile…`;
      this.draw();
    };
    let layout;
    try {
      const packed = await this.layouter.run(c, answer.buffers, { showMetadata }, preview);
      layout = packed && unpackLayout(packed);
    } catch (error) {
      this.status.replaceChildren(h("span", { className: "xw-gv-problem" }, `Layout failed: ${error.message}`));
      this.el.dataset.ready = "error";
      return;
    }
    if (layout === null || this.disposed || token !== this.refreshes) return;
    const laidOut = performance.now() - started;
    adopt(layout);
    this.el.dataset.ready = "drawing";
    const shown = layout.nodes.length;
    const where = c.whole ? `all of computation ${c.computation}` : `computation ${c.computation}`;
    this.title.textContent = `${c.op} in ${c.module} (${where}): ${shown.toLocaleString()} nodes, ` +
      `${layout.clusters.length} fusion clusters, ${layout.edges.length.toLocaleString()} edges`;
    this.status.textContent = `Laid out in ${laidOut.toFixed(0)} ms${this.layouter.onThread ? " (on the page's thread: no worker could start)" : ""}; drawing…`;
    const timing = await this.draw();
    if (timing === null || token !== this.refreshes) return;
    this.status.textContent = `Laid out in ${laidOut.toFixed(0)} ms, drawn in ${timing.drawn.toFixed(0)} ms` +
      `${this.layouter.onThread ? " (on the page's thread: no worker could start)" : ""}. Drag to pan, ` +
      "wheel or W/S to zoom, A/D to pan, F to fit; hover a node for its numbers, click to pin its card.";
    if (!this.textPane.hidden) this.loadText();
    Object.assign(this.el.dataset, { nodes: String(shown), layoutMs: laidOut.toFixed(1),
      firstDrawMs: timing.first.toFixed(1), drawnMs: timing.drawn.toFixed(1), ready: "1" });
  }

  /** Draws the graph in batches of one frame's budget (nodes first, then edges), so a large one
   * never holds the page; resolves {first, drawn} (ms to the first batch, to the last), or null
   * when a newer draw replaced it. */
  async draw() {
    const token = ++this.draws;
    const started = performance.now();
    const { nodes, edges, layout, showMetadata } = this.graph;
    const op = this.graph.op;
    const base = palette(this.el).bg;
    const fillOf = (share) => shareFill(share, base);
    const clusters = layout.clusters.map((c) => {
      const node = nodes[c.row];
      const fill = fillOf(node.time_share) ?? "none";
      return s("g", { class: "xw-gv-cluster", "data-name": node.name },
        s("rect", { x: c.x - c.width / 2, y: c.y - c.height / 2 - LABEL_ROOM, width: c.width,
          height: c.height + LABEL_ROOM, rx: 6, fill }),
        s("text", { x: c.x - c.width / 2 + 6, y: c.y - c.height / 2 - 4, class: "xw-gv-collapse" },
          s("title", {}, "click to collapse this fusion into one node"), `${node.name} (fusion) ▴`));
    });
    clusters.forEach((g) => g.querySelector("text").addEventListener("click", (e) => {
      e.stopPropagation();
      if (!this.dragged) this.toggle(g.dataset.name);
    }));
    // Element makers, called batch by batch by paint().
    const line = ({ points }) => points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    const head = ({ points }) => {
      const end = points[points.length - 1];
      const prev = points[points.length - 2] ?? end;
      const angle = Math.atan2(end.y - prev.y, end.x - prev.x);
      const tip = (a, r) => `${(end.x - r * Math.cos(angle + a)).toFixed(1)},${(end.y - r * Math.sin(angle + a)).toFixed(1)}`;
      return `M${end.x.toFixed(1)},${end.y.toFixed(1)} L${tip(0.4, 7)} L${tip(-0.4, 7)} Z`;
    };
    // A large graph's edges go BULK_EDGES to one pair of paths (lines, heads), without a tooltip
    // each: one element per edge costs seconds at tens of thousands.
    const bulk = layout.edges.length > BULK_EDGES;
    const lines = bulk
      ? Array.from({ length: Math.ceil(layout.edges.length / BULK_EDGES) }, (_, b) => () => {
        const part = layout.edges.slice(b * BULK_EDGES, (b + 1) * BULK_EDGES);
        return s("g", { class: "xw-gv-edge xw-gv-edges", "data-count": part.length },
          s("path", { d: part.map(line).join(" ") }), s("path", { class: "xw-gv-head", d: part.map(head).join(" ") }));
      })
      : layout.edges.map((placed) => () => {
        const e = edges[placed.edge];
        return s("g", { class: "xw-gv-edge", "data-count": 1 }, s("title", {}, `${e.source} → ${e.target} (operand ${e.operand_index}): ${e.shape}`),
          s("path", { d: line(placed) }), s("path", { class: "xw-gv-head", d: head(placed) }));
      });
    this.nodeEls = new Map();
    const boxes = layout.nodes.map((n) => () => {
      const node = nodes[n.row];
      const fill = fillOf(node.time_share);
      const cls = ["xw-gv-node", fill ? "" : "xw-gv-untimed", node.name === op ? "xw-gv-centre" : ""].filter(Boolean).join(" ");
      const top = n.y - n.height / 2;
      const g = s("g", { class: cls, "data-name": node.name, "data-row": n.row },
        s("rect", { x: n.x - n.width / 2, y: top, width: n.width, height: n.height, rx: 3, fill: fill ?? undefined }),
        labelLines(node, showMetadata).map((text, i) => s("text", { x: n.x, y: top + 4 + LINE_H * (i + 0.8), "text-anchor": "middle",
          class: i === 0 ? "xw-gv-name" : undefined }, text)));
      this.nodeEls.set(node.name, g);
      return g;
    });
    const edgeLayer = s("g");
    const nodeLayer = s("g");
    this.scene.replaceChildren(...clusters, edgeLayer, nodeLayer);
    this.layers = { nodeLayer, edgeLayer };
    this.culled = layout.nodes.length > CULL_NODES;
    this.overview.hide();
    this.svg.style.display = "";
    if (!this.culled) return this.paint([...boxes.map((b) => [nodeLayer, b]), ...lines.map((l) => [edgeLayer, l])], token, started);
    // A graph this large is drawn where the view is (a screen around it), the rest as panning
    // and zooming bring it in: the page never holds tens of thousands of elements it does not show.
    this.drawnNodes = new Uint8Array(layout.nodes.length);
    this.drawnEdges = new Uint8Array(layout.edges.length);
    this.boxMakers = boxes;
    this.edgeBoxes = layout.edges.map(({ points }) => {
      let x0 = Infinity; let y0 = Infinity; let x1 = -Infinity; let y1 = -Infinity;
      for (const p of points) { x0 = Math.min(x0, p.x); x1 = Math.max(x1, p.x); y0 = Math.min(y0, p.y); y1 = Math.max(y1, p.y); }
      return [x0, y0, x1, y1];
    });
    this.bulkEdges = (list) => () => s("g", { class: "xw-gv-edge xw-gv-edges", "data-count": list.length },
      s("path", { d: list.map(line).join(" ") }), s("path", { class: "xw-gv-head", d: list.map(head).join(" ") }));
    const css = getComputedStyle(this.el);
    const fg2 = css.getPropertyValue("--xw-fg2").trim() || "#666666";
    const untimed = fg2; // a box a few px wide, darker than the faint edges it sits on
    this.overview.setGraph(layout, layout.nodes.map((n) => fillOf(nodes[n.row].time_share) ?? untimed),
      layout.nodes.findIndex((n) => nodes[n.row].name === op), fg2);
    this.showLevel();
    return this.paint(this.newlyVisible(), token, started);
  }

  /** A large graph zoomed out past OVERVIEW_ZOOM is painted on the overview's canvas (the SVG
   * hidden, so the browser neither restyles nor paints it); nearer, as SVG around the view. */
  far() {
    return this.culled && this.view.k < OVERVIEW_ZOOM;
  }

  showLevel() {
    const far = this.far();
    this.svg.style.display = far ? "none" : "";
    if (far) this.overview.show(this.view);
    else this.overview.hide();
    this.el.dataset.overview = far ? "1" : "0";
  }

  /** Makers of the nodes and edges within a screen of the view not drawn yet (marked drawn);
   * none from far (the overview paints them). */
  newlyVisible() {
    if (this.far()) return [];
    const { x, y, k } = this.view;
    const W = this.stage.clientWidth || 800;
    const H = this.stage.clientHeight || 560;
    const x0 = (-x - W) / k; const x1 = (2 * W - x) / k;
    const y0 = (-y - H) / k; const y1 = (2 * H - y) / k;
    const { nodes: placed, edges: lines } = this.graph.layout;
    const items = [];
    placed.forEach((n, i) => {
      if (this.drawnNodes[i] || n.x + n.width / 2 < x0 || n.x - n.width / 2 > x1 || n.y + n.height / 2 < y0 || n.y - n.height / 2 > y1) return;
      this.drawnNodes[i] = 1;
      items.push([this.layers.nodeLayer, this.boxMakers[i]]);
    });
    let bunch = [];
    this.edgeBoxes.forEach((b, i) => {
      if (this.drawnEdges[i] || b[2] < x0 || b[0] > x1 || b[3] < y0 || b[1] > y1) return;
      this.drawnEdges[i] = 1;
      bunch.push(lines[i]);
      if (bunch.length === BULK_EDGES) { items.push([this.layers.edgeLayer, this.bulkEdges(bunch)]); bunch = []; }
    });
    if (bunch.length) items.push([this.layers.edgeLayer, this.bulkEdges(bunch)]);
    return items;
  }

  /** Draws what panning or zooming brought into view, once per frame at most. */
  drawInView() {
    if (!this.culled || this.cullQueued) return;
    this.cullQueued = true;
    requestAnimationFrame(() => {
      this.cullQueued = false;
      if (this.culled && this.graph) this.paint(this.newlyVisible(), this.draws, performance.now());
    });
  }

  /** Makes `items` ([layer, maker]) into detached fragments a frame's budget at a time and
   * attaches them at doubling intervals (each attach repaints every element drawn so far);
   * resolves {first, drawn} (ms to the first batch shown, to the last), or null when a newer
   * draw replaced this one. */
  async paint(items, token, started) {
    const pending = new Map([[this.layers.nodeLayer, document.createDocumentFragment()],
      [this.layers.edgeLayer, document.createDocumentFragment()]]);
    const attach = () => { for (const [layer, part] of pending) layer.append(part); };
    let first = null;
    let shown = started;
    let wait = SHOW_FIRST_MS;
    for (let i = 0; i < items.length;) {
      const end = performance.now() + FRAME_BUDGET_MS;
      do { pending.get(items[i][0]).append(items[i][1]()); i += 1; } while (i < items.length && performance.now() < end);
      if (first === null || i === items.length || performance.now() - shown > wait) {
        attach();
        if (first !== null) wait *= 2;
        shown = performance.now();
        first ??= shown - started;
      }
      if (i < items.length) {
        await nextFrame();
        if (token !== this.draws) return null;
      }
    }
    this.highlight();
    return { first: first ?? 0, drawn: performance.now() - started };
  }

  // ---- pan and zoom ---------------------------------------------------------------------------
  apply() {
    const { x, y, k } = this.view;
    this.scene.setAttribute("transform", `translate(${x.toFixed(2)},${y.toFixed(2)}) scale(${k.toFixed(4)})`);
    if (this.pinned !== null) this.placeCard(this.pinned);
    if (this.culled) this.showLevel();
    this.drawInView();
  }

  /** Fits the whole graph; `onOp`: a large graph opens at reading size around the op instead. */
  fit(onOp = false) {
    if (!this.graph) return;
    const { width, height } = this.graph.layout;
    const W = this.stage.clientWidth || 800;
    const H = this.stage.clientHeight || 560;
    const k = Math.min(1, W / Math.max(width, 1), H / Math.max(height, 1));
    const centre = this.graph.layout.nodes.find((n) => this.graph.nodes[n.row].name === this.graph.op);
    if (onOp && k < 0.5 && centre) {
      this.view = { k: 0.8, x: W / 2 - centre.x * 0.8, y: H / 2 - centre.y * 0.8 };
    } else {
      this.view = { k, x: (W - width * k) / 2, y: (H - height * k) / 2 };
    }
    this.apply();
  }

  zoomAt(factor, px, py) {
    const k = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, this.view.k * factor));
    const f = k / this.view.k;
    this.view = { k, x: px - (px - this.view.x) * f, y: py - (py - this.view.y) * f };
    this.apply();
  }

  wheel(e) {
    e.preventDefault();
    const r = this.stage.getBoundingClientRect();
    const scale = e.deltaMode === 1 ? 16 : 1;
    this.zoomAt(Math.exp(-e.deltaY * scale * 0.002), e.clientX - r.left, e.clientY - r.top);
  }

  dragStart(e) {
    if (e.button !== 0) return;
    const start = { x: e.clientX, y: e.clientY, vx: this.view.x, vy: this.view.y };
    this.dragged = false;
    const move = (ev) => {
      const dx = ev.clientX - start.x;
      const dy = ev.clientY - start.y;
      if (!this.dragged && Math.hypot(dx, dy) < 3) return;
      this.dragged = true;
      this.stage.classList.add("xw-gv-dragging");
      this.view = { ...this.view, x: start.vx + dx, y: start.vy + dy };
      this.apply();
    };
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      this.stage.classList.remove("xw-gv-dragging");
      setTimeout(() => { this.dragged = false; }, 0);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  }

  // Keys reach the widget here only (lib/keys.js stops them at the window): Enter in the search
  // box centres on the op named, other keys typed in a field are the field's.
  key(e, target) {
    if (e.type === "keydown" && target === this.searchBox && e.key === "Enter") {
      e.preventDefault();
      this.centreOnSearch();
      return;
    }
    if (e.type !== "keydown" || isTextField(target) || e.ctrlKey || e.metaKey || e.altKey) return;
    const W = this.stage.clientWidth || 800;
    const H = this.stage.clientHeight || 560;
    const k = e.key.toLowerCase();
    if (k === "w") this.zoomAt(ZOOM_STEP, W / 2, H / 2);
    else if (k === "s") this.zoomAt(1 / ZOOM_STEP, W / 2, H / 2);
    else if (k === "a") { this.view.x += W * 0.1; this.apply(); }
    else if (k === "d") { this.view.x -= W * 0.1; this.apply(); }
    else if (k === "f") this.fit();
    else if (k === "escape") this.unpin();
    else return;
    e.preventDefault();
  }

  // ---- the card -------------------------------------------------------------------------------
  showCard(row) {
    const node = this.graph.nodes[row];
    const num = (v, f) => (v === null || v === undefined || !Number.isFinite(v) ? fmt.DASH : f(v));
    const rows = [
      ["opcode", node.opcode], ["shape", node.shape], ["fusion", node.fusion ?? fmt.DASH],
      ["hops from op", String(node.distance)],
      ["time", num(node.time_us, fmt.time)], ["share of device time", num(node.time_share, fmt.percent)],
      ["FLOPs", num(node.flops, (v) => fmt.si(v, "FLOP"))], ["bytes accessed", num(node.bytes_accessed, fmt.bytes)],
      ["framework op", node.op_name || fmt.DASH], ["source", node.source || fmt.DASH],
    ];
    const buttons = [
      node.opcode === "fusion" && !node.expanded && !this.model.get("whole_module") // fusions stay merged there
        ? h("button", { type: "button", onclick: () => this.toggle(node.name) }, "Expand fusion") : null,
      node.name !== this.graph.op && !node.expanded
        ? h("button", { type: "button", onclick: () => this.set({ op: node.name }) }, "Centre graph here") : null,
      linkButton(this.model, "trace", node.name, "Trace Viewer"),
      linkButton(this.model, "op", node.name, "Op Profile"),
    ];
    const source = h("div", { className: "xw-gv-source" });
    this.card.replaceChildren(h("h4", {}, node.name),
      h("table", {}, rows.map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", {}, v)))),
      this.hloLine(row), source, h("div", {}, buttons));
    if (node.source) this.loadSource(row, source);
    this.card.hidden = false;
    this.card.dataset.name = node.name;
    this.placeCard(row);
  }

  /** The op's source stack, and the lines around a frame where its file is on the kernel's
   * machine (lib/source_panel.js). */
  loadSource(row, box) {
    const { module } = this.graph;
    const op = this.graph.nodes[row].name;
    const replace = () => { if (!this.disposed && !this.card.hidden && this.card.dataset.name === op) this.placeCard(row); };
    box.replaceChildren(sourcePanel(
      (frame) => request(this.model, "source", { module, op, frame }, { channel: "source" }), { onChange: replace }));
  }

  /** The node's HLO line, from the reply or (a large graph's) asked of the kernel. */
  hloLine(row) {
    const line = this.graph.hlo(row);
    const box = h("pre", {}, line ?? "…");
    if (line !== null) return box;
    const { graph } = this;
    request(this.model, "hlo", { module: graph.module, name: graph.nodes[row].name, long: graph.showMetadata },
      { channel: "hlo" }).then((answer) => {
      if (answer !== null && box.isConnected) box.textContent = answer.content.line ?? answer.content.problem;
    }, (error) => { box.textContent = error.message; });
    return box;
  }

  /** The card beside its node (right of it, else left of it), never over it, inside the stage
   * as far as it fits. */
  placeCard(row) {
    const n = this.graph.layout.nodes.find((b) => b.row === row);
    if (!n) return;
    const { x, y, k } = this.view;
    const stageLeft = this.stage.offsetLeft;
    const cardW = Math.min(460, this.card.offsetWidth || 300);
    const right = stageLeft + x + (n.x + n.width / 2) * k + 8;
    const left = stageLeft + x + (n.x - n.width / 2) * k - 8 - cardW;
    const fits = right + cardW <= stageLeft + this.stage.clientWidth;
    const stageTop = this.stage.offsetTop;
    const lowest = stageTop + this.stage.clientHeight - (this.card.offsetHeight || 0);
    const top = Math.min(stageTop + y + (n.y - n.height / 2) * k, lowest);
    this.card.style.left = `${Math.max(0, fits || left < 0 ? right : left)}px`;
    this.card.style.top = `${Math.max(stageTop, top)}px`;
  }

  pin(row) {
    if (this.pinned === row) { this.unpin(); return; }
    this.unpin();
    this.pinned = row;
    this.nodeEls.get(this.graph.nodes[row].name)?.classList.add("xw-gv-pinned");
    this.showCard(row);
  }

  unpin() {
    if (this.pinned !== null) this.nodeEls?.get(this.graph.nodes[this.pinned].name)?.classList.remove("xw-gv-pinned");
    this.pinned = null;
    this.card.hidden = true;
  }

  /** Draws one fusion the other way (expanded / merged), the rest as they are. */
  toggle(name) {
    const toggled = [...(this.model.get("toggled_fusions") ?? [])];
    const at = toggled.indexOf(name);
    if (at >= 0) toggled.splice(at, 1);
    else toggled.push(name);
    this.set({ toggled_fusions: toggled });
  }

  // ---- search and module ----------------------------------------------------------------------
  highlight() {
    const text = this.searchBox.value.trim().toLowerCase();
    let hits = 0;
    for (const [name, g] of this.nodeEls ?? []) {
      const hit = text !== "" && name.toLowerCase().includes(text);
      g.classList.toggle("xw-gv-match", hit);
      hits += hit;
    }
    return hits;
  }

  searchSoon() {
    this.highlight();
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(async () => {
      const text = this.searchBox.value.trim();
      if (!text) return;
      try {
        const answer = await request(this.model, "search", { module: this.model.get("module"), text }, { channel: "search" });
        if (answer === null || this.disposed) return;
        this.matches.replaceChildren(...answer.content.names.map((n) => h("option", { value: n })));
      } catch (error) {
        this.status.textContent = error.message;
      }
    }, SEARCH_DELAY_MS);
  }

  async centreOnSearch() {
    clearTimeout(this.searchTimer);
    const text = this.searchBox.value.trim();
    if (!text) return;
    const answer = await request(this.model, "search", { module: this.model.get("module"), text }, { channel: "centre" });
    if (answer === null || this.disposed) return;
    const names = answer.content.names;
    if (names.includes(text)) this.set({ op: text });
    else if (names.length === 1) this.set({ op: names[0] });
    else this.status.textContent = names.length ? `${names.length}+ ops match "${text}": pick one from the list.`
      : `No op of ${this.model.get("module")} is named like "${text}".`;
  }

  async pickModule(label) {
    const answer = await request(this.model, "default_op", { module: label }, { channel: "module" });
    if (answer === null || this.disposed) return;
    this.set({ module: label, op: answer.content.op });
  }

  // ---- texts and downloads --------------------------------------------------------------------
  graphParams() {
    const p = this.params();
    return { module: p.module, op: p.op, width: p.width, merge_fusions: p.merge_fusions,
      toggled_fusions: p.toggled_fusions, whole_module: p.whole_module };
  }

  toggleText() {
    this.textPane.hidden = !this.textPane.hidden;
    if (!this.textPane.hidden) this.loadText();
  }

  async loadText() {
    const answer = await request(this.model, "text", { ...this.graphParams(), long: Boolean(this.model.get("show_metadata")) },
      { channel: "text" });
    if (answer === null || this.disposed) return;
    this.textPane.textContent = answer.content.text;
  }

  async saveDot() {
    const answer = await request(this.model, "dot", this.graphParams(), { channel: "dot" });
    if (answer !== null) save(`${fileName(this.model.get("op"))}.dot`, answer.content.dot, "text/vnd.graphviz");
  }

  /** The module's HLO as XProf offers it (pb, pbtxt, short or long text), saved as a file. */
  async saveHlo(kind) {
    this.status.textContent = "Preparing the download…";
    try {
      const answer = await request(this.model, "download", { module: this.model.get("module"), kind }, { channel: "download" });
      if (answer === null || this.disposed) return;
      const { name, binary } = answer.content;
      save(name, answer.buffers[0], binary ? "application/octet-stream" : "text/plain");
      this.status.textContent = `Saved ${name}.`;
    } catch (error) {
      this.status.replaceChildren(h("span", { className: "xw-gv-problem" }, error.message));
    }
  }

  saveSvg() {
    if (!this.graph) return;
    const { width, height } = this.graph.layout;
    const copy = this.svg.cloneNode(true);
    copy.setAttribute("xmlns", SVG_NS);
    copy.style.removeProperty("display"); // hidden while the overview's canvas shows
    copy.setAttribute("viewBox", `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`);
    copy.setAttribute("width", String(Math.ceil(width)));
    copy.setAttribute("height", String(Math.ceil(height)));
    copy.firstChild.removeAttribute("transform");
    copy.prepend(s("style", {}, `text { font: 11px sans-serif; fill: #222; } .xw-gv-name { font-weight: 600; }
      .xw-gv-node rect { stroke: #999; } .xw-gv-untimed rect { fill: #eee; } .xw-gv-centre rect { stroke: #b71c1c; stroke-width: 3; }
      .xw-gv-cluster rect { fill-opacity: .35; stroke: #999; stroke-dasharray: 3 2; } .xw-gv-edge path { fill: none; stroke: #666; }
      .xw-gv-edge path.xw-gv-head { fill: #666; stroke: none; }`));
    save(`${fileName(this.model.get("op"))}.svg`, new XMLSerializer().serializeToString(copy), "image/svg+xml");
  }
}
