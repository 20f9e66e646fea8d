// Utilization viewer (XProf's tool of that name): for each TPU unit and counter sample, what it
// achieved against its peak; a bar per unit (mean over samples) above the filterable table.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, tiles } from "../lib/tool_view.js";

/** A count in its unit (bytes as bytes, the rest as plain counts). */
export const amount = (value, row) => (row?.unit === "bytes" ? fmt.bytes(value) : fmt.count(value));

export const COLUMNS = [
  { key: "host", label: "Host", align: "left", facet: true, filter: false },
  { key: "device", label: "Device", facet: true },
  { key: "sample", label: "Sample", facet: true },
  { key: "node", label: "Node", facet: true, title: "The core (TensorCore or SparseCore) the unit belongs to" },
  { key: "name", label: "Unit", align: "left" },
  { key: "achieved", label: "Achieved", format: amount },
  { key: "peak", label: "Peak", format: amount },
  { key: "unit", label: "Counted in", align: "left", facet: true, filter: false },
  { key: "utilization", label: "Utilization", format: (v) => fmt.percent(v), title: "Achieved / peak" },
];

export class UtilizationView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-uv" });
  }

  build() {
    const s = this.summary;
    const head = h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, "Utilization Viewer ", h("span", {}, s.source ?? "")),
      tiles([
        ["Chips", fmt.count(s.chips)],
        ["Samples", fmt.count(s.samples), "counter samples, all chips"],
        ["Units", fmt.count(s.metrics), "distinct unit metrics"],
        ["Rows", fmt.count(s.rows)],
      ]));
    this.table = new DataTable({ columns: COLUMNS, sort: null, csvName: "utilization_viewer.csv",
      placeholder: "Filter by unit name" });
    this.chartBox.classList.add("xw-chart-wide"); // the bars take the view's width
    return [head, h("div", { className: "xw-body" }, this.chartBox, this.table.el)];
  }

  show(content) {
    this.table.setRows(rowsOf(content.rows));
    return content.charts;
  }
}
