// DOM for everything around the canvas. Profile strings only ever become text nodes
// (textContent / createTextNode): they are data from user programs, never markup.
import { h } from "../lib/dom.js";
import { formatDuration, formatTime } from "./timescale.js";

export const KEYS = [
  ["W / S", "zoom in / out around the mouse"],
  ["A / D", "pan left / right"],
  ["wheel", "scroll tracks; Ctrl/⌘ + wheel zooms; horizontal wheel pans"],
  ["drag", "use the current tool"],
  ["1 / !", "select tool: click an event, Ctrl/⌘-click adds, drag selects a box"],
  ["2 / @", "pan tool: drag moves the view"],
  ["3 / #", "zoom tool: drag a region to zoom to it"],
  ["4 / $", "timing tool: drag marks an interval and shows its length"],
  ["m", "mark the selection's span and show its length"],
  ["f", "zoom to the selection"],
  ["0", "show the whole trace"],
  ["/", "search (the whole trace); Enter / Shift+Enter step through hits"],
  ["Esc", "close this help; else clear the mark and give the keys back to the notebook"],
  ["?", "show or hide this help"],
];

export function helpOverlay(onClose) {
  return h(
    "div",
    { className: "xw-tv-help", hidden: true, role: "dialog", "aria-label": "Trace viewer keys" },
    h("div", { className: "xw-tv-help-title" }, "Keys", h("button", { className: "xw-tv-close", onclick: onClose, title: "close" }, "×")),
    h("table", {}, KEYS.map(([key, what]) => h("tr", {}, h("td", { className: "xw-tv-key" }, key), h("td", {}, what)))),
  );
}

function kvTable(rows) {
  return h(
    "table",
    { className: "xw-tv-kv" },
    rows.filter(([, v]) => v !== undefined && v !== null && v !== "").map(([k, v]) =>
      h("tr", {}, h("th", {}, k), h("td", {}, v instanceof Node ? v : String(v))),
    ),
  );
}

function statValue(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") return Number.isInteger(value) ? value.toLocaleString("en") : String(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function statsBlock(title, stats) {
  const entries = Object.entries(stats ?? {});
  if (!entries.length) return null;
  return h("div", { className: "xw-tv-block" }, h("div", { className: "xw-tv-subtitle" }, title),
    kvTable(entries.map(([k, v]) => [k, statValue(v)])));
}

function flowList(title, flows, onGo, trackName) {
  if (!flows?.length) return null;
  return h(
    "div",
    { className: "xw-tv-block" },
    h("div", { className: "xw-tv-subtitle" }, `${title} (${flows.length})`),
    h("ul", { className: "xw-tv-flows" }, flows.slice(0, 50).map((flow) =>
      h("li", {}, h("button", { className: "xw-tv-link", onclick: () => onGo(flow.event) }, String(flow.name ?? `event ${flow.event}`)),
        ` at ${formatTime(flow.start_us ?? 0, 0.001)}`, flow.track !== undefined ? ` · ${trackName(flow.track)}` : ""),
    )),
  );
}

/** The details of one event (the `details` answer) as DOM. */
export function detailsView(d, { trackName, onGo, link = null }) {
  const track = typeof d.track === "number" ? trackName(d.track) : d.track;
  const full = d.full_name && d.full_name !== d.name ? h("pre", { className: "xw-tv-hlo" }, d.full_name) : null;
  return h(
    "div",
    { className: "xw-tv-detail" },
    h("div", { className: "xw-tv-title" }, String(d.name ?? ""), link),
    full,
    kvTable([
      ["Start", d.start_us !== undefined ? formatTime(d.start_us, 0.001) : undefined],
      ["Duration", d.duration_us !== undefined ? formatDuration(d.duration_us) : undefined],
      ["Self time", d.self_us !== undefined ? formatDuration(d.self_us) : undefined],
      ["Track", [d.section, track].filter((x) => x !== undefined && x !== "").join(" / ")],
      ["Host", d.host],
      ["Depth", d.depth],
      ["Event", d.event],
    ]),
    statsBlock("Stats", d.stats),
    statsBlock("Op stats", d.metadata_stats),
    flowList("Flows in", d.flows_in, onGo, trackName),
    flowList("Flows out", d.flows_out, onGo, trackName),
  );
}

const AGG_COLUMNS = ["name", "count", "total_us", "avg_us", "min_us", "max_us"];

/** The `aggregate` answer as rows of objects, whether it came columnar or as row lists. */
export function aggregateRows(content) {
  const rows = content.rows ?? content;
  if (Array.isArray(rows)) {
    return rows.map((r) => (Array.isArray(r) ? Object.fromEntries(AGG_COLUMNS.map((k, i) => [k, r[i]])) : r));
  }
  const n = rows.name?.length ?? 0;
  return Array.from({ length: n }, (_, i) => Object.fromEntries(AGG_COLUMNS.map((k) => [k, rows[k]?.[i]])));
}

/** The selection's aggregate table: name, count, total, avg, min, max (sorted by total). */
export function aggregateView(rows, { nEvents, span, truncated }) {
  const sorted = [...rows].sort((a, b) => b.total_us - a.total_us);
  const head = ["Name", "Count", "Total", "Avg", "Min", "Max"];
  const total = sorted.reduce((s, r) => s + (r.total_us ?? 0), 0);
  return h(
    "div",
    { className: "xw-tv-detail" },
    h("div", { className: "xw-tv-title" },
      `${nEvents.toLocaleString("en")} events selected${truncated ? " (capped)" : ""}`,
      span ? ` · span ${formatDuration(span)}` : "", ` · total ${formatDuration(total)}`),
    h("table", { className: "xw-tv-agg" },
      h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)))),
      h("tbody", {}, sorted.slice(0, 500).map((r) => h("tr", {},
        h("td", { className: "xw-tv-name" }, String(r.name)),
        h("td", {}, Number(r.count).toLocaleString("en")),
        h("td", {}, formatDuration(r.total_us)),
        h("td", {}, formatDuration(r.avg_us)),
        h("td", {}, formatDuration(r.min_us)),
        h("td", {}, formatDuration(r.max_us)),
      ))),
    ),
  );
}

/** Tooltip lines for a slice under the mouse. */
export function sliceTooltip({ name, start, dur, count, depth }) {
  const lines = [h("div", { className: "xw-tv-tip-name" }, name ?? "(name loading)")];
  if (count > 1) {
    lines.push(h("div", {}, `${count.toLocaleString("en")} events merged (each narrower than a pixel); longest shown`));
    lines.push(h("div", {}, `run ${formatDuration(dur)} from ${formatTime(start, dur / 100)}`));
  } else {
    lines.push(h("div", {}, `${formatDuration(dur)} at ${formatTime(start, Math.max(dur / 100, 0.001))}`));
  }
  lines.push(h("div", { className: "xw-tv-dim" }, `depth ${depth}`));
  return lines;
}
