// HLO stats: every device HLO op with its time, FLOP rates, bandwidths and bottleneck.
import { bandwidth, onChipColumns, pct, rate, ratio } from "../lib/columns.js";
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView } from "../lib/tool_view.js";

export const COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "program_id", label: "Program", align: "left", facet: true, filter: false },
  { key: "category", label: "Category", align: "left", facet: true },
  { key: "hlo_op_name", label: "HLO op", align: "left" },
  { key: "tf_op_name", label: "Framework op", align: "left" },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_time_us", label: "Total time", format: fmt.time },
  { key: "avg_time_us", label: "Avg time", format: fmt.time },
  { key: "total_self_time_us", label: "Self time", format: fmt.time },
  { key: "total_self_time_pct", label: "Self %", format: pct, title: "Share of the device's total time, idle included" },
  { key: "cumulative_total_self_time_pct", label: "Cum. %", format: pct },
  { key: "normalized_flop_rate_gflops", label: "FLOP rate", format: rate },
  { key: "model_flop_rate_gflops", label: "Model FLOP rate", format: rate },
  { key: "measured_memory_bw_gbps", label: "Memory BW", format: bandwidth, title: "Every byte accessed, per second" },
  { key: "hbm_bw_gbps", label: "HBM BW", format: bandwidth },
  "on chip",
  { key: "operational_intensity", label: "FLOP/byte", format: ratio },
  { key: "bound_by", label: "Bound by", align: "left", facet: true },
  { key: "source_info", label: "Source", align: "left" },
  { key: "hlo_op_expression", label: "HLO text", align: "left", format: (v) => v ?? "" },
];

export class HloStatsView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-hlo" });
  }

  build() {
    const s = this.summary;
    const head = this.head("HLO Stats", [
      ["Device", fmt.deviceLabel(s.kind, s.device, s.cores)],
      ["HLO ops", fmt.count(s.ops)],
      ["Device time", fmt.time(s.total_time_us), "summed over cores / devices"],
      ["Idle", s.total_time_us ? fmt.percent(s.idle_time_us / s.total_time_us) : fmt.DASH],
    ], (s.notes ?? []).length ? h("p", { className: "xw-notes" }, s.notes.join(" ")) : null);
    const columns = COLUMNS.flatMap((c) => (c === "on chip" ? onChipColumns(s.on_chip) : [c]));
    this.table = new DataTable({
      columns, sort: { key: "rank", descending: false }, csvName: "hlo_stats.csv",
      placeholder: "Filter by op, framework op, category, source",
    });
    return [head, this.chartBox, h("div", { className: "xw-body" }, this.table.el)];
  }

  show(content) {
    this.table.setRows(rowsOf(content.rows));
    return content.charts;
  }

  statusText(content) {
    return `${content.rows.rank?.length ?? 0} HLO ops. Pick a category or bound-by to narrow; the CSV holds the rows shown.`;
  }
}
