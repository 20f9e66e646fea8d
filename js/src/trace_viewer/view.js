// The trace viewer's controller: view state (time window, scroll, tool, selection), data from the
// kernel (window answers on one channel, details, search, aggregates) and user input.
// Input, selection and search live in their own modules as methods of TraceView.
import { RequestError, request } from "../lib/transport.js";
import { readTheme } from "./colors.js";
import { h } from "../lib/dom.js";
import { ownKeys } from "../lib/keys.js";
import { helpOverlay } from "./dom.js";
import { Renderer } from "./draw.js";
import { heldLayers, keepTiles } from "./held.js";
import { inputMethods } from "./input.js";
import { hostMethods } from "./hosts.js";
import { AXIS_H, LABEL_W, MIN_LABEL_W, buildLayout, maxLabelWidth } from "./layout.js";
import { markMethods } from "./marks.js";
import { navigationMethods } from "./navigate.js";
import { overlayMethods } from "./overlay.js";
import { resizeMethods } from "./resize.js";
import { selectionMethods } from "./selection.js";
import { CSS } from "./style.js";
import { NameTable, covers, decodeTile, planFetch } from "./tile.js";

const TOOLS = [
  ["select", "1", "Select: click an event, Ctrl/⌘-click adds, drag selects a box (1)"],
  ["pan", "2", "Pan: drag moves the view (2)"],
  ["zoom", "3", "Zoom: drag a region to zoom to it (3)"],
  ["timing", "4", "Timing: drag marks an interval and shows its length (4)"],
];
const MIN_SPAN_US = 0.001;
const INDEX_PROGRESS_AFTER_MS = 1000;
const MAX_DRAW_MEASURES = 2000;

let viewCounter = 0;
// The label column's width each widget was given by a drag: every display of it keeps it.
const labelWidths = new WeakMap();

export class TraceView {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.viewId = `${Date.now().toString(36)}-${++viewCounter}-${Math.random().toString(36).slice(2, 8)}`;
    this.disposers = [];
    this.setSummary(model.get("_summary"));
    this.readMarks();
    this.traceStart = this.summary.start_us;
    this.traceEnd = Math.max(this.summary.end_us, this.traceStart + MIN_SPAN_US);
    this.filter = "";
    this.flows = false;
    this.tool = "select";
    const [s, e] = model.get("window") ?? [this.traceStart, this.traceEnd];
    this.view = this.clampView(s, e);
    this.scrollY = 0;
    this.labelW = labelWidths.get(model) ?? LABEL_W;
    this.names = new NameTable();
    this.tile = null;
    this.tiles = [];
    this.plan = null;
    this.pendingWindows = 0;
    this.resetStrings = true;
    this.retriedMissing = false;
    this.selection = new Set(model.get("selected_events") ?? []);
    this.spans = new Map();
    this.selectedSpan = null;
    this.boxTruncated = false;
    this.mark = null;
    this.focus = null;
    this.box = null;
    this.zoomBox = null;
    this.hover = null;
    this.mouse = null;
    this.drag = null;
    this.held = new Map();
    this.search = { pattern: null, hits: null, index: -1 };
    this.searchMatch = "any";
    this.frames = 0;
    this.renderer = new Renderer();
    this.buildDom();
    this.ctx = this.canvas.getContext("2d");
    this.theme = readTheme(this.el, this.ctx);
    this.overlaysFromModel();
    this.relayout();
    this.bind();
    this.resize();
    this.showSelection();
    this.ensureData();
  }

  // ---- DOM --------------------------------------------------------------------------------
  buildDom() {
    const el = this.el;
    el.classList.add("xw-trace-viewer");
    this.toolButtons = new Map(TOOLS.map(([tool, key, title]) => [
      tool,
      h("button", { type: "button", title, "aria-pressed": String(tool === this.tool), dataset: { tool }, onclick: () => this.setTool(tool) },
        `${key} ${tool[0].toUpperCase()}${tool.slice(1)}`),
    ]));
    this.flowBox = h("input", { type: "checkbox", onchange: () => this.setFlows(this.flowBox.checked) });
    this.filterInput = h("input", {
      type: "text", placeholder: "Filter tracks", title: "Show only sections and tracks whose name contains this",
      oninput: () => this.setFilter(this.filterInput.value), className: "xw-tv-filter",
    });
    this.searchInput = h("input", {
      type: "search", placeholder: "Search events (/)", className: "xw-tv-search",
      title: "Search event names over the whole trace; /regex/ for a regular expression. Enter: next, Shift+Enter: previous",
      oninput: () => this.clearSearch(),
    });
    this.hitsLabel = h("span", { className: "xw-tv-hits" });
    this.splitLabel = h("span", { className: "xw-tv-split", title: "Hits by where they matched: the name shown, else the full name (an XLA op's HLO text), else a text stat of the op (framework op, source line, category, shape)" });
    this.matchSelect = h("select", {
      className: "xw-tv-match", title: "Which hits Enter steps through and the timeline marks", hidden: true,
      onchange: () => this.setSearchMatch(this.matchSelect.value),
    }, [["any", "all hits"], ["name", "name"], ["text", "HLO text"], ["stats", "op stats"]].map(([value, text]) => h("option", { value }, text)));
    this.status = h("span", { className: "xw-tv-status" });
    this.overlayBar = h("span", { className: "xw-tv-overlays" });
    const toolbar = h(
      "div",
      { className: "xw-tv-toolbar" },
      h("span", { className: "xw-tv-group", role: "group", "aria-label": "Tools" }, [...this.toolButtons.values()]),
      h("label", { className: "xw-tv-check", title: "Draw arrows between linked events" }, this.flowBox, "Flow events"),
      this.overlayBar,
      this.filterInput,
      this.searchInput,
      h("button", { type: "button", title: "Previous hit (Shift+Enter)", onclick: () => this.stepSearch(-1) }, "◀"),
      h("button", { type: "button", title: "Next hit (Enter)", onclick: () => this.stepSearch(1) }, "▶"),
      this.hitsLabel,
      this.splitLabel,
      this.matchSelect,
      ...this.buildMarkMenus(),
      this.pod ? this.buildHostMenu() : null,
      h("button", { type: "button", title: "Keys (?)", onclick: () => this.toggleHelp() }, "?"),
    );
    this.canvas = h("canvas", { "aria-label": "trace timeline" });
    this.banner = h("div", { className: "xw-tv-banner", hidden: true, role: "status" });
    this.tip = h("div", { className: "xw-tv-tip", hidden: true });
    this.help = helpOverlay(() => this.toggleHelp(false));
    this.stage = h("div", { className: "xw-tv-stage", tabindex: "0", dataset: { tool: this.tool } },
      this.canvas, this.banner, this.tip, this.help);
    this.details = h("div", { className: "xw-tv-details" });
    const footer = h("div", { className: "xw-tv-footer" }, this.status);
    el.replaceChildren(h("style", {}, CSS), toolbar, this.stage, this.buildResizer(), footer, this.details);
  }

  bind() {
    const on = (target, type, fn, options) => {
      target.addEventListener(type, fn, options);
      this.disposers.push(() => target.removeEventListener(type, fn, options));
    };
    const onModel = (name, fn) => {
      this.model.on(name, fn);
      this.disposers.push(() => this.model.off(name, fn));
    };
    on(this.stage, "pointerdown", (e) => this.pointerDown(e));
    on(this.stage, "pointermove", (e) => this.pointerMove(e));
    on(this.stage, "pointerup", (e) => this.pointerUp(e));
    on(this.stage, "pointercancel", () => this.cancelDrag());
    on(this.stage, "pointerleave", () => {
      this.mouse = null;
      if (!this.drag) this.setHover(null);
    });
    on(this.stage, "wheel", (e) => this.wheel(e), { passive: false });
    // Keys typed in the widget are the widget's: no notebook shortcut sees them (lib/keys.js).
    this.disposers.push(ownKeys(this.el, (e, target) => this.ownKey(e, target)));
    on(this.el, "focusout", (e) => {
      this.held.clear();
      if (!e.relatedTarget) queueMicrotask(() => this.keepFocus(e.target));
    });
    onModel("change:window", () => this.windowFromModel());
    onModel("change:selected_events", () => this.selectionFromModel());
    onModel("change:height", () => this.relayout());
    onModel("change:_summary", () => this.summaryFromModel());
    onModel("change:_overlays", () => this.overlaysFromModel());
    for (const name of ["pinned_tracks", "hidden_tracks", "_bookmarks"]) onModel(`change:${name}`, () => this.marksFromModel());
    onModel("msg:custom", (msg) => this.kernelMessage(msg));
    const resize = new ResizeObserver(() => this.resize());
    resize.observe(this.stage);
    this.disposers.push(() => resize.disconnect());
    const themeWatch = new MutationObserver(() => this.retheme());
    themeWatch.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name", "class"] });
    this.disposers.push(() => themeWatch.disconnect());
    const dark = window.matchMedia?.("(prefers-color-scheme: dark)");
    if (dark) on(dark, "change", () => this.retheme());
  }

  dispose() {
    for (const dispose of this.disposers.splice(0)) dispose();
    clearTimeout(this.syncTimer);
    clearTimeout(this.filterTimer);
    clearInterval(this.progressTimer);
    cancelAnimationFrame(this.raf);
    cancelAnimationFrame(this.holdRaf);
  }

  // ---- geometry ---------------------------------------------------------------------------
  get timelineWidth() {
    return Math.max(1, this.width - this.labelW);
  }

  // The label column dragged to `px` wide (kept for the widget's other displays). The answer
  // held is drawn scaled meanwhile; the drag's end asks for the new width's (ensureData).
  setLabelWidth(px) {
    const w = Math.round(Math.max(MIN_LABEL_W, Math.min(maxLabelWidth(this.width || 0), px)));
    if (w === this.labelW) return;
    this.labelW = w;
    labelWidths.set(this.model, w);
    this.el.dataset.labelWidth = String(w);
    this.requestDraw();
  }

  resize() {
    const width = Math.floor(this.stage.clientWidth);
    if (!width) return;
    const dpr = window.devicePixelRatio || 1;
    const height = this.stageHeight();
    if (width === this.width && height === this.height && dpr === this.dpr) return;
    // Laid out at last: the widget is in the page, so its theme's variables can be read (at
    // render time it may not be attached yet, and would read as the light fallbacks).
    if (!this.width) this.theme = readTheme(this.el, this.ctx);
    this.width = width;
    this.height = height;
    this.dpr = dpr;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(height * dpr);
    this.canvas.style.height = `${height}px`;
    this.clampScroll();
    this.requestDraw();
    this.ensureData();
  }

  stageHeight() {
    const wanted = this.model.get("height") || 600;
    return Math.max(100, Math.min(wanted, AXIS_H + this.layout.height + 1));
  }

  relayout() {
    this.layout = buildLayout(this.tables, this.collapsed, this.filter, this.multiHost, this.marks);
    if (this.width) {
      const height = this.stageHeight();
      if (height !== this.height) {
        this.height = height;
        this.canvas.height = Math.round(height * this.dpr);
        this.canvas.style.height = `${height}px`;
      }
    }
    this.clampScroll();
    this.requestDraw();
    if (this.hover) this.refreshHover();
  }

  clampScroll() {
    const room = Math.max(0, this.layout.height - ((this.height || 0) - AXIS_H));
    this.scrollY = Math.max(0, Math.min(this.scrollY, room));
  }

  timeAt(x) {
    return this.view.start + ((x - this.labelW) / this.timelineWidth) * (this.view.end - this.view.start);
  }

  xOf(us) {
    return this.labelW + ((us - this.view.start) / (this.view.end - this.view.start)) * this.timelineWidth;
  }

  // Keep the view on the trace: at most a little wider than it (then centred on it), and never
  // more than half a view beyond either end.
  clampView(start, end) {
    const total = this.traceEnd - this.traceStart;
    let span = Math.min(Math.max(end - start, MIN_SPAN_US), total * 1.1);
    if (!Number.isFinite(span)) span = total;
    if (span >= total) {
      const s = this.traceStart - (span - total) / 2;
      return { start: s, end: s + span };
    }
    let s = Number.isFinite(start) ? start : this.traceStart;
    s = Math.max(s, this.traceStart - span / 2);
    s = Math.min(s, this.traceEnd - span / 2);
    return { start: s, end: s + span };
  }

  // ---- the view window --------------------------------------------------------------------
  setView(start, end) {
    const next = this.clampView(start, end);
    if (next.start === this.view.start && next.end === this.view.end) return;
    this.view = next;
    this.requestDraw();
    this.ensureData();
    this.scheduleSync();
    if (this.hover) this.setHover(null); // the next mouse move shows what is under it now
  }

  zoomAt(factor, anchorUs) {
    const anchor = anchorUs ?? (this.view.start + this.view.end) / 2;
    this.setView(anchor - (anchor - this.view.start) / factor, anchor + (this.view.end - anchor) / factor);
  }

  panBy(us) {
    this.setView(this.view.start + us, this.view.end + us);
  }

  mouseTime() {
    return this.mouse && this.mouse.x >= this.labelW ? this.timeAt(this.mouse.x) : undefined;
  }

  scheduleSync() {
    if (this.syncTimer) return;
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null;
      this.synced = [this.view.start, this.view.end];
      this.model.set("window", this.synced);
      this.model.save_changes();
    }, 120);
  }

  windowFromModel() {
    const value = this.model.get("window");
    if (!value || value.length !== 2) return;
    const [s, e] = value;
    const tol = (this.view.end - this.view.start) * 1e-9;
    if (Math.abs(s - this.view.start) <= tol && Math.abs(e - this.view.end) <= tol) return;
    if (this.synced && s === this.synced[0] && e === this.synced[1]) return;
    const next = this.clampView(s, e);
    this.view = next;
    this.requestDraw();
    this.ensureData();
    if (this.hover) this.setHover(null);
    if (next.start !== s || next.end !== e) this.scheduleSync();
  }

  // ---- data -------------------------------------------------------------------------------
  dataParams() {
    const tracks = [];
    const collapsed = [];
    for (const row of this.layout.rows) {
      if (row.type === "track") tracks.push(row.trackId);
      else if (row.collapsed) collapsed.push(row.sectionId);
    }
    return { tracks, collapsed, flows: this.flows };
  }

  ensureData() {
    if (!this.width || this.failed) return;
    const params = this.dataParams();
    const key = JSON.stringify([params, this.overlayKey()]);
    const serves = (plan) => plan?.key === key && covers(plan, this.view.start, this.view.end, this.timelineWidth, plan.timelinePx);
    if (serves(this.plan)) return;
    // The view came back to where an answer it holds serves it in full: that one is the picture.
    // Only answers about the trace as the summary now describes it (a picked host changes it).
    const held = this.tiles.find((tile) => serves(tile.params) && !tile.missingNames && tile.params.summary === this.summary);
    if (held) {
      this.plan = held.params;
      this.tile = held;
      this.requestDraw();
      return;
    }
    this.fetchWindow(params, key);
  }

  fetchWindow(params, key) {
    const plan = planFetch(this.view.start, this.view.end, this.timelineWidth, this.traceStart, this.traceEnd);
    plan.key = key;
    plan.timelinePx = this.timelineWidth;
    plan.summary = this.summary;
    this.plan = plan;
    // An answer still on its way will be dropped (one channel, newest wins): names it carried
    // never reach this view, so the next answer sends every name it uses again.
    const reset = this.resetStrings || this.pendingWindows > 0;
    this.resetStrings = false;
    const first = !this.tile;
    this.pendingWindows += 1;
    if (first) this.startIndexProgress();
    request(this.model, "window", {
      start_us: plan.start_us, end_us: plan.end_us, width_px: plan.width_px, ...params,
      reset_strings: reset, view: this.viewId,
    }, {
      channel: "window",
      busyAfterMs: first ? INDEX_PROGRESS_AFTER_MS : 700,
      onBusy: first ? undefined : () => this.setBanner("Kernel busy — waiting…", "busy"),
    }).then((answer) => {
      this.pendingWindows -= 1;
      if (!answer) return;
      this.clearBanner();
      this.applyWindow(answer, plan);
    }, (error) => {
      this.pendingWindows -= 1;
      this.resetStrings = true;
      this.fail(error);
    });
  }

  applyWindow({ content, buffers }, plan) {
    const tile = decodeTile(content, buffers, plan, this.names);
    this.tiles = keepTiles(this.tiles, tile);
    if (plan !== this.plan && this.tile) {
      // Asked for before the view went back to a held answer: kept for later, not shown on top.
      this.requestDraw();
      return;
    }
    this.tile = tile;
    this.stopIndexProgress();
    const n = tile.sName.length;
    this.status.textContent = `${(content.events_in_window ?? 0).toLocaleString("en")} events in window · ${n.toLocaleString("en")} drawn · ${(content.query_ms ?? 0).toFixed(1)} ms`;
    if (tile.missingNames && !this.retriedMissing) {
      this.retriedMissing = true;
      this.resetStrings = true;
      this.plan = null;
      this.ensureData();
    } else if (!tile.missingNames) {
      this.retriedMissing = false;
    }
    this.requestDraw();
  }

  startIndexProgress() {
    const started = performance.now();
    const n = Number(this.summary.n_events ?? 0).toLocaleString("en");
    this.progressTimer = setInterval(() => {
      const seconds = (performance.now() - started) / 1000;
      if (seconds < INDEX_PROGRESS_AFTER_MS / 1000) return;
      const text = this.progressText ?? `Indexing ${n} events`;
      this.setBanner(`${text}… ${seconds.toFixed(0)} s`, "progress");
    }, 250);
  }

  stopIndexProgress() {
    clearInterval(this.progressTimer);
    this.progressTimer = null;
  }

  kernelMessage(msg) {
    if (msg?.kind === "progress") this.progressText = String(msg.text ?? "");
  }

  fail(error) {
    this.stopIndexProgress();
    const text = error instanceof RequestError ? error.message : String(error?.message ?? error);
    this.setBanner(text, "error");
    if (!this.tile) {
      this.failed = true;
      this.el.dataset.ready = "error";
    }
    console.warn("xprof_widgets trace viewer:", error);
  }

  setBanner(text, kind) {
    this.banner.textContent = text;
    this.banner.dataset.kind = kind;
    this.banner.hidden = false;
    this.el.dataset.busy = kind;
  }

  clearBanner() {
    if (this.banner.dataset.kind === "error") return;
    this.banner.hidden = true;
    delete this.el.dataset.busy;
  }

  // ---- drawing ----------------------------------------------------------------------------
  requestDraw() {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.draw();
    });
  }

  retheme() {
    this.theme = readTheme(this.el, this.ctx);
    this.requestDraw();
  }

  draw() {
    if (!this.width) return;
    const dpr = window.devicePixelRatio || 1;
    if (dpr !== this.dpr) return this.resize();
    const stats = {};
    performance.mark("xw-trace-draw-start");
    const settled = this.settled();
    const { layers, unknown } = heldLayers(this.tiles, this.view, this.timelineWidth, this.traceStart, this.traceEnd, settled ? this.tile : null);
    this.renderer.draw({
      ctx: this.ctx, width: this.width, height: this.height, dpr: this.dpr, theme: this.theme,
      view: this.view, scrollY: this.scrollY, layout: this.layout, layers, unknown, names: this.names,
      selection: this.selection, hover: this.hover, mark: this.mark, box: this.box, zoomBox: this.zoomBox,
      focus: this.focus, labelW: this.labelW, hits: this.search.marks ?? null,
      flows: this.flows, trackSection: this.trackSection, bookmarks: this.bookmarks, stats,
      overlays: this.overlayPositions,
    });
    this.drawnOverlays = stats.overlayArrows ?? [];
    performance.measure("xw-trace-draw", "xw-trace-draw-start");
    performance.clearMarks("xw-trace-draw-start");
    if (++this.frames % MAX_DRAW_MEASURES === 0) performance.clearMeasures("xw-trace-draw");
    const d = this.el.dataset;
    d.frames = String(this.frames);
    d.window = `${this.view.start},${this.view.end}`;
    d.slices = String(stats.slicesDrawn ?? 0);
    d.flows = String(stats.flowsDrawn ?? 0);
    d.overlayFlows = String(this.drawnOverlays.length);
    const arrow = this.drawnOverlays[0];
    d.overlayFirst = arrow ? [arrow.x0, arrow.y0, arrow.x1, arrow.y1].map(Math.round).join(",") : "";
    d.hitsMarked = String(stats.hitsMarked ?? 0);
    d.hitRows = String(stats.hitRows ?? 0);
    d.axis = (stats.axis ?? []).join("|");
    d.labelWidth = String(this.labelW);
    d.scrollY = String(this.scrollY);
    d.rows = String(this.layout.rows.length);
    d.topRow = this.rowAtY(AXIS_H + 1)?.label ?? "";
    d.pinned = this.marks.pinned.join(",");
    d.hidden = [...this.marks.hidden].join(",");
    d.bookmarks = this.bookmarks.map((b) => b.name).join("|");
    d.missingNames = this.tile?.missingNames ? "1" : "0";
    d.mark = this.mark ? String(this.mark.end - this.mark.start) : "";
    d.settled = settled ? "1" : "0";
    if (this.tile && d.ready !== "1") d.ready = "1";
  }

  // Whether the frame shows an answer for this view at full resolution (not a coarser or shifted
  // stand-in held from earlier answers while the view's own is on its way).
  settled() {
    const tile = this.tile;
    return Boolean(tile) && tile.params === this.plan && !tile.missingNames;
  }

  // ---- tools and input --------------------------------------------------------------------
  setTool(tool) {
    this.tool = tool;
    this.stage.dataset.tool = tool;
    for (const [name, button] of this.toolButtons) button.setAttribute("aria-pressed", String(name === tool));
  }

  setFlows(on) {
    this.flows = on;
    this.flowBox.checked = on;
    this.ensureData();
    this.requestDraw();
  }

  setFilter(text) {
    this.filter = text;
    this.relayout();
    clearTimeout(this.filterTimer);
    this.filterTimer = setTimeout(() => this.ensureData(), 150);
  }

  toggleSection(sectionId) {
    if (this.pickHostOf(sectionId)) return;
    if (this.collapsed.has(sectionId)) this.collapsed.delete(sectionId);
    else this.collapsed.add(sectionId);
    this.relayout();
    this.ensureData();
  }

  toggleHelp(show = this.help.hidden) {
    this.help.hidden = !show;
  }
}

Object.assign(TraceView.prototype, inputMethods, selectionMethods, navigationMethods, hostMethods, resizeMethods, markMethods,
  overlayMethods);
