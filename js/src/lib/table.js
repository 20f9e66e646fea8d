// DataTable: the one sortable, filterable table with CSV export that the tools' views share.
//
//   import { DataTable, TABLE_CSS } from "../lib/table.js";
//   const table = new DataTable({
//     columns: [
//       { key: "operation", label: "Operation", align: "left" },          // text: filtered by the box
//       { key: "type", label: "Type", align: "left", facet: true },       // facet: a pick list of its values
//                                             // (facetNull: "unknown" offers missing values too)
//       { key: "total_self_time_us", label: "Self time (µs)", format: fmt.time, title: "..." },
//     ],                                      // a column's sticky: true keeps it in view sideways
//                                             // (default: the first left column that is no facet)
//     rows: rowsOf(answer.content.columns),   // objects keyed by column key (rowsOf: columnar -> rows)
//     sort: { key: "total_self_time_us", descending: true },
//     csvName: "framework_op_stats.csv",      // the "Export as CSV" button's file name
//     csvKeys: [...],                         // optional: the CSV's columns (default: every column's key)
//     onRowClick: (row) => ..., rowKey: (row) => ...,  // optional
//     onChange: (rows) => ...,                // optional: the rows kept, in order, after each change
//   });
//   el.append(h("style", {}, TABLE_CSS), table.el);
//   table.setRows(newRows);                    // keeps sort, filter and facet choices
//
// Clicking a header sorts by it (numbers largest first, text A-Z; again reverses); missing
// values (null) always sort last. The filter box keeps rows where any text column contains the
// words typed (case-insensitive, every word must appear); facets keep rows of one value. The
// table scrolls sideways inside its box, its name column kept in view; long text is cut to a
// column's maxChars (elideName: plain text loses its middle, a C++ signature keeps its
// function's name), the whole text on hover. A column marked `optional` shows only where some
// row knows its value (`optional: "nonzero"`: 0 counts as unknown too; a function: the values
// it calls unknown). The CSV holds what the
// table shows (filtered, in its order) with the raw values under the column keys, columns left
// out included, the same header and units as the widget's `to_dataframe()` / `to_csv(path)`.
// `el.dataset.rows` is the number of rows the filter keeps, `el.dataset.hiddenColumns` the keys
// of the optional columns left out (the browser tests read them).
import { h } from "./dom.js";
import { elideName } from "./names.js";

export { elideMiddle } from "./names.js";

const DEFAULT_PAGE = 500;

/** Columnar kernel answer ({key: [values...]}) -> array of row objects. */
export function rowsOf(columns) {
  const keys = Object.keys(columns);
  const n = keys.length ? columns[keys[0]].length : 0;
  const rows = new Array(n);
  for (let i = 0; i < n; i++) {
    const row = {};
    for (const key of keys) row[key] = columns[key][i];
    rows[i] = row;
  }
  return rows;
}

/** Order of two cell values: numbers numerically, the rest as text; nulls after everything. */
export function compareValues(x, y, descending) {
  const xMissing = x === null || x === undefined || Number.isNaN(x);
  const yMissing = y === null || y === undefined || Number.isNaN(y);
  if (xMissing || yMissing) return xMissing === yMissing ? 0 : xMissing ? 1 : -1;
  let cmp;
  if (typeof x === "number" && typeof y === "number") cmp = x - y;
  else if (typeof x === "boolean" && typeof y === "boolean") cmp = Number(x) - Number(y);
  else cmp = String(x).localeCompare(String(y));
  return descending ? -cmp : cmp;
}

/** Rows sorted by `key` (stable: ties keep their order); a new array. */
export function sortRows(rows, key, descending) {
  if (!key) return rows.slice();
  return rows
    .map((row, order) => ({ row, order }))
    .sort((a, b) => compareValues(a.row[key], b.row[key], descending) || a.order - b.order)
    .map(({ row }) => row);
}

/** A facet's text for a cell: a missing value is `none` (a column's facetNull, say "unknown"),
 * else "" (not offered, as before). */
export function facetText(value, none = "") {
  return value === null || value === undefined ? none : String(value);
}

/**
 * Rows kept by the filter text (every whitespace-separated word must occur, any case, in one of
 * the `textKeys` columns) and by `facets` ({key: value}; an empty value keeps every row).
 */
export function filterRows(rows, textKeys, text, facets = {}, nullText = {}) {
  const words = String(text ?? "").toLowerCase().split(/\s+/).filter(Boolean);
  const chosen = Object.entries(facets).filter(([, v]) => v !== "" && v !== null && v !== undefined);
  if (!words.length && !chosen.length) return rows;
  return rows.filter((row) => {
    for (const [key, value] of chosen) if (facetText(row[key], nullText[key]) !== value) return false;
    if (!words.length) return true;
    const hay = textKeys.map((k) => String(row[k] ?? "").toLowerCase()).join("\n");
    return words.every((w) => hay.includes(w));
  });
}

function csvField(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return "";
  const text = typeof value === "boolean" ? (value ? "True" : "False") : String(value);
  return /[",\n\r]/.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
}

/** CSV text (RFC 4180, CRLF line ends) of the rows, one column per key, raw values. */
export function toCsv(rows, keys) {
  const lines = [keys.map(csvField).join(",")];
  for (const row of rows) lines.push(keys.map((k) => csvField(row[k])).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** Default cell text: integers with separators, other numbers to 4 significant digits. */
export function defaultFormat(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  if (typeof value === "number") {
    if (Number.isInteger(value)) return value.toLocaleString("en");
    const a = Math.abs(value);
    if (a >= 1e4) return value.toLocaleString("en", { maximumFractionDigits: 1 });
    return String(Number(value.toPrecision(4)));
  }
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

/** A value a column does not know: missing, NaN, empty or "unknown"; with `zero`, 0 too (a
 * rate or bandwidth that reads 0 where the trace has no cost for the op). */
export function isUnknown(value, zero = false) {
  return value === null || value === undefined || Number.isNaN(value) || value === "" ||
    value === "unknown" || (zero && value === 0);
}

/** The columns to show: an `optional` column only where some row knows its value
 * (optional: "nonzero" also takes 0 for unknown; a function says which values are unknown). */
export function shownColumns(columns, rows) {
  const unknown = (c, v) => (typeof c.optional === "function" ? c.optional(v) : isUnknown(v, c.optional === "nonzero"));
  return columns.filter((c) => !c.optional || rows.some((r) => !unknown(c, r[c.key])));
}

/** Start a browser download of `text` as a file named `name`. */
export function download(name, text, type = "text/csv") {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = h("a", { href: url, download: name, style: { display: "none" } });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export class DataTable {
  constructor(options) {
    this.columns = options.columns;
    this.csvName = options.csvName ?? "table.csv";
    this.csvKeys = options.csvKeys ?? null;
    this.pageSize = options.pageSize ?? DEFAULT_PAGE;
    this.onRowClick = options.onRowClick ?? null;
    this.onChange = options.onChange ?? null;
    this.rowKey = options.rowKey ?? null;
    this.sortKey = options.sort?.key ?? null;
    this.descending = options.sort?.descending ?? true;
    this.text = "";
    this.facets = {};
    this.limit = this.pageSize;
    this.active = null;
    this.textKeys = this.columns.filter((c) => c.filter ?? c.align === "left").map((c) => c.key);
    this.stickyKey = (this.columns.find((c) => c.sticky)
      ?? this.columns.find((c) => c.sticky === undefined && c.align === "left" && !c.facet))?.key;
    this.build(options.placeholder ?? "Filter (words in any text column)");
    this.setRows(options.rows ?? []);
  }

  build(placeholder) {
    this.filterInput = h("input", { type: "search", placeholder, className: "xw-dt-filter",
      title: "Keep rows whose text columns contain every word typed (any case)",
      oninput: () => { this.text = this.filterInput.value; this.limit = this.pageSize; this.render(); } });
    this.facetSelects = this.columns.filter((c) => c.facet).map((c) => {
      const select = h("select", { className: "xw-dt-facet", title: `Only rows of one ${c.label}`,
        dataset: { facet: c.key },
        onchange: () => { this.facets[c.key] = select.value; this.limit = this.pageSize; this.render(); } });
      return [c, h("label", {}, c.label, select), select];
    });
    this.countLabel = h("span", { className: "xw-dt-count" });
    this.csvButton = h("button", { type: "button", className: "xw-dt-csv",
      title: "Download the rows shown (filtered, in this order) as a CSV file",
      onclick: () => download(this.csvName, this.csv()) }, "Export as CSV");
    this.heads = this.columns.map((c) => h("th", {
      scope: "col", title: c.title ?? c.label, tabIndex: 0,
      className: this.cellClass(c),
      dataset: { key: c.key },
      onclick: () => this.sortBy(c.key),
      onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); this.sortBy(c.key); } },
    }, c.label));
    this.headRow = h("tr", {}, this.heads);
    this.body = h("tbody");
    this.more = h("button", { type: "button", className: "xw-dt-more", hidden: true,
      onclick: () => { this.limit = Infinity; this.render(); } });
    this.body.addEventListener("click", (e) => {
      const tr = e.target.closest?.("tr[data-index]");
      if (tr && this.onRowClick) this.onRowClick(this.shown[Number(tr.dataset.index)]);
    });
    this.el = h("div", { className: "xw-dt" },
      h("div", { className: "xw-dt-toolbar" }, this.filterInput,
        this.facetSelects.map(([, label]) => label),
        this.countLabel, this.csvButton),
      h("div", { className: "xw-dt-scroll" },
        h("table", { className: "xw-dt-table" }, h("thead", {}, this.headRow), this.body)),
      this.more);
  }

  /** New rows; the sort, filter text and facet choices stay. */
  setRows(rows) {
    this.rows = rows;
    this.shownKeys = new Set(shownColumns(this.columns, rows).map((c) => c.key));
    this.headRow.replaceChildren(...this.heads.filter((th) => this.shownKeys.has(th.dataset.key)));
    this.el.dataset.hiddenColumns = this.columns.filter((c) => !this.shownKeys.has(c.key)).map((c) => c.key).join(",");
    for (const [c, label, select] of this.facetSelects) {
      label.hidden = !this.shownKeys.has(c.key);
      const values = [...new Set(rows.map((r) => facetText(r[c.key], c.facetNull)))].filter(Boolean).sort();
      const keep = values.includes(this.facets[c.key]) ? this.facets[c.key] : "";
      select.replaceChildren(h("option", { value: "" }, "all"), ...values.map((v) => h("option", { value: v }, v)));
      select.value = keep;
      this.facets[c.key] = keep;
    }
    this.render();
  }

  sortBy(key) {
    if (key === this.sortKey) this.descending = !this.descending;
    else {
      this.sortKey = key;
      const sample = this.rows.find((r) => r[key] !== null && r[key] !== undefined)?.[key];
      this.descending = typeof sample === "number";
    }
    this.render();
  }

  /** The rows the table shows, in its order (before the page cut). */
  visibleRows() {
    const nullText = Object.fromEntries(this.columns.filter((c) => c.facetNull).map((c) => [c.key, c.facetNull]));
    return sortRows(filterRows(this.rows, this.textKeys, this.text, this.facets, nullText), this.sortKey, this.descending);
  }

  csv() {
    return toCsv(this.visibleRows(), this.csvKeys ?? this.columns.map((c) => c.key));
  }

  /** Mark the row whose rowKey is `key` (null: none). */
  highlight(key) {
    this.active = key;
    for (const tr of this.body.querySelectorAll("tr[data-active]")) delete tr.dataset.active;
    if (key === null || key === undefined || !this.rowKey) return;
    this.shown.forEach((row, i) => {
      if (this.rowKey(row) === key) this.body.children[i]?.setAttribute("data-active", "1");
    });
  }

  cellClass(column) {
    return [column.align === "left" ? "xw-dt-left" : "", column.key === this.stickyKey ? "xw-dt-sticky" : ""]
      .filter(Boolean).join(" ");
  }

  render() {
    const rows = this.visibleRows();
    this.shown = rows.slice(0, this.limit);
    for (const th of this.heads) {
      if (th.dataset.key === this.sortKey) th.setAttribute("aria-sort", this.descending ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    }
    const columns = this.columns.filter((c) => this.shownKeys.has(c.key));
    const cells = (row) => columns.map((c) => {
      const value = row[c.key];
      const left = c.align === "left";
      let shown = c.format ? c.format(value, row) : defaultFormat(value);
      if (left && typeof shown === "string") shown = elideName(shown, c.maxChars);
      return h("td", { className: this.cellClass(c),
        title: left && value !== null && value !== undefined ? String(value) : undefined }, shown);
    });
    this.body.replaceChildren(...this.shown.map((row, i) =>
      h("tr", { dataset: { index: String(i) }, className: this.onRowClick ? "xw-dt-clickable" : "" }, cells(row))));
    if (!rows.length) {
      this.body.append(h("tr", {}, h("td", { colSpan: columns.length, className: "xw-dt-left xw-dt-empty" },
        this.rows.length ? "No row matches the filter." : "No rows.")));
    }
    this.more.hidden = rows.length <= this.shown.length;
    this.more.textContent = `Show all ${rows.length.toLocaleString("en")} rows`;
    const noun = this.rows.length === 1 ? "row" : "rows";
    this.countLabel.textContent = rows.length === this.rows.length
      ? `${rows.length.toLocaleString("en")} ${noun}`
      : `${rows.length.toLocaleString("en")} of ${this.rows.length.toLocaleString("en")} ${noun}`;
    this.el.dataset.rows = String(rows.length);
    this.highlight(this.active);
    this.onChange?.(rows);
  }
}

/** The table's stylesheet (needs THEME's variables on an enclosing element). */
export const TABLE_CSS = `
.xw-dt { display: flex; flex-direction: column; min-width: 0; }
.xw-dt-toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 12px; padding: 6px 0; }
.xw-dt-toolbar label { display: inline-flex; align-items: center; gap: 5px; white-space: nowrap; }
.xw-dt-toolbar label[hidden] { display: none; }
.xw-dt input.xw-dt-filter, .xw-dt select { font: inherit; color: var(--xw-fg); background: var(--xw-bg);
  border: 1px solid var(--xw-border1); border-radius: 3px; padding: 2px 4px; height: 24px; }
.xw-dt input.xw-dt-filter { width: 240px; }
.xw-dt select { max-width: 220px; }
.xw-dt-count { color: var(--xw-fg2); }
.xw-dt button { font: inherit; padding: 2px 8px; cursor: pointer; color: var(--xw-accent);
  background: transparent; border: 1px solid var(--xw-accent); border-radius: 3px; }
.xw-dt button:hover { background: var(--xw-accent); color: var(--xw-bg); }
.xw-dt-csv { margin-left: auto; }
.xw-dt-more { align-self: flex-start; margin: 6px 0; }
.xw-dt-more[hidden] { display: none; }
.xw-dt-scroll { overflow: auto; max-height: 520px; border: 1px solid var(--xw-border); }
.xw-dt-table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
.xw-dt-table th { position: sticky; top: 0; z-index: 1; background: var(--xw-panel2); text-align: right;
  font-weight: 600; padding: 4px 6px; border-bottom: 1px solid var(--xw-border1);
  vertical-align: bottom; cursor: pointer; user-select: none; }
.xw-dt-table th.xw-dt-left, .xw-dt-table td.xw-dt-left { text-align: left; }
.xw-dt-table th[aria-sort="descending"]::after { content: " ▼"; font-size: 9px; }
.xw-dt-table th[aria-sort="ascending"]::after { content: " ▲"; font-size: 9px; }
.xw-dt-table td { padding: 2px 6px; text-align: right; white-space: nowrap; border-bottom: 1px solid var(--xw-border); }
.xw-dt-table .xw-dt-sticky { position: sticky; left: 0; background: var(--xw-bg);
  box-shadow: inset -1px 0 0 var(--xw-border); }
.xw-dt-table td.xw-dt-sticky { z-index: 1; }
.xw-dt-table th.xw-dt-sticky { z-index: 2; background: var(--xw-panel2); }
.xw-dt-table tbody tr:hover td { background: var(--xw-panel2); }
.xw-dt-table tr.xw-dt-clickable { cursor: pointer; }
.xw-dt-table tr[data-active="1"] td { background: var(--xw-panel2); box-shadow: inset 0 -1px 0 var(--xw-accent); }
.xw-dt-empty { color: var(--xw-fg2); }
`;
