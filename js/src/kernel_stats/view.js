// Kernel stats: every GPU kernel by launch parameters and op (XProf's GPU kernel stats), or on
// TPU the custom-call kernels XLA has no cost model for.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, tiles } from "../lib/tool_view.js";

const yes = (v) => (v ? "yes" : "no");

export const GPU_COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "kernel_name", label: "Kernel", align: "left" },
  { key: "registers_per_thread", label: "Regs", title: "Registers per thread" },
  { key: "shmem_bytes", label: "Shared mem", format: fmt.bytes, title: "Static + dynamic shared memory" },
  { key: "block_dim", label: "Block", align: "left" },
  { key: "grid_dim", label: "Grid", align: "left" },
  { key: "occupancy_pct", label: "Occupancy", format: (v) => fmt.pct(v, 0), title: "Theoretical occupancy" },
  { key: "is_op_tensor_core_eligible", label: "Op TC-eligible", format: yes, facet: true, filter: false,
    title: "The op could use TensorCores (matrix or convolution op)" },
  { key: "is_kernel_using_tensor_core", label: "Uses TC", format: yes, facet: true, filter: false,
    title: "The kernel's name says it runs on TensorCores" },
  { key: "op_name", label: "Op", align: "left" },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_duration_us", label: "Total", format: fmt.time },
  { key: "avg_duration_us", label: "Avg", format: fmt.time },
  { key: "min_duration_us", label: "Min", format: fmt.time },
  { key: "max_duration_us", label: "Max", format: fmt.time },
];

export const CUSTOM_CALL_COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "kernel_name", label: "Kernel", align: "left" },
  { key: "program_id", label: "Program", align: "left", facet: true },
  { key: "op_name", label: "Framework op", align: "left" },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_duration_us", label: "Total", format: fmt.time },
  { key: "avg_duration_us", label: "Avg", format: fmt.time },
  { key: "min_duration_us", label: "Min", format: fmt.time },
  { key: "max_duration_us", label: "Max", format: fmt.time },
];

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
        ...(tpu ? [] : [["TensorCore kernels", fmt.percent(s.tensor_core_share), "share of kernel time in kernels that use TensorCores"]]),
      ]),
      tpu ? h("p", { className: "xw-notes" }, "Pallas and Mosaic kernels are custom calls: XLA has no cost model for them, ",
        "so the op profile shows no utilization for them. Their time and occurrences are here.") : null);
    this.table = new DataTable({
      columns: tpu ? CUSTOM_CALL_COLUMNS : GPU_COLUMNS, sort: { key: "rank", descending: false },
      csvName: tpu ? "custom_call_kernels.csv" : "kernel_stats.csv",
      placeholder: "Filter by kernel or op name",
    });
    return [head, this.chartBox, h("div", { className: "xw-body" }, this.table.el)];
  }

  show(content) {
    this.table.setRows(rowsOf(content.rows));
    return content.charts;
  }

  statusText(content) {
    const n = content.rows.rank?.length ?? 0;
    return `${n} kernel${n === 1 ? "" : "s"}. Click a column title to sort; the CSV holds the rows shown.`;
  }
}
