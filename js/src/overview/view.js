// The Overview: run environment, step time and its breakdown, a PyTorch trace's step time in
// its profiler plugin's categories (torch.js) and GPU time breakdowns (HTA's: gpu.js), device compute precision,
// recommendations (in the suite each with a button opening the tool it comes from), the top HLO
// ops beside the top framework ops. Every share's header says what it is a share of (the kernel's
// share_labels: the two op tables divide by different times). Everything from the profile is set
// as text (h() makes text nodes), never as HTML.
import { request } from "../lib/transport.js";
import { h } from "../lib/dom.js";
import { count, deviceLabel, percent, si, time, utilizationColor } from "../lib/format.js";
import { gpuCards } from "./gpu.js";
import { torchCard } from "./torch.js";
import { CSS } from "./style.js";

/** Table headers: a string, or [key of a share column, fallback] labelled by what it divides by. */
function headers(columns, labels, titles) {
  return h("thead", {}, h("tr", {}, columns.map((c) => (Array.isArray(c)
    ? h("th", { className: "xw-ov-share", dataset: { share: c[0] }, title: titles[c[0]] ?? labels[c[0]] ?? c[1] }, labels[c[0]] ?? c[1])
    : h("th", {}, c)))));
}

function tile(label, value) {
  return h("div", { className: "xw-ov-tile" },
    h("span", { className: "xw-ov-label" }, label), h("span", { className: "xw-ov-value" }, value));
}

function runCard(run) {
  const tiles = [
    tile("Device type", deviceLabel(run.device_kind, run.device_type, run.devices)),
    tile("Device cores", run.device_core_count ? count(run.device_core_count) : "none (CPU only)"),
    tile(run.host_count === 1 ? "Host" : `Hosts (${count(run.host_count)})`, run.hosts.join(", ")),
    tile("Profile length", time(run.duration_ms * 1000)),
    tile("Events", count(run.events)),
  ];
  if (run.flops_utilization !== null) tiles.push(tile("FLOPS utilization", percent(run.flops_utilization)));
  if (run.bandwidth_utilization !== null) tiles.push(tile("HBM bandwidth utilization", percent(run.bandwidth_utilization)));
  if (run.idle_share !== null) tiles.push(tile("Device idle", percent(run.idle_share)));
  return h("section", { className: "xw-ov-card", dataset: { card: "run" } }, h("h3", {}, "Run environment"),
    h("div", { className: "xw-ov-tiles" }, tiles));
}

/** Compute time by precision: a two-part bar and the shares (null without compute ops). On a
 * CPU run the XLA ops are the host's, and the card says so, as the step breakdown does. */
export function precisionCard(precision, labels = {}) {
  if (!precision) return null;
  const parts = [["16-bit", precision.compute_16bit_share, "#59a14f"], ["32-bit", precision.compute_32bit_share, "#4e79a7"]];
  const where = precision.where === "host" ? "Host" : "Device";
  const of = (labels.compute_16bit_share ?? "% of device compute time").replace(/^% /, "");
  return h("section", { className: "xw-ov-card", dataset: { card: "precision" } }, h("h3", {}, `${where} compute precision`),
    h("div", { className: "xw-ov-tiles" }, parts.map(([label, share]) => tile(`${label} compute`, percent(share))),
      tile(`${where} compute time`, time(precision.compute_us))),
    h("div", { className: "xw-ov-bar", role: "img", "aria-label": "compute time by precision" },
      parts.map(([label, share, color]) => h("span", { title: `${label}: ${percent(share)} ${of}`,
        style: { width: `${Math.max(0, share) * 100}%`, background: color } }))));
}

function stepCard(steps, breakdown, labels) {
  if (!steps) return null;
  const of = labels.share_of_step_time ?? "% of step time";
  const share = (part) => `${percent(part.share_of_step_time)} ${of.replace(/^% /, "")}`;
  const bar = h("div", { className: "xw-ov-bar", role: "img", "aria-label": "step time breakdown" },
    breakdown.map((part) => h("span", {
      title: `${part.label}: ${time(part.avg_ms * 1000)} (${share(part)})`,
      style: { width: `${Math.max(0, part.share_of_step_time) * 100}%`, background: part.color },
    })));
  const legend = h("ul", { className: "xw-ov-legend", dataset: { share: "share_of_step_time" } }, breakdown.map((part) =>
    h("li", {}, h("span", { className: "xw-ov-swatch", style: { background: part.color } }),
      `${part.label} ${time(part.avg_ms * 1000)} (${share(part)})`)));
  return h("section", { className: "xw-ov-card" }, h("h3", {}, "Step time"),
    h("div", { className: "xw-ov-tiles" },
      tile("Steps", count(steps.count)), tile("Average", time(steps.avg_ms * 1000)),
      tile("Std dev", time(steps.std_ms * 1000)), tile("Min / max",
        `${time(steps.min_ms * 1000)} / ${time(steps.max_ms * 1000)}`),
      tile("Waiting for input", `${percent(steps.input_share)} (${steps.verdict} input-bound)`)),
    bar, legend);
}

function opsCard(ops, labels, titles) {
  if (!ops.length) return null;
  const util = (u) => h("td", { style: u === null ? {} : { background: utilizationColor(u) } }, percent(u));
  return h("section", { className: "xw-ov-card", dataset: { card: "hlo-ops" } }, h("h3", {}, "Top ops by time (HLO)"),
    h("div", { className: "xw-ov-scroll" }, h("table", { className: "xw-ov-table" },
      headers(["Op", "Category", "Time", ["share_of_device_time", "Share"], "FLOPS util", "BW util", "Bound by"], labels, titles),
      h("tbody", {}, ops.map((op) => h("tr", {},
        h("td", { className: "xw-ov-name", title: op.name }, op.name), h("td", {}, op.category),
        h("td", {}, time(op.time_us)), h("td", {}, percent(op.share_of_device_time)),
        util(op.flops_utilization), util(op.bandwidth_utilization), h("td", {}, op.bound_by || "—")))))));
}

/** XProf's top device framework ops: self time, its share and running share, FLOP rate. */
export function frameworkOpsCard(ops, labels = {}, titles = {}) {
  if (!ops.length) return null;
  return h("section", { className: "xw-ov-card", dataset: { card: "framework-ops" } },
    h("h3", {}, "Top framework ops by self time"),
    h("div", { className: "xw-ov-scroll" }, h("table", { className: "xw-ov-table xw-ov-fit" },
      headers(["Framework op", "Type", "Self time", ["share_of_framework_self_time", "Share"],
        ["cumulative_share_of_framework_self_time", "Cumulative"], "FLOP rate"], labels, titles),
      h("tbody", {}, ops.map((op) => h("tr", {},
        h("td", { className: "xw-ov-name", title: op.operation }, op.operation), h("td", {}, op.type),
        h("td", {}, time(op.self_time_us)), h("td", {}, percent(op.share_of_framework_self_time)),
        h("td", {}, percent(op.cumulative_share_of_framework_self_time)), h("td", {}, si(op.flop_rate_gflops * 1e9, "FLOP/s"))))))));
}

/** The recommendations, each tagged with the rule that made it (XProf's smart-suggestion rules
 * or ours); in the suite each has a button opening the tool it comes from. */
export function adviceCard(items, tools, model, xprofRules = []) {
  if (!items.length) return null;
  const open = (tool) => {
    model.set("link", { tool, at: Date.now() }); // `at`: asking twice is a new change
    model.save_changes();
  };
  return h("section", { className: "xw-ov-card xw-ov-advice", dataset: { card: "advice" } }, h("h3", {}, "Recommendations"),
    h("ul", {}, items.map(({ text, tool, rule }) => h("li", {}, ruleTag(rule, xprofRules), text, tools[tool]
      ? h("button", { type: "button", className: "xw-link", dataset: { tool }, title: `Open the ${tools[tool]} tab`,
        onclick: () => open(tool) }, `Open ${tools[tool]}`) : null))));
}

function ruleTag(rule, xprofRules) {
  if (!rule) return null;
  const xprof = xprofRules.includes(rule);
  return h("span", { className: "xw-ov-rule", dataset: { rule, by: xprof ? "xprof" : "ours" },
    title: xprof ? "XProf's smart-suggestion rule" : "xprof_widgets' own rule (XProf has none for this)" }, rule);
}

function listCard(title, items, className) {
  if (!items.length) return null;
  return h("section", { className: `xw-ov-card ${className}` }, h("h3", {}, title),
    h("ul", {}, items.map((text) => h("li", {}, text))));
}

async function render({ model, el }) {
  if (!document.getElementById("xw-overview-css")) {
    document.head.append(h("style", { id: "xw-overview-css" }, CSS));
  }
  const root = h("div", { className: "xw-overview" }, h("div", { className: "xw-ov-status" }, "Summarizing the profile…"));
  el.replaceChildren(root);
  const busy = () => root.firstChild?.classList?.contains("xw-ov-status") &&
    (root.firstChild.textContent = "Kernel busy — waiting…");
  try {
    const answer = await request(model, "overview", {}, { onBusy: busy });
    const o = answer.content;
    const labels = o.share_labels ?? {};
    const titles = o.share_titles ?? {};
    root.replaceChildren(...[runCard(o.run), stepCard(o.steps, o.step_breakdown, labels), torchCard(o.torch),
      ...gpuCards(o.gpu),
      precisionCard(o.precision, labels),
      adviceCard(o.recommendations, o.tools ?? {}, model, o.xprof_rules ?? []), opsCard(o.top_ops, labels, titles),
      frameworkOpsCard(o.top_framework_ops, labels, titles),
      listCard("Notes", o.notes, "xw-ov-notes")].filter(Boolean));
    el.dataset.ready = "1";
  } catch (err) {
    root.replaceChildren(h("div", { className: "xw-ov-error" }, String(err.message || err)));
    el.dataset.ready = "error";
  }
}

export default { render };
