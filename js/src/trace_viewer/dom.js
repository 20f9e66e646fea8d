// DOM for everything around the canvas. Profile strings only ever become text nodes
// (textContent / createTextNode): they are data from user programs, never markup.
import { h } from "../lib/dom.js";
import { time } from "../lib/format.js";
import { formatDuration, formatEventTime, formatPicoseconds, formatTime } from "./timescale.js";
import { overlayLists } from "./overlay.js";

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
  ["P", "pin or unpin the track under the mouse: it stays at the top while the others scroll"],
  ["H", "hide the track under the mouse (the Tracks menu shows it again)"],
  ["B / Shift+B", "bookmark the time under the mouse / the timing mark or the selection"],
  ["[ / ]", "go to the previous / next bookmark"],
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
    rows.filter(([, v]) => v !== undefined && v !== null && v !== "").map(([k, v, title]) =>
      h("tr", {}, h("th", {}, k), h("td", title ? { title } : {}, v instanceof Node ? v : String(v))),
    ),
  );
}

/** A stat's value as text: a `*_ps` stat as a duration (device_duration_ps 8154247500 → 8.15 ms). */
export function statValue(key, value) {
  if (value === null || value === undefined) return "";
  if (key.endsWith("_ps")) {
    const duration = formatPicoseconds(value);
    if (duration !== null) return duration;
  }
  if (typeof value === "number") return Number.isInteger(value) ? value.toLocaleString("en") : String(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

// The raw value where the shown one is converted (a _ps stat): on hover.
function rawTitle(key, value) {
  if (!key.endsWith("_ps") || formatPicoseconds(value) === null) return undefined;
  return `${Number(value).toLocaleString("en")} ps`;
}

function statsBlock(title, stats) {
  const entries = Object.entries(stats ?? {});
  if (!entries.length) return null;
  return h("div", { className: "xw-tv-block" }, h("div", { className: "xw-tv-subtitle" }, title),
    kvTable(entries.map(([k, v]) => [k, statValue(k, v), rawTitle(k, v)])));
}

function flowList(title, flows, onGo, trackName) {
  if (!flows?.length) return null;
  return h(
    "div",
    { className: "xw-tv-block" },
    h("div", { className: "xw-tv-subtitle" }, `${title} (${flows.length})`),
    h("ul", { className: "xw-tv-flows" }, flows.slice(0, 50).map((flow) =>
      h("li", {}, h("button", { className: "xw-tv-link", onclick: () => onGo(flow.event) }, String(flow.name ?? "(unnamed event)")),
        ` at ${formatTime(flow.start_us ?? 0, 0.001)}`, flow.track !== undefined ? ` · ${trackName(flow.track)}` : ""),
    )),
  );
}

/** The details of one event (the `details` answer) as DOM; `source`: the XLA op's source panel. */
export function detailsView(d, { trackName, onGo, link = null, source = null }) {
  const track = typeof d.track === "number" ? trackName(d.track) : d.track;
  const full = d.full_name && d.full_name !== d.name ? h("pre", { className: "xw-tv-hlo" }, d.full_name) : null;
  return h(
    "div",
    { className: "xw-tv-detail" },
    h("div", { className: "xw-tv-title" }, String(d.name ?? ""), link),
    full,
    kvTable([
      ["Start", d.start_us !== undefined ? formatEventTime(d.start_us, d.duration_us ?? 0) : undefined],
      ["Duration", d.duration_us !== undefined ? formatDuration(d.duration_us) : undefined],
      ["Self time", d.self_us !== undefined ? formatDuration(d.self_us) : undefined],
      ["Track", [d.section, track].filter((x) => x !== undefined && x !== "").join(" / ")],
      ["Host", d.host],
      ["Depth", d.depth],
    ]),
    source ? h("div", { className: "xw-tv-block xw-tv-source" }, h("div", { className: "xw-tv-subtitle" }, "Source"), source) : null,
    statsBlock("Stats", d.stats),
    statsBlock("Op stats", d.metadata_stats),
    flowList("Flows in", d.flows_in, onGo, trackName),
    flowList("Flows out", d.flows_out, onGo, trackName),
    overlayLists(d.overlays, { onGo, trackName }),
  );
}

const AGG_COLUMNS = ["name", "count", "total_us", "avg_us", "min_us", "max_us", "device_total_us"];
const DEVICE_DIFFERS = 0.005;

/** Whether a device time (what op metrics sum) and a span total differ by more than 0.5%. */
export function deviceDiffers(device, spans) {
  if (device === null || device === undefined || !Number.isFinite(device)) return false;
  return Math.abs(device - spans) > DEVICE_DIFFERS * Math.max(Math.abs(spans), Math.abs(device));
}

/** The selection's total in words; both figures, each named, where the device time differs
 * (in the Op Profile's format, so its card and this summary print the same digits). */
export function totalText(rows) {
  const spans = rows.reduce((s, r) => s + (r.total_us ?? 0), 0);
  const timed = rows.filter((r) => r.device_total_us !== null && r.device_total_us !== undefined);
  const device = timed.reduce((s, r) => s + r.device_total_us, 0);
  if (timed.length && deviceDiffers(device, spans)) {
    return `device time ${time(device)} (what the Op Profile counts) · spans ${time(spans)}`;
  }
  return `total ${time(spans)}`;
}

/** The `aggregate` answer as rows of objects, whether it came columnar or as row lists. */
export function aggregateRows(content) {
  const rows = content.rows ?? content;
  if (Array.isArray(rows)) {
    return rows.map((r) => (Array.isArray(r) ? Object.fromEntries(AGG_COLUMNS.map((k, i) => [k, r[i]])) : r));
  }
  const n = rows.name?.length ?? 0;
  return Array.from({ length: n }, (_, i) => Object.fromEntries(AGG_COLUMNS.map((k) => [k, rows[k]?.[i]])));
}

/** The selection's aggregate table: name, count, total, avg, min, max (sorted by total), in the
 * Op Profile's number format; the device time beside them where it differs from the spans. */
export function aggregateView(rows, { nEvents, span, truncated }) {
  const sorted = [...rows].sort((a, b) => b.total_us - a.total_us);
  const device = sorted.some((r) => deviceDiffers(r.device_total_us, r.total_us));
  const head = ["Name", "Count", device ? "Total (spans)" : "Total", "Avg", "Min", "Max"];
  if (device) head.push("Device time");
  return h(
    "div",
    { className: "xw-tv-detail" },
    h("div", { className: "xw-tv-title" },
      `${nEvents.toLocaleString("en")} events selected${truncated ? " (capped)" : ""}`,
      span ? ` · span ${formatDuration(span)}` : "", ` · ${totalText(sorted)}`),
    h("table", { className: "xw-tv-agg" },
      h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)))),
      h("tbody", {}, sorted.slice(0, 500).map((r) => h("tr", {},
        h("td", { className: "xw-tv-name" }, String(r.name)),
        h("td", {}, Number(r.count).toLocaleString("en")),
        h("td", {}, time(r.total_us)),
        h("td", {}, time(r.avg_us)),
        h("td", {}, time(r.min_us)),
        h("td", {}, time(r.max_us)),
        device ? h("td", { title: "The device time the op's events measured (device_duration_ps): what the Op Profile sums" },
          time(r.device_total_us)) : null,
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
    lines.push(h("div", {}, `${formatDuration(dur)} at ${formatEventTime(start, dur)}`));
  }
  lines.push(h("div", { className: "xw-tv-dim" }, `depth ${depth}`));
  return lines;
}
