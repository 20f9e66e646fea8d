// Framework op stats: time by framework op on the device and the host, as XProf's TensorFlow
// stats page shows it: pies of self time by op and by type, then the table.
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, tiles, traitBox } from "../lib/tool_view.js";
import { h } from "../lib/dom.js";

const pct = (v) => fmt.pct(v, 2);
const rate = (v) => (v ? fmt.si(v * 1e9, "FLOP/s") : "0");
const bandwidth = (v) => (v ? fmt.si(v * 1e9, "B/s") : "0");
const ratio = (v) => (v === null || v === undefined ? fmt.DASH : fmt.sig3(v));

export const COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "host_or_device", label: "Host/device", align: "left", facet: true },
  { key: "type", label: "Type", align: "left", facet: true },
  { key: "operation", label: "Operation", align: "left" },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_time_us", label: "Total time", format: fmt.time },
  { key: "avg_time_us", label: "Avg time", format: fmt.time },
  { key: "total_self_time_us", label: "Self time", format: fmt.time, title: "Total self time: time minus nested ops" },
  { key: "avg_self_time_us", label: "Avg self", format: fmt.time },
  { key: "device_total_self_time_pct", label: "Device %", format: pct, title: "Share of the device's self time" },
  { key: "device_cumulative_total_self_time_pct", label: "Device cum. %", format: pct },
  { key: "host_total_self_time_pct", label: "Host %", format: pct, title: "Share of the host's self time" },
  { key: "host_cumulative_total_self_time_pct", label: "Host cum. %", format: pct },
  { key: "measured_flop_rate_gflops", label: "FLOP rate", format: rate, title: "FLOPs per second over the op's time" },
  { key: "model_flop_rate_gflops", label: "Model FLOP rate", format: rate },
  { key: "measured_memory_bw_gbps", label: "Memory BW", format: bandwidth, title: "Bytes accessed per second (GB/s in the CSV)" },
  { key: "operational_intensity", label: "FLOP/byte", format: ratio },
  { key: "bound_by", label: "Bound by", align: "left", facet: true },
  { key: "execution_mode", label: "Mode", align: "left", facet: true, title: "Eager or Function (graph)" },
];

export class FrameworkOpStatsView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-fw", traits: ["include_idle"] });
  }

  build() {
    const s = this.summary;
    const share = (idle, total) => (total ? fmt.percent(idle / total) : fmt.DASH);
    const head = h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, "Framework Op Stats ", h("span", {}, s.source ?? "")),
      tiles([
        ...(s.device_kind ? [
          ["Device ops", fmt.count(s.device_ops), "framework ops that ran on the device"],
          ["Device time", fmt.time(s.device_time_us), "summed over cores / devices"],
          ["Device idle", share(s.device_idle_us, s.device_time_us)]] : []),
        ...(s.host_ops || s.host_time_us ? [
          ["Host ops", fmt.count(s.host_ops), "framework ops that ran on the host"],
          ["Host time", fmt.time(s.host_time_us), "summed over threads, first op to last"],
          ["Host idle", share(s.host_idle_us, s.host_time_us)]] : []),
      ]),
      (s.notes ?? []).length ? h("p", { className: "xw-notes" }, s.notes.join(" ")) : null);
    const controls = h("div", { className: "xw-controls" },
      traitBox(this.model, "include_idle", "Include idle",
        "Show idle time as an IDLE row per side; without it, shares are of busy time"));
    this.table = new DataTable({
      columns: COLUMNS, sort: { key: "rank", descending: false },
      csvName: "framework_op_stats.csv", placeholder: "Filter by operation or type",
    });
    return [head, controls, this.chartBox, h("div", { className: "xw-body" }, this.table.el)];
  }

  show(content) {
    this.table.setRows(rowsOf(content.rows));
    return content.charts;
  }

  statusText(content) {
    const n = content.rows.rank?.length ?? 0;
    return `${n} rows. Click a column title to sort; the CSV holds the rows shown.`;
  }
}
