// One `report` request after render; data-ready on the root: "1" once drawn (a message
// included), "error" on failure; data-charts counts the charts drawn.
import { clearCharts, drawCharts } from "../charts/embed.js";
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { RequestError, request } from "../lib/transport.js";
import { CSS } from "./style.js";
import { startView, stopView } from "../lib/view_state.js";

const STYLE_ID = "xw-pod-viewer-style";

function ensureStyle() {
  if (!document.getElementById(STYLE_ID)) document.head.append(h("style", { id: STYLE_ID }, CSS));
}

function tile(label, value, sub) {
  return h("div", { className: "xw-pv-tile" }, h("span", { className: "xw-pv-tile-label" }, label),
    h("span", { className: "xw-pv-tile-value" }, value), sub ? h("span", { className: "xw-pv-tile-sub" }, sub) : null);
}

/** The summary tiles: steps, hosts and cores, the usual bottleneck, stragglers. */
export function summaryTiles(s) {
  const over = `more than ${Math.round((s.ratio - 1) * 100)}% above the step's median`;
  return [
    tile("Steps", fmt.count(s.steps), `average ${fmt.time(s.avg_step_us)}`),
    tile("Hosts", fmt.count(s.hosts)),
    tile("Cores", fmt.count(s.cores)),
    tile("Usual bottleneck", s.bottleneck, "the largest part of most steps' slowest core"),
    tile("Straggling steps of a core", fmt.count(s.straggling_rows), over),
    s.hosts > 1 ? tile("Straggling steps of a host", fmt.count(s.straggling_hosts), over) : null,
  ].filter(Boolean);
}

/** The table's columns: the step, where, its time, each part, bottleneck, straggler. */
export function tableColumns(parts) {
  return [
    { key: "step", label: "Step" },
    { key: "host", label: "Host", align: "left", facet: true },
    { key: "core", label: "Core", align: "left", facet: true },
    { key: "duration_us", label: "Step time", format: fmt.time },
    ...parts.map((p) => ({ key: p.key, label: p.label, format: fmt.time })),
    { key: "bottleneck", label: "Bottleneck", align: "left", facet: true },
    { key: "step_median_us", label: "Step median", format: fmt.time, title: "Median step time over every core" },
    { key: "straggler", label: "Straggler", align: "left", facet: true,
      format: (v) => (v ? "straggler" : ""), title: "Far above the step's median" },
  ];
}

export class PodViewerView {
  constructor(model, el) {
    ensureStyle();
    startView(this, model, el, "xw-pv");
    el.dataset.ready = "0";
    this.status = h("div", { className: "xw-pv-status" }, "Breaking the steps down…");
    el.replaceChildren(h("div", { className: "xw-pv-head" }, h("span", { className: "xw-pv-title" }, "Pod viewer"),
      h("span", { className: "xw-pv-source" }, model.get("title"))), this.status);
    this.load().catch((error) => this.fail(error));
  }

  async load() {
    const answer = await request(this.model, "report", {}, {
      onBusy: () => { this.status.textContent = "Waiting for the kernel (a cell may be running)…"; },
    });
    if (!answer || this.disposed) return;
    const r = answer.content;
    if (r.message) {
      this.status.replaceChildren(h("div", { className: "xw-pv-message" }, r.message));
      this.el.dataset.state = "message";
      this.el.dataset.ready = "1";
      return;
    }
    this.status.textContent = "";
    const s = r.summary;
    const legend = h("div", { className: "xw-pv-legend" },
      h("span", {}, h("span", { className: "xw-pv-swatch", style: { background: "#e3eaf4" } }), "at or below the step's median"),
      h("span", {}, h("span", { className: "xw-pv-swatch", style: { background: "#fdd4cc" } }), "just above"),
      h("span", {}, h("span", { className: "xw-pv-swatch", style: { background: "#cb181d" } }), "25% above or more"),
      h("span", {}, h("span", { className: "xw-pv-swatch xw-pv-outline" }), `straggler (> ${fmt.sig3(s.ratio)}× the median)`));
    const charts = h("div", { className: "xw-pv-charts" });
    this.table = new DataTable({ columns: tableColumns(r.parts), rows: rowsOf(r.rows),
      sort: { key: "step", descending: false }, csvName: "pod_viewer.csv",
      placeholder: "Filter by host, core or bottleneck" });
    this.el.append(h("div", { className: "xw-pv-tiles" }, summaryTiles(s)), legend, charts,
      h("div", { className: "xw-pv-section" }, "Every step of every core"), h("div", { className: "xw-pv-body" }, this.table.el));
    this.el.dataset.by = s.by;
    this.el.dataset.ready = "1";
    const items = [{ key: "heatmap", title: "Step time heatmap", item: r.charts.heatmap }];
    if (r.charts.hosts) items.push({ key: "hosts", title: "Step breakdown by host", item: r.charts.hosts });
    items.push({ key: "breakdown", title: "Step breakdown", item: r.charts.breakdown });
    this.views = await drawCharts(this.model, charts, items, this.abort.signal);
    this.el.dataset.charts = String(this.views.length);
  }

  fail(error) {
    if (this.disposed) return;
    const text = error instanceof RequestError ? error.message : String(error?.message ?? error);
    this.status.replaceChildren(h("span", { className: "xw-pv-error" }, text));
    this.el.dataset.ready = "error";
  }

  dispose() {
    stopView(this);
    clearCharts(this.views);
  }
}
