// The MemoryProfile's controller: host and allocator pickers synced both ways with the kernel's
// traits, the chart template fetched once, then one `view` request per choice (a newer choice
// replaces an older request). data-ready on the root: "0" while a choice loads, "1" once drawn
// (a message included), "error" on failure; data-host and data-memory say what is drawn.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { chartChoiceMethods } from "../lib/chart_choices.js";
import { TimelineChart } from "./chart.js";
import { decodeSnapshots, hexAddress, snapshotAt, snapshotRows } from "./snapshots.js";
import { CSS } from "./style.js";

const STYLE_ID = "xw-memory-profile-style";
const COLUMNS = [
  { key: "op_name", label: "Op name", align: "left" },
  { key: "allocation_bytes", label: "Allocation size", format: fmt.bytes, title: "Bytes the allocator gave (allocation_bytes)" },
  { key: "requested_bytes", label: "Requested size", format: fmt.bytes, title: "Bytes the op asked for (requested_bytes)" },
  { key: "occurrences", label: "Occurrences", title: "Identical allocations live at the peak" },
  { key: "region_type", label: "Region type", align: "left", facet: true },
  { key: "data_type", label: "Data type", align: "left", facet: true, format: (v) => (v === "INVALID" ? fmt.DASH : v) },
  { key: "shape", label: "Shape", align: "left" },
];
/** A PyTorch trace's table: one row per allocation live at the peak. */
const KINETO_COLUMNS = [
  { key: "op_name", label: "Allocated by", align: "left", title: "The innermost cpu_op around the allocation on its thread" },
  { key: "allocation_bytes", label: "Size", format: fmt.bytes, title: "Bytes allocated (the [memory] event's Bytes)" },
  { key: "address", label: "Address", align: "left", format: hexAddress, optional: "nonzero" },
  { key: "allocated_us", label: "Allocated at", format: (v) => (v == null ? fmt.DASH : fmt.time(v)), title: "Time of the allocation on the profile's timeline" },
  { key: "step", label: "Step", format: (v) => (v < 0 ? fmt.DASH : String(v)) },
  { key: "thread", label: "Thread", align: "left", facet: true },
];

/** A PyTorch trace's memory per op: the TensorBoard plugin's Memory View, then the frees. */
const signedBytes = (v) => (v < 0 ? `−${fmt.bytes(-v)}` : fmt.bytes(v));
const OP_COLUMNS = [
  { key: "op_name", label: "Operator", align: "left", maxChars: 48, title: "The innermost cpu_op around each [memory] event on its thread" },
  { key: "calls", label: "Calls", format: fmt.count, title: "Calls of the op" },
  { key: "increase_bytes", label: "Size increase", format: signedBytes, title: "Allocated less freed while the op ran, its child ops included" },
  { key: "self_increase_bytes", label: "Self size increase", format: signedBytes, title: "Allocated less freed by the op itself, outside its child ops" },
  { key: "allocation_count", label: "Allocations", format: fmt.count, title: "Allocations, child ops included" },
  { key: "self_allocation_count", label: "Self allocations", format: fmt.count, title: "Allocations of the op itself" },
  { key: "allocation_bytes", label: "Allocation size", format: fmt.bytes, title: "Bytes allocated, child ops included (frees not taken off)" },
  { key: "self_allocation_bytes", label: "Self allocation size", format: fmt.bytes, title: "Bytes the op itself allocated" },
  { key: "free_count", label: "Frees", format: fmt.count, title: "Frees, child ops included" },
  { key: "self_free_count", label: "Self frees", format: fmt.count, title: "Frees of the op itself" },
  { key: "free_bytes", label: "Free size", format: fmt.bytes, title: "Bytes freed, child ops included" },
  { key: "self_free_bytes", label: "Self free size", format: fmt.bytes, title: "Bytes the op itself freed" },
];

/** Bytes, or "unknown" where the trace does not record them (null). */
const knownBytes = (v) => (v == null ? "unknown" : fmt.bytes(v));

function ensureStyle() {
  if (!document.getElementById(STYLE_ID)) document.head.append(h("style", { id: STYLE_ID }, CSS));
}

function tile(label, value, sub) {
  return h("div", { className: "xw-mp-tile" }, h("span", { className: "xw-mp-tile-label" }, label),
    h("span", { className: "xw-mp-tile-value" }, value), sub ? h("span", { className: "xw-mp-tile-sub" }, sub) : null);
}

/** The summary tiles of one allocator (XProf's memory profile summary), or of a PyTorch trace's
 * device ("kineto": allocated and reserved bytes, what is live at the peak). */
export function summaryTiles(s, kind = "allocator") {
  const step = s.peak_step < 0 ? "" : `, step ${s.peak_step}`;
  if (kind === "kineto") {
    const unrecorded = s.peak_reserved_bytes == null;
    return [
      tile("Allocations", fmt.count(s.num_allocs)),
      tile("Frees", fmt.count(s.num_deallocs)),
      tile("Peak allocated", fmt.bytes(s.peak_bytes), `at ${fmt.time(s.peak_time_us)}${step}${s.peak_op ? ` · by ${s.peak_op}` : ""}`),
      tile("Reserved at the peak", knownBytes(s.peak_reserved_bytes),
        unrecorded ? "the trace does not record it (PyTorch < 1.10)" : "held by the caching allocator (0: none)"),
      tile("Most reserved", knownBytes(s.max_reserved_bytes)),
      tile("Live at the peak", `${fmt.count(s.live_allocations)} allocations`,
        s.pairing === "size" ? "not yet freed; frees paired by size (no addresses in the trace)" : "made in the trace and not yet freed"),
    ];
  }
  return [
    tile("Allocations", fmt.count(s.num_allocs)),
    tile("Deallocations", fmt.count(s.num_deallocs)),
    tile("Memory capacity", fmt.bytes(s.capacity_bytes)),
    tile("Lifetime peak heap", fmt.bytes(s.lifetime_peak_bytes), "high-water mark, may be before the profile"),
    tile("Peak in the window", fmt.bytes(s.peak_bytes), `stack + heap, at ${fmt.time(s.peak_time_us)}${step}`),
    tile("At the peak", `${fmt.bytes(s.peak_stack_bytes)} stack · ${fmt.bytes(s.peak_heap_bytes)} heap`,
      `${fmt.bytes(s.peak_free_bytes)} free · fragmentation ${fmt.pct(100 * s.peak_fragmentation, 2)}`),
  ];
}

export class MemoryProfileView {
  constructor(model, el) {
    ensureStyle();
    this.mount(model, el, "xw-mp");
    this.snapshots = null;
    this.build();
    if (model.get("_error")) {
      this.message.replaceChildren(h("b", {}, "No allocator events in this profile"), model.get("_error"));
      this.message.hidden = false;
      this.body.hidden = true;
      this.el.dataset.state = "message";
      this.el.dataset.ready = "1";
      return;
    }
    this.begin([
      ["change:_choices", () => this.syncOptions()],
      ["change:host", () => this.choiceChanged()],
      ["change:memory_id", () => this.choiceChanged()],
    ]);
  }

  build() {
    const m = this.model;
    this.hostSelect = h("select", { title: "host", onchange: () => this.set("host", this.hostSelect.value) });
    this.memorySelect = h("select", { title: "allocator (memory id)", onchange: () => this.set("memory_id", this.memorySelect.value) });
    this.status = h("div", { className: "xw-mp-status" });
    this.summary = h("div", { className: "xw-mp-tiles" });
    this.chartBox = h("div", { className: "xw-mp-chart", dataset: { chart: "timeline" } });
    this.card = h("div", { className: "xw-mp-card" });
    this.note = h("div", { className: "xw-mp-note" });
    this.tableTitle = h("div", { className: "xw-mp-section" });
    this.kind = m.get("_kind") || "allocator";
    const kineto = this.kind === "kineto";
    this.table = new DataTable({ columns: kineto ? KINETO_COLUMNS : COLUMNS, sort: { key: "allocation_bytes", descending: true },
      csvName: "memory_breakdown.csv", placeholder: kineto ? "Filter by op or thread" : "Filter by op, region, data type or shape" });
    this.opsTitle = h("div", { className: "xw-mp-section" });
    this.opsTable = kineto ? new DataTable({ columns: OP_COLUMNS, sort: { key: "self_increase_bytes", descending: true },
      csvName: "memory_by_op.csv", placeholder: "Filter by op" }) : null;
    this.message = h("div", { className: "xw-mp-message", hidden: true });
    this.body = h("div", { className: "xw-mp-body" },
      h("div", { className: "xw-mp-summary" }, this.summary),
      h("div", { className: "xw-mp-timeline" }, h("div", { className: "xw-mp-plot" }, this.chartBox, this.note), this.card),
      h("div", { className: "xw-mp-breakdown" }, this.tableTitle, this.table.el),
      kineto ? h("div", { className: "xw-mp-breakdown xw-mp-ops" }, this.opsTitle, this.opsTable.el) : null);
    this.el.replaceChildren(
      h("div", { className: "xw-mp-head" }, h("span", { className: "xw-mp-title" }, "Memory profile"),
        h("span", { className: "xw-mp-source", title: m.get("title") }, m.get("title")),
        h("label", {}, "Host", this.hostSelect), h("label", {}, "Memory", this.memorySelect)),
      this.status, this.message, this.body);
    this.syncOptions();
  }

  syncOptions() {
    const choices = this.model.get("_choices") ?? {};
    const fill = (select, values) => {
      const current = [...select.options].map((o) => o.value);
      if (current.length !== values.length || current.some((v, i) => v !== values[i])) {
        select.replaceChildren(...values.map((v) => h("option", { value: v }, v)));
      }
    };
    fill(this.hostSelect, Object.keys(choices));
    fill(this.memorySelect, choices[this.model.get("host")] ?? []);
    this.hostSelect.value = this.model.get("host");
    this.memorySelect.value = this.model.get("memory_id");
    this.hostSelect.parentElement.hidden = this.hostSelect.options.length < 2;
    this.memorySelect.disabled = this.memorySelect.options.length < 2;
  }

  makeCharts(bokeh, content) {
    return new TimelineChart(bokeh, content, this.chartBox, {
      hover: (i) => this.showCard(i),
      click: (timeUs) => this.link(timeUs),
    });
  }

  loadingText() {
    return `Loading ${this.model.get("memory_id")} on ${this.model.get("host")}…`;
  }

  draw(content, buffers) {
    this.status.textContent = "";
    this.el.dataset.host = content.host;
    this.el.dataset.memory = content.memory_id;
    const s = content.summary;
    this.scale = content.scale;
    const kineto = content.kind === "kineto";
    this.summary.replaceChildren(...summaryTiles(s, content.kind));
    this.snapshots = decodeSnapshots(buffers, content.timeline.texts, content.timeline.extra);
    this.charts.update(this.snapshots, content.unit, s, content.free_hidden || content.reserved_unknown);
    const t = content.timeline;
    this.note.textContent = (t.points < t.snapshots
      ? `${fmt.count(t.snapshots)} snapshots, ${fmt.count(t.points)} drawn (the largest stack + heap of each window). ` : "")
      + (content.reserved_unknown ? "The trace records no reserved bytes (PyTorch before 1.10 did not): allocated bytes only."
        : content.free_hidden ? `${kineto ? "Reserved" : "Free"} memory is hidden (it dwarfs the rest); click its legend entry to show it.` : "");
    this.tableTitle.textContent = `Allocations live at the peak (${fmt.bytes(s.peak_bytes)} at ${fmt.time(s.peak_time_us)}`
      + `${s.peak_step < 0 ? "" : `, step ${s.peak_step}`}): `
      + (kineto ? "one row per allocation not yet freed, and what was allocated before the trace"
        : "what the allocator held, identical ones merged");
    this.table.setRows(rowsOf(content.breakdown));
    if (this.opsTable && content.ops) {
      this.opsTitle.textContent = "Memory by op (PyTorch's TensorBoard plugin's Memory View): the allocations and frees "
        + "inside each op, child ops included; self: the op's own, outside its child ops";
      this.opsTable.setRows(rowsOf(content.ops));
    }
    this.showCard(snapshotAt(this.snapshots.time_us, s.peak_time_us));
    this.el.dataset.ready = "1";
  }

  showCard(i) {
    const s = this.snapshots;
    if (!s || !s.time_us.length) return;
    this.card.dataset.snapshot = String(i);
    const rows = snapshotRows(s, i, this.scale, this.kind);
    const hint = this.model.get("_linked")
      ? "Click the timeline to show that moment in the Trace Viewer." : "Hover the timeline to see its snapshots here.";
    this.card.replaceChildren(...[
      h("div", { className: "xw-mp-card-title" }, `${rows[1][1]} at ${fmt.time(s.time_us[i])}`),
      h("dl", {}, rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      h("div", { className: "xw-mp-card-hint" }, hint),
      this.linkSent ? h("div", { className: "xw-mp-card-sent" }, this.linkSent) : null].filter(Boolean));
  }

  /** Ask the suite for a moment in the Trace Viewer: the time, and the event of the snapshot there. */
  link(timeUs) {
    if (!this.snapshots?.time_us.length) return;
    const i = snapshotAt(this.snapshots.time_us, timeUs);
    this.model.set("link", { tool: "trace", time_us: timeUs, event: this.snapshots.event[i], at: Date.now() });
    this.model.save_changes();
    this.linkSent = `link = {tool: "trace", time_us: ${timeUs.toFixed(3)}}`;
    this.showCard(i);
  }
}

Object.assign(MemoryProfileView.prototype, chartChoiceMethods);
