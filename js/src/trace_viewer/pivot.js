// The pivot of a box selection, as Perfetto's area selection has it: the kernel's `pivot` rows
// (one per section, track and name: count, total, self and average time) folded into a tree
// the user regroups (section › track › name, track › name, or name) and opens or closes.
// Profile strings only become text nodes.
import { h } from "../lib/dom.js";
import { formatDuration } from "./timescale.js";

export const GROUPINGS = [
  ["section,track,name", "Section › Track › Name"],
  ["track,name", "Track › Name"],
  ["name", "Name"],
];
const MAX_ROWS = 500;

function labelOf(row, level) {
  if (level === "section") return String(row.section);
  if (level === "track") return String(row.track_name ?? row.track);
  return String(row.name);
}

function keyOf(row, level) {
  return level === "track" ? `t${row.track}` : `${level[0]}${labelOf(row, level)}`;
}

/** Rows folded by `levels` into nodes {key, label, level, count, total, self, children}, each
 * level sorted by total time, largest first. */
export function pivotTree(rows, levels) {
  const root = { key: "", children: new Map() };
  for (const row of rows) {
    let node = root;
    levels.forEach((level, depth) => {
      const key = `${node.key}/${keyOf(row, level)}`;
      if (!node.children.has(key)) {
        node.children.set(key, { key, label: labelOf(row, level), level: depth, leaf: depth === levels.length - 1,
          count: 0, total: 0, self: 0, children: new Map() });
      }
      node = node.children.get(key);
      node.count += row.count;
      node.total += row.total_us;
      node.self += row.self_us;
    });
  }
  const sorted = (node) => [...node.children.values()]
    .sort((a, b) => b.total - a.total || b.count - a.count)
    .map((child) => ({ ...child, children: sorted(child) }));
  return sorted(root);
}

/** The details panel's pivot: a title, the grouping choice and the tree as a table. */
export function pivotView(rows, { nEvents, span, truncated, grouping, onGroup }) {
  const levels = grouping.split(",");
  const tree = pivotTree(rows, levels);
  const closed = new Set();
  const total = tree.reduce((s, n) => s + n.total, 0);
  const body = h("tbody");
  const render = () => {
    const out = [];
    const walk = (nodes) => {
      for (const node of nodes) {
        if (out.length >= MAX_ROWS) return;
        const open = !closed.has(node.key);
        const toggle = node.leaf ? null : h("button", {
          type: "button", className: "xw-tv-toggle", "aria-expanded": String(open),
          title: open ? "Close" : "Open",
          onclick: () => { if (open) closed.add(node.key); else closed.delete(node.key); render(); },
        }, open ? "▾" : "▸");
        out.push(h("tr", { dataset: { level: String(node.level), kind: node.leaf ? "name" : levels[node.level] } },
          h("td", { className: node.leaf ? "xw-tv-name" : "xw-tv-group-label", style: { paddingLeft: `${4 + 14 * node.level}px` } },
            toggle, node.label),
          h("td", {}, node.count.toLocaleString("en")),
          h("td", {}, formatDuration(node.total)),
          h("td", {}, formatDuration(node.self)),
          h("td", {}, formatDuration(node.total / node.count))));
        if (open && !node.leaf) walk(node.children);
      }
    };
    walk(tree);
    body.replaceChildren(...out);
  };
  render();
  const select = h("select", { className: "xw-tv-pivot-by", title: "Group the selection by",
    onchange: () => onGroup(select.value) },
  GROUPINGS.map(([value, label]) => h("option", { value, selected: value === grouping }, label)));
  return h(
    "div",
    { className: "xw-tv-detail xw-tv-pivot" },
    h("div", { className: "xw-tv-title" },
      `${nEvents.toLocaleString("en")} events selected${truncated ? " (capped)" : ""}`,
      span ? ` · span ${formatDuration(span)}` : "", ` · total ${formatDuration(total)}`,
      h("label", { className: "xw-tv-pivot-label" }, "Group by ", select)),
    h("table", { className: "xw-tv-agg" },
      h("thead", {}, h("tr", {}, ["Name", "Count", "Total", "Self", "Avg"].map((t) => h("th", {}, t)))),
      body),
  );
}
