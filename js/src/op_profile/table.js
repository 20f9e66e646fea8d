// The grouped op table: groups (programs, categories, framework ops) expand to their top ops,
// fusions expand to the instructions inside them. Rows come columnar from the kernel's `table`
// answer; expansion is remembered by label path so it survives re-sorting and re-grouping.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { elideMiddle } from "../lib/table.js";

/** An intensity (FLOP/byte): 85, 7.42, 0.13. */
export function ratio(x) {
  if (x === null || x === undefined) return fmt.DASH;
  if (x >= 100) return x.toFixed(0);
  if (x >= 1) return x.toFixed(2);
  return x.toPrecision(2);
}

export const COLUMNS = [
  ["share", "Time %", "Share of the total device time (of busy time with idle excluded)"],
  ["cumulative", "Cum. %", "Cumulative share within the parent row, in display order"],
  ["time", "Total time", "Time summed over every occurrence on every core"],
  ["occurrences", "Runs", "Occurrences: how many times the op ran"],
  ["avg", "Avg time", "Total time / occurrences"],
  ["name", "Name", "Group, op or fused instruction; ▸ expands"],
  ["framework", "Framework op", "The framework (JAX/TF) op the HLO op came from"],
  ["flops_util", "FLOPS util", "Achieved FLOP/s over the device's peak (green high, red low)"],
  ["bw_util", "BW util", "Achieved HBM bandwidth over the device's peak (green high, red low)"],
  ["rate", "FLOP rate", "FLOPs per second while the op runs"],
  ["intensity", "FLOP/byte", "Arithmetic intensity: FLOPs per HBM byte read or written"],
  ["bound", "Bound by", "compute when FLOPS utilization is the higher one, else memory"],
];
const LEFT = new Set(["name", "framework"]);
const NAME_CHARS = 48; // longer names lose their middle (the cell's title has them whole)
const FRAMEWORK_CHARS = 36;

export class OpTable {
  /**
   * callbacks: hover(op), leave(nextElement), select(op), needFused(op) -> Promise<rows|null>.
   * hasPeaks: whether utilization can be shown at all (else cells say "no peak").
   */
  constructor(callbacks) {
    this.callbacks = callbacks;
    this.rows = [];
    this.byParent = new Map();
    this.expanded = new Set();
    this.fused = new Map(); // op -> rows | "loading" | null
    this.hasPeaks = true;
    this.active = null;
    this.body = h("tbody");
    this.table = h(
      "table",
      { className: "xw-op-table" },
      h("thead", {}, h("tr", {}, COLUMNS.map(([key, label, title]) =>
        h("th", { className: `${LEFT.has(key) ? "xw-op-left" : ""}${key === "name" ? " xw-op-name" : ""}`, title },
          label)))),
      this.body,
    );
    this.body.addEventListener("click", (e) => this.onClick(e));
    this.body.addEventListener("mouseover", (e) => this.onHover(e));
    this.table.addEventListener("mouseleave", (e) => this.callbacks.leave(e.relatedTarget));
  }

  /** New rows (a `table` answer), keeping what was expanded. */
  setRows(rows, hasPeaks) {
    this.hasPeaks = hasPeaks;
    this.rows = rows;
    this.byParent = new Map();
    this.pathOf = new Map();
    for (const row of rows) {
      const siblings = this.byParent.get(row.parent) ?? [];
      siblings.push(row);
      this.byParent.set(row.parent, siblings);
      const parentPath = row.parent >= 0 ? this.pathOf.get(row.parent) : "";
      this.pathOf.set(row.row, `${parentPath}/${row.kind}:${row.label}`);
    }
    this.render();
  }

  isExpanded(row) {
    return this.expanded.has(this.pathOf.get(row.row));
  }

  toggle(row) {
    const path = this.pathOf.get(row.row);
    if (this.expanded.has(path)) this.expanded.delete(path);
    else this.expanded.add(path);
    if (row.kind === "op" && row.fused && !this.fused.has(row.op) && this.expanded.has(path)) {
      this.fused.set(row.op, "loading");
      this.callbacks.needFused(row.op).then((fusedRows) => {
        this.fused.set(row.op, fusedRows);
        this.render();
      });
    }
    this.render();
  }

  render() {
    const out = [];
    const walk = (parent) => {
      for (const row of this.byParent.get(parent) ?? []) {
        out.push(this.rowElement(row));
        if (!this.isExpanded(row)) continue;
        if (row.kind === "group") walk(row.row);
        else if (row.kind === "op" && row.fused) out.push(...this.fusedElements(row));
      }
    };
    walk(-1);
    if (!out.length) {
      out.push(h("tr", {}, h("td", { colSpan: COLUMNS.length, className: "xw-op-left xw-op-muted" },
        "No op matches the filter.")));
    }
    this.body.replaceChildren(...out);
    this.highlight(this.active);
  }

  rowElement(row) {
    const expandable = row.kind === "group" || (row.kind === "op" && row.fused);
    const toggle = expandable
      ? h("span", { className: "xw-op-toggle", dataset: { toggle: "1" }, role: "button",
        title: row.kind === "group" ? "show its ops" : "show the instructions inside the fusion" },
      this.isExpanded(row) ? "▾" : "▸")
      : h("span", { className: "xw-op-toggle" }, "");
    const name = h("td", { className: "xw-op-left xw-op-name", title: row.label,
      style: { paddingLeft: `${6 + 16 * row.level}px` } }, toggle, elideMiddle(row.label, NAME_CHARS));
    if (row.kind === "group") name.append(h("span", { className: "xw-op-muted" }, ` (${row.children})`));
    const cells = {
      share: this.shareCell(row.time_share),
      cumulative: h("td", {}, fmt.percent(row.cumulative_share)),
      time: h("td", {}, fmt.time(row.time_us)),
      occurrences: h("td", {}, row.kind === "idle" ? "" : fmt.count(row.occurrences)),
      avg: h("td", {}, row.kind === "idle" ? "" : fmt.time(row.avg_time_us)),
      name,
      framework: h("td", { className: "xw-op-left xw-op-framework", title: row.framework_op || "" },
        elideMiddle(row.framework_op || "", FRAMEWORK_CHARS)),
      flops_util: this.utilCell(row, row.flops_utilization),
      bw_util: this.utilCell(row, row.bandwidth_utilization),
      rate: h("td", {}, row.kind === "idle" ? "" : fmt.si(row.flop_rate, "FLOP/s")),
      intensity: h("td", {}, row.kind === "idle" ? "" : ratio(row.arithmetic_intensity)),
      bound: h("td", {}, row.bound_by || ""),
    };
    return h("tr", { dataset: { row: String(row.row), kind: row.kind, level: String(row.level),
      op: String(row.op) } }, COLUMNS.map(([key]) => cells[key]));
  }

  shareCell(share) {
    const width = Math.max(0, Math.min(1, share ?? 0)) * 100;
    return h("td", { className: "xw-op-share" },
      h("div", { className: "xw-op-share-bar", style: { width: `${width}%` } }), fmt.percent(share));
  }

  utilCell(row, value) {
    if (row.kind === "idle") return h("td", {}, "");
    if (value === null || value === undefined) {
      const text = this.hasPeaks ? "no cost model" : "no peak";
      const title = this.hasPeaks
        ? "XLA has no cost model for this op (a custom call such as a Pallas or Mosaic kernel, or no HLO): its FLOPs and bytes are unknown"
        : "no peak FLOP rate or bandwidth known for this device: pass peak_tflops= / peak_gbps=";
      return h("td", { className: "xw-op-util xw-op-muted", title }, text);
    }
    return h("td", { className: "xw-op-util", style: { background: fmt.utilizationColor(value) } },
      fmt.percent(value));
  }

  fusedElements(row) {
    const fused = this.fused.get(row.op);
    const level = row.level + 1;
    if (fused === "loading" || fused === undefined) {
      return [h("tr", { dataset: { kind: "fused" } }, h("td", { colSpan: COLUMNS.length,
        className: "xw-op-left", style: { paddingLeft: `${22 + 16 * level}px` } }, "loading…"))];
    }
    if (!fused || !fused.length) {
      return [h("tr", { dataset: { kind: "fused" } }, h("td", { colSpan: COLUMNS.length,
        className: "xw-op-left xw-op-muted", style: { paddingLeft: `${22 + 16 * level}px` } },
      "The profile carries no HLO for this fusion."))];
    }
    return fused.map((f) => {
      const cells = Object.fromEntries(COLUMNS.map(([key]) => [key, h("td", {}, "")]));
      cells.name = h("td", { className: "xw-op-left xw-op-name", title: f.expression,
        style: { paddingLeft: `${22 + 16 * (level + f.depth - 1)}px` } },
      elideMiddle(f.name, NAME_CHARS), h("span", { className: "xw-op-muted" }, ` ${f.opcode}${f.flops ? `, ${fmt.si(f.flops, "FLOP")}` : ""}`));
      cells.framework = h("td", { className: "xw-op-left xw-op-framework", title: f.framework_op },
        elideMiddle(f.framework_op ?? "", FRAMEWORK_CHARS));
      return h("tr", { dataset: { kind: "fused" } }, COLUMNS.map(([key]) => cells[key]));
    });
  }

  rowAt(target) {
    const tr = target.closest?.("tr[data-row]");
    if (!tr || !this.body.contains(tr)) return null;
    return this.rows[Number(tr.dataset.row)] ?? null;
  }

  onClick(e) {
    const row = this.rowAt(e.target);
    if (!row) return;
    if (e.target.dataset?.toggle || row.kind === "group") {
      this.toggle(row);
      return;
    }
    if (row.kind === "op") this.callbacks.select(row.op);
  }

  onHover(e) {
    const row = this.rowAt(e.target);
    if (row && row.kind === "op") this.callbacks.hover(row.op);
  }

  highlight(op) {
    this.active = op;
    for (const tr of this.body.querySelectorAll("tr[data-active]")) delete tr.dataset.active;
    if (op === null || op === undefined) return;
    for (const tr of this.body.querySelectorAll(`tr[data-op="${op}"][data-kind="op"]`)) tr.dataset.active = "1";
  }
}
