// The card of one buffer live at the peak: its sizes and padding, shape and layout, where it
// comes from, its lifetime, and the instruction that defines it with a link to the trace.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { typeColor } from "./colors.js";

/** Buffers defined by instructions that never run as ops, so the trace has nothing to show. */
const NO_EVENTS = new Set(["parameter", "constant"]);

export const CARD_HINT = "Hover a bar to see its buffer here and its lifetime on the memory chart; click to pin it.";

/** Bytes in binary units, the exact count on hover. */
function exact(n) {
  return h("span", { title: `${fmt.count(n)} bytes` }, fmt.bytes(n));
}

/** The card's children for row `i` of the bar rows (columns from the kernel's `view` answer). */
export function cardContent(rows, i, { pinned, onLink, onGraph, onUnpin, linkSent }) {
  const type = rows.allocation_type[i];
  const padding = rows.padding_bytes[i];
  const expansion = rows.expansion[i];
  const start = rows.start[i];
  const end = rows.end[i];
  const items = [
    ["Size", exact(rows.size_bytes[i])],
    ["Unpadded", exact(rows.unpadded_bytes[i])],
    ["Expansion", expansion === null ? "—" : h("span", { title: "padded size / unpadded size" }, `${expansion.toFixed(expansion < 10 ? 3 : 1)}×`)],
    ["Padding", padding > 0 ? [exact(padding), ` extra, ${fmt.percent(padding / rows.size_bytes[i])} of the buffer`] : "none"],
    ["Shape", rows.shape[i] ? h("pre", {}, rows.shape[i]) : "—"],
    ["Framework op", rows.op_name[i] || "—"],
    ["Allocation", type],
    ["Source", rows.source[i] || "—"],
    ["Lifetime", start === null ? "—" : `program order ${fmt.count(start)} to ${fmt.count(end)}`],
  ];
  const instruction = rows.instruction[i];
  const op = instruction === null ? null : h("div", { className: "xw-mv-card-op" },
    "Defined by ", h("code", {}, instruction),
    rows.opcode[i] && !instruction.startsWith(rows.opcode[i]) ? ` (${rows.opcode[i]})` : "", h("br"),
    NO_EVENTS.has(type) ? h("span", { className: "xw-mv-muted" }, `a ${type}: no op runs for it`)
      : h("button", { type: "button", className: "xw-mv-link", title: "set this widget's `link` trait; the "
        + "Profiler suite opens the op in its Trace Viewer", onclick: () => onLink(instruction) }, "show in Trace Viewer"),
    onGraph ? h("button", { type: "button", className: "xw-mv-graph-link", title: "the Profiler suite opens the "
      + "defining instruction in its Graph Viewer", onclick: () => onGraph(instruction) }, "open in Graph Viewer") : null,
    linkSent ? h("div", { className: "xw-mv-card-sent" }, `link = {tool: "trace", op: "${instruction}"}`) : null);
  return [
    pinned ? h("a", { className: "xw-mv-card-pin", href: "#", onclick: (e) => { e.preventDefault(); onUnpin(); } },
      "pinned · unpin") : null,
    h("div", { className: "xw-mv-card-title" }, rows.name[i]),
    h("span", { className: "xw-mv-card-type", style: { background: typeColor(type) } }, type),
    h("dl", {}, items.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    op,
  ].filter(Boolean);
}
