// One `report` request after render; data-ready on the root: "1" once drawn (a message
// included), "error" on failure; data-charts counts the charts drawn.
import { clearCharts, drawCharts } from "../charts/embed.js";
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { RequestError, request } from "../lib/transport.js";
import { CSS } from "./style.js";

const STYLE_ID = "xw-distributed-style";

function ensureStyle() {
  if (!document.getElementById(STYLE_ID)) document.head.append(h("style", { id: STYLE_ID }, CSS));
}

function tile(label, value, sub) {
  return h("div", { className: "xw-dv-tile" }, h("span", { className: "xw-dv-tile-label" }, label),
    h("span", { className: "xw-dv-tile-value" }, value), sub ? h("span", { className: "xw-dv-tile-sub" }, sub) : null);
}

const gbps = (v) => (v === null || v === undefined || Number.isNaN(v) ? "—" : `${fmt.sig3(v)} GB/s`);
const mib = (v) => (v === null || v === undefined || Number.isNaN(v) ? "—" : fmt.bytes(v * 1048576));
const size = (v) => (v === null || v === undefined || Number.isNaN(v) ? "—" : fmt.bytes(v));
const group = (v) => (v ? v : "—");

/** The summary tiles: ranks, collectives, communication, waiting, the worst straggler. */
export function summaryTiles(s) {
  return [
    tile("Ranks", fmt.count(s.ranks)),
    tile("Collective kernels", fmt.count(s.collectives), `${fmt.count(s.matched)} matched across ranks`
      + (s.mismatched ? `, ${fmt.count(s.mismatched)} the ranks disagree on` : "")),
    tile("Communication", fmt.time(s.communication_us), `${fmt.pct(s.exposed_pct)} of kernel time exposed`),
    tile("Waiting for late ranks", fmt.time(s.waiting_us), `largest arrival spread ${fmt.time(s.max_spread_us)}`),
    s.straggler ? tile("Worst straggler", s.straggler, `caused ${fmt.pct(s.straggler_pct)} of the waiting`) : null,
  ].filter(Boolean);
}

export const KIND_COLUMNS = [
  { key: "kind", label: "Collective", align: "left", facet: true },
  { key: "family", label: "Family", align: "left", facet: true },
  { key: "group", label: "Group", align: "left", format: group, title: "Process group name" },
  { key: "group_size", label: "Ranks in group" },
  { key: "count", label: "Kernels", title: "Instances, summed over ranks" },
  { key: "mean_size_mib", label: "Mean size", format: mib },
  { key: "total_us", label: "Time", format: fmt.time, title: "Kernel time, summed over ranks" },
  { key: "mean_us", label: "Mean time", format: fmt.time },
  { key: "wait_us", label: "Waiting", format: fmt.time, title: "Time the kernels waited for the last rank to arrive" },
  { key: "algbw_gbps", label: "Algorithm bw", format: gbps, title: "Size / time (nccl-tests' algbw)" },
  { key: "busbw_gbps", label: "Bus bw", format: gbps, title: "algbw × nccl-tests' factor for the kind and ranks" },
];

export const SKEW_COLUMNS = [
  { key: "first_start_us", label: "First arrival", format: fmt.time },
  { key: "kind", label: "Collective", align: "left", facet: true },
  { key: "group", label: "Group", align: "left", format: group },
  { key: "ranks", label: "Ranks" },
  { key: "size_bytes", label: "Size", format: size },
  { key: "spread_us", label: "Arrival spread", format: fmt.time, title: "Last start minus first start, on one clock" },
  { key: "last_rank", label: "Last rank", facet: true },
  { key: "wait_caused_us", label: "Wait caused", format: fmt.time, title: "The other ranks' waiting, summed" },
  { key: "end_spread_us", label: "End spread", format: fmt.time, title: "Near 0 where the ranks' clocks agree" },
  { key: "transfer_us", label: "Transfer", format: fmt.time, title: "The last arrival's kernel time" },
  { key: "busbw_no_wait_gbps", label: "Bus bw once all arrived", format: gbps },
];

export const STRAGGLER_COLUMNS = [
  { key: "host", label: "Rank", align: "left" },
  { key: "instances", label: "Collectives" },
  { key: "last_arrivals", label: "Arrived last" },
  { key: "wait_caused_us", label: "Wait caused", format: fmt.time },
  { key: "wait_caused_pct", label: "Share of waiting", format: (v) => fmt.pct(v) },
  { key: "mean_late_us", label: "Mean lateness", format: fmt.time, title: "Its start minus the first rank's" },
  { key: "waiting_us", label: "Own waiting", format: fmt.time, title: "Its kernels' time waiting for others" },
];

export class DistributedView {
  constructor(model, el) {
    ensureStyle();
    this.model = model;
    this.el = el;
    this.abort = new AbortController();
    this.views = [];
    this.disposed = false;
    el.classList.add("xw-dv");
    el.dataset.ready = "0";
    this.status = h("div", { className: "xw-dv-status" }, "Matching the ranks' collectives…");
    el.replaceChildren(h("div", { className: "xw-dv-head" }, h("span", { className: "xw-dv-title" }, "Distributed"),
      h("span", { className: "xw-dv-source" }, model.get("title"))), this.status);
    this.load().catch((error) => this.fail(error));
  }

  section(title, note, table) {
    return [h("div", { className: "xw-dv-section" }, title, h("span", { className: "xw-dv-note" }, note)),
      h("div", { className: "xw-dv-body", dataset: { table: title } }, table.el)];
  }

  async load() {
    const answer = await request(this.model, "report", {}, {
      onBusy: () => { this.status.textContent = "Waiting for the kernel (a cell may be running)…"; },
    });
    if (!answer || this.disposed) return;
    const r = answer.content;
    if (r.message) {
      this.status.replaceChildren(h("div", { className: "xw-dv-message" }, r.message));
      this.el.dataset.state = "message";
      this.el.dataset.ready = "1";
      return;
    }
    this.status.textContent = "";
    const charts = h("div", { className: "xw-dv-charts" });
    this.tables = {
      kinds: new DataTable({ columns: KIND_COLUMNS, rows: rowsOf(r.kinds), sort: { key: "total_us", descending: true },
        csvName: "collectives_by_kind.csv", placeholder: "Filter by collective or family" }),
      skew: new DataTable({ columns: SKEW_COLUMNS, rows: rowsOf(r.skew), sort: { key: "first_start_us", descending: false },
        csvName: "collective_skew.csv", placeholder: "Filter by collective or group" }),
      stragglers: new DataTable({ columns: STRAGGLER_COLUMNS, rows: rowsOf(r.stragglers),
        sort: { key: "wait_caused_us", descending: true }, csvName: "stragglers.csv", placeholder: "Filter by rank" }),
    };
    this.el.append(h("div", { className: "xw-dv-tiles" }, summaryTiles(r.summary)), charts,
      ...this.section("Collectives by kind", "bandwidths as nccl-tests defines them", this.tables.kinds),
      ...this.section("Each collective across ranks", "the i-th of a process group on every rank", this.tables.skew),
      ...this.section("Stragglers", "who arrived last, and what it cost the others", this.tables.stragglers));
    this.el.dataset.ready = "1";
    const items = [];
    if (r.charts.ranks) items.push({ key: "ranks", title: "GPU time by rank", item: r.charts.ranks });
    if (r.charts.stragglers) items.push({ key: "stragglers", title: "Waiting caused", item: r.charts.stragglers });
    this.views = await drawCharts(this.model, charts, items, this.abort.signal);
    this.el.dataset.charts = String(this.views.length);
  }

  fail(error) {
    if (this.disposed) return;
    const text = error instanceof RequestError ? error.message : String(error?.message ?? error);
    this.status.replaceChildren(h("span", { className: "xw-dv-error" }, text));
    this.el.dataset.ready = "error";
  }

  dispose() {
    this.disposed = true;
    this.abort.abort();
    clearCharts(this.views);
  }
}
