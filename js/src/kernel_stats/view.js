// Kernel stats: every GPU kernel by launch parameters and op (XProf's GPU kernel stats), or on
// TPU the custom-call kernels XLA has no cost model for. A PyTorch (Kineto) trace also gets HTA's
// kernel breakdown above the table: time per kernel type and overlap of types, per rank.
import { h } from "../lib/dom.js";
import { bandwidth, rate } from "../lib/columns.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, tiles } from "../lib/tool_view.js";

const yes = (v) => (v ? "yes" : "no");
/** TensorCore use: null where the kernel's name does not say (Kineto traces), not "no". */
export const tensorCore = (v) => (v === null || v === undefined ? "unknown" : yes(v));

const KINDS_CSS = `
.xw-ks .xw-ks-kinds { margin: 8px 10px; }
.xw-ks .xw-ks-kinds:empty { display: none; }
.xw-ks .xw-ks-kinds h4 { margin: 0 0 4px 0; font-size: 12px; font-weight: 600; }
.xw-ks .xw-ks-kinds table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.xw-ks .xw-ks-kinds th, .xw-ks .xw-ks-kinds td { padding: 1px 8px; text-align: right; border-bottom: 1px solid var(--xw-border); white-space: nowrap; }
.xw-ks .xw-ks-kinds th:nth-child(2), .xw-ks .xw-ks-kinds td:nth-child(2) { text-align: left; }
.xw-ks .xw-ks-share { display: inline-block; height: 8px; background: #4e79a7; vertical-align: middle; }
`;

/** HTA's kernel breakdown rows (rank, kernel_type, total_us, percentage) as a small table. */
export function kindsTable(rows) {
  if (!rows?.length) return [];
  return [h("h4", {}, "Time by kernel type (as Holistic Trace Analysis splits it)"),
    h("table", {}, h("thead", {}, h("tr", {}, ["Rank", "Kernel type", "Time", "Share", ""].map((c) => h("th", {}, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, h("td", {}, String(r.rank)), h("td", {}, r.kernel_type),
        h("td", {}, fmt.time(r.total_us)), h("td", {}, fmt.pct(r.percentage, 1)),
        h("td", {}, h("span", { className: "xw-ks-share", style: { width: `${Math.max(0, r.percentage)}px` } }))))))];
}

/** A percentage the trace may not state (a Kineto kernel's occupancy): null reads "unknown",
 * never 0%. */
export const statedPct = (v) => (v === null || v === undefined || Number.isNaN(v) ? "unknown" : fmt.pct(v, 0));

const NAME_CHARS = 48; // at 1,400 px the time columns stay in view beside the name and op
const OP_CHARS = 36;

/** Characters of a kernel name in a view `width` px wide: fewer where it is narrow (JupyterLab
 * beside its side panel, ~650 px), so the time columns stay beside the name; at most NAME_CHARS. */
export function nameChars(width) {
  if (!width) return NAME_CHARS;
  return Math.max(32, Math.min(NAME_CHARS, Math.floor((width - 560) / 7)));
}

// Time first after the name, as PyTorch's kernel view reads, then Tensor Core use (narrow: in view
// beside the name at 1,100 px, where the op's name would push it off); launch parameters after the op.
export const GPU_COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "kernel_name", label: "Kernel", align: "left", maxChars: NAME_CHARS },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_duration_us", label: "Total", format: fmt.time },
  { key: "avg_duration_us", label: "Avg", format: fmt.time },
  { key: "min_duration_us", label: "Min", format: fmt.time },
  { key: "max_duration_us", label: "Max", format: fmt.time },
  { key: "is_kernel_using_tensor_core", label: "Uses TC", format: tensorCore, facet: true, facetNull: "unknown", filter: false,
    title: "Whether the kernel's name says it runs on TensorCores; unknown where it does not say" },
  { key: "is_op_tensor_core_eligible", label: "Op TC-eligible", format: yes, facet: true, filter: false,
    title: "The op could use TensorCores (matrix or convolution op)" },
  { key: "op_name", label: "Op", align: "left", maxChars: OP_CHARS },
  { key: "occupancy_pct", label: "Occupancy", format: statedPct, optional: true,
    title: "Theoretical occupancy (on PyTorch traces the kernel's est. achieved occupancy); unknown where the trace does not state it" },
  { key: "registers_per_thread", label: "Regs", title: "Registers per thread", optional: "nonzero" },
  { key: "shmem_bytes", label: "Shared mem", format: fmt.bytes, title: "Static + dynamic shared memory" },
  { key: "block_dim", label: "Block", align: "left" },
  { key: "grid_dim", label: "Grid", align: "left" },
];

// TPU custom-call kernels: no launch parameters, the program they ran in.
export const CUSTOM_CALL_COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "kernel_name", label: "Kernel", align: "left", maxChars: NAME_CHARS },
  { key: "program_id", label: "Program", align: "left", facet: true },
  { key: "op_name", label: "Framework op", align: "left", maxChars: OP_CHARS },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_duration_us", label: "Total", format: fmt.time },
  { key: "avg_duration_us", label: "Avg", format: fmt.time },
  { key: "min_duration_us", label: "Min", format: fmt.time },
  { key: "max_duration_us", label: "Max", format: fmt.time },
];

// Formats of columns the table does not name, by the unit their key ends in.
const BY_UNIT = [[/_us$/, fmt.time], [/(_pct|occupancy)$/, statedPct], [/_gflops$/, rate], [/_gbps$/, bandwidth]];
const CAPITALS = new Set(["sm", "tc", "bw", "hbm", "flop"]);

/** Columns of the frame the table does not name (a Kineto trace's blocks per SM, estimated
 * achieved occupancy, FLOP rates): after the others, titled from their keys, formatted by their
 * unit, shown only where some row knows a value other than 0. */
export function extraColumns(keys, known) {
  const named = new Set(known.map((c) => c.key));
  return keys.filter((k) => !named.has(k)).map((key) => ({
    key, label: labelOf(key), optional: "nonzero",
    align: /(name|bound_by)$/.test(key) ? "left" : undefined,
    format: BY_UNIT.find(([unit]) => unit.test(key))?.[1],
  }));
}

/** A column's title from its key: "blocks_per_sm" -> "Blocks per SM", "est_occupancy_pct" ->
 * "Est occupancy %". */
export function labelOf(key) {
  const words = key.replace(/_pct$/, "_%").replace(/_(us|gflops|gbps)$/, "").split("_")
    .map((w) => (CAPITALS.has(w) ? w.toUpperCase() : w));
  const text = words.join(" ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The TensorCore tile: a share of the kernel time whose TensorCore use the names tell. */
export function tensorCoreTile(s) {
  const known = s.tensor_core_known_share;
  const partial = known !== null && known !== undefined && known < 1;
  return [partial ? "TensorCore kernels (of known)" : "TensorCore kernels", fmt.percent(s.tensor_core_share),
    partial ? `share of the kernel time whose TensorCore use the names tell (${fmt.percent(known)} of all ` +
      "kernel time; the rest is unknown)" : "share of kernel time in kernels that use TensorCores"];
}

export class KernelStatsView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-ks" });
  }

  build() {
    const s = this.summary;
    const tpu = s.kind === "TPU custom calls";
    const head = h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, tpu ? "Kernel Stats: TPU custom calls " : "Kernel Stats ",
        h("span", {}, s.source ?? "")),
      tiles([
        ["Kernels", fmt.count(s.kernels), "unique kernel, launch parameters and op"],
        ["Launches", fmt.count(s.launches)],
        ["Kernel time", fmt.time(s.total_us), "summed over every launch"],
        ...(tpu ? [] : [tensorCoreTile(s)]),
      ]),
      tpu ? h("p", { className: "xw-notes" }, "Pallas and Mosaic kernels are custom calls: XLA has no cost model for them, ",
        "so the op profile shows no utilization for them. Their time and occurrences are here.") : null);
    this.tpu = tpu;
    this.body = h("div", { className: "xw-body" });
    this.columnKeys = null;
    this.kinds = h("div", { className: "xw-ks-kinds" });
    return [h("style", {}, KINDS_CSS), head, this.kinds, this.chartBox, this.body];
  }

  /** The table for a frame of these columns (made again only when they change); its CSV has
   * the frame's columns in the frame's order, as to_dataframe(). */
  withColumnsOf(keys) {
    const same = this.columnKeys?.join("\n") === keys.join("\n");
    if (same) return;
    this.columnKeys = keys;
    const base = this.tpu ? CUSTOM_CALL_COLUMNS : GPU_COLUMNS;
    const fit = (c) => (c.key === "kernel_name" ? { ...c, maxChars: nameChars(this.el.clientWidth) } : c);
    const columns = [...base.filter((c) => keys.includes(c.key)).map(fit), ...extraColumns(keys, base)];
    this.table = new DataTable({
      columns, csvKeys: keys, sort: { key: "rank", descending: false },
      csvName: this.tpu ? "custom_call_kernels.csv" : "kernel_stats.csv",
      placeholder: "Filter by kernel or op name",
    });
    this.body.replaceChildren(this.table.el);
  }

  show(content) {
    this.kinds.replaceChildren(...kindsTable(content.breakdown));
    this.withColumnsOf(Object.keys(content.rows));
    this.table.setRows(rowsOf(content.rows));
    return content.charts;
  }

  statusText(content) {
    const n = content.rows.rank?.length ?? 0;
    return `${n} kernel${n === 1 ? "" : "s"}. Click a column title to sort; the CSV holds the rows shown.`;
  }
}
