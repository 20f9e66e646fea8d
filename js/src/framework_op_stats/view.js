// Framework op stats: time by framework op on the device and the host, as XProf's TensorFlow
// stats page shows it: pies of self time by op and by type, then the table. On a PyTorch trace
// a "Group by" list also offers the Operator view of PyTorch's TensorBoard plugin: one row per
// op (or op and input shape, or op and call stack), device and host time side by side.
import * as fmt from "../lib/format.js";
import { DataTable, isUnknown, rowsOf } from "../lib/table.js";
import { ToolView, tiles, traitBox } from "../lib/tool_view.js";
import { h } from "../lib/dom.js";

const pct = (v) => fmt.pct(v, 2);
const rate = (v) => (v ? fmt.si(v * 1e9, "FLOP/s") : "0");
const bandwidth = (v) => (v ? fmt.si(v * 1e9, "B/s") : "0");
const ratio = (v) => (v === null || v === undefined ? fmt.DASH : fmt.sig3(v));

export const COLUMNS = [
  { key: "rank", label: "Rank" },
  { key: "host_or_device", label: "Host/device", align: "left", facet: true },
  { key: "type", label: "Type", align: "left", facet: true },
  { key: "operation", label: "Operation", align: "left" },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "total_time_us", label: "Total time", format: fmt.time },
  { key: "avg_time_us", label: "Avg time", format: fmt.time },
  { key: "total_self_time_us", label: "Self time", format: fmt.time, title: "Total self time: time minus nested ops" },
  { key: "avg_self_time_us", label: "Avg self", format: fmt.time },
  { key: "device_total_self_time_pct", label: "Device %", format: pct, title: "Share of the device's self time" },
  { key: "device_cumulative_total_self_time_pct", label: "Device cum. %", format: pct },
  { key: "host_total_self_time_pct", label: "Host %", format: pct, title: "Share of the host's self time" },
  { key: "host_cumulative_total_self_time_pct", label: "Host cum. %", format: pct },
  // The cost columns show where some row has a cost: a PyTorch trace without shapes, or a run
  // with no cost model, has none (all 0 and "Unknown").
  { key: "measured_flop_rate_gflops", label: "FLOP rate", format: rate, optional: "nonzero",
    title: "FLOPs per second over the op's time" },
  { key: "model_flop_rate_gflops", label: "Model FLOP rate", format: rate, optional: "nonzero" },
  { key: "measured_memory_bw_gbps", label: "Memory BW", format: bandwidth, optional: "nonzero",
    title: "Bytes accessed per second (GB/s in the CSV)" },
  { key: "operational_intensity", label: "FLOP/byte", format: ratio, optional: "nonzero" },
  { key: "bound_by", label: "Bound by", align: "left", facet: true,
    optional: (v) => v === "Unknown" || isUnknown(v) },
  { key: "execution_mode", label: "Mode", align: "left", facet: true, title: "Eager or Function (graph)" },
];

const share = (v) => (v === null || v === undefined ? "unknown" : fmt.pct(v, 2));
const yesNo = (v) => (v ? "Yes" : "No");

/** The Operator view's columns (kineto_operators.COLUMNS), in the plugin's order. */
export const OPERATOR_COLUMNS = [
  { key: "operation", label: "Name", align: "left", maxChars: 40 },
  { key: "input_shape", label: "Input shape", align: "left", optional: true, maxChars: 32,
    title: "The op's Input Dims (record_shapes=True); [] where it has none" },
  { key: "call_stack", label: "Call stack", align: "left", optional: true, maxChars: 48,
    title: "The op's Python stack, innermost first (with_stack=True)" },
  { key: "type", label: "Type", align: "left", facet: true },
  { key: "calls", label: "Calls" },
  { key: "device_self_time_us", label: "Device self", format: fmt.time, optional: "nonzero",
    title: "Summed durations of the GPU work the op launched itself" },
  { key: "device_total_time_us", label: "Device total", format: fmt.time, optional: "nonzero",
    title: "Device self time of the op and of every op nested in it" },
  { key: "host_self_time_us", label: "Host self", format: fmt.time,
    title: "Duration minus every event directly inside (PyTorch's key_averages rule)" },
  { key: "host_total_time_us", label: "Host total", format: fmt.time },
  { key: "tensor_core_eligible", label: "TC eligible", format: yesNo, align: "left", facet: true,
    title: "Its name is one autocast runs in lower precision, or it (or an op inside) launched Tensor Core work" },
  { key: "tensor_core_self_pct", label: "TC self %", format: share, optional: true,
    title: "Share of the device self time in Tensor Core kernels; unknown where some of it ran in kernels whose use the name does not say" },
  { key: "tensor_core_total_pct", label: "TC total %", format: share, optional: true,
    title: "Share of the device total time in Tensor Core kernels; unknown as above" },
];

const GROUPINGS = {
  host_or_device: "XProf (host and device rows)",
  op: "Operator",
  input_shape: "Operator + input shape",
  call_stack: "Operator + call stack",
};

export class FrameworkOpStatsView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-fw", traits: ["include_idle", "group_by"] });
  }

  build() {
    const s = this.summary;
    const share = (idle, total) => (total ? fmt.percent(idle / total) : fmt.DASH);
    const head = h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, "Framework Op Stats ", h("span", {}, s.source ?? "")),
      tiles([
        ...(s.device_kind ? [
          ["Device ops", fmt.count(s.device_ops), "framework ops that ran on the device"],
          ["Device time", fmt.time(s.device_time_us), "summed over cores / devices"],
          ["Device idle", share(s.device_idle_us, s.device_time_us)]] : []),
        ...(s.host_ops || s.host_time_us ? [
          ["Host ops", fmt.count(s.host_ops), "framework ops that ran on the host"],
          ["Host time", fmt.time(s.host_time_us), "summed over threads, first op to last"],
          ["Host idle", share(s.host_idle_us, s.host_time_us)]] : []),
      ]),
      (s.notes ?? []).length ? h("p", { className: "xw-notes" }, s.notes.join(" ")) : null);
    const groupings = s.groupings ?? ["host_or_device"];
    this.groupSelect = h("select", { className: "xw-fw-group", title: "XProf's table, or PyTorch's Operator view",
      onchange: () => { this.model.set("group_by", this.groupSelect.value); this.model.save_changes(); } },
    groupings.map((g) => h("option", { value: g }, GROUPINGS[g] ?? g)));
    const syncGroup = () => { this.groupSelect.value = this.model.get("group_by"); };
    syncGroup();
    this.model.on("change:group_by", syncGroup);
    this.idleBox = traitBox(this.model, "include_idle", "Include idle",
      "Show idle time as an IDLE row per side; without it, shares are of busy time");
    const controls = h("div", { className: "xw-controls" },
      groupings.length > 1 ? h("label", {}, "Group by ", this.groupSelect) : null, this.idleBox);
    this.table = new DataTable({
      columns: COLUMNS, sort: { key: "rank", descending: false },
      csvName: "framework_op_stats.csv", placeholder: "Filter by operation or type",
    });
    // Only a PyTorch trace offers the Operator view: an xplane's view keeps its one table.
    this.operatorTable = groupings.length > 1 ? new DataTable({
      columns: OPERATOR_COLUMNS, sort: { key: "device_self_time_us", descending: true },
      csvName: "operators.csv", placeholder: "Filter by name, shape, stack or type",
    }) : null;
    return [head, controls, this.chartBox,
      h("div", { className: "xw-body" }, this.table.el, this.operatorTable?.el)];
  }

  show(content) {
    const operators = Boolean(content.group_by) && this.operatorTable !== null;
    // Inline styles: the table and the label set their own display, which `hidden` would lose to.
    this.table.el.style.display = operators ? "none" : "";
    if (this.operatorTable) this.operatorTable.el.style.display = operators ? "" : "none";
    this.idleBox.style.display = operators ? "none" : "";
    this.el.dataset.groupBy = content.group_by ?? "host_or_device";
    if (operators) {
      const rows = rowsOf(content.rows);
      const gpu = rows.some((r) => r.device_total_time_us > 0);
      this.operatorTable.sortKey = gpu ? "device_self_time_us" : "host_self_time_us";
      this.operatorTable.descending = true;
      this.operatorTable.setRows(rows);
    } else {
      this.table.setRows(rowsOf(content.rows));
    }
    return content.charts;
  }

  statusText(content) {
    const n = (content.rows.rank ?? content.rows.operation)?.length ?? 0;
    const stacks = content.group_by === "call_stack" && !(content.rows.call_stack ?? []).some(Boolean)
      ? " The trace has no call stacks (record with with_stack=True)." : "";
    return `${n} rows. Click a column title to sort; the CSV holds the rows shown.${stacks}`;
  }
}
