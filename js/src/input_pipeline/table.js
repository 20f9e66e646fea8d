// The input-op table: plain DOM (names stay text), sorted by clicking a column title; a second
// click reverses the order. The header's aria-sort says how it is sorted.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";

const FORMATS = {
  count: fmt.count,
  total_time_ms: fmt.ms,
  total_time_pct: (v) => fmt.pct(v),
  self_time_ms: fmt.ms,
  self_time_pct: (v) => fmt.pct(v),
};

/** Rows sorted by column `index`, numbers numerically, text alphabetically; a new array. */
export function sortRows(rows, index, descending) {
  const sign = descending ? -1 : 1;
  return rows
    .map((row, order) => ({ row, order }))
    .sort((a, b) => {
      const x = a.row[index];
      const y = b.row[index];
      const cmp = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return cmp !== 0 ? sign * cmp : a.order - b.order;
    })
    .map(({ row }) => row);
}

export class OpTable {
  /** ops: {titles, columns, rows} from the kernel's report. */
  constructor(ops) {
    this.ops = ops;
    this.sortIndex = ops.columns.indexOf("self_time_ms");
    this.descending = true;
    this.body = h("tbody");
    this.heads = ops.titles.map((title, i) =>
      h("th", { scope: "col", dataset: { column: ops.columns[i] }, onclick: () => this.sortBy(i) }, title));
    this.el = h("div", { className: "xw-ip-table-wrap" },
      h("table", { className: "xw-ip-table" }, h("thead", {}, h("tr", {}, this.heads)), this.body));
    this.render();
  }

  sortBy(index) {
    this.descending = index === this.sortIndex ? !this.descending : typeof this.ops.rows[0]?.[index] === "number";
    this.sortIndex = index;
    this.render();
  }

  render() {
    const { columns } = this.ops;
    this.heads.forEach((th, i) => {
      if (i === this.sortIndex) th.setAttribute("aria-sort", this.descending ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    });
    const rows = sortRows(this.ops.rows, this.sortIndex, this.descending);
    this.body.replaceChildren(...rows.map((row) => h("tr", {}, row.map((value, i) => {
      const format = FORMATS[columns[i]];
      return h("td", { className: format ? "xw-ip-num" : "" }, format ? format(value) : value);
    }))));
  }
}
