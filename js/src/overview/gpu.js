// A PyTorch (Kineto) trace's GPU time as Holistic Trace Analysis splits it (from
// xprof_widgets/analysis/kineto/gpu_time.py): the temporal breakdown, kernel types and their overlaps,
// communication overlapping computation, and each stream's idle time by cause. Per rank.
import { h } from "../lib/dom.js";
import { count, pct, percent, time } from "../lib/format.js";

export const TEMPORAL = [
  ["idle", "Idle", "#bab0ac"], ["compute", "Compute", "#4e79a7"], ["non_compute", "Non-compute", "#f28e2b"],
];
export const IDLE = [
  ["host_wait", "Host wait", "#e15759", "the kernel's launch started after the previous kernel ended"],
  ["kernel_wait", "Kernel wait", "#edc948", "gaps under 30 us between kernels: launch overhead"],
  ["other", "Other", "#bab0ac", "longer gaps while the next kernel was already launched"],
];

/** A bar of parts: [[label, fraction, color], ...]. */
function bar(label, parts) {
  return h("div", { className: "xw-ov-bar xw-ov-minibar", role: "img", "aria-label": label },
    parts.map(([name, share, color]) => h("span", { title: `${name}: ${percent(share)}`,
      style: { width: `${Math.max(0, share ?? 0) * 100}%`, background: color } })));
}

function legend(parts) {
  return h("ul", { className: "xw-ov-legend" }, parts.map(([, label, color, title]) =>
    h("li", { title: title ?? "" }, h("span", { className: "xw-ov-swatch", style: { background: color } }), label)));
}

function table(head, rows) {
  return h("div", { className: "xw-ov-scroll" }, h("table", { className: "xw-ov-table" },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))), h("tbody", {}, rows)));
}

/** Idle, compute and non-compute shares of each rank's kernel time (HTA's temporal breakdown). */
export function temporalCard(gpu) {
  return h("section", { className: "xw-ov-card", dataset: { card: "gpu-temporal" } },
    h("h3", {}, "GPU time breakdown"),
    table(["Rank", "Kernel time", "Idle", "Compute", "Non-compute", ""], gpu.temporal.map((r) => h("tr", {},
      h("td", {}, String(r.rank)), h("td", {}, time(r.kernel_us)),
      ...TEMPORAL.map(([key]) => h("td", { title: time(r[`${key}_us`]) }, pct(r[`${key}_pct`], 2))),
      h("td", { className: "xw-ov-barcell" }, bar(`rank ${r.rank} time breakdown`,
        TEMPORAL.map(([key, label, color]) => [label, r[`${key}_pct`] / 100, color])))))),
    legend(TEMPORAL),
    h("p", { className: "xw-ov-hint" }, "From the first kernel's start to the last one's end: idle when nothing ",
      "runs on the GPU, compute while a computation kernel runs, non-compute while only communication or memory runs."));
}

/** Time per kernel type and overlap of types, and communication overlapping computation. */
export function kernelTypesCard(gpu) {
  const talking = gpu.overlap.filter((r) => r.communication_us > 0);
  return h("section", { className: "xw-ov-card", dataset: { card: "gpu-kernel-types" } },
    h("h3", {}, "GPU kernel types"),
    kindTable(gpu.kernel_types),
    talking.length
      ? table(["Rank", "Communication", "Overlapping computation", "Share"], talking.map((r) => h("tr", {},
        h("td", {}, String(r.rank)), h("td", {}, time(r.communication_us)), h("td", {}, time(r.overlap_us)),
        h("td", { dataset: { overlap: String(r.rank) } }, pct(r.comp_comm_overlap_pctg, 2)))))
      : null,
    familiesLine(gpu));
}

/** Which communication families ran (per rank), or which were looked for when none did. */
export function familiesLine(gpu) {
  const ran = gpu.communication ?? [];
  const looked = (gpu.communication_families ?? ["NCCL"]).join(", ");
  if (!ran.length) {
    return h("p", { className: "xw-ov-hint", dataset: { communication: "none" } },
      `No communication kernels ran (looked for ${looked}), so nothing overlaps computation.`);
  }
  const many = new Set(ran.map((r) => r.rank)).size > 1;
  const parts = ran.map((r) => `${r.family}${many ? ` (rank ${r.rank})` : ""}: ${count(r.kernels)} ` +
    `kernel${r.kernels === 1 ? "" : "s"}, ${time(r.total_us)}`);
  return h("p", { className: "xw-ov-hint", dataset: { communication: "ran" } },
    `Communication kernels by family: ${parts.join("; ")}. Families looked for: ${looked}.`);
}

/** HTA's kernel breakdown as a table (shared with Kernel Stats). */
export function kindTable(rows) {
  return table(["Rank", "Kernel type", "Time", "Share"], rows.map((r) => h("tr", {},
    h("td", {}, String(r.rank)), h("td", {}, r.kernel_type), h("td", {}, time(r.total_us)),
    h("td", {}, pct(r.percentage, 1)))));
}

/** Each stream's idle time split by cause (HTA's idle time breakdown). */
export function idleCard(gpu) {
  return h("section", { className: "xw-ov-card", dataset: { card: "gpu-idle" } },
    h("h3", {}, "GPU idle time by stream"),
    table(["Rank", "Stream", ...IDLE.map(([, label]) => label), "Idle", ""], gpu.idle.map((r) => h("tr", {},
      h("td", {}, String(r.rank)), h("td", {}, String(r.stream)),
      ...IDLE.map(([key]) => h("td", {}, time(r[`${key}_us`]))), h("td", {}, time(r.idle_us)),
      h("td", { className: "xw-ov-barcell" }, bar(`stream ${r.stream} idle time`,
        IDLE.map(([key, label, color]) => [label, r.idle_us > 0 ? r[`${key}_us`] / r.idle_us : 0, color])))))),
    legend(IDLE));
}

/** The three GPU cards of a Kineto trace; none without GPU work. */
export function gpuCards(gpu) {
  return gpu ? [temporalCard(gpu), kernelTypesCard(gpu), idleCard(gpu)] : [];
}
