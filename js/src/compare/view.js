// The comparison view: asks the kernel for its report, shows the summary, and lays steps, ops
// and memory out in tabs (tables are the shared DataTable; the step chart is BokehJS). The
// step picker sets the widget's `step`, on which the kernel aligns the two Trace Viewers below.
// data-ready on the root says when it is drawn ("1") or failed ("error").
import { embedItem, loadBokeh } from "../charts/bokeh.js";
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { request } from "../lib/transport.js";
import { AFTER, BEFORE, CSS } from "./style.js";
import { startView, stopView } from "../lib/view_state.js";

const STYLE_ID = "xw-compare-style";
const TABS = [["steps", "Steps"], ["ops", "Ops"], ["memory", "Memory"]];
const GROUP_LABELS = { op: "op", category: "category", program: "program", framework_op: "framework op" };
const STATUS_ORDER = ["slower", "faster", "added", "removed", "unchanged"];
const COUNT_ORDER = ["added", "removed", "more", "fewer", "same"];

function ensureStyle() {
  if (!document.getElementById(STYLE_ID)) document.head.append(h("style", { id: STYLE_ID }, CSS));
}

function badge(status) {
  return status ? h("span", { className: "xw-cmp-badge", dataset: { status } }, status) : fmt.DASH;
}

/** A signed change: red when it grew (slower, bigger), green when it shrank; uncoloured when
 * its status says it is noise (`unchanged`), so a screen of noise is not a screen of green. */
function signed(value, text, status = null) {
  if (value === null || value === undefined) return fmt.DASH;
  const shown = `${value > 0 ? "+" : ""}${text(value)}`;
  const real = status !== "unchanged";
  return h("span", { className: real && value > 0 ? "xw-cmp-up" : real && value < 0 ? "xw-cmp-down" : "" }, shown);
}
const judged = (text) => (v, row) => signed(v, text, row.status);

const time = (v) => fmt.time(v);
const mib = (v) => (v === null || v === undefined ? fmt.DASH : `${v.toFixed(3)} MiB`);
const pct = (v) => (v === null || v === undefined ? fmt.DASH : `${v.toFixed(1)}%`);
const se = (v) => (v === null || v === undefined || !Number.isFinite(v) ? fmt.DASH : `${v > 0 ? "+" : ""}${v.toFixed(1)}`);
const SE_TITLE = "The change in standard errors of the two runs' own spread; beyond k of them it is real";

export class CompareView {
  constructor(model, el) {
    ensureStyle();
    startView(this, model, el, "xw-compare");
    const title = model.get("title");
    this.status = h("div", { className: "xw-cmp-status" }, "Comparing…");
    this.summary = h("p", { className: "xw-cmp-summary" });
    this.summary.hidden = true;
    this.tabs = h("div", { className: "xw-cmp-tabs", role: "tablist" });
    this.panels = {};
    this.buttons = {};
    for (const [key, label] of TABS) {
      this.buttons[key] = h("button", { type: "button", role: "tab", dataset: { tab: key }, onclick: () => this.show(key) }, label);
      this.panels[key] = h("div", { className: "xw-cmp-panel", role: "tabpanel", dataset: { panel: key } });
    }
    this.tabs.append(...Object.values(this.buttons));
    el.replaceChildren(
      h("div", { className: "xw-cmp-title" }, h("b", {}, "Compare runs"),
        h("span", { className: "xw-cmp-run" }, h("span", { className: "xw-cmp-swatch", style: { background: BEFORE } }), "before: ", title.before),
        h("span", { className: "xw-cmp-run" }, h("span", { className: "xw-cmp-swatch", style: { background: AFTER } }), "after: ", title.after)),
      this.status, this.summary, this.tabs, ...Object.values(this.panels));
    this.show("steps");
    this.draw().catch((error) => this.fail(error));
  }

  show(key) {
    for (const [name, button] of Object.entries(this.buttons)) button.setAttribute("aria-selected", String(name === key));
    for (const [name, panel] of Object.entries(this.panels)) panel.hidden = name !== key;
    this.el.dataset.tab = key;
  }

  async draw() {
    const answer = await request(this.model, "report", {}, {
      onBusy: () => (this.status.textContent = "Waiting for the kernel…"),
    });
    if (!answer || this.disposed) return;
    const report = answer.content;
    this.summary.textContent = report.summary;
    this.summary.hidden = false;
    const chart = this.stepsPanel(report.steps, report);
    this.opsPanel(report);
    this.memoryPanel(report.memory);
    if (chart) {
      this.status.textContent = "Loading the chart…";
      const bokeh = await loadBokeh(this.model);
      if (this.disposed) return;
      this.views.push(await embedItem(chart, report.steps.chart, bokeh, this.abort.signal));
    }
    this.status.textContent = "";
    this.el.dataset.ready = "1";
  }

  message(panel, text) {
    panel.append(h("div", { className: "xw-cmp-message" }, text));
  }

  stepsPanel(steps, report) {
    const panel = this.panels.steps;
    if (steps.error) {
      this.message(panel, steps.error);
      return null;
    }
    const parts = rowsOf(steps.breakdown);
    panel.append(h("h3", {}, "The average step"),
      h("table", { className: "xw-cmp-breakdown" },
        h("tr", {}, ["", "before (ms)", "after (ms)", "change (ms)", "change (% of the step before)", "change (SE)", "status"]
          .map((t) => h("th", t === "change (SE)" ? { title: SE_TITLE } : {}, t))),
        parts.map((p) => h("tr", { dataset: { part: p.part, status: p.status } }, h("td", {}, p.part), h("td", {}, fmt.ms(p.before_ms)),
          h("td", {}, fmt.ms(p.after_ms)), h("td", {}, signed(p.change_ms, fmt.ms, p.status)),
          h("td", {}, signed(p.change_pct_of_step, (v) => `${v.toFixed(1)}%`, p.status)),
          h("td", {}, se(p.change_se)), h("td", {}, badge(p.status))))),
      h("p", { className: "xw-cmp-note" },
        `A part changed when its medians differ by more than ${report.k} standard errors of the runs' per-step values; `
        + `a step when its two times differ by more than ${report.k} times the runs' step-to-step spread.`));
    const picker = h("select", { className: "xw-cmp-step", title: "The step both Trace Viewers below start at",
      onchange: () => { this.model.set("step", Number(picker.value)); this.model.save_changes(); } },
    Array.from({ length: steps.aligned }, (_, i) => h("option", { value: String(i) },
      i === steps.most_changed ? `step ${i} (changed most)` : `step ${i}`)));
    picker.value = String(this.model.get("step"));
    this.model.on("change:step", () => { picker.value = String(this.model.get("step")); });
    const chart = h("div", { className: "xw-cmp-chart", dataset: { chart: "steps" } });
    const table = new DataTable({
      columns: [
        { key: "step", label: "Step" },
        { key: "step_before", label: "Step # before" },
        { key: "step_after", label: "Step # after" },
        { key: "duration_before_us", label: "Before", format: time },
        { key: "duration_after_us", label: "After", format: time },
        { key: "change_us", label: "Change", format: judged(time) },
        { key: "change_pct", label: "Change %", format: judged(pct) },
        { key: "change_se", label: "Change (spread)", format: se,
          title: "The change in units of the two runs' step-to-step spread" },
        { key: "status", label: "Status", align: "left", facet: true, format: badge },
        { key: "input_before_us", label: "Input before", format: time },
        { key: "input_after_us", label: "Input after", format: time },
        { key: "compute_before_us", label: "Compute before", format: time },
        { key: "compute_after_us", label: "Compute after", format: time },
      ],
      rows: rowsOf(steps.rows), sort: { key: "step", descending: false }, csvName: "compare_steps.csv",
    });
    panel.append(
      h("div", { className: "xw-cmp-controls" }, h("label", {}, "Align the Trace Viewers below on ", picker)),
      chart, h("h3", {}, "Step by step (paired by position)"), table.el);
    return chart;
  }

  opsPanel(report) {
    const panel = this.panels.ops;
    if (report.ops.error) {
      this.message(panel, report.ops.error);
      return;
    }
    if (report.ops.kind === "trace") {
      this.traceOpsPanel(panel, report);
      return;
    }
    const counts = h("span", { className: "xw-cmp-counts" });
    const showCounts = (rows) => {
      const n = Object.fromEntries(STATUS_ORDER.map((s) => [s, 0]));
      for (const row of rows) n[row.status] += 1;
      counts.replaceChildren(...STATUS_ORDER.filter((s) => n[s]).map((s) => h("span", { className: "xw-cmp-badge", dataset: { status: s } }, `${n[s]} ${s}`)));
    };
    const table = new DataTable({
      columns: [
        { key: "status", label: "Status", align: "left", facet: true, format: badge },
        { key: "program", label: "Program", align: "left", facet: true },
        { key: "category", label: "Category", align: "left", facet: true },
        { key: "name", label: "Name", align: "left" },
        { key: "name_after", label: "Name after", align: "left",
          format: (v, row) => (v && v !== row.name ? v : "") },
        { key: "time_before_us", label: "Before", format: time },
        { key: "time_after_us", label: "After", format: time },
        { key: "change_us", label: "Change", format: judged(time) },
        { key: "change_pct", label: "Change %", format: judged(pct) },
        { key: "change_se", label: "Change (SE)", format: se, title: SE_TITLE },
        { key: "occurrences_before", label: "Runs before" },
        { key: "occurrences_after", label: "Runs after" },
        { key: "matched_by", label: "Matched by", align: "left" },
      ],
      rows: rowsOf(report.ops.rows), csvName: "compare_ops.csv", // the kernel's order: largest change first
      placeholder: "Filter ops (words in any text column)",
    });
    showCounts(table.rows);
    const by = h("select", { className: "xw-cmp-by", title: "One row per op, or per group of ops",
      onchange: async () => {
        const answer = await request(this.model, "ops", { by: by.value }, { channel: "ops" });
        if (!answer || this.disposed) return;
        table.setRows(rowsOf(answer.content.rows));
        showCounts(table.rows);
        this.el.dataset.opsBy = answer.content.by;
      } },
    report.groupings.map((g) => h("option", { value: g }, GROUP_LABELS[g] ?? g)));
    this.el.dataset.opsBy = "op";
    panel.append(
      h("div", { className: "xw-cmp-controls" }, h("label", {}, "One row per ", by), counts),
      h("p", { className: "xw-cmp-note" },
        `Sorted by the size of the change. Unchanged: within ${report.k} standard errors of the op's own spread `
        + `(its occurrences within each run), or under ${report.floor_us} µs an occurrence; an op that ran once in both runs: `
        + `under ${Math.round(report.threshold * 100)}% of its time. `
        + "Ops are matched by name, or by their HLO where XLA renumbered them (matched by fingerprint)."),
      table.el);
  }

  /** Two PyTorch traces: every op and kernel by name in one profiler step of one rank of each
   * run, as HTA's TraceDiff counts them; the badges count names by how their count changed. */
  traceOpsPanel(panel, report) {
    const { rows, scope } = report.ops;
    const counts = h("span", { className: "xw-cmp-counts" });
    const table = new DataTable({
      columns: [
        { key: "count_change", label: "Runs", align: "left", facet: true, format: badge,
          title: "How often it ran: added, removed, more, fewer or the same number of times" },
        { key: "status", label: "Time", align: "left", facet: true, format: badge },
        { key: "device", label: "Device", align: "left", facet: true },
        { key: "name", label: "Name", align: "left" },
        { key: "occurrences_before", label: "Runs before" },
        { key: "occurrences_after", label: "Runs after" },
        { key: "time_before_us", label: "Before", format: time },
        { key: "time_after_us", label: "After", format: time },
        { key: "change_us", label: "Change", format: (v) => signed(v, time) },
        { key: "change_pct", label: "Change %", format: (v) => signed(v, pct) },
      ],
      rows: rowsOf(rows), csvName: "compare_trace_ops.csv", // the kernel's order: largest change first
      placeholder: "Filter ops and kernels (words in any text column)",
    });
    const n = {};
    for (const row of table.rows) n[row.count_change] = (n[row.count_change] ?? 0) + 1;
    counts.replaceChildren(...COUNT_ORDER.filter((c) => n[c]).map((c) => h("span", { className: "xw-cmp-badge", dataset: { status: c } }, `${n[c]} ${c}`)));
    const where = (ranks, steps) => `rank ${ranks.join(", ")}, step ${steps.join(", ")}`;
    const capital = (text) => text[0].toUpperCase() + text.slice(1);
    this.el.dataset.opsBy = "trace";
    panel.append(
      h("div", { className: "xw-cmp-controls" }, h("span", {}, "Ops and kernels by name"), counts),
      h("p", { className: "xw-cmp-note" },
        `${capital(where(scope.ranks_before, scope.steps_before))} of before against ${where(scope.ranks_after, scope.steps_after)} of after: `
        + "every event of the step by name, its count and total time, as HTA's TraceDiff.compare_traces counts them. "
        + `Sorted by the size of the change. Time unchanged: less than ${Math.round(report.threshold * 100)}% or ${report.floor_us} µs.`),
      table.el);
  }

  memoryPanel(memory) {
    const panel = this.panels.memory;
    if (memory.error) {
      this.message(panel, memory.error);
      return;
    }
    const modules = new DataTable({
      columns: [
        { key: "module", label: "Module", align: "left" },
        { key: "memory_space", label: "Memory space", align: "left", facet: true },
        { key: "peak_before_mib", label: "Peak before", format: mib },
        { key: "peak_after_mib", label: "Peak after", format: mib },
        { key: "change_mib", label: "Change", format: (v) => signed(v, mib) },
        { key: "change_pct", label: "Change %", format: (v) => signed(v, pct) },
        { key: "status", label: "Status", align: "left", facet: true, format: badge },
        { key: "ran_before", label: "Ran before" },
        { key: "ran_after", label: "Ran after" },
      ],
      rows: rowsOf(memory.rows), csvName: "compare_memory.csv",
    });
    panel.append(h("h3", {}, "Peak memory per module and memory space"), modules.el);
    if (!memory.module) return;
    panel.append(h("h3", {}, `Buffers live at the peak of ${memory.module} (${memory.memory_space})`));
    if (memory.buffers.error) {
      this.message(panel, memory.buffers.error);
      return;
    }
    const buffers = new DataTable({
      columns: [
        { key: "name", label: "Buffer", align: "left" },
        { key: "shape_before", label: "Shape before", align: "left" },
        { key: "shape_after", label: "Shape after", align: "left" },
        { key: "size_before_mib", label: "Before", format: mib },
        { key: "size_after_mib", label: "After", format: mib },
        { key: "change_mib", label: "Change", format: (v) => signed(v, mib) },
        { key: "status", label: "Status", align: "left", facet: true, format: badge },
      ],
      rows: rowsOf(memory.buffers.rows), csvName: "compare_buffers.csv",
    });
    panel.append(buffers.el);
  }

  fail(error) {
    if (this.disposed) return;
    this.status.replaceChildren(h("span", { className: "xw-cmp-error" }, String(error.message ?? error)));
    this.el.dataset.ready = "error";
  }

  dispose() {
    stopView(this);
    for (const views of this.views) views?.clear?.();
    this.views = [];
  }
}
