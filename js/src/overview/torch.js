// A PyTorch (Kineto) trace's step time as PyTorch's TensorBoard plugin splits it (from
// xprof_widgets/analysis/kineto/step_breakdown.py): one stacked bar per step, each as long as the
// step relative to the longest, in the plugin's categories; the average step; and per GPU its
// utilization, estimated SM efficiency and achieved occupancy (only where the trace has GPU work).
import { h } from "../lib/dom.js";
import { DASH, percent, time } from "../lib/format.js";

export const COLORS = {
  kernel_us: "#4e79a7", memcpy_us: "#f28e2b", memset_us: "#edc948", communication_us: "#b07aa1",
  runtime_us: "#e15759", dataloader_us: "#59a14f", cpu_exec_us: "#76b7b2", other_us: "#bab0ac",
};

/** One step's parts as a bar `width` (a fraction of the row) wide. */
function stepBar(label, row, parts, width) {
  const total = row.duration_us;
  return h("div", { className: "xw-ov-bar xw-ov-minibar", role: "img", "aria-label": label,
    style: { width: `${Math.max(0, width) * 100}%` } },
  parts.map(({ column, label: name }) => h("span", {
    title: `${name}: ${time(row[column])} (${percent(total > 0 ? row[column] / total : 0)} of the step)`,
    style: { width: `${total > 0 ? Math.max(0, row[column]) / total * 100 : 0}%`, background: COLORS[column] },
  })));
}

function legend(parts, average) {
  const of = (column) => (average.duration_us > 0 ? ` (${percent(average[column] / average.duration_us)})` : "");
  return h("ul", { className: "xw-ov-legend", dataset: { legend: "torch-steps" } }, parts.map(({ column, label }) =>
    h("li", {}, h("span", { className: "xw-ov-swatch", style: { background: COLORS[column] } }),
      `${label} ${time(average[column])}${of(column)}`)));
}

function gpuTable(gpu) {
  if (!gpu.length) return null;
  const share = (v) => (v === null || v === undefined || Number.isNaN(v) ? DASH : percent(v));
  const occupancy = (v) => (v === null || v === undefined || Number.isNaN(v) ? DASH : percent(v / 100));
  const many = new Set(gpu.map((g) => g.host)).size > 1;
  return h("div", { className: "xw-ov-scroll" }, h("table", { className: "xw-ov-table", dataset: { table: "torch-gpu" } },
    h("thead", {}, h("tr", {}, [many ? "Host / GPU" : "GPU", "GPU utilization", "Est. SM efficiency",
      "Est. achieved occupancy"].map((c) => h("th", {}, c)))),
    h("tbody", {}, gpu.map((g) => h("tr", {},
      h("td", {}, many ? `${g.host} / ${g.device}` : String(g.device)), h("td", {}, share(g.gpu_utilization)),
      h("td", {}, share(g.est_sm_efficiency)), h("td", {}, occupancy(g.est_achieved_occupancy_pct)))))));
}

/** The card; null without the breakdown (not a Kineto trace, or no steps). */
export function torchCard(torch) {
  if (!torch) return null;
  const hosts = new Set(torch.steps.map((s) => s.host));
  const longest = Math.max(...torch.steps.map((s) => s.duration_us), 0);
  const name = (s) => (hosts.size > 1 ? `${s.host} · ${s.step}` : s.step);
  const rows = torch.steps.map((s) => h("tr", {},
    h("td", {}, name(s)), h("td", {}, time(s.duration_us)),
    h("td", { className: "xw-ov-barcell xw-ov-stepcell" },
      stepBar(`step ${name(s)} breakdown`, s, torch.parts, longest > 0 ? s.duration_us / longest : 0))));
  const average = torch.average[0];
  return h("section", { className: "xw-ov-card", dataset: { card: "torch-steps" } },
    h("h3", {}, "Step time breakdown (PyTorch profiler plugin)"),
    h("div", { className: "xw-ov-scroll" }, h("table", { className: "xw-ov-table" },
      h("thead", {}, h("tr", {}, ["Step", "Time", ""].map((c) => h("th", {}, c)))), h("tbody", {}, rows))),
    legend(torch.parts, average),
    h("p", { className: "xw-ov-hint" }, hosts.size > 1
      ? `Average step (legend: ${average.host}): ${torch.average.map((a) => `${a.host} ${time(a.duration_us)}`).join(", ")}. `
      : `Average step ${time(average.duration_us)}. `,
    "Each instant of a step counts once, for the first category in this order that covers it; Other is what none covers."),
    gpuTable(torch.gpu));
}
