// The roofline model: programs and ops against the device's compute and memory roofs. The
// chart's points are the op table's rows as the table keeps them (its filter and facets).
import { bandwidth, fraction, onChipColumns, pct, rate, ratio } from "../lib/columns.js";
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, tiles, traitBox } from "../lib/tool_view.js";

const TRAITS = ["include_infeed_outfeed", "step", "memory"];
const MAX_POINTS = 1000;

const COMMON = [
  { key: "measured_flop_rate_gflops", label: "FLOP rate", format: rate },
  { key: "hbm_bw_gbps", label: "HBM BW", format: bandwidth },
  "on chip",
  { key: "operational_intensity", label: "FLOP/byte", format: ratio },
  { key: "hbm_operational_intensity", label: "FLOP/HBM byte", format: ratio },
  { key: "bound_by", label: "Bound by", align: "left", facet: true },
  { key: "roofline_efficiency", label: "Roofline eff.", format: fraction, title: "Highest utilization of any roof" },
  { key: "compute_efficiency", label: "FLOP rate / peak", format: fraction },
  { key: "max_mem_bw_utilization", label: "Max BW util.", format: fraction },
  { key: "optimal_flop_rate_gflops", label: "Optimal FLOP rate", format: rate, title: "FLOP rate over the roofline efficiency" },
];

export const PROGRAM_COLUMNS = [
  { key: "step", label: "Step", align: "left" },
  { key: "total_time_us", label: "Time", format: fmt.time },
  { key: "total_time_per_core_us", label: "Time per core", format: fmt.time },
  ...COMMON,
];

export const OP_COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "category", label: "Category", align: "left", facet: true },
  { key: "operation", label: "Operation", align: "left" },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_time_us", label: "Total time", format: fmt.time },
  { key: "total_self_time_pct", label: "Self %", format: pct },
  ...COMMON,
  // Empty on a PyTorch trace (no HLO programs, no source info): hidden there.
  { key: "program_id", label: "Program", align: "left", filter: false, optional: true },
  { key: "source_info", label: "Source", align: "left", optional: true },
];

export class RooflineView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-roof", method: "roofline", traits: TRAITS });
  }

  build() {
    const s = this.summary;
    const roofs = (s.ceilings ?? []).map((c) => [`${c.memory} roof`, fmt.si(c.peak_bw_gbps * 1e9, "B/s"),
      `ridge point ${fmt.sig3(c.ridge_point)} FLOP/byte`]);
    const head = h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, "Roofline Model ", h("span", {}, s.source ?? "")),
      tiles([
        ["Device", fmt.deviceLabel(s.kind, s.device, s.cores)],
        ["Peak FLOP rate", s.peak_flop_rate_gflops ? fmt.si(s.peak_flop_rate_gflops * 1e9, "FLOP/s") : "no peak", "per core"],
        ...roofs,
        ["Ops", fmt.count(s.ops)],
      ]));
    const select = (trait, options, title) => {
      const node = h("select", { title, onchange: () => { this.model.set(trait, node.value); this.model.save_changes(); } },
        options.map(([value, text]) => h("option", { value }, text)));
      const sync = () => { node.value = this.model.get(trait); };
      sync();
      this.model.on(`change:${trait}`, sync);
      return node;
    };
    const steps = (s.steps ?? []).map((v) => [v, v === "Average" ? "Average step" : `Step ${v}`]);
    const memories = (s.ceilings ?? []).map((c) => [c.memory, c.memory]);
    const controls = h("div", { className: "xw-controls" },
      s.feeds === false ? null : traitBox(this.model, "include_infeed_outfeed", "Include infeed/outfeed",
        "Count infeed and outfeed ops and their time"),
      h("label", {}, "Program", select("step", [["Total", "Whole profile"], ...steps],
        "The program row drawn as a star")),
      memories.length ? h("label", {}, "Memory", select("memory", memories,
        "The roof and the intensity the chart shows")) : null);
    const withMemories = (list) => list.flatMap((c) => (c === "on chip" ? onChipColumns(s.on_chip) : [c]));
    this.programs = new DataTable({ columns: withMemories(PROGRAM_COLUMNS), csvName: "roofline_programs.csv",
      placeholder: "Filter steps" });
    this.programs.el.classList.add("xw-dt-short");
    this.ops = new DataTable({
      columns: withMemories(OP_COLUMNS), sort: { key: "rank", descending: false }, csvName: "roofline_ops.csv",
      placeholder: "Filter by operation, category, source", onChange: (rows) => this.plot(rows),
    });
    this.chartBox.classList.add("xw-chart-wide");
    this.key = h("div", { className: "xw-notes xw-roof-key" });
    return [head, controls, this.chartBox, this.key,
      h("div", { className: "xw-body" }, h("h4", {}, "Programs"), this.programs.el, h("h4", {}, "Ops"), this.ops.el)];
  }

  show(content) {
    this.colors = content.colors;
    this.intensity = content.intensity;
    const rows = rowsOf(content.rows);
    this.points = null;
    this.programs.setRows(rows.filter((r) => r.category === "Program"));
    this.ops.setRows(rows.filter((r) => r.category !== "Program"));
    return content.charts;
  }

  afterCharts() {
    const view = [...(this.views[0]?.roots ?? [])][0];
    this.points = view?.model.document.get_model_by_name("ops") ?? null;
    this.plot(this.ops.visibleRows());
  }

  // The kept op rows as chart points: x = FLOPs per byte of the chosen memory, y = FLOP rate.
  plot(rows) {
    if (!this.points) return;
    const shown = rows.filter((r) => r[this.intensity] > 0 && r.measured_flop_rate_gflops > 0).slice(0, MAX_POINTS);
    this.points.data = {
      x: shown.map((r) => r[this.intensity]),
      y: shown.map((r) => r.measured_flop_rate_gflops * 1e9),
      size: shown.map((r) => 6 + 34 * Math.sqrt(Math.max(0, r.total_time_pct ?? 0) / 100)),
      color: shown.map((r) => this.colors[r.bound_by] ?? "#7f7f7f"),
      name: shown.map((r) => r.operation),
      category: shown.map((r) => r.category),
      bound: shown.map((r) => r.bound_by),
      time: shown.map((r) => fmt.time(r.total_time_us)),
    };
    this.el.dataset.points = String(shown.length);
    const bounds = [...new Set(shown.map((r) => r.bound_by))];
    this.key.replaceChildren(...(bounds.length ? ["Points by bottleneck:"] : []), ...bounds.map((b) => h("span", {},
      h("span", { className: "xw-swatch", style: { background: this.colors[b] ?? "#7f7f7f" } }), b || "no cost model")));
  }

  statusText(content) {
    const n = content.rows.rank?.length ?? 0;
    return `${n} rows. The chart shows the ops the table keeps (filter, category, bound by); point size is time.`;
  }
}
