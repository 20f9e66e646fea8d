// The Distributed view on the table tools' shared view (lib/tool_view.js): summary tiles from
// the synced `_summary`, then one `table` request for the charts (each rank's GPU time, the
// waiting each rank caused) and the three tables (collectives by kind, each collective across
// ranks, stragglers).
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, tiles } from "../lib/tool_view.js";

const known = (v) => v !== null && v !== undefined && !Number.isNaN(v);
const gbps = (v) => (known(v) ? `${fmt.sig3(v)} GB/s` : fmt.DASH);
const mib = (v) => (known(v) ? fmt.bytes(v * 1048576) : fmt.DASH);
const size = (v) => (known(v) ? fmt.bytes(v) : fmt.DASH);
const group = (v) => v || fmt.DASH;

/** The summary tiles: ranks, collectives, communication, waiting, the worst straggler. */
export function summaryTiles(s) {
  const matched = `${fmt.count(s.matched)} matched across ranks`
    + (s.mismatched ? `, ${fmt.count(s.mismatched)} the ranks disagree on` : "");
  return [
    ["Ranks", fmt.count(s.ranks)],
    ["Collective kernels", fmt.count(s.collectives), matched],
    ["Communication", fmt.time(s.communication_us), `${fmt.pct(s.exposed_pct)} of the ranks' kernel time is exposed communication`],
    ["Waiting for late ranks", fmt.time(s.waiting_us), `largest arrival spread ${fmt.time(s.max_spread_us)}`],
    ...(s.straggler ? [["Worst straggler", s.straggler, `caused ${fmt.pct(s.straggler_pct)} of the waiting`]] : []),
  ];
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
  { key: "ranks", label: "Ranks", title: "The ranks whose traces ran it" },
  { key: "group_size", label: "Of", title: "The ranks in its process group" },
  { key: "size_bytes", label: "Size", format: size },
  { key: "spread_us", label: "Arrival spread", format: fmt.time, title: "Last start minus first start, on one clock" },
  { key: "last_host", label: "Last rank", align: "left", facet: true },
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

export class DistributedView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-dv" });
  }

  build() {
    const s = this.summary;
    const head = h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, "Distributed ", h("span", {}, s.source ?? "")),
      s.message ? null : tiles(summaryTiles(s)),
      s.mismatched ? h("p", { className: "xw-notes" }, `${fmt.count(s.mismatched)} collective${s.mismatched === 1 ? "" : "s"} `
        + "left unmatched: the ranks disagree on their kind or size (traces that start at different collectives, "
        + "or filtered ones), so they have no skew.") : null);
    this.chartBox.classList.add("xw-chart-wide");
    this.tables = {
      kinds: new DataTable({ columns: KIND_COLUMNS, sort: { key: "total_us", descending: true },
        csvName: "collectives_by_kind.csv", placeholder: "Filter by collective or family" }),
      skew: new DataTable({ columns: SKEW_COLUMNS, sort: { key: "first_start_us", descending: false },
        csvName: "collective_skew.csv", placeholder: "Filter by collective or group" }),
      stragglers: new DataTable({ columns: STRAGGLER_COLUMNS, sort: { key: "wait_caused_us", descending: true },
        csvName: "stragglers.csv", placeholder: "Filter by rank" }),
    };
    const section = (key, title) => [h("h4", {}, title), h("div", { dataset: { table: key } }, this.tables[key].el)];
    this.body = h("div", { className: "xw-body" },
      ...section("kinds", "Collectives by kind (bandwidths as nccl-tests defines them)"),
      ...section("skew", "Each collective across ranks (the i-th of a process group on every rank)"),
      ...section("stragglers", "Stragglers: who arrived last, and what it cost the others"));
    return [head, this.chartBox, this.body];
  }

  show(content) {
    if (content.message) {
      this.body.replaceChildren(h("div", { className: "xw-message" }, content.message));
      return [];
    }
    for (const key of Object.keys(this.tables)) this.tables[key].setRows(rowsOf(content[key]));
    const charts = [];
    if (content.charts.ranks) charts.push({ key: "ranks", title: "GPU time by rank", item: content.charts.ranks });
    if (content.charts.stragglers) charts.push({ key: "stragglers", title: "Waiting caused", item: content.charts.stragglers });
    return charts;
  }
}
