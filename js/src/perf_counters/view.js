// Perf counters (XProf's tool of that name): one row per counter and sample, filters by host,
// chip, kernel, sample and set, a word filter over the counter names, values in decimal and hex.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, traitBox } from "../lib/tool_view.js";

/** A counter's value in decimal and in hex (XProf's "Value (Hex)"). */
export function decHex(value) {
  if (value === null || value === undefined) return fmt.DASH;
  return `${fmt.count(value)} · 0x${BigInt(Math.round(value)).toString(16)}`;
}

export const COLUMNS = [
  { key: "host", label: "Host", align: "left", facet: true, filter: false },
  { key: "chip", label: "Chip", facet: true },
  { key: "kernel", label: "Kernel", align: "left", facet: true, filter: false },
  { key: "sample", label: "Sample", facet: true },
  { key: "counter", label: "Counter", align: "left" },
  { key: "value", label: "Value (Dec · Hex)", format: decHex, title: "The counter's value" },
  { key: "description", label: "Description", align: "left", filter: false },
  { key: "set", label: "Set", align: "left", facet: true, filter: false },
];

export class PerfCountersView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-pc", traits: ["nonzero_only"] });
  }

  build() {
    const s = this.summary;
    const head = this.head("Perf Counters", [
      ["Counter samples", fmt.count(s.rows)],
      ["Chips", fmt.count(s.chips)],
      ["Samples", fmt.count(s.samples), "per chip and kernel"],
      ["Counters", fmt.count(s.counters), "distinct names"],
      ["Non-zero", fmt.count(s.nonzero)],
    ]);
    const controls = h("div", { className: "xw-controls" },
      traitBox(this.model, "nonzero_only", "Only non-zero counters", "XProf's default: hide counters whose value is 0"));
    this.table = new DataTable({ columns: COLUMNS, sort: { key: "counter", descending: false },
      csvName: "perf_counters.csv", placeholder: "Filter by counter name" });
    return [head, controls, h("div", { className: "xw-body" }, this.table.el)];
  }

  show(content) {
    this.table.setRows(rowsOf(content.rows));
    return [];
  }

  statusText(content) {
    const n = content.rows.counter.length;
    return n ? "" : "No counter to show (every one is 0: untick “Only non-zero counters”).";
  }
}
